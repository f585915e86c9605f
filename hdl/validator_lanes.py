"""The validator's per-byte stages with several lanes: beats as they come, no align stage.

Whatever a validator owes at byte *p* is a function of the bytes *p*-3..*p* (see
:mod:`~utf8_gateware.hdl.decoder_lane`), computed stage by stage, each stage from the byte's own
facts and the facts of the byte before it. The decoder right-aligns each beat (its align stages)
so that the byte before lane 0 is always the previous beat's lane N-1, and from 8 lanes on spends
a stage on choosing between lane k-1's facts and the history's (its neighbour stages). A
validator reads no code point, so it takes a beat as it comes (``count`` bytes in lanes
0..count-1): the valid lanes are a prefix, so the byte before lane k > 0 is always lane k-1 (no
multiplexer), and only lane 0 reads a *history*: the facts of the beat's latest byte (lane
count-1), kept in bubbles, cleared at the end of a message (:func:`before`). Choosing the latest
lane is off every lane's path: with 2 lanes a multiplexer on lane 1's ``nv`` flag
(:func:`latest`); from :data:`ONE_HOT_LANES` (4) on the stage before registers each lane's facts
masked with a flag of the latest lane (``latest``, from the input's ``count``), and the history
ORs them; with ``pipe.clear_in_data`` (8 lanes) without a reset, in two halves
(:func:`before`). A beat is a bubble iff lane 0 is empty; lane k holds the message's last byte
iff the beat ends a message, lane k holds a byte and lane k+1 does not.

Stages (one LUT level of registers each, but the histories):

``A``
    Each byte's nibble predicates (the decoder's
    :class:`~utf8_gateware.hdl.decoder_lane.ByteClassifier`, from the grammar tables); ``nv``.
``B1``
    The byte's class: a lead (of any length), its lead codes (:mod:`~.utf8_grammar`), its
    continuation code ``q``, its own error's kind (``startkind``, a code of :data:`START_KINDS`).
``B2``
    From the byte before's lead codes and ``q``: an allowed second byte of a lead of each length
    (``ok2``), or a range error (``rerr``, ``rclass`` per restricted length).
``C``
    The prefix pending after the byte: of 3 of 4 bytes (``sc``), of 2 or 3 bytes (``anyc``); and
    the byte's facts for ``V1``: ``ns`` (it cannot continue a prefix), ``unc0`` (a continuation
    byte that is no allowed second byte), ``bkind`` (the kind of the prefix it breaks, a code of
    :data:`BURST_KINDS`).
``V1``
    :func:`lane_errors`: the maximal subparts that end at the byte, in the parts
    :func:`~utf8_gateware.hdl.validator.stage_own` joins.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Mux, Signal, Value

from .decoder_lane import (CLASSIFIER, UTF8_TABLES, lane_lead_code, lead_code_terms, table_lookup,
                           kind_of)
from .error_kind import ErrorKind
from .pipeline import any_of


__all__ = ["Beat", "LOOK_BACK", "STAGES", "START_KINDS", "BURST_KINDS", "code_width", "decode",
           "encode", "next_beat", "latest", "before", "lane_errors"]


#: The bytes before a byte that decide what it does (the longest sequence less one).
LOOK_BACK = 3

#: The stages :func:`lane_errors` builds (``A``, ``B1``, ``B2``, ``C``, ``V1``).
STAGES = 5


#: The kinds of a byte's own error as a start (a code: the index; 0 none), and of the prefix a
#: byte breaks (0: TRUNCATED, else a lone lead's range error): codes of two bits until ``V1``.
START_KINDS = (ErrorKind.NONE, *dict.fromkeys(kind for _, kind in UTF8_TABLES.start_error_sets))
BURST_KINDS = (ErrorKind.TRUNCATED, *dict.fromkeys(
    kind for length in UTF8_TABLES.range_lengths for _, kind in UTF8_TABLES.restricted[length]))


def code_width(kinds):
    """Bits of a code of ``kinds`` (:data:`START_KINDS`, :data:`BURST_KINDS`)."""
    return (len(kinds) - 1).bit_length()


def decode(code, kinds):
    """The :class:`ErrorKind` of a code of ``kinds``."""
    return kind_of(*((code == index, kind) for index, kind in enumerate(kinds)
                     if kind is not ErrorKind.NONE))


def encode(kind, kinds):
    """The code in ``kinds`` of ``kind`` (an :class:`ErrorKind` Value; 0 if not in ``kinds``)."""
    return any_of(Mux(kind == member, index, 0) for index, member in enumerate(kinds) if index)


class Beat:
    """One stage of a beat: ``lanes`` (per lane a namespace of registers, with ``nv``, no byte,
    unless the stage has no per-lane control), ``beat_vl`` (the beat ends a message, or the
    pipeline is flushing) and ``bubble`` (the beat has no byte)."""
    def __init__(self, lanes, beat_vl, bubble=None):
        self.lanes, self.beat_vl = lanes, beat_vl
        # The valid lanes are a prefix (also for one lane): lane 0's flag is the beat's.
        self.bubble = lanes[0].nv if bubble is None else bubble

    def __len__(self):
        return len(self.lanes)


def next_beat(pipe, name, prev, per_lane=True):
    """The control registers of the stage ``name`` after ``prev`` (a :class:`Beat` or a decoder
    :class:`~utf8_gateware.hdl.decoder_lane.Stage` of one lane): ``nv`` per lane, or (unless
    ``per_lane``) only the beat's ``bubble``."""
    vl = pipe.control(f"{name}_vl", prev.beat_vl)
    if not per_lane:
        return Beat([SimpleNamespace() for _ in prev.lanes], vl,
                    pipe.control(f"{name}_nv", prev.bubble))
    return Beat([SimpleNamespace(nv=pipe.control(f"{name}{k}_nv", lane.nv))
                 for k, lane in enumerate(prev.lanes)], vl)


