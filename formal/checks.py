"""Formal properties of the UTF-8 cores: harnesses for :mod:`utf8_gateware.formal.runner`.

Every harness drives the inputs of the design under test from :class:`~amaranth.hdl.AnySeq`
(the solver chooses them freely in every cycle; the input stream is only constrained by the
stream rules, which a transmitter must keep) and holds the output ``ready`` as another free
input. Each states its property with :func:`~amaranth.hdl.Assert` and proves that it is not
vacuous with :func:`~amaranth.hdl.Cover` s that a ``cover`` run must reach.

:data:`PROOFS` lists the proofs (name, statement, method, depth). The building blocks
(:func:`drive_source`, :func:`assert_stream_rules`, :class:`Scoreboard`, ...) are public so that
tests can build variants, e.g. with a mutated core.
"""

from dataclasses import dataclass

from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import (Array, Assert, Assume, Cat, Cover, Elaboratable, Module, Mux,
                          Signal)
from amaranth.lib import data

from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.encoder import Utf8Encoder
from utf8_gateware.hdl.error_kind import DECODE_ERRORS, ENCODE_ERRORS, ErrorKind
from utf8_gateware.hdl.layouts import ByteLayout, CodepointLayout, EncodedByteLayout
from utf8_gateware.hdl.validator import Utf8Validator, verdict_layout
from .runner import FormalJob
from .spec_decoder import MAX_OUTPUTS_PER_BYTE, SpecDecoder
from .spec_encoder import SpecEncoder, utf8_bytes, utf8_length
from .spec_validator import SpecValidator


__all__ = [
    "drive_source", "drive_sink", "assert_stream_rules", "assert_decoded_item",
    "utf8_length", "utf8_bytes", "Scoreboard", "QuietCounter", "assert_drained",
    "assert_identity", "track_ascii", "assume_beat_count", "ValidatorEquivalence",
    "SpecDecoderProperties", "DecoderProperties", "DecoderEquivalence",
    "EncoderEquivalence", "StreamRules", "Together", "EncoderDecoderRoundTrip",
    "DecoderEncoderRoundTrip", "check_scalar_round_trip",
    "check_against_spec",
    "Proof", "PROOFS",
]


# -- building blocks ------------------------------------------------------------------------------

def _bits(view):
    return view.as_value() if hasattr(view, "as_value") else view


def drive_source(m, port, *, rules=True, name="i"):
    """Drive the input stream ``port`` of a core (``valid`` and ``payload``) from ``AnySeq``.

    With ``rules`` (the default) the solver must keep the stream rules a transmitter has to keep:
    once ``valid`` is high without ``ready``, ``valid`` and ``payload`` hold until the transfer.
    Returns the transfer strobe (``valid & ready``).
    """
    width = len(_bits(port.payload))
    m.d.comb += [port.valid.eq(AnySeq(1)), _bits(port.payload).eq(AnySeq(width))]
    if rules:
        held = Signal(name=f"{name}_held")
        held_payload = Signal(width, name=f"{name}_held_payload")
        m.d.sync += [held.eq(port.valid & ~port.ready), held_payload.eq(_bits(port.payload))]
        m.d.comb += Assume(~held | (port.valid & (_bits(port.payload) == held_payload)))
    transfer = Signal()
    m.d.comb += transfer.eq(port.valid & port.ready)
    return transfer


def drive_sink(m, port):
    """Hold the output stream ``port``'s ``ready`` as a free input; returns its transfer strobe."""
    m.d.comb += port.ready.eq(AnySeq(1))
    transfer = Signal()
    m.d.comb += transfer.eq(port.valid & port.ready)
    return transfer


def assert_stream_rules(m, port, name):
    """Assert the transmitter's stream rules on the output stream ``port``: once ``valid`` is
    high and ``ready`` low, ``valid`` stays high and ``payload`` is unchanged in the next cycle.
    (That ``valid`` does not depend on ``ready`` within a cycle is checked structurally, with
    :func:`~utf8_gateware.formal.runner.combinational_paths`.)"""
    width = len(_bits(port.payload))
    held = Signal(name=f"{name.replace('.', '_')}_held")
    held_payload = Signal(width, name=f"{name.replace('.', '_')}_held_payload")
    m.d.sync += [held.eq(port.valid & ~port.ready), held_payload.eq(_bits(port.payload))]
    m.d.comb += [
        Assert(~held | port.valid, f"{name}.valid fell before the transfer"),
        Assert(~held | (_bits(port.payload) == held_payload),
               f"{name}.payload changed before the transfer"),
    ]
    return held


def assert_decoded_item(m, en, item, errors, *, surrogates=False):
    """Property 1 on one decoder output ``item`` (a :data:`CodepointLayout` view), when ``en``:
    without error it is a Unicode scalar value (not a surrogate, at most U+10FFFF; with
    ``surrogates``, as for Modified UTF-8 and WTF-8, any code point up to U+10FFFF); with an
    error it is U+FFFD (``errors="replace"``) or an escape U+DC80..U+DCFF
    (``"surrogateescape"``)."""
    cp, ok = item.codepoint, item.error == ErrorKind.NONE
    scalar = (cp <= 0x10FFFF)
    if not surrogates:
        scalar &= ~((cp >= 0xD800) & (cp <= 0xDFFF))
    if errors == "replace":
        error_form = cp == 0xFFFD
    else:
        error_form = (cp >= 0xDC80) & (cp <= 0xDCFF)
    m.d.comb += [
        Assert(~en | ~ok | scalar, "a decoded output is not a scalar value"),
        Assert(~en | ok | error_form, f"an error output is not {errors}'s form"),
    ]


