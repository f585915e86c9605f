"""Invariants of the one-lane decoder's pipeline registers, for proofs of all time.

Every register of :class:`~utf8_gateware.hdl.decoder.Utf8Decoder`'s stages is a function of the
byte in its stage and of the prefix pending before that byte (the history registers summarise the
bytes before: a lead's code, whether the byte before was the second of four, how much of a
prefix is pending; ``e_recent`` holds the prefix's bytes). The harness keeps a *snapshot* per
stage: the byte (or bubble), whether it ends a message, and the prefix pending before it
(``k`` = 0..3 bytes, ``buf``). The invariant: each stage's registers equal what the decoder's own
stage functions (:mod:`~utf8_gateware.hdl.decoder_lane`) compute for its snapshot, evaluated
combinationally by :class:`FakePipe`; the histories equal the facts of the pending prefix; and the
snapshots are linked: the prefix before a byte is the one its older neighbour leaves.
"""

import contextlib
from types import SimpleNamespace

from amaranth.hdl import Array, Assert, Cat, Const, Elaboratable, Module, Mux, Signal, Value
from amaranth.lib import data

from utf8_gateware.hdl.decoder_lane import (CLASSIFIER, Stage, lead_code_terms, stage_a,
                                            stage_b, stage_c, stage_d, stage_e)
from utf8_gateware.hdl.layouts import CodepointLayout
from utf8_gateware.hdl.utf8_grammar import LEADS
from .checks import assert_decoded_item
from .spec_decoder import MAX_OUTPUTS_PER_BYTE


__all__ = ["FakePipe", "DecoderInvariants", "SpecPlaces", "assert_flush_passed"]


def _in_leads(byte, length):
    return Cat(*(_in(byte, lead.bytes) for lead in LEADS if lead.length == length)).any()


class _Capture:
    """Collects the statements a stage function adds to ``m.d.sync``."""
    def __init__(self):
        self.statements = []

    def __iadd__(self, statements):
        self.statements += statements if isinstance(statements, list) else [statements]
        return self


class _Recorder:
    def __init__(self):
        self.d = SimpleNamespace(sync=_Capture())

    def If(self, cond):
        return contextlib.nullcontext()


class FakePipe:
    """Stands in for :class:`~utf8_gateware.hdl.pipeline.Pipeline` so that the decoder's stage
    functions compute, combinationally in ``m``, the registers of one byte: every register
    becomes a signal with its value (in :attr:`records`, by name); a history returns the value
    given in ``histories``; ``e_recent*`` the values in ``recent`` (before the byte)."""
    def __init__(self, m, prefix, histories, recent, held):
        self.m = _Recorder()
        self._out, self._prefix = m, prefix
        self.histories, self.recent, self.held_values = histories, recent, held
        self.records, self.kinds = {}, {}    # kind: "control", "fact" or "data"
        self.flushing = Const(0)

    def _sig(self, name, value, shape=1, kind="data"):
        sig = Signal(shape, name=f"{self._prefix}_{name}")
        self._out.d.comb += Value.cast(sig).eq(Value.cast(value))
        self.records[name] = sig
        self.kinds[name] = kind
        return sig

    def control(self, name, value):
        return self._sig(name, value, kind="control")

    def data(self, name, value, shape=1):
        return self._sig(name, value, shape)

    def fact(self, name, value, clear, shape=1):
        return self._sig(name, Mux(clear, 0, Value.cast(value)), shape, kind="fact")

    def held(self, name, value, valid, shape=1):
        return self._sig(name, Mux(valid, value, self.held_values[name]), shape)

    def history(self, name, values, last, bubble, clear, shape=1):
        return self.histories[name]

    def register(self, name, shape=1):
        return self.recent[name]

    def enable(self, width=1):
        return Const(1)

    def post_recent(self):
        """The ``e_recent*`` values after the byte moved into stage E."""
        return [statement.rhs for statement in self.m.d.sync.statements]


