"""Every proof the tests run, with the test marker and module that run it (for ``utf8-gateware
formal``)."""

from dataclasses import dataclass

from . import checks, family, induction, rfc2279, utf16, valid_first
from .checks import Proof


__all__ = ["Entry", "catalog"]


@dataclass(frozen=True)
class Entry:
    """A :class:`~utf8_gateware.formal.checks.Proof`, the pytest ``marker`` its test carries
    (``formal`` or ``formal_long``) and the test ``module`` that runs it."""
    proof: Proof
    marker: str
    module: str


def catalog():
    """Every proof of :data:`~utf8_gateware.formal.checks.PROOFS` (``formal``, or
    ``formal_long`` if ``long``), of :data:`~utf8_gateware.formal.induction.LONG_PROOFS`
    (``formal_long``), of :data:`~utf8_gateware.formal.utf16.PROOFS` (the UTF-16 cores) and of
    :data:`~utf8_gateware.formal.rfc2279.PROOFS` (the RFC 2279 cores) and of
    :data:`~utf8_gateware.formal.family.PROOFS` (the UTF-8 family's; ``formal_long`` if
    ``long``) and of :data:`~utf8_gateware.formal.valid_first.PROOFS` (stream rule 3 for every
    kind of core, ``formal_long``)."""
    return [
        *(Entry(proof, "formal_long", "tests/test_formal_long.py") if proof.long else
          Entry(proof, "formal", "tests/test_formal.py") for proof in checks.PROOFS),
        *(Entry(proof, "formal_long", "tests/test_formal_induction.py")
          for proof in induction.LONG_PROOFS),
        *(Entry(proof, "formal", "tests/test_formal_utf16.py") for proof in utf16.PROOFS),
        *(Entry(proof, "formal", "tests/test_rfc2279.py") for proof in rfc2279.PROOFS),
        *(Entry(proof, "formal_long" if proof.long else "formal", "tests/test_formal_family.py")
          for proof in family.PROOFS),
        *(Entry(proof, "formal_long", "tests/test_formal_valid_first.py")
          for proof in valid_first.PROOFS),
    ]