class Scoreboard(Elaboratable):
    """Checks a core's output sequence against the expected one, tracking one item chosen by
    the solver (the classic way to verify a pipeline or FIFO without modelling a whole queue).

    Expected items are *pushed* in ``groups`` groups a cycle (in order: group 0 first), each of
    up to ``push_width`` items: ``push_counts[g]`` and ``push_groups[g][0..]`` (with one group,
    ``push_count`` and ``push_items`` name them). The core *offers* items and *pops* them with
    its output transfer. With ``offer_width`` = 1: ``offer``/``offer_item`` (its output
    ``valid``/``payload``) and ``pop``. With more (a multi-lane core): ``offers`` (one flag per
    lane: the beat is offered and the lane holds an item), ``offer_items`` and ``pop`` (the
    beat's transfer pops its valid lanes; read in lane order). Counters number the items on
    both sides. Asserted every cycle:

    * the core offers nothing that has not been pushed (no extra or duplicated item);
    * the item the core offers with the number ``index`` -- a free constant (``AnyConst``), so
      the proof holds for every item -- equals the expected item with that number (no item lost,
      reordered or changed).

    ``pending`` is the number of pushed items not yet popped; ``width`` bounds the counters
    (the proof depth times the items pushed per cycle must stay below ``2**width``). The
    messages name the check ``name``.
    """
    def __init__(self, shape, push_width, name, *, groups=1, width=9, offer_width=1):
        self.shape, self.push_width, self.name, self.width = shape, push_width, name, width
        self.offer_width = offer_width
        self.push_counts = [Signal(range(push_width + 1), name=f"push_count_{g}")
                            for g in range(groups)]
        self.push_groups = [[Signal(shape, name=f"push_{g}_{n}") for n in range(push_width)]
                            for g in range(groups)]
        if groups == 1:
            self.push_count, self.push_items = self.push_counts[0], self.push_groups[0]
        if offer_width == 1:
            self.offer = Signal()
            self.offer_item = Signal(shape)
        else:
            self.offers = Signal(offer_width)
            self.offer_items = [Signal(shape, name=f"offer_{n}") for n in range(offer_width)]
        self.pop = Signal()
        self.pending = Signal(width)

    def elaborate(self, platform):
        m = Module()
        if self.offer_width == 1:
            offers, offer_items = [self.offer], [self.offer_item]
        else:
            offers, offer_items = list(self.offers), self.offer_items
        index = Signal(self.width)
        m.d.comb += index.eq(AnyConst(self.width))
        produced = Signal(self.width)  # items pushed before this cycle
        consumed = Signal(self.width)  # items popped before this cycle
        pushed = Signal(self.width)    # items pushed in this cycle
        m.d.comb += pushed.eq(sum(self.push_counts))
        offered = sum(offers)
        m.d.sync += [produced.eq(produced + pushed),
                     consumed.eq(consumed + Mux(self.pop, offered, 0))]
        m.d.comb += self.pending.eq(produced - consumed)

        # The expected item number `index`: captured when pushed, or pushed in this cycle (in
        # the one group whose items it numbers).
        captured = Signal()
        expected = Signal(self.shape)
        now = Signal(self.shape)
        pushed_now = Signal()
        select = max(1, (self.push_width - 1).bit_length())
        base = produced
        for g, (count, items) in enumerate(zip(self.push_counts, self.push_groups)):
            offset = Signal(self.width, name=f"offset_{g}")
            m.d.comb += offset.eq(index - base)
            with m.If(offset < count):
                m.d.comb += [pushed_now.eq(1), now.eq(Array(items)[offset[:select]])]
            base = base + count
        with m.If(pushed_now):
            m.d.sync += [captured.eq(1), expected.eq(now)]

        for lane, (offer, item) in enumerate(zip(offers, offer_items)):
            before = sum(offers[:lane]) if lane else 0     # its number among the beat's items
            m.d.comb += [
                Assert(~offer | (self.pending + pushed > before),
                       f"{self.name}: an output that nothing expected corresponds to"),
                Assert(~(offer & (consumed + before == index)) |
                       (_bits(item) == Mux(captured, _bits(expected), _bits(now))),
                       f"{self.name}: an output differs from the expected one"),
            ]
        most = len(self.push_counts) * self.push_width
        m.d.comb += Assert(produced < (1 << self.width) - 2 * most,
                           f"{self.name}: counters too narrow for the proof depth")
        return m


class QuietCounter(Elaboratable):
    """Counts consecutive cycles in which ``quiet`` was high (``count``), saturating at
    ``bound``; ``expired`` is high once ``bound`` such cycles have passed (for bounded
    liveness)."""
    def __init__(self, bound):
        self.bound = bound
        self.quiet = Signal()
        self.expired = Signal()
        self.count = Signal(range(bound + 1))

    def elaborate(self, platform):
        m = Module()
        count = self.count
        with m.If(~self.quiet):
            m.d.sync += count.eq(0)
        with m.Elif(count != self.bound):
            m.d.sync += count.eq(count + 1)
        m.d.comb += self.expired.eq(count == self.bound)
        return m


def assert_drained(m, ready, i_xfer, drained, drain, message):
    """Bounded liveness: once ``drain`` consecutive cycles passed with the sink ``ready`` and no
    input taken (``i_xfer`` low), ``drained`` must hold (``message`` names the failure).
    Returns the :class:`QuietCounter`."""
    m.submodules.quiet = quiet = QuietCounter(drain)
    m.d.comb += [quiet.quiet.eq(ready & ~i_xfer), Assert(~quiet.expired | drained, message)]
    return quiet


def assert_identity(m, sink, *, i_xfer, o_xfer, layout, inputs, outputs, error, drain, name,
                    waiting=0):
    """The items of the output stream ``sink`` (fields ``outputs``, a dict of ``layout``'s
    fields) are the items taken from the input (strobe ``i_xfer``, fields ``inputs``), in order
    (a :class:`Scoreboard`); none flags an ``error`` (a value that must be ``NONE``); none is
    left pending ``drain`` quiet cycles after the last input, but the last one while
    ``waiting`` is high (an item that rightly waits for the next one). ``name`` names the
    chain."""
    m.submodules.scoreboard = scoreboard = Scoreboard(layout, 1, name)
    m.d.comb += [
        scoreboard.push_count.eq(i_xfer), scoreboard.offer.eq(sink.valid),
        scoreboard.pop.eq(o_xfer),
        *[getattr(scoreboard.push_items[0], field).eq(value) for field, value in inputs.items()],
        *[getattr(scoreboard.offer_item, field).eq(value) for field, value in outputs.items()],
        Assert(~sink.valid | (error == ErrorKind.NONE), f"{name}: an error was flagged"),
    ]
    assert_drained(m, sink.ready, i_xfer,
                   (scoreboard.pending == 0) | (waiting & (scoreboard.pending == 1)), drain,
                   f"{name}: items pending {drain} cycles after the last input")


