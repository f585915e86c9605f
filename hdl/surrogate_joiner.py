"""The surrogate-joining stage of CESU-8 and Modified UTF-8 decoding."""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Mux, Value

from .error_kind import ErrorKind
from .lane_marks import surrogate_sequences
from .pipeline import keep, lut


__all__ = ["SurrogateJoiner"]


_REPLACEMENT = 0xFFFD
_LEAD = 0xD800


class SurrogateJoiner:
    """The joining of surrogate pairs after a UTF-8-family byte decoder that accepts surrogates
    (CESU-8, Modified UTF-8), built into the decoder's own pipeline: a lead surrogate directly
    followed by a trail surrogate (both well-formed outputs of the byte decoder) is one
    supplementary code point. The reference's ``JoinSurrogates`` without ``merge_truncated``
    (and the UTF-16 decoder's rule, :class:`~utf8_gateware.hdl.utf16_decoder.Utf16Decoder`):

    * An error item of the byte decoder (U+FFFD or an escape U+DC80..U+DCFF, with its kind)
      passes through as it is and never merges with a lead surrogate before it: the lead is
      lone, an error of its own (ED A0 80 ED B0 is U+FFFD ``SURROGATE``, U+FFFD ``TRUNCATED``).
    * A lone surrogate becomes U+FFFD ``SURROGATE`` (``errors="replace"``), the escapes
      U+DC00+b of its three bytes b, each ``SURROGATE`` (``"surrogateescape"``, PEP 383 as the
      reference renders it), passes as itself flagged ``SURROGATE`` (``"surrogatepass"``) or,
      with ``lone_is_error=False`` (Modified UTF-8, where every Java ``char`` sequence is
      well-formed), as itself with ``NONE``.

    Why a stage after the byte decoder: a pair spans six bytes, past the byte decoder's three-byte
    look-back, and a lead is lone or not by the next output, which may come any number of bubbles
    later. But it is part of the decoder's rigid pipeline (:mod:`~utf8_gateware.hdl.pipeline`; one
    clock enable, one skid register) and reads only flip-flops: the decoder's last output slot
    ``X``, stage ``D``'s burst flag, and flags that the lane marks in stage ``D``
    (:func:`~utf8_gateware.hdl.lane_marks.surrogate_sequences`) and that travel with the item to
    ``X``: a lead that is not the message's last, a trail, any surrogate.

    One stage, ``J`` (the output slot), and no held item: a lead in ``X`` leaves its slot empty
    and its ten bits in ``L`` (loaded with each lead), and *waits* until the next item is seen
    coming, one step before it reaches ``X``: a trail makes ``J`` the pair of ``L`` and ``X``'s
    trail in its step; anything else makes the lead lone, and ``J`` writes it into the step
    before that item's (the lead's own slot, or a bubble after it: always empty). So no item is
    ever delayed and ``J`` is ``X`` plus a choice: each of its bits one LUT4 of ``X``'s bit,
    ``L``'s bit, the wait flag and ``X``'s trail flag. A lone surrogate becomes U+FFFD by a
    flag ORed in at the output (:meth:`~utf8_gateware.hdl.pipeline.Pipeline.drive_output`'s
    ``ones``; only bit 1 is cleared on the way), and so does its kind. "The next item is valid
    and no trail" is two flip-flops a step ahead (with one slot stage): stage ``E``'s byte has
    an output of its own that is no trail (a mark: it leaves no prefix pending or ends the
    message), or stage ``D``'s a burst; so every flip-flop is one LUT4 of flip-flops. (With
    ``surrogateescape``'s three slot stages it is one kept LUT of the slot's sources, and
    ``J``'s valid two levels.) ``J`` carries bits 0..15 and a ``pair`` flag: a pair's bits
    16..20 are ``L``'s ``high``, gated at the output by the flag (no other item has them), and
    the skid register keeps the flag only. Cost: 21 flip-flops in ``J``, 15 in ``L``, a wait
    flag, a lead flag a step ahead, three look-ahead flags, one or two set flags, six of flags
    and a dozen of the marks' (against 33 + 26 with a held item ahead of the output slot;
    UP5K: 231 against 277 LCs with CESU-8).
    Latency: :attr:`LATENCY` = 1 step after ``X``; throughput: one item in every step (a pair
    leaves a bubble).

    ``surrogateescape`` (CESU-8): three more items per lone surrogate, and no queue. ``J``
    writes a lone surrogate as one item, in slot *s*, and three stages after it, ``K1`` ..
    ``K3``, turn it into the escapes of its three bytes, in slots *s* - 2, *s* - 1, *s*: while
    ``J`` holds it, ``K1`` takes ``J``'s slot as the third byte's escape (its bits 0..5 are
    the surrogate's), ``K2`` the slot before as the second's (80 | the surrogate's bits 6..11),
    ``K3`` the one before that as ED's; an escape's bits above 6 are set at the output by a
    flag (``ones``), and so is each stage one LUT per bit. Those two slots are always silent:
    a trail, or a lead that ends its message, is lone where it stands, after its own bytes'
    slots; a waiting lead is written before the next item *or the next lead's start*, which the
    lead's completion in stage ``D`` marks two slots back (its ED's slot or a bubble after it),
    so the next lead's three slots stay free for its own escapes (ED A0 80 ED A0 80 41: six
    escapes, then U+0041, in nine slots). The slot ``x`` is the byte decoder's ``S2`` (CESU-8
    has no burst of three items, so no ``S3``), so what ``x`` is loaded with next is in ``S1``
    and stage ``D`` (its second burst item, or a lead's start) as ``x`` is: the look-ahead is
    three flip-flops, ``item`` and ``any`` beside ``S1`` (it holds a valid item that is no
    trail; any valid item, or the flush, which ends a wait) and ``brk`` in ``D`` (its lead or
    second item: one LUT of four of stage ``C``'s); the wait ends when ``x`` is loaded with
    anything (so while it is set ``x`` holds the lead or a bubble), the pair and the lone
    surrogate decided in ``x`` are flip-flops loaded with ``x``, and ``J``'s valid and each
    lone flag are one LUT of four flip-flops (two copies of the lone flag: ``K1``'s and
    ``K2``'s, which ``K3`` shares). ``J`` holds its bits while ``x`` holds bubbles, so it keeps
    a waiting lead's bits itself (no ``L`` register of them) and a pair's bits 10..15 are its
    own bits 0..5; the pair's bits 16..20 come from ``J`` too (``mid``, loaded by the pair's
    flag, and ``high``), and hold until the next pair's trail reaches ``x``, so the skid
    register keeps the pair's flag, not the bits. :attr:`LATENCY` = 4; every flip-flop one LUT4
    of flip-flops; the escape stages too carry bits 0..15 and ``pair``, and an escape's kind in
    its bits 8..10 (:attr:`KIND_BIT`: 0 in every escape; no kind register in ``x``, ``J`` or
    ``K1`` .. ``K3``) (UP5K: 310 LCs, seeds 1-3 160.0, 160.7, 160.7 MHz; with ``S3``, a
    look-ahead flip-flop ``nb`` a step ahead and the lead's ten bits in ``L``: 351 LCs, 160.7,
    160.7, 146.1 MHz).
    """

    #: Steps from the decoder's last output slot to the joined output slot (and with
    #: ``surrogateescape`` three more, the escape stages ``K1`` .. ``K3``: 4).
    LATENCY = 1

    #: With ``surrogateescape``: the lowest of an escape's code point bits that hold its kind in
    #: the slot ``x`` and after it (bits 8..10: 0 in U+DC80..U+DCFF), else ``None``.
    KIND_BIT = None

    def __init__(self, errors="replace", *, lone_is_error=True):
        self._substitute = lone_is_error and errors == "replace"
        self._escape = lone_is_error and errors == "surrogateescape"
        self._lone_kind = ErrorKind.SURROGATE if lone_is_error else None
        if self._escape:
            self.LATENCY = 1 + _ESCAPE_STAGES
            self.KIND_BIT = _KIND_BIT

    def mark(self, marks, d):
        """The stage-``D`` marks: ``lead`` and ``trail`` (the byte completes a well-formed
        surrogate sequence), ``own`` (the byte has an output of its own: it leaves no prefix
        pending, or ends the message), as registers of the lane's namespace; ``burst``, stage
        ``D``'s (``d``) burst flag (the slot before the byte's own holds an error of the
        prefix it ends) and its bubble flag (set while flushing)."""
        seq = surrogate_sequences(marks)
        c = marks.stages["c"].lanes[0]
        # With surrogateescape, `brk`: stage D's byte completes a lead or has a second burst
        # item (its lead's start, or the item, is in the slot two before its own): one
        # flip-flop, a LUT of four of stage C's.
        brk = marks.pipe.fact("join_d_brk", seq.lead | d.lanes[0].i2_next, c.nv) \
            if self._escape else None
        return SimpleNamespace(lead=marks.fact("lead", seq.lead),
                               trail=marks.fact("trail", seq.trail),
                               own=marks.fact("own", ~(c.pend0 | c.sc) | c.vl),
                               burst=d.lanes[0].i1, bubble=d.lanes[0].nv, brk=brk)

    def flags(self, pipe, marked, last, slots):
        """The flags of the item in each slot stage, from the stage-``D`` ``marked`` and the
        byte's ``last``: registers of stage ``E``, then one per slot stage (``slots``). Returns
        the flags of the last two levels (the last slot's, and those of the level before)."""
        self._marked = marked
        flags = {"lead": marked.lead & ~last, "trail": marked.trail,
                 "surrogate": marked.lead | marked.trail}
        levels, entering = [], []
        for stage in range(slots + 1):
            entering.append(flags["lead"])
            flags = {name: pipe.data(f"join_{stage}_{name}", value)
                     for name, value in flags.items()}
            levels.append(SimpleNamespace(**flags))
        self._levels = levels
        # A lead in the last slot or in the level before it (one flip-flop).
        levels[-1].leads = pipe.data("join_leads", entering[-2] | entering[-1])
        # With one slot stage, stage E's byte has an output of its own that is no trail, or
        # stage D's a burst: what the slot is loaded with next is an item and no trail.
        # (Stage E's own output, a flip-flop of its own: the slot's valid is loaded from the
        # same function of the lane's registers, but a LUT of both would be packed with
        # neither flip-flop.)
        if slots == 1:
            levels[0].own = pipe.fact("join_0_own", marked.own, marked.bubble)
            levels[0].own_other = pipe.fact("join_0_own_other", marked.own & ~marked.trail,
                                            marked.bubble)
            levels[0].burst = marked.burst
        return levels[-2:]

    def build(self, pipe, x, flags):
        """``J`` after the slot ``x`` (registers ``valid``, ``codepoint``, ``error``, ``last``;
        ``valid_next``, what ``valid`` is loaded with) with ``flags`` (of the level before ``x``
        and of ``x``, :meth:`flags`); returns ``(valid, payload, ones)`` of ``J`` (``ones``:
        the bits ORed in at the output; with surrogateescape also an escape's bits above 6,
        which ``x`` marks by its ``esc`` flag instead of holding them)."""
        if self._escape:
            return self._build_escapes(pipe, x, flags)
        m = pipe.m
        before, flags = flags
        # `wait`: a lead was in x in an earlier step, and since then x held bubbles only (set
        # in the step after the lead, cleared in the step after the next valid item). While it
        # is set, x holds a bubble or the item that decides the lead: a trail (the pair) or the
        # item the lead was written out before. (Cleared in every step of the flush: stale leads
        # still reach x in its later steps.)
        wait = pipe.register("join_wait")
        with m.If(pipe.enable()):
            m.d.sync += wait.eq((flags.leads | (wait & ~x.valid)) & ~pipe.masked)
        pair = wait & flags.trail
        # x's next item is valid and not a trail: a lead in x, or waiting, is lone; J writes it
        # out now, in the step before that item's. With one slot stage two flip-flops say so
        # (see `flags`), and J's valid is one LUT; else one LUT of the slot's sources says so.
        if hasattr(before, "own_other"):
            breaks = before.own_other | before.burst
            other = pipe.data("join_other", (before.own | before.burst) & ~before.lead)
        else:
            breaks = lut(m, "join_breaks", x.valid_next & ~before.trail)
            other = x.valid & ~flags.lead
        j_valid = pipe.data("join_j_valid", other | (wait & breaks))
        # L (`_lead_bits`): a lead waits two steps at least before its trail reaches x (the
        # trail's first two bytes come first), so its bits plus one are the waiting lead's then.
        low, mid, high = _lead_bits(pipe, x, flags.lead)
        # A surrogate in J that is lone: the waiting lead (x holds a bubble), or a surrogate in
        # x that is not the waiting lead's trail.
        lone = (wait & ~x.valid) | (flags.surrogate & ~pair)
        # J's bits: x's, or above the trail's ten the pair's lead bits; the waiting lead's own
        # where it passes as itself (x holds a bubble then: its bits are 0).
        bits = []
        for bit in range(16):
            value = x.codepoint[bit]
            if bit < 10:
                if self._substitute and bit == 1:
                    value = value & ~(flags.surrogate & ~pair)  # U+FFFD's 0 among the ones
                elif not self._substitute:
                    # (x's bit, or with x a bubble the waiting lead's: one LUT each.)
                    value = keep(x.valid, value, wait & Cat(low, mid)[bit])
            else:
                value = keep(pair, low[bit - 10], value)
            bits.append(value)
        j_cp = Cat(*(pipe.data(f"join_j_cp{bit}", value) for bit, value in enumerate(bits)))
        j_error = pipe.data("join_j_error", x.error, ErrorKind)
        j_last = pipe.data("join_j_last", x.last)
        payload = Cat(j_cp, Const(0, 5), j_error, j_last)
        # What a lone surrogate sets at the output (x's kind is NONE): U+FFFD and the kind, or
        # the waiting lead's constant bits (U+D800) and the kind, from flip-flops of their own.
        sets = []
        if self._substitute:
            sets.append((_REPLACEMENT, self._lone_kind, lone))
        else:
            sets.append((_LEAD, None, wait & ~x.valid))
            if self._lone_kind is not None:
                sets.append((0, self._lone_kind, lone))
        if getattr(x, "esc", None) is not None:
            sets.append((x.ESCAPE, None, x.esc))    # an escape's bits above 6 (surrogateescape)
        ones = Const(0, len(payload))
        for n, (cp, kind, value) in enumerate(sets):
            flag = pipe.data(f"join_set{n}", value)
            mask = Cat(Const(cp, 21), Const(kind.value if kind else 0, len(Value.cast(j_error))),
                       Const(0, 1))
            ones = ones | (mask & flag.replicate(len(payload)))
        # A pair's bits 16..20: L's `high`, which holds a step after the pair is out (the next
        # lead reaches x three steps after the trail at the earliest): the skid register keeps
        # the pair's flag only.
        return j_valid, payload, ones, (pipe.data("join_j_pair", pair), high, 16)

    def _build_escapes(self, pipe, x, flags):
        """``surrogateescape``'s ``J`` and escape stages (see the class documentation)."""
        m = pipe.m
        before, _ = flags        # (the flags of x itself are not needed: x's are loaded with it)
        e = self._levels[-3]
        marked = self._marked
        # The slot x is S2 (CESU-8 has no burst of three items: no S3), loaded from S1 and
        # stage D's second burst item; what x is loaded with next is in S1 and stage D now.
        # `brk` (stage D): the slot S1 holds is a second burst item's or a lead's start (stage
        # D's lead marks the slot two before its own: the silent slot of its ED or a bubble
        # after it). Registers beside S1: S1 holds a valid item that is no trail (`item`), any
        # valid item (`any`); both set while masked, which ends a wait (stale leads reach x in
        # the flush; a real lead reaches x two steps after the flush at the earliest).
        s1 = x.prev
        item = pipe.data("join_1_item", s1.valid_next & ~e.trail)
        anything = pipe.data("join_1_any", s1.valid_next | pipe.masked)
        brk = marked.brk
        # `nb`: what x is loaded with next breaks a waiting lead (a valid item that is no
        # trail, or a lead's start). Two flip-flops.
        nb = item | brk
        # x holds an item of its own that is not a waiting lead.
        xo = pipe.data("join_xo", x.valid_next & ~before.lead)
        # `wait`: a lead is in x or was, and x held nothing since (cleared in the step in which
        # x is loaded with anything: so while it is set x holds the lead or a bubble).
        wait = pipe.register("join_wait")
        with m.If(pipe.enable()):
            m.d.sync += wait.eq(before.lead | (wait & ~anything & ~brk))
        # x holds the trail of the lead that waited (loaded with it: a flip-flop), and a
        # surrogate that is decided where it stands and lone (a trail that is no pair's, or a
        # lead that ends its message).
        pair = pipe.data("join_pair", wait & before.trail)
        xs = pipe.data("join_xs", before.surrogate & ~before.lead & ~(wait & before.trail))
        # J writes the waiting lead (lone) when the next slot breaks it, into x's slot (the
        # lead's own or a silent one after it).
        j_valid = pipe.data("join_j_valid", xo | (wait & nb))
        # J holds a lone surrogate: the waiting lead written, or a surrogate decided in x. Two
        # copies, K1's and K2's (K3 shares K2's), each a LUT packed with its flip-flop: they
        # differ only where `wait` and `xs` (never: while a lead waits x holds it or a bubble).
        # (A copy for K3 too: 311 LCs, seeds 1-3 147.8, 160.7, 151.3 MHz.)
        lone_now = [(wait & nb) | xs, Mux(wait, nb, xs)]
        # J's bits: x's, or with x a bubble (J holds nothing then but a waiting lead) its own:
        # J took the lead's bits from x and holds them while x holds bubbles (so there is no
        # L register of them); a pair's bits 10..15 are J's bits 0..5 (the lead's: only
        # bubbles are between a pair's lead and its trail).
        j_cp = [pipe.register(f"join_j_cp{bit}") for bit in range(16)]
        for bit, reg in enumerate(j_cp):
            value = x.codepoint[bit]
            value = keep(x.valid, value, reg) if bit < 10 else keep(pair, j_cp[bit - 10], value)
            with m.If(pipe.enable()):
                m.d.sync += reg.eq(value)
        # The pair's bits 16..20: the lead's bits 6..9 (`mid`, from J as x holds the trail)
        # plus one (`high`, a step later), which hold until the next pair's trail reaches x
        # (six steps at the earliest), past the step after the pair leaves K3: the skid
        # register keeps the pair's flag, not the bits.
        mid = pipe.held("join_l_mid", Cat(*j_cp[6:10]), pair, 4)
        high = _plus_one(pipe, mid)
        j = SimpleNamespace(
            cp=Cat(*j_cp),
            last=pipe.data("join_j_last", x.last),
            valid=j_valid, esc=pipe.data("join_j_esc", x.esc), pair=pipe.data("join_j_pair", pair))
        # K1 .. K3: J's lone surrogate (slot s) becomes the escapes of its three bytes, written
        # into s (K1: the third byte), s - 1 (K2: the second) and s - 2 (K3: ED), which are
        # silent: its own bytes' slots, or bubbles (a waiting lead is written before the next
        # item or lead start). Each stage one LUT per bit of the stage before and a copy of the
        # lone flag.
        # An item is an escape (`esc`) or has no kind (surrogateescape makes no U+FFFD), and
        # an escape's bits 8..10 are 0 (U+DC80..U+DCFF): from the slot x on they hold its kind
        # (:attr:`KIND_BIT`), and x, J and the K stages have no kind register (at the output
        # the kind is those bits under `esc`, and `esc` clears the code point's bits 8, 9 and
        # sets bit 10).
        kind_bits = range(_KIND_BIT, _KIND_BIT + len(Value.cast(x.error)))
        surrogate = ErrorKind.SURROGATE.value
        stage = j
        for n, byte in enumerate(_ESCAPE_BYTES):
            lone = pipe.data(f"join_lone{n}", lone_now[n]) if n < len(lone_now) else lone
            cp = []
            for bit in range(16):
                if bit < 7 and byte is not None:
                    value = byte(j.cp)[bit]
                    value = keep(lone, value, stage.cp[bit]) if not isinstance(value, int) \
                        else _const_under(lone, value, stage.cp[bit])
                elif bit < 6:
                    value = stage.cp[bit]          # K1: the third byte's bits are J's own
                elif bit in kind_bits:
                    value = _const_under(lone, (surrogate >> (bit - _KIND_BIT)) & 1,
                                         stage.cp[bit])
                else:
                    value = stage.cp[bit] & ~lone
                cp.append(value)
            stage = SimpleNamespace(
                cp=Cat(*(pipe.data(f"join_k{n + 1}_cp{bit}", value)
                         for bit, value in enumerate(cp))),
                last=pipe.data(f"join_k{n + 1}_last", stage.last & ~lone if n else stage.last),
                valid=pipe.data(f"join_k{n + 1}_valid", stage.valid | lone if n else stage.valid),
                esc=pipe.data(f"join_k{n + 1}_esc", stage.esc | lone),
                pair=pipe.data(f"join_k{n + 1}_pair", stage.pair))
        cp = Cat(*(stage.cp[bit] & ~stage.esc if bit in kind_bits and not (x.ESCAPE >> bit) & 1
                   else stage.cp[bit] for bit in range(16)))
        error = Cat(*(stage.cp[bit] & stage.esc for bit in kind_bits))
        payload = Cat(cp, Const(0, 5), error, stage.last)
        ones = Cat(*(stage.esc if (x.ESCAPE >> bit) & 1 else Const(0, 1) for bit in range(16)),
                   Const(0, len(payload) - 16))
        return stage.valid, payload, ones, (stage.pair, high, 16)


