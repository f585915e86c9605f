# amaranth: UnusedElaboratable=no
"""Formal proofs of the cores with yowasp-sby (marker ``formal``).

Every proof of :data:`utf8_gateware.formal.checks.PROOFS` runs twice: its method (``prove``
= k-induction, or ``bmc``) must PASS and its ``cover`` run must reach every cover (so the proof
is not vacuous). The ``sby`` runs of all selected tests are started together, two at a time (one
per core), by a module fixture; each test then checks its own results. On a failure the message
names the failed property (with its source line's message) and the counterexample trace (VCD).

A mutation test wraps the real decoder so that it accepts the overlong C0 80 as U+0000 (the
"hidden NUL"); the equivalence proof and the ASCII proof must then FAIL. Others wrap the N-lane
decoder so that an "A" in one output lane reads "a", and the N-lane validator so that it reports
a first error in a beat's last lane one byte early; the lane proofs must then FAIL.

The proofs of :data:`PROOFS` with ``long`` set (the 2-lane decoder's, the validator's and the
deepest lane proofs) and
the mutants of :data:`MUTANT_PROOFS` with ``long`` set are in ``test_formal_long.py`` (marker
``formal_long``), which shares this module's fixture.
"""

import time

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.layouts import ByteLayout, CodepointLayout
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware import toolchain
from utf8_gateware.formal import checks as formal_checks, runner as formal
from utf8_gateware.formal.checks import PROOFS, Proof
from proofs import Mutant, assert_proved


pytestmark = pytest.mark.formal


# -- mutation: a decoder that accepts the overlong NUL ---------------------------------------------

class OverlongNulDecoder(wiring.Component):
    """The real :class:`~utf8_gateware.hdl.decoder.Utf8Decoder`, wrapped so that the byte pair
    C0 80 reaches it as the single byte 00: a decoder with the classic bug of accepting the
    overlong form of U+0000 (which smuggles a NUL past a check on the bytes)."""
    i: In(stream.Signature(ByteLayout))
    o: Out(stream.Signature(CodepointLayout))

    def __init__(self, errors):
        from utf8_gateware.hdl.decoder import Utf8Decoder

        self._decoder = Utf8Decoder(errors)
        super().__init__()

    @property
    def LATENCY(self):
        return self._decoder.LATENCY + 1  # the C0 held back

    def elaborate(self, platform):
        m = Module()
        m.submodules.decoder = decoder = self._decoder
        wiring.connect(m, decoder.o, wiring.flipped(self.o))
        held_c0 = Signal()  # a C0 was taken and not yet passed on
        byte = self.i.payload
        with m.If(~held_c0):
            with m.If(self.i.valid & (byte.data == 0xC0) & ~byte.last):
                m.d.comb += self.i.ready.eq(1)
                m.d.sync += held_c0.eq(1)
            with m.Else():
                m.d.comb += [decoder.i.valid.eq(self.i.valid), decoder.i.payload.eq(byte),
                             self.i.ready.eq(decoder.i.ready)]
        with m.Elif(self.i.valid):
            m.d.comb += decoder.i.valid.eq(1)
            with m.If(byte.data == 0x80):  # C0 80 -> 00
                m.d.comb += [decoder.i.payload.data.eq(0x00),
                             decoder.i.payload.last.eq(byte.last),
                             self.i.ready.eq(decoder.i.ready)]
            with m.Else():                 # C0 x -> C0, then x in the next cycle
                m.d.comb += decoder.i.payload.data.eq(0xC0)
            with m.If(decoder.i.ready):
                m.d.sync += held_c0.eq(0)
        return m


class LaneMutantDecoder(Mutant):
    """The real N-lane :class:`~utf8_gateware.hdl.decoder.Utf8Decoder` whose output lane
    ``lane`` reads U+0061 "a" where the decoder gives U+0041 "A" (a mistake in one lane
    only)."""
    def __init__(self, errors, lanes, lane):
        from utf8_gateware.hdl.decoder import Utf8Decoder

        super().__init__(Utf8Decoder(errors, lanes=lanes))
        self._lane = lane

    def corrupt(self, m, core):
        lane = core.o.payload.lanes[self._lane]
        with m.If(lane.valid & (lane.error == ErrorKind.NONE) & (lane.codepoint == 0x41)):
            m.d.comb += self.o.payload.lanes[self._lane].codepoint.eq(0x61)


