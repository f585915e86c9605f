"""Verilog export: the AXI4-Stream adapter, the exported file (header, ports, lint) and the
``export`` command. The exported files are simulated in ``test_export_cocotb.py``."""

import re

import pytest
from amaranth.hdl import Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from exported import VARIANTS, ports
from standins import LANES, ByteBeatLayout, ByteWiden, CodepointBeatLayout, LaneWiden
from utf8_gateware.cli import main
from utf8_gateware.hdl.axi_stream import AxiStreamAdapter, axis_map
from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.export import (VERILATOR_WAIVERS, check_module_name, core_parameters,
                                      export_verilog, make_core, parameter_choices)
from utf8_gateware.hdl.layouts import (ByteLayout, CodepointLayout, EncodedByteLayout,
                                       UnitLayout)
from utf8_gateware.sim.cocotb_verilator import lint
from utf8_gateware.sim.testbench import run_simulation


# -------------------------------------------------------------------------------------------------
# Payload layouts -> AXI4-Stream

def test_axis_map_of_the_core_layouts():
    byte, codepoint = axis_map(ByteLayout), axis_map(CodepointLayout)
    assert (byte.tdata, byte.tuser, byte.tlast) == (((("data",), 8),), (), ("last",))
    assert codepoint.tdata == ((("codepoint",), 32),) and codepoint.tuser == ((("error",), 3),)
    assert axis_map(UnitLayout).width("tdata") == 32
    encoded = axis_map(EncodedByteLayout)
    assert (encoded.width("tdata"), encoded.width("tuser"), encoded.width("tkeep")) == (8, 3, 0)


def test_axis_map_of_beats():
    lanes_in = axis_map(ByteBeatLayout)
    assert (lanes_in.width("tdata"), lanes_in.width("tkeep"), lanes_in.lanes) == (32, 4, 4)
    lanes_out = axis_map(CodepointBeatLayout)
    assert (lanes_out.width("tdata"), lanes_out.width("tkeep"), lanes_out.width("tuser")) == \
        (32 * LANES, 4 * LANES, 3 * LANES)


@pytest.mark.parametrize("layout, message", [
    (data.StructLayout({"data": 8}), "needs a 1-bit 'last'"),
    (data.StructLayout({"data": 8, "parity": 1, "last": 1}), "field parity has no AXI4-Stream"),
    (data.StructLayout({"last": 1}), "exactly one 'data', 'codepoint' or 'unit'"),
    (data.StructLayout({"codepoint": 33, "last": 1}), "wider than 32 bits"),
    (data.StructLayout({"unit": 8, "last": 1}), "not a 16-bit code unit"),
    (data.StructLayout({"data": 8, "error": 3, "last": 1}), "is not an ErrorKind"),
    (data.StructLayout({"lanes": data.ArrayLayout(data.StructLayout({"data": 8}), 2),
                        "last": 1}), "needs a 'valid'"),
])
def test_axis_map_rejects(layout, message):
    with pytest.raises(ValueError, match=message):
        axis_map(layout)


class TwoInputs(wiring.Component):
    a: In(stream.Signature(ByteLayout))
    b: In(stream.Signature(ByteLayout))
    o: Out(stream.Signature(ByteLayout))

    def elaborate(self, platform):
        return Module()


def test_adapter_rejects_what_it_cannot_wrap():
    with pytest.raises(TypeError, match="must be a wiring.Component"):
        AxiStreamAdapter("decoder")
    core = TwoInputs()
    with pytest.raises(TypeError, match="one input and one output stream"):
        AxiStreamAdapter(core)
    Simulator(core)   # elaborated: no UnusedElaboratable warning


def test_adapter_ports():
    adapter = AxiStreamAdapter(Utf8Decoder())
    widths = {name: member.shape for name, member in adapter.signature.members.items()}
    assert widths == {"aclk": 1, "aresetn": 1, "s_axis_tdata": 8, "s_axis_tvalid": 1,
                      "s_axis_tready": 1, "s_axis_tlast": 1, "m_axis_tdata": 32,
                      "m_axis_tvalid": 1, "m_axis_tready": 1, "m_axis_tlast": 1,
                      "m_axis_tuser": 3}
    Simulator(adapter)   # elaborated: no UnusedElaboratable warning


