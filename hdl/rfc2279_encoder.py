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
from .utf8_shift_encoder import drive_output, output_enables, shift_stage, stage_signals


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

        A1  the value as six fields ``f5`` (u30) .. ``f0`` (u[5:0]), six bits each but the
            top one, the error's bytes put in (``replace``: ``f5``..``f3`` 0F 3F 3D, so that
            the unshifted fields are EF BF BD; ``strict``: ``f5`` 0, the marker), and zero
            flags of four bits each (u[10:7], u[14:11], u[19:16], u[24:21], u[29:26];
            u[31:30], u[31:30] and u25, u[31:30], u25 and u20)
        A2  the length bounds ``t26``, ``t21``, ``t16`` (u[31:26], u[31:21], u[31:16] zero),
            ``x11`` (u[15:11] zero), ``x7`` (u[10:7] zero), the prefix flags ``g5``, ``g6``
            (five or six bytes), and the fields moved up by one if ``t26`` (``v5``..``v0``)
        A3  the one-hot length ``n1``..``n6``, ``c1`` (four or two bytes: the last move), the
            fields moved up by two more if ``t16``
            (``w5``..``w0``; the lead's with the prefix's bits 2..4), ``o7`` (the 1-byte form)
        A4  the character: lead byte (the top field, the next one if ``c1``, the prefix) and
            payloads ``p1``..``p5`` (the fields moved up by one more if ``c1``), the byte
            count with the error's (one-hot ``r1``, ``r3``..``r6``, and ``r12``: B reads two
            bytes as ``r12 & ~r1``), the error; the lead byte's bit 7 is B's ``~r1``
        B   the output shift register: the current byte and the payloads behind it; it takes
            A4's character when ``take``, else shifts by one byte
        K   the skid register

    An n-byte form's bytes are the fields f(n-1)..f0, the first ORed with the prefix: A2..A4
    move them up by 6 - n fields (1 + 2 + 1 at most; 1, 2, 1 as binary choices, one LUT each),
    so that B takes the lead from the top field and the payloads from the ones below it.

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
        adv, take, _, k_valid = output_enables(m, o, b_valid, a4_r1, b_r01, None, RFC_CE_FANOUT)
        # `strict`: take's first copy (idle's, no clock enable), else a copy of its own
        m.d.comb += i.ready.eq(take.first if self._errors in RFC_READY_ON_FIRST else take.new())
        marker = self._errors == "strict"
        a1 = shift_stage(take, "a1", _pieces(i.valid, i.p.last, i.p.codepoint, marker))
        a2 = shift_stage(take, "a2", _bounds(a1))
        a3 = shift_stage(take, "a3", _length(a2, marker))
        a4 = shift_stage(take, "a4", _character(a3, marker), ones=("r12",), r1=a4_r1)
        self._output_stage(m, adv, take, a4, b_valid, b_r01, k_valid)
        return m

    def _output_stage(self, m, adv, take, a4, b_valid, b_r01, k_valid):
        """B, the output shift register (six bytes), and K, the skid register; drives ``o``."""
        b = stage_signals("b", "last", s=8, q1=6, q2=6, q3=6, q4=6, q5=6, error=2)
        b.rem = Signal(6, init=1, name="b_rem")
        # the unit stages' last six enable copies (as the shift encoder's B), tq: one per
        # payload register
        t0, t1, *tq = take.enables[-6:]
        counts = Cat(a4.r1, a4.r12 & ~a4.r1, a4.r3, a4.r4, a4.r5, a4.r6)
        adv.load([
            (b.rem, keep(t0, counts, Cat(b.rem[0] | b.rem[1], b.rem[2:], 0))),
            (b_r01, keep(t0, a4.r12, b_r01 | b.rem[2])),
            (b_valid, keep(t0, a4.valid, b_valid & ~b.rem[0])),
            (b.last, keep(t0, a4.last, b.last)),
            (b.error, (t0 & a4.err).replicate(2)),              # TOO_LARGE (011)
            (b.s[:6], keep(t1, a4.lead[:6], b.q1)),
            (b.s[6], t1 & a4.lead[6]),                          # 10 on a continuation byte
            (b.s[7], ~t1 | ~a4.r1),     # the prefix's bit 7 (g2) of a valid character
            *((q, keep(t, p, after)) for q, t, p, after in zip(
                (b.q1, b.q2, b.q3, b.q4), tq, (a4.p1, a4.p2, a4.p3, a4.p4),
                (b.q2, b.q3, b.q4, b.q5))),
            (b.q5, a4.p5),          # the last of the chain: moves on the cycle after the take
        ])
        drive_output(adv, self.o, b_valid, b.s, b.error, b.rem[0] & b.last, k_valid)


