"""Formal verification: specification models and the proofs of the cores (SymbiYosys)."""

# The proofs of all time (induction.py) build on checks.py and are listed in its PROOFS: import
# checks first, whichever module is imported.
from . import checks as _checks  # noqa: E402,F401
