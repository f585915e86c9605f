"""Unbounded proofs of the real cores: harnesses whose properties hold for all time.

The harnesses of :mod:`utf8_gateware.formal.checks` number every item with counters that a proof
of all time would overflow (:class:`~utf8_gateware.formal.checks.Scoreboard` asserts they stay
narrow), so they are proven by BMC only. The harnesses here state the same properties with
finite-state checkers:

* :class:`TrackingScoreboard` -- the expected item sequence versus the core's, with no item
  numbers: the solver *tags* one expected item when it is pushed (a free choice, so the proof
  holds for every item) and the checker counts down the items ahead of it as the core pops them;
  the core's offer when the count is zero must be the tagged item. The number of items pending
  is asserted to stay within the core's capacity (it is bounded, so the checker is finite).
* bounded liveness (:class:`~utf8_gateware.formal.checks.QuietCounter`) is already a safety
  property of all time.

Each is proven with ``sby`` ``mode prove``, by k-induction (``smtbmc``) with the invariants
stated in :mod:`utf8_gateware.formal.invariants` and
:mod:`utf8_gateware.formal.decoder_invariants` (IC3/PDR, ``abc pdr``, would find them itself, but
needs ``yosys-abc``, which the YoWASP packages do not ship). :data:`UNBOUNDED_PROOFS` (marker
``formal``) and :data:`LONG_PROOFS` (marker ``formal_long``) list them.
"""

from functools import partial
from types import SimpleNamespace

from amaranth.asserts import AnySeq
from amaranth.hdl import Array, Assert, Const, Cover, Elaboratable, Module, Signal

from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.encoder import Utf8Encoder
from utf8_gateware.hdl.error_kind import DECODE_ERRORS, ENCODE_ERRORS, ErrorKind
from .checks import (DecoderEquivalence, EncoderEquivalence, Proof, Scoreboard, StreamRules,
                     Together, _bits, assert_stream_rules, drive_sink, drive_source, track_ascii)
from .decoder_invariants import DecoderInvariants, SpecPlaces, assert_flush_passed
from .invariants import PipelineInvariants, Probe
from .shift_encoder_invariants import ShiftEncoderInvariants
from .spec_roundtrip import SpecBytesRoundTrip, SpecUnitsRoundTrip


__all__ = ["TrackingScoreboard", "EncoderEquivalenceForever",
           "decoder_rules_forever", "DecoderAsciiForever",
           "DecoderEquivalenceForever", "UNBOUNDED_PROOFS", "LONG_PROOFS",
           "SUBSUMED"]


class TrackingScoreboard(Scoreboard):
    """A finite-state :class:`~utf8_gateware.formal.checks.Scoreboard` (same ports: ``push_count``,
    ``push_items``, ``offer``, ``offer_item``, ``pop``, ``pending``), for proofs of all time.

    ``capacity``: the most items the core can hold (pushed and not yet popped); asserted.
    Asserted every cycle:

    * the core offers nothing that has not been pushed (no extra or duplicated item);
    * the tagged item (any one the solver chooses, when it is pushed) is offered in its turn,
      unchanged: when ``ahead`` (the items pushed before it and not yet popped) is zero, the
      core's offer equals it (no item lost, reordered or changed);
    * ``pending`` stays within ``capacity``, and ``ahead`` below ``pending``.
    """
    def __init__(self, shape, push_width, name, *, capacity):
        width = (capacity + push_width).bit_length()
        super().__init__(shape, push_width, name, width=width)
        self.capacity = capacity
        #: Whether an item is tagged, how many items are ahead of it, and its value.
        self.tagged = Signal()
        self.ahead = Signal(width)
        self.expected = Signal(shape)

    def elaborate(self, platform):
        m = Module()
        width = len(self.pending)
        m.d.sync += self.pending.eq(self.pending + self.push_count - self.pop)

        # Tag an item pushed in this cycle (the solver chooses whether and which).
        choose = Signal()
        which = Signal(max(1, (self.push_width - 1).bit_length()))
        m.d.comb += [choose.eq(~self.tagged & AnySeq(1) & (self.push_count != 0)),
                     which.eq(AnySeq(len(which)))]
        tracking, ahead, item = Signal(), Signal(width), Signal(self.shape)
        with m.If(choose & (which < self.push_count)):
            m.d.comb += [tracking.eq(1), ahead.eq(self.pending + which),
                         item.eq(Array(self.push_items)[which])]
        with m.Else():
            m.d.comb += [tracking.eq(self.tagged), ahead.eq(self.ahead),
                         item.eq(self.expected)]
        m.d.sync += self.expected.eq(item)
        with m.If(self.pop & (ahead == 0)):
            m.d.sync += self.tagged.eq(0)      # popped: another item may be tagged
        with m.Else():
            m.d.sync += [self.tagged.eq(tracking), self.ahead.eq(ahead - self.pop)]

        m.d.comb += [
            Assert(~self.offer | (self.pending != 0) | (self.push_count != 0),
                   f"{self.name}: an output that nothing expected corresponds to"),
            Assert(~(self.offer & tracking & (ahead == 0)) |
                   (_bits(self.offer_item) == _bits(item)),
                   f"{self.name}: an output differs from the expected one"),
            Assert(self.pending <= self.capacity,
                   f"{self.name}: more than {self.capacity} items pending"),
            Assert(~self.tagged | (self.ahead < self.pending),
                   f"{self.name}: the tagged item is not pending"),
        ]
        return m


