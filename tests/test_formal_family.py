# amaranth: UnusedElaboratable=no
"""Formal proofs of the UTF-8 family's cores (:mod:`utf8_gateware.formal.family`): each proof
passes and its covers are reached. The cheap ones (the CESU-8, Modified UTF-8 and WTF-8
decoders on any bytes) carry the marker ``formal``, the others ``formal_long``.

Each proof has a mutant that must FAIL it, built from the public cores only: a CESU-8 decoder
that passes lone surrogates (the Modified UTF-8 one); a Modified UTF-8 decoder that refuses
C0 80 (the CESU-8 one); a WTF-8 decoder that lets a trail surrogate follow a lead; a
``utf-8-sig`` decoder that strips every well-formed U+FEFF, not only a leading one; a
``utf-8-sig`` encoder that writes no mark (UTF-8's); a Modified UTF-8 round trip through an
encoder that writes U+0000 as 00 and flags lone surrogates (CESU-8's). The mutants of the
``formal_long`` proofs are ``formal_long`` too."""

import time

import pytest
from utf8_gateware import toolchain
from utf8_gateware.formal import family, runner
from utf8_gateware.formal.checks import Proof
from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.encoder import Utf8Encoder
from utf8_gateware.hdl.error_kind import ErrorKind
from proofs import Mutant, assert_proved


class PairPassingDecoder(Mutant):
    """The real WTF-8 decoder, whose U+FFFD for a trail surrogate right after a lead comes out
    as the trail U+DC00 (a WTF-8 decoder without the pair rule)."""
    def __init__(self, errors, encoding):
        super().__init__(Utf8Decoder(errors, encoding=encoding))

    def corrupt(self, m, core):
        out = core.o.payload
        with m.If(out.error == ErrorKind.SURROGATE):
            m.d.comb += [self.o.payload.codepoint.eq(0xDC00),
                         self.o.payload.error.eq(ErrorKind.NONE)]


class EveryMarkStripper(Mutant):
    """The real ``utf-8-sig`` decoder, which also drops every later well-formed U+FEFF (the
    zero-width no-break space taken for a mark)."""
    def __init__(self, errors):
        super().__init__(Utf8Decoder(errors, encoding="utf-8-sig"))

    def corrupt(self, m, core):
        out = core.o.payload
        with m.If((out.codepoint == 0xFEFF) & (out.error == ErrorKind.NONE) & ~out.last):
            m.d.comb += [self.o.valid.eq(0), core.o.ready.eq(1)]


def _other_decoder(encoding):
    return lambda errors, _: Utf8Decoder(errors, encoding=encoding)


MUTANT_PROOFS = [
    Proof("mutant-family-cesu-8", "a CESU-8 decoder that passes lone surrogates", "bmc",
          family.PAIRING_DEPTH, 1,
          lambda: family.PairingProperties("cesu-8", factory=_other_decoder("mutf-8"))),
    Proof("mutant-family-mutf-8", "a Modified UTF-8 decoder that refuses C0 80", "bmc",
          family.PAIRING_DEPTH, 1,
          lambda: family.PairingProperties("mutf-8", factory=_other_decoder("cesu-8"))),
    Proof("mutant-family-wtf-8", "a WTF-8 decoder without the pair rule", "bmc",
          family.PAIRING_DEPTH, 1,
          lambda: family.PairingProperties("wtf-8", factory=PairPassingDecoder)),
    Proof("mutant-family-sig-decoder", "a utf-8-sig decoder that strips every U+FEFF", "bmc",
          family.STRIPPING_DEPTH, 1, lambda: family.MarkStripping(factory=EveryMarkStripper),
          long=True),
    Proof("mutant-family-sig-encoder", "a utf-8-sig encoder without the mark", "bmc",
          family.WRITING_DEPTH, 1,
          lambda: family.MarkWriting(factory=lambda errors: Utf8Encoder(errors)), long=True),
    Proof("mutant-family-roundtrip-mutf-8", "Modified UTF-8 decoding of CESU-8", "bmc",
          family.ROUND_TRIP_DEPTHS["mutf-8"], 1,
          lambda: family.FamilyRoundTrip(
              "mutf-8", encoder=lambda _: Utf8Encoder(encoding="cesu-8")), long=True),
]


def _marked(proofs):
    return [pytest.param(proof, id=proof.name,
                         marks=pytest.mark.formal_long if proof.long else pytest.mark.formal)
            for proof in proofs]


@pytest.fixture(scope="module")
def results(request, tmp_path_factory):
    """The sby runs of the selected tests (each proof and its cover run; each mutant's proof,
    which must fail), two at a time."""
    selected = {item.callspec.params["proof"].name: item.callspec.params["proof"]
                for item in request.session.items
                if item.module is not None and item.module.__name__ == __name__ and
                hasattr(item, "callspec") and "proof" in item.callspec.params}
    jobs = []
    for proof in selected.values():
        jobs += proof.jobs(expect="FAIL")[:1] if proof.name.startswith("mutant-") else \
            proof.jobs()
    started = time.monotonic()
    try:
        results = runner.run_many(jobs, workdir=tmp_path_factory.mktemp("formal-family"),
                                  max_workers=2)
    except toolchain.ToolError as error:
        pytest.fail(str(error), pytrace=False)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line("")
            for name, result in sorted(results.items()):
                reporter.write_line(f"formal: {name:34} {result.mode:5} depth "
                                    f"{result.depth:3} {result.status:7} "
                                    f"{result.elapsed:6.1f} s")
            reporter.write_line(f"formal: {len(results)} sby runs in "
                                f"{time.monotonic() - started:.0f} s")
    return results


@pytest.mark.parametrize("proof", _marked(family.PROOFS))
def test_proof(proof, results):
    assert_proved(results, proof.name)


@pytest.mark.parametrize("proof", _marked(MUTANT_PROOFS))
def test_mutant_is_caught(proof, results):
    result = results[proof.name]
    assert result.status == "FAIL", result.summary()
    assert result.traces and all(path.is_file() for path in result.traces), result.summary()
