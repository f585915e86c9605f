"""Streaming UTF-8 encoders: UTF-32 code units in, bytes of the UTF-8 family out.

:class:`Utf8ByteEncoder` is the byte pipeline (one code unit to its bytes);
:class:`Utf8Encoder` is the public core: for ``utf-8`` with ``replace``, ``strict`` or
``surrogatepass`` (``carry_error`` or not), and for ``utf-8-sig`` with those policies (the mark a state of its first
stage), :class:`~utf8_gateware.hdl.utf8_shift_encoder.Utf8ShiftEncoder` (one LUT level between
flip-flops), for every other encoding but ``wtf-8`` the byte pipeline itself (the mark of
``utf-8-sig`` and the surrogate pairs of ``cesu-8`` and ``mutf-8`` are states of its
registers), for ``wtf-8`` the byte pipeline behind
:class:`~utf8_gateware.hdl.surrogate_join.SurrogateJoiner`.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.sim.encodings import ENCODE_POLICIES, check as check_encoding
from .component import CheckedComponent, in_a_row
from .error_kind import ENCODE_ERRORS, ErrorKind, check_policy
from .layouts import CarriedUnitLayout, EncodedByteLayout, UnitLayout
from .pipeline import CE_FANOUT
from .rfc2279_encoder import Rfc2279Encoder
from .surrogate_join import CarriedJoinedUnitLayout, JoinedUnitLayout, SurrogateJoiner
from .utf16_encoder import plane_minus_one
from .utf8_shift_encoder import MARK, SHIFT_ENCODINGS, SHIFT_ERRORS, Utf8ShiftEncoder


__all__ = ["ENCODE_ERRORS", "ENCODER_ENCODINGS", "CarriedUnitLayout", "Utf8ByteEncoder",
           "Utf8Encoder"]

#: The encodings :class:`Utf8Encoder` writes with a core of their own instead of the byte
#: pipeline: ``{encoding: class}``.
OWN_CORES = {"utf-8-rfc2279": Rfc2279Encoder}

#: The encodings :class:`Utf8Encoder` offers in gateware (UTF-16 is
#: :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder` and
#: :class:`~utf8_gateware.hdl.utf16_bytes.Utf16Bytes`).
ENCODER_ENCODINGS = ("utf-8", "utf-8-sig", "cesu-8", "mutf-8", "wtf-8", *OWN_CORES)

#: The byte rules :class:`Utf8ByteEncoder` offers (``encoding``), and its error policies.
BYTE_ENCODINGS = tuple(encoding for encoding in ENCODER_ENCODINGS
                       if encoding not in OWN_CORES)
BYTE_ERRORS = ("replace", "strict", "surrogateescape", "surrogatepass")

#: The encodings whose supplementary code points are written as surrogate pairs.
SPLIT_ENCODINGS = ("cesu-8", "mutf-8")


class Utf8ByteEncoder(CheckedComponent):
    """The byte pipeline of the UTF-8 encoders: each code unit on its own to its bytes.

    :class:`Utf8Encoder` is this pipeline (see its documentation for ports, latency,
    throughput and timing), but for ``"wtf-8"``, where it is the byte stage behind the joiner,
    and for ``"utf-8"`` with ``"replace"`` or ``"strict"`` (``carry_error`` or not), where it is
    :class:`~utf8_gateware.hdl.utf8_shift_encoder.Utf8ShiftEncoder`; with the byte rules of
    ``encoding``:

    ``"utf-8"``, ``"utf-8-sig"``
        Table 3-7; a surrogate is an error (with ``"surrogatepass"`` written as its 3-byte
        form); ``"utf-8-sig"`` writes U+FEFF before the first unit of every message
        (:meth:`_unit_register`).
    ``"cesu-8"``, ``"mutf-8"``
        A supplementary code point is written as its surrogate pair (:meth:`_byte_register`);
        a lone surrogate is an error in CESU-8 as in UTF-8; Modified UTF-8 writes every
        surrogate as its 3-byte form (no error) and U+0000 as C0 80 (the 2-byte class).
    ``"wtf-8"``
        Every surrogate is written as its 3-byte form (no error). The input is
        :data:`~utf8_gateware.hdl.surrogate_join.JoinedUnitLayout` (the joiner's output: the
        unit's low 21 bits and ``large`` for u[31:21] != 0).

    ``errors``: ``"replace"``, ``"strict"``, ``"surrogateescape"`` as for :class:`Utf8Encoder`;
    ``"surrogatepass"`` writes surrogates and gives a value of 0x110000 or more a marker beat
    (as ``"strict"``). LUT depth: two levels between flip-flops, three for the unit register's
    flags of ``"mutf-8"`` with ``"strict"``; behind the joiner (``"wtf-8"``) the joiner's output
    multiplexer adds one in front of the flags (the critical path of that encoding).
    """

    @classmethod
    def check_parameters(cls, errors="replace", *, encoding="utf-8", carry_error=False):
        if encoding not in BYTE_ENCODINGS:
            raise ValueError(f"encoding must be one of {', '.join(map(repr, BYTE_ENCODINGS))}, "
                             f"not {encoding!r}")
        check_policy(errors, BYTE_ERRORS)
        if not isinstance(carry_error, bool):
            raise TypeError(f"carry_error must be a bool, not {carry_error!r}")

    def __init__(self, errors="replace", *, encoding="utf-8", carry_error=False):
        self._errors = errors
        self._encoding = encoding
        self._carry_error = carry_error
        super().__init__({
            "i": In(stream.Signature(self._input_layout())),
            "o": Out(stream.Signature(EncodedByteLayout)),
        })

    @property
    def _markers(self):
        """Whether an invalid unit gives a marker beat (else EF BF BD)."""
        return self._errors in ("strict", "surrogatepass")

    @property
    def _writes_surrogates(self):
        """Whether every surrogate is written as its 3-byte form (none is an error)."""
        return self._errors == "surrogatepass" or self._encoding in ("mutf-8", "wtf-8")

    def _input_layout(self):
        if self._encoding == "wtf-8":
            return CarriedJoinedUnitLayout if self._carry_error else JoinedUnitLayout
        return CarriedUnitLayout if self._carry_error else UnitLayout

    #: Cycles from the transfer of a unit to its first byte being valid on ``o`` (sink ready).
    LATENCY = 3

    #: Cycles with the sink ready and no input after which the encoder holds nothing: the
    #: latency, the beats of the two units it can hold (4 each) and the output register.
    DRAIN = LATENCY + 2 * 4 + 1

    @property
    def errors(self):
        """The error policy."""
        return self._errors

    @property
    def encoding(self):
        """The encoding (see :data:`ENCODER_ENCODINGS`)."""
        return self._encoding

    @property
    def carry_error(self):
        """Whether the input carries an error kind for the first output beat of its unit."""
        return self._carry_error

    def elaborate(self, platform):
        m = Module()
        term = _Terms(m)
        adv = _Advance(m)
        a = _unit_register_signals(self._carry_error)
        b = _byte_register_signals()
        self._unit_register(m, term, adv, a, b)
        on_adv = self._byte_register(term, adv, a, b)
        self._output_slot(m, term, adv, b, on_adv)
        return m

    # The bytes of a unit u, by class (the first that matches):
    #
    #   class  condition                         bytes
    #   C1     u < 0x80 (mutf-8: 0 < u), or an   u[7:0]
    #          escape (surrogateescape)
    #   C2     u < 0x800                         110 u[10:6], 10 u[5:0]
    #   error  a surrogate (not an escape), but  EF BF BD; strict, surrogatepass: the marker
    #          where surrogates are written      beat 00
    #   C3     u < 0x10000                       1110 u[15:12], 10 u[11:6], 10 u[5:0]
    #   C4     u < 0x110000                      11110 u[20:18], 10 u[17:12], 10 u[11:6],
    #                                            10 u[5:0]
    #   error  u >= 0x110000                     as above
    #
    # The pipeline: the unit register (stage A: the unit and its class flags), the byte register
    # (stage B: the character's lead byte and continuation payloads), the output slot and its
    # skid register. Two LUT levels between flip-flops.

    def _classify(self, term, u):
        """The six class flags of the unit ``u`` that the unit register holds, in two LUT levels.

        Each flag is a function of one of three bit fields of the unit (u[31:21], u[20:16],
        u[15:7]), written as an AND/OR of functions of at most four bits (the ``term``\\ s, one
        LUT each) combined by one more LUT::

            z21  u[31:21] == 0
            zl   u[20:16] == 0              z21 & zl: the unit is in the BMP (u[31:16] == 0)
            r4   u[20:16] in 1..16          z21 & r4: C4
            h0   u[15:11] == 0, or an escape (surrogateescape)
            hs   a surrogate error; with marker beats (strict) also C1 (a single-beat unit)
            lw   u[10:7] == 0 (mutf-8: and u[6:0] != 0), or (u[11] set) u[10:7] == 1001
                 (surrogateescape)

        In the BMP: C1 = h0 & lw, C2 = h0 & ~lw, C3 = ~h0 & ~hs, surrogate error = ~h0 & hs.
        Outside the BMP: C4 = z21 & r4, else TOO_LARGE. Where surrogates are written (not
        errors), hs is never set for one (a surrogate is C3); a CESU-8 surrogate with ``pair``
        is not an error. Returns ``(z21, zl, r4, h0, hs, lw)``.
        """
        u11    = u[11]
        hi0    = term("a_hi0",    u[12:16] == 0)          # u[15:12] == 0000
        hi1101 = term("a_hi1101", u[12:16] == 0b1101)     # u[15:12] == 1101
        low0   = term("a_low0",   u[7:11] == 0)           # u[10:7] == 0000
        nz4    = term("a_nz4",    u[16:20] != 0)
        if self._encoding != "wtf-8":
            z21 = (term("a_z31", u[28:32] == 0) & term("a_z27", u[24:28] == 0) &
                   term("a_z23", u[21:24] == 0))
        else:
            z21 = ~self.i.p.large                      # the stage before has classified u[31:21]
        # `sur_hi`: with u[11] set, the unit is a surrogate that is an error (None: none is).
        if self._writes_surrogates:
            sur_hi = None
        else:
            sur_hi = hi1101
        lw = low0
        if self._encoding == "mutf-8":
            # U+0000 is C2 (C0 80): lw also needs u[6:0] != 0.
            lw = low0 & (term("a_nz_lo", u[0:4] != 0) | term("a_nz_mid", u[4:7] != 0))
        if self._errors == "surrogateescape":
            # An escape is DC80..DCFF: u[15:11] == 11011 and u[10:7] == 1001. lw matters only
            # when h0 is set; u[11] tells a unit with u[15:11] == 00000 from an escape.
            low_esc = term("a_low_esc", u[7:11] == 0b1001)
            h0 = Mux(u11, sur_hi & low_esc, hi0)
            hs = u11 & sur_hi & ~low_esc
            lw = u11 | low0
        elif self._markers:
            h0 = ~u11 & hi0
            if sur_hi is None:
                hs = h0 & lw                                # C1
            else:
                hs = Mux(u11, sur_hi, hi0 & lw)             # a surrogate, or C1
        else:
            h0 = ~u11 & hi0
            hs = 0 if sur_hi is None else u11 & sur_hi
        return z21, ~nz4 & ~u[20], nz4 ^ u[20], h0, hs, lw

    def _unit_register(self, m, term, adv, a, b):
        """Stage A, the unit register: u[20:0], the class flags (:meth:`_classify`) and, with
        ``carry_error``, the carried error kind. It takes a unit when it is empty or its unit
        moves on to the byte register.

        ``utf-8-sig``: ``a_start`` marks that the next unit begins a message; while it is set,
        A takes U+FEFF (the mark, a C3 character: EF BB BF) instead of the offered unit, which is
        taken next (the mark's bits are constants: the flip-flops' synchronous set/reset).
        ``cesu-8``, ``mutf-8``: A holds u[19:16] as the plane minus one of a supplementary code
        point (the payload of its lead surrogate), and ``a.hold`` (a flip-flop, so that A's
        clock enable and ``i.ready`` stay one LUT of flip-flops) for a unit that the byte
        register takes twice (:meth:`_byte_register`): set for u[20:16] in 1..16, cleared when
        the byte register takes the unit the first time. (u[31:21] is left out, which one LUT
        could not also read: a too large value with such bits is taken twice too, the second
        time as a bubble.)
        """
        u = self.i.p.codepoint
        z21, zl, r4, h0, hs, lw = self._classify(term, u)
        split = self._encoding in SPLIT_ENCODINGS
        # (register, from the input, for the mark)
        rows = [
            (a.valid, self.i.valid,  self.i.valid),
            (a.last,  self.i.p.last, 0),
            (a.u,     Cat(u[:16], plane_minus_one(u), u[20]) if split else u[:21], MARK),
            (a.z21,   z21,           1),
            (a.zl,    zl,            1),
            (a.r4,    r4,            0),
            (a.h0,    h0,            0),
            (a.hs,    hs,            0),
            (a.lw,    lw,            0),
            *([(a.error, self.i.p.error, ErrorKind.NONE)] if self._carry_error else []),
        ]
        # A moves on with B's last byte, but not after B's first take of a unit with `hold`.
        moves = (lambda adv: adv & b.rem[0] & ~a.hold) if split else (lambda adv: adv & b.rem[0])
        ready = ~a.valid | moves(adv.adv)
        pairs = [(reg, value) for reg, value, _ in rows]
        if split:
            # Loaded in every step in which B takes from A, or A is empty.
            adv.load([(a.hold, ~a.hold & self.i.valid & r4)],
                     cond=lambda adv: ~a.valid | (adv & b.rem[0]))
        if self._encoding == "utf-8-sig":
            start = Signal(init=1, name="a_start")
            pairs = [(reg, Mux(start, mark, value)) for reg, value, mark in rows]
            # Cleared when A takes the mark, set when it takes a unit with `last`.
            pairs.append((start, Mux(start, ~self.i.valid, self.i.valid & self.i.p.last)))
            ready &= ~start
        m.d.comb += self.i.ready.eq(ready)
        adv.load(pairs, cond=lambda adv: ~a.valid | moves(adv))

    def _byte_register(self, term, adv, a, b):
        """Stage B, the byte register: the character of the unit in A, as its lead byte
        (:meth:`_lead_byte`) and continuation payloads, its error kind and its byte count.

        It takes the next unit (or a bubble) when its current byte is its last (or it is
        empty), else it moves on to its next byte. Every bit is a function of at most four terms
        (the ``term``\\ s, and A bits). Returns the ``(register, value)`` pairs loaded in every
        step (``first``, ``rem``), for the output stage to add its own to.

        ``cesu-8``, ``mutf-8``: class C4 (``four``) is written as its surrogate pair (The
        Unicode Standard 3.9, D91), two 3-byte characters: B takes the unit twice (``a.hold``,
        :meth:`_unit_register`; ``b.tp`` marks the second take): the lead half ED, 10 10 w
        (w = u[19:16] in A, the plane minus one), 10 u[15:10], then the trail half ED,
        10 11 u[9:6], 10 u[5:0]. The second take of a too large value is a bubble.
        """
        markers = self._markers
        split = self._encoding in SPLIT_ENCODINGS
        bmp   = term("b_bmp",  a.z21 & a.zl)                        # in the BMP
        four  = term("b_four", a.z21 & a.r4)                        # C4 (a lead half)
        large = term("b_large", ~a.z21 | (~a.zl & ~a.r4))           # TOO_LARGE
        if markers:
            single = term("b_single", (bmp & a.hs) | large)         # C1 or an error: one beat
            sur    = a.z21 & a.zl & ~a.h0 & a.hs
            n3     = term("b_n3", a.z21 & a.zl & ~a.h0 & ~a.hs)     # C3
        else:
            single = term("b_single", a.z21 & a.zl & a.h0 & a.lw)   # C1
            sur    = a.z21 & a.zl & a.hs
            error  = term("b_error", sur | large)
            n3     = term("b_n3", (a.z21 & a.zl & ~a.h0) | large)   # C3, or EF BF BD
        n2 = term("b_n2", a.z21 & a.zl & a.h0 & ~a.lw)              # C2
        lead = self._lead_byte(term, a, bmp, four)
        carried = Mux(b.tp, ErrorKind.NONE, a.error) if split else a.error   # not on a trail half
        kind = Mux(large, ErrorKind.TOO_LARGE, Mux(sur, ErrorKind.SURROGATE, carried))

        if split:
            # The halves' payloads: 10 w or 10 11 u[9:6]; u[15:10] or u[5:0].
            tp = b.tp
            c1 = Cat(*(Mux(four, term(f"b_c1_{j}", Mux(tp, a.u[6 + j], a.u[16 + j])), a.u[6 + j])
                       for j in range(4)), Mux(four, tp, a.u[10]), four | a.u[11])
            c2 = Cat(*(term(f"b_c2_{j}", Mux(four & ~tp, a.u[10 + j], a.u[j])) for j in range(6)))
        else:
            c1, c2 = a.u[6:12], a.u[0:6]
        if not markers:
            c1 = Mux(error, 0x3F, c1)         # BF
            c2 = Mux(error, 0x3D, c2)         # BD
        pairs = [
            (b.valid, a.valid),
            (b.last, a.last),
            (b.lead, lead),
            (b.c0, a.u[12:18]),
            (b.c1, c1),
            (b.c2, c2),
            (b.error, kind),
        ]
        rem = Cat(~a.valid | single, n2, n3, four)
        if split:
            pairs[:2] = [(b.valid, a.valid & ~(tp & ~a.z21)),       # a too large value's bubble
                         (b.last, a.last & ~(a.hold & a.z21))]       # not on a lead half
            pairs[3] = (b.c0, 0)
            pairs.append((tp, a.hold))
            rem = Cat(~a.valid | single, n2, n3 | four, 0)
        adv.load(pairs, cond=lambda adv: adv & b.rem[0])
        return [
            (b.first, b.rem[0]),
            (b.rem, Mux(b.rem[0], rem, b.rem >> 1)),
        ]

    def _lead_byte(self, term, a, bmp, four):
        """The lead byte of the character of the unit in A (the only byte of C1, EF for an
        error, the marker beat's 00 with strict), two LUT levels of A.

        In the BMP: h0 ? (lw ? C1 : C2) : (hs ? error : C3); outside: C4 or error. Bits 0..4 in
        the BMP: t_c12 | t_c3s, t_c12 = h0 & (lw ? C1 : C2) and t_c3s = ~h0 & (hs ? e : C3),
        where ``e``, the error bit, is the low bits of EF (replace) or of the strict marker 00.
        Outside the BMP, C4's lead byte is 11110 u[20:18], or ED (the lead half of a pair) with
        ``cesu-8`` and ``mutf-8``.
        """
        e = 0 if self._markers else 1
        split = self._encoding in SPLIT_ENCODINGS
        lead = Signal(8)
        for j in range(5):
            t_c12 = term(f"b_lead{j}_c12", a.h0 & Mux(a.lw, a.u[j], a.u[6 + j]))
            four_j = (0xED >> j) & 1 if split else a.u[18 + j] if j < 3 else int(j == 4)
            if j < 4:
                t_c3s = term(f"b_lead{j}_c3s", ~a.h0 & Mux(a.hs, e, a.u[12 + j]))
                t_out = term(f"b_lead{j}_out", Mux(a.z21 & a.r4, four_j, e))
            else:
                t_c3s = 0                                               # 1110 xxxx, EF, 00
                t_out = four & four_j
            term.m.d.comb += lead[j].eq(Mux(bmp, t_c12 | t_c3s, t_out))
        for j in range(5, 8):
            # C1: u[j]; C2: 0 (bit 5) or 1; C3: 1; error: e.
            t_bmp = term(f"b_lead{j}_bmp", Mux(a.h0, Mux(a.lw, a.u[j], int(j > 5)),
                                                    Mux(a.hs, e, 1)))
            term.m.d.comb += lead[j].eq(Mux(bmp, t_bmp, four | e))
        return lead

    def _output_slot(self, m, term, adv, b, on_adv):
        """The output slot and its skid register: the current byte of B (the lead byte while
        ``b.first``, else 10 and the continuation payload that ``b.rem`` picks), the error kind
        on a unit's first beat, ``last`` on its last. Loads them and ``on_adv`` in every step,
        and drives ``o`` (:meth:`_Advance.drive_output`)."""
        low6 = Signal(6)
        for j in range(6):
            t_lead_c0 = term(f"o_data{j}_lead_c0", Mux(b.first, b.lead[j], b.c0[j]))
            t_c1_c2   = term(f"o_data{j}_c1_c2",   Mux(b.rem[1], b.c1[j], b.c2[j]))
            m.d.comb += low6[j].eq(Mux(b.first | b.rem[2], t_lead_c0, t_c1_c2))
        high2 = Mux(b.first, b.lead[6:8], 0b10)
        s_valid = Signal()
        s_p     = Signal(EncodedByteLayout)
        k_p     = Signal(EncodedByteLayout)
        on_adv += [
            (s_valid, b.valid),
            (s_p.data, Cat(low6, high2)),
            (s_p.error, Mux(b.first, b.error, ErrorKind.NONE)),
            (s_p.last, b.last & b.rem[0]),
        ]
        # The skid register takes the slot in every cycle that `adv` is high; it is offered (and
        # keeps its byte) while `adv` is low.
        on_adv += [(k_p, s_p)]
        adv.load(on_adv)
        adv.drive_output(self.o, s_valid, s_p, k_p)


class Utf8Encoder(Utf8ByteEncoder):
    """Streaming UTF-8 encoder (and the rest of the UTF-8 family).

    Accepts a stream of UTF-32 code units (any 32-bit value) and produces their encoding as a
    stream of bytes, one byte per cycle. The output equals the reference model,
    :func:`utf8_gateware.sim.encodings.encode` with the same ``encoding`` and ``errors``, for
    every input (each message: the units up to one with ``last``).

    Parameters
    ----------
    errors : str
        What to do with an invalid unit (see below): one of the policies that the reference
        model offers for ``encoding`` (``ENCODE_POLICIES``); any other pair is a one-line
        :class:`ValueError` before construction.
    encoding : str
        One of :data:`ENCODER_ENCODINGS` (see *Encodings*).
    carry_error : bool
        If set, the input payload has an extra ``error`` field
        (:data:`CarriedUnitLayout`) which is reported on the first output beat of its unit
        (unless the unit is itself invalid). :class:`~utf8_gateware.hdl.sanitizer.Utf8Sanitizer`
        uses it to pass the decoder's errors on. With every encoding; a mark or the trail
        half of a pair carries none, a joined pair its lead's.

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.UnitLayout` stream (``codepoint: 32``, ``last``).
    ``o``: :data:`~utf8_gateware.hdl.layouts.EncodedByteLayout` stream (``data: 8``,
    ``error: ErrorKind``, ``last``). ``error`` is ``SURROGATE`` or ``TOO_LARGE`` on the *first*
    beat produced for an invalid unit and ``NONE`` on every other beat. ``last`` is set on the
    final beat produced for a unit with ``last``: exactly one ``last`` beat per message.

    Error policy
    ------------
    ``"replace"``
        A surrogate U+D800..U+DFFF (``SURROGATE``) or a value of 0x110000 or more
        (``TOO_LARGE``) becomes EF BF BD (U+FFFD); the error is flagged on the EF beat.
    ``"strict"``
        An invalid unit produces no bytes but one *marker beat*: ``error`` set, ``data`` 0. The
        marker beat is not an output byte (consumers drop it); it makes the error visible and
        carries ``last`` if the invalid unit ends its message.
    ``"surrogateescape"``
        U+DC80..U+DCFF become the single raw byte 0x80..0xFF (not an error: the inverse of the
        decoder's escapes); every other invalid unit as with ``"replace"``.
    ``"surrogatepass"``
        A surrogate is written as its 3-byte form, not flagged; a value of 0x110000 or more
        gives a marker beat as with ``"strict"``.

    Encodings
    ---------
    ``"utf-8"``
        The byte pipeline (:class:`Utf8ByteEncoder`) alone; everything below about latency and
        timing is about it, and about the next two.
    ``"utf-8-sig"``
        The shift encoder (``"replace"``, ``"strict"``, ``"surrogatepass"``) or the byte
        pipeline, whose first stage takes U+FEFF (EF BB BF) before the first unit of every
        message (three more cycles per message, no other logic in the paths).
    ``"cesu-8"``, ``"mutf-8"``
        The byte pipeline in its CESU-8 / Modified UTF-8 rules: the byte register takes a
        supplementary code point twice from the unit register, as the two halves of its
        surrogate pair, each written as 3 bytes; Modified UTF-8 also writes U+0000 as C0 80 and
        every lone surrogate as 3 bytes (a Java ``char``), CESU-8 flags a lone surrogate
        (``SURROGATE``) as UTF-8 does. (A too large value whose bits 20..16 are 1..16 is taken
        twice too, the second time as 1..3 idle cycles on ``o``.)
    ``"wtf-8"``
        :class:`~utf8_gateware.hdl.surrogate_join.SurrogateJoiner`, then the byte pipeline
        writing every surrogate: a lead surrogate directly followed by a trail surrogate (in one
        message) is written as the pair's 4-byte form, a lone surrogate as 3 bytes. (A lead
        surrogate that is not the last unit of its message waits for the next unit.)

    ``"utf-8-rfc2279"``
        :class:`~utf8_gateware.hdl.rfc2279_encoder.Rfc2279Encoder`, a core of its own (values
        to 0x7FFFFFFF in 1 to 6 bytes; 0x80000000 and more ``TOO_LARGE``; ``"replace"`` or
        ``"strict"``; latency 4): its 5- and 6-byte forms do not fit the byte pipeline's
        four-byte classes.

    Every invalid unit is one error on the first beat of its own output (a split or joined pair
    is never one), so error indices are those of the reference model.

    Two cores
    ---------
    ``"utf-8"`` and ``"utf-8-sig"`` with ``"replace"``, ``"strict"`` or ``"surrogatepass"``
    (with ``carry_error`` or not) are
    :class:`~utf8_gateware.hdl.utf8_shift_encoder.Utf8ShiftEncoder`: one LUT level between flip-flops (three unit stages, an output shift register; see its
    documentation), with ``LATENCY`` 4 (3 for ``"utf-8-sig"``: to the mark's first byte) and
    ``DRAIN`` 21 (``"utf-8"``) of the instance. Everything else is the byte pipeline
    (:class:`Utf8ByteEncoder`, two LUT levels), which the rest of this text is about.

    Latency and throughput
    ----------------------
    The first byte of a unit is valid on ``o`` :attr:`LATENCY` = 3 cycles after the cycle in
    which the unit was transferred on ``i`` (unit register, byte register, output slot), also
    for ``"cesu-8"`` and ``"mutf-8"``; ``LATENCY`` of the instance is 6 for ``"wtf-8"`` (the
    joiner's 3 add up) and 2 for ``"utf-8-sig"``: from the transfer of a message's first unit
    (taken the cycle after the mark) to the mark's first byte. Once the
    source stops, everything the encoder holds is out after at most :attr:`DRAIN` cycles with
    the sink ready (``"utf-8"``; ``None`` for the other encodings: not bounded yet, and with
    ``"wtf-8"`` a lead surrogate that does not end its message waits for the next unit). An
    n-byte character takes
    n cycles on ``o`` with no idle cycle between characters: the next unit moves up while the
    last byte of the current one goes to the output slot. The sustained rate is one byte per
    cycle whenever input is available and the sink is ready; a new unit is accepted every n
    cycles (every cycle for ASCII). After the sink refuses a byte, the pipeline pauses for one
    cycle (the byte waits in a skid register); nothing is lost, duplicated or reordered.

    Timing
    ------
    The pipeline moves in the cycles in which ``adv``, a flip-flop, is high; it falls for the
    cycle after one in which the sink refused a byte. So no logic depends on ``o.ready`` in the
    same cycle: ``i.ready`` is one LUT of three flip-flops (four for ``"utf-8-sig"``,
    ``"cesu-8"``, ``"mutf-8"``), ``o.valid`` and ``o.payload`` are one
    LUT (a 2:1 multiplexer: the output slot, or the skid register) of flip-flops, and the clock
    enables come from copies of ``adv`` that drive at most 15 flip-flops each. Between
    flip-flops there are at most two LUT levels: the unit register holds six class flags of the
    unit (functions of groups of four bits), the byte register the precomputed lead byte and
    continuation payloads of the character, and the output slot the byte selected from them.
    """

    @classmethod
    def check_parameters(cls, errors="replace", *, encoding="utf-8", carry_error=False):
        if encoding not in ENCODER_ENCODINGS:
            check_encoding(encoding, "replace", "encode")      # an unknown name: its own message
            raise ValueError(f"encoding {encoding!r} is not offered in gateware yet; one of "
                             f"{', '.join(ENCODER_ENCODINGS)}")
        if encoding == "utf-8":
            check_policy(errors, ENCODE_POLICIES[encoding])
        else:
            check_encoding(encoding, errors, "encode")
        if not isinstance(carry_error, bool):
            raise TypeError(f"carry_error must be a bool, not {carry_error!r}")
        if carry_error and encoding in OWN_CORES:
            raise ValueError(f"carry_error is not offered for {encoding} (its core does not "
                             f"carry error kinds)")

    def __init__(self, errors="replace", *, encoding="utf-8", carry_error=False):
        super().__init__(errors, encoding=encoding, carry_error=carry_error)
        if encoding != "utf-8" or _shifts(encoding, errors, carry_error):
            #: Of this instance: the mark comes first, the joiner adds its own, the shift
            #: encoder has one more stage.
            self.LATENCY = self.latency(encoding, errors, carry_error=carry_error)
            #: Stated (and proven) for ``"utf-8"`` only.
            self.DRAIN = Utf8ShiftEncoder.DRAIN if encoding == "utf-8" else None

    @staticmethod
    def latency(encoding="utf-8", errors=None, *, carry_error=False):
        """:attr:`LATENCY` of an encoder of ``encoding`` (and ``errors``, ``carry_error``;
        without ``errors``: of the byte pipeline), without building one."""
        if encoding in OWN_CORES:
            return OWN_CORES[encoding].LATENCY
        core = Utf8ShiftEncoder if _shifts(encoding, errors, carry_error) else Utf8ByteEncoder
        return core.LATENCY + _EXTRA_LATENCY.get(encoding, 0)

    def _input_layout(self):
        return CarriedUnitLayout if self._carry_error else UnitLayout

    def elaborate(self, platform):
        if self._encoding in OWN_CORES:
            return in_a_row([OWN_CORES[self._encoding](self._errors)], self)
        if _shifts(self._encoding, self._errors, self._carry_error):
            return in_a_row([Utf8ShiftEncoder(self._errors, encoding=self._encoding,
                                              carry_error=self._carry_error)], self)
        if self._encoding != "wtf-8":
            return super().elaborate(platform)
        m = Module()
        m.submodules.bytes = encoder = Utf8ByteEncoder(self._errors, encoding=self._encoding,
                                                       carry_error=self._carry_error)
        m.submodules.join = join = SurrogateJoiner(carry_error=self._carry_error)
        wiring.connect(m, join.o, encoder.i)
        wiring.connect(m, wiring.flipped(self.i), join.i)
        wiring.connect(m, encoder.o, wiring.flipped(self.o))
        return m


def _shifts(encoding, errors, carry_error):
    """Whether :class:`Utf8Encoder` with these parameters is
    :class:`~utf8_gateware.hdl.utf8_shift_encoder.Utf8ShiftEncoder` (one LUT level between
    flip-flops) instead of the byte pipeline."""
    return encoding in SHIFT_ENCODINGS and errors in SHIFT_ERRORS


#: What each encoding adds to the core's latency: the joiner's (``wtf-8``); the mark
#: (``utf-8-sig``), which the first stage takes the cycle before a message's first unit.
_EXTRA_LATENCY = {
    "utf-8-sig": -1,
    "wtf-8":     SurrogateJoiner.LATENCY,
}


class _Terms:
    """Makes the first-level functions of the encoder's two LUT levels between flip-flops.

    ``term(name, value)`` is ``value`` (of at most four bits) as a signal marked ``keep``, so that
    synthesis maps it to one LUT and does not restructure the logic across it (sharing sub-terms
    would cost a third level).
    """

    def __init__(self, m):
        self.m = m

    def __call__(self, name, value):
        sig = Signal(name=name, attrs={"keep": 1})
        self.m.d.comb += sig.eq(value)
        return sig


class _Advance:
    """The encoder's handshake: ``adv`` and the copies of it that drive the clock enables.

    ``adv`` (a flip-flop) is high in the cycles in which the pipeline moves: the output slot takes
    the next byte, the byte register moves on or takes the next unit, and the unit register may
    take the next unit. It falls for the cycle after one in which the sink refused a byte; the
    skid register keeps that byte and offers it while ``adv`` is low. So no clock enable depends
    on ``o.ready`` in the same cycle, and ``i.ready`` not at all. The clock enables come from
    copies of ``adv``, each driving at most :data:`CE_FANOUT` flip-flops (a net with more users
    is moved to a global buffer or routed far, which costs ns).

    (:class:`~utf8_gateware.hdl.pipeline.Pipeline` does the same for the flushed pipelines; this
    one starts running, with ``adv`` and its copies 1 after reset, and packs the registers of
    each :meth:`load` call onto copies of their own.)
    """

    def __init__(self, m):
        self.m = m
        self.adv = Signal(init=1, name="adv")
        self.copies = []

    def load(self, pairs, cond=lambda adv: adv):
        """For each ``(register, value)`` of ``pairs``: ``register`` takes ``value`` in the
        cycles in which ``cond(adv)``, with one copy of ``adv`` per CE_FANOUT flip-flops."""
        groups, room = [], 0
        for register, value in pairs:
            register, value = Value.cast(register), Value.cast(value)
            start = 0
            while start < len(register):
                if not room:
                    groups.append([])
                    room = CE_FANOUT
                stop = min(len(register), start + room)
                groups[-1].append(register[start:stop].eq(value[start:stop]))
                room -= stop - start
                start = stop
        for group in groups:
            copy = Signal(init=1, name=f"adv_ce{len(self.copies)}")
            self.copies.append(copy)
            with self.m.If(cond(copy)):
                self.m.d.sync += group

    def drive_output(self, port, s_valid, s_p, k_p):
        """Drive ``port`` from the output slot (``s_valid``, ``s_p``) or, while ``adv`` is low,
        the skid register ``k_p``, and make the next state of ``adv`` and its copies."""
        for reg in (self.adv, *self.copies):
            # Each copy is computed from its own value, which also keeps synthesis from merging
            # the copies.
            self.m.d.sync += reg.eq(port.ready | (reg & ~s_valid))
        self.m.d.comb += [
            port.valid.eq(~self.adv | s_valid),
            port.payload.eq(Mux(self.adv, s_p, k_p)),
        ]


def _unit_register_signals(carry_error):
    """The unit register (stage A): u[20:0], its class flags (:meth:`Utf8Encoder._classify`)
    and the error kind carried from the input (a constant ``NONE`` without ``carry_error``)."""
    a_valid = Signal()
    a_last  = Signal()
    a_u     = Signal(21)
    a_z21   = Signal()
    a_zl    = Signal()
    a_r4    = Signal()
    a_h0    = Signal()
    a_hs    = Signal()
    a_lw    = Signal()
    a_error = Signal(ErrorKind)
    a_hold  = Signal()
    return SimpleNamespace(valid=a_valid, last=a_last, u=a_u, z21=a_z21, zl=a_zl, r4=a_r4,
                           h0=a_h0, hs=a_hs, lw=a_lw, error=a_error, hold=a_hold)


def _byte_register_signals():
    """The byte register (stage B): the character being output, as its lead byte and the
    payloads of its continuation bytes (c0 = u[17:12], c1 = u[11:6], c2 = u[5:0]).

    ``first`` marks that the lead byte is still to go; ``rem`` is one-hot, the number of bytes
    left including the current one (bit 0: the current byte is the last). With a continuation
    byte current, ``rem`` picks its payload: 3 -> c0, 2 -> c1, 1 -> c2. Invariant: ``rem[0]``
    is set whenever the register is empty.
    """
    b_valid = Signal()
    b_last  = Signal()
    b_lead  = Signal(8)
    b_c0    = Signal(6)
    b_c1    = Signal(6)
    b_c2    = Signal(6)
    b_error = Signal(ErrorKind)
    b_first = Signal()
    b_rem   = Signal(4, init=0b0001)
    b_tp    = Signal()
    return SimpleNamespace(valid=b_valid, last=b_last, lead=b_lead, c0=b_c0, c1=b_c1, c2=b_c2,
                           error=b_error, first=b_first, rem=b_rem, tp=b_tp)