class EncoderEquivalenceForever(EncoderEquivalence):
    """:class:`~utf8_gateware.formal.checks.EncoderEquivalence` for all time, by k-induction:
    with a :class:`TrackingScoreboard` (the encoder holds at most ``capacity`` beats) and
    :class:`~utf8_gateware.formal.shift_encoder_invariants.ShiftEncoderInvariants`
    (``factory(errors)`` makes the core)."""
    def __init__(self, errors, factory=Utf8Encoder, *, capacity=None):
        if capacity is None:        # the beats the encoder can hold
            capacity = 17
        super().__init__(errors, scoreboard=partial(TrackingScoreboard, capacity=capacity))
        self.core_factory = factory

    def elaborate(self, platform):
        core = self.core_factory(self.errors)
        probe = Probe(core)
        self.factory = lambda errors: probe.core
        m = super().elaborate(platform)
        m.submodules.invariants = ShiftEncoderInvariants(
            probe, core, self.checkers["scoreboard"], self.checkers["quiet"].count)
        return m


def decoder_rules_forever(errors, factory=Utf8Decoder):
    """Property 5's stream rules of :class:`~utf8_gateware.hdl.decoder.Utf8Decoder` for all
    time: :class:`~utf8_gateware.formal.checks.StreamRules` with
    :class:`~utf8_gateware.formal.invariants.PipelineInvariants`."""
    probe = Probe(factory(errors))
    return Together(StreamRules(errors, lambda errors: probe.core, "decoder"),
                    PipelineInvariants(probe, "decoder"))


