"""Streaming UTF-8 decoder: bytes in, Unicode scalar values (or error outputs) out, N lanes."""

from amaranth.hdl import Cat, Const, Module, Signal, Value
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from .component import CheckedComponent, in_a_row
from .decoder_family import (OWN_CORES, FamilyStages, check_family_parameters, output_layout,
                             stages_latency)
from .decoder_lane import (BYTE_ROM, LaneTables, before, kind_of, lane_stages, stage_a,
                           stage_align, stage_b, stage_c, stage_d, stage_e)
from .error_kind import DECODE_ERRORS, ErrorKind, check_policy
from .layouts import ByteLayout, byte_beat_layout, codepoint_beat_layout
from .pipeline import CE_FANOUT, Pipeline, any_of
from .utf8_grammar import GRAMMARS


__all__ = ["DECODE_ERRORS", "LANES", "Utf8Decoder", "check_lanes"]


#: The lane counts the lane-parallel cores support.
LANES = (1, 2, 4, 8, 16)

#: The largest burst one byte makes (error outputs for the prefix it ends, in the slots before its
#: own): one U+FFFD, or one escape per prefix byte.
_BURST = {"replace": 1, "surrogateescape": 3}


def _burst(errors, encoding):
    """:data:`_BURST` for ``encoding``'s grammar: with surrogateescape, a grammar without
    four-byte leads (CESU-8) has no prefix of three bytes, so no burst of three items, and no
    slot stage ``S3``."""
    if errors == "surrogateescape" and GRAMMARS[encoding].max_length == 3:
        return 2
    return _BURST[errors]

#: The most flip-flops a copy of the pipeline's clock enable drives, per lane count (measured on
#: the UP5K, seeds 1-3): None is one copy for all, which nextpnr puts on a global buffer (it
#: promotes an iCE40 enable net with more than 40 loads; behind a global buffer, one lane's
#: enable would be its slowest path). 40 for one lane: 196 LCs and 162.1 MHz (median) against
#: 204 and 160.7 with 15; one enable for 2 and 4 lanes: 465 and 931 LCs and 117.8 and
#: 106.4 MHz against 505 and 1,006 LCs and 100.1 and 88.6 MHz with copies of 15.
_CE_FANOUT = {1: 40, 2: None, 4: None}

#: The ``(encoding, errors)`` whose one-lane decoder enables its control flip-flops (``nv``,
#: ``vl``: 12) by the copies of ``adv`` instead of by ``adv`` itself
#: (:class:`~.pipeline.Pipeline`'s ``controls_on_copies``), which then drives the output's
#: 25 multiplexers, the flush thermometer and its own next state (38 loads before, 10 of them
#: clock enables). ``utf-8`` ``replace``, UP5K seeds 1-3: 164.8 / 162.1 / 172.0 MHz at 196
#: LCs, against 162.1 / 163.4 / 162.1 (seeds 4-6: 162.1 / 160.7 / 164.8 against 162.7 /
#: 151.3 / 162.1). Not kept for ``surrogateescape`` (162.1 / 162.1 / 147.8 against 162.7 /
#: 160.7 / 162.1) nor for the family's ``replace`` decoders (seed 1: ``cesu-8`` 162.1 ->
#: 160.7 MHz, ``mutf-8`` and ``utf-8-sig`` one LC more, ``wtf-8`` the same).
_CONTROLS_ON_COPIES = {("utf-8", "replace")}

_REPLACEMENT = 0xFFFD
_ESCAPE = 0xDC80       # bits 7..15 of an escape U+DC80..U+DCFF; bits 0..6 are the byte's


def check_lanes(lanes):
    """Check a ``lanes`` parameter (one of :data:`LANES`); returns it."""
    if isinstance(lanes, bool) or not isinstance(lanes, int):
        raise TypeError(f"lanes must be an integer, not {lanes!r}")
    if lanes not in LANES:
        raise ValueError(f"lanes must be one of {', '.join(map(str, LANES))}, not {lanes!r}")
    return lanes


