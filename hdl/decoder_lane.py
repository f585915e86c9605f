"""The decoder's per-byte logic: what a byte does, from its look-back window, stage by stage.

Whatever the decoder owes at byte *p* is a pure function of the bytes *p*-3..*p* and the message
boundaries: a lead byte is never covered by an earlier sequence, and a continuation byte only by
the nearest lead within the three bytes before it. So a byte's facts are computed stage by stage,
each stage from the byte's own facts of the stage before and the *previous byte's* facts of that
stage; three stages reach three bytes back. With several lanes per beat, "the previous byte" of
lane *k* is lane *k*-1 of the same beat, and for lane 0 the *history*: the facts of the latest
valid lane of the beats before (kept across bubbles, cleared at the end of a message). There is no
chain through the lanes: each lane looks at one neighbour per stage.

The functions here build one stage for all lanes of a beat and return a :class:`Stage`: per lane a
record of registers (a :class:`types.SimpleNamespace` with named fields), and the beat's control
registers. The byte classes come from :mod:`utf8_gateware.hdl.utf8_grammar` through
:class:`ByteClassifier`; error kinds are :class:`~utf8_gateware.hdl.error_kind.ErrorKind` members.

Stages (each one LUT level per flip-flop with one lane; see :class:`~.decoder.Utf8Decoder`):

``A`` (:func:`stage_a`)
    The input register: per lane the byte's data and 4-input *nibble predicates* of it.
``B`` (:func:`stage_b`)
    The byte's class (ASCII, continuation, lead, an error of its own and its kind) and, from the
    previous byte's lead code, whether it is an allowed second byte or a range error.
``C`` (:func:`stage_c`)
    The prefix pending after the byte (lengths), and whether the byte ends the prefix pending
    before it.
``D`` (:func:`stage_d`)
    What the byte does to the prefix pending before it: a scalar completed (of which length), an
    error of its own, and the *burst* of error outputs the prefix becomes (one U+FFFD, or with
    ``surrogateescape`` one escape per prefix byte).
``E`` (:func:`stage_e`)
    The byte's own output (kind included) and the data history the scalars are assembled from.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Mux, Value

from .error_kind import ErrorKind
from .pipeline import any_of
from .utf8_grammar import (ASCII, CONTINUATION_RANGES, LEADS, START_ERRORS, continuation_code,
                           lead_code, lead_codes, nibble_groups, second_byte_table)


__all__ = ["ByteClassifier", "Stage", "kind_of", "stage_a", "stage_b", "stage_c", "stage_d",
           "stage_e"]


def kind_of(*pairs):
    """The :class:`ErrorKind` of the first ``(flag, kind)`` pair whose flag is set, or ``NONE``:
    the flags must exclude each other (they stand for disjoint classes of the grammar), so the
    result is the OR of the kinds whose flags are set (``NONE`` is 0), which keeps every bit a
    function of few flags."""
    return any_of(Mux(flag, kind, ErrorKind.NONE) for flag, kind in pairs)


def _bits(value, width):
    return [value >> bit & 1 for bit in range(width)]


class ByteClassifier:
    """Membership of a byte in named sets of byte values, as 4-input *nibble predicates*
    (registered once per byte) combined by one more LUT.

    ``sets``: ``{name: set of byte values}``. Each set is cut into rectangles
    (:func:`~utf8_gateware.hdl.utf8_grammar.nibble_groups`); a predicate is "the high (low)
    nibble is in this set of nibbles", shared between sets and registered once (a predicate and
    its complement share one register).
    """
    def __init__(self, sets):
        self.sets = {name: nibble_groups(frozenset(members)) for name, members in sets.items()}
        self.predicates = []          # (nibble, frozenset of values), in order of first use
        for groups in self.sets.values():
            for highs, lows in groups:
                for nibble, values in (("high", highs), ("low", lows)):
                    self._predicate(nibble, values)

    def _predicate(self, nibble, values):
        """How ``nibble in values`` is computed: ``None`` if it is always true, else a list of
        ``(index, inverted)`` of predicates whose OR it is (one predicate, its complement, or
        the union of two predicates of the same nibble that are already registered)."""
        if len(values) == 16:
            return None
        complement = frozenset(range(16)) - values
        same = [(index, v) for index, (n, v) in enumerate(self.predicates) if n == nibble]
        for index, v in same:
            if v in (values, complement):
                return [(index, v == complement)]
        for x, (i, a) in enumerate(same):
            for j, b in same[x + 1:]:
                if a | b == values:
                    return [(i, False), (j, False)]
        self.predicates.append((nibble, values))
        return [(len(self.predicates) - 1, False)]

    def registers(self, pipe, name, byte):
        """The predicate registers of ``byte`` (stage ``A``), named ``{name}_p{index}``."""
        regs = []
        for index, (nibble, values) in enumerate(self.predicates):
            bits = byte[4:8] if nibble == "high" else byte[0:4]
            regs.append(pipe.data(f"{name}_p{index}", any_of(bits == v for v in sorted(values))))
        return regs

    def member(self, regs, name):
        """Whether the byte whose predicate registers are ``regs`` is in the set ``name``."""
        return any_of(self.terms(regs, name))

    def terms(self, regs, name):
        """The rectangles of the set ``name`` for the byte whose predicate registers are
        ``regs``: a list of Values (ANDs of at most two predicates) whose OR is membership."""
        terms = []
        for highs, lows in self.sets[name]:
            term = 1
            for nibble, values in (("high", highs), ("low", lows)):
                found = self._predicate(nibble, values)
                if found is not None:
                    term = term & any_of(~regs[index] if inverted else regs[index]
                                         for index, inverted in found)
            terms.append(term)
        return terms


def _sets():
    """The byte sets the stages need, from the grammar."""
    sets = {"ascii": set(ASCII)}
    for bit in range(2):
        sets[f"q{bit}"] = {b for r in CONTINUATION_RANGES for b in r
                           if continuation_code(b) >> bit & 1}
    for length in (2, 3, 4):
        width = len(lead_codes(length)).bit_length()
        for bit in range(width):
            sets[f"lead{length}_{bit}"] = {b for b in range(256) if lead_code(b, length) >> bit & 1}
    sets["lead2"] = {b for lead in LEADS if lead.length == 2 for b in lead.bytes}
    sets["lead34"] = {b for lead in LEADS if lead.length > 2 for b in lead.bytes}
    for r, kind in START_ERRORS:
        if kind is not ErrorKind.UNEXPECTED_CONTINUATION:  # that one: "cont" not covered
            sets[f"start_{kind.name.lower()}_{r.start:02x}"] = set(r)
    return sets


assert len(CONTINUATION_RANGES) < 4, "the continuation code is two bits"
CLASSIFIER = ByteClassifier(_sets())
_START_ERROR_SETS = [(f"start_{kind.name.lower()}_{r.start:02x}", kind)
                     for r, kind in START_ERRORS if kind is not ErrorKind.UNEXPECTED_CONTINUATION]


class Stage:
    """One pipeline stage of all lanes of a beat.

    ``lanes``: per lane a namespace of its registers; each has ``nv`` (no byte: an empty lane or
    a bubble), ``vl`` (the byte ends a message) and ``last_lane`` (the byte is the beat's last
    valid one, for the histories). ``beat_vl``: the beat ends a message (or the pipeline is
    flushing).
    """
    def __init__(self, lanes, beat_vl):
        self.lanes = lanes
        self.beat_vl = beat_vl

    def __len__(self):
        return len(self.lanes)

    @property
    def last_lanes(self):
        return [lane.last_lane for lane in self.lanes]


def _control(pipe, name, prev, count):
    """The control registers of a stage, from the stage before (``prev``)."""
    lanes = []
    for k, lane in enumerate(prev.lanes):
        regs = SimpleNamespace(
            nv=pipe.control(f"{name}{k}_nv", lane.nv),
            vl=pipe.control(f"{name}{k}_vl", lane.vl))
        regs.last_lane = ~regs.nv if count == 1 else pipe.data(f"{name}{k}_ll", lane.last_lane)
        lanes.append(regs)
    beat_vl = lanes[0].vl if count == 1 else pipe.control(f"{name}_vl", prev.beat_vl)
    return lanes, beat_vl


def _neighbours(pipe, name, stage, exports, widths):
    """For each lane, the previous byte's ``exports`` (a dict name -> value per lane): lane k-1's
    for k > 0, the history for lane 0 (histories named ``{name}_{field}``)."""
    history = {field: pipe.history(f"{name}_{field}", [values[field] for values in exports],
                                   stage.last_lanes, stage.beat_vl, widths[field])
               for field in widths}
    return [history] + exports[:-1]


# -------------------------------------------------------------------------------------------------
# The stages

def stage_a(pipe, payload, valid, lanes):
    """Stage ``A``: the input register. ``payload``: the input payload (``data``, ``last`` and,
    with several lanes, ``count``); ``valid``: the input transfer."""
    regs = []
    for k in range(lanes):
        byte = payload.data[8 * k:8 * k + 8]
        present = valid if lanes == 1 else valid & (payload.count > k)
        is_last = present if lanes == 1 else valid & (payload.count == k + 1)
        lane = SimpleNamespace(
            nv=pipe.control(f"a{k}_nv", ~present),
            vl=pipe.control(f"a{k}_vl", is_last & payload.last),
            d=pipe.data(f"a{k}_d", byte[0:7], 7),
            p=CLASSIFIER.registers(pipe, f"a{k}", byte))
        lane.last_lane = ~lane.nv if lanes == 1 else pipe.data(f"a{k}_ll", is_last)
        regs.append(lane)
    beat_vl = regs[0].vl if lanes == 1 else pipe.control("a_vl", valid & payload.last)
    return Stage(regs, beat_vl)


def _lead_code_terms(lane):
    """The rectangles of the byte's lead code bits (see
    :func:`~utf8_gateware.hdl.utf8_grammar.lead_codes`), from its nibble predicates:
    ``{"code{length}_{bit}_{term}": Value}``; a code bit is the OR of its terms. (The history
    keeps the terms, not the bits: a term and the history's keep multiplexer fit one LUT.)"""
    terms = {}
    for length in (2, 3, 4):
        for bit in range(len(lead_codes(length)).bit_length()):
            for index, term in enumerate(CLASSIFIER.terms(lane.p, f"lead{length}_{bit}")):
                terms[f"code{length}_{bit}_{index}"] = term
    return terms


def _lead_code(terms, length):
    """Lead code ``length`` from the terms of :func:`_lead_code_terms` (of a lane or a
    history)."""
    width = len(lead_codes(length)).bit_length()
    return Cat(*(any_of(value for field, value in terms.items()
                        if field.startswith(f"code{length}_{bit}_"))
                 for bit in range(width)))


def _restricted_classes(length):
    """The lead classes of ``length`` whose second-byte range excludes some continuation bytes:
    ``(lead code, range error)`` each."""
    table = second_byte_table(length)
    return [(c, error) for c, (_, _, error) in enumerate(lead_codes(length), start=1)
            if any(not ok for (cc, _), (ok, _) in table.items() if cc == c)]


#: The sequence lengths with restricted lead classes (the others' leads allow every continuation).
_RANGE_LENGTHS = [length for length in (2, 3, 4) if _restricted_classes(length)]


def stage_b(pipe, a):
    """Stage ``B``: the byte's class; an allowed second byte or a range error of the lead
    before it."""
    lanes, beat_vl = _control(pipe, "b", a, len(a))
    stage = Stage(lanes, beat_vl)
    exports = [_lead_code_terms(lane) for lane in a.lanes]
    widths = dict.fromkeys(exports[0], 1)
    prevs = _neighbours(pipe, "bh", a, exports, widths)
    for k, (lane, prev, regs) in enumerate(zip(a.lanes, prevs, lanes)):
        member = lambda name: CLASSIFIER.member(lane.p, name)
        q = Cat(member("q0"), member("q1"))
        regs.asc = pipe.data(f"b{k}_asc", member("ascii"))
        regs.cont = pipe.data(f"b{k}_cont", q != 0)
        regs.lead2 = pipe.data(f"b{k}_lead2", member("lead2"))
        regs.lead34 = pipe.data(f"b{k}_lead34", member("lead34"))
        regs.startkind = pipe.data(f"b{k}_startkind",
                                   kind_of(*((member(name), kind)
                                             for name, kind in _START_ERROR_SETS)), ErrorKind)
        for length in (2, 3, 4):
            code = _lead_code(prev, length)
            table = second_byte_table(length)
            allowed = any_of((code == c) & (q == qv)
                             for (c, qv), (ok, _) in table.items() if ok)
            setattr(regs, f"ok2_{length}", pipe.data(f"b{k}_ok2_{length}", allowed))
            errors = [(code == c) & (q == qv) for (c, qv), (ok, _) in table.items() if not ok]
            if errors:
                # A range error: the previous byte is a lone lead, this a continuation byte
                # outside its second-byte range; and which of the length's restricted lead
                # classes the lead is (stage C turns that into the error's kind).
                classes = _restricted_classes(length)
                setattr(regs, f"rerr{length}", pipe.data(f"b{k}_rerr{length}", any_of(errors)))
                index = any_of(Mux(code == c, i, 0) for i, (c, _) in enumerate(classes))
                width = (len(classes) - 1).bit_length()
                setattr(regs, f"rclass{length}",
                        pipe.data(f"b{k}_rclass{length}", index, width) if width else 0)
        regs.d = pipe.data(f"b{k}_d", lane.d, 7)
    return stage


def stage_c(pipe, b, surrogateescape):
    """Stage ``C``: the prefix pending after the byte."""
    lanes, beat_vl = _control(pipe, "c", b, len(b))
    stage = Stage(lanes, beat_vl)
    exports = [{"sb4": lane.ok2_4} for lane in b.lanes]
    prevs = _neighbours(pipe, "ch", b, exports, {"sb4": 1})
    for k, (lane, prev, regs) in enumerate(zip(b.lanes, prevs, lanes)):
        sc = prev["sb4"] & lane.cont        # the third byte of a four-byte prefix
        regs.asc = pipe.data(f"c{k}_asc", lane.asc)
        regs.cont = pipe.data(f"c{k}_cont", lane.cont)
        regs.ok2l2 = pipe.data(f"c{k}_ok2l2", lane.ok2_2)
        regs.ok2 = pipe.data(f"c{k}_ok2", lane.ok2_2 | lane.ok2_3 | lane.ok2_4)
        regs.sb3 = pipe.data(f"c{k}_sb3", lane.ok2_3)              # 2 of 3 bytes
        regs.sb = pipe.data(f"c{k}_sb", lane.ok2_3 | lane.ok2_4)   # 2 bytes of 3 or 4
        regs.sc = pipe.data(f"c{k}_sc", sc)                        # 3 of 4 bytes
        # A prefix of 1 or 2 bytes pends after the byte (with `sc`: of any length).
        regs.pend0 = pipe.data(f"c{k}_pend0", lane.lead2 | lane.lead34 | lane.ok2_3 | lane.ok2_4)
        # The byte cannot continue a prefix: not a continuation byte, or outside the range of
        # the lone lead before it.
        regs.ns = pipe.data(f"c{k}_ns", ~lane.cont |
                            any_of(getattr(lane, f"rerr{length}") for length in _RANGE_LENGTHS))
        regs.rkind = pipe.data(f"c{k}_rkind", kind_of(*(
            (getattr(lane, f"rerr{length}") & (getattr(lane, f"rclass{length}") == i), kind)
            for length in _RANGE_LENGTHS
            for i, (_, kind) in enumerate(_restricted_classes(length)))), ErrorKind)
        regs.startkind = pipe.data(f"c{k}_startkind", lane.startkind, ErrorKind)
        if surrogateescape:
            # A byte with `last` that extends a prefix (to 2 bytes; to 3 of 4 bytes).
            regs.extlb = pipe.data(f"c{k}_extlb", lane.vl & (lane.ok2_3 | lane.ok2_4))
            regs.extlc = pipe.data(f"c{k}_extlc", lane.vl & lane.cont & prev["sb4"])
        regs.d = pipe.data(f"c{k}_d", lane.d, 7)
    return stage


def stage_d(pipe, c, surrogateescape):
    """Stage ``D``: what the byte does to the prefix pending before it; the burst."""
    lanes, beat_vl = _control(pipe, "d", c, len(c))
    stage = Stage(lanes, beat_vl)
    exports = [{"pend": lane.pend0 | lane.sc,       # a prefix pends
                "anyc": lane.sb | lane.sc,          # ... of 2 or 3 bytes
                "need1": lane.sb3 | lane.sc,        # ... that one byte completes
                "sc": lane.sc}                      # ... of 3 bytes
               for lane in c.lanes]
    prevs = _neighbours(pipe, "dh", c, exports, dict.fromkeys(exports[0], 1))
    for k, (lane, prev, regs) in enumerate(zip(c.lanes, prevs, lanes)):
        def completes():                            # ... a sequence of 3 or 4 bytes
            return prev["need1"] & lane.cont
        regs.showc = pipe.data(f"d{k}_showc", lane.asc | lane.ok2l2 | completes())  # a scalar
        regs.multi = pipe.fact(f"d{k}_multi", lane.ok2l2 | completes(), lane.nv)  # 2..4 bytes
        regs.len34 = pipe.data(f"d{k}_len34", completes())
        regs.len4 = pipe.data(f"d{k}_len4", prev["sc"] & lane.cont)
        regs.unc = pipe.data(f"d{k}_unc", lane.cont & ~lane.ok2 & ~prev["anyc"])  # uncovered
        regs.trunc = pipe.data(f"d{k}_trunc", lane.vl & (lane.pend0 | lane.sc))   # cut by last
        regs.startkind = pipe.data(f"d{k}_startkind", lane.startkind, ErrorKind)
        regs.erb = pipe.data(f"d{k}_erb", lane.startkind.as_value() != 0)  # an error of its own
        regs.last = pipe.data(f"d{k}_last", lane.vl)
        # The burst due at this byte: item 1 (U+FFFD, or the escape of the previous byte), its
        # kind (TRUNCATED, or the range error of a lone lead: `rkind`), items 2 and 3 (escapes
        # of the bytes two and three before, always TRUNCATED).
        ext = (lane.extlb | lane.extlc) if surrogateescape else 0
        regs.i1 = pipe.fact(f"d{k}_i1", (prev["pend"] & lane.ns) | ext, lane.nv)
        regs.btrunc = pipe.fact(f"d{k}_btrunc", (prev["pend"] & ~lane.cont) | ext, lane.nv)
        regs.rkind = pipe.fact(f"d{k}_rkind", lane.rkind, lane.nv, ErrorKind)
        if surrogateescape:
            regs.i2 = pipe.fact(f"d{k}_i2", (prev["anyc"] & ~lane.cont) | lane.extlc, lane.nv)
            regs.i3 = pipe.fact(f"d{k}_i3", prev["sc"] & ~lane.cont, lane.nv)
        if len(c) == 1:
            # With one lane, the latest valid byte (a bubble's slot may hold an escape of it,
            # whose bit 6 stage E's `c6` takes from here).
            regs.d = pipe.held(f"d{k}_d", lane.d, ~lane.nv, 7)
        else:
            regs.d = pipe.data(f"d{k}_d", lane.d, 7)
    return stage


def last_valid(history, lanes, last_lanes, valid_count, depth):
    """The ``depth`` latest valid values (latest first) after a beat: ``history`` (the latest
    before it, latest first), ``lanes`` (its values per lane) and ``last_lanes`` (one flag per
    lane: the beat's last valid lane; none for a bubble). Returns a list of Values."""
    out = []
    for j in range(depth):
        # Lane k - j if the last valid lane is k >= j, else history entry j - k - 1.
        terms = []
        for k, flag in enumerate(last_lanes):
            source = lanes[k - j] if k >= j else (history[j - k - 1] if j - k - 1 < len(history)
                                                  else None)
            if source is not None:
                width = len(Value.cast(history[j]))
                terms.append(Value.cast(source)[:width] & flag.replicate(width))
        width = len(Value.cast(history[j]))
        out.append(any_of(terms) | (Value.cast(history[j]) &
                                    (~any_of(last_lanes)).replicate(width)))
    return out


def stage_e(pipe, d, surrogateescape):
    """Stage ``E``: the byte's own output, and the data the slots are assembled from.

    Returns the stage; each lane has ``showc``, ``err``, ``multi``, ``len34``, ``len4``,
    ``last``, ``kind`` (its own output's ErrorKind), ``c6`` (bit 6 of its scalar), ``d`` (its
    data) and ``w`` (the data of the 1, 2, 3 bytes before it), and the items of the bursts of
    later lanes of the same beat that land in its slot (``in_i1``, ``in_btrunc``, ``in_rkind``,
    with surrogateescape ``in_i2``, ``in_i3``). The stage's ``recent`` is the data of the three
    latest valid bytes up to and including the beat (latest first).
    """
    count = len(d)
    lanes, beat_vl = _control(pipe, "e", d, count)
    stage = Stage(lanes, beat_vl)
    wide = 7 if surrogateescape else 6       # bits of the bytes before a byte that are used
    # `recent`: the latest valid bytes up to the beat in E (with one lane, four: the byte itself
    # and the three before it).
    depth = 4 if count == 1 else 3
    widths = [7, wide, wide, 3][:depth]
    recent = [pipe.register(f"e_recent{j}", width) for j, width in enumerate(widths)]
    updated = last_valid(recent, [lane.d for lane in d.lanes], d.last_lanes, count, depth)
    for j, (reg, value) in enumerate(zip(recent, updated)):
        with pipe.m.If(pipe.enable(len(reg))):
            pipe.m.d.sync += reg.eq(value)
    stage.recent = recent
    if count > 1:
        before = [pipe.data(f"e_before{j}", recent[j], widths[j]) for j in range(3)]
    for k, (lane, regs) in enumerate(zip(d.lanes, lanes)):
        nv = lane.nv
        regs.showc = pipe.fact(f"e{k}_showc", lane.showc, nv)
        regs.err = pipe.fact(f"e{k}_err", lane.erb | lane.unc | lane.trunc, nv)
        regs.multi = pipe.fact(f"e{k}_multi", lane.multi, nv)
        regs.len34 = pipe.fact(f"e{k}_len34", lane.len34, nv)
        regs.len4 = pipe.fact(f"e{k}_len4", lane.len4, nv)
        regs.last = pipe.fact(f"e{k}_last", lane.last, nv)
        regs.kind = pipe.fact(f"e{k}_kind",
                              lane.startkind.as_value() |
                              kind_of((lane.unc, ErrorKind.UNEXPECTED_CONTINUATION),
                                      (lane.trunc, ErrorKind.TRUNCATED)), nv, ErrorKind)
        # Bit 6 of the output: bit 0 of the previous byte for a multi-byte scalar, else bit 6.
        prev_d0 = d.lanes[k - 1].d[0] if k else recent[0][0]
        regs.c6 = pipe.data(f"e{k}_c6", Mux(lane.multi, prev_d0, lane.d[6]))
        if count == 1:
            regs.d = recent[0]
            regs.w = recent[1:4]
        else:
            regs.d = pipe.data(f"e{k}_d", lane.d, 7)
            regs.w = [None] * 3          # filled below, once every lane's `d` exists
        # Items of later lanes' bursts that land in this lane's slot (same beat).
        items = [("i1", 1), ("btrunc", 1), ("rkind", 1)]
        if surrogateescape:
            items += [("i2", 2), ("i3", 3)]
        for field, distance in items:
            if k + distance < count:
                source = getattr(d.lanes[k + distance], field)
                shape = ErrorKind if field == "rkind" else 1
                setattr(regs, f"in_{field}",
                        pipe.fact(f"e{k}_in_{field}", source, d.lanes[k + distance].nv, shape))
    if count > 1:
        for k, regs in enumerate(lanes):
            regs.w = [lanes[k - i].d if k >= i else before[i - k - 1] for i in (1, 2, 3)]
    return stage
