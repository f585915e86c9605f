"""A verdict per message: is it well-formed UTF-8, and if not, where and why."""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from .component import CheckedComponent
from .decoder import check_lanes
from .decoder_lane import (lane_control, mux_tree, lane_neighbours, kind_of, lane_stages, stage_a,
                           stage_align, stage_b, stage_c)
from .error_kind import ErrorKind
from .layouts import ByteLayout, byte_beat_layout
from .chunked_sum import LevelSum, SplitSum
from .validator_lanes import (BURST_KINDS, LOOK_BACK, STAGES, START_KINDS, code_width, decode,
                              encode, lane_errors, next_beat)
from .pipeline import CE_FANOUT, OutputPair, Pipeline, any_of, keep


__all__ = ["Utf8Validator", "verdict_layout"]


def _ce_fanout(lanes):
    """The most flip-flops a copy of the pipeline's clock enable drives, by lane count
    (measured on the UP5K, seeds 1-3, median): ``None``, one enable, for 1, 2 and 4 lanes
    (at one lane 456 LCs and 146.7/147.8/147.8 MHz against 468 LCs and 138.3/147.8/149.5
    with 40, 486 LCs and 146.7 MHz median with 15; without any enable, which is no working
    core, 455 LCs and 148.9/160.0/148.9 MHz: the enables are not what limits one lane, see
    the class docstring); at 4 lanes 843 LCs and 85.0 MHz against 887 and 82.5 with 15, and
    89.2 MHz with 60, before the sums' changes); copies of ``4 * CE_FANOUT`` loads from 8
    lanes on."""
    return None if lanes <= 4 else 4 * CE_FANOUT


#: The most lanes whose output is two places (:class:`~utf8_gateware.hdl.pipeline.OutputPair`);
#: with more, a verdict slot and a skid register: on the ECP5 at 16 lanes the two places'
#: routes cost 22 MHz (nextpnr seeds 1-3: 244.1, 238.6, 247.3 MHz against 269.1, 266.7, 266.2).
PAIR_MAX_LANES = 8

#: The lane count whose synchronous resets under the clock enable are ANDs in the data
#: (``Pipeline(clear_in_data=True)``; its histories then have no reset, in halves: see
#: :func:`~utf8_gateware.hdl.validator_lanes.before`): the lanes measured on the ECP5 with two
#: output places (nextpnr seeds 1-3: 296.2, 302.9, 282.8 MHz and 1,323 LUT4, against 257.3,
#: 269.8, 271.8 and 1,137). 16 lanes keep their netlist (not measured this way).
CLEAR_IN_DATA_LANES = 8

#: Copies of each overflow flag at the output (at most 3).
OVER_COPIES = 3

#: The most output bits one copy of the output's choice drives (70 on one net were a long route).
SELECT_FANOUT = 12

#: From this ``counter_width`` on, the one-lane validator's verdict keeps its sums' high bits
#: in their high parts, not in the output's big place (``LevelSum.build(held=True)``; seeds
#: 1-3, LCs: 32 bits 148.9/147.2/148.9 MHz, 386, against 147.8/149.5/148.9, 416; 64 bits
#: seed 1 148.9 MHz, 545, against 116.7, 626; but 20 bits 137.7/148.9/139.7, 348, against
#: 148.9/148.9/137.7, 354: the flags and copies it needs cost about what 13-bit high parts save).
HELD_FROM = 32

#: The most flip-flops of the output's big place one copy of its load enable drives.
S_CE_FANOUT = 16


def verdict_layout(counter_width):
    """One result per message: ``valid`` (well-formed), ``offset`` (the byte offset of the first
    maximal subpart's first byte; 0 if ``valid``), ``error`` (its kind; ``NONE`` if ``valid``)
    and ``errors`` (the number of maximal subparts: the U+FFFD count of ``replace``); ``last``
    is always 1 (each verdict ends its message, so the verdict stream is framed like the
    project's other streams)."""
    return data.StructLayout({
        "valid":  1,
        "offset": counter_width,
        "error":  ErrorKind,
        "errors": counter_width,
        "last":   1,
    })