class Utf8Decoder(CheckedComponent):
    """Streaming UTF-8 decoder, ``lanes`` bytes per cycle.

    Every byte sequence decodes exactly like CPython's ``bytes.decode("utf-8", errors)`` and
    :func:`utf8_gateware.sim.reference.decode`.

    Parameters
    ----------
    errors : ``"replace"`` or ``"surrogateescape"``
        What an ill-formed byte sequence becomes (see below).
    lanes : 1, 2, 4, 8 or 16
        Bytes per beat.
    encoding : ``"utf-8"`` (default), ``"utf-8-sig"``, ``"cesu-8"``, ``"mutf-8"``, ``"wtf-8"``
        or ``"utf-8-rfc2279"``
        The encoding of the family to decode (:mod:`~utf8_gateware.hdl.decoder_family`): the
        same byte pipeline generated from the encoding's byte grammar, with the encoding's
        marks and stages folded into it; ``"utf-8-rfc2279"`` (``replace`` only) is
        :class:`~utf8_gateware.hdl.rfc2279_decoder.Rfc2279Decoder` (its ``o`` has 31-bit
        values, :data:`~utf8_gateware.hdl.layouts.WideCodepointLayout`; latency 6). Each
        decodes exactly like
        ``utf8_gateware.sim.encodings.decode(data, encoding, errors)``, with the policies the
        model offers for it that the gateware has: ``replace`` for all, ``surrogateescape``
        for ``utf-8``, ``utf-8-sig`` and ``cesu-8`` (``mutf-8`` and ``wtf-8`` have none: a
        lone surrogate is well-formed there). An encoding other than ``utf-8`` is decoded with
        one lane; its stages add
        :func:`~utf8_gateware.hdl.decoder_family.stages_latency` cycles (none for
        ``utf-8-sig`` and ``wtf-8``, 1 for ``cesu-8`` and ``mutf-8``, 4 for ``cesu-8`` with
        ``surrogateescape``) and keep one byte per cycle. Any other combination is a one-line
        :class:`ValueError`.

    Ports (``lanes=1``)
    -------------------
    ``i``: :data:`~utf8_gateware.hdl.layouts.ByteLayout` stream (``data: 8``, ``last``). ``last``
    ends a message: a prefix still pending after that byte is an error, and nothing carries over
    into the next message.

    ``o``: :data:`~utf8_gateware.hdl.layouts.CodepointLayout` stream (``codepoint: 21``,
    ``error: ErrorKind``, ``last``). ``error`` is ``NONE`` for a decoded scalar value and the
    error's kind for an error output. The final output of a message carries ``last``; a message
    of one byte or more always yields an output, so there is exactly one ``last`` output per
    message.

    Ports (``lanes`` = N > 1)
    -------------------------
    ``i``: :func:`~utf8_gateware.hdl.layouts.byte_beat_layout` (N) stream: ``data: 8*N`` (lane 0,
    bits 0..7, is the first byte), ``count`` (1..N: the bytes in lanes 0..count-1 are valid; any
    beat may be partial), ``last`` (the beat's last valid byte ends the message).

    ``o``: :func:`~utf8_gateware.hdl.layouts.codepoint_beat_layout` (N) stream: N lanes of
    ``{codepoint: 21, error: ErrorKind, valid}`` and ``last`` (the beat holds the message's
    final output). Read in lane order and then beat order, the valid outputs are exactly those
    of the one-lane decoder; a beat may have empty lanes, all of them in a beat whose bytes all
    lie inside a pending sequence (a partial beat of at most three bytes, e.g. ``E4 8D``), but
    never in the beat that carries ``last``.

    ``i.ready`` comes from flip-flops; ``o.valid`` and ``o.payload`` are one LUT (a 2:1
    multiplexer) of flip-flops. None of them depends on an input in the same cycle.

    Error policy
    ------------
    Each *maximal subpart* of an ill-formed sequence (The Unicode Standard, section 3.9; the
    WHATWG Encoding Standard) is one error:

    ``"replace"``
        One U+FFFD output per maximal subpart.
    ``"surrogateescape"``
        One U+DC00+b output per byte b of the maximal subpart (PEP 383; b is 80..FF).

    Every output of an error carries its kind (:class:`~utf8_gateware.hdl.error_kind.ErrorKind`):
    a lone lead ended by a continuation byte outside its second-byte range has the lead's range
    error (E0, F0: ``OVERLONG``; ED: ``SURROGATE``; F4: ``TOO_LARGE``); any other prefix cut
    short by a byte that cannot continue it, or by ``last``, is ``TRUNCATED``; C0 and C1 are
    ``OVERLONG``, F5..FD ``TOO_LARGE``, FE and FF ``INVALID_BYTE``, and a continuation byte that
    no lead byte covers is ``UNEXPECTED_CONTINUATION``
    (:mod:`~utf8_gateware.hdl.utf8_grammar` holds the table).

    Throughput
    ----------
    While ``o.ready`` is high, ``i.ready`` is high: one beat (N bytes) is taken every cycle,
    whatever the bytes. Under back-pressure nothing is lost, duplicated or reordered; ``i.ready``
    falls one cycle after the sink first refuses an output. After power-up or a reset,
    ``i.ready`` rises once the pipeline is flushed (in the third cycle with one lane).

    Latency
    -------
    Each output is valid at most :attr:`LATENCY` cycles after the transfer of the byte that
    determines it (an ASCII byte, the last byte of a well-formed sequence, the byte that ends a
    maximal subpart, a byte with ``last``), while the sink is ready, even if no byte ever
    follows: 6 cycles with ``"replace"``, 8 with ``"surrogateescape"`` and one lane; with N > 1
    lanes 5 plus the align stages (one for 2 or 4 lanes, two for 8 or 16), the slot stages (see
    below) and, from 8 lanes on, the three neighbour stages: 7, 7, 11, 11 cycles for 2, 4, 8,
    16 lanes with ``"replace"``, and 8, 7, 11, 11 with ``"surrogateescape"``. The core never
    waits for a byte that an output does not depend on.

    Architecture
    ------------
    The outputs due at byte *p* are a pure function of the bytes *p*-3..*p* and the message
    boundaries (a lead byte is never covered by an earlier sequence, a continuation byte only by
    the nearest lead within three bytes before it), so there is no decoding state machine. A
    *lane* is the per-byte logic of :mod:`~utf8_gateware.hdl.decoder_lane`, built by one call per
    lane and stage: each stage derives new facts about its byte from its own facts and the facts
    of the byte before (lane *k*-1 of the same beat; for lane 0 a *history* register holding the
    facts of the latest valid lane of the beats before, kept across bubbles, cleared by
    ``last``). No stage looks further than one lane, so there is no chain through the lanes.

    ``A`` .. ``E``
        The byte: its nibble predicates (``A``), class (``B``), the prefix pending after it
        (``C``), what it does to the prefix before it and its burst (``D``), its own output
        (``E``). With 4 lanes and ``"surrogateescape"``
        (:data:`~utf8_gateware.hdl.decoder_lane.BYTE_ROM`) ``A`` reads the byte's class facts
        and lead codes from a 256-word ROM per lane instead (4 block RAMs on the iCE40).
    ``S1`` (``S2``, ``S3`` with ``"surrogateescape"`` and one or two lanes; no ``S3`` for
    CESU-8, which has no prefix of three bytes)
        Output slots, one per lane. ``S1`` assembles each lane's own output. A *burst* (the error
        outputs of the prefix that byte *p* ends: one U+FFFD, or an escape per prefix byte) is
        written into the slots immediately before *p*'s own in the sequence of all slots (all
        lanes of all beats, empty lanes and bubbles included). Those slots are always silent:
        they belong to the prefix's bytes, which have no output of their own, or to empty lanes
        and bubbles. So a burst never needs a queue and never slows the input down; a burst that
        reaches into an earlier beat is written into that beat's slots while it is one stage
        ahead (``S2`` and ``S3`` reach two and three beats back).
    ``K``
        A skid register (:mod:`~utf8_gateware.hdl.pipeline`), since the pipeline's advance is a
        flip-flop: ``K`` keeps the beat the sink refused in the cycle it stopped.

    With one lane every flip-flop is fed by one LUT4 of flip-flops, plus a clock enable and a
    synchronous reset that come straight from flip-flops; the clock enable comes in copies that
    drive at most 40 flip-flops each (more and nextpnr moves the copy to a global buffer, whose
    input route is slower than one LUT level). With 2 or 4 lanes one copy drives them all, on a
    global buffer: there the paths of two LUT levels are slower than the enable. With 2 or 4
    lanes, lanes 1..N-1 combine their neighbour's lead-code terms (or codes) in stage ``B`` and
    their neighbour's prefix in ``D`` (two LUT levels). From 8 lanes on
    (:data:`~utf8_gateware.hdl.decoder_lane.SPLIT_LANES`) the choice between lane k-1's facts
    and the history's is a stage of its own (``B2``, ``C2``: three more stages), so that each
    stage is one LUT level and a history drives one 2:1 multiplexer per lane. With N lanes
    stage ``E`` takes the bytes before a lane through 4:1 multiplexers whose selects are
    registered a stage ahead, from a copy of its history per four lanes (per two from 16 lanes
    on; from 8 lanes on stage ``C``'s history too comes in a copy per four lanes); what is left
    deeper than one LUT4 is the align stages' and the slots' 4:1 multiplexers (one slice on the
    ECP5). An empty lane shifted in by the align stages repeats a real source rather than a
    constant, which synthesis would make a synchronous reset.

    Decoding CESU-8 or Modified UTF-8 is not a change of these tables: a surrogate pair spans six
    bytes, beyond the three-byte look-back; those decoders put a surrogate-joining stage after
    this one.
    """

    @classmethod
    def check_parameters(cls, errors="replace", *, lanes=1, encoding="utf-8"):
        check_policy(errors, DECODE_ERRORS)
        check_lanes(lanes)
        check_family_parameters(encoding, errors, lanes)

    def __init__(self, errors="replace", *, lanes=1, encoding="utf-8"):
        self._errors = errors
        self._lanes = lanes
        self._encoding = encoding
        if lanes == 1:
            i_layout, o_layout = ByteLayout, output_layout(encoding)
        else:
            i_layout, o_layout = byte_beat_layout(lanes), codepoint_beat_layout(lanes)
        super().__init__({
            "i": In(stream.Signature(i_layout)),
            "o": Out(stream.Signature(o_layout)),
        })

    @property
    def errors(self):
        return self._errors

    @property
    def lanes(self):
        return self._lanes

    @property
    def encoding(self):
        return self._encoding

    @property
    def _slots(self):
        """Slot stages: how many beats back the longest burst reaches."""
        return (self._lanes - 1 + _burst(self._errors, self._encoding)) // self._lanes

    @property
    def LATENCY(self):
        """Cycles from the transfer of a determining byte to its output being valid."""
        return self.latency(self._errors, lanes=self._lanes, encoding=self._encoding)

    @staticmethod
    def latency(errors="replace", *, lanes=1, encoding="utf-8"):
        """:attr:`LATENCY` of a decoder with these parameters, without building one."""
        if encoding in OWN_CORES:
            return OWN_CORES[encoding].LATENCY
        slots = (lanes - 1 + _burst(errors, encoding)) // lanes
        align = ((lanes - 1).bit_length() + 1) // 2
        return 1 + lane_stages(lanes) + slots + align + stages_latency(encoding, errors)

    @property
    def _scalar_bits(self):
        """Bits of the slots' registers: with ``replace`` 16 in a grammar without four-byte
        sequences (no register for bits 16..20, which synthesis finds constant but whose clock
        enable would count in a copy's fan-out: Modified UTF-8 236 -> 235 LCs, one copy less).
        (With surrogateescape the copies grouped so placed worse on the UP5K, seeds 1-3 148.9,
        147.8, 160.0 against 160.7, 160.7, 157.3 MHz, at the same 366 LCs.)"""
        four = GRAMMARS[self._encoding].max_length == 4
        return 21 if four or self._errors != "replace" else 16

    @property
    def _align_stages(self):
        """Stages of :func:`stage_align` (4:1 multiplexers): 0, 1, 1, 2, 2 for 1..16 lanes."""
        return ((self._lanes - 1).bit_length() + 1) // 2

    def elaborate(self, platform):
        if self._encoding in OWN_CORES:
            return in_a_row([OWN_CORES[self._encoding](self._errors)], self)
        m = Module()
        se = self._errors == "surrogateescape"
        n = self._lanes
        # Each enable copy is one more flip-flop loading the output's next-state logic: at 8-16
        # lanes hundreds of copies would cost more than the fan-out they save, and at 2-4 lanes
        # (where paths of two LUT levels limit the speed) one enable on a global buffer is
        # faster and smaller than copies (_CE_FANOUT).
        family = FamilyStages(self._encoding, self._errors)
        pipe = Pipeline(m, flush_steps=2 + self._slots + self._align_stages + family.steps,
                        ce_fanout=_CE_FANOUT.get(n, 4 * CE_FANOUT), flush_count=True,
                        controls_on_copies=n == 1 and
                        (self._encoding, self._errors) in _CONTROLS_ON_COPIES)
        i = self.i
        m.d.comb += i.ready.eq(pipe.adv & ~pipe.flushing)

        aligned, data = stage_align(pipe, i.payload, i.valid, n,
                                    LaneTables.of(GRAMMARS[self._encoding]))
        a = stage_a(pipe, aligned, data, rom=(n, self._errors) in BYTE_ROM)
        b = stage_b(pipe, a)
        c = stage_c(pipe, b, se)
        d = stage_d(pipe, c, se)
        family.mark(pipe, data[0], a, b, c, d, self._slots)
        e = stage_e(pipe, d, se)

        slots = [self._slot(pipe, e, d, j) for j in range(n)]
        # (A joiner's escape stages take an escape's kind in its bits 8..10 from the last slot,
        # CESU-8's S2; with S3 there, from S2 on was 348 LCs, seeds 1-3 151.3, 157.3, 148.9 MHz
        # against 351 and 160.7, 160.7, 146.1.)
        fold = family.joiner.KIND_BIT if family.joiner is not None else None
        for stage in range(2, self._slots + 1):
            slots = [self._later_slot(pipe, slot, e, d, j, stage,
                                      fold if stage == self._slots else None)
                     for j, slot in enumerate(slots)]

        # The output payload, field by field.
        out = Signal(self.o.payload.shape())
        if n == 1:
            (slot,) = slots
            m.d.comb += [out.codepoint.eq(slot.codepoint), out.error.eq(slot.error),
                         out.last.eq(slot.last)]
        else:
            for lane, slot in zip(out.lanes, slots):
                m.d.comb += [lane.codepoint.eq(slot.codepoint), lane.error.eq(slot.error),
                             lane.valid.eq(slot.valid)]
            m.d.comb += out.last.eq(slots[-1].last)    # the last byte is in the last lane
        if n == 1:
            beat_valid = slots[0].valid
        else:
            # A beat goes out if it held input bytes or a burst from a later beat lands in it.
            # (Whether any lane holds an output would be an OR of all lanes in front of
            # `o.valid`; so a beat whose bytes all lie inside a pending sequence comes out with
            # no valid lane, which only a partial beat of at most three bytes can be.)
            def crossing(stage):
                return any_of(flag for j in range(n)
                              for _, flag, _, _ in self._items(d, e.recents, j, stage))
            beat_valid = pipe.data("s1_v", ~e.bubble | crossing(1))
            for stage in range(2, self._slots + 1):
                beat_valid = pipe.data(f"s{stage}_v", beat_valid | crossing(stage))
        output = family.after(pipe, slots[0], beat_valid, out)
        if slots[0].esc is not None and len(output) == 2:
            output = (*output, slots[0].ones(len(Value.cast(output[1]))))
        pipe.drive_output(self.o, *output)
        return m

    # -- slots -----------------------------------------------------------------------------------

    def _items(self, d, recents, j, stage):
        """The burst items from the beat in ``D`` that land in slot ``j`` of the beat
        ``stage`` beats ahead of it: ``(item, flag, content, kind)`` per item (``content``: the
        data whose escape the item is, with surrogateescape)."""
        n = self._lanes
        out = []
        for item in range(1, _burst(self._errors, self._encoding) + 1):
            position = j + item - stage * n       # the source lane in the beat in D
            if 0 <= position < n:
                source = d.lanes[position]
                flag = getattr(source, f"i{item}")
                if item == 1:
                    kind = source.rkind.as_value() | kind_of(
                        (source.btrunc, ErrorKind.TRUNCATED))
                else:
                    kind = kind_of((flag, ErrorKind.TRUNCATED))
                # Its content: the escape of the byte `item` places before the source.
                content = before(position, item, d, [lane.d for lane in d.lanes],
                                 recents[position])[-1]
                out.append((item, flag, content, kind))
        return out

    def _slot(self, pipe, e, d, j):
        """Slot ``j`` of stage ``S1``: the own output of lane ``j`` of the beat in ``E``, and
        the burst items that land in it."""
        se = self._errors == "surrogateescape"
        lane = e.lanes[j]
        own_d = lane.d
        # Items from the same beat (their content: the escape of the byte `item` places before
        # the source, in the source's window) ...
        same = []
        for item in range(1, _burst(self._errors, self._encoding) + 1):
            if hasattr(lane, f"in_i{item}"):
                flag = getattr(lane, f"in_i{item}")
                kind = (lane.in_rkind.as_value() |
                        kind_of((lane.in_btrunc, ErrorKind.TRUNCATED))) if item == 1 else \
                    kind_of((flag, ErrorKind.TRUNCATED))
                same.append((flag, e.lanes[j + item].w[item - 1], kind))
        # ... and from the next beat.
        cross = self._items(d, e.recents, j, 1)
        items = [(flag, content, kind) for flag, content, kind in same] + \
                [(flag, content, kind) for _, flag, content, kind in cross]
        selects = self._cross_selects(pipe, d, e.recents[j], j) \
            if hasattr(d.lanes[0], "i_next") else None
        if selects is not None:
            # The next beat's escapes as registered selects of `recent` (their flags stay in
            # `bad` and the kind).
            mine = []
            other = [(flag, content) for flag, content, _ in same] + selects
        elif se:
            # Items whose content is this lane's own byte (with one lane: the latest valid byte,
            # which a bubble's slot shares) merge with its own output's bits.
            mine = [flag for flag, content, _ in items if content is own_d]
            other = [(flag, content) for flag, content, _ in items if content is not own_d]
        else:
            mine = [flag for flag, _, _ in items]
            other = []
        escaped = any_of(mine)
        kinds = [kind for _, _, kind in items]
        bad = lane.err | escaped | (any_of(flag for flag, _ in other) if selects is None else
                                    any_of(flag for flag, _, _ in items))
        # With one lane and surrogateescape, an escape's bits above 6 are set at the output by
        # the slot's `esc` flag (:meth:`_Slot.ones`), and `vis` is `showc | err`: each flip-flop
        # one LUT4.
        esc = hasattr(lane, "vis")
        shown = (lane.vis | escaped) if esc else lane.showc | lane.err | escaped
        const = 0 if esc else _ESCAPE if se else _REPLACEMENT
        w1, w2, w3 = lane.w
        bits = []
        for bit in range(21):
            marked = bad if (const >> bit) & 1 else 0
            if bit < 6:
                if se:
                    value = (shown & own_d[bit]) | \
                            any_of(flag & content[bit] for flag, content in other)
                else:
                    value = (lane.showc & own_d[bit]) | marked
            elif bit == 6:
                if se:
                    value = (shown & lane.c6) | \
                            any_of(flag & content[bit] for flag, content in other)
                else:
                    value = (lane.showc & lane.c6) | marked
            elif bit < 12:
                value = (lane.multi & w1[bit - 6]) | marked
            elif bit < 16:
                value = (lane.len34 & w2[bit - 12]) | marked
            elif bit < 18:
                value = lane.len4 & w2[bit - 12]
            else:
                value = lane.len4 & w3[bit - 18]
            bits.append(value)
        return _Slot(
            codepoint=Cat(*(pipe.data(f"s1_{j}_cp{bit}", value) if bit < self._scalar_bits
                            else Const(0, 1) for bit, value in enumerate(bits))),
            error=pipe.data(f"s1_{j}_kind", lane.kind.as_value() | any_of(kinds), ErrorKind),
            valid=pipe.data(f"s1_{j}_v", shown if esc else lane.showc | bad),
            valid_next=shown if esc else lane.showc | bad,
            last=pipe.data(f"s1_{j}_last", lane.last),
            esc=pipe.data(f"s1_{j}_esc", bad) if esc else None)

    def _cross_selects(self, pipe, d, recent, j):
        """With :data:`~.decoder_lane.SELECT_LANES` lanes, the next beat's escapes that land in
        slot ``j`` of ``S1``: ``(select, entry)`` per entry of ``recent`` that one of them
        takes, the select a register of stage ``D``. An item ``item`` of the beat's lane ``p``
        lands in slot j = p - item + N and escapes a byte before the beat: the entry
        ``item - 1 - v``, where ``v`` is the valid lanes before lane p (a suffix of lanes 0..p-1:
        lane p-v is valid and lane p-v-1 is not). (Its flag and the three-way choice of
        ``recent`` by the lanes' ``nv`` were two LUT levels under the slot's bits.)"""
        n = self._lanes
        lanes = d.lanes
        terms = {}
        for item in range(1, _burst(self._errors, self._encoding) + 1):
            p = j + item - n
            if not 0 <= p < n:
                continue
            for v in range(p + 1):
                if item - 1 - v < 0:
                    continue
                cond = lanes[p].i_next[item][v > 0] & ~lanes[p].nv_next
                if v < p:
                    cond = cond & lanes[p - 1 - v].nv_next
                if v > 0:
                    cond = cond & ~lanes[p - v].nv_next
                # (Lane 0's item is its flag register, a select of its own: ORed into the
                # others' register, a third LUT level in front of it.)
                terms.setdefault(item - 1 - v, []).append(
                    (cond, getattr(lanes[p], f"i{item}") if p == 0 else None))
        out = []
        for entry, parts in sorted(terms.items()):
            out += [(flag, recent[entry]) for _, flag in parts if flag is not None]
            rest = [cond for cond, flag in parts if flag is None]
            if rest:
                out.append((pipe.data(f"d_x{j}_{entry}", any_of(rest)), recent[entry]))
        return out

    def _later_slot(self, pipe, slot, e, d, j, stage, fold=None):
        """Slot ``j`` of stage ``S{stage}``: the slot of the stage before, and the burst items
        from the beat ``stage`` beats behind that land in it (escapes, always ``TRUNCATED``).
        ``fold``: an escape's kind is in its code point bits ``fold``.. (0 in an escape: the
        output sets or clears them by ``esc``), and the slot has no kind register."""
        items = self._items(d, e.recents, j, stage)
        flags = [flag for _, flag, _, _ in items]
        kind = Value.cast(slot.error) | any_of(kind for _, _, _, kind in items)
        kind_bits = range(fold, fold + len(kind)) if fold is not None else ()
        bits = []
        for bit in range(21):
            value = slot.codepoint[bit]
            if bit < 7:
                value = value | any_of(flag & content[bit] for _, flag, content, _ in items)
            elif (_ESCAPE >> bit) & 1 and slot.esc is None:
                value = value | any_of(flags)
            if bit in kind_bits:
                # (An item is an escape or has no kind: surrogateescape makes no U+FFFD.)
                value = value | kind[bit - fold]
            bits.append(value)
        name = f"s{stage}_{j}"
        codepoint = Cat(*(pipe.data(f"{name}_cp{bit}", value) if bit < self._scalar_bits
                          else Const(0, 1) for bit, value in enumerate(bits)))
        esc = None if slot.esc is None else pipe.data(f"{name}_esc", slot.esc | any_of(flags))
        if fold is not None:
            error = Cat(*(codepoint[bit] & esc for bit in kind_bits))
        else:
            error = pipe.data(f"{name}_kind", kind, ErrorKind)
        return _Slot(prev=slot, codepoint=codepoint, error=error,
            valid=pipe.data(f"{name}_v", slot.valid | any_of(flags)),
            valid_next=slot.valid | any_of(flags),
            last=pipe.data(f"{name}_last", slot.last), esc=esc)


class _Slot:
    """The registers of one output slot (``valid_next``: the value ``valid`` is loaded with;
    ``esc``: with one lane and surrogateescape, the slot holds an escape, whose bits above 6
    are set at the output: the bits of :attr:`ESCAPE` in :meth:`ones`; else ``None``)."""
    #: An escape's bits that ``esc`` sets (bits 0..6 are the byte's, in the slot).
    ESCAPE = _ESCAPE

    def __init__(self, *, codepoint, error, valid, valid_next, last, esc=None, prev=None):
        self.codepoint, self.error, self.valid, self.last = codepoint, error, valid, last
        self.valid_next, self.esc, self.prev = valid_next, esc, prev

    def ones(self, width):
        """The bits ``esc`` sets in an output payload of ``width`` bits (codepoint first)."""
        return Cat(*(self.esc if (self.ESCAPE >> bit) & 1 else Const(0, 1)
                     for bit in range(21)), Const(0, width - 21))
