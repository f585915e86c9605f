"""iCE40 PLL parameter search (boards/pll.py)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from utf8_gateware.boards.pll import pll_parameters


@pytest.mark.parametrize("mhz, divr, divf, divq", [
    (48, 0, 63, 4),
    (36, 0, 47, 4),
    (24, 0, 63, 5),
    (60, 0, 79, 4),
])
def test_exact_settings(mhz, divr, divf, divq):
    p = pll_parameters(mhz * 1e6)
    assert (p.divr, p.divf, p.divq) == (divr, divf, divq)
    assert p.f_out == mhz * 1e6
    assert p.filter_range == 1
    assert 10e6 <= p.f_pfd <= 133e6 and 533e6 <= p.f_vco <= 1066e6


def test_every_result_is_in_range():
    for mhz in range(16, 276, 7):
        p = pll_parameters(mhz * 1e6, tolerance=0.02)
        assert 10e6 <= p.f_pfd <= 133e6
        assert 533e6 <= p.f_vco <= 1066e6
        assert 16e6 <= p.f_out <= 275e6
        assert abs(p.f_out - mhz * 1e6) <= 0.02 * mhz * 1e6


def test_reports_the_achieved_frequency():
    p = pll_parameters(100e6, tolerance=0.01)
    assert p.f_out == 100.5e6
    assert abs(p.error - 0.005) < 1e-9
    assert p.as_dict()["f_out_mhz"] == 100.5


@pytest.mark.parametrize("f_out, message", [
    (10e6, "outside the iCE40 PLL's range"),
    (300e6, "outside the iCE40 PLL's range"),
    (100e6, "cannot make 100 MHz"),        # 100.5 MHz is 0.5 % off; the default allows 0.5 %
])
def test_range_errors(f_out, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        pll_parameters(f_out, tolerance=0.004)


def test_bad_input_frequency():
    with pytest.raises(ValueError, match="PLL input"):
        pll_parameters(48e6, f_in=5e6)


def test_type_errors():
    with pytest.raises(TypeError, match="f_out must be a number"):
        pll_parameters("48 MHz")


def _icepll():
    path = shutil.which("yowasp-icepll") or shutil.which(
        "yowasp-icepll", path=str(Path(sys.executable).parent))
    if path is None:
        pytest.skip("yowasp-icepll not installed")
    return path


@pytest.mark.parametrize("mhz", [48, 36, 30, 42, 25])
def test_agrees_with_icepll(mhz):
    out = subprocess.run([_icepll(), "-i", "12", "-o", str(mhz)], capture_output=True,
                         text=True, timeout=60).stdout
    fields = dict(re.findall(r"^(DIVR|DIVF|DIVQ|FILTER_RANGE):\s*(\d+)", out, re.M))
    p = pll_parameters(mhz * 1e6, tolerance=0.01)
    assert (p.divr, p.divf, p.divq, p.filter_range) == tuple(
        int(fields[key]) for key in ("DIVR", "DIVF", "DIVQ", "FILTER_RANGE"))
