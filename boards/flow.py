"""Building a board's bitstream with Amaranth's platform build and the YoWASP tools, for any
board: what differs between boards is one :class:`BoardFlow`.

:func:`build_bitstream` prepares the platform's build plan (Yosys, nextpnr with ``--report``,
the packer), runs its script with the tools pointed to by the variables the script reads
(:func:`~utf8_gateware.toolchain.build_environment`), shows progress, places and routes again
with the next seeds while timing is not met, and returns the figures: ``fmax_mhz`` and
``constraint_mhz`` per clock, ``timing_met``, the cells the flow counts (each ``{used,
available}``), ``seed``, ``seconds``, ``bitstream``, ``nextpnr_report``.
"""

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from utf8_gateware.hdl.synth import check_placer
from utf8_gateware.toolchain import ToolError, build_environment, find_programmer


__all__ = ["BuildError", "BoardFlow", "build_bitstream", "build_board", "ProgramError",
           "program_bitstream"]


class BuildError(Exception):
    """The build failed (one-line message)."""


@dataclass(frozen=True)
class BoardFlow:
    """The board-specific parts of a build.

    ``tools``: the script's variables and the tools they name (``{"YOSYS": "yosys", ...}``);
    ``nextpnr``: the variable of the place-and-route tool; ``device_args``: nextpnr's device
    options, ``output``: its option and file suffix for the placed design (a second placement
    reuses them); ``pack``: the packer's variable and its arguments (``{name}`` is the design
    name); ``bitstream``: the bitstream's suffix; ``constraints``: nextpnr's option and suffix
    for the pin constraints; ``cells``: report key -> nextpnr cell type; ``yosys_script``:
    Yosys commands run after the design is read (Amaranth's ``script_after_read``)."""
    tools: dict
    nextpnr: str
    device_args: tuple
    output: tuple
    constraints: tuple
    pack: tuple
    bitstream: str
    cells: dict
    yosys_script: str = ""

    def stages(self, name):
        """``(file, stage)``: the build is in ``stage`` once ``file`` exists."""
        return [(f"{name}.rpt", "synthesis (yosys)"),
                (f"{name}.tim", f"place and route ({self.tools[self.nextpnr]})"),
                (f"{name}{self.output[1]}", f"bitstream ({self.tools[self.pack[0]]})"),
                (f"{name}{self.bitstream}", "done")]


def _progress(build_dir, process, stream, stages):
    """Show the build's stage and elapsed time until ``process`` ends (a spinner on a
    terminal, one line per stage otherwise)."""
    started = time.monotonic()
    shown = None
    tty = stream.isatty()
    spinner = "|/-\\"
    tick = 0
    while process.poll() is None:
        stage = "elaboration"
        for filename, name in stages:
            if (Path(build_dir) / filename).exists():
                stage = name
        if stage != shown and not tty:
            print(f"build: {stage}...", file=stream, flush=True)
        shown = stage
        if tty:
            elapsed = time.monotonic() - started
            print(f"\r{spinner[tick % 4]} build: {stage} ({elapsed:.0f} s)   ", end="",
                  file=stream, flush=True)
            tick += 1
        time.sleep(0.25)
    if tty:
        print("\r" + " " * 70 + "\r", end="", file=stream, flush=True)


def _timing(flow, report_path, clock_mhz):
    """``(timing met, figures)`` from nextpnr's report: every clock meets nextpnr's
    constraint, and the design clock is met."""
    data = json.loads(Path(report_path).read_text())
    fmax = {name: round(value["achieved"], 2) for name, value in data.get("fmax", {}).items()}
    constraint = {name: round(value.get("constraint", 0.0), 2)
                  for name, value in data.get("fmax", {}).items()}
    util = data.get("utilization", {})
    cells = {key: {"used": util.get(cell, {}).get("used", 0),
                   "available": util.get(cell, {}).get("available", 0)}
             for key, cell in flow.cells.items()}
    met = bool(fmax) and all(
        fmax[name] >= constraint.get(name, 0.0) - 1e-6 for name in fmax) and \
        max(fmax.values()) >= clock_mhz
    return met, {"fmax_mhz": fmax, "constraint_mhz": constraint, **cells}