class _Snapshot:
    """The harness's record of one stage: the byte, ``valid``, ``vl`` (ends a message, or a
    flush bubble), and the prefix pending before it (``k``, ``buf``)."""
    def __init__(self, name):
        self.valid = Signal(name=f"{name}_valid")
        self.vl = Signal(name=f"{name}_vl", init=1)
        self.byte = Signal(8, name=f"{name}_byte")
        self.k = Signal(range(4), name=f"{name}_k")
        self.buf = [Signal(8, name=f"{name}_buf{n}") for n in range(3)]
        #: The stage's registers are not stale (made after the reset from fresh ones).
        self.fresh = Signal(name=f"{name}_fresh")

    def fields(self):
        return [self.valid, self.vl, self.byte, self.k, *self.buf, self.fresh]


def _in(byte, values):
    return (byte >= values.start) & (byte < values.stop)


def prefix_well_formed(k, buf):
    """Whether ``buf[0..k-1]`` is a proper prefix of a well-formed sequence (Table 3-7, from
    :data:`~utf8_gateware.hdl.utf8_grammar.LEADS`)."""
    cases = [_in(buf[0], lead.bytes) & (k < lead.length) &
             ((k < 2) | _in(buf[1], lead.second)) & ((k < 3) | _in(buf[2], range(0x80, 0xC0)))
             for lead in LEADS]
    return (k == 0) | Cat(*cases).any()


def _histories(k, buf):
    """The history registers' values with the prefix ``k``, ``buf`` pending."""
    prev = Mux(k == 1, buf[0], 0)
    terms = lead_code_terms(SimpleNamespace(p=CLASSIFIER.values(prev)))
    histories = {f"bh_{field}": value for field, value in terms.items()}
    histories["ch_sb4"] = (k == 2) & _in_leads(buf[0], 4)
    histories.update(dh_pend=k != 0, dh_sc=k == 3, dh_anyc=k >= 2,
                     dh_need1=((k == 2) & _in_leads(buf[0], 3)) | (k == 3))
    return histories


