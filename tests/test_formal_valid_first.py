# amaranth: UnusedElaboratable=no
"""Stream rule 3 proven for every kind of core (:mod:`utf8_gateware.formal.valid_first`, marker
``formal_long``): with a sink that is never ready, a message's output is offered within a
bound of its last input. A mutant that waits for ``ready`` once, as the shift encoder did until
stop 27, must fail.

This proof found a defect at stop 28, fixed the same stop: the sanitiser held a finished
message's final bytes in its line while the next message's first character was incomplete and
the input paused (``tests/test_sanitizer.py``, ``test_finished_bytes_do_not_wait``, has the
cases in simulation)."""

import pytest
from amaranth.hdl import Signal

from utf8_gateware.formal import runner as formal
from utf8_gateware.formal.valid_first import PROOFS, OutputWithoutReady
from utf8_gateware.hdl.utf16_encoder import Utf16Encoder
from proofs import Mutant, assert_proved


pytestmark = pytest.mark.formal_long

@pytest.fixture(scope="module")
def results(tmp_path_factory):
    jobs = [job for proof in PROOFS for job in proof.jobs()]
    return formal.run_many(jobs, workdir=tmp_path_factory.mktemp("formal-valid-first"))


@pytest.mark.parametrize("proof", PROOFS, ids=lambda proof: proof.name)
def test_proof(proof, results):
    assert_proved(results, proof.name)


class WaitsForReadyOnce(Mutant):
    """The UTF-16 encoder, its output hidden until the sink has once been ready: a core that
    waits for ``ready`` before its first ``valid`` (it keeps the other stream rules)."""
    def corrupt(self, m, core):
        seen = Signal()
        with m.If(self.o.ready):
            m.d.sync += seen.eq(1)
        m.d.comb += [self.o.valid.eq(core.o.valid & seen), core.o.ready.eq(self.o.ready & seen)]


def test_mutant_is_caught(tmp_path):
    harness = OutputWithoutReady("waits-once", lambda: WaitsForReadyOnce(Utf16Encoder()))
    result = formal.run_sby(harness, name="mutant", mode="bmc", depth=harness.depth(),
                            workdir=tmp_path)
    assert result.status == "FAIL", result.summary()
    assert any("never ready" in failure for failure in result.failed), result.summary()
