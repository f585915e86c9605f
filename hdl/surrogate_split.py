"""The splitting stage of the CESU-8 and Modified UTF-8 encoders: a supplementary code point
becomes its UTF-16 surrogate pair, every other code unit passes unchanged."""

from amaranth.hdl import Cat, Const, Module
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from .component import CheckedComponent
from .layouts import UnitLayout
from .pipeline import Pipeline, keep
from .utf16_encoder import plane_minus_one


__all__ = ["SplitUnitLayout", "SurrogateSplitter"]


#: Output layout of :class:`SurrogateSplitter` and
#: :class:`~utf8_gateware.hdl.surrogate_join.SurrogateJoiner`, the input of the byte pipeline
#: behind them: a code unit's low 21 bits, ``large`` for a unit with u[31:21] != 0 (so that
#: neither the stage nor the byte pipeline carries the 11 bits that only say "too large"),
#: ``pair`` set on the two halves of a split supplementary code point (the byte encoder writes
#: them even where a lone surrogate is an error), and ``last``.
SplitUnitLayout = data.StructLayout({
    "codepoint": 21,
    "large":     1,
    "pair":      1,
    "last":      1,
})


class SurrogateSplitter(CheckedComponent):
    """Splits supplementary code points into surrogate pairs (The Unicode Standard 3.9, D91).

    A code point 0x10000..0x10FFFF becomes its lead surrogate then its trail surrogate, both
    with ``pair`` set; every other value (lone surrogates and values of 0x110000 or more too)
    passes unchanged with ``pair`` clear. It has no error policy: the byte encoder after it
    (:class:`~utf8_gateware.hdl.encoder.Utf8ByteEncoder` with ``encoding="cesu-8"`` or
    ``"mutf-8"``) classifies the units, so that an invalid input unit is still one error
    reported on the first beat of its own output. The boundary lies at code points: the byte
    encoder needs no new class of characters (a surrogate's 3-byte form is the 3-byte class), and
    the split costs no throughput (a pair is 6 bytes, which the byte encoder takes 6 cycles for).

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.UnitLayout` stream (``codepoint: 32``, ``last``).
    ``o``: :data:`SplitUnitLayout` stream (``codepoint``: the unit's low 21 bits, ``large``:
    u[31:21] != 0); ``last`` on the trail of a split unit with ``last``.

    Latency and throughput
    ----------------------
    The first output of a unit is valid on ``o`` :attr:`LATENCY` = 2 cycles after its transfer
    (the unit register, the output slot). One output per cycle with no idle cycle: a
    supplementary code point takes two cycles (its trail waits in a register while the next unit
    moves up), every other unit one. ``i.ready`` is one LUT of flip-flops, ``o.valid`` and
    ``o.payload`` one LUT (output slot or skid register) of flip-flops; nothing depends on
    ``o.ready`` in the same cycle but the pipeline's advance flip-flops
    (:class:`~utf8_gateware.hdl.pipeline.Pipeline`). LUT depth: two levels (the unit register's
    supplementary flag, and the output multiplexer).
    """

    i: In(stream.Signature(UnitLayout))
    o: Out(stream.Signature(SplitUnitLayout))

    #: Cycles from the transfer of a unit to its first output being valid on ``o``.
    LATENCY = 2

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, flush_steps=2)
        u = self.i.p.codepoint

        # The slot holds a lead surrogate whose trail goes out next: the unit register waits.
        pending = pipe.register("pending")
        take = ~pending & ~pipe.flushing
        m.d.comb += self.i.ready.eq(pipe.adv & take)

        # -- the unit register: the unit, its plane minus one, and whether it is supplementary --
        # (Loaded while `take`, kept by the LUT rather than the clock enable.)
        a_valid = pipe.register("a_valid")
        with m.If(pipe.enable()):
            m.d.sync += a_valid.eq(keep(take, self.i.valid, a_valid) & ~pipe.flushing)
        a_last  = pipe.held("a_last", self.i.p.last, take)
        a_u     = pipe.held("a_u", u[:21], take, 21)
        a_large = pipe.held("a_large", u[21:32] != 0, take)
        a_plane = pipe.held("a_plane", plane_minus_one(u), take, 4)
        # 0x10000 <= u < 0x110000: u[31:21] == 0 and u[20:16] in 1..16.
        a_supp  = pipe.held("a_supp", (u[21:32] == 0) & ((u[16:20] != 0) ^ u[20]), take)

        # -- the output slot ----------------------------------------------------------------------
        trail = pipe.register("trail", 10)
        trail_last = pipe.register("trail_last")
        with m.If(pipe.enable(11) & ~pending):
            m.d.sync += [trail.eq(a_u[:10]), trail_last.eq(a_last)]
        supp = a_valid & a_supp
        with m.If(pipe.enable()):
            m.d.sync += pending.eq(~pending & supp & ~pipe.flushing)
        lead = Cat(a_u[10:16], a_plane, Const(0b110110, 6), Const(0, 5))
        s_valid = pipe.fact("s_valid", pending | a_valid, pipe.flushing)
        s_unit  = pipe.data("s_unit", keep(pending, Cat(trail, Const(0b110111, 6), Const(0, 5)),
                                           keep(a_supp, lead, a_u)), 21)
        s_large = pipe.data("s_large", a_large & ~pending)
        s_pair  = pipe.data("s_pair", pending | a_supp)
        s_last  = pipe.data("s_last", keep(pending, trail_last, a_last & ~a_supp))
        pipe.drive_output(self.o, s_valid, Cat(s_unit, s_large, s_pair, s_last))
        return m
