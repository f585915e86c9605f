"""``sim/postroute.py`` on small hand-made routed netlists (no tools run): what it completes in
nextpnr's JSON, and the one-line errors for what it does not model. The board's netlist itself
is simulated in ``test_board_build.py`` (marker ``postsynth``)."""

import json
import re

import pytest

from utf8_gateware.sim import postroute


def lc(connections, **parameters):
    ports = {"I0": "input", "I1": "input", "I2": "input", "I3": "input", "CIN": "input",
             "CLK": "input", "CEN": "input", "SR": "input", "LO": "output", "O": "output",
             "COUT": "output"}
    return {"type": "ICESTORM_LC", "port_directions": ports,
            "parameters": {"LUT_INIT": "0000000000000010", "DFF_ENABLE": "1", **parameters},
            "connections": {port: connections.get(port, []) for port in ports}}


def io(pin_type, connections):
    ports = {"PACKAGE_PIN": "inout", "OUTPUT_ENABLE": "input", "D_OUT_0": "input",
             "D_IN_0": "output"}
    return {"type": "SB_IO", "port_directions": ports, "parameters": {"PIN_TYPE": pin_type},
            "connections": {port: connections.get(port, []) for port in ports}}


def pll():
    ports = {"REFERENCECLK": "input", "RESETB": "input", "LOCK": "output",
             "PLLOUT_A_GLOBAL": "output", "PLLOUT_A": "output"}
    return {"type": "ICESTORM_PLL", "port_directions": ports, "parameters": {"DIVF": "0111111"},
            "connections": {"REFERENCECLK": [], "RESETB": [9], "LOCK": [5],
                            "PLLOUT_A_GLOBAL": [], "PLLOUT_A": []}}


def gb(source):
    return {"type": "SB_GB", "port_directions": {"USER_SIGNAL_TO_GLOBAL_BUFFER": "input",
                                                 "GLOBAL_BUFFER_OUTPUT": "output"},
            "parameters": {}, "connections": {"USER_SIGNAL_TO_GLOBAL_BUFFER": source,
                                              "GLOBAL_BUFFER_OUTPUT": [6]}}


def routed(cells=None):
    """A netlist in nextpnr's shape: the board's five pins, a PLL on the clock pad feeding a
    global buffer that clocks one flip-flop, which drives the UART's tx pin."""
    base = {
        "pll": pll(), "gb": gb([]), "vcc": lc({"O": [9]}, LUT_INIT="1111111111111111",
                                              DFF_ENABLE="0"),
        "ff": lc({"I0": [7], "CLK": [6], "O": [8]}),
        "tx_io": io("101001", {"PACKAGE_PIN": [4], "OUTPUT_ENABLE": [9], "D_OUT_0": [8]}),
        "rx_io": io("000001", {"PACKAGE_PIN": [3], "D_IN_0": [7]}),
    }
    base.update(cells or {})
    ports = {"clk12_0__io": ("input", [2]), "uart_0__rx__io": ("inout", [3]),
             "uart_0__tx__io": ("inout", [4]), "led_g_0__io": ("inout", [10]),
             "led_r_0__io": ("inout", [11])}
    return {"modules": {"top": {
        "ports": {name: {"direction": direction, "bits": bits}
                  for name, (direction, bits) in ports.items()},
        "cells": base,
        "netnames": {"$PACKER_VCC_NET": {"bits": [9]}, "clk": {"bits": [6]}}}}}


def test_complete():
    netlist, models = postroute.complete(routed())
    top = netlist["modules"]["top"]
    assert {name: port["direction"] for name, port in top["ports"].items()} == {
        "clk": "input", "rx": "input", "tx": "output", "led_activity": "output",
        "led_error": "output", "rst": "input"}
    ff = top["cells"]["ff"]["connections"]
    assert ff["CEN"] == ["1"] and ff["SR"] == ["0"] and ff["I3"] == ["0"]   # the model's pulls
    assert "LO" not in ff                                                  # open outputs go
    pll_in = top["cells"]["pll"]["connections"]
    assert pll_in["REFERENCECLK"] == [2]                         # the clock pad's port
    assert top["cells"]["gb"]["connections"]["USER_SIGNAL_TO_GLOBAL_BUFFER"] == \
        pll_in["PLLOUT_A_GLOBAL"]
    assert "1'bz" not in postroute.lc_model() and "module ICESTORM_LC" in models
    assert "module ICESTORM_PLL" in models and "assign PLLOUT_A_GLOBAL = REFERENCECLK" in models
    assert "module SB_GB" in models and "module ICESTORM_SPRAM" not in models


def test_complete_spram():
    ports = {f"ADDRESS_{bit}": "input" for bit in range(14)}
    ports.update({f"DATAIN_{bit}": "input" for bit in range(16)})
    ports.update({f"DATAOUT_{bit}": "output" for bit in range(16)})
    ports.update({f"MASKWREN_{bit}": "input" for bit in range(4)})
    ports.update({name: "input" for name in ("WREN", "CHIPSELECT", "CLOCK", "STANDBY", "SLEEP",
                                              "POWEROFF")})
    spram = {"type": "ICESTORM_SPRAM", "port_directions": ports, "parameters": {},
             "connections": {port: [] for port in ports}}
    _, models = postroute.complete(routed({"spram": spram}))
    assert ".ADDRESS({ADDRESS_13, ADDRESS_12," in models and "ADDRESS_0})" in models
    assert "module SB_SPRAM256KA" in models and "negedge POWEROFF" not in models


@pytest.mark.parametrize("change, message", [
    ({"ram": {"type": "SB_MAC16", "port_directions": {}, "parameters": {}, "connections": {}}},
     "no simulation model for SB_MAC16"),
    ({"tx_io": io("010101", {"PACKAGE_PIN": [4], "D_OUT_0": [8]})}, "PIN_TYPE 010101"),
    ({"tx_io": io("101001", {"PACKAGE_PIN": [4], "OUTPUT_ENABLE": [8], "D_OUT_0": [8]})},
     "enable is not the constant 1"),
    ({"gb2": gb([])}, "1 PLLs and 2 global buffers"),
])
def test_complete_refuses(change, message):
    with pytest.raises(postroute.RoutedNetlistError, match=message) as info:
        postroute.complete(routed(change))
    assert "\n" not in str(info.value)


def test_unknown_port_and_bad_json():
    netlist = routed()
    netlist["modules"]["top"]["ports"]["spi_clk"] = {"direction": "output", "bits": [12]}
    with pytest.raises(postroute.RoutedNetlistError, match="port 'spi_clk'"):
        postroute.complete(netlist)
    with pytest.raises(postroute.RoutedNetlistError, match="not JSON"):
        postroute.routed_rtlil("{")
    with pytest.raises(postroute.RoutedNetlistError, match="cannot read"):
        postroute.build_board("/nonexistent/top.routed.json")


def test_routed_rtlil_of_a_small_netlist():
    """The small netlist reads into Yosys with its models, flattened: the virtual board's ports,
    and the flip-flop (the LC's register, clocked by the PLL's global buffer) that drives tx."""
    text = postroute.routed_rtlil(json.dumps(routed()))
    for port in ("clk", "rst", "rx"):
        assert re.search(rf"^\s*wire input \d+ \\{port}$", text, re.M), port
    assert re.search(r"^\s*wire output \d+ \\tx$", text, re.M)
    assert "cell $dff" in text or "cell $dffe" in text
    assert "ICESTORM_LC" not in text and "SB_IO" not in text          # flattened