def track_ascii(m, dut, i_xfer, o_xfer, scoreboard, *, pushed=None, value=None):
    """Property 2's checker on a decoder ``dut``: ``scoreboard`` (of 7-bit items) expects the
    ASCII bytes taken (strobe ``i_xfer``; ``pushed``/``value``: which bytes count and as what,
    by default the bytes below 0x80 as they are) and takes the outputs below U+0080 without
    error (strobe ``o_xfer``). Returns whether the output offered is such an output."""
    byte, out = dut.i.payload.data, dut.o.payload
    out_ascii = Signal()
    m.d.comb += [
        out_ascii.eq((out.error == ErrorKind.NONE) & (out.codepoint < 0x80)),
        scoreboard.push_count.eq(i_xfer & ((byte < 0x80) if pushed is None else pushed)),
        scoreboard.push_items[0].eq(byte if value is None else value),
        scoreboard.offer.eq(dut.o.valid & out_ascii),
        scoreboard.offer_item.eq(out.codepoint),
        scoreboard.pop.eq(o_xfer & out_ascii),
    ]
    return out_ascii


def assume_beat_count(m, core):
    """With several lanes, a transmitter offers beats of 1..N bytes (``count``); a one-lane
    core has no ``count``."""
    if getattr(core, "lanes", 1) > 1:
        count = core.i.payload.count
        m.d.comb += Assume(~core.i.valid | ((count >= 1) & (count <= core.lanes)))


def decoder_drain(decoder):
    """Quiet cycles (sink ready, no input) after which ``decoder`` has nothing pending: its
    :attr:`LATENCY` plus one."""
    return decoder.LATENCY + 1


def _decoder(errors):
    return Utf8Decoder(errors=errors)


def _encoder(errors):
    return Utf8Encoder(errors=errors)


# -- the specification model on its own (k-induction) ---------------------------------------------

class SpecDecoderProperties(Elaboratable):
    """Properties 1, 2 (and, with surrogateescape, the byte side of 4) of :class:`SpecDecoder`,
    for every byte stream, by k-induction (k = 2) with invariants on its pending prefix.

    Every cycle, for the byte ``b`` offered (the model is always ready) and its outputs:

    * the pending prefix is well-formed: a lead C2..F4 and allowed continuation bytes, shorter
      than its sequence (the induction invariant);
    * property 1: each output without error is a scalar value and is the shortest form of the
      bytes it consumed (the prefix and ``b``: no overlong, no surrogate, nothing above
      U+10FFFF); each error output is U+FFFD / an escape;
    * property 2: if ``b`` is ASCII, the last output for it is ``b`` without error; no other
      output is ASCII;
    * ``last``: a byte with ``last`` ends with an output carrying ``last`` and leaves no prefix;
      no other output carries ``last``;
    * with surrogateescape: the outputs re-encode (scalars to UTF-8, escapes to their byte) to
      exactly the bytes retired in this cycle (decoder then encoder is the identity on bytes).
    """
    def __init__(self, errors, factory=SpecDecoder):
        self.errors, self.factory = errors, factory

    def elaborate(self, platform):
        m = Module()
        m.submodules.spec = spec = self.factory(self.errors)
        drive_source(m, spec.i, rules=False)
        b, last, valid = spec.i.payload.data, spec.i.payload.last, spec.i.valid
        k, buf, count, items = spec.k, spec.buf, spec.o.count, spec.o.items

        # Induction invariant: the pending prefix is a proper prefix of a well-formed sequence.
        lead = buf[0]
        length = Mux(lead < 0xE0, 2, Mux(lead < 0xF0, 3, 4))
        lo = Mux(lead == 0xE0, 0xA0, Mux(lead == 0xF0, 0x90, 0x80))
        hi = Mux(lead == 0xED, 0x9F, Mux(lead == 0xF4, 0x8F, 0xBF))
        m.d.comb += [
            Assert((k == 0) | ((lead >= 0xC2) & (lead <= 0xF4) & (k < length)),
                   "pending prefix: bad lead or too long"),
            Assert((k < 2) | ((buf[1] >= lo) & (buf[1] <= hi)), "pending prefix: bad 2nd byte"),
            Assert((k < 3) | ((buf[2] >= 0x80) & (buf[2] <= 0xBF)),
                   "pending prefix: bad 3rd byte"),
            Assert(valid | (count == 0), "outputs without a byte"),
        ]

        retired = [buf[j] for j in range(3)] + [b]  # the bytes outputs can stand for
        for index in range(MAX_OUTPUTS_PER_BYTE):
            item = items[index]
            en = valid & (index < count)
            ok = item.error == ErrorKind.NONE
            assert_decoded_item(m, en, item, self.errors)
            m.d.comb += [
                # Property 2: no ASCII output but `b` itself, as the last output for `b`.
                Assert(~en | ~ok | (item.codepoint >= 0x80) |
                       ((count == index + 1) & (item.codepoint == b)),
                       "an ASCII output that is not the input byte"),
                Assert(~(valid & (b < 0x80) & (count == index + 1)) |
                       (ok & (item.codepoint == b)), "an ASCII byte was not output"),
                Assert(~en | ~item.last | ((count == index + 1) & last),
                       "`last` on an output that does not end the message"),
                Assert(~(valid & last & (count == index + 1)) | item.last,
                       "the last output of a message lacks `last`"),
            ]
            if index == 0:
                # A multi-byte scalar is the only output for its byte and the shortest form of
                # the pending prefix and `b`.
                multi = en & ok & (item.codepoint >= 0x80)
                m.d.comb += Assert(~multi | ((count == 1) & (k != 0) &
                                             (utf8_length(item.codepoint) == k + 1)),
                                   "a scalar from a form of the wrong length (overlong?)")
                for n in (1, 2, 3):
                    form = Cat(*utf8_bytes(item.codepoint, n + 1))
                    m.d.comb += Assert(~multi | (k != n) | (form == Cat(*retired[:n], b)),
                                       "a scalar is not the UTF-8 form of the bytes consumed")
            if self.errors == "surrogateescape":
                # Escapes stand for the prefix's bytes, then `b`, in order.
                source = Array(retired[:3] + [b])[Mux(index < k, index, 3)]
                m.d.comb += Assert(~en | ok | ((index <= k) & (item.codepoint[:8] == source)),
                                   "an escape is not the byte it stands for")
        m.d.comb += Assert(~(valid & ((b < 0x80) | last)) | (count != 0),
                           "an ASCII byte or the end of a message produced no output")

        if self.errors == "surrogateescape":
            # Decoder then encoder is the identity: the bytes re-encoded from this cycle's
            # outputs are the prefix and `b`, except for what stays pending (checked next cycle,
            # when the new prefix length is known).
            multi = valid & (count != 0) & (items[0].error == ErrorKind.NONE) & \
                    (items[0].codepoint >= 0x80)
            encoded_length = Mux(multi, k + 1, count)
            prev_valid, prev_k = Signal(), Signal(range(4))
            prev_length = Signal(range(5))
            m.d.sync += [prev_valid.eq(valid), prev_k.eq(k), prev_length.eq(encoded_length)]
            m.d.comb += Assert(~prev_valid | (prev_length + k == prev_k + 1),
                               "the outputs do not re-encode to the bytes retired")

        # Not vacuous: a 4-byte scalar, a 3-byte one that ends a message, a surrogate and an
        # overlong form refused, the widest burst of outputs for one byte.
        m.d.comb += [
            Cover(valid & (count == 1) & (items[0].error == ErrorKind.NONE) &
                  (items[0].codepoint >= 0x10000)),
            Cover(valid & (count == 1) & (items[0].error == ErrorKind.NONE) &
                  (items[0].codepoint >= 0x800) & (items[0].codepoint < 0x10000) & last),
            Cover(valid & (count != 0) & (items[0].error == ErrorKind.SURROGATE)),
            Cover(valid & (count != 0) & (items[0].error == ErrorKind.OVERLONG) & (k == 1)),
            Cover(valid & (count == (4 if self.errors == "surrogateescape" else 2)) & last &
                  (items[0].error == ErrorKind.TRUNCATED)),
        ]
        return m


