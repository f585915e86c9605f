"""Board time: a message's cycle counter and the moments the host needs to measure the line."""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .protocol import BoardFrame


__all__ = ["MessageStamps"]


class MessageStamps(wiring.Component):
    """A cycle counter from the start of a message, and its value at four events (the STATUS
    fields ``rx_first``, ``rx_last``, ``tx_first``, ``tx_status``).

    Ports
    -----
    ``restart``: In(1)
        A message begins: the counter and the stamps start from 0.
    ``time``: Out(32)
        The counter.
    ``data_begin``: In(1), ``data_stamp``: In(32)
        An input DATA frame whose sync byte came at ``data_stamp``; the first sets ``rx_first``.
    ``end``: In(1)
        The message's END frame: ``rx_last``.
    ``tx_started``: In(1), ``tx_kind``: In(BoardFrame)
        A frame's sync byte went out: the first DATA frame sets ``tx_first``, a STATUS frame
        ``tx_status``.
    ``rx_first``, ``rx_last``, ``tx_first``, ``tx_status``: Out(32)
    """
    def __init__(self):
        super().__init__({
            "restart": In(1),
            "time": Out(32),
            "data_begin": In(1),
            "data_stamp": In(32),
            "end": In(1),
            "tx_started": In(1),
            "tx_kind": In(BoardFrame, init=BoardFrame.HELLO_ACK),
            "rx_first": Out(32),
            "rx_last": Out(32),
            "tx_first": Out(32),
            "tx_status": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        rx_started = Signal()
        tx_started = Signal()
        m.d.sync += self.time.eq(self.time + 1)
        with m.If(self.data_begin & ~rx_started):
            m.d.sync += [self.rx_first.eq(self.data_stamp), rx_started.eq(1)]
        with m.If(self.end):
            m.d.sync += self.rx_last.eq(self.time)
        with m.If(self.tx_started):
            with m.If((self.tx_kind == BoardFrame.DATA) & ~tx_started):
                m.d.sync += [self.tx_first.eq(self.time), tx_started.eq(1)]
            with m.If(self.tx_kind == BoardFrame.STATUS):
                m.d.sync += self.tx_status.eq(self.time)
        with m.If(self.restart):
            m.d.sync += [self.time.eq(0), rx_started.eq(0), tx_started.eq(0),
                         self.rx_first.eq(0), self.rx_last.eq(0), self.tx_first.eq(0),
                         self.tx_status.eq(0)]
        return m
