# amaranth: UnusedElaboratable=no
"""The long lane proofs (marker ``formal_long``): the proofs of
:data:`utf8_gateware.formal.checks.PROOFS` with ``long`` set (the 2-lane decoder, the validator,
and the 4-lane decoder and validator one beat deeper, a depth that takes about a minute). They
run like those of ``test_formal.py``, whose module fixture starts the ``sby`` runs of this
module's selected tests together; so do the 2-lane decoder's and the validator's mutants (the
4-lane decoder's is in ``test_formal.py``, at the depth of the proofs there)."""

import pytest

from utf8_gateware.formal.checks import PROOFS
from proofs import assert_proved

from test_formal import MUTANT_PROOFS, results  # noqa: F401 (the fixture)


pytestmark = pytest.mark.formal_long


@pytest.mark.parametrize("proof", [proof for proof in PROOFS if proof.long],
                         ids=lambda proof: proof.name)
def test_long_proof(proof, results):  # noqa: F811
    assert_proved(results, proof.name)


@pytest.mark.parametrize("proof", [proof for proof in MUTANT_PROOFS if proof.long],
                         ids=lambda proof: proof.name)
def test_long_mutant_is_caught(proof, results):  # noqa: F811
    result = results[proof.name]
    assert result.status == "FAIL", result.summary()
    assert result.traces and all(path.is_file() for path in result.traces), result.summary()
