"""Streaming encoder of original UTF-8 (RFC 2279): 32-bit values in, their 1 to 6 bytes out,
one LUT level between flip-flops (the shift encoder's patterns: :mod:`.utf8_shift_encoder`)."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from utf8_gateware.sim.encodings import ENCODE_POLICIES
from .component import CheckedComponent
from .error_kind import check_policy
from .layouts import EncodedByteLayout, UnitLayout
from .pipeline import keep
from .utf8_shift_encoder import (EnableCopies, drive_output, error_bytes, shift_stage,
                                 stage_signals)


__all__ = ["RFC2279_ENCODE_ERRORS", "Rfc2279Encoder"]


#: The error policies of :class:`Rfc2279Encoder` (the reference model's).
RFC2279_ENCODE_ERRORS = ENCODE_POLICIES["utf-8-rfc2279"]


class Rfc2279Encoder(CheckedComponent):
    """Streaming encoder of RFC 2279's UTF-8. ``Utf8Encoder(encoding="utf-8-rfc2279")`` is this
    core.

    Accepts 32-bit code units (the model's input: UTF-32 of any value) and writes each value
    below 0x80000000 as its shortest form of 1 to 6 bytes, surrogates included. The output
    equals ``utf8_gateware.sim.encodings.encode(units, "utf-8-rfc2279", errors)``.

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.UnitLayout` stream (``codepoint: 32``, ``last``).
    ``o``: :data:`~utf8_gateware.hdl.layouts.EncodedByteLayout` stream (``data: 8``,
    ``error``, ``last``): ``error`` on the first beat of an invalid unit, ``last`` on the final
    beat of a unit with ``last``.

    Error policy
    ------------
    A value of 0x80000000 or more (bit 31 set) is ``TOO_LARGE``. ``"replace"``: EF BF BD, the
    error on the EF beat. ``"strict"``: one *marker beat* (``data`` 0, ``error`` set) that is
    not an output byte.

    Latency and throughput
    ----------------------
    The first byte of a unit is valid on ``o`` :attr:`LATENCY` = 5 cycles after the unit's
    transfer. An n-byte form takes n cycles on ``o`` with no idle cycle between units while
    the source has a unit and the sink is ready; a unit is accepted every n cycles. After the
    sink refuses a byte, the encoder pauses for one cycle (the byte waits in a skid register).
    ``i.ready`` is a flip-flop; ``o.valid`` and ``o.payload`` are one LUT (output slot or skid
    register) of flip-flops.

    Stages (every register one LUT of at most four flip-flops, loaded when ``take``, a
    flip-flop, as in :class:`~utf8_gateware.hdl.utf8_shift_encoder.Utf8ShiftEncoder`)::

        A1  the unit and zero flags of four bits each (u[10:7], u[14:11], u[19:16], u[24:21],
            u[29:26]; u[31:30], u[31:30] and u25, u[31:30], u25 and u20)
        A2  the length bounds ``t26``, ``t21``, ``t16`` (u[31:26], u[31:21], u[31:16] zero),
            ``x11`` (u[15:11] zero), ``x7`` (u[10:7] zero), and the candidates of the 5- and
            6-byte forms (picked by ``t26``, two pieces of A1), of the 1- and 2-byte forms'
            lead (picked by ``x7``)
        A3  the one-hot length ``n1``..``n6``; per byte bit the candidate of the 1- to 3-byte
            forms (``lo*``, picked by ``x11``) and of the 4- to 6-byte forms (``hi*``, by ``t21``)
        A4  the character: lead byte and payloads ``p1``..``p5`` (``lo*`` or ``hi*`` by
            ``t16``), the byte count with the error's (one-hot ``r1``..``r6``), the error
        B   the output shift register: the current byte and the payloads behind it; it takes
            A4's character (EF BF BD, or the marker 00, for an error) when ``take``, else
            shifts by one byte
        K   the skid register

    LUT depth: one.
    """

    #: Cycles from the transfer of a unit to its first byte being valid on ``o`` (sink ready).
    LATENCY = 5

    @classmethod
    def check_parameters(cls, errors="replace"):
        check_policy(errors, RFC2279_ENCODE_ERRORS)

    def __init__(self, errors="replace"):
        self._errors = errors
        super().__init__({
            "i": In(stream.Signature(UnitLayout)),
            "o": Out(stream.Signature(EncodedByteLayout)),
        })

    @property
    def errors(self):
        return self._errors

    def elaborate(self, platform):
        m = Module()
        o, i = self.o, self.i
        b_valid = Signal(name="b_valid")
        a4_r1 = Signal(init=1, name="a4_r1")     # A4 holds a bubble or a 1-byte character
        b_r01 = Signal(init=1, name="b_r01")
        adv = EnableCopies(m, "adv", lambda own: o.ready | (own & ~b_valid))
        take = EnableCopies(m, "take", lambda own: o.ready & keep(own, a4_r1, b_r01),
                            enable=adv.first)
        m.d.comb += i.ready.eq(take.new())
        a1 = shift_stage(take, "a1", _pieces(i.valid, i.p.last, i.p.codepoint))
        a2 = shift_stage(take, "a2", _bounds(a1))
        a3 = shift_stage(take, "a3", _length(a2))
        a4 = shift_stage(take, "a4", _character(a3, self._errors), ones=("r12",), r1=a4_r1)
        self._output_stage(m, adv, take, a4, b_valid, b_r01)
        return m

    def _output_stage(self, m, adv, take, a4, b_valid, b_r01):
        """B, the output shift register (six bytes), and K, the skid register; drives ``o``."""
        err = a4.err
        lead, p1, p2 = error_bytes(a4, marker=self._errors == "strict")
        b = stage_signals("b", "last", s=8, q1=6, q2=6, q3=6, q4=6, q5=6, error=2)
        b.rem = Signal(6, init=1, name="b_rem")
        t0, t1, *tq = (take.new() for _ in range(6))     # tq: one copy per payload register
        counts = Cat(a4.r1, a4.r2, a4.r3, a4.r4, a4.r5, a4.r6)
        adv.load([
            (b.rem, keep(t0, counts, Cat(b.rem[0] | b.rem[1], b.rem[2:], 0))),
            (b_r01, keep(t0, a4.r12, b_r01 | b.rem[2])),
            (b_valid, keep(t0, a4.valid, b_valid & ~b.rem[0])),
            (b.last, keep(t0, a4.last, b.last)),
            (b.error, (t0 & err).replicate(2)),                 # TOO_LARGE (011)
            (b.s[:6], keep(t1, lead[:6], b.q1)),
            (b.s[6], t1 & lead[6]),                             # 10 on a continuation byte
            (b.s[7], ~t1 | lead[7]),
            *((q, keep(t, p, after)) for q, t, p, after in zip(
                (b.q1, b.q2, b.q3, b.q4), tq, (p1, p2, a4.p3, a4.p4), (b.q2, b.q3, b.q4, b.q5))),
            (b.q5, a4.p5),          # the last of the chain: moves on the cycle after the take
        ])
        drive_output(adv, self.o, b_valid, b.s, b.error, b.rem[0] & b.last)


def _field(u, k):
    """The payload of the k-th continuation byte from the end: u[6k + 5:6k]."""
    return u[6 * k:6 * k + 6]


def _pieces(valid, last, u):
    """A1: the unit and zero flags, each a function of four input bits."""
    return {
        "valid": valid, "last": last, "u": u,
        "z7": u[7:11] == 0, "z11": u[11:15] == 0, "z16": u[16:20] == 0, "z21": u[21:25] == 0,
        "z26": u[26:30] == 0, "b": u[30:32] == 0, "c": (u[30:32] == 0) & ~u[25],
        "d": (u[30:32] == 0) & ~u[25] & ~u[20],
        # u[31:26] zero again, split otherwise (fewer loads a net): u[27:26], u[31:28] zero
        "zl": u[26:28] == 0, "zh": u[28:32] == 0,
    }


def _bounds(a1):
    """A2: the length bounds and the candidates picked by pieces of A1 (``t26``: u[31:26]
    zero, a 5-byte form rather than a 6-byte one; ``z7``: a 1-byte rather than a 2-byte one)."""
    u = a1.u
    t26, t26b = a1.z26 & a1.b, a1.zl & a1.zh
    return {
        "valid": a1.valid, "last": a1.last, "large": u[31],
        "t26": t26, "t21": a1.z21 & a1.z26 & a1.c, "t16": a1.z16 & a1.z21 & a1.z26 & a1.d,
        "t21b": a1.z21 & a1.zl & a1.zh & ~u[25],        # t21 again (fewer loads a net)
        "x11": a1.z11 & ~u[15], "x7": a1.z7,
        # the lead's bits 0..4 of the 1- or 2-byte form: u[4:0] or u[10:6]
        "l01": keep(a1.z7, u[0:5], u[6:11]),
        # the lead's bits 0, 1 of the 5- or 6-byte form: u[25:24] or u30, 0
        "h56": Cat(keep(t26b, u[24], u[30]), t26b & u[25]),
        # the payloads of the 5- or 6-byte form: p1..p4 (p4 is final here)
        "h1": keep(t26, _field(u, 3), _field(u, 4)), "h2": keep(t26, _field(u, 2), _field(u, 3)),
        "h3": keep(t26b, _field(u, 1), _field(u, 2)),
        "p4": keep(t26b, _field(u, 0), _field(u, 1)),
        "u": u[:21],
    }


def _length(a2):
    """A3: the one-hot length and the candidates of the 1- to 3-byte forms (picked by
    ``x11``) and of the 4- to 6-byte forms (by ``t21``)."""
    u, t16, t21, t26, x11, x7 = a2.u, a2.t16, a2.t21, a2.t26, a2.x11, a2.x7
    n4_lead = Cat(u[18:21], 0, 1)               # 11110 u[20:18]: bits 0..4
    h56_lead = Cat(a2.h56, ~t26, 1, 1)          # 111110 u[25:24] or 1111110 u30: bits 0..4
    return {
        "valid": a2.valid, "last": a2.last, "large": a2.large, "t16": t16,
        "n1": t16 & x11 & x7, "n2": t16 & x11 & ~x7, "n3": t16 & ~x11, "n4": t21 & ~t16,
        "n5": t26 & ~t21, "n6": ~a2.large & ~t26,
        # the lead's bits 0..4: of the 1- or 2-byte form, or 1110 u[15:12]; bit 5: u5 or 0, or 1
        "lo": Cat(keep(x11, a2.l01, Cat(u[12:16], 0)), ~x11 | (x7 & u[5])),
        "hi": keep(t21, n4_lead, h56_lead),
        # bits 6, 7 (final): 0 u6 for one byte, else 11
        "l67": Cat(~(t16 & x11 & x7) | u[6], ~(t16 & x11 & x7)),
        "lo1": keep(x11, _field(u, 0), _field(u, 1)), "hi1": keep(t21, _field(u, 2), a2.h1),
        "hi2": keep(a2.t21b, _field(u, 1), a2.h2), "p3": keep(a2.t21b, _field(u, 0), a2.h3),
        "p4": a2.p4, "c0": _field(u, 0),
    }


def _character(a3, errors):
    """A4: the character (lead byte before errors, payloads ``p1``..``p5``), the byte count
    ``r1``..``r6`` (one-hot; ``r1`` also for a bubble, and for an error with ``strict``, ``r3``
    for an error with ``replace``), ``r12`` (``r1`` or ``r2``), ``err``; ``errq`` with
    ``replace`` (a copy of ``err`` for the payloads BF BD, set for a bubble)."""
    valid, large, t16 = a3.valid, a3.large, a3.t16
    marker = errors == "strict"
    values = {
        "valid": valid, "last": a3.last,
        "lead": Cat(keep(t16, a3.lo[:5], a3.hi), ~t16 | a3.lo[5], a3.l67),
        "p1": keep(t16, a3.lo1, a3.hi1), "p2": keep(t16, a3.c0, a3.hi2), "p3": a3.p3,
        "p4": a3.p4, "p5": a3.c0,
        "r1": ~valid | a3.n1 | (large if marker else 0),
        "r12": ~valid | a3.n1 | a3.n2 | (large if marker else 0),
        "r2": valid & a3.n2, "r3": valid & (a3.n3 | (0 if marker else large)),
        "r4": valid & a3.n4, "r5": valid & a3.n5, "r6": valid & a3.n6,
        "err": valid & large,
    }
    if not marker:
        values["errq"] = ~valid | large
    return values
