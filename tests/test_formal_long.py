# amaranth: UnusedElaboratable=no
"""The deepest lane proofs (marker ``formal_long``): the proofs of
:data:`utf8_gateware.formal.checks.PROOFS` with ``long`` set (the 4-lane decoder against the
byte-serial specification model at a depth that takes about a minute). They run like those of
``test_formal.py``, whose module fixture starts the ``sby`` runs of this module's selected tests
together; their mutants, which fail quickly, are in ``test_formal.py``."""

import pytest

from utf8_gateware.formal.checks import PROOFS
from proofs import assert_proved

from test_formal import results  # noqa: F401 (the fixture)


pytestmark = pytest.mark.formal_long


@pytest.mark.parametrize("proof", [proof for proof in PROOFS if proof.long],
                         ids=lambda proof: proof.name)
def test_long_proof(proof, results):  # noqa: F811
    assert_proved(results, proof.name)
