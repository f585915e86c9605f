"""Invariants of :class:`~utf8_gateware.hdl.utf8_shift_encoder.Utf8ShiftEncoder` for its proofs
of all time (see :mod:`utf8_gateware.formal.invariants` for the approach: a probe of the core's
registers by name, shadows of the units its stages hold)."""

from types import SimpleNamespace

from amaranth.hdl import Array, Assert, Cat, Elaboratable, Module, Mux, Signal

from utf8_gateware.hdl.utf8_shift_encoder import (character, class_flags, large_in_lead,
                                                  unit_pieces)
from .invariants import assert_adv_copies, assert_tagged_in_queue
from .spec_encoder import SpecEncoder


__all__ = ["ShiftEncoderInvariants"]


class ShiftEncoderInvariants(Elaboratable):
    """The invariants of the shift encoder (stages A1, A2, A3, the output shift register B, the
    skid register K), relative to its accepted units and a
    :class:`~utf8_gateware.formal.induction.TrackingScoreboard` fed by the spec model.

    The harness keeps a shadow of the unit (and its ``valid``) in each stage: ``s1`` loaded
    from the input when ``i.ready`` (a copy of ``take``), ``s2``, ``s3``, ``sb`` from the stage
    before when ``take`` (B takes A3's character exactly then). Spec encoders give their beats.
    Asserted:

    1. the copies of ``adv`` equal ``adv``, the copies of ``take`` equal ``take``; ``take``
       implies ``adv`` and ``b_rem[0]`` (B takes only when its byte is its last, or it is
       empty); while ``adv`` is low the skid register holds a beat (or the encoder is idle);
    2. each stage's ``valid`` is its shadow's; a full stage holds the stage functions
       (:func:`~utf8_gateware.hdl.utf8_shift_encoder.unit_pieces`, ``class_flags``,
       ``character``) of its shadow; an empty A2 has ``z21v`` clear, an empty A3 the byte
       count of a bubble (``n1``, ``n12``; ``lead[4]``, which B reads as ``n4``, clear) and
       no error;
    3. ``b_r01`` is ``b_rem[0] | b_rem[1]``; an empty B has ``b_rem`` = 1; a full B has
       ``b_rem`` one-hot, owes ``r`` beats (the position of its bit plus one) of the spec's for
       ``sb``: ``b_s`` is the first of them (with ``b_error`` on the unit's first beat),
       ``b_q1``..``b_q3`` the payloads of the next ones; ``b_last`` is the unit's ``last``;
    4. the items the scoreboard expects, in order: the skid register's beat (while ``adv`` is
       low), B's ``r`` beats, the beats of A3's, A2's, A1's units; their number is
       ``pending``, and the tagged item is the one at ``ahead``;
    5. liveness: after a cycle with the sink ready ``adv`` is high, and the cycles the encoder
       needs to empty (beats, a cycle per bubble ahead of a unit, a cycle while B is empty or
       does not take at its last byte) are at most ``DRAIN`` less the quiet cycles.

    ``probe`` reads the core's registers by name, ``dut`` is the core, ``scoreboard`` the
    harness's tracking scoreboard and ``quiet_count`` its quiet-cycle count.
    """
    def __init__(self, probe, dut, scoreboard, quiet_count):
        self.probe, self.dut, self.scoreboard = probe, dut, scoreboard
        self.quiet_count = quiet_count

    def elaborate(self, platform):
        m = Module()
        p, dut, sb = self.probe, self.dut, self.scoreboard
        errors = dut.errors
        adv, take, rem = p["adv"], p["take"], p["b_rem"]

        # 1. The copies, and when B takes.
        assert_adv_copies(m, p, "encoder")
        for copy in p.names("take_ce"):
            m.d.comb += Assert(p[copy] == take, f"encoder: {copy} differs from take")
        b_valid, k_valid = p["b_valid"], p["k_valid"]
        stages = [p["a1_valid"], p["a2_valid"], p["a3_valid"]]
        busy = b_valid | stages[0] | stages[1] | stages[2]
        m.d.comb += [
            Assert(~take | (adv & rem[0]), "encoder: B takes before its last byte"),
            Assert(adv | k_valid | ~(busy | take), "encoder: the skid register is offered empty"),
        ]

        # Shadows of the units in A1, A2, A3 and B, and their beats.
        names = ("a1", "a2", "a3", "b")
        shadows = [Signal(dut.i.payload.shape(), name=f"shadow_{n}") for n in names]
        shadow_valid = [Signal(name=f"shadow_{n}_valid") for n in names]
        with m.If(dut.i.ready):
            m.d.sync += [shadows[0].eq(dut.i.payload), shadow_valid[0].eq(dut.i.valid)]
        with m.If(take):
            for n in range(1, 4):
                m.d.sync += [shadows[n].eq(shadows[n - 1]),
                             shadow_valid[n].eq(shadow_valid[n - 1])]
        specs = []
        for n, shadow in enumerate(shadows):
            spec = SpecEncoder(errors)
            m.submodules[f"spec_{n}"] = spec
            m.d.comb += [spec.i.valid.eq(1), spec.i.payload.eq(shadow)]
            specs.append(spec)

        # 2. The unit stages: the stage functions of their shadows.
        # A2's and A3's functions
        later = [lambda a1: class_flags(a1, errors), lambda a2: character(a2, errors)]
        for n, (valid, shadow) in enumerate(zip(stages, shadows[:3])):
            m.d.comb += Assert(valid == shadow_valid[n],
                               f"encoder: a{n + 1}_valid is not its unit's")
            values = unit_pieces(shadow_valid[n], shadow.last, shadow.codepoint, None, errors)
            for function in later[:n]:
                values = function(SimpleNamespace(**values))
            for name, value in values.items():
                m.d.comb += Assert(~valid | (p[f"a{n + 1}_{name}"] == value),
                                   f"encoder: a{n + 1}_{name} is not its unit's")
        # (``large`` a register unless B reads it from ``err`` and the lead byte)
        large = 0 if large_in_lead(None, errors) else p["a3_large"]
        if errors == "surrogateescape":     # a bubble's flags: valid-gated (err: never used)
            m.d.comb += Assert(stages[2] | (p["a3_n1"] & p["a3_n12"] & ~p["a3_n2"] &
                                            ~p["a3_n4"] & ~large),
                               "encoder: an empty A3 is not a bubble")
        else:
            m.d.comb += [
                Assert(stages[1] | ~p["a2_z21v"], "encoder: an empty A2 has z21v set"),
                Assert(stages[2] | (p["a3_n1"] & p["a3_n12"] & ~p["a3_lead"][4] &
                                    ~p["a3_err"] & ~large),
                       "encoder: an empty A3 is not a bubble"),
            ]

        # 3. B: the beats it owes.
        spec_b, shadow_b = specs[3], shadows[3]
        count_b = spec_b.o.count
        beats_b = Array(item.as_value() for item in spec_b.o.items)
        r_b = Signal(range(5))
        m.d.comb += r_b.eq(Mux(rem[3], 4, Mux(rem[2], 3, Mux(rem[1], 2, 1))))
        first = count_b - r_b                              # the index of the beat in b_s
        onehot = (rem != 0) & ((rem & (rem - 1)) == 0)
        m.d.comb += [
            Assert(~b_valid | shadow_valid[3], "encoder: B is full with a bubble's shadow"),
            Assert(p["b_r01"] == (rem[0] | rem[1]), "encoder: b_r01 is not b_rem[0] | b_rem[1]"),
            Assert(b_valid | (rem == 1), "encoder: b_rem of an empty B is not 1"),
            Assert(~b_valid | (onehot & (r_b <= count_b)),
                   "encoder: B owes more beats than its unit has"),
            Assert(~b_valid | (p["b_s"] == beats_b[first[:2]][:8]),
                   "encoder: b_s is not the beat B owes first"),
            Assert(~b_valid | (p["b_error"] ==
                               Mux(first == 0, spec_b.o.items[0].error.as_value()[:2], 0)),
                   "encoder: b_error is not its beat's"),
            Assert(~b_valid | (p["b_last"] == shadow_b.last), "encoder: b_last is not its unit's"),
        ]
        for n in (1, 2, 3):
            m.d.comb += Assert(~b_valid | (r_b < n + 1) | (n == 3) & (r_b != 4) |
                               (p[f"b_q{n}"] == beats_b[(first + n)[:2]][:6]),
                               f"encoder: b_q{n} is not the payload of the beat {n} behind")

        # 4. The expected items, in order: skid, B's beats, A3's, A2's, A1's.
        n_k = ~adv & k_valid
        n_b = Mux(b_valid, r_b, 0)
        counts = [Mux(valid, spec.o.count, 0) for valid, spec in zip(stages, specs)]
        m.d.comb += Assert(sb.pending == n_k + n_b + counts[2] + counts[1] + counts[0],
                           "encoder: the pipeline holds a different number of beats than "
                           "expected")
        k_item = Cat(p["k_data"], p["k_error"], 0, p["k_last"])      # EncodedByteLayout
        queue = [(n_k, [k_item]),
                 (n_b, [beats_b[(first + t)[:2]] for t in range(4)]),
                 *((counts[n], [item.as_value() for item in specs[n].o.items])
                   for n in (2, 1, 0))]
        assert_tagged_in_queue(m, sb, queue, "encoder")

        # 5. Liveness: the cycles to empty with the sink ready and no input.
        a1v, a2v, a3v = stages
        cost = [Mux(a1v, counts[0], 0), Mux(a2v, counts[1], a1v), Mux(a3v, counts[2], a1v | a2v)]
        self.assert_drains(m, adv, n_k + Mux(busy, n_b + ~b_valid + cost[0] + cost[1] + cost[2] +
                                             (~take & rem[0]), 0))
        return m

    def assert_drains(self, m, adv, cycles):
        """Liveness: ``adv`` is high after a cycle with the sink ready, and ``cycles`` (what
        the core needs to empty with the sink ready and no input) is at most ``DRAIN`` less the
        quiet cycles so far."""
        drain = Signal(range(self.dut.DRAIN + 2))
        count = self.quiet_count
        m.d.comb += [
            drain.eq(cycles),
            Assert((count == 0) | adv, "encoder: adv low after a cycle with the sink ready"),
            Assert(count + drain <= self.dut.DRAIN,
                   "encoder: the pipeline cannot empty within DRAIN quiet cycles"),
        ]