def latest(values, nv):
    """The value of the beat's latest byte: ``values`` per lane, ``nv`` their lanes' flags
    (valid lanes are a prefix, lane 0 valid). A tree of 2:1 multiplexers, each on the flag of the
    first lane of its upper half."""
    if len(values) == 1:
        return values[0]
    half = len(values) // 2
    return Mux(nv[half], latest(values[:half], nv[:half]), latest(values[half:], nv[half:]))


#: From this many lanes on, a history (:func:`before`) takes the OR of registers that the stage
#: before it masks with a registered flag of the lane with the beat's latest byte (``latest``):
#: two LUT levels at 8 lanes, where the tree of :func:`latest` would take three. At 4 lanes (the
#: OR of four and the kept value: six inputs, where the tree reads nine) 107.3 MHz median of
#: seeds 1-3 on the UP5K (107.3, 107.3, 112.2; 111.2, 112.2 at seeds 4, 5) against the tree's
#: 105.8 (105.8, 104.8, 107.3; 101.4, 110.4), at 838 LCs against 795.
ONE_HOT_LANES = 4


def mark_latest(pipe, name, prev, beat):
    """With :data:`ONE_HOT_LANES` lanes or more, ``latest`` in each lane of ``beat`` (the stage
    ``name`` after ``prev``): the lane holds the beat's latest byte (``prev``'s flags passed on,
    no logic; with ``pipe.clear_in_data`` masked with ``~prev.beat_vl``, so 0 in a beat that
    ends a message, and flip-flops that a reset clears). Then :func:`mark_keep`."""
    if len(beat) >= ONE_HOT_LANES:
        for k, (lane, before) in enumerate(zip(beat.lanes, prev.lanes)):
            if pipe.clear_in_data:
                lane.latest = _flag(pipe, f"{name}{k}_latest", before.latest & ~prev.beat_vl)
            else:
                lane.latest = pipe.data(f"{name}{k}_latest", before.latest)
    return mark_keep(pipe, name, prev, beat)


def _flag(pipe, name, value):
    """A flip-flop loaded with ``value`` when ``pipe`` advances, 0 after a reset (so 0 in the
    step after the flush's first, whatever the stage before held)."""
    reg = Signal(name=name)
    with pipe.m.If(pipe.enable(1)):
        pipe.m.d.sync += reg.eq(value)
    return reg