class DecoderInvariants(Elaboratable):
    """See the module documentation. ``probe``: the :class:`~.invariants.Probe` of ``core``, a
    one-lane :class:`~utf8_gateware.hdl.decoder.Utf8Decoder` with error policy ``errors``
    (whose slot logic is reused for the output slots' invariants).

    Asserted (each once the reset's stale contents are gone, tracked by a *fresh* flag per
    stage and a *clean* flag per history):

    1. the snapshots: each stage's prefix is well-formed and is the one its older neighbour
       leaves; while flushing every stage is a bubble that ends a message (and only a flush
       bubble is a bubble that ends a message: it has no prefix); a stage is fresh
       only if the stage ahead of it is, and a byte (or a pending prefix) only behind fresh
       stages;
    2. each stage's control registers (bubble, message end), facts and data are what
       :class:`FakePipe` computes for its snapshot (the latest valid byte that D holds through
       bubbles only while a prefix is pending);
    3. the histories ``bh_*``, ``ch_sb4``, ``dh_*`` are the facts of the prefix pending before
       the byte of stage A, B, C: the lead's code terms, "the second byte of four", how much is
       pending; ``e_recent*`` holds the byte in E and its prefix's bytes;
    4. each output slot is what the core's slot logic makes of its byte's stage E and the
       stage D of the bytes after it; a stale slot holds no output;
    5. the skid register, while offered, holds a well-formed output (property 1).
    """
    def __init__(self, probe, core, errors):
        self.probe, self.dut, self.errors, self.core = probe, core, errors, core
        slots = len(probe.names("fl")) - 2
        self.names = ["A", "B", "C", "D", "E"] + [f"S{n}" for n in range(1, slots + 1)]
        #: The snapshots, stage A first, then the output slots (a harness may state more
        #: about their bytes).
        self.snapshots = [_Snapshot(f"snap_{name}") for name in self.names]

    def _chain(self, m, name, snap):
        """The stage functions for ``snap``: ``(pipe, e, d)``."""
        se = self.errors == "surrogateescape"
        widths = [7, 7 if se else 6, 7 if se else 6, 3]      # as stage E keeps them
        before = [Mux(snap.k >= j, Array(snap.buf)[(snap.k - j)[:2]], 0)[:width]
                  for j, width in enumerate(widths, start=1)]
        recent = {f"e_recent{j}": value for j, value in enumerate(before)}
        held = {"d0_d": before[0]}
        pipe = FakePipe(m, name, _histories(snap.k, snap.buf), recent, held)
        aligned = Stage([SimpleNamespace(nv=~snap.valid, vl=snap.vl)], snap.vl)
        a = stage_a(pipe, aligned, [snap.byte])
        c = stage_c(pipe, stage_b(pipe, a), se)
        d = stage_d(pipe, c, se)
        e = stage_e(pipe, d, se)
        return pipe, e, d

    def elaborate(self, platform):
        m = Module()
        p = self.probe
        fl = [p[f"fl{n}"] for n in range(len(p.names("fl")))]
        slots = len(fl) - 2
        names, snaps = self.names, self.snapshots
        chains = [self._chain(m, f"fake_{name}", snap) for name, snap in zip(names, snaps)]
        hclean = self._advance(m, fl, names, snaps, chains)
        self._assert_structure(m, fl, names, snaps, hclean)
        self._assert_links(m, fl, names, snaps, chains)
        self._assert_stages(m, fl, names, snaps, chains, hclean)
        self._assert_slots(m, fl, slots, snaps, chains)
        return m

    @staticmethod
    def _after(snap, pipe):
        """The prefix a snapshot leaves: none after a message end; after a bubble, the one
        before."""
        r = pipe.records
        k = Mux(r["c0_sc"], 3, Mux(r["c0_anyc"], 2, Mux(r["c0_pend0"], 1, 0)))
        k = Mux(snap.vl, 0, Mux(snap.valid, k, snap.k))
        buf = [Mux(snap.valid & (k == n + 1), snap.byte, snap.buf[n]) for n in range(3)]
        return k, buf

    def _advance(self, m, fl, names, snaps, chains):
        """The harness's snapshots follow the bytes through the stages; returns the
        ``hclean`` flags of the histories."""
        dut, adv = self.dut, self.probe["adv"]
        # After a reset the data registers are stale (they have no reset) until refilled from
        # fresh ones; the first step marks every stage a bubble that ends a message, which
        # clears the histories and, a step later, every stage's facts. `hclean`: the history
        # between stage X and X+1 is not stale.
        flushing = fl[0]
        hclean = {"A": Signal(name="bh_clean"), "B": Signal(name="ch_clean"),
                  "C": Signal(name="dh_clean")}
        k_in, buf_in = self._after(snaps[0], chains[0][0])
        with m.If(adv):
            m.d.sync += [
                snaps[0].valid.eq(dut.i.valid & ~flushing),
                snaps[0].vl.eq((dut.i.valid & dut.i.payload.last) | flushing),
                snaps[0].byte.eq(dut.i.payload.data),
                snaps[0].k.eq(Mux(flushing, 0, k_in)),
                *[reg.eq(value) for reg, value in zip(snaps[0].buf, buf_in)],
                snaps[0].fresh.eq(1),
            ]
            for index, (older, younger) in enumerate(zip(snaps[1:], snaps)):
                m.d.sync += [o.eq(y) for o, y in zip(older.fields()[:-1], younger.fields())]
                with m.If(flushing):      # every stage becomes a bubble that ends a message
                    m.d.sync += [older.valid.eq(0), older.vl.eq(1), older.k.eq(0)]
                clean = hclean.get(names[index], 1)
                if index + 1 >= 5:     # a slot: made from the byte in E and the one in D
                    clean = snaps[3].fresh & (younger.fresh if index + 1 > 5 else 1)
                    m.d.sync += older.fresh.eq(snaps[4].fresh & clean)
                else:
                    m.d.sync += older.fresh.eq(younger.fresh & clean)
            for name, reg in hclean.items():
                snap = snaps[names.index(name)]
                m.d.sync += reg.eq(~flushing & Mux(snap.vl, 1, Mux(snap.valid, snap.fresh, reg)))
        return hclean

    def _assert_structure(self, m, fl, names, snaps, hclean):
        """Invariant 1, first half: freshness, flushing and well-formed prefixes."""
        # Reachable structure: valid bytes are fresh; the histories are clean once flushed.
        m.d.comb += [
            Assert(fl[1] | (hclean["A"] & hclean["B"] & hclean["C"]),
                   "decoder: a history stale after the flush"),
            Assert(~fl[1] | ~(hclean["A"] | hclean["B"] | hclean["C"]),
                   "decoder: a history clean before the flush bubble passed"),
            # (B is refilled from A after the histories are cleared: in the third step.)
            Assert(~fl[2] | ~snaps[1].fresh, "decoder: stage B fresh too early"),
        ]
        for older, younger in zip(snaps[1:], snaps):
            m.d.comb += [
                Assert(~older.fresh | younger.fresh,
                       "decoder: a stage fresh before the stage ahead of it"),
                Assert((younger.k == 0) | older.fresh,    # its prefix came after the reset
                       "decoder: a pending prefix behind a stale stage"),
            ]
        for name, snap in zip(names, snaps):
            m.d.comb += [
                Assert(fl[0] | ~snap.valid | snap.fresh, f"decoder: a byte in {name} is stale"),
                Assert(~fl[0] | ~snap.fresh, f"decoder: stage {name} fresh before the flush"),
                Assert(~fl[1] | (~snap.valid & snap.vl & (snap.k == 0)),
                       f"decoder: stage {name} not a flush bubble while flushing"),
                Assert(snap.valid | ~snap.vl | (snap.k == 0),     # (only a flush bubble)
                       f"decoder: a bubble that ends a message in {name} has a prefix"),
                Assert(prefix_well_formed(snap.k, snap.buf),
                       f"decoder: the prefix before the byte in {name} is not well-formed"),
            ]

    def _assert_links(self, m, fl, names, snaps, chains):
        """Invariant 1, second half: each snapshot's prefix is what the next older one leaves."""
        # The snapshots are linked: the prefix before a stage's byte is the one its older
        # neighbour leaves.
        for index in range(len(snaps) - 1):
            k, buf = self._after(snaps[index + 1], chains[index + 1][0])
            younger = snaps[index]
            m.d.comb += Assert(fl[0] | (younger.k == k),
                               f"decoder: snapshot {names[index]} does not follow "
                               f"{names[index + 1]}")
            for n in range(3):
                m.d.comb += Assert(fl[0] | (younger.k <= n) | (younger.buf[n] == buf[n]),
                                   f"decoder: snapshot {names[index]}'s prefix byte {n} is "
                                   f"not the one {names[index + 1]} leaves")

    def _assert_stages(self, m, fl, names, snaps, chains, hclean):
        """Invariants 2 and 3: the stages' registers, the histories and ``e_recent``."""
        p = self.probe
        # Each stage's registers are what the stage functions compute for its snapshot: its
        # controls once flushed, its facts once fresh or flushed a step (a bubble's are zero),
        # its data once fresh.
        prefixes = {"A": ("a0_", "a_"), "B": ("b0_", "b_"), "C": ("c0_", "c_"),
                    "D": ("d0_", "d_"), "E": ("e0_", "e_vl")}
        # (The latest valid byte, which D holds through bubbles, matters only while a prefix is
        # pending: an escape of it may land in a bubble's slot.)
        latest = {"d0_d", "e0_c6"}
        for name, snap, (pipe, _, _) in zip(names[:5], snaps, chains):
            for reg in sorted(pipe.records):
                if not reg.startswith(prefixes[name]):
                    continue
                kind = pipe.kinds[reg]
                when = {"control": ~fl[0], "fact": snap.fresh | ~fl[1]}.get(kind, snap.fresh)
                if reg in latest:
                    when &= snap.valid | (snap.k != 0)
                m.d.comb += Assert(~when | (p[reg] == Value.cast(pipe.records[reg])),
                                   f"decoder: stage {name}'s {reg} is not its snapshot's")

        # The histories are the facts of the prefix pending before the stage's byte.
        for name, snap in zip("ABC", snaps):
            for reg, value in _histories(snap.k, snap.buf).items():
                if reg.startswith({"A": "bh_", "B": "ch_", "C": "dh_"}[name]):
                    m.d.comb += Assert(~hclean[name] | (p[reg] == value),
                                       f"decoder: history {reg} is not stage {name}'s prefix's")
        # e_recent: the byte in E and its prefix's bytes (the older entries do not matter).
        e_snap, (e_pipe, _, _) = snaps[4], chains[4]
        for j, value in enumerate(e_pipe.post_recent()):
            m.d.comb += Assert(~e_snap.fresh | (j >= e_snap.k + e_snap.valid) |
                               (p[f"e_recent{j}"] == value),
                               f"decoder: e_recent{j} is not the byte in E or its prefix's")

    def _assert_slots(self, m, fl, slots, snaps, chains):
        """Invariants 4 and 5: the output slots and the skid register."""
        p, adv = self.probe, self.probe["adv"]
        # The output slots: what the core's slot logic makes of the byte's stage E and the
        # stage D of the slot after it (whose burst may land in it), and so on.
        def post(chain):
            pipe, e, d = chain
            values = pipe.post_recent()
            lane = e.lanes[0]
            e = SimpleNamespace(lanes=[SimpleNamespace(**{**vars(lane), "d": values[0],
                                                          "w": values[1:4]})],
                                recent=values, recents=[values])
            return e, d
        for n in range(1, slots + 1):
            # The byte in slot n, and the slots it went through: level L was made when the byte
            # L-1 after it was in E and the byte L after it in D.
            x = 4 + n
            for level in range(1, n + 1):
                pipe = FakePipe(m, f"fake_S{n}_{level}", {}, {}, {})
                if level == 1:
                    slot = self.core._slot(pipe, post(chains[x])[0], chains[x - 1][2], 0)
                else:
                    slot = self.core._later_slot(pipe, slot, post(chains[x - level + 1])[0],
                                                 chains[x - level][2], 0, level)
            fresh = snaps[x].fresh
            for reg in sorted(pipe.records):
                m.d.comb += Assert(~fresh | (p[reg] == Value.cast(pipe.records[reg])),
                                   f"decoder: slot S{n}'s {reg} is not its snapshot's")
            m.d.comb += Assert(fresh | fl[n + 1] | ~p[f"s{n}_0_v"],
                               f"decoder: stale slot S{n} holds an output")
        # The skid register holds an output the sink refused: a well-formed one.
        skid = Signal(CodepointLayout)
        m.d.comb += Value.cast(skid).eq(p["skid"])
        assert_decoded_item(m, ~adv & ~fl[-1], skid, self.errors)


