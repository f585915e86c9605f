"""Formal proofs of the UTF-16 cores (:mod:`utf8_gateware.formal.utf16`): each proof passes and
its covers are reached (a proof whose covers fail may be vacuous)."""

import pytest
from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.formal import runner as formal
from utf8_gateware.formal.utf16 import PROOFS, JoiningProperties
from utf8_gateware.hdl.layouts import CodepointLayout, CodeUnitLayout
from utf8_gateware.hdl.utf16_decoder import Utf16Decoder
from proofs import assert_proved


pytestmark = pytest.mark.formal


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    jobs = [job for proof in PROOFS for job in proof.jobs()]
    return formal.run_many(jobs, workdir=tmp_path_factory.mktemp("formal-utf16"), max_workers=1)


@pytest.mark.parametrize("proof", PROOFS, ids=lambda proof: proof.name)
def test_proof(proof, results):
    assert_proved(results, proof.name)


class _Unflagged(wiring.Component):
    """A mutant: the decoder with its output's error kind cleared."""
    i: In(stream.Signature(CodeUnitLayout))
    o: Out(stream.Signature(CodepointLayout))

    def __init__(self, errors):
        self.errors = errors
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.decoder = decoder = Utf16Decoder(self.errors)
        wiring.connect(m, wiring.flipped(self.i), decoder.i)
        m.d.comb += [
            self.o.valid.eq(decoder.o.valid),
            self.o.payload.codepoint.eq(decoder.o.payload.codepoint),
            self.o.payload.last.eq(decoder.o.payload.last),
            decoder.o.ready.eq(self.o.ready),
        ]
        return m


def test_mutant_is_caught(tmp_path):
    """The joining proof fails for a decoder that passes lone surrogates unflagged."""
    result = formal.run_sby(JoiningProperties("surrogatepass", _Unflagged), name="mutant",
                            mode="bmc", depth=Utf16Decoder.LATENCY + 2, workdir=tmp_path)
    assert result.status == "FAIL", result.summary()
    assert any("scalar" in failure for failure in result.failed), result.summary()