# -- the real cores -------------------------------------------------------------------------------

def check_against_spec(m, dut, spec, *, item_shape, drain, name, rules=True,
                       scoreboard=Scoreboard):
    """Property 3 (and 5) for a core ``dut`` with stream ports ``i``/``o``: its output sequence
    is the one the unpipelined ``spec`` model produces for the items ``dut`` accepts.

    ``spec`` is fed each item (or beat) in the cycle ``dut`` takes it; its outputs are the
    expected sequence of a :class:`Scoreboard`, which every item ``dut`` offers must follow (so
    nothing is lost, duplicated, reordered or changed; with several output lanes, the valid
    lanes in lane order, the beat's ``last`` on its last valid lane). The output stream rules
    are asserted. Bounded liveness: after ``drain`` cycles with the sink ready and no input
    taken, nothing is pending and offered input is taken. ``scoreboard(item_shape, n,
    name=name, ...)`` makes the checker (one lane: ``n`` = the spec's outputs per item). Returns
    a dict of the strobes for covers and the checkers.
    """
    i_xfer = drive_source(m, dut.i, rules=rules)
    o_xfer = drive_sink(m, dut.o)
    held = assert_stream_rules(m, dut.o, f"{name}.o")
    m.d.comb += [spec.i.valid.eq(i_xfer), spec.i.payload.eq(dut.i.payload)]

    lanes = getattr(dut, "lanes", 1)
    groups = [spec.o] if lanes == 1 else list(spec.o)    # the outputs of each byte in turn
    wide = {} if lanes == 1 else {"groups": len(groups), "offer_width": lanes,
                                  "width": (64 * len(groups) * len(groups[0].items)).bit_length()}
    m.submodules.scoreboard = scoreboard = scoreboard(item_shape, len(groups[0].items),
                                                      name=name, **wide)
    for group, count, items in zip(groups, scoreboard.push_counts, scoreboard.push_groups):
        m.d.comb += [count.eq(group.count),
                     *[item.eq(spec_item) for item, spec_item in zip(items, group.items)]]
    m.d.comb += scoreboard.pop.eq(o_xfer)
    if lanes == 1:
        m.d.comb += [scoreboard.offer.eq(dut.o.valid), scoreboard.offer_item.eq(dut.o.payload)]
    else:
        out = dut.o.payload
        # A beat may have empty lanes (a partial beat inside a pending sequence may even be
        # all empty), but not the one with `last`: its `last` belongs to its last valid lane.
        m.d.comb += Assert(~dut.o.valid | ~out.last |
                           (Cat(*(lane.valid for lane in out.lanes)) != 0),
                           f"{name}: a beat with `last` and no valid lane")
        for k, lane in enumerate(out.lanes):
            later = Cat(*(other.valid for other in out.lanes[k + 1:]))
            m.d.comb += [
                scoreboard.offers[k].eq(dut.o.valid & lane.valid),
                scoreboard.offer_items[k].codepoint.eq(lane.codepoint),
                scoreboard.offer_items[k].error.eq(lane.error),
                scoreboard.offer_items[k].last.eq(out.last & (later == 0)),
            ]

    quiet = assert_drained(m, dut.o.ready, i_xfer,
                           (scoreboard.pending == 0) & (~dut.i.valid | dut.i.ready), drain,
                           f"{name}: outputs pending or input refused {drain} cycles after the "
                           f"last input, with the sink ready")
    return {"i_xfer": i_xfer, "o_xfer": o_xfer, "held": held, "scoreboard": scoreboard,
            "quiet": quiet}