def test_adapter_lanes_and_reset():
    """tkeep (contiguous) becomes the byte count; each lane's code point, error kind and valid
    flag land in its tdata, tuser and tkeep slots; aresetn is active low."""
    adapter = AxiStreamAdapter(LaneWiden())

    async def testbench(ctx):
        ctx.set(adapter.s_axis_tdata, 0x41_C3_80_7A)
        ctx.set(adapter.s_axis_tvalid, 1)
        ctx.set(adapter.s_axis_tlast, 1)
        ctx.set(adapter.m_axis_tready, 1)
        for tkeep, count in ((0b0001, 1), (0b0011, 2), (0b0111, 3), (0b1111, 4)):
            ctx.set(adapter.s_axis_tkeep, tkeep)
            assert ctx.get(adapter.core.i.p.count) == count
            keep = sum(0xF << 4 * lane for lane in range(count))
            assert ctx.get(adapter.m_axis_tkeep) == keep
        assert ctx.get(adapter.m_axis_tdata) == 0x41 << 96 | 0xC3 << 64 | 0x80 << 32 | 0x7A
        invalid = ErrorKind.INVALID_BYTE.value
        assert ctx.get(adapter.m_axis_tuser) == invalid << 6 | invalid << 3
        assert ctx.get(adapter.m_axis_tvalid) and ctx.get(adapter.m_axis_tlast)
        assert ctx.get(adapter.s_axis_tready)

    sim = Simulator(adapter)
    sim.add_testbench(testbench)
    run_simulation(sim, "adapter-lanes")


def test_adapter_clock_and_active_low_reset():
    """aclk clocks the core; aresetn low at a rising edge resets it, high does not."""
    adapter = AxiStreamAdapter(ByteWiden())

    async def edge(ctx):
        ctx.set(adapter.aclk, 1)
        await ctx.delay(1e-9)
        ctx.set(adapter.aclk, 0)
        await ctx.delay(1e-9)

    async def testbench(ctx):
        ctx.set(adapter.aresetn, 1)
        ctx.set(adapter.s_axis_tdata, 0x41)
        ctx.set(adapter.s_axis_tvalid, 1)
        await ctx.delay(1e-9)
        await edge(ctx)
        assert ctx.get(adapter.m_axis_tvalid) and ctx.get(adapter.m_axis_tdata) == 0x41
        ctx.set(adapter.s_axis_tvalid, 0)
        await edge(ctx)       # m_axis_tready is low: the output holds
        assert ctx.get(adapter.m_axis_tvalid)
        ctx.set(adapter.aresetn, 0)
        await ctx.delay(1e-9)
        assert ctx.get(adapter.m_axis_tvalid), "the reset is synchronous"
        await edge(ctx)
        assert not ctx.get(adapter.m_axis_tvalid)

    sim = Simulator(adapter)
    sim.add_testbench(testbench)
    run_simulation(sim, "adapter-reset")


# -------------------------------------------------------------------------------------------------
# The exported file

_PRAGMA = re.compile(r"^\s*//\s*(verilator|synopsys|synthesis|pragma|translate_o)", re.M | re.I)


