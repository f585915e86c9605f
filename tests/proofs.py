"""What the formal test modules share: the check of a proof's results, and mutants of the cores."""

from amaranth.hdl import Module
from amaranth.lib import wiring


def assert_proved(results, name):
    """The proof ``name`` passed, and so did its cover run (else the proof may be vacuous)."""
    result = results[name]
    assert result.status == "PASS", result.summary()
    cover = results[f"{name}.cover"]
    assert cover.status == "PASS", "cover failed (the proof may be vacuous):\n" + \
        cover.summary()


class Mutant(wiring.Component):
    """A real core (``core``) whose output ``corrupt(m, core)`` (a subclass's method) changes
    after the fact; its ports, ``errors``, ``lanes`` and ``LATENCY`` are the core's."""
    def __init__(self, core):
        self._core = core
        super().__init__(core.signature)

    @property
    def errors(self):
        return self._core.errors

    @property
    def lanes(self):
        return getattr(self._core, "lanes", 1)

    @property
    def LATENCY(self):
        return self._core.LATENCY

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self._core
        wiring.connect(m, wiring.flipped(self.i), core.i)
        wiring.connect(m, core.o, wiring.flipped(self.o))
        self.corrupt(m, core)
        return m
