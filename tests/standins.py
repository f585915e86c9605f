"""Stand-in cores for testing the test machinery (drivers, compiled simulation) and the board's
framing on their own."""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.error_kind import ErrorKind
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


class AsciiDecoder(wiring.Component):
    """A tiny stand-in for the decoder in board tests: ASCII passes, any other byte becomes
    U+FFFD ``invalid_byte``; one register, one byte per cycle."""
    i: In(stream.Signature(ByteLayout))
    o: Out(stream.Signature(CodepointLayout))

    def __init__(self, errors="replace"):
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.i.ready.eq(~self.o.valid | self.o.ready)
        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [self.o.valid.eq(1), self.o.payload.last.eq(self.i.payload.last)]
            with m.If(self.i.payload.data[7]):
                m.d.sync += [self.o.payload.codepoint.eq(0xFFFD),
                             self.o.payload.error.eq(ErrorKind.INVALID_BYTE)]
            with m.Else():
                m.d.sync += [self.o.payload.codepoint.eq(self.i.payload.data),
                             self.o.payload.error.eq(ErrorKind.NONE)]
        return m
