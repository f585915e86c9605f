"""The UTF-8 encoder with one LUT level between flip-flops: three unit stages and an output
shift register (:class:`Utf8ShiftEncoder`)."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from .component import CheckedComponent
from .error_kind import check_policy
from .layouts import CarriedUnitLayout, EncodedByteLayout, UnitLayout
from .pipeline import keep


__all__ = ["SHIFT_ENCODINGS", "SHIFT_ERRORS", "Utf8ShiftEncoder", "unit_pieces", "class_flags",
           "character", "error_bytes", "drive_output"]

#: The error policies :class:`Utf8ShiftEncoder` offers.
SHIFT_ERRORS = ("replace", "strict", "surrogateescape", "surrogatepass")

#: The policies whose invalid unit is one marker beat (else EF BF BD).
_MARKERS = ("strict", "surrogatepass")

#: The encodings :class:`Utf8ShiftEncoder` writes.
SHIFT_ENCODINGS = ("utf-8", "utf-8-sig", "cesu-8", "mutf-8", "wtf-8")

#: The encodings that write a supplementary code point as its surrogate pair: two 3-byte
#: halves, six bytes that B shifts out (:meth:`Utf8ShiftEncoder._output_stage`).
SPLIT_ENCODINGS = ("cesu-8", "mutf-8")

#: The encodings that write every surrogate as 3 bytes (no error; WTF-8's pairs are written by
#: its pairing stages).
_WRITES_SURROGATES = ("mutf-8", "wtf-8")

#: U+FEFF, the byte order mark that ``utf-8-sig`` writes before every message.
MARK = 0xFEFF


class Utf8ShiftEncoder(CheckedComponent):
    """Streaming UTF-8 encoder (UTF-32 units in, bytes out) whose every flip-flop is fed by one
    LUT of flip-flops, and whose clock enables are flip-flops.

    :class:`~utf8_gateware.hdl.encoder.Utf8Encoder` is this core for every encoding of
    :data:`SHIFT_ENCODINGS` (``"wtf-8"``: with the pairing stages W
    and X of :func:`~utf8_gateware.hdl.wtf8_pair_stages.pair_stages` between A2 and A3) and every
    policy
    (see it for the ports, the error policies and the output beats, which are the same).
    ``"utf-8-sig"`` writes U+FEFF (EF BB BF) before the first unit of every message: A1 takes
    it as a unit (:meth:`_mark_state`). ``"cesu-8"`` and ``"mutf-8"`` write a supplementary code
    point as six bytes, its surrogate pair (B holds them all); ``"mutf-8"`` and ``"wtf-8"``
    write every surrogate; ``"surrogateescape"`` writes an escape as C1's one byte
    (:func:`class_flags`). ``carry_error``: the input's error kind rides through A1..A3
    (``carried``) to the first beat of its unit (unless the unit is itself invalid; the mark
    carries none), and the unit stages also move while A3 holds a bubble
    (:class:`SqueezeEnables`: flip-flops ``move``, ``move_ce*`` set a cycle ahead, instead of
    ``take``), so that a decoder in front keeps the output at one byte per cycle. ``i.ready`` is
    then a copy of ``move``. (``"wtf-8"`` writes a pair as two characters, the lead's first
    three bytes and the trail's last: no bubble to squeeze.)

    Stages (each loaded under a clock enable that is a flip-flop)::

        A1  the unit: u[20:0] and seven pieces of it, each a function of four input bits
            (``utf-8-sig``: or those of U+FEFF, by the flip-flops' synchronous set/reset)
        A2  the class flags (functions of four pieces), and the candidates of every byte:
            for each lead and payload bit, the value of the classes of one half (C1 or C2;
            C3 or C4), picked by pieces
        A3  the character: its lead byte before errors, its continuation payloads (first,
            second, third), its byte count (``n1``, ``n12``: one or two bytes; four if
            neither and the lead's bit 4, or ``n4`` for a pair; else three), its error
        B   the output shift register: the current byte ``b_s`` (the output slot) and the
            continuation payloads ``b_q1``..``b_q3`` behind it (..``b_q5`` for a pair); it
            takes A3's character (EF or the marker 00 as lead byte, BF BD as payloads for an
            error) when ``take``, else shifts by one byte; ``b_rem`` (one-hot) counts the
            bytes left, the current one included
        K   the skid register: the output slot's beat, offered while ``adv`` is low

    The stages A1..A3 and B's load move together in the cycles in which ``take`` is high: a
    flip-flop (so ``i.ready`` is a flip-flop; ``take & ~a1_mk`` with ``"utf-8-sig"``) set for the
    cycle in which B's current byte is its last (or B is empty), computed a cycle ahead from B's
    count and A3's ``n1`` (a one-byte character). ``adv``, also a flip-flop, is low for the cycle
    after one in which the sink refused a byte; then nothing moves and the skid register is offered.
    Each copy of ``take`` and ``adv`` drives at most :data:`UTF8_CE_FANOUT` clock enables
    (:data:`SHIFT_CE_FANOUT` with ``surrogateescape``; :data:`PLAIN_CE_FANOUT` with ``utf-8``
    ``replace`` and ``strict``, whose B selects its payloads by ``take``'s first copy, a flip-flop
    that drives no enable).

    Latency and throughput: the first byte of a unit is on ``o`` :attr:`LATENCY` = 4 cycles
    after the unit's transfer (``"utf-8-sig"``: the mark's first byte 3 cycles after the
    transfer of a message's first unit; ``"wtf-8"``: 6, the pairing stages'
    :data:`~utf8_gateware.hdl.wtf8_pair_stages.PAIR_LATENCY` added); an n-byte character
    takes n cycles, with no idle cycle between characters while the source has a unit and the
    sink is ready. Without squeezing (no ``carry_error``) the stages hold a bubble for a cycle in
    which ``take`` was high and the source had no unit (one idle cycle on ``o`` when it reaches
    B); squeezing, such a bubble is dropped while B writes a character of two or more bytes
    (not in the cycle after the sink refused a byte). ``take`` starts low, and after the sink
    refused a byte it is low for a cycle.

    LUT depth: one (every register bit is one LUT of at most four flip-flops, or a flip-flop;
    squeezing, the synchronous set of each ``move`` copy is one LUT of three flip-flops; the
    ports are one LUT of flip-flops: a 2:1 multiplexer of slot and skid register).
    """

    @classmethod
    def check_parameters(cls, errors="replace", *, encoding="utf-8", carry_error=False):
        if encoding not in SHIFT_ENCODINGS:
            raise ValueError(f"encoding must be one of {', '.join(map(repr, SHIFT_ENCODINGS))}, "
                             f"not {encoding!r}")
        check_policy(errors, ("replace", "strict") if encoding in _WRITES_SURROGATES
                     else SHIFT_ERRORS)
        if not isinstance(carry_error, bool):
            raise TypeError(f"carry_error must be a bool, not {carry_error!r}")

    def __init__(self, errors="replace", *, encoding="utf-8", carry_error=False):
        self._errors = errors
        self._encoding = encoding
        self._carry_error = carry_error
        super().__init__({
            "i": In(stream.Signature(CarriedUnitLayout if carry_error else UnitLayout)),
            "o": Out(stream.Signature(EncodedByteLayout)),
        })

    #: Cycles from the transfer of a unit to its first byte being valid on ``o`` (sink ready).
    LATENCY = 4

    #: Cycles with the sink ready and no input after which the encoder holds nothing: the
    #: latency, the bytes of the four characters it can hold (4 each) and the skid register.
    DRAIN = LATENCY + 4 * 4 + 1

    @property
    def errors(self):
        """The error policy."""
        return self._errors

    @property
    def encoding(self):
        """The encoding (one of :data:`SHIFT_ENCODINGS`)."""
        return self._encoding

    @property
    def carry_error(self):
        """Whether the input carries an error kind for the first output beat of its unit."""
        return self._carry_error

    def elaborate(self, platform):
        m = Module()
        o = self.o
        b_valid = Signal(name="b_valid")
        a3_n1 = Signal(init=1, name="a3_n1")     # A3 holds a bubble or a 1-byte character
        b_r01 = Signal(init=1, name="b_r01")
        # `adv` falls for the cycle after the sink refused a valid slot; `take` is set for the
        # cycle in which B's byte is its last (b_r01: one of the next two bytes is the last).
        fanout = SHIFT_CE_FANOUT if self._errors == "surrogateescape" else UTF8_CE_FANOUT
        if self._encoding == "wtf-8":
            fanout = WTF8_CE_FANOUT
        elif self._plain_select():
            fanout = PLAIN_CE_FANOUT[self._errors]
        adv, take, idle, k_valid = output_enables(m, o, b_valid, a3_n1, b_r01, fanout,
                                                  fanout, adv_first_loads=True)
        # The unit stages move when B takes, and behind a source with gaps (a decoder with
        # carry_error) also while A3 holds a bubble.
        squeeze = self._carry_error
        move = SqueezeEnables(m, take, adv, o.ready, a3_n1, idle) if squeeze else take
        i = self.i
        carried = i.p.error.as_value() if self._carry_error else None
        unit = (i.valid, i.p.last, i.p.codepoint, carried)
        pieces = unit_pieces(*unit, self._errors, self._encoding)
        if self._encoding == "utf-8-sig":
            pieces = self._mark_state(m, move, pieces)
        elif squeeze:
            m.d.comb += i.ready.eq(move.new())
        a1 = shift_stage(move, "a1", pieces)
        a2 = shift_stage(move, "a2", class_flags(a1, self._errors, self._encoding))
        if self._encoding == "wtf-8":       # the pairing stages W and X behind A2
            from .wtf8_pair_stages import pair_stages     # (it imports this module's helpers)
            a2 = pair_stages(move, a2)
        a3 = shift_stage(move, "a3", character(a2, self._errors, self._encoding), ones=("n12",),
                         n1=a3_n1)  # a bubble
        if squeeze:
            move.load_copies(a2.valid)
        elif self._encoding != "utf-8-sig":
            # `utf-8`: take's first copy, which drives no clock enable (see READY_ON_FIRST)
            ready = take.first if self._encoding in READY_ON_FIRST else take.enables[0]
            m.d.comb += i.ready.eq(ready)
        self._output_stage(m, adv, take, a3, b_valid, b_r01, k_valid,
                           [move.b_r01b] if squeeze else [])
        return m

    def _plain_select(self):
        """Whether B's payload select ``t2`` is ``take``'s first copy, which drives no clock
        enable (:data:`PLAIN_CE_FANOUT`): ``utf-8`` with ``replace`` or ``strict``, unsqueezed."""
        return (self._encoding == "utf-8" and self._errors in PLAIN_CE_FANOUT
                and not self._carry_error)

    def _mark_state(self, m, take, pieces):
        """``utf-8-sig``: ``a1_mk`` is set while the next unit begins a message; then A1 takes
        the mark U+FEFF (as a unit: valid if a unit is offered, which waits) instead of the
        offered unit. Returns A1's values.

        The mark's bits are constants: ``a1_mk`` is the synchronous set/reset of A1's
        flip-flops (gated by their clock enable, a copy of ``take``). ``a1_mk`` starts at 0 (it
        drives those set/reset inputs, so it is never inverted) and is set the cycle after
        ``a1_boot`` (0 then 1 ever after) is first 1; ``take`` is low until then. ``i.ready``
        is ``take & ~a1_mk``, one LUT of two flip-flops."""
        i = self.i
        boot, pulse, mk = (Signal(name=f"a1_{name}") for name in ("boot", "pulse", "mk"))
        t = take.new() if isinstance(take, SqueezeEnables) else take.first
        m.d.sync += [boot.eq(1), pulse.eq(~boot)]         # `pulse`: high in cycle 1 only
        with m.If(pulse):                                   # `pulse`: mk's synchronous set
            m.d.sync += mk.eq(1)
        # Cleared when A1 takes the mark (a unit was offered), set when it takes a unit with
        # `last` (with carry_error under the stages' enable, a LUT: the enable has two inputs).
        following = Mux(mk, ~i.valid, i.valid & i.p.last)
        if isinstance(take, SqueezeEnables):
            with m.Elif(t):
                m.d.sync += mk.eq(following)
        else:
            with m.Else():
                m.d.sync += mk.eq(keep(t, following, mk))
        m.d.comb += i.ready.eq(t & ~mk)
        mark = unit_pieces(1, 0, Const(MARK, 32), 0 if self._carry_error else None,
                           self._errors)
        return {name: value if name == "valid" else Mux(mk, mark[name], value)
                for name, value in pieces.items()}

    def _output_stage(self, m, adv, take, a3, b_valid, b_r01, k_valid, r01_copies=()):
        """B, the output shift register, and K, the skid register; drives ``o``."""
        err = a3.err
        lead, p1, p2 = error_bytes(a3, marker=self._errors in _MARKERS)
        # The first beat's error kind: SURROGATE (010) or TOO_LARGE (011) for an invalid unit,
        # else NONE, or with carry_error the carried kind (each bit one LUT of t0, err, large
        # and the carried bit; without it, TOO_LARGE is one LUT of t0, err and two lead bits).
        kind = Cat(too_large(a3, self._errors), err)
        if self._carry_error:
            kind = keep(err, Cat(a3.large, 1, 0), a3.carried)
        b = stage_signals("b", "last", s=8, q1=6, q2=6, q3=6, error=len(kind))
        split = self._encoding in SPLIT_ENCODINGS
        b.rem = Signal(6 if split else 4, init=1, name="b_rem")
        # B's `take` inputs: the unit stages' last three enable copies (as LUT inputs too: three
        # copies fewer, the same fmax), or copies of their own if the unit stages squeeze
        t0, t1, t2 = take.enables[-3:] if len(take.enables) >= 3 else \
            (take.new(), take.new(), take.new())
        if self._plain_select():
            t2 = take.first     # (otherwise unread: its only load is its own next state)
        n2 = getattr(a3, "n2", a3.n12 & ~a3.n1)
        n4 = getattr(a3, "n4", ~a3.n12 & a3.lead[4])
        n3 = ~a3.n12 & ~n4
        counts = Cat(a3.n1, n2, n3, 0, 0, n4) if split else Cat(a3.n1, n2, n3, n4)
        pairs = [
            (b.rem, keep(t0, counts, Cat(b.rem[0] | b.rem[1], b.rem[2:], 0))),
            (b_r01, keep(t0, a3.n12, b_r01 | b.rem[2])),
            (b_valid, keep(t0, a3.valid, b_valid & ~b.rem[0])),
            (b.last, keep(t0, a3.last, b.last)),
            (b.error, t0.replicate(len(kind)) & kind),
            (b.s[:6], keep(t1, lead[:6], b.q1)),
            (b.s[6], t1 & lead[6]),                             # 10 on a continuation byte
            (b.s[7], ~t1 | lead[7]),
            (b.q1, keep(t2, p1, b.q2)),
            (b.q2, keep(t2, p2, b.q3)),
            (b.q3, a3.p3),
        ]
        if split:
            # Six bytes: ED 1010wwww 10xxxxxx, ED 1011xxxx 10xxxxxx. q3 holds the trail half's
            # ED (its low bits: 11 on top when it reaches s, in the shift after the one in
            # which 4 bytes are left, `b_rem[3]`, which only a pair reaches: no character has
            # four bytes here), q4 and q5 its payloads; the last of the chain takes A3's
            # payload in every cycle (it moves on the cycle after the take). (Before, flags
            # b_f1..b_f3 followed the ED through q3..q1: three flip-flops more.)
            b.q4, b.q5 = Signal(6, name="b_q4"), Signal(6, name="b_q5")
            pairs[6] = (b.s[6], keep(t1, lead[6], b.rem[3]))
            pairs[10:] = [
                (b.q3, keep(t2, Const(0xED & 0x3F, 6), b.q4)),
                (b.q4, keep(t2, Cat(a3.p4, 1, 1), b.q5)),
                (b.q5, a3.p3),
            ]
        # (squeezing: b_r01's copy for the enables' next states, of its own value, so that
        # synthesis keeps the two apart)
        pairs += [(r01, keep(t0, a3.n12, r01 | b.rem[2])) for r01 in r01_copies]
        adv.load(pairs)
        drive_output(adv, self.o, b_valid, b.s, b.error, b.rem[0] & b.last, k_valid)


def error_bytes(a, marker):
    """The first three bytes of the character in stage ``a`` (``a.lead``, ``a.p1``, ``a.p2``),
    an error's put in: ``a.err`` makes the lead byte EF and the payloads BF BD (U+FFFD), or with
    ``marker`` (``strict``: one marker beat, no payloads) the lead byte 00. Returns ``(lead, p1,
    p2)``: one LUT each of A's flip-flops. A lead byte of seven bits (:func:`character`'s) gets
    bit 7 from ``a.n1``: 0 for a character of one byte or a marker, else 1. (``a.errq``, a copy of
    ``err`` for the payloads,
    is A3's with ``surrogateescape`` only: without it that core's seed 1 fell from 160.0 to
    142.4 MHz; ``replace`` gained nothing from it, 158.0 / 160.7 / 160.7 MHz, a flip-flop more.)"""
    err = a.err
    mark = 0x00 if marker else 0xEF
    lead = Cat(*((err | a.lead[j]) if (mark >> j) & 1 else (~err & a.lead[j])
                 for j in range(len(a.lead))))
    if len(a.lead) == 7:        # bit 7 is ~n1, an error's too (EF's 1, the marker's 0)
        lead = Cat(lead, ~a.n1)
    p1, p2 = a.p1, a.p2
    if not marker:
        errq = getattr(a, "errq", err)
        p1, p2 = p1 | errq.replicate(6), keep(errq, Const(0x3D, 6), p2)      # BF BD
    return lead, p1, p2


def output_enables(m, o, b_valid, n1, b_r01, adv_fanout, take_fanout, adv_first_loads=False):
    """The output register B's controls, flip-flops in copies (:class:`EnableCopies`): ``adv``
    (low for the cycle after the sink refused a valid slot) and ``take`` (B takes the next
    character: its current byte is its last, ``n1`` the next one's one byte, ``b_r01`` one of
    B's next two bytes the last; loaded when ``adv``). Returns ``(adv, take, idle, k_valid)``;
    ``k_valid`` is the skid register's flag, for :func:`drive_output`.

    Stream rule 3 (``o.valid`` must not wait for ``o.ready``): with B and the skid register K
    empty, ``adv`` rises without the sink (it starts at 0: K offered), and ``idle`` sets
    ``take`` (and a squeezing encoder's ``move``): a flip-flop, high for one cycle after a cycle
    in which B was empty, nothing was taken and the sink was not ready (and ``idle`` was low),
    so that in its cycle B is still empty and nothing is taken; loading an empty B loses
    nothing, and a sink that waits for ``o.valid`` before ``o.ready`` gets the character."""
    k_valid = Signal(name="k_valid")
    idle = Signal(name="b_idle")
    adv = EnableCopies(m, "adv", lambda own: o.ready | (~b_valid & (own | ~k_valid)),
                       first_loads=adv_first_loads, fanout=adv_fanout)
    take = EnableCopies(m, "take", lambda own: o.ready & keep(own, n1, b_r01),
                        enable=adv.first, fanout=take_fanout, set=idle)
    m.d.sync += idle.eq(~b_valid & ~take.first & ~o.ready & ~idle)
    return adv, take, idle, k_valid


def drive_output(adv, o, valid, data, error, last, k_valid=None):
    """``o`` (an :data:`~.layouts.EncodedByteLayout` stream) from the output slot (``valid``,
    ``data``, ``error``, ``last``), behind the skid register K (:meth:`EnableCopies.drive`)."""
    k = stage_signals("k", "last", data=8, error=len(error))
    k.valid = Signal(name="k_valid") if k_valid is None else k_valid
    adv.drive([(o.valid, valid, k.valid), (o.p.data, data, k.data),
               (o.p.error, error, k.error), (o.p.last, last, k.last)])


def unit_pieces(valid, last, u, carried=None, errors=None, encoding="utf-8"):
    """A1, the unit ``u`` (``valid``, ``last``): u[20:0] and pieces of the unit, each a
    function of four of its bits: ``zh``, ``zm``, ``zt`` (u[31:28], u[27:24], u[23:21] zero),
    ``p16``, ``p12``, ``p7`` (u[19:16], u[15:12], u[10:7] zero), ``s12`` (u[15:12] == 1101:
    with u[11] the top of a surrogate); with ``errors="surrogateescape"`` also ``z20``
    (u[23:20] zero) and ``e7`` (u[10:7] == 1001: with ``s12`` and u[11] an escape,
    U+DC80..U+DCFF); for ``cesu-8`` and ``mutf-8`` ``w`` (the plane minus one: the lead
    surrogate's bits 9..6), for ``mutf-8`` ``lz``, ``mz`` (u[3:0], u[6:4] zero: U+0000 is
    C2); ``carried``, the error kind of ``carry_error`` (if not ``None``). Returns
    ``{register: value}``, as the next two."""
    escape = {"z20": u[20:24] == 0, "e7": u[7:11] == 0b1001} if errors == "surrogateescape" \
        else {}
    if encoding in SPLIT_ENCODINGS:
        from .utf16_encoder import plane_minus_one      # (it imports this module's helpers)
        escape["w"] = plane_minus_one(u)
    if encoding == "mutf-8":
        escape.update(lz=u[0:4] == 0, mz=u[4:7] == 0)
    if encoding == "wtf-8":             # a lead (not last) or a trail surrogate, with s12
        escape.update(ll=valid & u[11] & ~u[10] & ~last)
    return {
        "valid": valid, "last": last, "u": u[:21],
        "zh": u[28:32] == 0, "zm": u[24:28] == 0, "zt": u[21:24] == 0,
        "p16": u[16:20] == 0, "p12": u[12:16] == 0, "s12": u[12:16] == 0b1101,
        "p7": u[7:11] == 0, **escape, **_carried(carried),
    }


def _carried(kind):
    """The carried error kind as a register of a unit stage (none without ``carry_error``)."""
    return {} if kind is None else {"carried": kind}


def class_flags(a1, errors, encoding="utf-8"):
    """A2, from A1's registers ``a1``: the class flags and the byte candidates.

    Flags: ``z21v`` (valid and u[31:21] zero), ``x`` (C1 or C2: u[20:11] zero), ``lw``
    (u[10:7] zero: C1 if ``x``), ``r4`` (u[20:16] in 1..16: C4 if ``z21v``), ``big``
    (u[20:16] above 16), ``bs`` (``big``, or a surrogate: in the BMP, u[15:11] == 11011; with
    ``errors="surrogatepass"`` only ``big``: a surrogate is a C3 character).

    Candidates (``bmp``: u[20:16] zero): ``hi``, the lead byte's bits 0..3 of C3
    (``bmp``) or C4; ``lo``, its bits 0..4, 6, 7 of C1 (``lw``) or C2; ``pa``, the first
    payload of C3 (u[11:6]) or C4 (u[17:12]); ``p2``, the second payload of C3 (u[5:0])
    or C4 (u[11:6]); ``p0``: u[5:0] (the payload of C2, the third of C4).

    ``cesu-8``, ``mutf-8``: C4 is the surrogate pair: ``hi`` ED's bits, ``pa`` 10 w, ``p2``
    u[15:10], ``p4`` u[9:6] (the trail half's first payload, 11 u[9:6]); ``mutf-8`` (and ``wtf-8``)
    writes every surrogate (``bs`` as with ``surrogatepass``), and U+0000 as C2 (C0 80: ``lw`` also
    needs u[6:0] nonzero; ``lo`` picks by u[10:7] still, the same for U+0000).
    """
    u, p16, p7 = a1.u, a1.p16, a1.p7
    bmp = ~u[20] & p16
    split = encoding in SPLIT_ENCODINGS
    if errors == "surrogateescape":
        return _escape_flags(a1, bmp, split)
    lw = p7 & ~(a1.lz & a1.mz) if encoding == "mutf-8" else p7
    writes = errors == "surrogatepass" or encoding in _WRITES_SURROGATES
    return {
        "valid": a1.valid, "last": a1.last,
        "z21v": a1.valid & a1.zh & a1.zm & a1.zt,
        "x": bmp & a1.p12 & ~u[11], "lw": lw,
        "r4": ~(u[20] ^ p16), "big": u[20] & ~p16,
        "bs": (u[20] & ~p16) if writes else keep(u[20], ~p16, p16 & a1.s12 & u[11]),
        # 1110 u[15:12] (C3) or 11110 u[20:18] (C4), bits 0..3 (bit 4: C4, ``r4 | big``)
        "hi": _hi(u, bmp, split),
        # 0 u[6:0] (C1) or 110 u[10:6] (C2), bits 0..4 (bit 5: ``lw & u[5]``; bit 6: ``~lw |
        # u[6]``, u[6] being ``pa``'s bit 0; bit 7: ``~lw``, A3's)
        "lo": keep(p7, u[0:5], u[6:11]),
        **_payloads(a1, bmp, split),
        "p0": u[0:6], **_carried(getattr(a1, "carried", None)), **_pair_flags(a1, encoding),
    }


def _pair_flags(a1, encoding):
    """``wtf-8``'s flags for its pairing stages (:func:`~.wtf8_pair_stages.pair_stages`): with
    A2's ``z21v`` (u[31:21] zero), ``bmp`` (u[20:16] zero) and ``sl`` (a lead not last, u[20:16]
    zero: ``z21v & sl`` is one) make the lead and trail flags, so A1 needs no ``z20`` (u[23:20]
    zero) for a flag of u[31:16]."""
    if encoding != "wtf-8":
        return {}
    from .wtf8_pair_stages import plus_one       # (it imports this module's helpers)
    u = a1.u
    bmp = ~u[20] & a1.p16
    return {"bmp": bmp, "sl": a1.s12 & a1.ll & bmp,
            "st": a1.s12 & a1.valid & u[11] & u[10], "w": plus_one(u[6:10])[2:5]}


def _hi(u, bmp, split):
    """The lead byte's bits 0..3 of C3 (``bmp``) or C4 (of ED, the lead half, if ``split``)."""
    return Cat(keep(bmp, u[12:15], Const(0b101, 3) if split else u[18:21]),
               keep(bmp, u[15], 1) if split else bmp & u[15])


def _payloads(a1, bmp, split):
    """The payload candidates ``pa``, ``p2`` (and ``p4`` if ``split``) of C3 or C4."""
    u = a1.u
    if not split:
        return {"pa": keep(bmp, u[6:12], u[12:18]), "p2": keep(bmp, u[0:6], u[6:12])}
    return {"pa": keep(bmp, u[6:12], Cat(a1.w, 0, 1)), "p2": keep(bmp, u[0:6], u[10:16]),
            "p4": u[6:10]}


def _escape_flags(a1, bmp, split):
    """A2 with ``errors="surrogateescape"``: an escape U+DC80..U+DCFF is one byte, u[7:0], as
    C1's lead byte. So ``x`` (C1, C2 or an escape, but for u[31:16]) and ``lw`` (C1 or an
    escape, if ``x``) take u[11] in, and the flags that would need five pieces are split:
    ``z21`` (u[31:21] zero, not ``valid``), ``zb`` (u[31:16] zero), ``x`` (if ``zb``: C1, C2
    or an escape), ``ns`` (if ``zb``: a surrogate that is no escape), ``hi`` gets bit 4
    (``r4 | big``: C4's 1 in the lead byte), ``lo`` is C1's (and an escape's) if ``lw``."""
    u, p16, u11 = a1.u, a1.p16, a1.u[11]
    lw = a1.p7 | u11
    return {
        "valid": a1.valid, "last": a1.last,
        "z21": a1.zh & a1.zm & a1.zt, "zb": a1.zh & a1.zm & a1.z20 & p16,
        "x": keep(u11, a1.s12 & a1.e7, a1.p12), "lw": lw,
        "r4": ~(u[20] ^ p16), "big": u[20] & ~p16, "ns": a1.s12 & u11 & ~a1.e7,
        "hi": Cat(_hi(u, bmp, split), 0 if split else u[20] | ~p16),
        "lo": Cat(keep(lw, u[0:5], u[6:11]), ~lw | u[6], ~lw | u[7]),
        **_payloads(a1, bmp, split),
        "p0": u[0:6], **_carried(getattr(a1, "carried", None)),
    }


def _escape_character(a2, split, in_lead):
    """A3 with ``errors="surrogateescape"`` (see :func:`character`): ``n3`` is left to B
    (``~n12 & ~n4``), and ``err`` is not ``valid``-gated (a bubble's ``err`` is never used:
    its beat is not valid). ``in_lead`` (:func:`large_in_lead`): no ``large``; the lead
    byte's bit 6 is 0 for u[31:21] not zero."""
    valid, x, lw = a2.valid, a2.zb & a2.x, a2.lw
    err = ~a2.z21 | a2.big | (a2.zb & a2.ns)
    top = a2.lo[5:7] | (~x).replicate(2)         # bits 6, 7
    return {
        "valid": valid, "last": a2.last,
        "lead": Cat(keep(x, a2.lo[:5], a2.hi), ~x | (lw & a2.p0[5]),
                    Cat(a2.z21 & top[0], top[1]) if in_lead else top),
        "p1": keep(x, a2.p0, a2.pa), "p2": a2.p2, "p3": a2.p0, **_p4(a2, split),
        "n1": ~valid | (x & lw), "n12": ~valid | x, "n2": valid & x & ~lw,
        "n4": valid & a2.z21 & a2.r4,
        "err": err, **({} if in_lead else {"large": valid & (~a2.z21 | a2.big)}),
        "errq": err,
        **_carried(getattr(a2, "carried", None)),
    }


def _p4(a2, split):
    """A3's ``p4`` (the trail half's u[9:6]) if ``split``."""
    return {"p4": a2.p4} if split else {}


def large_in_lead(a2, errors, encoding="utf-8"):
    """Whether A3 (:func:`character`) holds no ``large`` and B reads TOO_LARGE from A3's
    ``err`` and lead byte (:func:`too_large`): ``utf-8`` with ``replace``, ``strict`` or
    ``surrogateescape``, no carried kind (its bit would take a fifth input). Two flip-flops
    fewer (``large``, and A2's ``big``, which only it read: synthesis drops it): 151 -> 149
    LCs; ``surrogateescape``'s ``err`` reads ``big``: 162 -> 161. ``utf-8-sig`` keeps
    them (without, 155 -> 153 LCs but ``replace`` 149.5 / 151.9 / 151.9 MHz, seeds 1-3, the
    last ``take`` copy's routes to B's payload LUTs 4.0-4.1 ns); ``split`` encodings' C4 lead
    byte, ED, has bit 3 set; the others write surrogates (``large`` is ``err``)."""
    return (encoding == "utf-8" and errors in ("replace", "strict", "surrogateescape")
            and getattr(a2, "carried", None) is None)


def too_large(a3, errors):
    """TOO_LARGE for A3's unit ``a3`` (an error, ``err``): its ``large``, or (without it, see
    :func:`large_in_lead`) ``err`` and not both of the lead byte's bit 6 and bit 3 (bit 4
    clear with ``surrogateescape``). An error's ``x`` is clear, so its lead bits 0..3 are A2's
    ``hi`` (bit 3 ``bmp & u[15]``: 1 for a surrogate, 0 above U+10FFFF with u[31:21] zero;
    ``surrogateescape``'s bit 4 ``u[20] | ~p16``: 0 for a surrogate, 1 above U+10FFFF), and
    its bit 6 is 0 for u[31:21] not zero, else 1: one LUT of three flip-flops."""
    if hasattr(a3, "large"):
        return a3.large
    if errors == "surrogateescape":
        return a3.err & ~(a3.lead[6] & ~a3.lead[4])
    return a3.err & ~(a3.lead[6] & a3.lead[3])


def character(a2, errors, encoding="utf-8"):
    """A3, from A2's registers ``a2``: the character. ``lead`` (before errors), ``p1``..``p3``
    (the continuation payloads in order), ``n1``..``n4`` (one-hot byte count; ``n1`` also for a
    bubble), ``n12`` (``n1`` or ``n2``), ``err`` (an error: SURROGATE or TOO_LARGE),
    ``large`` (TOO_LARGE; none if :func:`large_in_lead`: B reads :func:`too_large`). ``n3``
    is left to B (``~n12 & ~n4``: a flip-flop fewer, one LUT still). Unless ``split`` (or
    ``wtf-8``), so is ``n4`` (``~n12 & lead[4]``: ``lead[4]`` is clear for an error and a
    bubble), and ``lead`` has seven bits: bit 7, ``~(x & lw)``, is ``~n1`` for a valid
    character, an error's (EF's, or the marker's) too (:func:`error_bytes`). Two flip-flops
    fewer: ``utf-8`` 152 -> 150 LCs."""
    split = encoding in SPLIT_ENCODINGS
    if errors == "surrogateescape":
        return _escape_character(a2, split, large_in_lead(a2, errors, encoding))
    valid, z21v, x, lw, r4, bs = a2.valid, a2.z21v, a2.x, a2.lw, a2.r4, a2.bs
    if errors in _MARKERS:                 # an error is one beat, the marker
        n1 = ~z21v | bs | (x & lw)
        n12 = ~z21v | bs | x
    else:                                   # an error is EF BF BD, three beats
        n1 = ~valid | (z21v & x & lw)
        n12 = ~valid | (z21v & x)
    # bit 6 (1 but for C1, whose bit is u[6]): 0 for a unit with u[31:21] not zero too, so
    # that B reads TOO_LARGE from the lead byte (:func:`large_in_lead`); else ``large`` is a
    # register
    in_lead = large_in_lead(a2, errors, encoding)
    bit6 = ~x | ~lw | a2.pa[0]
    values = {
        "valid": valid, "last": a2.last,
        # bit 4: C4's 1, and 0 for an error (whose lead byte is B's) and a bubble, so that B
        # reads ``n4`` as ``~n12 & lead[4]``; ED's 0 if ``split`` (then ``n4`` is a register);
        # bit 7, ``~(x & lw)``, is B's ``~n1`` (see :func:`error_bytes`)
        "lead": Cat(keep(x, a2.lo[:4], a2.hi), x & a2.lo[4] if split else
                    z21v & keep(x, a2.lo[4], r4),
                    ~x | (lw & a2.p0[5]), z21v & bit6 if in_lead else bit6),
        "p1": keep(x, a2.p0, a2.pa), "p2": a2.p2, "p3": a2.p0, **_p4(a2, split),
        # (``wtf-8``'s pairing stages write bit 4 and 7 of their own: ``n4`` stays a register)
        "n1": n1, "n12": n12, **({"n4": z21v & r4} if split or encoding == "wtf-8" else {}),
        "err": valid & (~z21v | bs),
        **({} if in_lead else {"large": valid & (~z21v | a2.big)}),
        **_carried(getattr(a2, "carried", None)),
    }
    if encoding == "wtf-8":
        from .wtf8_pair_stages import pair_character     # (it imports this module's helpers)
        values["lead"], values["p1"], values["p2"] = pair_character(
            a2, values["lead"], values["p1"], values["p2"])
    return values


#: The encodings whose ``i.ready`` is ``take``'s first copy (no clock enable: its other loads
#: are ``idle``'s LUT and, with ``utf-8`` ``replace`` and ``strict``, B's payload select) instead
#: of A1's first enable copy (33 or 35 enables); ``utf-8-sig``'s ``i.ready`` LUT reads it too
#: (a copy fewer: 156 -> 155 LCs). UP5K, seeds 1-6 (stop 28): ``utf-8`` ``replace`` 160.7 x6
#: MHz (162.7 / 160.7 / 160.7 / 160.7 / 160.7 / 147.8 on A1's copy), ``strict`` 149.5 / 162.1
#: / 160.7 / 162.7 / 162.1 / 160.7 (163.4 / 147.8 / 162.1 / 160.7 / 160.7 / 157.3),
#: ``surrogateescape`` 162.1 / 160.7 / 149.5 / 162.1 / 162.1 / 162.1 (148.9 / 148.9 / 163.4 /
#: 163.4 / 162.7 / 160.7). ``cesu-8`` and ``wtf-8`` lost with it (``cesu-8`` ``strict`` 160.7
#: / 159.3 / 149.5 / 160.7 / 147.8 / 160.7 against 162.1 / 162.1 / 162.1 / 163.4 / 160.7 /
#: 162.7; ``wtf-8`` ``replace`` seed 3 143.5 against 160.7): they keep A1's copy, and so does
#: ``mutf-8`` (about even).
READY_ON_FIRST = ("utf-8",)


#: The most flip-flops one copy of ``take`` or ``adv`` drives as clock enables: three of the
#: iCE40's logic blocks (8 flip-flops sharing one enable each) and one more. The copies are
#: packed in the order of the registers, across stages: fewer copies (163 LCs, 168 with one
#: group of at most :data:`~utf8_gateware.hdl.pipeline.CE_FANOUT` per stage) and no slower
#: (measured, seeds 1-3); 25, not 24, fits ``utf-8``'s 97 unit-stage flip-flops in four
#: copies (a copy fewer: 158 -> 157 LCs when measured, the same median fmax).
SHIFT_CE_FANOUT = 25


#: The most flip-flops one copy of :class:`Utf8ShiftEncoder`'s ``take`` and ``adv`` drives but
#: with ``surrogateescape``: after A3 lost ``lead[7]`` and ``n4`` (95 unit-stage flip-flops,
#: four copies either way) the groups of 26 placed better (``utf-8`` ``replace``, seeds 1-3:
#: 160.7 / 163.4 / 162.1 MHz; with 25, 157.3 / 151.9 / 150.1; 24, 160.7 / 151.3 / 148.9; 32
#: or 33, three copies and 149 LCs, 160.7 MHz median). With ``surrogateescape`` 26 puts
#: ``err`` and its copy ``errq`` under one enable, Yosys merges them and a LUT reads a LUT
#: (134.6 MHz): it keeps :data:`SHIFT_CE_FANOUT`. Since stop 27 ``utf-8`` ``replace`` and
#: ``strict`` take :data:`PLAIN_CE_FANOUT`; the other encodings keep 26.
UTF8_CE_FANOUT = 26


#: The most flip-flops one copy of ``take`` and ``adv`` drives with ``utf-8``, by policy; there
#: B's payload select ``t2`` (13 LUT loads: ``b_q1``, ``b_q2``'s multiplexers) is ``take``'s
#: first copy, which drives no clock enable, instead of the last enable copy (18 enables and
#: those 13 LUTs: the critical path on seeds 1 and 2 of ``replace``, 160.7 / 163.4 / 162.1
#: MHz with 26). Three enable copies and the select: 150 LCs, as before. UP5K, seeds 1-3,
#: ``replace`` / ``strict`` with the select: 26 (151 LCs) 160.7 / 162.7 / 162.1 and 162.1 /
#: 162.1 / 165.6 MHz; 28 (151) 162.1 / 160.7 / 160.7 and 160.7 / 160.7 / 163.4; 30 (151)
#: 147.8 / 160.7 / 147.8 and 151.3 / 160.7 / 148.9; 32 163.4 / 160.7 / 163.4 and 160.7 x3;
#: 33 163.4 / 162.7 / 163.4 and 149.5 / 162.1 / 160.7; 34 160.7 x3 and 163.4 / 160.7 / 148.9;
#: 35 160.7 / 160.7 / 163.4 and 160.7 / 164.8 / 163.4; 36 (149) 160.7 x3 and 160.7 / 162.7 /
#: 160.7. The family encoders keep :data:`UTF8_CE_FANOUT` and their last copy as select
#: (``cesu-8`` seed 1 fell from 160.7 to 147.8 MHz with the select, ``wtf-8`` to 160.7 from
#: 163.4 and a LC past its bound). Since A3 holds no ``large`` (:func:`large_in_lead`; 95
#: unit-stage flip-flops, 149 LCs) ``strict`` takes 33 as ``replace``: seeds 1-6 162.1 / 160.7
#: / 162.7 / 162.1 / 160.7 / 162.1 MHz; 35: 160.7 / 160.7 / 162.1 / 160.7 / 162.1 / 160.7; 34:
#: 162.1 / 162.1 / 176.0 (seeds 1-3); 31 (150 LCs) 147.8 / 162.1 / 162.1; 30 (150) 160.7 x3.
PLAIN_CE_FANOUT = {"replace": 33, "strict": 33}


#: The most flip-flops one copy of ``take`` and ``adv`` drives with ``wtf-8`` (its pairing
#: stages W and X: a copy of ``take`` fewer than with 26, five flip-flops in the netlist).
#: UP5K, seeds 1-3, ``replace`` / ``strict`` (core LCs):
#: 32 (222) 160.7 / 160.7 / 162.7 and 162.1 / 162.7 / 149.5 MHz; 26 (223) 157.3 / 160.7 / 160.7
#: and 160.0 / 147.8 / 160.7; 34 (222) 160.7 / 160.7 / 157.3. Before X made ``lo`` (233 LCs
#: with 26): 32 and 34 (232), 160.7 / 160.7 / 160.7 and 160.7 / 149.5 / 162.1, 162.1 / 160.7 /
#: 162.1 and 164.8 / 157.3 / 160.7; 30 (238) and 36 (236) 116-136 MHz, 40 (230) 138-145, 48
#: (227) 92-100 (``replace``).
WTF8_CE_FANOUT = 32


#: The most flip-flops one copy of the squeezing enables (:class:`SqueezeEnables`) drives:
#: five logic blocks. Fewer copies than with 24, so fewer set LUTs that A2's valid and
#: ``o.ready`` reach (``wtf-8`` ``replace``, seeds 1-3: 113.8 / 118.1 / 122.9 MHz, 322 LCs;
#: with 24: 109.7 / 108.5 / 109.7, 334; with 32, 48, 64: medians 121.3, 89.6, 96.0).
SQUEEZE_CE_FANOUT = 40


class EnableCopies:
    """A control flip-flop in copies (``name``, ``name_ce1``, ...), each computed by
    ``next(own value)`` (which keeps synthesis from merging them) and loaded when ``enable``
    (a flip-flop) is high. All start at 0 (the iCE40's power-up state: a flip-flop that drives
    a clock enable is never inverted). :meth:`load` uses them as clock enables, at most
    :attr:`FANOUT` flip-flops per copy
    (packed across calls: a copy serves the registers of several stages; ``fanout``: another
    number). ``first_loads``: the
    first copy (:attr:`first`, which the caller also reads as logic) is the first clock enable
    too, a copy fewer (``adv``: its first copy selects the output port's multiplexers and
    enables ``take``, and enables B's first registers). ``set`` or ``clear`` (a flip-flop, not
    both): the copies' synchronous set or reset in the enabled cycles."""

    #: The most flip-flops one copy drives as clock enables.
    FANOUT = SHIFT_CE_FANOUT

    def __init__(self, m, name, next, enable=None, first_loads=False, fanout=None, set=None,
                 clear=None):
        self.m, self.name, self.next, self.enable = m, name, next, enable
        self.set, self.clear = set, clear
        if fanout is not None:
            self.FANOUT = fanout
        self.copies = []
        self.room, self.copy = 0, None
        self.first = self.new()
        #: The copies that :meth:`load` uses, in order (each a clock enable); with
        #: ``first_loads`` the first copy is the first of them.
        self.enables = [self.first] if first_loads else []
        if first_loads:
            self.room, self.copy = self.FANOUT, self.first

    def new(self, copy=None):
        """One more copy (``copy``: a signal to drive as one, else a new one)."""
        n = len(self.copies)
        if copy is None:
            copy = Signal(name=self.name if not n else f"{self.name}_ce{n}")
        self.copies.append(copy)
        if self.enable is None:
            self._next_state(copy)
        else:
            with self.m.If(self.enable):
                self._next_state(copy)
        return copy

    def _next_state(self, copy):
        # ``set`` / ``clear`` (flip-flops): the synchronous set or reset, no LUT in front (the
        # iCE40's acts only under the clock enable, as ``enable`` here)
        forced = self.set if self.set is not None else self.clear
        if forced is None:
            self.m.d.sync += copy.eq(self.next(copy))
            return
        with self.m.If(forced):
            self.m.d.sync += copy.eq(self.set is not None)
        with self.m.Else():
            self.m.d.sync += copy.eq(self.next(copy))

    def load(self, pairs):
        """Each ``(register, value)``: ``register`` takes ``value`` in the cycles in which the
        flip-flop is high."""
        for register, value in pairs:
            register, value = Value.cast(register), Value.cast(value)
            for bit in range(len(register)):
                if not self.room:
                    self.copy, self.room = self.new(), self.FANOUT
                    self.enables.append(self.copy)
                with self.m.If(self.copy):
                    self.m.d.sync += register[bit].eq(value[bit])
                self.room -= 1

    def drive(self, outputs):
        """The output port behind a skid register: each ``(output, slot, skid)``, ``skid`` takes
        ``slot`` in the cycles in which the first copy is high, and ``output`` is ``slot`` then
        (a fresh output) and ``skid`` otherwise (the output the sink refused): one 2:1
        multiplexer of flip-flops."""
        self.load([(skid, slot) for _, slot, skid in outputs])
        self.m.d.comb += [output.eq(Mux(self.first, slot, skid)) for output, slot, skid in outputs]


class SqueezeEnables(EnableCopies):
    """The clock enables of the unit stages that squeeze out bubbles: flip-flops ``move``,
    ``move_ce1``, ... (each drives at most :data:`SQUEEZE_CE_FANOUT` clock enables), set for the
    cycles in which B takes A3's character (``take``) or A3 holds a bubble, computed a cycle
    ahead. So while B writes a character of several bytes, a bubble in A3 is replaced by the
    unit behind it, and a source that offers a unit every n cycles from its start (a decoder in
    front) loses no output cycle to the bubbles that entered the stages before B was busy.

    The next state, ``take``'s (``o.ready`` and ``take ? a3_n1 : b_r01`` under ``adv``) or A3
    empty (``move & ~a2_valid``), has seven inputs; each copy is one flip-flop with three: its
    clock enable is a copy of ``adv`` (a flip-flop), its data input ``take``'s next state
    (one LUT), its synchronous set ``o.ready & move & ~a2_valid`` (one LUT of its own value:
    the copies stay apart). A squeeze thus waits for a cycle in which the sink is ready (then
    ``adv`` is high in the next): ``move`` is low whenever ``adv`` is low (it is set only with
    ``o.ready``), so holding it while ``adv`` is low holds 0, and the stages never move while A3
    holds a unit that B does not take. All start at 0: the stages stay put until the first
    ``take``, as without squeezing."""

    FANOUT = SQUEEZE_CE_FANOUT

    def __init__(self, m, take, adv, ready, a3_n1, idle):
        self.m, self.take, self.ready, self.a3_n1, self.idle = m, take, ready, a3_n1, idle
        self.enable = adv.new()                             # a copy of ``adv`` of their own
        self.b_r01b = Signal(init=1, name="b_r01b")         # a copy of ``b_r01`` (B loads it)
        self.copies, self.enables = [], []
        self.room, self.copy = 0, None

    def new(self):
        """One more copy (its next state: :meth:`load_copies`)."""
        n = len(self.copies)
        copy = Signal(name="move" if not n else f"move_ce{n}")
        self.copies.append(copy)
        return copy

    def load_copies(self, a2_valid):
        """Each copy's next state (A2's ``valid`` is built after the copies are used)."""
        for copy in self.copies:
            # take's next state, one LUT packed with this copy: of a take copy of its own and
            # of b_r01b (with b_r01 it would be that take copy's own LUT, shared: a far route)
            taken = self.ready & keep(self.take.new(), self.a3_n1, self.b_r01b)
            with self.m.If(self.enable):
                # A3 takes A2's bubble, or `take` is set by `idle`
                with self.m.If((self.ready & copy & ~a2_valid) | self.idle):
                    self.m.d.sync += copy.eq(1)
                with self.m.Else():
                    self.m.d.sync += copy.eq(taken)


class _Stage:
    """The registers of one stage, as attributes."""


def shift_stage(take, stage, values, ones=(), **given):
    """The registers ``{stage}_{name}`` of ``values`` (``{name: value}``; ``given``: registers
    made by the caller; ``ones``: those that start at 1), loaded when ``take``; returns them
    as a :class:`_Stage`."""
    regs = _Stage()
    pairs = []
    for name, value in values.items():
        value = Value.cast(value)
        reg = given[name] if name in given else \
            Signal(len(value), name=f"{stage}_{name}", init=int(name in ones))
        setattr(regs, name, reg)
        pairs.append((reg, value))
    take.load(pairs)
    return regs


def stage_signals(stage, *flags, **fields):
    """A :class:`_Stage` of one-bit registers ``flags`` and registers ``fields``
    (``name=width``), each named ``{stage}_{name}``."""
    regs = _Stage()
    for name in flags:
        setattr(regs, name, Signal(name=f"{stage}_{name}"))
    for name, width in fields.items():
        setattr(regs, name, Signal(width, name=f"{stage}_{name}"))
    return regs