@pytest.mark.parametrize("variant", VARIANTS)
def test_exported_file(exported, variant):
    """One module with the AXI4-Stream ports; the header states the parameters, ports, tuser
    encoding, reset, latency and throughput, and no comment reads as a tool's pragma."""
    item = exported[variant]
    text = item.verilog
    assert text.count("\nmodule ") == 1 and text.rstrip().endswith("endmodule")
    assert not re.search(r"`(include|define|timescale)", text)
    header = text[:text.index("\nmodule ")]
    assert all(line.startswith("//") for line in header.strip().splitlines())
    assert not _PRAGMA.search(text)
    assert f"{item.module}: the {item.core} of utf8-gateware" in header
    for key, value in item.params.items():
        assert f"{key}={value!r}" in header
    lanes = item.params.get("lanes", 1)
    widths = {name: width for _, width, name in ports(text)}
    expected = {"aclk": 1, "aresetn": 1, "s_axis_tvalid": 1, "s_axis_tready": 1,
                "s_axis_tlast": 1, "m_axis_tvalid": 1, "m_axis_tready": 1, "m_axis_tlast": 1,
                "s_axis_tdata": {"encoder": 32, "utf16_encoder": 32, "utf16_decoder": 16,
                                 "utf16_bytes": 16, "utf16_bom_writer": 16,
                                 "utf16_bom_bytes": 16,
                                 "text_encoder": 32}.get(item.core, 8 * lanes),
                "m_axis_tdata": {"decoder": 32 * lanes, "utf16_decoder": 32, "utf16_encoder": 16,
                                 "text_decoder": 32,
                                 "utf16_units": 16, "utf16_bom_units": 16,
                                 "utf16_bom_writer": 16}.get(item.core, 8),
                "m_axis_tuser": 3 * lanes}
    if item.core in ("utf16_decoder", "utf16_bytes", "utf16_bom_writer",
                     "utf16_bom_bytes"):                              # an input unit's kind
        expected.update(s_axis_tuser=3)
        assert "s_axis_tuser[2:0] is the error kind of the input code unit" in \
            header.replace("\n// ", " ")
    if item.core in ("utf8_bom_writer", "cesu8_expander"):            # an input byte's kind
        expected.update(s_axis_tuser=3)
        assert "s_axis_tuser[2:0] is the error kind of the input byte, as the sanitizer" in \
            header.replace("\n// ", " ")
    if lanes > 1:
        expected.update(s_axis_tkeep=lanes, m_axis_tkeep=4 * lanes)
    if item.core == "validator":   # a verdict: offset and count; the kind and valid
        expected.update(m_axis_tdata=64, m_axis_tuser=4)
        expected.pop("m_axis_tkeep", None)
        assert "Verdict: one output beat per input message" in header.replace("\n// ", " ")
    assert widths == expected
    flat = " ".join(line[2:].strip() for line in header.splitlines())
    for kind in ErrorKind:
        assert f"{kind.value} {kind.label}" in flat
    assert "Latency" in flat and "Reset: aresetn low" in flat
    assert ("Lanes: lane 0 holds the first item" in flat) == (lanes > 1)
    for port, width in widths.items():
        direction = "input" if port in ("aclk", "aresetn") or port in (
            "s_axis_tdata", "s_axis_tkeep", "s_axis_tvalid", "s_axis_tlast", "s_axis_tuser",
            "m_axis_tready") else "output"
        assert re.search(rf"//\s+{port}\s+{direction}\s+{width}\s", header), port


def test_export_without_initial_values(exported):
    with_values = exported["decoder_replace"].verilog
    without = exported["decoder_replace_noinit"].verilog
    assert re.search(r"^\s*reg\b[^;]*=", with_values, re.M)
    assert not re.search(r"^\s*reg\b[^;]*=", without, re.M)
    assert "at least one rising edge of aclk after power-up" in without


def test_lint(exported, tmp_path):
    """verilator --lint-only -Wall reports nothing but the listed harmless warnings, and each
    of them occurs (the list is not stale)."""
    seen = set()
    for item in exported.values():
        found = lint([item.path], item.module)
        codes = {code for code, _ in found}
        assert codes <= set(VERILATOR_WAIVERS), \
            [message for code, message in found if code not in VERILATOR_WAIVERS][:5]
        assert item.initial_values or "PROCASSINIT" not in codes
        seen |= codes
    assert seen == set(VERILATOR_WAIVERS)


def test_lint_catches_a_defect(exported, tmp_path):
    """The lint check can fail: a blocking assignment in a clocked block is reported."""
    text = exported["encoder_strict"].verilog
    broken = text.replace("endmodule", "  reg stray;\n  always @(posedge aclk) stray = 1'b0;\n"
                                       "endmodule")
    (tmp_path / "utf8_encoder_strict.v").write_text(broken)
    codes = {code for code, _ in lint([tmp_path / "utf8_encoder_strict.v"],
                                      "utf8_encoder_strict")}
    assert "BLKSEQ" in codes


@pytest.mark.parametrize("name, message", [
    ("2fast", "Verilog identifier"), ("my-core", "Verilog identifier"), ("", "identifier"),
    ("module", "is a Verilog keyword"), ("wire", "is a Verilog keyword"),
])
def test_module_name_rejected(name, message):
    with pytest.raises(ValueError, match=message):
        check_module_name(name)


