"""Stand-in cores for testing the test machinery (drivers, compiled simulation) on their own."""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.layouts import ByteLayout, CodepointLayout


class ByteWiden(wiring.Component):
    """Each byte becomes a code point: one output register, one item per cycle, latency 1,
    ``i.ready`` = the register is empty or being emptied."""
    i: In(stream.Signature(ByteLayout))
    o: Out(stream.Signature(CodepointLayout))

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.i.ready.eq(~self.o.valid | self.o.ready)
        with m.If(self.i.ready):
            m.d.sync += [
                self.o.valid.eq(self.i.valid),
                self.o.payload.codepoint.eq(self.i.payload.data),
                self.o.payload.last.eq(self.i.payload.last),
            ]
        return m