def mark_keep(pipe, name, prev, beat):
    """With ``pipe.clear_in_data`` (8 lanes), ``beat.keep``: the beat is a bubble that ends no
    message (``beat.bubble & ~beat.beat_vl`` in a flip-flop of its own), and from ``B1`` on each
    lane's ``latest`` is 0 in a beat that ends a message: so a history whose stage before's
    ``latest`` is such a flag needs no synchronous reset (:func:`before`'s ``keep``)."""
    if pipe.clear_in_data:
        beat.keep = _flag(pipe, f"{name}_keep", prev.bubble & ~prev.beat_vl & ~pipe.flushing)
    return beat


def for_history(pipe, name, lane, regs, values):
    """With :data:`ONE_HOT_LANES` lanes or more, registers ``regs.hist``: ``values`` (a dict of
    Values of the stage before, whose lane is ``lane``) masked with ``lane.latest``, which the
    next stage's history (:func:`before`) ORs."""
    if hasattr(lane, "latest"):
        regs.hist = {}
        for field, value in values.items():
            width = len(Value.cast(value))
            regs.hist[field] = pipe.data(f"{name}_m{field}",
                                         Value.cast(value) & lane.latest.replicate(width), width)


def before(pipe, name, beat, values, keep=None, halves=False):
    """Per lane of ``beat`` the ``values`` (per lane a dict of Values) of the byte before it:
    lane k-1's, and for lane 0 a *history* (registers ``{name}_{field}``): the beat's latest
    byte's (by :func:`latest`, or the OR of the lanes' ``hist``: :func:`for_history`), kept in
    bubbles, 0 after the end of a message (the byte before a message's first continues
    nothing). With ``keep`` (:func:`mark_keep`; the lanes' ``hist`` are 0 in a beat that ends
    a message and after a reset) the OR of the ``hist`` and the history kept while ``keep``,
    no reset (an ECP5 reset under the clock enable is a LUT in front of it); with ``halves``
    too, in two registers, one per half of the lanes (the latest byte's half loads its value,
    the other 0), ORed where lane 0 reads them: six inputs each instead of ten at 8 lanes."""
    nv = [lane.nv for lane in beat.lanes]
    history = {}
    for field, value in values[0].items():
        width = len(Value.cast(value))
        reg = pipe.register(f"{name}_{field}", width)
        if keep is not None and halves:
            # Two registers, one per half of the lanes, each kept while `keep`: the beat's
            # latest byte's half loads its value, the other half 0.
            half = len(beat) // 2
            regs = [reg, pipe.register(f"{name}_{field}_hi", width)]
            for part, lanes in zip(regs, [beat.lanes[:half], beat.lanes[half:]]):
                with pipe.m.If(pipe.enable(width)):
                    pipe.m.d.sync += part.eq(any_of(lane.hist[field] for lane in lanes) |
                                             (part & keep.replicate(width)))
            history[field] = regs[0] | regs[1]
            continue
        if keep is not None:
            with pipe.m.If(pipe.enable(width)):
                pipe.m.d.sync += reg.eq(any_of(lane.hist[field] for lane in beat.lanes) |
                                        (reg & keep.replicate(width)))
            history[field] = reg
            continue
        if hasattr(beat.lanes[0], "hist"):
            new = any_of(lane.hist[field] for lane in beat.lanes) | \
                (reg & beat.bubble.replicate(width))
        else:
            new = Mux(beat.bubble, reg, latest([v[field] for v in values], nv))
        pipe.load_cleared(reg, new, beat.beat_vl, pipe.enable(width))
        history[field] = reg
    return [history, *values[:-1]]