def test_core_parameters_and_checks():
    assert core_parameters("decoder") == {"errors": "replace", "lanes": 1, "encoding": "utf-8"}
    assert parameter_choices("decoder", "encoding") == ("utf-8", "utf-8-sig", "cesu-8",
                                                        "mutf-8", "wtf-8", "utf-8-rfc2279")
    assert core_parameters("utf16_decoder") == {"errors": "replace"}
    assert core_parameters("utf16_bom_units") == core_parameters("utf16_bom_writer") == {}
    assert core_parameters("utf8_bom_writer") == core_parameters("utf16_bom_bytes") == {}
    assert core_parameters("cesu8_expander") == {"encoding": "cesu-8"}
    assert parameter_choices("cesu8_expander", "encoding") == ("cesu-8", "mutf-8")
    assert parameter_choices("decoder", "lanes") == (1, 2, 4, 8, 16)
    assert parameter_choices("encoder", "errors") == ("replace", "strict", "surrogateescape")
    # (carry_error is internal)
    assert core_parameters("encoder") == {"errors": "replace", "encoding": "utf-8"}
    with pytest.raises(ValueError, match="core must be one of decoder, encoder"):
        make_core("multiplier")
    with pytest.raises(ValueError, match="decoder takes no parameter 'width'"):
        make_core("decoder", width=8)
    with pytest.raises(ValueError, match="lanes must be one of 1, 2, 4, 8, 16, not 3"):
        make_core("decoder", lanes=3)
    with pytest.raises(ValueError, match="decoder errors must be one of replace, "
                                         "surrogateescape, not 'strict'"):
        make_core("decoder", errors="strict")
    with pytest.raises(TypeError, match="initial_values must be a bool"):
        export_verilog("decoder", initial_values="no")


# -------------------------------------------------------------------------------------------------
# The command

def run(capsys, *argv):
    status = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_export_command(tmp_path, capsys):
    status, out, err = run(capsys, "export", "encoder", "--errors", "strict", "-o",
                           tmp_path / "enc.v", "--name", "my_encoder", "--no-initial-values")
    assert (status, out, err) == (0, "", "")
    text = (tmp_path / "enc.v").read_text()
    assert "\nmodule my_encoder(" in text and "errors='strict'" in text
    assert "--no-initial-values" in text and not re.search(r"^\s*reg\b[^;]*=", text, re.M)
    status, out, err = run(capsys, "export", "decoder")
    assert status == 0 and "\nmodule utf8_decoder(" in out and err == ""


@pytest.mark.parametrize("argv, message", [
    (["sanitizer", "--errors", "strict"], "sanitizer errors must be one of replace, "
                                          "surrogateescape, not 'strict'"),
    (["decoder", "--name", "reg"], "module name 'reg' is a Verilog keyword"),
    (["decoder", "--name", "a.b"], "module name must be a Verilog identifier"),
    (["decoder", "-o", "/nonexistent/dir/x.v"], "cannot write"),
    (["encoder", "--lanes", "4"], "encoder takes no parameter 'lanes' (it takes errors, encoding)"),
    (["utf16_bom_writer", "--errors", "replace"], "utf16_bom_writer takes no parameter 'errors'"),
    (["utf8_bom_writer", "--errors", "replace"], "utf8_bom_writer takes no parameter 'errors'"),
    (["cesu8_expander", "--encoding", "utf-8"], "encoding must be one of those the gateware "
                                                "expands into ('cesu-8', 'mutf-8'), not 'utf-8'"),
])
def test_export_command_errors(capsys, argv, message):
    status, out, err = run(capsys, "export", *argv)
    assert status == 2 and out == ""
    assert err.startswith("utf8-gateware: error: ") and len(err.strip().splitlines()) == 1
    assert message in err


def test_export_command_usage(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["export", "multiplier"])
    assert exit.value.code == 2
    assert "invalid choice: 'multiplier'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit:
        main(["export", "decoder", "--lanes", "3"])
    assert exit.value.code == 2
    assert "invalid choice: 3 (choose from 1, 2, 4, 8, 16)" in capsys.readouterr().err