class OffsetMutantValidator(Mutant):
    """The real :class:`~utf8_gateware.hdl.validator.Utf8Validator` whose verdict reports one
    byte too early a first error in the last lane of a 4-byte beat (offset 3 mod 4): wrong only
    through its ports, so the mutant survives a redesign of the validator's insides."""
    def __init__(self, lanes, counter_width):
        from utf8_gateware.hdl.validator import Utf8Validator

        super().__init__(Utf8Validator(lanes=lanes, counter_width=counter_width))

    def corrupt(self, m, core):
        out = core.o.payload
        with m.If(~out.valid & (out.offset[:2] == 3)):
            m.d.comb += self.o.payload.offset.eq(out.offset - 1)


def _lane_depth(lanes):
    return next(depth for n, depth, *_ in formal_checks.DECODER_LANE_PROOFS if n == lanes)


MUTANT_PROOFS = [
    Proof("mutant-decoder-spec", "the overlong-NUL mutant differs from the spec model",
          "bmc", 10, 1, lambda: formal_checks.DecoderEquivalence("replace", OverlongNulDecoder)),
    Proof("mutant-decoder-ascii", "the overlong-NUL mutant outputs an ASCII byte never input",
          "bmc", 10, 1, lambda: formal_checks.DecoderProperties("replace", OverlongNulDecoder)),
    # The lane proofs at their own depths: lane 1 of 2 (replace; with the 2-lane proofs in
    # `formal_long`), lane 2 of 4 (surrogateescape).
    *(Proof(f"mutant-decoder-lanes{lanes}", f"the lane-{lane} mutant differs from the spec model",
            "bmc", _lane_depth(lanes), 1,
            lambda errors=errors, lanes=lanes, lane=lane: formal_checks.DecoderEquivalence(
                errors, lambda errors: LaneMutantDecoder(errors, lanes, lane), lanes=lanes),
            long=lanes == 2)
      for lanes, lane, errors in ((2, 1, "replace"), (4, 2, "surrogateescape"))),
    Proof("mutant-validator-lanes4", "the offset mutant differs from the spec validator", "bmc",
          formal_checks.VALIDATOR_LANE_PROOFS[0][1], 1,
          lambda: formal_checks.ValidatorEquivalence(
              4, lambda: OffsetMutantValidator(4, 8), counter_width=8), long=True),
]


# -- running the proofs ---------------------------------------------------------------------------

def _jobs(proof, *, cover=True):
    if not cover:
        return proof.jobs(expect="FAIL")[:1]
    return proof.jobs()


@pytest.fixture(scope="module")
def results(request, tmp_path_factory):
    """Run the sby jobs of every selected test of this module in parallel, once."""
    proofs = {}
    for item in request.session.items:
        if item.module is not None and item.module.__name__ == request.module.__name__ and \
                hasattr(item, "callspec") and "proof" in item.callspec.params:
            proof = item.callspec.params["proof"]
            proofs[proof.name] = proof
    jobs = []
    for proof in proofs.values():
        jobs += _jobs(proof, cover=not proof.name.startswith("mutant-"))
    workdir = tmp_path_factory.mktemp("formal")
    started = time.monotonic()
    try:
        results = formal.run_many(jobs, workdir=workdir)
    except toolchain.ToolError as error:
        pytest.fail(str(error), pytrace=False)
    # A table of every run in the test log (sby's own logs are in `workdir`).
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
                                f"{time.monotonic() - started:.0f} s ({workdir})")
    return results


@pytest.mark.parametrize("proof", [proof for proof in PROOFS if not proof.long],
                         ids=lambda proof: proof.name)
def test_proof(proof, results):
    assert_proved(results, proof.name)


@pytest.mark.parametrize("proof", [proof for proof in MUTANT_PROOFS if not proof.long],
                         ids=lambda proof: proof.name)
def test_mutant_is_caught(proof, results):
    result = results[proof.name]
    assert result.status == "FAIL", result.summary()
    assert result.traces and all(path.is_file() for path in result.traces), result.summary()


# -- structural: valid and payload never depend on ready -------------------------------------------

def _cores():
    cores = []
    for errors in ("replace", "surrogateescape"):
        cores.append(pytest.param("decoder", errors, id=f"decoder-{errors}"))
    for errors in ("replace", "strict", "surrogateescape"):
        cores.append(pytest.param("encoder", errors, id=f"encoder-{errors}"))
    return cores