def stage_a(pipe, payload, valid, lanes):
    """Stage ``A``, from the input beat: per lane the byte's nibble predicates and ``nv``."""
    count = payload.count
    width = len(count)
    a = Beat([SimpleNamespace(
                 nv=pipe.control(f"a{k}_nv", ~valid | ~table_lookup(
                     count, [int(value > k) for value in range(1 << width)])),
                 p=CLASSIFIER.registers(pipe, f"a{k}", payload.data[8 * k:8 * k + 8]))
              for k in range(lanes)],
             pipe.control("a_vl", valid & payload.last))
    if lanes >= ONE_HOT_LANES and pipe.clear_in_data:
        # 0 in a beat that ends a message, and 0 in the flush's first step (a synchronous reset
        # from the flush flag, not under the clock enable: it is 0 before that step too).
        for k, lane in enumerate(a.lanes):
            lane.latest = reg = Signal(name=f"a{k}_latest")
            with pipe.m.If(pipe.flushing):
                pipe.m.d.sync += reg.eq(0)
            with pipe.m.Elif(pipe.enable(1)):
                pipe.m.d.sync += reg.eq(valid & ~payload.last & (count == k + 1))
    elif lanes >= ONE_HOT_LANES:
        for k, lane in enumerate(a.lanes):
            lane.latest = pipe.data(f"a{k}_latest", valid & (count == k + 1))
    return a


def stage_b1(pipe, a):
    """Stage ``B1``: each byte's class and lead codes."""
    tables, b = UTF8_TABLES, mark_latest(pipe, "b1", a, next_beat(pipe, "b1", a))
    for k, (lane, regs) in enumerate(zip(a.lanes, b.lanes)):
        member = lambda set_name: CLASSIFIER.member(lane.p, set_name)
        terms = lead_code_terms(lane, tables)
        regs.lead = pipe.data(f"b1{k}_lead", member("lead2") | member("lead34"))
        regs.q = pipe.data(f"b1{k}_q", Cat(member("q0"), member("q1")), 2)
        regs.startkind = pipe.data(f"b1{k}_startkind", any_of(
            Mux(member(set_name), START_KINDS.index(kind), 0)
            for set_name, kind in tables.start_error_sets), code_width(START_KINDS))
        codes = {f"code{length}": lane_lead_code(terms, length, tables) for length in (2, 3, 4)}
        regs.codes = {length: pipe.data(f"b1{k}_code{length}", codes[f"code{length}"],
                                        tables.code_width(length))
                      for length in (2, 3, 4)}
        for_history(pipe, f"b1{k}", lane, regs, codes)
    return b


def stage_b2(pipe, b1):
    """Stage ``B2``: each byte as a second byte of the byte before."""
    tables, b = UTF8_TABLES, mark_latest(pipe, "b2", b1, next_beat(pipe, "b2", b1))
    prevs = before(pipe, "h_b", b1, [{f"code{length}": lane.codes[length]
                                      for length in (2, 3, 4)} for lane in b1.lanes],
                   getattr(b1, "keep", None), halves=True)
    for k, (lane, prev, regs) in enumerate(zip(b1.lanes, prevs, b.lanes)):
        regs.cont = pipe.data(f"b2{k}_cont", lane.q != 0)
        regs.lead = pipe.data(f"b2{k}_lead", lane.lead)
        regs.startkind = pipe.data(f"b2{k}_startkind", lane.startkind, len(lane.startkind))
        regs.ok2, regs.rerr, regs.rclass = {}, {}, {}
        for length in (2, 3, 4):
            code = prev[f"code{length}"]
            table = tables.grammar.second_byte_table(length)
            ok2 = any_of((code == c) & (lane.q == qv) for (c, qv), (ok, _) in table.items() if ok)
            regs.ok2[length] = pipe.data(f"b2{k}_ok2_{length}", ok2)
            if length == 4:
                for_history(pipe, f"b2{k}", lane, regs, {"ok2_4": ok2})
            if length in tables.range_lengths:
                classes = tables.restricted[length]
                regs.rerr[length] = pipe.data(f"b2{k}_rerr{length}", any_of(
                    (code == c) & (lane.q == qv) for (c, qv), (ok, _) in table.items() if not ok))
                width = (len(classes) - 1).bit_length()
                regs.rclass[length] = pipe.data(
                    f"b2{k}_rclass{length}",
                    any_of(Mux(code == c, i, 0) for i, (c, _) in enumerate(classes)),
                    width) if width else 0
    return b


