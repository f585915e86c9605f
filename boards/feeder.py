"""Input buffer -> datapath: a message's bytes, with ``last`` on the final one."""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.layouts import ByteLayout


__all__ = ["MessageFeeder"]


class MessageFeeder(wiring.Component):
    """Passes committed input bytes on, holding the last one back until the message's end is
    known (so that it can carry ``last``). Reset it at the start of each message.

    Ports
    -----
    ``i``: In(stream.Signature(8))
        Bytes from the input buffer (committed bytes only; at most one every four cycles, as a
        :class:`~.buffer.RingBuffer` offers them).
    ``commit``: In(1), ``commit_length``: In(16)
        ``commit_length`` more bytes were committed to the buffer.
    ``end``: In(1)
        The message's input is complete (level).
    ``enable``: In(1)
        A message is in progress.
    ``o``: Out(stream.Signature(ByteLayout))
        The bytes to the datapath, ``last`` on the final one.

    The backlog (committed bytes not yet passed on) is a register computed from two counters, one
    cycle late, and whether it is at least 2 (or the end is known) another cycle later. That is
    exact when it matters: the input buffer offers at most one byte every four cycles, so after a
    transfer there are three cycles without a byte on offer; a late commit only delays a byte.
    """
    def __init__(self):
        super().__init__({
            "i": In(stream.Signature(8)),
            "commit": In(1),
            "commit_length": In(16),
            "end": In(1),
            "enable": In(1),
            "o": Out(stream.Signature(ByteLayout)),
        })

    def elaborate(self, platform):
        m = Module()
        commits = Signal(16)
        takes = Signal(16)
        backlog = Signal(16)
        with m.If(self.commit):
            m.d.sync += commits.eq(commits + self.commit_length)
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += takes.eq(takes + 1)
        # A byte may go: the backlog is at least 2 or the end is known (a register, off the
        # ready path: the end comes from the message control, across the die).
        allow = Signal()
        m.d.sync += [backlog.eq(commits - takes), allow.eq(backlog[1:].any() | self.end)]
        m.d.comb += [
            self.o.valid.eq(self.i.valid & allow & self.enable),
            self.o.payload.data.eq(self.i.payload),
            self.o.payload.last.eq(self.end & (backlog == 1)),
            self.i.ready.eq(self.o.ready & allow & self.enable),
        ]
        return m
