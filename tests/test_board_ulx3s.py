# amaranth: UnusedElaboratable=no
"""The second board: the ULX3S (ECP5 LFE5U-25F) with the same board core and protocol as the
iCEBreaker: its PLL setting and its build (slow); ``program``'s one-line errors are tested with
the iCEBreaker's in ``test_board_build.py``."""

import json
import subprocess
import sys

import pytest

from utf8_gateware.boards import ulx3s
from utf8_gateware.boards.pll import ECP5PLL, ecp5_pll_parameters
from utf8_gateware.boards.uart import uart_divisor


CLI = [sys.executable, "-m", "utf8_gateware"]


@pytest.mark.parametrize("mhz, clki_div, clkfb_div, clkop_div", [
    (60, 5, 12, 13), (45, 5, 9, 17), (30, 5, 6, 26), (75, 1, 3, 10)])
def test_ecp5_pll_settings(mhz, clki_div, clkfb_div, clkop_div):
    p = ecp5_pll_parameters(mhz * 1e6)
    assert (p.clki_div, p.clkfb_div, p.clkop_div) == (clki_div, clkfb_div, clkop_div)
    assert p.f_out == mhz * 1e6 and p.error == 0
    assert 3.125e6 <= p.f_pfd <= 400e6 and 400e6 <= p.f_vco <= 800e6


def test_ecp5_pll_every_result_is_in_range():
    # The phase detector's 3.125 MHz floor leaves steps of 3.125 MHz at the low end.
    for mhz in range(10, 400, 13):
        p = ecp5_pll_parameters(mhz * 1e6, tolerance=0.1)
        assert abs(p.error) <= 0.1
        assert 400e6 <= p.f_vco <= 800e6 and 3.125e6 <= p.f_pfd


@pytest.mark.parametrize("args, exc, message", [
    ((48e6,), ValueError, r"^the ECP5 PLL cannot make 48 MHz from 25 MHz: the closest is "
                          r"46\.8750 MHz \(-2\.34%\), tolerance 0\.50%$"),
    ((500e6,), ValueError, r"^PLL output 500 MHz is outside the ECP5 PLL's range"),
    ((60e6, 5e6), ValueError, r"^PLL input 5 MHz is outside"),
    (("60",), TypeError, r"^f_out must be a number"),
])
def test_ecp5_pll_errors(args, exc, message):
    with pytest.raises(exc, match=message):
        ecp5_pll_parameters(*args)
    with pytest.raises(TypeError, match="must be ECP5PLLParameters"):
        ECP5PLL(object(), None)


def test_board_clock():
    # The PLL makes the design clock exactly, and it is a whole multiple of the baud rate.
    assert ecp5_pll_parameters(ulx3s.CLOCK_HZ).f_out == ulx3s.CLOCK_HZ
    assert ulx3s.CLOCK_HZ / uart_divisor(ulx3s.CLOCK_HZ, ulx3s.BAUD) == ulx3s.BAUD
    with pytest.raises(ValueError, match="cannot make 48 MHz"):
        ulx3s.ULX3STop(48e6)


@pytest.mark.slow
def test_build_ulx3s_meets_timing(tmp_path):
    """The ULX3S bitstream (yosys synth_ecp5, nextpnr-ecp5 with --report, ecppack): timing met
    at the design clock, the buffers in block RAM, the PLL used."""
    report_path = tmp_path / "report.json"
    result = subprocess.run([*CLI, "build", "--board", "ulx3s", "--build-dir",
                             str(tmp_path / "build"), "--json", str(report_path)],
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(report_path.read_text())
    print(json.dumps({key: report[key] for key in ("clock_mhz", "fmax_mhz", "lut4", "ff",
                                                   "ram", "pll", "seconds")}))
    assert report["board"] == "ulx3s" and report["timing_met"] is True
    assert report["clock_mhz"] == ulx3s.CLOCK_HZ / 1e6
    assert max(report["fmax_mhz"].values()) >= report["clock_mhz"]
    assert 0 < report["lut4"]["used"] <= report["lut4"]["available"]
    assert report["ram"]["used"] >= 48          # 96 KiB of buffers, 2 KiB per DP16KD
    assert report["pll"]["used"] == 1 and report["pll"]["f_out_mhz"] == report["clock_mhz"]
    assert report["baud"] == ulx3s.BAUD
    assert (tmp_path / "build" / "utf8_gateware.bit").stat().st_size > 50_000
    assert "timing met" in result.stdout