def stage_errors(pipe, c):
    """Stage ``V1`` of one lane (the validator's stage ``D``, after the decoder's lane stages
    ``A`` .. ``C``): the maximal subparts that end at the byte, as :func:`lane_errors` makes them
    with several lanes. ``burst`` (the prefix pending before the byte is ill-formed and ends
    here: the byte cannot continue it), its kind ``bcode`` (a code of ``BURST_KINDS``) and its
    length ``bback`` (1..3 bytes back from the byte); the parts of the byte's own error
    (``scode``: an error byte, a code of ``START_KINDS``; ``unc``: a continuation byte that no
    lead covers; ``trunc``: a prefix cut short by ``last``) and how far back its first byte is
    (``oback``: 0, or 0..2 for a cut prefix the byte belongs to); ``byte`` (the lane holds one).
    """
    prev, = lane_neighbours(pipe, "vh", c,
                        [{"pend0": lane.pend0, "sc": lane.sc, "anyc": lane.anyc}
                         for lane in c.lanes],
                        lambda parts: {"pend": parts["pend0"] | parts["sc"],
                                       "sc": parts["sc"], "anyc": parts["anyc"]})
    stage = lane_control(pipe, "v", c)
    lane, regs = c.lanes[0], stage.lanes[0]
    nv = lane.nv
    trunc = lane.vl & (lane.pend0 | lane.sc)
    regs.burst = pipe.fact("v0_burst", prev["pend"] & lane.ns, nv)
    # (An AND, not a multiplexer with a constant: no synchronous reset from a LUT.)
    regs.bcode = pipe.data("v0_bcode", encode(lane.rkind.as_value(), BURST_KINDS) &
                           lane.cont.replicate(code_width(BURST_KINDS)), code_width(BURST_KINDS))
    # The prefix before: 1 + anyc + sc bytes (sc implies anyc).
    regs.bback = pipe.data("v0_bback", Cat(~prev["anyc"] | prev["sc"], prev["anyc"]), 2)
    regs.scode = pipe.fact("v0_scode", encode(lane.startkind.as_value(), START_KINDS), nv,
                           code_width(START_KINDS))
    regs.unc = pipe.fact("v0_unc", lane.cont & ~lane.ok2 & ~prev["anyc"], nv)
    regs.trunc = pipe.fact("v0_trunc", trunc, nv)
    # A cut prefix the byte ends: anyc + sc bytes before it.
    regs.oback = pipe.data("v0_oback", Cat(trunc & lane.anyc & ~lane.sc, trunc & lane.sc), 2)
    regs.byte = pipe.fact("v0_byte", 1, nv)
    return stage


def stage_own(pipe, v):
    """Stage ``V1b``: per lane the byte's own error ``own`` and its kind ``okind`` (one LUT a
    bit) from the parts of ``V1``; ``burst``, ``bcode``, ``bback``, ``oback`` and ``byte``
    passed on."""
    stage = next_beat(pipe, "u", v, per_lane=False)
    for k, (lane, regs) in enumerate(zip(v.lanes, stage.lanes)):
        regs.own = pipe.data(f"u{k}_own", (lane.scode != 0) | lane.unc | lane.trunc)
        regs.okind = pipe.data(f"u{k}_okind", decode(lane.scode, START_KINDS) | kind_of(
            (lane.unc, ErrorKind.UNEXPECTED_CONTINUATION), (lane.trunc, ErrorKind.TRUNCATED)),
            ErrorKind)
        for field, shape in [("burst", 1), ("bcode", len(lane.bcode)), ("bback", 2),
                             ("oback", 2), ("byte", 1)]:
            setattr(regs, field, pipe.data(f"u{k}_{field}", getattr(lane, field), shape))
    return stage


def _constant_of(index, values):
    """``values[index]`` (a list of integers, as long as ``index`` has values) as a lookup table
    per bit (an addition of a constant would become a carry chain)."""
    width = max(max(values).bit_length(), 1)
    return Cat(*(mux_tree(index, [Const(value >> bit & 1, 1) for value in values])
                 for bit in range(width)))


