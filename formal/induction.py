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

Each is proven with ``sby`` ``mode prove``: by IC3/PDR (``abc pdr``), which finds the inductive
invariants on the cores' private registers itself, or by k-induction (``smtbmc``) with the
invariants stated in :mod:`utf8_gateware.formal.invariants`. :data:`INDUCTION_PROOFS` lists them
(marker ``formal_long``).
"""

from amaranth.asserts import AnySeq
from amaranth.hdl import Array, Assert, Cover, Elaboratable, Module, Signal

from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.encoder import Utf8Encoder
from utf8_gateware.hdl.error_kind import DECODE_ERRORS, ENCODE_ERRORS, ErrorKind
from utf8_gateware.hdl.layouts import EncodedByteLayout
from .checks import (Proof, QuietCounter, Together, _bits, assert_stream_rules, drive_sink,
                     drive_source)
from .invariants import EncoderInvariants, PipelineInvariants, Probe
from .spec_encoder import SpecEncoder


__all__ = ["TrackingScoreboard", "check_against_spec", "EncoderEquivalenceForever",
           "DecoderRulesForever", "UNBOUNDED_PROOFS", "SUBSUMED"]


class TrackingScoreboard(Elaboratable):
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
        self.shape, self.push_width, self.name = shape, push_width, name
        self.capacity = capacity
        width = (capacity + push_width).bit_length()
        self.push_count = Signal(range(push_width + 1))
        self.push_items = [Signal(shape, name=f"push_{n}") for n in range(push_width)]
        self.offer = Signal()
        self.offer_item = Signal(shape)
        self.pop = Signal()
        self.pending = Signal(width)
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


def check_against_spec(m, dut, spec, *, item_shape, capacity, drain, name):
    """Property 3 and 5 for all time: :func:`~utf8_gateware.formal.checks.check_against_spec`
    with a :class:`TrackingScoreboard` that holds at most ``capacity`` items."""
    i_xfer = drive_source(m, dut.i)
    o_xfer = drive_sink(m, dut.o)
    held = assert_stream_rules(m, dut.o, f"{name}.o")
    m.d.comb += [spec.i.valid.eq(i_xfer), spec.i.payload.eq(dut.i.payload)]

    m.submodules.scoreboard = scoreboard = TrackingScoreboard(item_shape, 4, name,
                                                              capacity=capacity)
    m.d.comb += [
        scoreboard.push_count.eq(spec.o.count),
        *[scoreboard.push_items[n].eq(spec.o.items[n]) for n in range(4)],
        scoreboard.offer.eq(dut.o.valid),
        scoreboard.offer_item.eq(dut.o.payload),
        scoreboard.pop.eq(o_xfer),
    ]
    quiet = QuietCounter(drain)
    m.d.comb += quiet.quiet.eq(dut.o.ready & ~i_xfer)
    m.d.comb += Assert(~quiet.expired | ((scoreboard.pending == 0) &
                                         (~dut.i.valid | dut.i.ready)),
                       f"{name}: outputs pending or input refused {drain} cycles after the "
                       f"last input, with the sink ready")
    return {"i_xfer": i_xfer, "o_xfer": o_xfer, "held": held, "scoreboard": scoreboard,
            "quiet": quiet}


class EncoderEquivalenceForever(Elaboratable):
    """:class:`~utf8_gateware.formal.checks.EncoderEquivalence` for all time, by k-induction
    with :class:`~utf8_gateware.formal.invariants.EncoderInvariants` (``factory(errors)`` makes
    the core; ``capacity``: the most beats it holds)."""
    def __init__(self, errors, factory=Utf8Encoder, *, capacity=10):
        self.errors, self.factory, self.capacity = errors, factory, capacity

    def elaborate(self, platform):
        m = Module()
        dut = self.factory(self.errors)
        probe = Probe(dut)
        m.submodules.dut = probe.fragment
        m.submodules.spec = spec = SpecEncoder(self.errors)
        s = check_against_spec(m, dut, spec, item_shape=EncodedByteLayout,
                               capacity=self.capacity, drain=dut.DRAIN, name="encoder")
        quiet = Probe(s["quiet"])
        m.submodules.quiet = quiet.fragment
        m.submodules.invariants = EncoderInvariants(probe, dut, s["scoreboard"], quiet["count"])
        out = dut.o.payload
        m.d.comb += [
            Cover(s["o_xfer"] & (out.data >= 0xF0) & (out.data < 0xF5) &
                  (out.error == ErrorKind.NONE)),
            Cover(s["o_xfer"] & (out.error == ErrorKind.SURROGATE)),
            Cover(s["o_xfer"] & (out.error == ErrorKind.TOO_LARGE)),
            Cover(s["o_xfer"] & s["held"] & out.last),
            Cover(dut.i.valid & ~dut.i.ready),
            Cover(s["scoreboard"].pending == self.capacity),
        ]
        return m


class DecoderRulesForever(Elaboratable):
    """Property 5's stream rules of :class:`~utf8_gateware.hdl.decoder.Utf8Decoder` for all
    time (:class:`~utf8_gateware.formal.checks.StreamRules` with
    :class:`~utf8_gateware.formal.invariants.PipelineInvariants`)."""
    def __init__(self, errors, factory=Utf8Decoder):
        self.errors, self.factory = errors, factory

    def elaborate(self, platform):
        m = Module()
        dut = self.factory(self.errors)
        probe = Probe(dut)
        m.submodules.dut = probe.fragment
        m.submodules.invariants = PipelineInvariants(probe, "decoder")
        drive_source(m, dut.i)
        o_xfer = drive_sink(m, dut.o)
        held = assert_stream_rules(m, dut.o, f"decoder({self.errors}).o")
        m.d.comb += [
            Cover(held & o_xfer & dut.o.payload.last),
            Cover(dut.i.valid & ~dut.i.ready),
        ]
        return m


# -- the list -------------------------------------------------------------------------------------

def _unbounded_proofs():
    short = {"surrogateescape": "escape"}
    return [
        Proof(f"encoder-forever-{short.get(errors, errors)}",
              f"Utf8Encoder({errors}) == SpecEncoder({errors}) for all time: the same beats "
              f"under any input and backpressure, 5, bounded liveness (invariants: "
              f"formal/invariants.py EncoderInvariants)",
              "prove", 2, 10, lambda errors=errors: EncoderEquivalenceForever(errors), cost=10)
        for errors in ENCODE_ERRORS] + [
        Proof("decoder-rules-forever",
              "5: output stream rules of Utf8Decoder (both modes) for all time: valid holds and "
              "payload is stable until the transfer (invariants: formal/invariants.py "
              "PipelineInvariants)",
              "prove", 2, 12,
              lambda: Together(*(DecoderRulesForever(errors) for errors in DECODE_ERRORS)),
              cost=8)]


#: The proofs of all time that are cheap enough for the ``formal`` marker (part of
#: :data:`~utf8_gateware.formal.checks.PROOFS`).
UNBOUNDED_PROOFS = _unbounded_proofs()

#: The bounded proofs that :data:`UNBOUNDED_PROOFS` prove for all time (so they are dropped from
#: :data:`~utf8_gateware.formal.checks.PROOFS`): the encoder's equivalence with its spec model
#: and the output stream rules of both cores.
SUBSUMED = ("rules", *(f"encoder-spec-{mode}" for mode in ("replace", "strict", "escape")))