def _place_again(flow, name, build_dir, env, seed, stream, quiet, extra):
    """Run nextpnr (and the packer) again on the synthesised netlist with another seed
    (``extra``: more nextpnr options)."""
    if not quiet:
        print(f"build: timing not met; place and route again with seed {seed}...",
              file=stream, flush=True)
    nextpnr = ["--quiet", "--report", f"{name}.report.json", "--timing-allow-fail", "--seed",
               str(seed), "--log", f"{name}.tim", *flow.device_args, "--json", f"{name}.json",
               flow.constraints[0], f"{name}{flow.constraints[1]}", flow.output[0],
               f"{name}{flow.output[1]}", *extra]
    pack = [arg.format(name=name) for arg in flow.pack[1]]
    with open(Path(build_dir) / "build.log", "a") as log:
        for variable, args in ((flow.nextpnr, nextpnr), (flow.pack[0], pack)):
            result = subprocess.run([env.get(variable, flow.tools[variable]), *args],
                                    cwd=build_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
            if result.returncode != 0:
                raise BuildError(f"{flow.tools[variable]} failed (exit {result.returncode}); "
                                 f"log: {Path(build_dir) / 'build.log'}")


def _check_placer(placer):
    """:func:`~utf8_gateware.hdl.synth.check_placer` as a :class:`BuildError`."""
    try:
        check_placer(placer)
    except ValueError as error:
        raise BuildError(str(error)) from None


def build_bitstream(flow, platform, top, name, build_dir, *, clock_mhz, seed=1, attempts=3,
                    quiet=False, stream=None, routed_netlist=False, placer="heap"):
    """Build ``top`` for ``platform`` (an Amaranth platform of the board) in ``build_dir``;
    returns the figures (see the module docstring). Timing is met when every clock meets its
    constraint and reaches ``clock_mhz``; if not, placement and routing are tried again with
    the next seeds, up to ``attempts`` in all. Raises :class:`BuildError` if a tool is missing
    or fails (a timing failure is not an exception: check ``timing_met``). With
    ``routed_netlist``, nextpnr also writes the placed and routed netlist (``--write``, JSON;
    :mod:`utf8_gateware.sim.postroute` simulates it) and the report names it
    (``routed_netlist``). ``placer``: nextpnr's placer for every attempt (one of
    :data:`~utf8_gateware.hdl.synth.PLACERS`; the report's ``placer``)."""
    _check_placer(placer)
    stream = stream or sys.stderr
    build_dir = Path(build_dir).resolve()
    try:
        build_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BuildError(f"cannot create {str(build_dir)!r}: {error.strerror}") from None
    report_path = build_dir / f"{name}.report.json"
    stages = flow.stages(name)
    for stale in [report_path, *(build_dir / filename for filename, _ in stages)]:
        stale.unlink(missing_ok=True)
    started = time.monotonic()
    extra = ["--placer", placer, *(["--write", f"{name}.routed.json"] if routed_netlist else [])]
    plan = platform.prepare(top, name=name, script_after_read=flow.yosys_script,
        nextpnr_opts=" ".join([f"--report {report_path.name} --timing-allow-fail --seed "
                               f"{int(seed)}", *extra]))
    plan.extract(str(build_dir))
    env = dict(os.environ)
    try:
        env.update(build_environment(flow.tools, build_dir))
    except ToolError as error:
        raise BuildError(str(error)) from None
    log_path = build_dir / "build.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(["sh", f"{plan.script}.sh"], cwd=build_dir, env=env,
                                   stdout=log, stderr=subprocess.STDOUT)
        try:
            if quiet:
                process.wait()
            else:
                _progress(build_dir, process, stream, stages)
        except BaseException:
            process.kill()
            process.wait()
            raise
    if process.returncode != 0:
        tail = [line for line in log_path.read_text(errors="replace").splitlines()
                if line.strip()][-1:] or ["(no output)"]
        raise BuildError(f"the build failed (exit {process.returncode}): {tail[0].strip()} "
                         f"(log: {log_path})")
    if not report_path.is_file():
        raise BuildError(f"nextpnr wrote no report ({report_path})")
    timing_met, figures = _timing(flow, report_path, clock_mhz)
    used_seed = int(seed)
    for attempt in range(1, max(1, attempts)):
        if timing_met:
            break
        used_seed = int(seed) + attempt
        _place_again(flow, name, build_dir, env, used_seed, stream, quiet, extra)
        timing_met, figures = _timing(flow, report_path, clock_mhz)
    return {
        "bitstream": str(build_dir / f"{name}{flow.bitstream}"),
        "clock_mhz": clock_mhz,
        **figures,
        "timing_met": timing_met,
        "seed": used_seed,
        "placer": placer,
        "seconds": round(time.monotonic() - started, 1),
        "nextpnr_report": str(report_path),
        **({"routed_netlist": str(build_dir / f"{name}.routed.json")} if routed_netlist else {}),
    }