class DecoderAsciiForever(Elaboratable):
    """Property 2 of the one-lane :class:`~utf8_gateware.hdl.decoder.Utf8Decoder` for all time
    (``errors``; both modes pass, ``replace`` is in the suite): the outputs below U+0080 without
    error are exactly the ASCII bytes taken, in order (a :class:`TrackingScoreboard`: none lost,
    changed, reordered or invented), and the output stream rules. The invariants are
    :class:`~utf8_gateware.formal.invariants.PipelineInvariants`,
    :class:`~utf8_gateware.formal.decoder_invariants.DecoderInvariants` and the map from the
    scoreboard to the pipeline: the ASCII items pending are the ASCII bytes of the snapshots (stages
    A..E, the output slots) and, while ``adv`` is low, of the skid register's byte (a snapshot the
    harness keeps: the slot's byte, taken when the skid register takes the slot), in that order from
    the oldest (a byte's output is always in its own slot: bursts of errors and escapes are never
    ASCII); the tracked item is the byte where its ``ahead`` count says; the skid register holds an
    ASCII output exactly for an ASCII byte; a byte is in stage n only once the flush thermometer has
    cleared past it. (Bounded liveness stays with
    :class:`~utf8_gateware.formal.checks.DecoderProperties`.) ``wrap(core)`` returns the
    design under test made of the real core (a mutant, in the tests)."""
    def __init__(self, errors="replace", wrap=None):
        self.errors, self.wrap = errors, wrap or (lambda core: core)

    def elaborate(self, platform):
        m = Module()
        core = Utf8Decoder(self.errors)
        dut = self.wrap(core)
        probe = Probe(dut)
        m.submodules.dut = probe.fragment
        m.submodules.pipeline = PipelineInvariants(probe, "decoder")
        m.submodules.stages = stages = DecoderInvariants(probe, core, self.errors)
        i_xfer = drive_source(m, dut.i)
        o_xfer = drive_sink(m, dut.o)
        assert_stream_rules(m, dut.o, f"decoder({self.errors}).o")
        snaps = stages.snapshots
        m.submodules.ascii = ascii = TrackingScoreboard(7, 1, "ASCII bytes",
                                                        capacity=len(snaps) + 1)
        out_ascii = track_ascii(m, dut, i_xfer, o_xfer, ascii)

        # The skid register (offered while `adv` is low) and the byte whose output it holds;
        # stated on the core's own output.
        adv, out = probe["adv"], core.o.payload
        skid = SimpleNamespace(valid=Signal(name="skid_snap_valid"),
                               byte=Signal(8, name="skid_snap_byte"))
        with m.If(adv):
            m.d.sync += [skid.valid.eq(snaps[-1].valid & snaps[-1].fresh),
                         skid.byte.eq(snaps[-1].byte)]
        skid_ascii = skid.valid & (skid.byte < 0x80)
        skid_out = core.o.valid & (out.error == ErrorKind.NONE) & (out.codepoint < 0x80)
        m.d.comb += [
            Assert(adv | ~skid_ascii | (skid_out & (out.codepoint == skid.byte)),
                   "decoder: the skid register does not hold its ASCII byte's output"),
            Assert(adv | ~skid_out | skid_ascii,
                   "decoder: the skid register holds an ASCII output of no ASCII byte"),
        ]
        assert_flush_passed(m, [probe[f"fl{n}"] for n in range(len(probe.names("fl")))],
                            snaps, stages.names)
        # The places of the pending items, the oldest first.
        places = [(~adv & skid.valid, skid.byte)] + [(snap.valid & snap.fresh, snap.byte)
                                                     for snap in reversed(snaps)]
        older = Const(0, range(len(places) + 1))
        for n, (valid, byte) in enumerate(places):
            here = valid & (byte < 0x80)
            m.d.comb += Assert(~(ascii.tagged & here & (older == ascii.ahead)) |
                               (ascii.expected == byte[:7]),
                               f"ASCII bytes: the tracked item is not the byte in place {n}")
            older = older + here
        m.d.comb += [
            Assert(ascii.pending == older, "ASCII bytes: pending is not the ASCII bytes held"),
            Cover(o_xfer & out_ascii & ~adv),
            Cover(o_xfer & out_ascii & (ascii.pending == 3)),
        ]
        return m


class DecoderEquivalenceForever(DecoderEquivalence):
    """Property 3 (with 5 and bounded liveness) of the one-lane
    :class:`~utf8_gateware.hdl.decoder.Utf8Decoder` for all time:
    :class:`~utf8_gateware.formal.checks.DecoderEquivalence` (the same outputs as the spec
    model, nothing lost, duplicated, reordered or changed, under any input and backpressure)
    with a :class:`TrackingScoreboard`. The invariants:
    :class:`~utf8_gateware.formal.invariants.PipelineInvariants`,
    :class:`~utf8_gateware.formal.decoder_invariants.DecoderInvariants` (the stage registers)
    and :class:`~utf8_gateware.formal.decoder_invariants.SpecPlaces` (the spec's prefix and
    expected items on the pipeline's places). ``wrap(core)`` returns the design under test made
    of the real core (a mutant, in the tests)."""
    def __init__(self, errors="replace", wrap=None):
        super().__init__(errors)
        self.wrap = wrap or (lambda core: core)

    def elaborate(self, platform):
        core = Utf8Decoder(self.errors)
        probe = Probe(self.wrap(core))
        self.factory = lambda errors: probe.core
        stages = DecoderInvariants(probe, core, self.errors)
        # The places: every stage's slot and the skid register.
        self.scoreboard = partial(TrackingScoreboard, capacity=len(stages.snapshots) + 1)
        m = super().elaborate(platform)
        m.submodules.pipeline = PipelineInvariants(probe, "decoder")
        m.submodules.stages = stages
        m.submodules.places = SpecPlaces(probe, stages, self.spec, self.checkers)
        return m