def stage_c(pipe, b2):
    """Stage ``C``: the prefix pending after each byte, and the byte's facts for ``V1``."""
    tables, c = UTF8_TABLES, next_beat(pipe, "c", b2)
    prevs = before(pipe, "h_c", b2, [{"ok2_4": lane.ok2[4]} for lane in b2.lanes],
                   getattr(b2, "keep", None), halves=True)
    mark_keep(pipe, "c", b2, c)
    for k, (lane, prev, regs) in enumerate(zip(b2.lanes, prevs, c.lanes)):
        sc = prev["ok2_4"] & lane.cont
        rerr = any_of(lane.rerr.values())
        anyc = lane.ok2[3] | lane.ok2[4] | sc
        regs.sc = pipe.data(f"c{k}_sc", sc)
        regs.anyc = pipe.data(f"c{k}_anyc", anyc)
        for_history(pipe, f"c{k}", lane, regs, {"pend": lane.lead | anyc, "anyc": anyc, "sc": sc})
        regs.lead = pipe.data(f"c{k}_lead", lane.lead)
        regs.ns = pipe.data(f"c{k}_ns", ~lane.cont | rerr)
        regs.unc0 = pipe.data(f"c{k}_unc0", lane.cont & ~any_of(lane.ok2.values()))
        # The kind of the prefix the byte breaks (a code of BURST_KINDS): a lone lead's range
        # error, or TRUNCATED (0).
        regs.bkind = pipe.data(f"c{k}_bkind", any_of(
            Mux(lane.rerr[length] & (lane.rclass[length] == i), BURST_KINDS.index(kind), 0)
            for length in tables.range_lengths
            for i, (_, kind) in enumerate(tables.restricted[length])), code_width(BURST_KINDS))
        regs.startkind = pipe.data(f"c{k}_startkind", lane.startkind, len(lane.startkind))
    return c


def lane_errors(pipe, payload, valid, lanes):
    """Stages ``A`` .. ``V1`` of a validator of ``lanes`` lanes on its input beat (``payload``,
    ``valid``). Returns the :class:`Beat` of ``V1``: per lane ``burst`` (the prefix pending
    before the byte is ill-formed and ends here), its kind ``bcode`` (a code of
    :data:`BURST_KINDS`) and length ``bback`` (1..3 bytes back from the byte), the parts of the
    byte's own error (``scode``: an error byte, a code of :data:`START_KINDS`; ``unc``, ``trunc``:
    all 0 in an empty lane) and ``oback`` (how far back the first byte of a prefix cut
    short by ``last`` is), ``byte`` (the lane holds one)."""
    c = stage_c(pipe, stage_b2(pipe, stage_b1(pipe, stage_a(pipe, payload, valid, lanes))))
    v = next_beat(pipe, "v", c)
    prevs = before(pipe, "h_v", c, [{"pend": lane.lead | lane.anyc, "anyc": lane.anyc,
                                     "sc": lane.sc} for lane in c.lanes],
                   getattr(c, "keep", None), halves=True)
    for k, (lane, prev, regs) in enumerate(zip(c.lanes, prevs, v.lanes)):
        nv = lane.nv
        # The byte is the message's last: the beat ends it, and the next lane is empty.
        ends = c.beat_vl & (c.lanes[k + 1].nv if k + 1 < lanes else 1)
        regs.burst = pipe.fact(f"v{k}_burst", prev["pend"] & lane.ns, nv)
        regs.bcode = pipe.data(f"v{k}_bcode", lane.bkind, code_width(BURST_KINDS))
        # The prefix before: 1 + anyc + sc bytes (sc implies anyc).
        regs.bback = pipe.data(f"v{k}_bback", Cat(~prev["anyc"] | prev["sc"], prev["anyc"]), 2)
        regs.scode = pipe.fact(f"v{k}_scode", lane.startkind, nv, code_width(START_KINDS))
        regs.unc = pipe.fact(f"v{k}_unc", lane.unc0 & ~prev["anyc"], nv)
        regs.trunc = pipe.fact(f"v{k}_trunc", ends & (lane.lead | lane.anyc), nv)
        # A cut prefix the byte ends: anyc + sc bytes before it.
        regs.oback = pipe.data(f"v{k}_oback", Cat(ends & lane.anyc & ~lane.sc, ends & lane.sc), 2)
        regs.byte = pipe.fact(f"v{k}_byte", 1, nv)
    return v
