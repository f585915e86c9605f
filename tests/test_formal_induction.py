# amaranth: UnusedElaboratable=no
"""Proofs of all time (k-induction) of the real cores: :mod:`utf8_gateware.formal.induction`.

The cheap ones are part of :data:`~utf8_gateware.formal.checks.PROOFS` and run with the other proofs
in ``tests/test_formal.py`` (marker ``formal``). Here: a core with a bug that only shows after a
thousand beats -- beyond any BMC depth the suite can afford -- is not proven (the unbounded proof
sees every cycle), nor is a decoder whose "A" reads "a" after a thousand outputs (by the ASCII
proof, whose harness ``decoder-ascii-forever-escape`` proves), nor one whose truncation errors read
"overlong" after a thousand outputs (by the equivalence with the spec model), and a decoder that
breaks the stream rules is not proven either. A k-induction run that finds a counterexample only in
its induction step reports ``UNKNOWN`` (its base case is shorter than the bug's trace): not proven,
with the failed property named. Marker ``formal_long``: the decoder's proofs of all time
(:data:`~utf8_gateware.formal.induction.LONG_PROOFS`), each with its cover run, and the two decoder
mutants that those proofs (not the ``formal`` ones) must reject.
"""

import pytest
from amaranth.hdl import Signal

from utf8_gateware import toolchain
from utf8_gateware.formal import induction, runner, spec_roundtrip
from utf8_gateware.formal.spec_encoder import SpecEncoder
from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.encoder import Utf8Encoder
from utf8_gateware.hdl.error_kind import ErrorKind
from proofs import Mutant, assert_proved


class LateBugEncoder(Mutant):
    """The real encoder, whose output byte gets bit 0 flipped once 1023 beats went out."""
    def __init__(self, errors):
        super().__init__(Utf8Encoder(errors))
        self.DRAIN = self._core.DRAIN

    def corrupt(self, m, core):
        beats = Signal(10)
        with m.If(core.o.valid & self.o.ready & (beats != 1023)):
            m.d.sync += beats.eq(beats + 1)
        with m.If(beats == 1023):
            m.d.comb += self.o.payload.data.eq(core.o.payload.data ^ 1)


class JitteryDecoder(Mutant):
    """The real decoder, whose output payload toggles bit 0 in every cycle (a stream-rule
    violation while the sink refuses it: the payload must hold until the transfer)."""
    def __init__(self, errors):
        super().__init__(Utf8Decoder(errors))

    def corrupt(self, m, core):
        toggle = Signal()
        m.d.sync += toggle.eq(~toggle)
        m.d.comb += self.o.payload.codepoint.eq(core.o.payload.codepoint ^ toggle)


class LateAsciiDecoder(Mutant):
    """The real decoder ``core``, whose output "A" reads "a" once 1023 outputs went out."""
    def corrupt(self, m, core):
        beats = Signal(10)
        with m.If(core.o.valid & self.o.ready & (beats != 1023)):
            m.d.sync += beats.eq(beats + 1)
        with m.If((beats == 1023) & (core.o.payload.codepoint == 0x41)):
            m.d.comb += self.o.payload.codepoint.eq(0x61)


class LateKindDecoder(Mutant):
    """The real decoder ``core``, whose ``TRUNCATED`` errors read ``OVERLONG`` once 1023
    outputs went out (a bug property 2 cannot see: only the equivalence with the spec model)."""
    def corrupt(self, m, core):
        beats = Signal(10)
        with m.If(core.o.valid & self.o.ready & (beats != 1023)):
            m.d.sync += beats.eq(beats + 1)
        with m.If((beats == 1023) & (core.o.payload.error == ErrorKind.TRUNCATED)):
            m.d.comb += self.o.payload.error.eq(ErrorKind.OVERLONG)


class OverlongNulSpecEncoder(SpecEncoder):
    """The encoder's spec model, writing U+0000 as the overlong C0 80 (Modified UTF-8's)."""
    def elaborate(self, platform):
        m = super().elaborate(platform)
        beats = self.o
        with m.If(self.i.valid & (self.i.payload.codepoint == 0)):
            m.d.comb += [beats.count.eq(2), beats.items[0].data.eq(0xC0),
                         beats.items[0].last.eq(0), beats.items[1].data.eq(0x80),
                         beats.items[1].error.eq(ErrorKind.NONE),
                         beats.items[1].last.eq(self.i.payload.last)]
        return m


# A k-induction run that finds the bug only in its induction step (the base case is shorter than
# the bug's trace) reports UNKNOWN rather than FAIL: either way the proof does not pass, and the
# failed property is named.
MUTANTS = [
    pytest.param(lambda: induction.EncoderEquivalenceForever("replace", LateBugEncoder),
                 "differs from the expected", id="encoder-late-bug"),
    pytest.param(lambda: induction.decoder_rules_forever("replace", JitteryDecoder),
                 "payload changed before the transfer", id="decoder-jittery"),
    # The spec models' round trips, with an encoder model that writes U+0000 overlong, and one
    # that replaces the escapes.
    pytest.param(lambda: spec_roundtrip.SpecUnitsRoundTrip(OverlongNulSpecEncoder),
                 "spec round trip", id="spec-units-overlong-nul"),
    pytest.param(lambda: spec_roundtrip.SpecBytesRoundTrip(lambda errors: SpecEncoder("replace")),
                 "the encoder flagged an error", id="spec-bytes-replace-encoder"),
]


# The decoder's mutants run with the proofs they check (marker ``formal_long``): each is about
# 25-30 s of CPU, which would take the ``formal`` marker past two minutes on two cores.
LONG_MUTANTS = [
    pytest.param(lambda: induction.DecoderAsciiForever("replace", LateAsciiDecoder),
                 "differs from the expected", id="decoder-late-ascii-bug"),
    pytest.param(lambda: induction.DecoderEquivalenceForever("replace", LateKindDecoder),
                 "differs from the expected", id="decoder-late-kind-bug"),
]


@pytest.mark.formal
@pytest.mark.parametrize("build,message", MUTANTS)
def test_mutant_is_not_proven(build, message, tmp_path):
    _assert_not_proven(build, message, tmp_path)


@pytest.mark.formal_long
@pytest.mark.parametrize("build,message", LONG_MUTANTS)
def test_long_mutant_is_not_proven(build, message, tmp_path):
    _assert_not_proven(build, message, tmp_path)


def _assert_not_proven(build, message, tmp_path):
    try:
        result = runner.run_sby(build(), name="mutant", mode="prove", depth=2,
                                workdir=tmp_path, reset="any")
    except toolchain.ToolError as error:
        pytest.fail(str(error), pytrace=False)
    assert result.status in ("FAIL", "UNKNOWN"), result.summary()
    assert any(message in line for line in result.failed), result.summary()


@pytest.fixture(scope="module")
def long_results(request, tmp_path_factory):
    """The sby runs of the selected long proofs (each proof and its cover), in parallel."""
    selected = {item.callspec.params["proof"].name: item.callspec.params["proof"]
                for item in request.session.items
                if item.module is not None and item.module.__name__ == __name__ and
                hasattr(item, "callspec") and "proof" in item.callspec.params}
    jobs = [job for proof in selected.values() for job in proof.jobs()]
    try:
        return runner.run_many(jobs, workdir=tmp_path_factory.mktemp("formal-long"))
    except toolchain.ToolError as error:
        pytest.fail(str(error), pytrace=False)


@pytest.mark.formal_long
@pytest.mark.parametrize("proof", induction.LONG_PROOFS, ids=lambda proof: proof.name)
def test_long_proof(proof, long_results):
    assert_proved(long_results, proof.name)
