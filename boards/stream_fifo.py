"""A :class:`~amaranth.lib.fifo.SyncFIFO` with stream ports of any shape."""

from amaranth.hdl import Module, Shape
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out


__all__ = ["StreamFIFO"]


class StreamFIFO(wiring.Component):
    """``depth`` items of ``shape`` (a layout, an enum, a width), first in, first out.

    Ports: ``i`` In(stream.Signature(shape)), ``o`` Out(stream.Signature(shape)); the stream
    ports of a :class:`~amaranth.lib.fifo.SyncFIFO` (``w_stream``, ``r_stream``) with the payload
    viewed as ``shape``. With ``depth=2``, ``i.ready`` and ``o.valid`` come from registers, so a
    FIFO cuts the combinational paths between its neighbours at full throughput.
    """
    def __init__(self, shape, depth):
        self.shape = shape
        self.depth = depth
        super().__init__({
            "i": In(stream.Signature(shape)),
            "o": Out(stream.Signature(shape)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.fifo = queue = fifo.SyncFIFO(width=Shape.cast(self.shape).width,
                                                  depth=self.depth)
        w, r = queue.w_stream, queue.r_stream
        m.d.comb += [
            w.payload.eq(self.i.payload), w.valid.eq(self.i.valid), self.i.ready.eq(w.ready),
            self.o.payload.eq(r.payload), self.o.valid.eq(r.valid), r.ready.eq(self.o.ready),
        ]
        return m