#: The most flip-flops one copy of ``take`` drives as clock enables: six copies for the unit
#: stages. Without A4's ``r2``, ``lead[7]`` and A3's ``g2``, ``g3`` (UP5K, seeds 1-3): 31 (255
#: LCs, ``strict`` 254) ``replace`` 147.8 / 157.3 / 159.9 MHz, ``strict`` 160.7 / 162.1 /
#: 147.8; 27 (255) 147.8 / 160.7 / 157.3 and 149.5 / 162.1 / 146.7; 28 (255) 149.5 / 162.1 /
#: 157.3 and 148.9 / 162.1 / 157.3; 26 (256) ``strict`` 160.7 / 148.9 / 160.0. With ``g2``,
#: ``g3`` (A4's two only): 27 (257) 160.7 / 157.3 / 157.3 and 149.5 / 160.7 / 160.7; 25 (258)
#: 151.9 / 159.9 / 157.3 and 148.9 / 149.5 / 147.8; 26 (258) ``strict`` 147.8 / 146.7 / 160.7;
#: 23 (259) ``strict`` 149.5 / 150.1 / 148.9.
RFC_CE_FANOUT = 31


#: The policies whose ``i.ready`` is ``take``'s first copy (the one ``idle`` reads; no clock
#: enable) instead of a copy of its own: a LC fewer (``strict`` 256 -> 255). UP5K, seeds 1-6
#: (stop 28): ``strict`` 162.1 / 151.9 / 160.7 / 159.9 / 160.0 / 160.7 MHz (with its own copy
#: 148.9 / 157.3 / 148.9 / 160.7 / 151.3 / 148.9); ``replace`` lost with it, 149.5 / 149.5 /
#: 147.2 / 160.7 / 157.3 / 157.3 (159.9 / 160.7 / 149.5 / 160.7 / 151.9 / 162.1), 256 LCs.
RFC_READY_ON_FIRST = ("strict",)


#: U+FFFD's bytes EF BF BD as the fields f5..f3 of a value that is written unshifted (as a
#: 6-byte form's first three bytes): the lead's bits 0..3 (its prefix is a 3-byte form's).
_REPLACEMENT = (0x0F, 0x3F, 0x3D)


def _put(u31, value, bits, ones):
    """``value``'s ``bits`` bits, or ``ones``'s if ``u31`` (one LUT of two bits each)."""
    return Cat(*((value[j] | u31) if (ones >> j) & 1 else (value[j] & ~u31)
                 for j in range(bits)))


def _pieces(valid, last, u, marker):
    """A1: the fields (an error's bytes put in) and zero flags of four input bits each."""
    large = u[31]
    if marker:      # the marker beat: a 1-byte form 00 (f5 zero: no lead bit of its own)
        fields = {"f5": u[30] & ~large, "f4": u[24:30], "f3": u[18:24]}
    else:
        fields = {"f5": _put(large, Cat(u[30], 0, 0, 0), 4, _REPLACEMENT[0]),
                  "f4": _put(large, u[24:30], 6, _REPLACEMENT[1]),
                  "f3": _put(large, u[18:24], 6, _REPLACEMENT[2])}
    return {
        "valid": valid, "last": last, "large": large, **fields,
        "f2": u[12:18], "f1": u[6:12], "f0": u[0:6],
        "z7": u[7:11] == 0, "z11": u[11:15] == 0, "z16": u[16:20] == 0, "z21": u[21:25] == 0,
        "z26": u[26:30] == 0, "b": u[30:32] == 0, "c": (u[30:32] == 0) & ~u[25],
        "d": (u[30:32] == 0) & ~u[25] & ~u[20],
    }


