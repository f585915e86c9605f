"""Formal verification: specification models and the proofs of the cores (SymbiYosys)."""
