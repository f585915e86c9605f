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

Stages (each one LUT level per flip-flop with one lane; see :class:`~.decoder.Utf8Decoder`).
With several lanes, choosing between lane k-1's facts and the history's is a stage of its own
wherever combining it with the byte's own facts would take a second LUT level
(:func:`_neighbour_stage`):

``A`` (:func:`stage_a`)
    The input register: per lane the byte's data and 4-input *nibble predicates* of it (or, in
    the decoders of :data:`BYTE_ROM`, the byte's class facts and lead codes from a ROM).
``B`` (:func:`stage_b`)
    The byte's class (ASCII, continuation, lead, an error of its own and its kind) and, from the
    previous byte's lead code, whether it is an allowed second byte or a range error. With
    several lanes three stages: ``B1`` the class and the byte's own lead codes, ``B2`` the
    previous byte's lead codes (lane k-1's or the history's), ``B3`` the second-byte table.
``C`` (:func:`stage_c`)
    The prefix pending after the byte (lengths), and whether the byte ends the prefix pending
    before it.
``D`` (:func:`stage_d`)
    What the byte does to the prefix pending before it: a scalar completed (of which length), an
    error of its own, and the *burst* of error outputs the prefix becomes (one U+FFFD, or with
    ``surrogateescape`` one escape per prefix byte). With several lanes a stage ``C2`` before it
    registers the prefix pending before each byte (lane k-1's facts or the history's).
``E`` (:func:`stage_e`)
    The byte's own output (kind included) and the data history the scalars are assembled from.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Mux, Value
from amaranth.lib.data import StructLayout
from amaranth.lib.memory import Memory

from .error_kind import ErrorKind
from .pipeline import any_of, keep
from .utf8_grammar import UTF8, nibble_groups


__all__ = ["BYTE_ROM", "ByteClassifier", "LaneTables", "Stage", "byte_facts", "byte_facts_layout",
           "kind_of", "stage_a", "stage_b", "stage_c", "stage_d", "stage_e"]


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
    def __init__(self, sets, own=()):
        self.sets = {name: nibble_groups(frozenset(members)) for name, members in sets.items()}
        #: The sets whose predicates are registers of their own (never a union of two).
        self.own = frozenset(own)
        self.predicates = []          # (nibble, frozenset of values), in order of first use
        for name, groups in self.sets.items():
            for highs, lows in groups:
                for nibble, values in (("high", highs), ("low", lows)):
                    self._predicate(nibble, values, name in self.own)

    def _predicate(self, nibble, values, own=False):
        """How ``nibble in values`` is computed: ``None`` if it is always true, else a list of
        ``(index, inverted)`` of predicates whose OR it is (one predicate, its complement, or
        unless ``own`` the union of two predicates of the same nibble that are already
        registered)."""
        if len(values) == 16:
            return None
        complement = frozenset(range(16)) - values
        same = [(index, v) for index, (n, v) in enumerate(self.predicates) if n == nibble]
        for index, v in same:
            if v in (values, complement):
                return [(index, v == complement)]
        for x, (i, a) in enumerate(same if not own else ()):
            for j, b in same[x + 1:]:
                if a | b == values:
                    return [(i, False), (j, False)]
        self.predicates.append((nibble, values))
        return [(len(self.predicates) - 1, False)]

    def values(self, byte):
        """The predicates of ``byte`` (a Value of 8 bits), as Values."""
        return [any_of((byte[4:8] if nibble == "high" else byte[0:4]) == v
                       for v in sorted(values))
                for nibble, values in self.predicates]

    def registers(self, pipe, name, byte):
        """The predicate registers of ``byte`` (stage ``A``), named ``{name}_p{index}``."""
        return [pipe.data(f"{name}_p{index}", value)
                for index, value in enumerate(self.values(byte))]

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
                found = self._predicate(nibble, values, name in self.own)
                if found is not None:
                    term = term & any_of(~regs[index] if inverted else regs[index]
                                         for index, inverted in found)
            terms.append(term)
        return terms

    def inputs(self, *names):
        """The predicate registers that membership in the sets ``names`` reads."""
        return {index for name in names for highs, lows in self.sets[name]
                for nibble, values in (("high", highs), ("low", lows))
                for index, _ in self._predicate(nibble, values, name in self.own) or ()}


def _sets(grammar):
    """The byte sets the stages need, from the grammar."""
    sets = {"ascii": set(grammar.single)}
    for bit in range(2):
        sets[f"q{bit}"] = {b for r in grammar.continuation_ranges for b in r
                           if grammar.continuation_code(b) >> bit & 1}
    for length in (2, 3, 4):
        width = len(grammar.lead_codes(length)).bit_length()
        for bit in range(width):
            sets[f"lead{length}_{bit}"] = {b for b in range(256)
                                           if grammar.lead_code(b, length) >> bit & 1}
    sets["lead2"] = {b for lead in grammar.leads if lead.length == 2 for b in lead.bytes}
    sets["lead34"] = {b for lead in grammar.leads if lead.length > 2 for b in lead.bytes}
    for name, r, kind in _start_error_sets(grammar):
        sets[name] = set(r)
    return sets


def _split_sets(grammar, lengths):
    """The sets of the per-class second-byte checks of ``lengths`` (``after{length}_{code}``:
    the continuation bytes a lead of the class takes, ``outside{length}_{code}``: those it does
    not) and of the start errors' kind bits (``startkind{bit}``)."""
    sets = {}
    cont = {b for r in grammar.continuation_ranges for b in r}
    for length in lengths:
        for code, (_, second, _) in enumerate(grammar.lead_codes(length), start=1):
            sets[f"after{length}_{code}"] = cont & set(second)
            sets[f"outside{length}_{code}"] = cont - set(second)
    for bit in range(3):
        sets[f"startkind{bit}"] = {b for r, kind in grammar.start_errors
                                   if kind is not ErrorKind.UNEXPECTED_CONTINUATION
                                   and kind.value >> bit & 1 for b in r}
    return sets


def _start_error_sets(grammar):
    """``(set name, byte range, kind)`` of the bytes that are errors of their own (a
    continuation byte is one when no lead covers it: ``cont``, not a set of its own)."""
    return [(f"start_{kind.name.lower()}_{r.start:02x}", r, kind)
            for r, kind in grammar.start_errors if kind is not ErrorKind.UNEXPECTED_CONTINUATION]


