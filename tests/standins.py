"""Stand-in cores for testing the test machinery (drivers, compiled simulation) and the board's
framing on their own, and a stand-in RAM with the least the SPRAM documentation promises."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.boards.buffer import ByteRAM
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


#: Beat layouts of a stand-in with ``LANES`` lanes (as a multi-lane decoder has them): input
#: bytes with a count, output lanes of code points with an error kind and a valid flag.
LANES = 4
ByteBeatLayout = data.StructLayout({"data": 8 * LANES, "count": range(LANES + 1), "last": 1})
CodepointBeatLayout = data.StructLayout({
    "lanes": data.ArrayLayout(data.StructLayout({
        "codepoint": 21, "error": ErrorKind, "valid": 1}), LANES),
    "last": 1,
})


class LaneWiden(wiring.Component):
    """Each byte of a beat becomes a code point in its lane, valid for the first ``count``
    lanes; a byte with its top bit set is flagged ``INVALID_BYTE``. Combinational."""
    i: In(stream.Signature(ByteBeatLayout))
    o: Out(stream.Signature(CodepointBeatLayout))

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [
            self.o.valid.eq(self.i.valid),
            self.i.ready.eq(self.o.ready),
            self.o.p.last.eq(self.i.p.last),
        ]
        for lane in range(LANES):
            byte = self.i.p.data[8 * lane:8 * lane + 8]
            m.d.comb += [
                self.o.p.lanes[lane].codepoint.eq(byte),
                self.o.p.lanes[lane].error.eq(
                    Mux(byte[7], ErrorKind.INVALID_BYTE, ErrorKind.NONE)),
                self.o.p.lanes[lane].valid.eq(lane < self.i.p.count),
            ]
        return m


class ClobberingRAM(ByteRAM):
    """A :class:`~utf8_gateware.boards.buffer.ByteRAM` whose data output changes (inverted) after
    every write until the next read, as ``SB_SPRAM256KA``'s ``DATAOUT`` may: Lattice documents it
    only as the contents of the addressed location, and Yosys' cell model makes it ``x`` after a
    write (``sim/postsynth.py`` inverts it alike)."""
    def elaborate(self, platform):
        m = Module()
        m.submodules.ram = ram = ByteRAM(self.depth)
        we_q = Signal()             # the request the RAM acts on at the end of this cycle
        re_q = Signal()
        clobbered = Signal()
        m.d.sync += [we_q.eq(self.we), re_q.eq(self.re)]
        with m.If(we_q):
            m.d.sync += clobbered.eq(1)
        with m.Elif(re_q):
            m.d.sync += clobbered.eq(0)
        m.d.comb += [
            ram.addr.eq(self.addr), ram.we.eq(self.we), ram.wdata.eq(self.wdata),
            ram.re.eq(self.re),
            self.rdata.eq(ram.rdata ^ Mux(clobbered, 0xFF, 0)),
        ]
        return m