#: The escape stages' bytes, bits 0..6 of each (``None``: the slot's own bits 0..5): K1 the
#: third byte (J's bits 0..5), K2 the second (80 | J's bits 6..11: bit 11 is 1 in every
#: surrogate), K3 ED.
_ESCAPE_BYTES = (
    None,
    lambda cp: [cp[6], cp[7], cp[8], cp[9], cp[10], 1, 0],
    lambda cp: [(0xED >> bit) & 1 for bit in range(7)],
)
_ESCAPE_STAGES = len(_ESCAPE_BYTES)

#: The lowest of an escape's code point bits that hold its kind in the escape stages (8..10:
#: 0 in U+DC80..U+DCFF, 0, 0, 1 in :data:`~utf8_gateware.hdl.decoder._ESCAPE`).
_KIND_BIT = 8


def _const_under(flag, value, reg):
    """``value`` (0 or 1) if ``flag``, else ``reg``."""
    return reg | flag if value else reg & ~flag


def _lead_bits(pipe, x, lead):
    """L: the bits 0..5 and 6..9 of the latest lead in the slot ``x`` (``lead``: x holds one),
    and bits 6..9 plus one, for the pair, a step behind (:func:`_plus_one`)."""
    low = pipe.held("join_l_low", x.codepoint[0:6], lead, 6)
    mid = pipe.held("join_l_mid", x.codepoint[6:10], lead, 4)
    return low, mid, _plus_one(pipe, mid)


def _plus_one(pipe, mid):
    """``mid`` (4 bits) plus one, 5 bits, in registers a step behind (each bit one LUT of four
    bits, no carry chain)."""
    return pipe.data("join_l_high", Cat(~mid[0], *(mid[k] ^ _all(mid[:k]) for k in (1, 2, 3)),
                                        _all(mid)), 5)


def _all(bits):
    """The AND of ``bits`` (1 if there are none)."""
    result = 1
    for bit in bits:
        result = result & bit
    return result