class DecoderEquivalence(Elaboratable):
    """Property 3: :class:`~utf8_gateware.hdl.decoder.Utf8Decoder` produces exactly the outputs
    of :class:`SpecDecoder` (which is checked against the reference model and CPython in
    simulation), under arbitrary input and backpressure; plus the output stream rules and
    bounded liveness (see :func:`check_against_spec`). With ``lanes`` = N, the N-lane decoder
    against the byte-serial model taking each beat's bytes in turn: the same outputs, in lane
    and beat order, for any beats (partial ones included).

    ``factory(errors)`` makes the core (a test can pass a mutated one); ``scoreboard`` the
    checker (see :func:`check_against_spec`). Once elaborated, :attr:`checkers` are its
    checkers and :attr:`spec` the model.
    """
    def __init__(self, errors, factory=None, *, lanes=1, drain=None, rules=True,
                 scoreboard=Scoreboard):
        self.errors, self.factory, self.lanes = errors, factory, lanes
        self.drain, self.rules, self.scoreboard = drain, rules, scoreboard
        self.checkers = self.spec = None

    def elaborate(self, platform):
        m = Module()
        if self.factory is not None:
            dut = self.factory(self.errors)
        else:
            dut = Utf8Decoder(errors=self.errors, lanes=self.lanes)
        m.submodules.dut = dut
        m.submodules.spec = spec = self.spec = SpecDecoder(self.errors, lanes=self.lanes)
        assume_beat_count(m, dut)
        s = self.checkers = check_against_spec(m, dut, spec, item_shape=CodepointLayout,
                                               drain=self.drain or decoder_drain(dut),
                                               name="decoder", rules=self.rules,
                                               scoreboard=self.scoreboard)
        if self.lanes == 1:
            out = dut.o.payload
            m.d.comb += [
                Cover(s["o_xfer"] & (out.error == ErrorKind.NONE) &
                      (out.codepoint >= 0x10000)),
                Cover(s["o_xfer"] & (out.error == ErrorKind.OVERLONG)),
                Cover(s["o_xfer"] & s["held"] & out.last),
                Cover(dut.i.valid & ~dut.i.ready),
                Cover(s["i_xfer"] & (spec.o.count ==
                                     (4 if self.errors == "surrogateescape" else 2))),
            ]
        else:
            out, beat = dut.o.payload, dut.i.payload
            m.d.comb += [
                # A 4-byte scalar split across beats (it ends in lane 0), an error in the last
                # lane inside a message and one ending it, a partial beat ending a message, the
                # sink holding the last beat, more outputs than lanes for one beat.
                Cover(s["o_xfer"] & out.lanes[0].valid & (out.lanes[0].error == ErrorKind.NONE) &
                      (out.lanes[0].codepoint >= 0x10000)),
                Cover(s["o_xfer"] & out.lanes[-1].valid &
                      (out.lanes[-1].error != ErrorKind.NONE) & ~out.last),
                Cover(s["o_xfer"] & out.lanes[-1].valid &
                      (out.lanes[-1].error == ErrorKind.TRUNCATED) & out.last),
                Cover(s["i_xfer"] & beat.last & (beat.count == 1)),
                Cover(s["held"] & out.last),
                Cover(s["i_xfer"] & (sum(s["scoreboard"].push_counts) > self.lanes)),
            ]
        return m


class ValidatorEquivalence(Elaboratable):
    """:class:`~utf8_gateware.hdl.validator.Utf8Validator` (``lanes``, ``counter_width``) gives
    the verdict of :class:`~utf8_gateware.formal.spec_validator.SpecValidator` (the byte-serial
    spec decoder read as a verdict) for every message, under arbitrary input (partial beats, junk
    in the lanes past ``count``, ``last`` in any lane) and backpressure: ``valid``, ``offset``
    (of the first maximal subpart's first byte), ``error`` (its kind) and ``errors`` (the number
    of maximal subparts), the counters saturating; one verdict per message, in order, nothing
    else (a :class:`Scoreboard`). Plus the output stream rules and bounded liveness. Only the
    core's ports and documented contract are used, not its internals. ``factory()`` makes the
    core (a test can pass a mutated one)."""
    def __init__(self, lanes=4, factory=None, *, counter_width=8, drain=None, rules=True):
        self.lanes, self.factory, self.counter_width = lanes, factory, counter_width
        self.drain, self.rules = drain, rules

    def elaborate(self, platform):
        m = Module()
        width, n = self.counter_width, self.lanes
        if self.factory is not None:
            dut = self.factory()
        else:
            dut = Utf8Validator(lanes=n, counter_width=width)
        m.submodules.dut = dut
        # The model's own counters need only outgrow the core's (BMC depths stay far below).
        m.submodules.spec = spec = SpecValidator(lanes=n, counter_width=width,
                                                 length_width=width + 2)
        assume_beat_count(m, dut)
        i_xfer = drive_source(m, dut.i, rules=self.rules)
        o_xfer = drive_sink(m, dut.o)
        held = assert_stream_rules(m, dut.o, "validator.o")
        beat = dut.i.payload
        m.d.comb += [spec.i.valid.eq(i_xfer), spec.i.payload.eq(beat)]

        m.submodules.scoreboard = scoreboard = Scoreboard(verdict_layout(width), 1, "validator")
        m.d.comb += [
            scoreboard.push_count.eq(spec.done),
            scoreboard.push_items[0].eq(spec.o),
            scoreboard.offer.eq(dut.o.valid),
            scoreboard.offer_item.eq(dut.o.payload),
            scoreboard.pop.eq(o_xfer),
        ]
        drain = self.drain or dut.LATENCY + 1
        assert_drained(m, dut.o.ready, i_xfer,
                       (scoreboard.pending == 0) & (~dut.i.valid | dut.i.ready), drain,
                       f"validator: verdicts pending or input refused {drain} cycles after the "
                       f"last input, with the sink ready")
        out = dut.o.payload
        count = beat.count if n > 1 else 1
        m.d.comb += [
            # A valid verdict held by the sink; an error that began in an earlier beat, after
            # another error; a truncated ending past the first byte; a one-byte beat ending a
            # message inside a pending prefix.
            Cover(o_xfer & out.valid & held),
            Cover(o_xfer & (out.error == ErrorKind.SURROGATE) & (out.offset >= n) &
                  (out.errors >= 2)),
            Cover(o_xfer & (out.error == ErrorKind.TRUNCATED) & (out.offset != 0)),
            Cover(i_xfer & beat.last & (count == 1) & (spec.o.offset != 0) &
                  (spec.o.error == ErrorKind.TRUNCATED)),
        ]
        return m


