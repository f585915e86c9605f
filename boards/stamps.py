"""Board time: a message's cycle counter and the moments the host needs to measure the line."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .protocol import BoardFrame


__all__ = ["MessageStamps"]


class MessageStamps(wiring.Component):
    """A 64-bit cycle counter from the start of a message (it wraps after 12,000 years at
    48 MHz), and its value at four events (the STATUS fields ``rx_first``, ``rx_last``,
    ``tx_first``, ``tx_status``).

    Ports
    -----
    ``restart``: In(1)
        A message begins: the counter and the stamps start from 0.
    ``time``: Out(64)
        The counter. Two 32-bit halves: the carry into the upper half is known a cycle ahead
        (registered), so no 64-bit carry chain sits in one cycle.
    ``data_begin``: In(1)
        An input DATA frame's header was checked; the first sets ``rx_first``.
    ``end``: In(1)
        The message's END frame: ``rx_last``.
    ``tx_started``: In(1), ``tx_kind``: In(BoardFrame)
        A frame's sync byte went out: the first DATA frame sets ``tx_first``, a STATUS frame
        ``tx_status``.
    ``rx_first``, ``rx_last``, ``tx_first``, ``tx_status``: Out(64)

    Every event input goes through a register first (they come from decisions elsewhere and
    fan out to 64-bit enables here): all of them act a cycle late, so the differences between
    stamps are exact.
    """
    def __init__(self):
        super().__init__({
            "restart": In(1),
            "time": Out(64),
            "data_begin": In(1),
            "end": In(1),
            "tx_started": In(1),
            "tx_kind": In(BoardFrame, init=BoardFrame.HELLO_ACK),
            "rx_first": Out(64),
            "rx_last": Out(64),
            "tx_first": Out(64),
            "tx_status": Out(64),
        })

    def elaborate(self, platform):
        m = Module()
        restart, data_begin, end, tx_started_now = (Signal(name=name) for name in
                                                    ("restart", "data_begin", "end", "tx_now"))
        is_data = Signal()
        is_status = Signal()
        m.d.sync += [restart.eq(self.restart), data_begin.eq(self.data_begin), end.eq(self.end),
                     tx_started_now.eq(self.tx_started),
                     is_data.eq(self.tx_kind == BoardFrame.DATA),
                     is_status.eq(self.tx_kind == BoardFrame.STATUS)]
        rx_started = Signal()
        tx_started = Signal()
        low, high = self.time[:32], self.time[32:]
        carry = Signal()            # the lower half wraps at the next tick
        m.d.sync += [low.eq(low + 1), carry.eq(low == 0xFFFF_FFFE)]
        with m.If(carry):
            m.d.sync += high.eq(high + 1)
        with m.If(data_begin & ~rx_started):
            m.d.sync += [self.rx_first.eq(self.time), rx_started.eq(1)]
        with m.If(end):
            m.d.sync += self.rx_last.eq(self.time)
        with m.If(tx_started_now):
            with m.If(is_data & ~tx_started):
                m.d.sync += [self.tx_first.eq(self.time), tx_started.eq(1)]
            with m.If(is_status):
                m.d.sync += self.tx_status.eq(self.time)
        with m.If(restart):
            m.d.sync += [self.time.eq(0), carry.eq(0), rx_started.eq(0), tx_started.eq(0),
                         Cat(self.rx_first, self.rx_last, self.tx_first, self.tx_status).eq(0)]
        return m