@pytest.mark.parametrize("core,errors", _cores())
def test_valid_independent_of_ready(core, errors, tmp_path):
    dut = getattr(formal_checks, f"_{core}")(errors)
    paths = formal.combinational_paths(dut, ["o.ready"], ["o.valid", "o.payload"],
                                       workdir=tmp_path)
    assert paths == set(), f"{core}: combinational path(s) {sorted(paths)}"


@pytest.mark.parametrize("encoding", ["utf-8-sig", "cesu-8", "mutf-8", "wtf-8"])
def test_family_encoder_ready_registered(encoding, tmp_path):
    """The encoder's other encodings (states of the shift encoder, or the joiner in front): no
    combinational path from ``o.ready`` to ``o.valid``, ``o.payload`` or ``i.ready``."""
    from utf8_gateware.hdl.encoder import Utf8Encoder
    paths = formal.combinational_paths(Utf8Encoder(encoding=encoding), ["o.ready"],
                                       ["o.valid", "o.payload", "i.ready"], workdir=tmp_path)
    assert paths == set(), f"{encoding}: combinational path(s) {sorted(paths)}"


# -- the runner itself ----------------------------------------------------------------------------

class _Broken(wiring.Component):
    """A counter that must stay below 3 but does not."""
    o: Out(2)

    def elaborate(self, platform):
        from amaranth.hdl import Assert
        from amaranth.asserts import AnySeq

        m = Module()
        count = Signal(2)
        with m.If(AnySeq(1)):
            m.d.sync += count.eq(count + 1)
        m.d.comb += [self.o.eq(count), Assert(count != 3, "the counter reached 3")]
        return m


def test_runner_reports_counterexample(tmp_path):
    result = formal.run_sby(_Broken(), name="broken", mode="bmc", depth=6, workdir=tmp_path)
    assert result.status == "FAIL", result.summary()
    assert any("the counter reached 3" in line for line in result.failed), result.summary()
    assert result.traces and result.traces[0].suffix == ".vcd" and result.traces[0].is_file()
    assert "trace:" in result.summary()


def test_runner_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="mode"):
        formal.run_sby(_Broken(), name="x", mode="sim", depth=1, workdir=tmp_path)
    with pytest.raises(ValueError, match="depth"):
        formal.run_sby(_Broken(), name="x", mode="bmc", depth=0, workdir=tmp_path)


def test_missing_tool_is_one_line(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(toolchain.sys, "executable", "/nonexistent/python")
    with pytest.raises(toolchain.ToolError) as info:
        toolchain.formal_environment()
    assert "\n" not in str(info.value) and "not found" in str(info.value)


# -- the command line lists every proof the tests run ---------------------------------------------

def test_list_names_every_proof(capsys):
    from utf8_gateware.cli import main
    from utf8_gateware.formal import family, induction, rfc2279, utf16, valid_first

    assert main(["formal", "--list"]) == 0
    listed = {line.split()[0]: line.split()[4] for line in capsys.readouterr().out.splitlines()}
    want = {**{proof.name: "formal_long" if proof.long else "formal" for proof in PROOFS},
            **{proof.name: "formal_long" for proof in induction.LONG_PROOFS},
            **{proof.name: "formal" for proof in utf16.PROOFS},
            **{proof.name: "formal" for proof in rfc2279.PROOFS},
            **{proof.name: "formal_long" if proof.long else "formal" for proof in family.PROOFS},
            **{proof.name: "formal_long" for proof in valid_first.PROOFS}}
    assert listed == want
    assert any(proof.long for proof in PROOFS) and induction.LONG_PROOFS and utf16.PROOFS


@pytest.mark.parametrize("argv,marker", [([], "formal"), (["--all"], None)])
def test_default_runs_the_formal_marker(argv, marker, monkeypatch, tmp_path, capsys):
    # Without names `utf8-gateware formal` runs the proofs of the `formal` marker; --all adds
    # the long ones. (The sby runs are replaced by a stand-in that passes them all.)
    from utf8_gateware.cli import formal as command, main
    from utf8_gateware.formal.catalog import catalog

    def run_many(jobs, **kwargs):
        return {job.name: formal.FormalResult(job.name, job.mode, job.depth, job.expect, 0.0,
                                              tmp_path / job.name) for job in jobs}
    monkeypatch.setattr(command, "run_many", run_many)
    assert main(["formal", *argv]) == 0
    ran = {line.split()[1] for line in capsys.readouterr().out.splitlines()[:-1]}
    want = {job.name for entry in catalog() if marker in (None, entry.marker)
            for job in entry.proof.jobs()}
    assert ran == want and any(name.endswith("-deep") for name in ran) == (marker is None)