def stage_first(pipe, v):
    """Stage ``V2``: per lane the first maximal subpart that ends at the byte (a burst comes
    before the byte's own error): ``has``, ``kind``, ``dist`` (where its first byte is: with N
    lanes 3 + k for lane k less the bytes of the prefix before it, below 3 in an earlier beat, a
    table per bit; with one lane the bytes back, 0..3: a 2:1 multiplexer per bit), and ``errs``
    (0..2 maximal subparts end here) and ``bytes`` (the lane holds a byte)."""
    n = len(v)
    stage = next_beat(pipe, "w", v, per_lane=False)
    for k, (lane, regs) in enumerate(zip(v.lanes, stage.lanes)):
        back = Mux(lane.burst, lane.bback, lane.oback)
        regs.has = pipe.data(f"w{k}_has", lane.burst | lane.own)
        regs.kind = pipe.data(f"w{k}_kind", Mux(lane.burst, decode(lane.bcode, BURST_KINDS),
                                                lane.okind), ErrorKind)
        if n == 1:
            regs.dist = pipe.data("w0_dist", back, 2)
        else:
            regs.dist = pipe.data(f"w{k}_dist", _constant_of(back, [LOOK_BACK + k - b
                                                                     for b in range(4)]),
                                  range(n + LOOK_BACK))
        regs.errs = pipe.data(f"w{k}_errs", Cat(lane.burst ^ lane.own, lane.burst & lane.own),
                              range(3))
        regs.bytes = pipe.data(f"w{k}_bytes", lane.byte)
    return stage


def reduce_beat(pipe, w):
    """The beat's summary from its lanes' (stage ``V2``), by a tree of pairs, one level a stage
    (none with one lane): the first error of the beat (of its earliest lane that has one), the
    sum of the errors and of the bytes. Returns ``(summary, bubble, last, stages)``."""
    groups = [SimpleNamespace(has=lane.has, kind=lane.kind.as_value(), dist=lane.dist,
                              errs=lane.errs, bytes=lane.bytes) for lane in w.lanes]
    bubble, last = w.bubble, w.beat_vl
    level = 0
    while len(groups) > 1:
        merged = []
        for x in range(0, len(groups), 2):
            early, late = groups[x], groups[x + 1]
            name = f"t{level}_{x // 2}"
            merged.append(SimpleNamespace(
                has=pipe.data(f"{name}_has", early.has | late.has),
                kind=pipe.data(f"{name}_kind", Mux(early.has, early.kind, late.kind), 3),
                dist=pipe.data(f"{name}_dist", Mux(early.has, early.dist, late.dist),
                               len(early.dist)),
                errs=pipe.data(f"{name}_errs", early.errs + late.errs, len(early.errs) + 1),
                bytes=pipe.data(f"{name}_bytes", early.bytes + late.bytes,
                                len(early.bytes) + 1)))
        groups = merged
        bubble = pipe.control(f"t{level}_nv", bubble)
        last = pipe.control(f"t{level}_vl", last)
        level += 1
    return groups[0], bubble, last, level