class DecoderProperties(Elaboratable):
    """Properties 1, 2 and 5 of :class:`~utf8_gateware.hdl.decoder.Utf8Decoder` on its own
    (no specification model, so cheaper than :class:`DecoderEquivalence`):

    * 1: every output offered is a scalar value, or U+FFFD / an escape U+DC80..U+DCFF if it is an
      error;
    * 2: the ASCII outputs (no error, below U+0080) are exactly the ASCII input bytes, in order:
      a :class:`Scoreboard` of the ASCII bytes taken must match them (none lost, reordered,
      changed or invented, e.g. a NUL or ``/`` decoded from an overlong form), and none may be
      left pending after the drain;
    * 5: the output stream rules; ``last``: no more ``last`` outputs than ``last`` inputs, and
      every message ends (bounded liveness: after ``drain`` quiet cycles with the sink ready,
      no ASCII byte and no message is pending, nothing is offered, and input is taken).
    """
    def __init__(self, errors, factory=None, *, messages=15, drain=None, rules=True):
        self.errors, self.factory = errors, factory or _decoder
        self.messages, self.drain, self.rules = messages, drain, rules

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.factory(self.errors)
        i_xfer = drive_source(m, dut.i, rules=self.rules)
        o_xfer = drive_sink(m, dut.o)
        held = assert_stream_rules(m, dut.o, "decoder.o")
        out = dut.o.payload
        assert_decoded_item(m, dut.o.valid, out, self.errors)

        # Property 2.
        m.submodules.ascii = ascii = Scoreboard(7, 1, name="ASCII bytes")
        out_ascii = track_ascii(m, dut, i_xfer, o_xfer, ascii)

        # Messages: `last` in versus `last` out.
        open_messages = Signal(range(self.messages + 1))
        last_in, last_out = i_xfer & dut.i.payload.last, o_xfer & out.last
        m.d.sync += open_messages.eq(open_messages + last_in - last_out)
        m.d.comb += [
            Assert(~last_out | (open_messages != 0) | last_in,
                   "an output with `last` that no input with `last` corresponds to"),
            Assert(open_messages + last_in - last_out <= self.messages,
                   f"more than {self.messages} messages pending"),
        ]

        drain = self.drain or decoder_drain(dut)
        assert_drained(m, dut.o.ready, i_xfer, (ascii.pending == 0) & (open_messages == 0) &
                       ~dut.o.valid & (~dut.i.valid | dut.i.ready), drain,
                       f"ASCII bytes or messages pending, or input refused, {drain} cycles "
                       f"after the last input with the sink ready")

        m.d.comb += [
            Cover(o_xfer & out_ascii & held),
            Cover(o_xfer & (out.error == ErrorKind.NONE) & (out.codepoint >= 0x10000)),
            Cover(o_xfer & (out.error == ErrorKind.SURROGATE)),
            Cover(o_xfer & out.last & (ascii.pending == 0) & (open_messages == 1) &
                  (out.error == ErrorKind.TRUNCATED)),
        ]
        return m


class EncoderEquivalence(Elaboratable):
    """Properties 5 (and the encoder half of 3): :class:`~utf8_gateware.hdl.encoder.Utf8Encoder`
    produces exactly the beats of :class:`~utf8_gateware.formal.spec_encoder.SpecEncoder` for every
    code unit stream, under arbitrary backpressure (see :func:`check_against_spec`; its
    checkers are :attr:`checkers` once elaborated)."""
    def __init__(self, errors, factory=None, *, drain=None, rules=True, scoreboard=Scoreboard):
        self.errors, self.factory = errors, factory or _encoder
        self.drain, self.rules, self.scoreboard = drain, rules, scoreboard
        self.checkers = None

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.factory(self.errors)
        m.submodules.spec = spec = SpecEncoder(self.errors)
        s = self.checkers = check_against_spec(m, dut, spec, item_shape=EncodedByteLayout,
                                               drain=self.drain or dut.DRAIN, name="encoder",
                                               rules=self.rules, scoreboard=self.scoreboard)
        out = dut.o.payload
        m.d.comb += [
            Cover(s["o_xfer"] & (out.data >= 0xF0) & (out.data < 0xF5) &
                  (out.error == ErrorKind.NONE)),
            Cover(s["o_xfer"] & (out.error == ErrorKind.SURROGATE)),
            Cover(s["o_xfer"] & (out.error == ErrorKind.TOO_LARGE)),
            Cover(s["o_xfer"] & s["held"] & out.last),
            Cover(dut.i.valid & ~dut.i.ready),
        ]
        return m


class StreamRules(Elaboratable):
    """Property 5 on its own (cheap, so it is proven deeper): the output stream rules of a core
    (``factory(errors)``, called ``name`` in the messages), under arbitrary input and
    backpressure."""
    def __init__(self, errors, factory, name):
        self.errors, self.factory, self.name = errors, factory, name

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.factory(self.errors)
        drive_source(m, dut.i)
        o_xfer = drive_sink(m, dut.o)
        held = assert_stream_rules(m, dut.o, f"{self.name}({self.errors}).o")
        m.d.comb += [
            Cover(held & o_xfer & dut.o.payload.last),
            Cover(dut.i.valid & ~dut.i.ready),
        ]
        return m


class Together(Elaboratable):
    """Several independent harnesses in one design, so that one ``sby`` run proves them all
    (cheap proofs share the tools' start-up time)."""
    def __init__(self, *harnesses):
        self.harnesses = harnesses

    def elaborate(self, platform):
        m = Module()
        for index, harness in enumerate(self.harnesses):
            m.submodules[f"h{index}"] = harness
        return m


def _scalar(value):
    return (value < 0x110000) & ~((value >= 0xD800) & (value <= 0xDFFF))


def check_scalar_round_trip(m, encoder, decoder, *, drain, name, values=_scalar, width=21,
                            surrogates=False):
    """Property 4a for any encoder and decoder of code points (UTF-8, UTF-16): the encoder's
    input is free (``AnySeq``) but assumed to be scalar values (``values(unit)``: the
    assumption; ``width``: the bits of a value; with ``surrogates``: any code point up to
    U+10FFFF, a lone surrogate included, but no lead surrogate directly followed in its message
    by a trail surrogate, which WTF-8 and Modified UTF-8 join: the code points of potentially
    ill-formed UTF-16; the last item taken may then wait for the next if it is a lead surrogate
    without ``last``); ``decoder`` takes the encoder's
    output (its payload fields by name); the decoder's outputs must be the scalar values, in
    order, without error and with the same ``last``, the encoder flags no error, and both
    output streams keep the stream rules. Bounded liveness: after ``drain`` quiet cycles with
    the sink ready nothing is pending. Returns the decoder's output transfer and payload (for
    covers)."""
    i_xfer = drive_source(m, encoder.i)
    value = encoder.i.payload.codepoint
    surrogate = (value >= 0xD800) & (value <= 0xDFFF)
    waiting = Signal()      # the last value taken is a lead surrogate that does not end a message
    if surrogates:
        with m.If(i_xfer):
            m.d.sync += waiting.eq((value >= 0xD800) & (value <= 0xDBFF) &
                                   ~encoder.i.payload.last)
        m.d.comb += Assume(~encoder.i.valid | ((value < 0x110000) &
                                                ~(waiting & (value >= 0xDC00) & surrogate)))
    else:
        m.d.comb += Assume(~encoder.i.valid | values(value))
    source, sink = encoder.o.payload, decoder.i.payload
    m.d.comb += [
        decoder.i.valid.eq(encoder.o.valid),
        *[getattr(sink, field).eq(getattr(source, field)) for field, _ in sink.shape()],
        encoder.o.ready.eq(decoder.i.ready),
        Assert(~encoder.o.valid | (source.error == ErrorKind.NONE),
               "the encoder flagged an error for a scalar value"),
    ]
    assert_stream_rules(m, encoder.o, "encoder.o")
    o_xfer = drive_sink(m, decoder.o)
    assert_stream_rules(m, decoder.o, "decoder.o")

    out = decoder.o.payload
    assert_identity(m, decoder.o, i_xfer=i_xfer, o_xfer=o_xfer,
                    layout=data.StructLayout({"codepoint": width, "last": 1}),
                    inputs={"codepoint": value, "last": encoder.i.payload.last},
                    outputs={"codepoint": out.codepoint, "last": out.last},
                    error=out.error, drain=drain, name=name, waiting=waiting)
    return o_xfer, out