def _restricted_classes(grammar, length):
    """The lead classes of ``length`` whose second-byte range excludes some continuation bytes:
    ``(lead code, range error)`` each."""
    table = grammar.second_byte_table(length)
    return [(c, error) for c, (_, _, error) in enumerate(grammar.lead_codes(length), start=1)
            if any(not ok for (cc, _), (ok, _) in table.items() if cc == c)]


class LaneTables:
    """What a decoder lane is generated from, for one byte grammar
    (:class:`~utf8_gateware.hdl.utf8_grammar.ByteGrammar`): ``grammar``, its
    :class:`ByteClassifier` (``classifier``) and the facts the stages look up (the stage
    functions find it as ``stage.tables``; :meth:`of` makes one per grammar)."""
    _made = {}

    @classmethod
    def of(cls, grammar):
        """The tables of ``grammar`` (made once)."""
        if grammar not in cls._made:
            cls._made[grammar] = cls(grammar)
        return cls._made[grammar]

    def __init__(self, grammar):
        assert len(grammar.continuation_ranges) < 4, "the continuation code is two bits"
        self.grammar = grammar
        self.classifier = ByteClassifier(_sets(grammar))
        self.start_error_sets = [(name, kind) for name, _, kind in _start_error_sets(grammar)]
        self.restricted = {length: _restricted_classes(grammar, length) for length in (2, 3, 4)}
        #: With one lane, the lengths whose second-byte check (the lead's code terms and the
        #: continuation code's predicates) reads more than one LUT4's inputs: checked per lead
        #: class instead, from sets of their own (Modified UTF-8: C0 takes 80 only, a code of two
        #: predicates); then the start errors' kind bits, too, are sets of their own.
        self.split = [length for length in (2, 3, 4) if grammar.lead_codes(length) and
                      len(self.classifier.inputs("q0", "q1")) + sum(
                          len(self.classifier.sets[f"lead{length}_{bit}"])
                          for bit in range(self.code_width(length))) > 4]
        if self.split:
            self.classifier = ByteClassifier({**_sets(grammar), **_split_sets(grammar, self.split)},
                                             own=[f"startkind{bit}" for bit in range(3)])
        #: The sequence lengths with restricted lead classes (the others' leads allow every
        #: continuation byte).
        self.range_lengths = [length for length in (2, 3, 4) if self.restricted[length]]

    def code_width(self, length):
        """Bits of the lead code for ``length``."""
        return len(self.grammar.lead_codes(length)).bit_length()


UTF8_TABLES = LaneTables.of(UTF8)
CLASSIFIER = UTF8_TABLES.classifier


#: The lane counts whose surrogateescape decoder registers in stage ``D``, per slot of ``S1``,
#: which entry of ``recent`` the next beat's escapes in it take
#: (:meth:`~.decoder.Utf8Decoder._cross_selects`): the slot's bits 0..6 are then two LUT levels
#: instead of three. (With a lane's ``vis`` as with one lane too, UP5K seeds 1-3 92.9 / 94.4 /
#: 87.6 MHz and 1,079 LCs, against 101.0 / 100.5 / 98.2 and 1,074 without.)
SELECT_LANES = (4,)


#: Lanes that share one copy of stage ``E``'s ``recent`` registers (the latest valid bytes
#: before a beat), and of stage ``C``'s history from :data:`SPLIT_LANES` lanes on.
RECENT_GROUP = 4


def recent_group(lanes):
    """Lanes that share one copy of ``recent`` in a decoder of ``lanes`` lanes: two from 16
    lanes on (each copy bit drives the three window multiplexers of each lane of its group,
    and at 16 lanes those routes were the longest), else :data:`RECENT_GROUP`."""
    return 2 if lanes >= 16 else RECENT_GROUP


class Stage:
    """One pipeline stage of all lanes of a beat.

    ``lanes``: per lane a namespace of its registers; each has ``nv`` (no byte: an empty lane or
    a bubble) and ``vl`` (the byte ends a message: only the last lane's can be set). Beats are
    *right-aligned*: the valid lanes of a beat are lanes N-count..N-1, so the beat's latest byte
    is always in lane N-1. ``beat_vl``: the beat ends a message (or the pipeline is flushing);
    ``bubble``: the beat has no valid lane. ``tables``: the :class:`LaneTables` of the byte
    grammar (UTF-8's unless given), passed on from stage to stage.
    """
    def __init__(self, lanes, beat_vl, tables=UTF8_TABLES):
        self.lanes = lanes
        self.beat_vl = beat_vl
        self.tables = tables

    def __len__(self):
        return len(self.lanes)

    @property
    def bubble(self):
        return self.lanes[-1].nv


def lane_control(pipe, name, prev):
    """The control registers of a stage, from the stage before (``prev``)."""
    n = len(prev)
    lanes = [SimpleNamespace(nv=pipe.control(f"{name}{k}_nv", lane.nv)) for k, lane in
             enumerate(prev.lanes)]
    beat_vl = pipe.control(f"{name}_vl", prev.beat_vl)
    for k, lane in enumerate(lanes):
        lane.vl = beat_vl if k == n - 1 else 0
    return Stage(lanes, beat_vl, prev.tables)