class Utf8Validator(CheckedComponent):
    """Checks each message of a byte stream and gives one verdict per message.

    Parameters
    ----------
    lanes : int
        Bytes per beat: 1, 2, 4, 8 or 16 (the decoder's input layout).
    counter_width : int
        Width of ``offset`` and ``errors`` (8..64, default 32). Both saturate at their largest
        value, so a message longer than ``2**counter_width - 1`` bytes never reports a wrong
        small offset: a saturated value means "at least this".
        The two sums (with their read-out stages) and the output's big place cost about 6.5
        flip-flops per bit of ``counter_width`` (on the UP5K a flip-flop is a LC; before
        stop 25 a skid register of the verdict's width came on top: 8.5 a bit); the whole
        core 7.25 LCs a bit at one lane (300 LCs at 16 bits, 416 at 32) and 5.5 at four
        (750, 838), measured at stop 27 (docs/cores.md, "Validator"); from 32 bits at one lane the
        big place keeps no high bits of the sums (their high parts hold them): 386 LCs at 32.

    Ports
    -----
    i : ``In(stream.Signature(...))``
        As :class:`~utf8_gateware.hdl.decoder.Utf8Decoder`'s input: ``ByteLayout`` with one
        lane, else ``byte_beat_layout(lanes)`` (``data``, ``count`` 1..N, ``last``).
    o : ``Out(stream.Signature(verdict_layout(counter_width)))``
        One payload per message, after its ``last`` byte.

    The verdict agrees with CPython: ``valid`` iff ``data.decode("utf-8")`` succeeds;
    ``offset`` is the ``start`` of its :class:`UnicodeDecodeError`; ``errors`` is the number of
    U+FFFD in ``data.decode("utf-8", "replace")``; ``error`` is the :class:`ErrorKind` of the first
    maximal subpart, as the decoder reports it.

    Structure
    ---------
    With one lane, the decoder's own lane stages up to ``C``
    (:mod:`~utf8_gateware.hdl.decoder_lane`: the byte's class, the prefix pending after it; a
    history keeps the byte before), none of its code-point assembly. With N lanes, the
    validator's own lane stages ``A``, ``B1``, ``B2``, ``C``
    (:mod:`~utf8_gateware.hdl.validator_lanes`), generated from the same grammar tables: a beat
    is taken as it comes (``count`` bytes in lanes 0..count-1), lane k's byte before is lane
    k-1's, and lane 0's a history of the beat's latest byte per stage, so there is neither the
    decoder's align stage nor its neighbour stages, nor a multiplexer between a lane and a
    history. Then, per lane:

    ``V1``
        The maximal subparts that end at the byte: the prefix before it (a *burst*, when the byte
        cannot continue it), and the parts of the byte's own error (an error byte, a
        continuation byte no lead covers, a prefix cut short by ``last``); the kinds as 2-bit
        codes (``validator_lanes.START_KINDS``, ``BURST_KINDS``).
    ``V1b``
        The byte's own error and its kind (one LUT a bit of the parts).
    ``V2``
        The first of them (the burst's first byte is earlier): its kind, and where its first
        byte is (one lane: 0..3 bytes back; N lanes: 3 + its lane, which is below 3 when the
        prefix began in an earlier beat); the lane's error count (0..2) and byte count (0..1).
    ``T1`` .. ``Tlog2(N)``
        A tree of pairs (none with one lane): the earlier lane's first error wins; counts add.
    ``P1`` .. ``P3``
        The small parts of the sums: the first error's offset is the bytes of the message before
        the beat plus ``dist - 3`` (N lanes; with one lane ``bytes - 1 - dist``), which is
        negative when the error began in an earlier beat. So that the sums only ever add, ``M``
        sums the bytes before the beat less the latest three, and ``P2`` keeps those (``r``,
        0..3; ``P1`` tabulates what each value of ``r`` makes of the beat's byte count, ``P2``
        chooses); ``P3`` knows whether the message had
        an error before the beat, and gives ``M`` what to add: ``r`` plus that at the first
        error, ``max(0, r + bytes - 3)`` before it, nothing after it.
    ``M``
        The message's sums (the first error's offset, the error count) and its first error's
        kind; after a message's last beat they hold its sums for one step (``fresh``), in which
        they are read out, and then restart from zero. With one lane the increments are 0..3 and
        each sum is a :class:`~utf8_gateware.hdl.chunked_sum.LevelSum`: no carry chain at all
        (bits 0..2 and 2-bit levels that count the carries of the part below, registered), read
        out over ``R`` more stages, one level a stage (2 for ``counter_width`` 8..17, 3 for
        18..57, 4 above); ``P1`` and ``P2`` then look ``dist`` and ``r`` up in tables, where an
        adder would be a carry chain. With N lanes each is a
        :class:`~utf8_gateware.hdl.chunked_sum.SplitSum`: a low part of 5..9 bits (chosen from
        the largest increment) that adds the increment, the only carry chain (it ends in a top
        bit that toggles at each carry, so that every LUT of it loads its own flip-flop), read
        over ``R`` = 2 stages (the low part added again, then the last step's carry). In both
        the high part counts the registered carries of the part below by toggles: each bit a
        LUT of at most four flip-flops (its own, the carry, a free-running flag "the bits below
        are ones", the bit below it), and so is each bit read (from a carry register of its own,
        so that no LUT is both a bit's next state and its read). With one lane from
        ``counter_width`` :data:`HELD_FROM` the high part is not read out: it takes the last
        carry in the read step (worked out a step ahead) and holds the verdict's high bits
        until :data:`~utf8_gateware.hdl.chunked_sum.HOLD_STEPS` steps later, when the verdict
        has left the big place and before the next message can carry into it.
    Output
        Two places (:class:`~utf8_gateware.hdl.pipeline.OutputPair`), not a slot and a skid
        register: the big one takes the sums read out (one LUT a bit; with one lane from 32
        bits only their low bits, and per sum a flag "a carry came into the high part", which
        shows the high part's bits at the output) and the overflow flags
        (in copies, each for a share of the bits) whenever it is empty; the small one, a
        one-beat message's verdict (valid, kind, an offset below N and at most N errors: 5
        flip-flops with one lane, 9 with four), when a verdict comes while the big one is full,
        which can only be the later of two verdicts in consecutive steps. With 16 lanes
        (more than :data:`PAIR_MAX_LANES`) a verdict slot and the pipeline's skid register, as
        before stop 25: there the two places cost 22 MHz on the ECP5.

    ``o.valid`` and ``o.payload`` are one LUT of flip-flops (a 2:1 multiplexer between the
    places, which also ORs in the overflow flags); ``i.ready`` is a flip-flop.

    Cost (measured, median of nextpnr seeds 1-3, 32-bit sums, core cells in the port harness of
    ``utf8-gateware synth``; the decoder's in brackets): iCE40 UP5K, one lane 148.9 MHz and
    386 LCs (164.8 MHz, 196 LCs), four lanes 107.3 MHz and 838 LCs (106.4 MHz, 931 LCs);
    ECP5-25F-6, 8 lanes 296.2 MHz (296.2, 302.9, 282.8), 1,323 LUT4 and 1,236 flip-flops
    (302.8 MHz, 1,767 LUT4), 16 lanes (slot and skid register) 266.7 MHz, 1,924 LUT4 and 2,179
    flip-flops (251.7 MHz, 3,871 LUT4). With 8 lanes (:data:`CLEAR_IN_DATA_LANES`) every
    synchronous reset under the clock enable but the sums' low parts' is an AND in the data (an
    ECP5 flip-flop's reset is not under its enable), and the histories have none (see
    :func:`~utf8_gateware.hdl.validator_lanes.before`). No LUT
    feeds a clock enable, a synchronous reset or two flip-flops, but the histories' enables
    with N lanes (``adv`` and the bubble flag) and the tree's two-level steps; what limits one
    lane is long routes (4.0 to 4.3 ns) everywhere, none of them a net with many loads any
    more: the lane stages, the sums' restarts, the output, the harness's own shift register
    (a core with these ports and no logic, a flip-flop per output bit, reaches 181 MHz in the
    same harness; with the skid register left out, not a working core, 162.1 MHz and 387
    LCs, so area is what limits it); at four lanes (histories of masked registers since stop
    26; 105.8 MHz and 795 LCs with the tree) the input register into stage ``A`` and the first
    step of the tree of pairs; at 16 lanes, the histories (an OR of the lanes' masked
    registers); at 8 lanes functions of 5 to 7 flip-flops in two LUT levels.

    Latency and throughput
    ----------------------
    One beat every cycle while the sink is ready, whatever the bytes (a rigid pipeline, like the
    decoder's). The verdict is on ``o`` :attr:`LATENCY` cycles after the transfer of a
    message's ``last`` beat: ``A``, ``B`` (N lanes: ``B1``, ``B2``), ``C``, ``V1``, ``V1b``,
    ``V2``, ``P1`` .. ``P3``, ``M``, the read-out ``R`` and the verdict slot; with N lanes also
    log2(N) tree stages. So 14 (13 for ``counter_width`` up to 17, 15 from 58), 15, 16, 17, 18
    cycles for 1, 2, 4, 8, 16 lanes.
    """

    @classmethod
    def check_parameters(cls, *, lanes=1, counter_width=32):
        check_lanes(lanes)
        if not isinstance(counter_width, int) or isinstance(counter_width, bool):
            raise TypeError(f"counter_width must be an integer, not {counter_width!r}")
        if not 8 <= counter_width <= 64:
            raise ValueError(f"counter_width must be 8 to 64, not {counter_width!r}")

    def __init__(self, *, lanes=1, counter_width=32):
        self._lanes, self._width = lanes, counter_width
        layout = ByteLayout if lanes == 1 else byte_beat_layout(lanes)
        super().__init__({
            "i": In(stream.Signature(layout)),
            "o": Out(stream.Signature(verdict_layout(counter_width))),
        })

    @property
    def lanes(self):
        return self._lanes

    @property
    def counter_width(self):
        return self._width


    @property
    def LATENCY(self):
        """Cycles from the transfer of a message's ``last`` beat to its verdict on ``o``."""
        return self.latency(lanes=self._lanes, counter_width=self._width)

    @staticmethod
    def latency(*, lanes=1, counter_width=32):
        """:attr:`LATENCY` of a validator with these parameters, without building one."""
        tree = (lanes - 1).bit_length()
        read = Utf8Validator.read_stages(lanes=lanes, counter_width=counter_width)
        return (lane_stages(1) if lanes == 1 else STAGES) + 7 + tree + read

    @staticmethod
    def read_stages(*, lanes=1, counter_width=32):
        """The sums' read-out stages (``R``): after the ``fresh`` step, until the verdict slot."""
        return LevelSum.levels_for(counter_width) + 1 if lanes == 1 else SplitSum.read_stages

    def elaborate(self, platform):
        m = Module()
        n, width = self._lanes, self._width
        # (The flush lasts until the sums' read-out stages have drained: there the end of a
        # message, `ends`, is a data register, and a stale one would be a verdict.)
        read = self.read_stages(lanes=n, counter_width=width)
        pipe = Pipeline(m, flush_steps=3 + read,
                        ce_fanout=_ce_fanout(n), clear_in_data=n == CLEAR_IN_DATA_LANES)
        m.d.comb += self.i.ready.eq(pipe.adv & ~pipe.flushing)

        if n == 1:
            # The decoder's lane stages A .. C (with one lane a history keeps the byte before).
            aligned, data = stage_align(pipe, self.i.payload, self.i.valid, n)
            errors = stage_errors(pipe, stage_c(pipe, stage_b(pipe, stage_a(pipe, aligned, data)),
                                                False))
        else:
            errors = lane_errors(pipe, self.i.payload, self.i.valid, n)
        beat, bubble, last, _ = reduce_beat(pipe, stage_first(pipe, stage_own(pipe, errors)))

        # P1 .. P3: the small parts of the sums. The first error's offset is the bytes of the
        # message before the beat plus `back`: `dist - 3` (-3..N-1; one lane: `bytes - 1 -
        # dist`). So that M's sum only ever adds (no borrow through its chunks), M sums the bytes
        # before the beat less the latest three, and P2 keeps the rest (`r`, 0..3): the offset is
        # M's sum plus `r + back` (never negative), and M's sum grows by `max(0, r + bytes - 3)`
        # until the first error. (With one lane the offset's increments are 0..3, so only `back`
        # modulo 4 matters: P1 and P2 look it up in tables, as they do `r`, where an adder would
        # be a carry chain.)
        if n == 1:
            index = Cat(beat.dist, beat.bytes)
            back = pipe.data("p1_back", _constant_of(index, [((i >> 2) - 1 - (i & 3)) % 4
                                                             for i in range(8)]), 2)
        else:
            back = pipe.data("p1_back", beat.dist - LOOK_BACK, range(-LOOK_BACK, n))
        p1 = SimpleNamespace(
            back=back,
            # `max(0, r + bytes - 3)` for each value of `r` (P2 chooses one: no carry chain in
            # front of a comparison).
            clean=[pipe.data(f"p1_clean{v}", _constant_of(
                beat.bytes, [max(0, b + v - 3) for b in range(1 << len(beat.bytes))]),
                range(n + 1)) for v in range(4)],
            least=pipe.data("p1_least", Mux(beat.bytes > 3, 3, beat.bytes), 2),
            has=pipe.data("p1_has", beat.has), kind=pipe.data("p1_kind", beat.kind, 3),
            errs=pipe.data("p1_errs", beat.errs, len(beat.errs)),
            bubble=pipe.control("p1_nv", bubble), last=pipe.control("p1_vl", last))
        r = Signal(2, name="p2_r")
        pipe.load_cleared(r, _constant_of(Cat(p1.least, r), [min(3, (i & 3) + (i >> 2))
                                                             for i in range(16)]),
                          p1.last, pipe.enable(2))
        if n == 1:
            at_error = _constant_of(Cat(p1.back, r), [((i & 3) + (i >> 2)) % 4 for i in range(16)])
        else:
            at_error = r + p1.back
        p2 = SimpleNamespace(
            at_error=pipe.data("p2_at_error", at_error, range(n + 3)),
            # (ANDs, not a multiplexer with constants: no synchronous reset from a LUT.)
            clean=pipe.data("p2_clean", any_of(value & (r == v).replicate(len(value))
                                               for v, value in enumerate(p1.clean)),
                            range(n + 1)),
            has=pipe.data("p2_has", p1.has), kind=pipe.data("p2_kind", p1.kind, 3),
            errs=pipe.data("p2_errs", p1.errs, len(p1.errs)),
            bubble=pipe.control("p2_nv", p1.bubble), last=pipe.control("p2_vl", p1.last))
        # P3: whether the message had an error before the beat (`seen`), and so what M adds.
        seen = Signal(name="p3_seen")
        with m.If(pipe.enable(1)):
            m.d.sync += seen.eq(~p2.last & (seen | p2.has))
        p3 = SimpleNamespace(
            # (Masked by an AND: a synchronous reset would come from a LUT of `seen` and `has`.)
            inc=pipe.data("p3_inc", Mux(p2.has, p2.at_error, p2.clean) &
                          (~seen).replicate(len(p2.at_error)), range(n + 4)),
            first=pipe.data("p3_first", ~seen & p2.has), bad=pipe.data("p3_bad", seen | p2.has),
            kind=pipe.data("p3_kind", p2.kind, 3),
            errs=pipe.data("p3_errs", p2.errs, len(p2.errs)),
            bubble=pipe.control("p3_nv", p2.bubble), last=pipe.control("p3_vl", p2.last))

        # M: the message's sums (the first error's offset, the error count, each a SplitSum:
        # one carry chain, in its low part) and its first error's kind. After a message's last
        # step (in the `fresh` step) they restart, and their read-out stages (R) take the sums
        # to the verdict slot. (With one lane the increments are 0..3: LevelSum, no carry chain
        # at all.)
        # (From PAIR_MAX_LANES + 1 lanes on, the netlist from the sums to the output is the one
        # before stop 25: the high parts loaded whole, a verdict slot and a skid register.)
        pair = n <= PAIR_MAX_LANES
        whole = not pair
        if n == 1:
            offset, errors = LevelSum("m_offset", width), LevelSum("m_errors", width)
        else:
            offset, errors = (SplitSum("m_offset", width, n + 3, whole=whole),
                              SplitSum("m_errors", width, 2 * n, whole=whole))
        fresh = pipe.control("m_fresh", p3.last)
        # (One lane, two levels or more: the sums' high parts hold the verdict's high bits.)
        # (One lane, from HELD_FROM bits: the sums' high parts hold the verdict's high bits
        # while it waits in S, instead of S.)
        held = {"held": True} if n == 1 and width >= HELD_FROM else {}
        sums = {"offset": offset.build(pipe, p3.inc, p3.last, fresh, **held),
                "errors": errors.build(pipe, p3.errs, p3.last, fresh, **held)}
        highs = {}
        if held:
            highs = {name: built[1:] for name, built in sums.items()}
            sums = {name: (built[0], built[2]) for name, built in sums.items()}
        kind = Signal(3, name="m_kind")
        with m.If(pipe.enable(3)):
            # (In the LUT: no clock enable from a LUT of `adv` and `first`.)
            m.d.sync += kind.eq(keep(p3.first, p3.kind, kind))
        # (`good` is `~bad` in a flip-flop of its own: the offset's synchronous reset.)
        bad, good = pipe.data("m_bad", p3.bad), pipe.data("m_good", ~p3.bad)
        ends = pipe.data("m_ends", p3.last & ~p3.bubble)
        # While the sums are read out, the rest of the verdict waits.
        # (With two places, the last stage's `ends` is the output's: OutputPair.)
        for stage in range(offset.read_stages):
            kind, bad, good = (pipe.data(f"m_r{stage}_{name}", value, len(value))
                               for name, value in [("kind", kind), ("bad", bad), ("good", good)])
            if stage + 1 < offset.read_stages or not pair:
                ends = pipe.data(f"m_r{stage}_ends", ends)
        if not pair:
            self._drive_slot(m, pipe, sums, kind, bad, good, ends)
            return m

        # The output (see OutputPair): the place S (the sums read out, one LUT a bit; a valid
        # message's offset is zero, a synchronous reset; the overflow flags, ORed in by the
        # output's LUT) and the place Q (a verdict of a one-beat message: its offset and error
        # count fit in a few bits).
        out = OutputPair(pipe, self.o, ends, ce_fanout=S_CE_FANOUT, select_fanout=SELECT_FANOUT)
        verdict, small = Signal(self.o.payload.shape()), Signal(self.o.payload.shape())
        ones = Signal(self.o.payload.shape())     # the overflow flags, set bits of the output
        # (Q's kind is masked at the output, so that no LUT loads both places.)
        q_valid = out.load_q(pipe.register("q_valid"), good)
        m.d.comb += [verdict.valid.eq(out.load_s(pipe.register("v_valid"), good)),
                     verdict.error.eq(out.load_s(pipe.register("v_error", 3),
                                                 bad.replicate(3) & kind)),
                     small.valid.eq(q_valid),
                     small.error.eq(out.load_q(pipe.register("q_error", 3), kind) &
                                    (~q_valid).replicate(3)),
                     verdict.last.eq(1), small.last.eq(1)]
        # A one-beat message: an offset below `n`, at most `n` errors.
        for name, (value, over), bits in [("offset", sums["offset"], (n - 1).bit_length()),
                                          ("errors", sums["errors"], n.bit_length())]:
            clear = good if name == "offset" else None
            # The overflow flag in copies, each for a share of the bits (64 loads on one net
            # were a long route): the copies differ only where the flag does not matter (for
            # a well-formed message, whose offset is 0 and which has no error), so that
            # synthesis keeps them.
            flags = [out.load_s(pipe.register(f"v_{name}_over{k}"), flag, clear)
                     for k, flag in enumerate([over, over & bad, over | good][:OVER_COPIES])]
            if name == "errors":
                flags = flags[:2]    # (`over | good` would set the count of a valid message)
            if held:
                # The low bits in S; the high bits are the high part's, shown if any carry came
                # into it in the message (else they are 0; a valid message's offset is 0).
                high, _, shown = highs[name]
                shown = out.load_s(pipe.register(f"v_{name}_shown"),
                                   shown & bad if name == "offset" else shown)
                big = Cat(out.load_s(pipe.register(f"v_{name}", len(value)), value, clear),
                          high & shown.replicate(len(high)))
            else:
                big = out.load_s(pipe.register(f"v_{name}", width), value, clear)
            m.d.comb += [
                getattr(verdict, name).eq(big),
                getattr(ones, name).eq(Cat(*(flags[bit * len(flags) // width]
                                             for bit in range(width))))]
            if bits:
                low = Value.cast(value)[:bits]
                m.d.comb += getattr(small, name)[:bits].eq(out.load_q(
                    pipe.register(f"q_{name}", bits),
                    low if clear is None else low & (~clear).replicate(bits)))
        out.drive(verdict.as_value() | ones.as_value(), small)
        return m

    def _drive_slot(self, m, pipe, sums, kind, bad, good, ends):
        """From :data:`PAIR_MAX_LANES` + 1 lanes on, the output is a verdict slot and the
        pipeline's skid register (:meth:`~utf8_gateware.hdl.pipeline.Pipeline.drive_output`):
        the sums read out (one LUT a bit; a valid message's offset is zero, a synchronous
        reset), the payload ORing in the overflow flags in the LUT that chooses between the
        slot and the skid register."""
        width = self._width
        verdict = Signal(self.o.payload.shape())
        for target, value in [(verdict.valid, good),
                              (verdict.error.as_value(), bad.replicate(3) & kind)]:
            with m.If(pipe.enable(len(target))):
                m.d.sync += target.eq(value)
        ones = Signal(self.o.payload.shape())     # the overflow flags, set bits of the output
        for name, (value, over) in sums.items():
            if name == "offset":
                regs = [pipe.fact("v_offset", value, good, width),
                        pipe.fact("v_offset_over", over, good)]
            else:
                regs = [pipe.data("v_errors", value, width), pipe.data("v_errors_over", over)]
            m.d.comb += [getattr(verdict, name).eq(regs[0]),
                         getattr(ones, name).eq(regs[1].replicate(width))]
        m.d.comb += verdict.last.eq(1)
        pipe.drive_output(self.o, pipe.data("v_valid", ends), verdict, ones=ones.as_value())
