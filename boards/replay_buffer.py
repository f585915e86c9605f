"""The output buffer: a byte FIFO that keeps what it sent until the receiver acknowledges it."""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.component import CheckedComponent
from .buffer import ByteRAM, share_port


__all__ = ["ReplayBuffer"]


class ReplayBuffer(CheckedComponent):
    """A FIFO of bytes, ``depth`` (a power of 2) deep, in one single-port RAM
    (:class:`~.buffer.ByteRAM`), whose bytes stay after they are read until they are
    acknowledged, so that they can be read again (go-back-N retransmission).

    Ports
    -----
    ``w``: In(stream.Signature(8))
        Bytes in. ``ready`` is low when the buffer is full (counting read but unacknowledged
        bytes) or the RAM port is given to the read side this cycle; it depends on registers
        only.
    ``o``: Out(stream.Signature(8))
        Bytes out, in order.
    ``ack``: In(32)
        Bytes acknowledged since the last reset (cumulative, modulo 2**32; never more than were
        read): their space is free.
    ``rewind``: In(1)
        Read again from ``ack`` (a byte on offer or being read is dropped). Take no byte from
        ``o`` in the same cycle.

    Throughput and latency as :class:`~.buffer.RingBuffer`: the port serves the sides in
    alternate cycles; a read is issued only when the output register is empty and no read is
    under way (at most one byte every four cycles out, one every two cycles in while there is
    space). The
    buffer holds at most ``depth - 1`` bytes.
    """
    @classmethod
    def check_parameters(cls, depth):
        if isinstance(depth, bool) or not isinstance(depth, int):
            raise TypeError(f"depth must be an integer, not {depth!r}")
        if depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of 2 of at least 2, not {depth}")

    def __init__(self, depth):
        self.depth = depth
        super().__init__({
            "w": In(stream.Signature(8)),
            "o": Out(stream.Signature(8)),
            "ack": In(32),
            "rewind": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        bits = (self.depth - 1).bit_length()
        m.submodules.ram = ram = ByteRAM(self.depth)
        wptr = Signal(bits + 1)      # next write
        rptr = Signal(bits + 1)      # next read
        aptr = self.ack[:bits + 1]   # oldest byte kept
        do_write = share_port(m, ram, self.w, self.o, wptr=wptr, rptr=rptr, readable=wptr,
                              oldest=aptr, depth=self.depth, flush=self.rewind)
        with m.If(do_write):
            m.d.sync += wptr.eq(wptr + 1)
        with m.If(self.rewind):
            m.d.sync += rptr.eq(aptr)
        return m