# -- the list -------------------------------------------------------------------------------------

def _unbounded_proofs():
    short = {"surrogateescape": "escape"}
    return [
        Proof(f"encoder-forever-{short.get(errors, errors)}",
              f"Utf8Encoder({errors}) == SpecEncoder({errors}) for all time: the same beats "
              f"under any input and backpressure, 5, bounded liveness (invariants: "
              f"formal/shift_encoder_invariants.py)",
              "prove", 2, 10, lambda errors=errors: EncoderEquivalenceForever(errors), cost=10)
        for errors in ENCODE_ERRORS] + [
        Proof("decoder-rules-forever",
              "5: output stream rules of Utf8Decoder (both modes) for all time: valid holds and "
              "payload is stable until the transfer (invariants: formal/invariants.py "
              "PipelineInvariants)",
              "prove", 2, 12,
              lambda: Together(*(decoder_rules_forever(errors) for errors in DECODE_ERRORS)),
              cost=8),
        Proof("spec-roundtrips",
              "4a, 4b on the spec models for all time: SpecDecoder(replace) after "
              "SpecEncoder(replace) is the identity on scalar values; SpecEncoder("
              "surrogateescape) after SpecDecoder(surrogateescape) is the identity on bytes "
              "(with encoder-forever-* and decoder-spec-forever-*: the real cores' round trips "
              "for all time)",
              "prove", 2, 6, lambda: Together(SpecUnitsRoundTrip(), SpecBytesRoundTrip()),
              cost=5)]


#: The proofs of all time that are cheap enough for the ``formal`` marker (part of
#: :data:`~utf8_gateware.formal.checks.PROOFS`).
UNBOUNDED_PROOFS = _unbounded_proofs()

#: The proofs of all time that take longer (marker ``formal_long``,
#: ``tests/test_formal_induction.py``). Property 1 (the output forms) of the decoder for all time
#: follows from ``decoder-spec-forever-*`` (its outputs are the spec model's) and ``spec`` (the
#: spec model's outputs have those forms, for all time), as do property 2 (proven directly too
#: with surrogateescape, ``decoder-ascii-forever-escape``; with replace it passes as well, in
#: 16 s and a 12 s cover on the loaded machine, left out of the marker for its time) and, with
#: ``encoder-forever-*`` and ``spec-roundtrips``, the round trips 4a and 4b.
LONG_PROOFS = [
    Proof(f"decoder-ascii-forever-{ {'surrogateescape': 'escape'}.get(errors, errors)}",
          f"Utf8Decoder({errors}) for all time: 2 (the outputs below U+0080 are exactly the "
          f"ASCII bytes taken, in order: none lost, changed, reordered or invented), 5 (output "
          f"stream rules) (invariants: DecoderInvariants and the ASCII bytes' places in the "
          f"pipeline)",
          "prove", 2, Utf8Decoder.latency(errors) + 8,
          lambda errors=errors: DecoderAsciiForever(errors), cost=20)
    for errors in ("surrogateescape",)] + [
    Proof(f"decoder-spec-forever-{ {'surrogateescape': 'escape'}.get(errors, errors)}",
          f"Utf8Decoder({errors}) == SpecDecoder({errors}) for all time: 3 (the same output "
          f"sequence under any input and backpressure: nothing lost, duplicated, reordered or "
          f"changed), 5, bounded liveness (invariants: DecoderInvariants and SpecPlaces, the "
          f"spec's prefix and expected items on the pipeline's places)",
          "prove", 2, 14, lambda errors=errors: DecoderEquivalenceForever(errors),
          cost=25 if errors == "replace" else 100)
    for errors in DECODE_ERRORS]

#: The bounded proofs that :data:`UNBOUNDED_PROOFS` and :data:`LONG_PROOFS` prove for all time
#: (so they are dropped from :data:`~utf8_gateware.formal.checks.PROOFS`): both cores'
#: equivalence with their spec models and the output stream rules of both cores.
SUBSUMED = ("rules", *(f"encoder-spec-{mode}" for mode in ("replace", "strict", "escape")),
            "decoder-spec-replace", "decoder-spec-escape")

