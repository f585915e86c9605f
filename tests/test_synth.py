# amaranth: UnusedElaboratable=no
"""Synthesis for the iCE40 UP5K: the port harness, the report, and the ``synth`` command."""

import json

import pytest
from amaranth.back import rtlil

from utf8_gateware.cli import main
from utf8_gateware.hdl import synth


def assert_sane(report, target):
    assert report["target"] == target
    assert 10 < report["fmax_mhz"] < 1000
    assert 0 < report["lc"] < report["lc_available"] == 5280
    assert report["ram"] == 0
    assert report["seed"] == 1
    assert report["yosys"].startswith("Yosys ")
    assert "nextpnr" in report["nextpnr"]
    assert report["critical_path"]["delay_ns"] == pytest.approx(1000 / report["fmax_mhz"],
                                                                rel=0.02)


def test_harness_registers_every_port_bit():
    core = synth.CeilingCore(width=8)
    harness = synth.PortHarness(core)
    assert (harness.in_bits, harness.out_bits) == (8, 8)
    text = rtlil.convert(harness, ports=harness.ports)
    assert "input 0  \\clk" in text or "\\clk" in text
    core, params = synth.make_target("encoder", errors="strict")
    harness = synth.PortHarness(core)
    # i: payload 33 + valid, o.ready in; i.ready, o: payload 12 + valid out.
    assert (harness.in_bits, harness.out_bits) == (35, 14)
    assert params == {"errors": "strict"}
    rtlil.convert(harness, ports=harness.ports)  # elaborated: no UnusedElaboratable warning


def test_target_arguments():
    with pytest.raises(ValueError, match="target must be one of"):
        synth.make_target("multiplier")
    with pytest.raises(ValueError, match="takes no --errors"):
        synth.make_target("ceiling", errors="replace")
    with pytest.raises(ValueError, match="decoder errors must be one of"):
        synth.make_target("decoder", errors="strict")
    with pytest.raises(ValueError, match="seed"):
        synth.synthesize(synth.CeilingCore(), seed=-1)


def test_synth_ceiling(tmp_path, capsys):
    status = main(["synth", "ceiling", "--json", str(tmp_path / "r.json"),
                   "--build-dir", str(tmp_path / "build")])
    out, err = capsys.readouterr()
    assert status == 0 and err == ""
    assert out.startswith("ceiling (width=32): fmax ")
    report = json.loads((tmp_path / "r.json").read_text())
    assert_sane(report, "ceiling")
    assert report["params"] == {"width": 32}
    # 32 input flip-flops, 32 LUT + flip-flop pairs, 32 load muxes: one LUT level everywhere.
    assert 96 <= report["lc"] <= 110
    assert (tmp_path / "build" / "ceiling_harness.asc").is_file()


def test_synth_errors_are_one_line(capsys):
    status = main(["synth", "ceiling", "--errors", "replace"])
    _, err = capsys.readouterr()
    assert status == 2
    assert err.strip() == "utf8-gateware: error: synth: the ceiling target takes no --errors"


@pytest.mark.slow
def test_synth_encoder():
    report = synth.synth_target("encoder", errors="replace")
    assert_sane(report, "encoder")
    assert report["params"] == {"errors": "replace"}
    assert report["lc"] > 60


@pytest.mark.slow
def test_synth_decoder():
    report = synth.synth_target("decoder", errors="surrogateescape")
    assert_sane(report, "decoder")
    assert report["lc"] > 60