def lane_neighbours(pipe, name, stage, parts, combine, group=None):
    """For each lane, the facts of the byte before it: ``combine(parts)``, where ``parts`` are
    registers of the byte (a dict per lane) and ``combine`` makes the facts from them (a dict of
    Values).

    The byte before lane k is lane k-1 if that is valid, else the latest byte of the beats
    before: the *history* (registers named ``{name}_{field}``), which takes lane N-1's values
    from every beat that is not a bubble (the latest byte of a right-aligned beat is in lane
    N-1) and is cleared at the end of a message. With one lane the history keeps the facts
    themselves (each a function of two registers at most, so a fact and the history's keep
    multiplexer fit one LUT); with several it keeps the parts, and lane k > 0 chooses between
    lane k-1's parts and the history's. ``group``: lanes per copy of the history (each copy
    keeps its own value in bubbles, so synthesis cannot merge them), default one copy.
    """
    def history(field, value, copy=0):
        return pipe.history(f"{name}_{field}{f'_{copy}' if copy else ''}", [value],
                            [~stage.bubble], stage.bubble, stage.beat_vl, len(Value.cast(value)))
    if len(stage) == 1:
        return [{field: history(field, value) for field, value in combine(parts[0]).items()}]
    group = group or len(stage)
    copies = [{field: history(field, value, copy) for field, value in parts[-1].items()}
              for copy in range((len(stage) + group - 1) // group)]
    prevs = [combine(copies[0])]
    for k in range(1, len(stage)):
        valid = ~stage.lanes[k - 1].nv
        kept = copies[k // group]
        prevs.append(combine({field: Mux(valid, value, kept[field])
                              for field, value in parts[k - 1].items()}))
    return prevs


# -------------------------------------------------------------------------------------------------
# The stages

def table_lookup(index, table):
    """``table[index]`` for a Python list of bits ``table``, as a lookup table of the index's
    bits (a comparison would become a carry chain, a chain of equalities a deeper tree)."""
    return mux_tree(index, [Const(bit, 1) for bit in table])


def mux_tree(index, values):
    """``values[index]`` as a tree of 2:1 multiplexers on the bits of ``index``, most
    significant first (``len(values)`` a power of two). A tree rather than ``Array``: Yosys
    writes an indexed ``Array`` as a ``casez`` with overlapping patterns, which Verilog linters
    flag in the exported file."""
    if all(value is values[0] for value in values):
        return values[0]
    half = len(values) // 2
    top = Value.cast(index)[half.bit_length() - 1]
    return Mux(top, mux_tree(index, values[half:]), mux_tree(index, values[:half]))


def stage_align(pipe, payload, valid, lanes, tables=UTF8_TABLES):
    """With several lanes, the *align* stages: the beat shifted right by N - ``count`` lanes, so
    that its valid bytes are in lanes N-count..N-1 (see :class:`Stage`). A multiplexer of at most
    four inputs per stage (one stage for two or four lanes, two for eight or sixteen).

    Returns ``(stage, data)``: the stage's control registers and the data registers (8 bits per
    lane). With one lane there is nothing to align: the input itself is returned, and stage
    ``A`` is the first register. ``tables``: the :class:`LaneTables` of the byte grammar.
    """
    if lanes == 1:
        lane = SimpleNamespace(nv=~valid, vl=valid & payload.last)
        return Stage([lane], valid & payload.last, tables), [payload.data]
    width = len(Value.cast(payload.count))
    # The lane valid flags, right-aligned: lane k holds a byte if count > N-1-k.
    # The shift, N - count modulo N: the low bits of -count (bit i is count's bit i XOR the OR
    # of the bits below it), so that each shift digit depends on the count bits below it only.
    bits = (lanes - 1).bit_length()
    shift = Cat(*(payload.count[i] ^ any_of(payload.count[j] for j in range(i))
                  for i in range(bits)))
    nv = [~valid | ~table_lookup(payload.count, [int(value > lanes - 1 - k)
                                           for value in range(1 << width)])
          for k in range(lanes)]
    data = [payload.data[8 * k:8 * k + 8] for k in range(lanes)]
    beat_vl = valid & payload.last
    step, done = 0, 1
    while done < lanes:
        radix = min(4, lanes // done)
        digit = shift.bit_select((done.bit_length() - 1), (radix - 1).bit_length())
        regs = []
        for k in range(lanes):
            # A lane shifted in from before lane 0 is empty (its `nv` is set), so any byte
            # will do: the last real source, which keeps the multiplexer small (a constant 0
            # would become a synchronous reset driven by a LUT of the shift digit, fanned out
            # over many lanes).
            sources = [data[k - done * r] if k - done * r >= 0 else data[k % done]
                       for r in range(radix)]
            regs.append(pipe.data(f"l{step}_{k}_d", mux_tree(digit, sources), 8))
        data = regs
        nv = [pipe.control(f"l{step}_{k}_nv", flag) for k, flag in enumerate(nv)]
        beat_vl = pipe.control(f"l{step}_vl", beat_vl)
        shift = pipe.data(f"l{step}_shift", shift, len(Value.cast(shift)))
        done *= radix
        step += 1
    stage_lanes = [SimpleNamespace(nv=flag, vl=beat_vl if k == lanes - 1 else 0)
                   for k, flag in enumerate(nv)]
    return Stage(stage_lanes, beat_vl, tables), data


def byte_facts_layout(tables):
    """The layout of a byte's facts as one word of the byte ROM (:func:`byte_facts_rom`):
    the class facts of stage ``B`` (``asc``, ``cont``, ``lead2``, ``lead34``, ``startkind``),
    the continuation code ``q`` and the lead codes ``code2``, ``code3``, ``code4``."""
    return StructLayout({
        "asc": 1, "cont": 1, "lead2": 1, "lead34": 1, "startkind": ErrorKind, "q": 2,
        **{f"code{length}": tables.code_width(length) for length in (2, 3, 4)}})


def byte_facts(tables, byte):
    """The facts of ``byte`` (an int) for :func:`byte_facts_layout`, from the grammar."""
    grammar = tables.grammar
    kind = grammar.start_error(byte)
    return {"asc": int(byte in grammar.single), "cont": int(grammar.continuation_code(byte) > 0),
            "lead2": int(grammar.lead_code(byte, 2) > 0),
            "lead34": int(grammar.lead_code(byte, 3) > 0 or grammar.lead_code(byte, 4) > 0),
            "startkind": ErrorKind.NONE if kind is ErrorKind.UNEXPECTED_CONTINUATION else kind,
            "q": grammar.continuation_code(byte),
            **{f"code{length}": grammar.lead_code(byte, length) for length in (2, 3, 4)}}


def byte_facts_rom(pipe, name, byte, tables):
    """The facts of ``byte`` (:func:`byte_facts_layout`) read from a 256-word ROM generated from
    the grammar, through a synchronous read port enabled with the pipeline (``adv``): its output
    register is a stage register (an iCE40 SB_RAM40_4K block RAM, 256 x 16, or the family's)."""
    layout = byte_facts_layout(tables)
    rom = Memory(shape=layout, depth=256, init=[byte_facts(tables, b) for b in range(256)])
    pipe.m.submodules[name] = rom
    port = rom.read_port(domain="sync")
    pipe.m.d.comb += [port.addr.eq(byte), port.en.eq(pipe.enable(len(Value.cast(port.data))))]
    return port.data


#: The ``(lanes, errors)`` of the decoders whose stage ``A`` reads each byte's class facts and
#: lead codes from a ROM per lane (:func:`byte_facts_rom`; on the iCE40 one SB_RAM40_4K each)
#: instead of registering its nibble predicates and lead-code terms (two LUT levels from the
#: aligned byte): stage ``B``'s class facts are then copies, and its second-byte check takes the
#: codes. UP5K, seeds 1-3 (MHz) and core LCs, 4 lanes: ``surrogateescape`` 93.5 / 93.5 / 98.5
#: and 969 LCs + 4 block RAMs, against 101.0 / 100.5 / 98.2 and 1,074 LCs (seeds 4-6: 99.5 /
#: 99.0 / 96.3 against 101.4 / 95.8 / 101.1); ``replace`` 101.6 / 98.1 / 107.0 and 825 LCs,
#: against 105.8 / 106.4 / 107.6 and 931 (not kept); 2 lanes ``replace`` 114.2 / 103.6 / 106.4
#: and 411 LCs, against 117.8 median and 465 (not kept).
BYTE_ROM = {(4, "surrogateescape")}


def stage_a(pipe, aligned, data, rom=False):
    """Stage ``A``: per lane the byte's data and nibble predicates (from the aligned beat); with
    ``rom`` (2 or 4 lanes, see :data:`BYTE_ROM`) instead of the predicates the byte's facts,
    read from a ROM (:func:`byte_facts_rom`: ``facts``; ``p`` is ``None``)."""
    stage = lane_control(pipe, "a", aligned)
    tables = stage.tables
    for k, (lane, byte) in enumerate(zip(stage.lanes, data)):
        lane.d = pipe.data(f"a{k}_d", byte[0:7], 7)
        if rom:
            assert 1 < len(data) and not split_neighbours(len(data)) and not tables.split
            lane.p = None
            lane.facts = byte_facts_rom(pipe, f"a{k}_rom", byte, tables)
            continue
        lane.p = tables.classifier.registers(pipe, f"a{k}", byte)
        if len(data) > 1 and not split_neighbours(len(data)):
            # With 2 or 4 lanes also the terms of the lead codes (two LUT levels from the
            # aligned byte, a register of its own), which the next lane and the history use:
            # stage B then chooses between two lanes' codes in the LUTs that use them.
            terms = lead_code_terms(SimpleNamespace(p=tables.classifier.values(byte)),
                                     tables)
            lane.terms = {field: pipe.data(f"a{k}_{field}", value)
                          for field, value in terms.items()}
    return stage


def lead_code_terms(lane, tables=UTF8_TABLES):
    """The rectangles of the byte's lead code bits (see
    :func:`~utf8_gateware.hdl.utf8_grammar.lead_codes`), from its nibble predicates:
    ``{"code{length}_{bit}_{term}": Value}``; a code bit is the OR of its terms. (The history
    keeps the terms, not the bits: a term and the history's keep multiplexer fit one LUT.)"""
    terms = {}
    for length in (2, 3, 4):
        for bit in range(tables.code_width(length)):
            for index, term in enumerate(tables.classifier.terms(lane.p,
                                                                 f"lead{length}_{bit}")):
                terms[f"code{length}_{bit}_{index}"] = term
    return terms


def lane_lead_code(terms, length, tables):
    """Lead code ``length`` from the terms of :func:`lead_code_terms` (of a lane or a
    history), or from codes already made (``{"code{length}": Value}``)."""
    if f"code{length}" in terms:
        return terms[f"code{length}"]
    width = tables.code_width(length)
    return Cat(*(any_of(value for field, value in terms.items()
                        if field.startswith(f"code{length}_{bit}_"))
                 for bit in range(width)))


#: From this many lanes on, the choice between lane k-1's facts and the history's is a stage of
#: its own (:func:`stage_b`, :func:`stage_d`). It costs about 65 flip-flops a lane; on the ECP5
#: at 8 and 16 lanes it removes the critical paths (a LUT level and the history's fan-out), while
#: on the iCE40 at 4 lanes it gains little (median of seeds 1-3: 108.5 MHz and 1,141 LCs against
#: 106.4 MHz and 931 LCs: stage E's window and the align stage stay two LUT levels, and the
#: routes of 3-4 ns a hop remain) and breaks its budget of 1,000 logic cells.
SPLIT_LANES = 8


def split_neighbours(lanes):
    """Whether a decoder of ``lanes`` lanes has the neighbour stages (see :data:`SPLIT_LANES`)."""
    return lanes >= SPLIT_LANES


def lane_stages(lanes):
    """Stages from ``A`` to ``D`` (included): 4, or 7 with the neighbour stages (``B1``, ``B2``,
    ``B3`` and ``C2``)."""
    return 7 if split_neighbours(lanes) else 4


def stage_b(pipe, a):
    """Stage ``B``: the byte's class; an allowed second byte or a range error of the lead
    before it.

    With one lane this is one stage: the history keeps the previous byte's lead-code terms, and
    each result is one LUT of them and the byte's predicates. With 2 or 4 lanes, too: the
    previous byte is lane k-1 or the history, whose lead-code terms stage ``A`` registers (or
    whose lead codes it reads from its ROM, :data:`BYTE_ROM`), and the choice between them
    shares the LUTs that use them (two LUT levels). From
    :data:`SPLIT_LANES` lanes on, that choice would fan the history out to every lane's LUTs;
    so ``B`` takes three stages, one LUT level each: ``B1`` the byte's class and its own lead
    codes, ``B2`` the previous byte's lead codes (a 2:1 multiplexer of lane k-1's and the
    history's), ``B3`` the table.
    """
    tables = a.tables
    if len(a) == 1:
        parts = [{f"p{i}": reg for i, reg in enumerate(a.lanes[0].p)}]
        prevs = lane_neighbours(pipe, "bh", a, parts, lambda parts: lead_code_terms(
            SimpleNamespace(p=[parts[f"p{i}"] for i in range(len(parts))]), tables))
        return _second_byte(pipe, "b", _class(pipe, "b", a, data=False), prevs)
    if not split_neighbours(len(a)):
        prevs = lane_neighbours(pipe, "bh", a, [
            {f"code{length}": lane.facts[f"code{length}"] for length in (2, 3, 4)}
            if lane.p is None else lane.terms for lane in a.lanes], dict)
        return _second_byte(pipe, "b", _class(pipe, "b", a, data=False), prevs)
    b1 = _class(pipe, "b1", a)
    for k, (lane, regs) in enumerate(zip(a.lanes, b1.lanes)):
        codes = lead_code_terms(lane, tables)
        regs.codes = {f"code{length}": pipe.data(f"b1{k}_code{length}",
                                                 lane_lead_code(codes, length, tables),
                                                 tables.code_width(length))
                      for length in (2, 3, 4)}
        regs.q = pipe.data(f"b1{k}_q", Cat(tables.classifier.member(lane.p, "q0"),
                                           tables.classifier.member(lane.p, "q1")), 2)
    b2 = _neighbour_stage(pipe, "b2", "bh", b1, {**_CLASS_FIELDS, "q": 2},
                          [lane.codes for lane in b1.lanes])
    return _second_byte(pipe, "b3", b2, [lane.prev for lane in b2.lanes])


#: The class facts of a byte (stage ``B``) that later stages use.
_CLASS_FIELDS = {"asc": 1, "cont": 1, "lead2": 1, "lead34": 1, "startkind": ErrorKind, "d": 7}


def _pass(pipe, name, lane, regs, data=True):
    """Registers ``regs`` take the class facts of ``lane`` (a stage's lane) unchanged (``data``:
    and the byte's data)."""
    for field, shape in _CLASS_FIELDS.items():
        if field == "d" and not data:
            continue
        setattr(regs, field, pipe.data(f"{name}_{field}", getattr(lane, field), shape))


def _neighbour_stage(pipe, name, history, stage, fields, parts):
    """With several lanes, a stage of its own (named ``name``) that registers for each lane the
    previous byte's facts ``parts`` (per lane a dict of Values: lane k-1's, or for the first
    valid lane those of the history named ``history``; see :func:`lane_neighbours`) as ``prev``, a
    2:1 multiplexer each, and passes on the lane's ``fields`` (``{field: shape}``) unchanged.

    The stage that uses ``prev`` then combines it with the byte's own facts in one LUT level,
    and the history fans out to one multiplexer per lane instead of to every LUT that uses it.
    """
    prevs = lane_neighbours(pipe, history, stage, parts, dict)
    out = lane_control(pipe, name, stage)
    for k, (lane, prev, regs) in enumerate(zip(stage.lanes, prevs, out.lanes)):
        for field, shape in fields.items():
            setattr(regs, field, pipe.data(f"{name}{k}_{field}", getattr(lane, field), shape))
        regs.prev = {field: pipe.data(f"{name}{k}_prev_{field}", value, len(Value.cast(value)))
                     for field, value in prev.items()}
    return out


def _class(pipe, name, a, data=True):
    """The stage (named ``name``) of the byte's class, from stage ``A``: per lane ``asc``,
    ``cont``, ``lead2``, ``lead34``, ``startkind``, ``d`` (unless not ``data``: then ``d_a``,
    stage ``A``'s), and ``p`` (stage ``A``'s predicates, for the stage's own use)."""
    stage = lane_control(pipe, name, a)
    tables = a.tables
    for k, (lane, regs) in enumerate(zip(a.lanes, stage.lanes)):
        member = lambda set_name: tables.classifier.member(lane.p, set_name)
        regs.p, regs.d_a = lane.p, lane.d
        if lane.p is None:
            # (The facts read from the byte ROM.)
            regs.q_a = lane.facts.q
            _pass(pipe, f"{name}{k}", SimpleNamespace(
                d=lane.d, **{field: lane.facts[field] for field in _CLASS_FIELDS if field != "d"}),
                regs, data)
            continue
        _pass(pipe, f"{name}{k}", SimpleNamespace(
            asc=member("ascii"), cont=member("q0") | member("q1"), lead2=member("lead2"),
            lead34=member("lead34"), d=lane.d,
            startkind=Cat(*(member(f"startkind{bit}") for bit in range(3))) if tables.split else
            kind_of(*((member(set_name), kind)
                      for set_name, kind in tables.start_error_sets))), regs, data)
    return stage


def _second_byte(pipe, name, stage, prevs):
    """Whether each lane's byte is an allowed second byte of the lead before it (``ok2_{length}``)
    or a range error of that lead (``rerr{length}``, ``rclass{length}``): from the previous
    byte's lead codes (``prevs``: per lane a dict of terms or codes, see :func:`lane_lead_code`) and
    the byte's continuation code (``q``, or its predicates ``p``).

    Without the neighbour stages ``stage`` is the class stage itself, which this completes (and
    returns); with them, ``stage`` is ``B2`` and this makes the stage ``name`` after it, with
    the class facts passed on. With one lane, a length of :attr:`LaneTables.split` is checked
    per lead class (:func:`_second_byte_per_class`)."""
    one = not split_neighbours(len(stage))
    out_stage = stage if one else lane_control(pipe, name, stage)
    tables = stage.tables
    for k, (lane, prev, out) in enumerate(zip(stage.lanes, prevs, out_stage.lanes)):
        if one and lane.p is None:
            q = lane.q_a
        elif one:
            q = Cat(tables.classifier.member(lane.p, "q0"),
                    tables.classifier.member(lane.p, "q1"))
        else:
            q = lane.q
            _pass(pipe, f"{name}{k}", lane, out)
        for length in (2, 3, 4):
            if not tables.grammar.lead_codes(length):
                setattr(out, f"ok2_{length}", 0)    # (no lead of this length: no register)
                continue
            if one and length in tables.split:
                _second_byte_per_class(pipe, f"{name}{k}", lane, prev, length, out, tables)
                continue
            code = lane_lead_code(prev, length, tables)
            table = tables.grammar.second_byte_table(length)
            allowed = any_of((code == c) & (q == qv)
                             for (c, qv), (ok, _) in table.items() if ok)
            setattr(out, f"ok2_{length}", pipe.data(f"{name}{k}_ok2_{length}", allowed))
            errors = [(code == c) & (q == qv) for (c, qv), (ok, _) in table.items() if not ok]
            if errors:
                # A range error: the previous byte is a lone lead, this a continuation byte
                # outside its second-byte range; and which of the length's restricted lead
                # classes the lead is (stage C turns that into the error's kind).
                classes = tables.restricted[length]
                setattr(out, f"rerr{length}",
                        pipe.data(f"{name}{k}_rerr{length}", any_of(errors)))
                index = any_of(Mux(code == c, i, 0) for i, (c, _) in enumerate(classes))
                width = (len(classes) - 1).bit_length()
                setattr(out, f"rclass{length}",
                        pipe.data(f"{name}{k}_rclass{length}", index, width) if width else 0)
        if one:
            out.d = pipe.data(f"{name}{k}_d", lane.d_a, 7)
    return out_stage


def _second_byte_per_class(pipe, name, lane, prev, length, out, tables):
    """:func:`_second_byte`'s ``ok2_{length}``, ``rerr{length}`` and ``rclass{length}`` of one
    lane as ORs of a register per lead class (:attr:`LaneTables.split`): the class's code and
    the byte's membership in the continuation bytes it takes (or not), one LUT each."""
    codes = range(1, len(tables.grammar.lead_codes(length)) + 1)
    bits = lane_lead_code(prev, length, tables)
    member = lambda set_name: tables.classifier.member(lane.p, set_name)

    def code_is(c):
        # The code's bits that are set, and clear those of any code that includes them.
        wider = {b for other in codes if other != c and other & c == c
                 for b in range(len(bits)) if other >> b & 1 and not c >> b & 1}
        return Cat(*(bits[b] for b in range(len(bits)) if c >> b & 1),
                   *(~bits[b] for b in sorted(wider))).all()
    ok = [pipe.data(f"{name}_ok2_{length}_{c}", code_is(c) & member(f"after{length}_{c}"))
          for c in codes]
    setattr(out, f"ok2_{length}", any_of(ok))
    classes = tables.restricted[length]
    if classes:
        errs = [pipe.data(f"{name}_rerr{length}_{c}", code_is(c) & member(f"outside{length}_{c}"))
                for c, _ in classes]
        setattr(out, f"rerr{length}", any_of(errs))
        index = any_of(Mux(err, i, 0) for i, err in enumerate(errs))
        width = (len(classes) - 1).bit_length()
        setattr(out, f"rclass{length}", index[:width] if width else 0)


def stage_c(pipe, b, surrogateescape):
    """Stage ``C``: the prefix pending after the byte."""
    stage = lane_control(pipe, "c", b)
    lanes = stage.lanes
    tables = b.tables
    # (From SPLIT_LANES lanes on, one copy of the history per RECENT_GROUP lanes: it feeds
    # several LUTs of every lane.)
    prevs = lane_neighbours(pipe, "ch", b, [{"sb4": lane.ok2_4} for lane in b.lanes], dict,
                        RECENT_GROUP if split_neighbours(len(b)) else None)
    for k, (lane, prev, regs) in enumerate(zip(b.lanes, prevs, lanes)):
        # The third byte of a four-byte prefix (never, in a grammar without four-byte leads:
        # no register, and no history of it in stage D).
        sc = prev["sb4"] & lane.cont if tables.grammar.max_length == 4 else 0
        regs.asc = pipe.data(f"c{k}_asc", lane.asc)
        regs.cont = pipe.data(f"c{k}_cont", lane.cont)
        regs.ok2l2 = pipe.data(f"c{k}_ok2l2", lane.ok2_2)
        regs.ok2 = pipe.data(f"c{k}_ok2", lane.ok2_2 | lane.ok2_3 | lane.ok2_4)
        # The prefix pending after the byte: of 3 of 4 bytes (`sc`); of 2 or 3 bytes (`anyc`);
        # one that one more byte completes (`need1`); any (`pend0` or `sc`).
        regs.sc = pipe.data(f"c{k}_sc", sc) if tables.grammar.max_length == 4 else 0
        regs.anyc = pipe.data(f"c{k}_anyc", lane.ok2_3 | lane.ok2_4 | sc)
        regs.need1 = pipe.data(f"c{k}_need1", lane.ok2_3 | sc)
        regs.pend0 = pipe.data(f"c{k}_pend0", lane.lead2 | lane.lead34 | lane.ok2_3 | lane.ok2_4)
        # The byte cannot continue a prefix: not a continuation byte, or outside the range of
        # the lone lead before it.
        regs.ns = pipe.data(f"c{k}_ns", ~lane.cont |
                            any_of(getattr(lane, f"rerr{length}")
                                   for length in tables.range_lengths))
        regs.rkind = pipe.data(f"c{k}_rkind", kind_of(*(
            (getattr(lane, f"rerr{length}") & (getattr(lane, f"rclass{length}") == i), kind)
            for length in tables.range_lengths
            for i, (_, kind) in enumerate(tables.restricted[length]))), ErrorKind)
        regs.startkind = pipe.data(f"c{k}_startkind", lane.startkind, ErrorKind)
        if surrogateescape:
            # A byte with `last` that extends a prefix (to 2 bytes; to 3 of 4 bytes).
            if len(b) > 1:     # (one lane: stage D's `ext`, from `anyc`)
                regs.extlb = pipe.data(f"c{k}_extlb", lane.vl & (lane.ok2_3 | lane.ok2_4))
            regs.extlc = pipe.data(f"c{k}_extlc", lane.vl & lane.cont & prev["sb4"])
        regs.d = pipe.data(f"c{k}_d", lane.d, 7)
    return stage


def stage_d(pipe, c, surrogateescape):
    """Stage ``D``: what the byte does to the prefix pending before it; the burst."""
    if not split_neighbours(len(c)):
        prevs = lane_neighbours(pipe, "dh", c,
                            [{"pend0": lane.pend0, "sc": lane.sc, "anyc": lane.anyc,
                              "need1": lane.need1} for lane in c.lanes],
                            lambda parts: {"pend": parts["pend0"] | parts["sc"],
                                           "sc": parts["sc"], "anyc": parts["anyc"],
                                           "need1": parts["need1"]})
    else:
        # `C2`: the prefix pending before each byte, in registers of its own.
        fields = {"asc": 1, "cont": 1, "ok2l2": 1, "ok2": 1, "pend0": 1, "sc": 1, "ns": 1,
                  "rkind": ErrorKind, "startkind": ErrorKind, "d": 7}
        if surrogateescape:
            fields.update(extlb=1, extlc=1)
        c = _neighbour_stage(pipe, "c2", "dh", c, fields,
                             [{"pend": lane.pend0 | lane.sc, "sc": lane.sc, "anyc": lane.anyc,
                               "need1": lane.need1} for lane in c.lanes])
        prevs = [lane.prev for lane in c.lanes]
    stage = lane_control(pipe, "d", c)
    lanes = stage.lanes
    for k, (lane, prev, regs) in enumerate(zip(c.lanes, prevs, lanes)):
        completes = prev["need1"] & lane.cont       # a sequence of 3 or 4 bytes
        # The byte's own output is a scalar: ASCII (`asc`), or the last byte of a sequence of
        # 2..4 bytes (`multi`); stage E joins them.
        regs.asc = pipe.data(f"d{k}_asc", lane.asc)
        regs.multi = pipe.fact(f"d{k}_multi", lane.ok2l2 | completes, lane.nv)
        regs.len34 = pipe.data(f"d{k}_len34", completes)
        regs.len4 = pipe.data(f"d{k}_len4", prev["sc"] & lane.cont)
        regs.unc = pipe.data(f"d{k}_unc", lane.cont & ~lane.ok2 & ~prev["anyc"])  # uncovered
        regs.trunc = pipe.data(f"d{k}_trunc", lane.vl & (lane.pend0 | lane.sc))   # cut by last
        regs.startkind = pipe.data(f"d{k}_startkind", lane.startkind, ErrorKind)
        regs.erb = pipe.data(f"d{k}_erb", lane.startkind.as_value() != 0)  # an error of its own
        regs.last = pipe.data(f"d{k}_last", lane.vl)
        # The burst due at this byte: item 1 (U+FFFD, or the escape of the previous byte), its
        # kind (TRUNCATED, or the range error of a lone lead: `rkind`), items 2 and 3 (escapes
        # of the bytes two and three before, always TRUNCATED).
        if surrogateescape and len(c) == 1:
            # With one lane, a byte with `last` that extends a prefix (`ext`: it leaves one of
            # 2 or 3 bytes pending) is a register of its own, ORed into items 1 at the slot
            # (one LUT of stage C's registers each, where the OR of three would be two), and
            # `vis`, whether the byte has an output of its own (it leaves no prefix pending, or
            # ends the message): stage E's `showc | err` in one flip-flop.
            ext = pipe.fact(f"d{k}_ext", lane.vl & lane.anyc, lane.nv)
            regs.i1 = pipe.fact(f"d{k}_i1", prev["pend"] & lane.ns, lane.nv) | ext
            regs.btrunc = pipe.fact(f"d{k}_btrunc", prev["pend"] & ~lane.cont, lane.nv) | ext
            regs.vis = pipe.fact(f"d{k}_vis", ~(lane.pend0 | lane.sc) | lane.vl, lane.nv)
        else:
            ext = (lane.extlb | lane.extlc) if surrogateescape else 0
            regs.i1 = pipe.fact(f"d{k}_i1", (prev["pend"] & lane.ns) | ext, lane.nv)
            regs.btrunc = pipe.fact(f"d{k}_btrunc", (prev["pend"] & ~lane.cont) | ext, lane.nv)
            if surrogateescape and len(c) in SELECT_LANES:
                # (`nv_next`, `i_next`: what `nv` and the items are loaded with, for the slots'
                # registered selects; per item, if lane k-1 is empty (the history's facts) and
                # if it is valid (lane k-1's), each without the other's multiplexer.)
                regs.nv_next = lane.nv
                sides = [prevs[0]] + ([{"pend": c.lanes[k - 1].pend0 | c.lanes[k - 1].sc,
                                        "sc": c.lanes[k - 1].sc, "anyc": c.lanes[k - 1].anyc}]
                                      if k else [])
                regs.i_next = {
                    1: [(side["pend"] & lane.ns) | ext for side in sides],
                    2: [(side["anyc"] & ~lane.cont) | lane.extlc for side in sides],
                    3: [side["sc"] & ~lane.cont for side in sides]}
        regs.rkind = pipe.fact(f"d{k}_rkind", lane.rkind, lane.nv, ErrorKind)
        if surrogateescape:
            # (`i2_next`: what `i2` is loaded with, for the CESU-8 joiner's look-ahead.)
            regs.i2_next = (prev["anyc"] & ~lane.cont) | lane.extlc
            regs.i2 = pipe.fact(f"d{k}_i2", regs.i2_next, lane.nv)
            regs.i3 = pipe.fact(f"d{k}_i3", prev["sc"] & ~lane.cont, lane.nv)
        if len(c) == 1:
            # With one lane, the latest valid byte (a bubble's slot may hold an escape of it,
            # whose bit 6 stage E's `c6` takes from here).
            regs.d = pipe.held(f"d{k}_d", lane.d, ~lane.nv, 7)
        else:
            regs.d = pipe.data(f"d{k}_d", lane.d, 7)
            # Where stage E takes the bytes before this one from (see `_window`), chosen a stage
            # ahead from the lanes' valid flags.
            regs.wsel = [pipe.data(f"d{k}_wsel{i}", _window_source(c, k, i), 2)
                         for i in range(1, 4)]
    if len(c) > 1:
        # The same for stage E's `recent` after the beat: the bytes before a lane N (a bubble's
        # sources are the history's own entries: it keeps them).
        stage.rsel = [pipe.data(f"d_rsel{i}", _window_source(c, len(c), i), 2)
                      for i in range(1, 4)]
    return stage


def _window_source(stage, k, i):
    """Where the ``i``-th latest valid byte before lane ``k`` of the beat in ``stage`` is: 0 in
    lane k-i, j > 0 in entry j-1 of the history (the latest bytes before the beat): ``i`` less
    the valid lanes among k-1 .. k-i+1, or 0 if lane k-i is valid. A right-aligned beat's valid
    lanes are a suffix, so with ``a``, ``b``, ``c`` the valid flags of lanes k-1, k-2, k-3
    (``c`` implies ``b``, ``b`` implies ``a``) each bit is a small AND-OR (written without
    constants, which synthesis would turn into a synchronous reset and a LUT level more)."""
    a, b, c = (~stage.lanes[k - m].nv if k - m >= 0 else Const(0, 1) for m in (1, 2, 3))
    if i == 1:
        return Cat(~a, Const(0, 1))
    if i == 2:
        return Cat(a & ~b, ~a)
    return Cat((b & ~c) | ~a, ~b)


def _window(sources, k, lanes, history, update=False):
    """The latest valid bytes before lane ``k`` (latest first), by their registered
    ``sources`` (see :func:`_window_source`): a 4:1 multiplexer each, of lane k-i and the
    history's entries (``lanes``: the beat's bytes; ``history``: the latest bytes before it).

    ``update``: ``history`` are the registers being loaded with the result (``k`` is N): an
    entry that keeps its own value is a :func:`~.pipeline.keep` outside the multiplexer, which
    synthesis would otherwise turn into a clock enable behind a LUT (on the iCE40 the slowest
    path of 4 lanes with one global enable: 97.5 against 105.8 MHz, seed 1)."""
    out = []
    for i, source in enumerate(sources, start=1):
        width = len(Value.cast(history[i - 1]))
        entries = [Value.cast(h)[:width] for h in history[:3]]
        # Before lane 0 there is no lane: the source is never 0 there, and a repeat of the
        # history's entry keeps a constant (a synchronous reset) out of the multiplexer.
        own = lanes[k - i][:width] if k - i >= 0 else entries[i - 1]
        if update:
            leaves = [own, *(own if m == i - 1 else entry for m, entry in enumerate(entries))]
            out.append(keep(source != i, mux_tree(source, leaves), entries[i - 1]))
        else:
            out.append(mux_tree(source, [own, *entries]))
    return out


def before(k, count, stage, lanes, history):
    """The ``count`` latest valid values before lane ``k`` of the beat in ``stage`` (latest
    first): ``lanes`` (the beat's values per lane) and ``history`` (the latest values before the
    beat, latest first). The values before lane k are lanes k-1, k-2, ... as far as they are
    valid (a right-aligned beat's valid lanes are a suffix), then the history's. Returns a list of
    Values (multiplexers on the lanes' valid flags)."""
    out = []
    for i in range(1, count + 1):
        # Lane k-i if valid, else history entry m, where k-i+1+m is the first valid lane.
        value = history[i - 1]
        for m in range(i - 2, -1, -1):
            value = Mux(~stage.lanes[k - i + 1 + m].nv, history[m], value) \
                if k - i + 1 + m >= 0 else value
        if k - i >= 0:
            value = Mux(~stage.lanes[k - i].nv, lanes[k - i], value)
        width = len(Value.cast(history[i - 1]))
        value = Value.cast(value)
        # (A value of the history's width as itself: with one lane the slot logic knows an
        # item whose content is the latest byte by identity.)
        out.append(value if len(value) == width else value[:width])
    return out


def stage_e(pipe, d, surrogateescape):
    """Stage ``E``: the byte's own output, and the data the slots are assembled from.

    Returns the stage; each lane has ``showc``, ``err``, ``multi``, ``len34``, ``len4``,
    ``last``, ``kind`` (its own output's ErrorKind), ``c6`` (bit 6 of its scalar), ``d`` (its
    data) and ``w`` (the data of the 1, 2, 3 bytes before it), and the items of the bursts of
    later lanes of the same beat that land in its slot (``in_i1``, ``in_btrunc``, ``in_rkind``,
    with surrogateescape ``in_i2``, ``in_i3``). The stage's ``recent`` (``recents[k]``: the copy
    lane k uses) is the data of the three
    latest valid bytes up to and including the beat (latest first).
    """
    count = len(d)
    stage = lane_control(pipe, "e", d)
    lanes = stage.lanes
    wide = 7 if surrogateescape else 6       # bits of the bytes before a byte that are used
    # `recent`: the latest valid bytes up to the beat in E (with one lane, four: the byte itself
    # and the three before it).
    # (With surrogateescape the third byte before a byte may be escaped by a burst: 7 bits.)
    third = wide if surrogateescape else 3
    widths = [7, wide, wide, 3] if count == 1 else [7, wide, third]
    # With several lanes, one copy of `recent` per group of lanes (`recent_group`): any lane can
    # be the first valid one of a beat and take its window from `recent`, and one copy for all
    # would fan out to three multiplexers per lane. (Each copy keeps its own value in bubbles,
    # so synthesis cannot merge them.)
    copies = []
    group = recent_group(count)
    for copy in range((count + group - 1) // group):
        suffix = f"_{copy}" if copy else ""
        recent = [pipe.register(f"e_recent{j}{suffix}", width)
                  for j, width in enumerate(widths)]
        if count == 1:
            updated = before(count, len(recent), d, [lane.d for lane in d.lanes], recent)
            updated = [keep(~d.bubble, value, reg) for reg, value in zip(recent, updated)]
        else:
            # (Up to 4 lanes, for the iCE40, the entry that keeps its value is outside the
            # multiplexer; from 8 lanes on, for the ECP5, the clock enable synthesis makes of
            # it is faster: 280.1 against 274.9 MHz at 8 lanes, seed 1.)
            updated = _window(d.rsel, count, [lane.d for lane in d.lanes], recent,
                              update=count < SPLIT_LANES)
        for reg, value in zip(recent, updated):
            with pipe.m.If(pipe.enable(len(reg))):
                pipe.m.d.sync += reg.eq(value)
        copies.append(recent)
    stage.recent = copies[0]
    stage.recents = [copies[k // group] for k in range(count)]
    for k, (lane, regs) in enumerate(zip(d.lanes, lanes)):
        nv = lane.nv
        # A scalar the encoding's marks hide or reject (:mod:`.decoder_family`; one lane).
        hide, reject = getattr(lane, "hide", None), getattr(lane, "reject", None)
        scalar = lane.multi if hide is None and reject is None else \
            lane.multi & ~any_of(mark for mark in (hide, reject) if mark is not None)
        rejected = () if reject is None else ((reject, ErrorKind.SURROGATE),)
        err = lane.erb | lane.unc | lane.trunc
        regs.showc = pipe.fact(f"e{k}_showc", lane.asc | scalar, nv)
        regs.err = pipe.fact(f"e{k}_err", err if reject is None else err | reject, nv)
        if hasattr(lane, "vis"):
            # (`showc | err`, for the one-lane escape slot: a hidden scalar is not shown.)
            regs.vis = pipe.fact(f"e{k}_vis", lane.vis if hide is None else lane.vis & ~hide, nv)
        regs.multi = pipe.fact(f"e{k}_multi", lane.multi, nv)
        regs.len34 = pipe.fact(f"e{k}_len34", lane.len34, nv)
        regs.len4 = pipe.fact(f"e{k}_len4", lane.len4, nv)
        regs.last = pipe.fact(f"e{k}_last", lane.last, nv)
        regs.kind = pipe.fact(f"e{k}_kind",
                              lane.startkind.as_value() |
                              kind_of((lane.unc, ErrorKind.UNEXPECTED_CONTINUATION),
                                      (lane.trunc, ErrorKind.TRUNCATED), *rejected),
                              nv, ErrorKind)
        if count == 1:
            regs.d = recent[0]
            regs.w = recent[1:4]
            prev_d0 = recent[0][0]
        else:
            # The data of the bytes before it (registered: they are chosen by the lanes'
            # valid flags), and its own.
            window = _window(lane.wsel, k, [lane.d for lane in d.lanes], stage.recents[k])
            regs.w = [pipe.data(f"e{k}_w{i}", value, width)
                      for i, (value, width) in enumerate(zip(window, [wide, wide, third]),
                                                         start=1)]
            regs.d = pipe.data(f"e{k}_d", lane.d, 7)
            prev_d0 = window[0][0]
        # Bit 6 of the output: bit 0 of the previous byte for a multi-byte scalar, else bit 6.
        regs.c6 = pipe.data(f"e{k}_c6", Mux(lane.multi, prev_d0, lane.d[6]))
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
    return stage