def assert_flush_passed(m, fl, snapshots, names):
    """A byte reaches stage n (A = 0) at least n + 2 steps after a reset: the flush thermometer
    ``fl*`` has cleared that far."""
    for n, snap in enumerate(snapshots):
        m.d.comb += Assert(~snap.valid | ~fl[min(n + 1, len(fl) - 1)],
                           f"decoder: a byte in {names[n]} before the flush passed it")


class SpecPlaces(Elaboratable):
    """The map from the spec model to the one-lane decoder's pipeline, for property 3 for all
    time: the spec model's pending prefix and the expected items of a
    :class:`~utf8_gateware.formal.induction.TrackingScoreboard` (``checkers``: those of
    :func:`~utf8_gateware.formal.checks.check_against_spec`), stated on the snapshots of
    :class:`DecoderInvariants` (``stages``).

    The *places* are the decoder's output slots in the order they go out: the skid register
    (while ``adv`` is low), then the slot of each stage from the oldest (``S3``/``S1`` .. ``E``,
    ``D``, ``C``, ``B``, ``A``), one per byte or bubble. The spec's step (``spec.step``,
    evaluated on a snapshot's byte, ``last`` and pending prefix) gives the items that byte
    pushed: its *own* item last (unless the byte starts a new prefix: then it has none), and
    before it its *burst*, the error items of the prefix it ended, which the decoder writes into
    the places immediately before the byte's own (they are silent: the prefix's bytes and
    bubbles). So a place holds an expected item if its byte has an own item, or a byte up to
    three places younger has a burst reaching it; the item of a burst of ``b`` items in the
    place ``d`` before its byte is the burst's item ``b - d``. Asserted:

    1. the spec model's pending prefix is the one stage A's snapshot leaves;
    2. the items pending are the items of the places, in order (their number, and the tracked
       item where its ``ahead`` count says);
    3. while ``adv`` is low the skid register holds an output (once the flush is done) and it is
       its place's item (a snapshot taken when the skid register takes the last slot);
    4. bounded liveness: after ``q`` quiet cycles (sink ready, no input taken), ``adv`` is high,
       the flush has begun, and the youngest ``q - 1`` stages hold no byte (so after
       ``LATENCY + 1`` nothing is pending).
    """
    def __init__(self, probe, stages, spec, checkers):
        self.probe, self.stages, self.spec, self.checkers = probe, stages, spec, checkers

    def _steps(self, m):
        """``(own, burst, step)`` per snapshot, stage A first."""
        steps = []
        for name, snap in zip(self.stages.names, self.stages.snapshots):
            buf = Signal(data.ArrayLayout(8, 3), name=f"spec_{name}_buf")
            m.d.comb += [buf[n].eq(snap.buf[n]) for n in range(3)]
            step = self.spec.step(m, f"spec_{name}", snap.valid, snap.byte, snap.vl, snap.k, buf)
            own = Signal(name=f"spec_{name}_own")
            burst = Signal(range(MAX_OUTPUTS_PER_BYTE + 1), name=f"spec_{name}_burst")
            m.d.comb += [own.eq(snap.valid & (step.count != 0) & (step.k != 1)),
                         burst.eq(step.count - own)]
            steps.append((own, burst, step))
        return steps

    def elaborate(self, platform):
        m = Module()
        p, spec = self.probe, self.spec
        adv = p["adv"]
        fl = [p[f"fl{n}"] for n in range(len(p.names("fl")))]
        names, snaps = self.stages.names, self.stages.snapshots
        scoreboard, quiet = self.checkers["scoreboard"], self.checkers["quiet"]
        steps = self._steps(m)

        # 1. The spec's pending prefix.
        step_a = steps[0][2]
        m.d.comb += Assert(spec.k == step_a.k, "spec: its prefix is not the one stage A leaves")
        for n in range(3):
            m.d.comb += Assert((spec.k <= n) | (spec.buf[n] == step_a.buf[n]),
                               f"spec: its prefix byte {n} is not the one stage A leaves")

        # The places' items, stage A first.
        places = []
        for index, (name, (own, burst, step)) in enumerate(zip(names, steps)):
            held = Signal(name=f"place_{name}_held")
            item = Signal(CodepointLayout, name=f"place_{name}_item")
            value = Array(step.items)[(step.count - 1)[:2]]
            covers = [(younger[1] >= d, Array(younger[2].items)[(younger[1] - d)[:2]])
                      for d, younger in ((d, steps[index - d]) for d in range(1, 4))
                      if index - d >= 0]
            for hit, burst_item in reversed(covers):
                value = Mux(~own & hit, burst_item, value)
            m.d.comb += [held.eq(own | Cat(*(hit for hit, _ in covers)).any()),
                         item.eq(value)]
            places.append((held, item))

        # 3. The skid register: the last slot's place, taken with it.
        skid_held = Signal(name="place_skid_held")
        skid_item = Signal(CodepointLayout, name="place_skid_item")
        with m.If(adv):
            m.d.sync += [skid_held.eq(places[-1][0]), skid_item.eq(places[-1][1])]
        m.d.comb += [
            Assert(adv | (skid_held == ~fl[-1]),
                   "decoder: the skid register does not hold an output while offered"),
            Assert(adv | ~skid_held | (p["skid"] == Value.cast(skid_item)),
                   "decoder: the skid register does not hold its place's item"),
        ]

        # 2. The items pending, the oldest first.
        older = Const(0, range(len(places) + 2))
        for name, (held, item) in [("skid", (~adv & skid_held, skid_item)),
                                   *zip(reversed(names), reversed(places))]:
            m.d.comb += Assert(~(scoreboard.tagged & held & (older == scoreboard.ahead)) |
                               (Value.cast(scoreboard.expected) == Value.cast(item)),
                               f"decoder: the tracked item is not the one of place {name}")
            older = older + held
        m.d.comb += Assert(scoreboard.pending == older,
                           "decoder: the items pending are not the places' items")

        # 4. Bounded liveness.
        assert_flush_passed(m, fl, snaps, names)
        m.d.comb += [Assert((quiet.count < 1) | adv, "decoder: quiet, but adv low"),
                     Assert((quiet.count < 2) | ~fl[0], "decoder: quiet, but not flushed")]
        for n, snap in enumerate(snaps):
            m.d.comb += Assert((quiet.count < n + 2) | ~snap.valid,
                               f"decoder: quiet, but a byte in {names[n]}")
        return m