class EncoderDecoderRoundTrip(Elaboratable):
    """Property 4a: encoder then decoder is the identity on scalar values. Units are free
    (``AnySeq``) but assumed to be scalar values; the decoder's outputs must be the units, in
    order, without error and with the same ``last``; the encoder never flags an error."""
    def __init__(self, encoder_errors="replace", decoder_errors="replace", *, drain=None):
        self.encoder_errors, self.decoder_errors = encoder_errors, decoder_errors
        self.drain = drain

    def elaborate(self, platform):
        m = Module()
        m.submodules.encoder = encoder = _encoder(self.encoder_errors)
        m.submodules.decoder = decoder = _decoder(self.decoder_errors)
        drain = self.drain or encoder.DRAIN + decoder_drain(decoder)
        o_xfer, out = check_scalar_round_trip(m, encoder, decoder, drain=drain,
                                              name="decode(encode(units))")
        m.d.comb += [
            Cover(o_xfer & (out.codepoint >= 0x10000) & out.last),
            Cover(o_xfer & (out.codepoint >= 0x800) & (out.codepoint < 0x10000)),
        ]
        return m


class DecoderEncoderRoundTrip(Elaboratable):
    """Property 4b: with ``errors="surrogateescape"`` on both, decoder then encoder is the
    identity on bytes: every byte stream comes out unchanged (same bytes, same ``last``), and
    the encoder never flags an error."""
    def __init__(self, *, drain=None):
        self.drain = drain

    def elaborate(self, platform):
        m = Module()
        m.submodules.decoder = decoder = _decoder("surrogateescape")
        m.submodules.encoder = encoder = _encoder("surrogateescape")
        i_xfer = drive_source(m, decoder.i)
        m.d.comb += [
            encoder.i.valid.eq(decoder.o.valid),
            encoder.i.payload.codepoint.eq(decoder.o.payload.codepoint),
            encoder.i.payload.last.eq(decoder.o.payload.last),
            decoder.o.ready.eq(encoder.i.ready),
        ]
        assert_stream_rules(m, decoder.o, "decoder.o")
        o_xfer = drive_sink(m, encoder.o)
        assert_stream_rules(m, encoder.o, "encoder.o")

        out = encoder.o.payload
        assert_identity(m, encoder.o, i_xfer=i_xfer, o_xfer=o_xfer, layout=ByteLayout,
                        inputs={"data": decoder.i.payload.data, "last": decoder.i.payload.last},
                        outputs={"data": out.data, "last": out.last},
                        error=out.error, name="encode(decode(bytes))",
                        drain=self.drain or encoder.DRAIN + decoder_drain(decoder))
        m.d.comb += [
            Cover(o_xfer & (out.data >= 0xF0) & (out.data < 0xF5) &
                  (decoder.o.payload.error == ErrorKind.NONE)),
            Cover(o_xfer & out.last & (decoder.o.payload.error != ErrorKind.NONE)),
        ]
        return m


# -- the list of proofs ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Proof:
    """One property: ``build()`` makes its harness; ``method`` is ``"prove"`` (k-induction, an
    unbounded proof) or ``"bmc"`` (every trace of up to ``depth`` cycles); each proof also runs
    ``cover`` (``cover_depth``) to show that its covers are reachable. ``reset`` (see
    :data:`~utf8_gateware.formal.runner.RESETS`): by default the solver may reset the design in
    any cycle, so the proofs hold from power-up and after any reset. ``long`` proofs (minutes
    each) run under the test marker ``formal_long`` instead of ``formal``."""
    name: str
    statement: str
    method: str
    depth: int
    cover_depth: int
    build: object
    reset: str = "any"
    cost: float = 5.0  # seconds, roughly (for scheduling)
    long: bool = False

    def jobs(self, *, expect="PASS", extra_depth=0):
        """The ``sby`` runs: the proof (``expect`` its status) and its covers."""
        return [FormalJob(self.name, self.build, self.method, self.depth + extra_depth,
                          expect=expect, reset=self.reset, cost=self.cost),
                FormalJob(f"{self.name}.cover", self.build, "cover", self.cover_depth,
                          reset=self.reset, cost=3.0)]


#: The lane proofs: ``(lanes, BMC depth, long, error modes, name suffix)`` for the N-lane
#: decoder and ``(lanes, BMC depth, long, name suffix)`` for the validator. After power-up or a
#: reset the first beat can be taken in cycle 2 (``i.ready`` is registered and the first step
#: flushes), so a BMC of depth D follows every beat taken in cycles 2..D-1-LATENCY through to
#: the output: the decoder with
#: 2 lanes (LATENCY 7, 8 with surrogateescape) at depth 12, 3 beats (2); with 4 lanes (LATENCY
#: 7) depth 10 is one beat, 11 two (8 bytes: every lane's 3-byte look-back reaches into the beat
#: before, with any partial beats); the validator (4 lanes: LATENCY 16) at depth LATENCY + 3
#: one beat, + 4 two (the depths follow its LATENCY: a shallower one would check no verdict,
#: which the validator's mutant catches). Later inputs are still checked for the stream rules
#: and for outputs nothing expects. Yices' time grows steeply with the depth (on the shared
#: 2-core machine, 4 lanes: depth 10 about 20 s, 11 about 80 s with replace and 310 s (it
#: passes) with surrogateescape, 12 about 220 s with replace; the validator: 16 about 15 s, 17
#: about 25 s), so the deeper runs are ``long`` (marker ``formal_long``). The cover runs go 2
#: cycles deeper (a 4-byte scalar split across beats needs two beats). Since stop 28 the 2-lane
#: decoder's and the validator's proofs are ``long`` too, with their mutants (about 55 and 30 s
#: of CPU, which took the ``formal`` marker to 2 min 20 s on two cores; the 4-lane decoder's
#: proofs there check the same lane wiring).
DECODER_LANE_PROOFS = ((2, 12, True, DECODE_ERRORS, ""), (4, 10, False, DECODE_ERRORS, ""),
                       (4, 11, True, ("replace",), "-deep"))
