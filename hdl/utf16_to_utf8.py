"""UTF-16 code units in, UTF-8 bytes out: no code point formed, no shift encoder."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value

from .component import StreamStage, ready_source
from .error_kind import ErrorKind
from .layouts import CodeUnitLayout, EncodedByteLayout
from .pipeline import keep, lut
from .utf8_shift_encoder import EnableCopies, shift_stage, stage_signals


__all__ = ["Utf16ToUtf8"]


#: U+FFFD in UTF-8.
_REPLACEMENT = b"\xef\xbf\xbd"


def _input_buffer(m, port, take):
    """A0: registers I (the input beat, loaded when ``rdy``), S (I's beat, loaded when ``rdy``;
    it holds the beat that arrived while O waited) and O (I's beat, or S's while ``rdy`` is
    low, loaded when ``take``). ``rdy`` (``port.ready``, a flip-flop) falls for the cycles after
    one in which I held a beat and O did not move, and rises after one in which O moved. Each
    register bit one LUT of flip-flops (I of the source's output multiplexer)."""
    fields = {"valid": port.valid, "unit": port.p.unit, "error": port.p.error.as_value(),
              "last": port.p.last}
    i = {name: Signal(len(Value.cast(value)), name=f"in_i_{name}") for name, value in
         fields.items()}
    s = {name: Signal(len(reg), name=f"in_s_{name}") for name, reg in i.items()}
    go = take.new()                             # O moves (a `move` copy)
    rdy = EnableCopies(m, "rdy", lambda own: go | (own & ~i["valid"]))
    o = shift_stage(take, "a0", {name: Mux(rdy.first, i[name], s[name]) for name in i})
    rdy.load([(i[name], value) for name, value in fields.items()] +
             [(s[name], i[name]) for name in i])
    m.d.comb += port.ready.eq(rdy.first)
    return o


def _const(value, width=8):
    return Const(value, width)


class _MoveCopies(EnableCopies):
    """The clock enables of the stages up to G (and ``i.ready``): flip-flops ``move``,
    ``move_ce1``, ..., each enabled by a copy of ``adv`` and set by ``idle`` as ``take`` is. The
    next state is ``take``'s with ``g_hold`` for ``g_m2``: ``o.ready``, R2 empty, and not (a
    step in which G's group of two bytes or more went to B while the unit that fills G next was
    already there). So where ``take`` falls for the step after such a group, ``move`` falls only
    if G would be filled again; otherwise the stages move once more (G is empty: the bubble
    behind H is squeezed out, the squeeze). ``move`` is low whenever ``adv`` is (it needs
    ``o.ready``), so the stages never move while G holds a group that B does not take. All
    start at 0; their next states are given by :meth:`finish` (the stages after them are built
    later)."""

    def __init__(self, m, adv):
        self.enable_copy = adv.new()
        super().__init__(m, "move", None)

    def new(self, copy=None):
        n = len(self.copies)
        if copy is None:
            copy = Signal(name=self.name if not n else f"{self.name}_ce{n}")
        self.copies.append(copy)
        return copy

    def finish(self, ready, r2_valid, g_hold, idle):
        for copy in self.copies:
            with self.m.If(self.enable_copy):
                with self.m.If(idle):
                    self.m.d.sync += copy.eq(1)
                with self.m.Else():
                    self.m.d.sync += copy.eq(~r2_valid & ready() & ~(copy & g_hold))


class Utf16ToUtf8(StreamStage):
    """Writes each UTF-16 code unit's UTF-8 bytes directly (``replace``): a unit below 0x80 is
    one byte, below 0x800 two, any other non-surrogate three; a lead surrogate (D800..DBFF, not
    the last of its message) directly followed by a trail surrogate (DC00..DFFF) is four bytes
    (F0..F4 and the next byte from the lead, the third from the lead's two low bits and the
    trail's four high bits, the fourth from the trail's six low bits); any other surrogate is
    *lone*: EF BF BD (U+FFFD), ``error`` ``SURROGATE``. After
    :class:`~utf8_gateware.hdl.utf16_units.Utf16Units` (or
    :class:`~utf8_gateware.hdl.utf16_bom_units.Utf16BomUnits`) it is the ``utf-16-le``
    (``-be``, ``utf-16``) to ``utf-8`` transcoder
    (:class:`~utf8_gateware.hdl.transcoder.Transcoder`): the output equals
    :class:`~utf8_gateware.hdl.utf16_decoder.Utf16Decoder` (``replace``) followed by the UTF-8
    encoder with ``carry_error``, byte for byte.

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.CodeUnitLayout` stream (``unit: 16``, ``error``,
    ``last``). A beat with ``error`` set (the byte stage's marker beat of an odd trailing
    byte, ``TRUNCATED``) becomes EF BF BD with its kind; a lead surrogate directly before a
    ``TRUNCATED`` beat is part of the same maximal subpart (one EF BF BD, ``TRUNCATED``, as
    the decoder and CPython).
    ``o``: :data:`~utf8_gateware.hdl.layouts.EncodedByteLayout` stream (``data: 8``,
    ``error``, ``last``): ``error`` on the first byte written for a unit (or pair), ``NONE``
    on the others; ``last`` on the final byte of each message.

    Latency and throughput
    ----------------------
    Stages, loaded when ``move`` (flip-flop copies, and ``i.ready``) is set::

        A0  the input unit as it is (each input bit goes to one flip-flop and nothing else)
        A1  the unit, pieces of it (nibbles zero, D in the top nibble), ``ok`` (valid, no
            error), ``trunc``
        A2  length classes (``le1``, ``le2``, ``bad``: a surrogate or error beat), lead and
            trail flags, two candidate bytes, a lead's plane + 1 (bit by bit, no carry)
        A3  the unit's bytes alone (EF BF BD if ``bad``), its byte count, a lead's two pair
            bytes, ``vlead`` (a lead that may join: valid, no error, not last), ``vtrail``
        A4  a trail whose predecessor (register L: the last unit that entered A4) is a lead
            that may join gets its two bytes (the lead's two low bits and its own ten), no
            error; ``go`` (A4 holds a unit, or A3 a trail) and ``nt`` (that unit is a trail)
        H   the held unit: shifted in every step but while a lead waits for ``go``
        G   H's bytes: a unit's one to three, a lead followed by a trail its first two
        B   the output slot, R1 and R2 the group's further bytes; K the skid register

    So a pair is two groups of two bytes (the lead's, then the trail's), and no group is longer
    than three. B, R1, R2 load when ``adv`` (a flip-flop; low for the cycle after the sink
    refused a byte) is set: B takes G's first byte when ``take`` is set, else R1's. ``take`` is
    low for the cycles in which R1 still holds a byte after B's (the input waits while a
    group's bytes go out) and for the cycle after a refusal. One byte per cycle while the
    source has a unit every cycle and the sink is ready; an idle cycle more per refusal. Behind
    :class:`~utf8_gateware.hdl.utf16_units.Utf16Units` (a unit every second cycle at best) a
    bubble follows each unit (a lead goes on from H when its trail is in A4 or, behind a bubble,
    in A3); with the sink always ready, bytes per cycle on 150 random characters: one, two and
    three bytes a character and supplementary text 1.000 of what the source allows (ASCII:
    0.502, half the input bytes), mixed 1-4 byte text 0.947, with lone surrogates 0.924.
    The first byte for a unit (a pair: its lead) is valid on ``o`` 9 cycles after its transfer
    at full rate (H holds a unit until the next step; a unit behind longer groups waits for
    them): :attr:`LATENCY` = 9.

    LUT depth: one where a register bit is one LUT of at most four flip-flops (all but a few
    of A2's); every clock enable is a flip-flop (``adv``, ``take``, ``move``), and so is every
    synchronous set (``idle``, of ``take`` and ``move``); ``o`` is a 2:1 multiplexer of slot
    and skid register; nothing depends on ``o.ready`` in the same cycle but the next states of
    ``adv``, ``take`` and ``move``; ``o.valid`` never does.
    """

    #: Cycles from the transfer of a unit (a pair's lead) to its first byte on ``o`` at full
    #: rate with the sink always ready.
    LATENCY = 9

    LAYOUTS = (CodeUnitLayout, EncodedByteLayout)

    #: Copies of ``o.ready`` read (:func:`~utf8_gateware.hdl.component.share_ready`); ``i.ready``
    #: is the input buffer's flip-flop.
    USES_READIES = True

    def elaborate(self, platform):
        m = Module()
        o = self.o
        b = stage_signals("b", "valid", "last", data=8, error=3)
        r1, r2 = (stage_signals(name, "valid", "last", data=8) for name in ("r1", "r2"))
        k = stage_signals("k", "valid", "last", data=8, error=3)
        g_m2 = Signal(name="g_m2")
        ready = ready_source(self)
        adv = EnableCopies(m, "adv", lambda own: ready() | ~Mux(own, b.valid, k.valid))
        # Low for the cycle after a refusal, after B took a group of two bytes or more, and
        # while R2 is set (B takes R1 in the next cycle too); set by `idle`.
        idle = Signal(name="b_idle")
        take = EnableCopies(m, "take", lambda own: ~r2.valid & ready() & ~(own & g_m2),
                            enable=adv.first, set=idle)
        move = _MoveCopies(m, adv)
        a0 = _input_buffer(m, self.i, move)
        a1 = shift_stage(move, "a1", self._pieces(a0))
        a2 = shift_stage(move, "a2", self._classes(a1))
        a3 = shift_stage(move, "a3", self._bytes(a2))
        # L: the last unit that entered A4 (a lead that may join: valid, no error, not last;
        # its two low bits), so that A4 knows whether a trail joins the lead before it
        l_pl, l_hi01 = Signal(name="l_pl"), Signal(2, name="l_hi01")
        move.load([(l_pl, keep(a3.valid, a3.vlead, l_pl)),
                   (l_hi01, keep(a3.valid, a3.lo[0:2], l_hi01))])
        a4 = shift_stage(move, "a4", {
            **self._joined(a3, a3.vtrail & l_pl, l_hi01),
            # valid: after it reaches H, A4's unit fills G next (a lead that waits: g_hold is
            # high for nothing, which only costs a squeeze; low only where nothing would fill)
            "ok2": a3.valid,
            # a lead in H may go: A4 holds a unit, or A4 none and A3 a trail; ``nt``: that
            # unit (the one after the lead) is a trail
            "go": a3.valid | a2.trail,
            "nt": a3.vtrail | (~a3.valid & a2.trail)})
        h = stage_signals("h", "valid", "lead", "last", "m2", "m3", b0=8, b1=8, b2=8, p0=8,
                          p1=8, kind=3)
        shift = ~h.lead | a4.go
        move.load([
            # (a lead waits: ~go; one with a TRUNCATED beat behind it ends the message)
            (h.valid, keep(h.lead, ~a4.go | a4.vnx, a4.valid)),
            (h.lead, keep(shift, a4.vlead, h.lead)),
            # (a lead's m2 is set: H's m2 is clear while H is empty)
            (h.m2, keep(h.lead, (a4.m2 & ~a4.vtrunc) | ~a4.go, a4.m2)),
            *((getattr(h, name), keep(shift, getattr(a4, name), getattr(h, name)))
              for name in ("last", "m3", "b0", "b1", "b2", "p0", "p1", "kind")),
        ])
        pair = h.lead & a4.nt
        ends = h.lead & a4.vtrunc
        g = shift_stage(move, "g", {
            "valid": h.valid & shift,
            "m3": h.m3 & h.valid & (~h.lead | a4.vnt),
            "d0": keep(pair, h.p0, h.b0),
            "d1": keep(pair, h.p1, h.b1),
            "d2": h.b2,
            "error": keep(pair, _const(ErrorKind.NONE, 3),
                          keep(ends, _const(ErrorKind.TRUNCATED, 3), h.kind)),
            "last": keep(ends, a4.last, h.last),
        }, m2=g_m2)
        # G takes a group of two bytes or more, and the unit that fills G next is there
        g_hold = Signal(name="g_hold")
        move.load([(g_m2, h.m2 & h.valid & shift),
                   (g_hold, a4.ok2 & keep(h.lead, ~a4.vtrunc, h.m2))])
        t = [take.new() for _ in range(2)]
        m.d.sync += idle.eq(~b.valid & ~take.first & ~ready() & ~idle)
        move.finish(ready, r2.valid, g_hold, idle)
        adv.load([
            (b.valid, keep(t[0], g.valid, r1.valid)),
            (b.data, keep(t[0], g.d0, r1.data)),
            (b.error, t[0].replicate(3) & g.error),
            (b.last, keep(t[0], g.last & ~g_m2, r1.last)),
            (r1.valid, keep(t[0], g_m2, r2.valid)),
            (r1.data, keep(t[1], g.d1, r2.data)),
            (r1.last, keep(t[1], g.last & ~g.m3, r2.last)),
            (r2.valid, t[1] & g.m3),
            (r2.data, g.d2),
            (r2.last, g.last),
        ])
        adv.drive([(o.valid, b.valid, k.valid), (o.p.data, b.data, k.data),
                   (o.p.error, b.error, k.error), (o.p.last, b.last, k.last)])
        return m

    @staticmethod
    def _pieces(a0):
        """A1, from A0: the unit, ``za``/``zb`` (unit[15:12], unit[11:8] zero), ``hi4``
        (unit[15:12] == 1101), ``ok`` (no error), ``vtrunc`` (a valid TRUNCATED beat)."""
        u = a0.unit
        return {
            "valid": a0.valid, "last": a0.last, "unit": u, "error": a0.error,
            "za": u[12:16] == 0, "zb": u[8:12] == 0, "hi4": u[12:16] == 0b1101,
            "ok": a0.valid & (a0.error == ErrorKind.NONE),
            "vtrunc": a0.valid & (a0.error == ErrorKind.TRUNCATED),
        }

    @staticmethod
    def _classes(a1):
        """A2, from A1: ``le1`` (below 0x80), ``le2`` (below 0x800), ``bad`` (a surrogate or an
        error beat: EF BF BD), ``lead``/``trail`` (a surrogate of either kind, no error), the
        unit's ``kind``, the candidate bytes ``c0`` (the first of two or three) and ``c1`` (the
        second), ``w`` (a lead's unit[9:6] + 1, bit by bit)."""
        u = a1.unit
        sur = a1.hi4 & u[11]
        le2 = a1.za & ~u[11]
        return {
            "valid": a1.valid, "last": a1.last, "lo": u[:12], "vtrunc": a1.vtrunc,
            "le1": a1.za & a1.zb & ~u[7], "le2": le2, "bad": ~a1.ok | sur,
            "lead": a1.ok & sur & ~u[10], "trail": a1.ok & sur & u[10],
            "kind": keep(a1.ok & sur, _const(ErrorKind.SURROGATE, 3), a1.error),
            # (`keep`, not `Mux`: a constant under a condition would be a set/reset)
            "c0": keep(le2, Cat(u[6:11], _const(0b110, 3)), Cat(u[12:16], _const(0b1110, 4))),
            "c1": Cat(keep(le2, u[0:6], u[6:12]), _const(0b10, 2)),
            "w": Cat(*(u[6 + n] ^ u[6:6 + n].all() for n in range(4)), u[6:10].all()),
        }

    @staticmethod
    def _bytes(a2):
        """A3, from A2: the bytes alone ``b0``..``b2`` and the count flags ``m2``, ``m3`` (two,
        three bytes or more: valid too), a lead's ``p0``, ``p1``; ``lo`` (the unit's ten low
        bits); ``vlead`` (a lead that may join: not last), ``vtrail``, ``vtrunc``."""
        ef, bf, bd = _REPLACEMENT
        bad = a2.bad
        lo = a2.lo
        return {
            "valid": a2.valid, "last": a2.last, "lo": lo[:10], "kind": a2.kind,
            "vtrunc": a2.vtrunc,
            "b0": keep(bad, _const(ef), keep(a2.le1, lo[:8], a2.c0)),
            "b1": keep(bad, _const(bf), a2.c1),
            "b2": keep(bad, _const(bd), Cat(lo[:6], _const(0b10, 2))),
            "m2": a2.valid & (bad | ~a2.le1),
            "m3": a2.valid & (bad | ~a2.le2),
            "p0": Cat(a2.w[2:5], _const(0b11110, 5)),
            "p1": Cat(lo[2:6], a2.w[0:2], _const(0b10, 2)),
            "vlead": a2.lead & ~a2.last,
            "vtrail": a2.trail,
        }

    @staticmethod
    def _joined(a3, pt, hh):
        """A4, from A3: a trail that joins the lead before it (``pt``) gets its two bytes
        (the lead's two low bits ``hh`` and its own ten), no error; the rest as A3; ``vnt``
        (valid, not a trail), ``vnx`` (valid, not a TRUNCATED beat)."""
        return {
            "valid": a3.valid, "last": a3.last, "vlead": a3.vlead, "vtrail": a3.vtrail,
            "vtrunc": a3.vtrunc, "vnt": a3.valid & ~a3.vtrail, "vnx": a3.valid & ~a3.vtrunc,
            "m2": a3.m2, "m3": a3.m3 & ~pt,
            "b0": keep(pt, Cat(a3.lo[6:10], hh, _const(0b10, 2)), a3.b0),
            "b1": keep(pt, Cat(a3.lo[0:6], _const(0b10, 2)), a3.b1),
            "b2": a3.b2, "p0": a3.p0, "p1": a3.p1,
            "kind": keep(pt, _const(ErrorKind.NONE, 3), a3.kind),
        }