def _bounds(a1):
    """A2: the length bounds, the prefix flags of five and six bytes, and the fields moved up
    by one (``t26``: u[31:26] zero, five bytes or fewer). (An error has none of the bounds:
    its fields stay where A1 put its bytes.)"""
    t26 = a1.z26 & a1.b
    t21 = a1.z21 & a1.z26 & a1.c
    f = (a1.f0, a1.f1, a1.f2, a1.f3, a1.f4, a1.f5)
    return {
        "valid": a1.valid, "last": a1.last, "large": a1.large,
        "t26": t26, "t21": t21, "t16": a1.z16 & a1.z21 & a1.z26 & a1.d,
        "x11": a1.z11 & ~a1.f2[3], "x7": a1.z7,
        "g5": ~t21 & ~a1.large, "g6": ~t26 & ~a1.large,
        # v5: the lead's bits 0..3 (f5's, or f4's if t26); v(k) = f(k - 1) if t26
        "v5": keep(t26, a1.f4[:4], a1.f5 if len(a1.f5) == 4 else Cat(a1.f5, 0, 0, 0)),
        **{f"v{k}": keep(t26, f[k - 1], f[k]) for k in range(1, 5)}, "v0": a1.f0,
    }


def _length(a2, marker):
    """A3: the one-hot length, the prefix flags, ``c1`` (four or two bytes: A4 moves the
    fields up by one more), the fields moved up by two more if ``t16`` (three bytes or fewer),
    ``o7`` (the 1-byte form u[6:0], zero for any other)."""
    t16, t21, t26, x11, x7, large = a2.t16, a2.t21, a2.t26, a2.x11, a2.x7, a2.large
    v = (a2.v0, a2.v1, a2.v2, a2.v3, a2.v4)
    one = t16 & x11 & x7
    return {
        "valid": a2.valid, "last": a2.last, "large": large,
        "n1": one, "n2": t16 & x11 & ~x7, "n3": t16 & ~x11, "n4": t21 & ~t16,
        "n5": t26 & ~t21, "n6": a2.g6,
        "c1": (t21 & ~t16) | (t16 & x11 & ~x7),
        # the lead's bits 0..4: f(n-1) here but for four and two bytes, the prefix's bits 2..4
        "w5": Cat(keep(t16, a2.v3[:2], a2.v5[:2]),
                  keep(t16, a2.v3[2], a2.v5[2] | a2.g6), keep(t16, a2.v3[3], a2.v5[3] | a2.g5),
                  ~t16 & ~large),
        "w4": keep(t16, a2.v2, a2.v4), "w3": keep(t16, a2.v1, a2.v3),
        "w2": v[2], "w1": v[1], "w0": v[0],
        "o7": Cat(one.replicate(6) & a2.v1, one & a2.v2[0]),
    }


def _character(a3, marker):
    """A4: the character (lead byte, payloads ``p1``..``p5``: the fields moved up by one more
    if ``c1``), the byte count ``r1``..``r6`` (one-hot; ``r1`` also for a bubble, and for an
    error with ``strict``, ``r3`` for an error with ``replace``), ``r12`` (``r1`` or two
    bytes: B reads ``r2`` as ``r12 & ~r1``), ``err``. The lead byte has seven bits: its bit
    7, ``g2``, is ``~r1`` for a valid character (an error's, EF or the marker 00, too), B's.
    The prefix flags ``g2``, ``g3`` are A3's ``n1``, ``n2`` (and ``large``), read here.
    (A flip-flop fewer each, with :data:`RFC_CE_FANOUT`: 260 -> 255 LCs, ``strict`` 254.)"""
    valid, large, c1 = a3.valid, a3.large, a3.c1
    w = (a3.w0, a3.w1, a3.w2, a3.w3, a3.w4)
    # the prefix's bits 6, 7 (two bytes or more) and 5 (three or more): an error's are EF's
    # with replace (``n1``, ``n2`` clear), the marker's 0 with strict
    g2, g3 = ~a3.n1, ~a3.n1 & ~a3.n2
    if marker:
        g2, g3 = g2 & ~large, g3 & ~large
    return {
        "valid": valid, "last": a3.last,
        "lead": Cat(a3.w5 | (c1.replicate(5) & a3.w4[:5]) | a3.o7[:5],
                    g3 | a3.o7[5], g2 | a3.o7[6]),
        **{f"p{5 - k}": keep(c1, w[k - 1], w[k]) for k in range(1, 5)}, "p5": a3.w0,
        "r1": ~valid | a3.n1 | (large if marker else 0),
        "r12": ~valid | a3.n1 | a3.n2 | (large if marker else 0),
        "r3": valid & (a3.n3 | (0 if marker else large)),
        "r4": valid & a3.n4, "r5": valid & a3.n5, "r6": valid & a3.n6,
        "err": valid & large,
    }
