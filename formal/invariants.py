"""Invariants of the cores' private registers, for the proofs of all time (k-induction).

A k-induction step starts from *any* state in which the assertions held for k cycles, reachable
or not. The cores' pipelines hold state that the checkers of :mod:`utf8_gateware.formal.induction`
cannot see (copies of the advance flip-flop, stage registers, the skid register), so those proofs
also assert, every cycle, how that state relates to what was accepted: facts that hold in every
reachable state and that together are inductive. Each is stated below in words, next to the code
that asserts it.

The harness reaches into the core by name: :class:`Probe` elaborates the core once and finds its
signals by the names the core gives them (a core that renames a register needs the invariant
renamed too). Where a stage register is a function of the input the stage holds, the harness
keeps a *shadow* of that input (loaded exactly when the stage is), so that the invariant says
"the register equals the function of its shadow".
"""

from amaranth.hdl import Array, Assert, Elaboratable, Fragment, Module, Mux, Signal
from amaranth.lib import wiring

from .spec_encoder import SpecEncoder


__all__ = ["Probe", "assert_adv_copies", "assert_tagged_in_queue", "PipelineInvariants",
           "EncoderInvariants"]


def _lhs(value):
    """The signals an assignment to ``value`` drives."""
    if isinstance(value, Signal):
        yield value
    elif hasattr(value, "parts"):          # a concatenation
        for part in value.parts:
            yield from _lhs(part)
    elif hasattr(value, "value"):          # a slice or part
        yield from _lhs(value.value)


def _driven(statements):
    for statement in statements:
        if hasattr(statement, "lhs"):
            yield from _lhs(statement.lhs)
        elif hasattr(statement, "cases"):
            for case in statement.cases:
                yield from _driven(case[1])


