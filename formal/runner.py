"""Run formal proofs of Amaranth designs with SymbiYosys (YoWASP build) and the Yices solver.

* :func:`run_sby` -- convert a *harness* (an elaboratable that instantiates the design under
  test, drives its inputs from :class:`~amaranth.hdl.AnySeq`/:class:`~amaranth.hdl.AnyConst` and
  states :func:`~amaranth.hdl.Assert`/:func:`~amaranth.hdl.Assume`/:func:`~amaranth.hdl.Cover`
  properties) to RTLIL, write a ``.sby`` file for it, run ``yowasp-sby`` and return a
  :class:`FormalResult` (``PASS``/``FAIL``/``UNKNOWN``/``ERROR``/``TIMEOUT``, the failed
  properties with their source lines, and the counterexample or cover traces as VCD files).
* :func:`run_many` -- run several of those in parallel (one ``sby`` process per job).
* :func:`combinational_paths` -- the ports of a component whose value depends on another port in
  the same cycle (structural: through combinational cells only), e.g. to show that ``o.valid``
  never depends on ``o.ready``.

The harness gets a ``sync`` clock domain. Every proof starts from the registers' initial values
(as after configuration); ``reset`` (:data:`RESETS`) chooses whether the solver may also pulse
the domain's reset, in the first cycle or in any cycle. All clocked registers advance on every
solver step (``multiclock off``).

Modes (``sby``'s): ``prove`` is k-induction (the base case is a BMC of ``depth`` steps, the
induction step assumes the assertions for ``depth`` steps and proves the next); ``bmc`` proves
the assertions for the first ``depth`` steps only; ``cover`` finds a trace of at most ``depth``
steps for every :func:`Cover` and fails if one is unreachable.

Tools: ``yowasp-sby`` with the YoWASP Yosys tools and ``yices-smt2``, found by
:func:`utf8_gateware.toolchain.formal_environment`; a missing tool raises
:class:`~utf8_gateware.toolchain.ToolError` with a one-line message.

The proofs themselves are in :mod:`utf8_gateware.formal.checks`; ``utf8-gateware formal`` runs
them (:mod:`utf8_gateware.cli.formal`).
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.asserts import AnyConst, AnySeq, Initial
from amaranth.hdl import ClockDomain, Elaboratable, Module
from amaranth.back import rtlil

from utf8_gateware.toolchain import ToolError, formal_environment


__all__ = ["FormalResult", "FormalJob", "run_sby", "run_many", "combinational_paths", "MODES",
           "RESETS"]


MODES = ("prove", "bmc", "cover")


#: How the harness's ``sync`` reset is driven: ``"none"`` (tied low: the proof starts from the
#: registers' initial values, as after configuration), ``"initial"`` (the solver chooses whether
#: the first cycle is a reset), ``"any"`` (the solver may reset in any cycle; every register of
#: the harness, the core and its checkers alike, restarts).
RESETS = ("none", "initial", "any")


class _FormalTop(Elaboratable):
    """The harness plus a ``sync`` domain (clock: the ``clk`` port; reset: see :data:`RESETS`)."""
    def __init__(self, harness, reset="none"):
        self.harness = harness
        self.reset = reset
        self.domain = ClockDomain("sync")

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = self.domain
        if self.reset == "none":
            m.d.comb += self.domain.rst.eq(0)
        elif self.reset == "initial":
            m.d.comb += self.domain.rst.eq(Initial() & AnyConst(1))
        else:
            m.d.comb += self.domain.rst.eq(AnySeq(1))
        m.submodules.harness = self.harness
        return m


@dataclass
class FormalResult:
    """The outcome of one ``sby`` run.

    ``status``: ``PASS``, ``FAIL``, ``UNKNOWN`` (k-induction failed: neither proven nor refuted
    within the depth), ``ERROR`` or ``TIMEOUT``. ``failed``: the failed assertions / unreached
    covers, each with its source line. ``traces``: counterexample (or cover) traces, VCD.
    ``elapsed``: wall-clock seconds of the ``sby`` run.
    """
    name: str
    mode: str
    depth: int
    status: str
    elapsed: float
    workdir: Path
    failed: list = field(default_factory=list)
    traces: list = field(default_factory=list)
    log: str = ""

    @property
    def passed(self):
        return self.status == "PASS"

    def summary(self):
        """A few lines for an assertion message: status, failed properties, trace paths."""
        lines = [f"{self.name}: sby {self.mode} (depth {self.depth}) -> {self.status} "
                 f"in {self.elapsed:.1f} s ({self.workdir})"]
        lines += [f"  {line}" for line in self.failed]
        lines += [f"  trace: {path}" for path in self.traces]
        if self.status in ("ERROR", "TIMEOUT") or (not self.passed and not self.failed):
            tail = [line for line in self.log.splitlines() if line.strip()][-15:]
            lines += ["  log tail:"] + [f"    {line}" for line in tail]
        return "\n".join(lines)


def _sby_file(mode, depth, il_name, *, engine, timeout, script):
    timeout_line = f"timeout {int(timeout)}\n" if timeout else ""
    return textwrap.dedent(f"""\
        [options]
        mode {mode}
        depth {depth}
        multiclock off
        """) + timeout_line + textwrap.dedent(f"""\

        [engines]
        {engine}

        [script]
        read_rtlil {il_name}
        prep -top top
        """) + "".join(f"{line}\n" for line in script) + textwrap.dedent(f"""\

        [files]
        {il_name}
        """)


_SRC_RE = re.compile(r" at (?P<path>[^\s:]+):(?P<line>\d+)")


def _source_line(path, line):
    """The message of the property at ``path:line`` (its first string literal within a few
    lines), or the line itself."""
    try:
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines()[int(line) - 1:int(line) + 5]
    except (OSError, ValueError):
        return ""
    if not lines:
        return ""
    text = " ".join(part.strip() for part in lines)
    if "Cover(" in lines[0]:  # covers have no message: show their condition
        condition, depth = "", 1
        for char in text.split("Cover(", 1)[1]:
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0:
                break
            condition += char
        return "Cover(" + re.sub(r"\s+", " ", condition) + ")"
    message = re.search(r'f?"((?:[^"\\]|\\.)+)"', text)
    return message.group(1) if message else lines[0].strip()


def _check_messages(il_text):
    """The messages of the Assert/Assume statements in Amaranth's RTLIL (the ``FORMAT`` of each
    ``$check`` cell), keyed by ``"instance path@path:line"`` and by ``"path:line"``."""
    messages, module, src, cell_src = {}, "", None, None
    for line in il_text.splitlines():
        line = line.strip()
        if line.startswith("module "):
            module = re.sub(r"\$\d+$", "", line[len("module "):].lstrip("\\"))
        elif line.startswith("attribute \\src "):
            src = line.split(" ", 2)[2].strip('"')
        elif line.startswith("cell $check "):
            cell_src = src
        elif line.startswith("parameter \\FORMAT ") and cell_src:
            message = line.split(" ", 2)[2][1:-1]
            if message:
                messages.setdefault(f"{module}@{cell_src}", message)
                messages.setdefault(cell_src, message)
            cell_src = None
        elif not line.startswith(("attribute", "parameter", "connect")):
            src = None
    return messages


def _parse_log(log, outdir, messages=None):
    """The failed properties (with their messages) and the trace files in sby's summary."""
    failed, traces, unreached = [], [], False
    messages = messages or {}
    for line in log.splitlines():
        _, sep, message = line.partition("summary: ")
        if not sep:
            continue
        message = message.strip()
        entry = None
        if message.startswith(("failed assertion", "failed assumption")):
            entry = message
        elif message == "unreached cover statements:":
            unreached = True
            continue
        elif unreached and message.startswith("top."):
            entry = f"unreached cover {message}"
        else:
            unreached = False
        if entry is not None:
            source = _SRC_RE.search(entry)
            if source:
                where = f"{source['path']}:{source['line']}"
                instance = entry.split()[2].split("._witness_")[0]
                message = (messages.get(f"{instance}@{where}") or messages.get(where) or
                           _source_line(source["path"], source["line"]))
                entry += f"  [{message}]"
            failed.append(entry)
        elif "trace" in message and message.endswith((".vcd", ".fst")):
            path = Path(message.rsplit(": ", 1)[-1])
            if not path.is_absolute():
                path = outdir.parent / path
            traces.append(path)
    return failed, traces


