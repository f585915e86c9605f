"""``utf8-gateware build`` and ``program``: the iCEBreaker (the ULX3S's build is in
``test_board_ulx3s.py``)."""

import json
import subprocess
import sys
import time

import pytest

from utf8_gateware.boards import icebreaker, ulx3s
from utf8_gateware.toolchain import find_programmer


CLI = [sys.executable, "-m", "utf8_gateware"]


@pytest.mark.slow
def test_build_meets_timing(tmp_path):
    """The full bitstream build (yosys, nextpnr-ice40 with --report, icepack) passes timing at
    the design clock; the JSON report has what the README promises."""
    report_path = tmp_path / "report.json"
    result = subprocess.run([*CLI, "build", "--build-dir", str(tmp_path / "build"),
                             "--json", str(report_path)],
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "build: place and route" in result.stderr          # progress while it runs
    report = json.loads(report_path.read_text())
    print(json.dumps({key: report[key] for key in ("clock_mhz", "fmax_mhz", "lc", "ram",
                                                   "spram", "seconds")}))
    assert report["timing_met"] is True
    assert report["clock_mhz"] == icebreaker.CLOCK_HZ / 1e6
    assert all(fmax >= report["clock_mhz"] for fmax in report["fmax_mhz"].values())
    assert 0 < report["lc"]["used"] <= report["lc"]["available"] == 5280
    assert report["spram"]["used"] == 3
    assert report["pll"]["used"] == 1 and report["pll"]["f_out_mhz"] == report["clock_mhz"]
    assert report["baud"] == icebreaker.BAUD
    assert (tmp_path / "build" / "utf8_gateware.bin").stat().st_size > 100_000
    assert "timing met" in result.stdout


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
