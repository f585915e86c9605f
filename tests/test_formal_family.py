# amaranth: UnusedElaboratable=no
"""Formal proofs of the UTF-8 family's cores (:mod:`utf8_gateware.formal.family`): each proof
passes and its covers are reached. The cheap ones (the CESU-8 and WTF-8 decoders on any bytes,
CESU-8 with surrogateescape too) carry the marker ``formal``, the others ``formal_long`` (the
Modified UTF-8 decoder's too: its joiner is CESU-8's, and the ``formal`` marker is kept under
two minutes on two cores).

Each proof has a mutant that must FAIL it, built from the public cores only: a CESU-8 decoder
that passes lone surrogates (the Modified UTF-8 one); a CESU-8 surrogateescape decoder whose
pairs come out with bit 16 flipped; a Modified UTF-8 decoder that refuses
C0 80 (the CESU-8 one); a WTF-8 decoder that lets a trail surrogate follow a lead; a
``utf-8-sig`` decoder that strips every well-formed U+FEFF, not only a leading one; a
``utf-8-sig`` encoder that writes no mark (UTF-8's); a Modified UTF-8 round trip through an
encoder that writes U+0000 as 00 and flags lone surrogates (CESU-8's). The mutants of the
``formal_long`` proofs are ``formal_long`` too."""

import pytest

from utf8_gateware.formal import family
from utf8_gateware.formal.checks import Proof
from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.encoder import Utf8Encoder
from utf8_gateware.hdl.error_kind import ErrorKind
from proofs import Mutant, assert_proved

from test_formal import results  # noqa: F401 (the fixture: the selected tests' sby runs, at once)


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


class PairBitDecoder(Mutant):
    """The real CESU-8 decoder (``surrogateescape``), whose supplementary code points come out
    with bit 16 flipped (as if a pair's bits 16..20, set at the output, were another lead's)."""
    def __init__(self, errors, encoding):
        super().__init__(Utf8Decoder(errors, encoding=encoding))

    def corrupt(self, m, core):
        out = core.o.payload
        with m.If(out.codepoint >= 0x10000):
            m.d.comb += self.o.payload.codepoint.eq(out.codepoint ^ 0x10000)


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
          lambda: family.PairingProperties("mutf-8", factory=_other_decoder("cesu-8")),
          long=True),
    Proof("mutant-family-cesu-8-surrogateescape",
          "a CESU-8 surrogateescape decoder whose pairs have bit 16 flipped", "bmc",
          family.PAIRING_ESCAPE_DEPTH, 1,
          lambda: family.PairingProperties("cesu-8", "surrogateescape",
                                           factory=PairBitDecoder)),
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


@pytest.mark.parametrize("proof", _marked(family.PROOFS))
def test_proof(proof, results):  # noqa: F811
    assert_proved(results, proof.name)


@pytest.mark.parametrize("proof", _marked(MUTANT_PROOFS))
def test_mutant_is_caught(proof, results):  # noqa: F811
    result = results[proof.name]
    assert result.status == "FAIL", result.summary()
    assert result.traces and all(path.is_file() for path in result.traces), result.summary()