def _run_group(argv, *, cwd, env, timeout):
    """Run ``argv`` in its own process group; returns its output, or None after killing the
    whole group (sby, smtbmc and the solver) when ``timeout`` expires."""
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
    except OSError as error:
        raise ToolError(f"cannot run {argv[0]}: {error}") from None
    try:
        output, _ = proc.communicate(timeout=timeout)
        return output
    except BaseException:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        if isinstance(sys.exc_info()[1], subprocess.TimeoutExpired):
            return None
        raise


def run_sby(harness, *, name, mode, depth, workdir=None, engine="smtbmc yices", timeout=600,
            script=(), reset="none"):
    """Prove ``harness`` (an :class:`~amaranth.hdl.Elaboratable`) with ``sby``.

    ``mode`` is ``"prove"`` (k-induction), ``"bmc"`` or ``"cover"``; ``depth`` the number of
    steps. The files go to ``workdir/name.il``, ``workdir/name.sby`` and ``sby``'s output to
    ``workdir/name/`` (``workdir`` defaults to a new temporary directory, which is kept so that
    traces can be inspected). ``timeout`` (seconds) ends the run with status ``TIMEOUT``.
    ``script`` adds Yosys commands after ``prep``; ``reset`` is one of :data:`RESETS`.
    Returns a :class:`FormalResult`.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a positive integer, not {depth!r}")
    if reset not in RESETS:
        raise ValueError(f"reset must be one of {', '.join(RESETS)}, not {reset!r}")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise ValueError(f"name must be a plain file name, not {name!r}")
    command, env = formal_environment()
    workdir = Path(workdir if workdir is not None else tempfile.mkdtemp(prefix="utf8-formal-"))
    workdir.mkdir(parents=True, exist_ok=True)

    top = _FormalTop(harness, reset)
    il_text = rtlil.convert(top, name="top", ports=[top.domain.clk])
    il_name = f"{name}.il"
    (workdir / il_name).write_text(il_text)
    sby_path = workdir / f"{name}.sby"
    sby_path.write_text(_sby_file(mode, depth, il_name, engine=engine, timeout=timeout,
                                  script=script))
    outdir = workdir / name

    started = time.monotonic()
    log = _run_group([*command, "-f", sby_path.name], cwd=workdir, env=env,
                     timeout=(timeout + 60) if timeout else None)
    elapsed = time.monotonic() - started
    if log is None:
        return FormalResult(name, mode, depth, "TIMEOUT", elapsed, outdir,
                            log=f"sby did not end within {timeout + 60} s")

    status = "ERROR"
    try:
        words = (outdir / "status").read_text().split()
        if words:
            status = words[0]
    except OSError:
        pass
    failed, traces = _parse_log(log, outdir, _check_messages(il_text))
    return FormalResult(name, mode, depth, status, elapsed, outdir, failed, traces, log)


@dataclass
class FormalJob:
    """One :func:`run_sby` call for :func:`run_many` (``build`` returns the harness; it is
    called in the worker so that elaboration happens there)."""
    name: str
    build: object
    mode: str
    depth: int
    timeout: int = 600
    engine: str = "smtbmc yices"
    script: tuple = ()
    expect: str = "PASS"
    reset: str = "none"
    cost: float = 1.0  # a rough run time, to start the longest runs first


def run_many(jobs, *, workdir=None, max_workers=None):
    """Run :class:`FormalJob` s in parallel (``max_workers`` ``sby`` processes at once, default:
    the number of CPUs; the costliest first). Returns ``{job.name: FormalResult}`` once all are
    done."""
    jobs = list(jobs)
    names = [job.name for job in jobs]
    if len(set(names)) != len(names):
        raise ValueError("job names must be unique")
    workdir = Path(workdir if workdir is not None else tempfile.mkdtemp(prefix="utf8-formal-"))
    max_workers = max_workers or os.cpu_count() or 1

    def run(job):
        return run_sby(job.build(), name=job.name, mode=job.mode, depth=job.depth,
                       workdir=workdir, timeout=job.timeout, engine=job.engine,
                       script=job.script, reset=job.reset)

    with ThreadPoolExecutor(max_workers=max_workers) as pool:
        futures = {job.name: pool.submit(run, job)
                   for job in sorted(jobs, key=lambda job: -job.cost)}
        return {name: futures[name].result() for name in names}


def _port_wire(path):
    # Amaranth names the top-level port of `o.payload.last` "o__payload" (struct members are
    # slices of it); accept "o.valid" and "o__valid" alike.
    return path.replace(".", "__")


def combinational_paths(component, sources, sinks, *, workdir=None):
    """Which of ``sinks`` depend on which of ``sources`` through combinational logic only.

    ``component`` is a :class:`~amaranth.lib.wiring.Component`; ``sources`` and ``sinks`` are
    port paths such as ``"o.ready"`` / ``"o.valid"``. Returns the set of ``(source, sink)`` pairs
    with a path (``set()`` means every sink is independent of every source within a cycle).
    The check is structural (yosys ``select %coe*`` after ``proc; flatten; memory_map``), so it
    is conservative: a path that exists but never matters is still reported.
    """
    command, env = formal_environment()
    workdir = Path(workdir if workdir is not None else tempfile.mkdtemp(prefix="utf8-paths-"))
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "design.il").write_text(rtlil.convert(component, name="top"))
    lines = ["read_rtlil design.il", "hierarchy -top top", "proc", "flatten",
             "memory -nomap", "memory_map", "opt_clean"]
    pairs = [(source, sink) for source in sources for sink in sinks]
    for index, (source, sink) in enumerate(pairs):
        lines.append(f"select -set p{index} w:{_port_wire(source)} %coe* "
                     f"w:{_port_wire(sink)} %i")
        lines.append(f"tee -o path{index}.txt select -count @p{index}")
    (workdir / "paths.ys").write_text("\n".join(lines) + "\n")
    proc = subprocess.run([env["YOSYS"], "-q", "paths.ys"], cwd=workdir, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        tail = proc.stdout.strip().splitlines()[-1:] or ["(no output)"]
        raise ToolError(f"yosys failed on the path check: {tail[0]}")
    found = set()
    for index, pair in enumerate(pairs):
        text = (workdir / f"path{index}.txt").read_text()
        count = re.search(r"(\d+) objects", text)
        if count is None:
            raise ToolError(f"unexpected yosys output: {text.strip()!r}")
        if int(count.group(1)):
            found.add(pair)
    return found