class _Probed(wiring.Component):
    """The core ``core`` as its elaborated ``fragment``, behind ports of its own signature,
    with the core's parameters the harnesses read (``errors``, ``LATENCY``, ``DRAIN``)."""
    def __init__(self, core, fragment):
        self._inner, self._fragment = core, fragment
        for name in ("errors", "LATENCY", "DRAIN"):
            if hasattr(core, name):
                setattr(self, name, getattr(core, name))
        super().__init__(core.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = self._fragment
        wiring.connect(m, wiring.flipped(self.i), self._inner.i)
        wiring.connect(m, self._inner.o, wiring.flipped(self.o))
        return m


class Probe:
    """``core`` elaborated once (add :attr:`fragment` to the harness as the core), with the
    signals its logic drives found by name: ``probe["adv"]`` (a register, if a combinational
    signal has the same name). A name the core uses for two registers, or not at all, is an
    error (the invariant must be adapted to the core)."""
    def __init__(self, core, platform=None):
        self._elaboratable, self._core = core, None
        self.fragment = Fragment.get(core, platform)
        self._signals = {}
        fragments = [self.fragment]
        while fragments:
            fragment = fragments.pop()
            for domain, statements in fragment.statements.items():
                for signal in _driven(statements):
                    found = self._signals.setdefault(signal.name, [])
                    if not any(signal is other for other, _ in found):
                        found.append((signal, domain))
            fragments += [sub for sub, *_ in fragment.subfragments]

    @property
    def core(self):
        """A component with the core's ports and attributes, made of :attr:`fragment`: pass it
        to a harness of :mod:`~utf8_gateware.formal.checks` in place of the core (only once:
        the fragment is one instance of the core)."""
        if self._core is None:
            self._core = _Probed(self._elaboratable, self.fragment)
        return self._core

    def __getitem__(self, name):
        found = self._signals.get(name, [])
        if len(found) > 1:     # a register and a combinational signal: the register
            found = [(signal, domain) for signal, domain in found if domain != "comb"]
        if len(found) != 1:
            raise KeyError(f"the core has {len(found)} registers named {name!r}, not one")
        return found[0][0]

    def names(self, prefix):
        """The names of the signals whose name starts with ``prefix``, sorted."""
        return sorted(name for name in self._signals if name.startswith(prefix))


def assert_adv_copies(m, probe, name):
    """Every copy ``adv_ce*`` of a core's advance flip-flop ``adv`` equals it (each copy is
    computed from its own value by the same function as ``adv``, and all start equal)."""
    adv = probe["adv"]
    for copy in probe.names("adv_ce"):
        m.d.comb += Assert(probe[copy] == adv, f"{name}: {copy} differs from adv")


def assert_tagged_in_queue(m, scoreboard, queue, name):
    """The items a core holds are ``queue``, in order: ``(length, items)`` per place, of which
    the first ``length`` are held; the scoreboard's tagged item is the one ``ahead`` of it."""
    base = 0
    for length, items in queue:
        for t, item in enumerate(items):
            m.d.comb += Assert(~(scoreboard.tagged & (scoreboard.ahead == base + t) &
                                 (t < length)) | (item == scoreboard.expected.as_value()),
                               f"{name}: the tagged beat is not where it is expected")
        base = base + length


class PipelineInvariants(Elaboratable):
    """The invariants of a core built on :class:`~utf8_gateware.hdl.pipeline.Pipeline` that its
    output handshake rests on (``probe``: the core's :class:`Probe`; ``name`` for the
    messages):

    1. every copy ``adv_ce*`` of ``adv`` equals ``adv``;
    2. the flush thermometer ``fl0``, ``fl1``, ... is a thermometer: its ones are a suffix
       (``fl{n}`` set implies ``fl{n+1}`` set), since zeros shift in at ``fl0``. So once
       ``masked`` (the last) is low, it stays low.

    With these, the output stream rules hold for all time: while ``adv`` is low the skid
    register (loaded only when ``adv``) is offered and ``masked`` cannot change; when the sink
    refuses the slot's output, ``adv`` falls and the skid register keeps that output.
    """
    def __init__(self, probe, name):
        self.probe, self.name = probe, name

    def elaborate(self, platform):
        m = Module()
        assert_adv_copies(m, self.probe, self.name)
        flush = [self.probe[f"fl{n}"] for n in range(len(self.probe.names("fl")))]
        for earlier, later in zip(flush, flush[1:]):
            m.d.comb += Assert(~earlier | later,
                               f"{self.name}: the flush thermometer is not a thermometer")
        return m


class EncoderInvariants(Elaboratable):
    """The invariants of :class:`~utf8_gateware.hdl.encoder.Utf8Encoder` (the one-unit-per-
    stage pipeline A -> B -> output slot -> skid register), relative to its accepted units and a
    :class:`~utf8_gateware.formal.induction.TrackingScoreboard` fed by the spec model.

    The harness keeps two shadows: ``sa``, the unit in stage A (loaded whenever the core's
    ``i.ready`` is high, like A), and ``sb``, the unit in stage B (loaded from ``sa`` when B
    takes the next unit: ``adv & b_rem[0]``). Two spec encoders give their beats. Asserted:

    1. every copy ``adv_ce*`` of ``adv`` equals ``adv``;
    2. stage A holds its unit's low 21 bits and ``last``, and the six class flags of the
       encoder's table for the unit (``z21``: bits 31..21 zero; ``zl``: 20..16 zero; ``r4``:
       20..16 in 1..16; ``h0``/``hs``/``lw`` as the error policy defines them);
    3. with B empty ``b_rem[0]`` is set (its other bits are stale); with B full ``b_rem`` is
       one-hot and the beats B still owes are
       the last ``r`` beats of the spec's beats for ``sb`` (``r``: the position of ``b_rem``'s
       bit plus one; all of them while ``b_first``): ``b_lead`` is the first beat, ``b_c0``,
       ``b_c1``, ``b_c2`` the payloads of the last three (as far as there are continuation
       beats), ``b_error`` and ``b_last`` the first beat's error and the unit's ``last``;
    4. the items the scoreboard expects, in order, are: the skid register's beat (while ``adv``
       is low), the output slot's (``s_valid``), B's ``r`` beats, A's unit's beats; their
       number is the scoreboard's ``pending``, and the tagged item is the one at ``ahead``;
    5. liveness: once the sink was ready for ``count`` cycles without input (``count`` of the
       harness's :class:`~utf8_gateware.formal.checks.QuietCounter`) ``adv`` is high (if
       ``count`` > 0), and the cycles the pipeline still needs to empty are at most
       ``DRAIN - count``.
    """
    def __init__(self, probe, dut, scoreboard, quiet_count):
        self.probe, self.dut, self.scoreboard = probe, dut, scoreboard
        self.quiet_count = quiet_count

    def elaborate(self, platform):
        m = Module()
        p, dut, sb = self.probe, self.dut, self.scoreboard
        errors = dut.errors
        adv, b_rem = p["adv"], p["b_rem"]

        # Shadows of the units in A and B, and their beats.
        shadow_a = Signal(dut.i.payload.shape())
        shadow_b = Signal(dut.i.payload.shape())
        with m.If(dut.i.ready):
            m.d.sync += shadow_a.eq(dut.i.payload)
        with m.If(adv & b_rem[0]):
            m.d.sync += shadow_b.eq(shadow_a)
        m.submodules.spec_a = spec_a = SpecEncoder(errors)
        m.submodules.spec_b = spec_b = SpecEncoder(errors)
        m.d.comb += [spec_a.i.valid.eq(1), spec_a.i.payload.eq(shadow_a),
                     spec_b.i.valid.eq(1), spec_b.i.payload.eq(shadow_b)]

        # 1. The copies of adv.
        assert_adv_copies(m, p, "encoder")

        # 2. Stage A: the unit's low bits and its class flags.
        u = shadow_a.codepoint
        hi, mid, low = u[11:16], u[16:21], u[7:11]
        if errors == "surrogateescape":
            escape = (hi == 0b11011) & (low == 0b1001)
            h0, hs, lw = (hi == 0) | escape, (hi == 0b11011) & ~escape, u[11] | (low == 0)
        elif errors == "strict":
            h0, hs, lw = hi == 0, (hi == 0b11011) | ((hi == 0) & (low == 0)), low == 0
        else:
            h0, hs, lw = hi == 0, hi == 0b11011, low == 0
        a_valid = p["a_valid"]
        flags = [("a_u", u[:21]), ("a_last", shadow_a.last), ("a_z21", u[21:32] == 0),
                 ("a_zl", mid == 0), ("a_r4", (mid >= 1) & (mid <= 16)), ("a_h0", h0),
                 ("a_hs", hs), ("a_lw", lw)]
        for name, value in flags:
            m.d.comb += Assert(~a_valid | (p[name] == value),
                               f"encoder: stage A's {name} is not its unit's")

        # 3. Stage B: the beats it still owes.
        b_valid, b_first = p["b_valid"], p["b_first"]
        count_b = spec_b.o.count
        onehot = Signal()
        m.d.comb += onehot.eq((b_rem != 0) & ((b_rem & (b_rem - 1)) == 0))
        r_b = Signal(range(5))       # the beats B owes
        m.d.comb += r_b.eq(Mux(b_rem[3], 4, Mux(b_rem[2], 3, Mux(b_rem[1], 2, 1))))
        items_b = spec_b.o.items
        beats_b = [item.as_value() for item in items_b]   # data is bits 0..7
        m.d.comb += [
            Assert(~b_valid | onehot, "encoder: b_rem of a full stage B is not one-hot"),
            Assert(b_valid | b_rem[0], "encoder: b_rem[0] of an empty stage B is not set"),
            Assert(~b_valid | Mux(b_first, r_b == count_b, r_b < count_b),
                   "encoder: stage B owes more beats than its unit has"),
            Assert(~b_valid | (p["b_lead"] == items_b[0].data),
                   "encoder: b_lead is not its unit's first beat"),
            Assert(~b_valid | (p["b_error"] == items_b[0].error.as_value()),
                   "encoder: b_error is not its unit's"),
            Assert(~b_valid | (p["b_last"] == shadow_b.last),
                   "encoder: b_last is not its unit's"),
        ]
        for back, name in enumerate(("b_c2", "b_c1", "b_c0")):
            # The beat `back` beats before the last one, if it is a continuation beat.
            index = count_b - 1 - back
            m.d.comb += Assert(~b_valid | (count_b < back + 2) |
                               (p[name] == Array(beats_b)[index[:2]][:6]),
                               f"encoder: {name} is not its unit's continuation payload")

        # 4. The expected items, in order: skid, slot, B's beats, A's beats.
        s_valid = p["s_valid"]
        n_k, n_s = ~adv, s_valid
        n_b = Mux(b_valid, r_b, 0)
        n_a = Mux(a_valid, spec_a.o.count, 0)
        m.d.comb += Assert(sb.pending == n_k + n_s + n_b + n_a,
                           "encoder: the pipeline holds a different number of beats than "
                           "expected")
        assert_tagged_in_queue(m, sb, [
            (n_k, [p["k_p"]]), (n_s, [p["s_p"]]),
            (n_b, [Array(beats_b)[(count_b - r_b + t)[:2]] for t in range(4)]),
            (n_a, [item.as_value() for item in spec_a.o.items])], "encoder")

        # 5. Liveness: the cycles to empty (with the sink ready, no input): the skid's; then, if
        # anything is left, the slot's, B's beats, a bubble if B is empty and A full, A's beats.
        busy = s_valid | b_valid | a_valid
        self.assert_drains(m, adv, n_k + Mux(busy, 1 + n_b + n_a + (~b_valid & a_valid), 0))
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
