# amaranth: UnusedElaboratable=no
"""Proofs of all time (k-induction) of the real cores: :mod:`utf8_gateware.formal.induction`.

The cheap ones are part of :data:`~utf8_gateware.formal.checks.PROOFS` and run with the other
proofs in ``tests/test_formal.py`` (marker ``formal``). Here: a core with a bug that only shows
after a thousand beats -- beyond any BMC depth the suite can afford -- is not proven (the
unbounded proof sees every cycle), and the long proofs (marker ``formal_long``).
"""

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring

from utf8_gateware import toolchain
from utf8_gateware.formal import induction, runner
from utf8_gateware.hdl.encoder import Utf8Encoder


class LateBugEncoder(wiring.Component):
    """The real encoder, whose output byte gets bit 0 flipped once 1023 beats went out."""
    def __init__(self, errors):
        self._encoder = Utf8Encoder(errors)
        self.errors, self.DRAIN = errors, self._encoder.DRAIN
        super().__init__(self._encoder.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.encoder = encoder = self._encoder
        wiring.connect(m, wiring.flipped(self.i), encoder.i)
        wiring.connect(m, encoder.o, wiring.flipped(self.o))
        beats = Signal(10)
        with m.If(encoder.o.valid & self.o.ready & (beats != 1023)):
            m.d.sync += beats.eq(beats + 1)
        with m.If(beats == 1023):
            m.d.comb += self.o.payload.data.eq(encoder.o.payload.data ^ 1)
        return m


def _run(harness, name, mode, depth, tmp_path):
    try:
        return runner.run_sby(harness, name=name, mode=mode, depth=depth, workdir=tmp_path,
                              reset="any")
    except toolchain.ToolError as error:
        pytest.fail(str(error), pytrace=False)


@pytest.mark.formal
def test_late_bug_is_not_proven(tmp_path):
    harness = induction.EncoderEquivalenceForever("replace", LateBugEncoder)
    result = _run(harness, "late-bug", "prove", 2, tmp_path)
    assert result.status in ("FAIL", "UNKNOWN"), result.summary()
    assert any("differs from the expected" in line for line in result.failed), \
        result.summary()