_VALIDATOR_LATENCY = Utf8Validator.latency(lanes=4, counter_width=8)
VALIDATOR_LANE_PROOFS = ((4, _VALIDATOR_LATENCY + 3, True, ""),
                         (4, _VALIDATOR_LATENCY + 4, True, "-deep"))
#: The validator's covers need a verdict held by the sink, and a message of two beats.
VALIDATOR_COVER_DEPTH = _VALIDATOR_LATENCY + 5


def _lane_proofs():
    proofs = []
    for lanes, depth, long, modes, suffix in DECODER_LANE_PROOFS:
        for errors in modes:
            mode = {"surrogateescape": "escape"}.get(errors, errors)
            proofs.append(Proof(
                f"decoder-lanes{lanes}-{mode}{suffix}",
                f"Utf8Decoder({errors}, lanes={lanes}) == SpecDecoder({errors}) taking each "
                f"beat's bytes in turn: the same outputs in lane then beat order (nothing lost, "
                f"duplicated, reordered or changed) for any beats (partial ones, junk in the "
                f"unused lanes, `last` in any lane) and any backpressure; 5; bounded liveness",
                "bmc", depth, depth + 2,
                lambda errors=errors, lanes=lanes: DecoderEquivalence(errors, lanes=lanes),
                cost=(60 if long else 10) * lanes // 2, long=long))
    for lanes, depth, long, suffix in VALIDATOR_LANE_PROOFS:
        proofs.append(Proof(
            f"validator-lanes{lanes}{suffix}",
            f"Utf8Validator(lanes={lanes}, counter_width=8): each message's verdict (valid, "
            f"first error's offset and kind, error count) is SpecValidator's (SpecDecoder("
            f"replace) read as a verdict), for any beats and backpressure; 5; bounded liveness",
            "bmc", depth, VALIDATOR_COVER_DEPTH, lambda lanes=lanes: ValidatorEquivalence(lanes),
            cost=60 if suffix else 15, long=long))
    return proofs


def _proofs():
    decoder_modes, encoder_modes = DECODE_ERRORS, ENCODE_ERRORS
    short = {"surrogateescape": "escape"}
    proofs = [
        Proof("spec",
              "SpecDecoder (replace, surrogateescape): prefix invariant; 1 (a scalar is the "
              "shortest form of the bytes it consumed, errors are U+FFFD/escapes); 2 (each ASCII "
              "byte is output at once, nothing else is ASCII); `last`; 4b for surrogateescape "
              "(the outputs re-encode to the input bytes)",
              "prove", 2, 6,
              lambda: Together(*(SpecDecoderProperties(errors) for errors in decoder_modes)),
              cost=2),
        Proof("rules",
              "5: output stream rules of Utf8Decoder (2 modes) and Utf8Encoder (3 modes): valid "
              "holds and payload is stable until the transfer",
              "bmc", 32, 12,
              lambda: Together(*[StreamRules(errors, _decoder, "decoder")
                                 for errors in decoder_modes],
                               *[StreamRules(errors, _encoder, "encoder")
                                 for errors in encoder_modes]), cost=15),
    ]
    for errors in decoder_modes:
        name = short.get(errors, errors)
        proofs += [
            Proof(f"decoder-{name}",
                  f"Utf8Decoder({errors}): 1 (output forms), 2 (the ASCII outputs are the "
                  f"ASCII inputs, in order), 5 (output stream rules; `last` count; bounded "
                  f"liveness: drained LATENCY+1 cycles after the last input)",
                  "bmc", 16, 16, lambda errors=errors: DecoderProperties(errors),
                  cost=6),
            Proof(f"decoder-spec-{name}",
                  f"Utf8Decoder({errors}) == SpecDecoder({errors}): 3 (the same output "
                  f"sequence under any input and backpressure), 5, bounded liveness",
                  "bmc", 14, 14, lambda errors=errors: DecoderEquivalence(errors), cost=8),
        ]
    for errors in encoder_modes:
        name = short.get(errors, errors)
        proofs.append(
            Proof(f"encoder-spec-{name}",
                  f"Utf8Encoder({errors}) == SpecEncoder({errors}): the same beats under any "
                  f"input and backpressure, 5, bounded liveness",
                  "bmc", 10, 10, lambda errors=errors: EncoderEquivalence(errors), cost=12))
    # 4a follows a 4-byte scalar through both cores: its covers reach a 3- and a 4-byte
    # scalar's output in steps 14 and 15 (16 and 17 until stop 27's stream rule 3 fix, which
    # lets the encoder take its first unit two cycles earlier: the depth went from 19 to 17 with
    # them, since at 19 it checked two more cycles of input, in 4 x the time).
    proofs += [
        Proof("roundtrip-units",
              "4a: Utf8Decoder(replace) after Utf8Encoder(replace) is the identity on scalar "
              "values (and never flags an error)",
              "bmc", 17, 17, lambda: EncoderDecoderRoundTrip(), cost=7),
        Proof("roundtrip-bytes",
              "4b: Utf8Encoder(surrogateescape) after Utf8Decoder(surrogateescape) is the "
              "identity on bytes",
              "bmc", 18, 18, lambda: DecoderEncoderRoundTrip()),
    ]
    return proofs + _lane_proofs()


#: Every proof.
PROOFS = _proofs()


# The proofs of all time (formal/induction.py, built on the blocks above) replace the bounded
# proofs they subsume.
from .induction import SUBSUMED, UNBOUNDED_PROOFS  # noqa: E402
PROOFS = [proof for proof in PROOFS if proof.name not in SUBSUMED] + UNBOUNDED_PROOFS