def build_board(board, flow, platform, make_top, name, build_dir, **kwargs):
    """Build the top level ``make_top()`` (a :class:`~.top.BoardTop`; a :class:`ValueError`
    from it, e.g. a clock the PLL cannot make, is a :class:`BuildError`) with
    :func:`build_bitstream` at its PLL's clock; returns the report with ``board``, ``baud``
    (the UART's actual rate) and the PLL's settings under ``pll``."""
    _check_placer(kwargs.get("placer", "heap"))   # before the top level is made
    try:
        top = make_top()
    except ValueError as error:
        raise BuildError(str(error)) from None
    report = build_bitstream(flow, platform, top, name, build_dir,
                             clock_mhz=top.pll.f_out / 1e6, **kwargs)
    return {"board": board, **report, "baud": round(top.core.clk_freq / top.core.divisor),
            "pll": {**report["pll"], **top.pll.as_dict()}}


class ProgramError(Exception):
    """Programming failed (one-line message)."""


def program_bitstream(bitstream, programmers, arguments, *, board, install_hint, timeout=120):
    """Write ``bitstream`` to a board with the first of ``programmers`` found (program names
    in order of preference; ``None`` entries, e.g. an unset environment variable, are
    skipped). ``arguments``: ``{program: argument list}`` (``{bitstream}`` in an argument is
    the file; the key ``None`` for any other program, e.g. one named by a variable);
    ``board``: the board's name for messages; ``install_hint``: how to install a programmer.
    Returns the programmer's name. Raises :class:`ProgramError` with a one-line message: no
    bitstream, no programmer, a programmer that fails (no board attached) or does not finish
    within ``timeout`` seconds."""
    bitstream = Path(bitstream)
    if not bitstream.is_file():
        raise ProgramError(f"no bitstream at {str(bitstream)!r} (run `utf8-gateware build` "
                           f"first)")
    found = find_programmer(programmers)
    if found is None:
        names = [program for program in programmers if program]
        raise ProgramError(f"neither {', '.join(names[:-1])} nor {names[-1]} is installed "
                           f"({install_hint})")
    name, path = found
    args = arguments.get(name, arguments.get(None, ["{bitstream}"]))
    command = [path, *(arg.format(bitstream=bitstream) for arg in args)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ProgramError(f"{name} did not finish within {timeout} s") from None
    except OSError as error:
        raise ProgramError(f"cannot run {name}: {error.strerror}") from None
    if result.returncode != 0:
        lines = [line for line in (result.stderr + result.stdout).splitlines() if line.strip()]
        detail = lines[-1].strip() if lines else f"exit status {result.returncode}"
        raise ProgramError(f"{name} failed (no {board} connected?): {detail}")
    return name
