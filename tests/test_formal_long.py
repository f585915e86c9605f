# amaranth: UnusedElaboratable=no
"""The long formal proofs (marker ``formal_long``): the proofs of
:data:`utf8_gateware.formal.checks.PROOFS` with ``long`` set (the 4-lane decoder and validator
against the byte-serial specification model) and their mutation test. They run like those of
``test_formal.py`` (whose module fixture starts all selected ``sby`` runs together), separately
so that ``-m formal`` stays short."""

import pytest

from utf8_gateware.formal.checks import PROOFS

from test_formal import LANE_MUTANT_PROOFS, results  # noqa: F401 (the fixture)
from test_formal import test_mutant_is_caught as _mutant_is_caught, test_proof as _proof


pytestmark = pytest.mark.formal_long


@pytest.mark.parametrize("proof", [proof for proof in PROOFS if proof.long],
                         ids=lambda proof: proof.name)
def test_proof(proof, results):  # noqa: F811
    _proof(proof, results)


@pytest.mark.parametrize("proof", LANE_MUTANT_PROOFS, ids=lambda proof: proof.name)
def test_mutant_is_caught(proof, results):  # noqa: F811
    _mutant_is_caught(proof, results)
