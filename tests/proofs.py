"""The check every formal test makes of a proof's results (shared by the formal test modules)."""


def assert_proved(results, name):
    """The proof ``name`` passed, and so did its cover run (else the proof may be vacuous)."""
    result = results[name]
    assert result.status == "PASS", result.summary()
    cover = results[f"{name}.cover"]
    assert cover.status == "PASS", "cover failed (the proof may be vacuous):\n" + \
        cover.summary()
