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

from amaranth.hdl import Assert, Elaboratable, Fragment, Module, Signal
from amaranth.lib import wiring


__all__ = ["Probe", "assert_adv_copies", "assert_tagged_in_queue", "PipelineInvariants"]


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
