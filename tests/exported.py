"""The exported Verilog of every core, shared by the export tests (``test_export.py``) and the
cocotb tests (``test_export_cocotb.py``) through the session fixture ``exported`` of
``conftest.py``: each core in each error mode (the decoder also with 2 lanes), with and without
initial values."""

import re
from dataclasses import dataclass
from pathlib import Path

from utf8_gateware.hdl.export import export_verilog
from utf8_gateware.hdl.synth import CORES


#: ``{name: (core, parameters)}``: every core in every error mode (``<core>_<errors>``), and the
#: decoder with 2 lanes (``decoder_<errors>_lanes2``; more lanes are the same wiring in the
#: adapter, and longer to compile).
VARIANTS = {
    **{f"{core}_{errors}": (core, {"errors": errors})
       for core, (_, policies) in CORES.items() for errors in policies},
    **{f"decoder_{errors}_lanes2": ("decoder", {"errors": errors, "lanes": 2})
       for errors in CORES["decoder"][1]},
}

_PORT = re.compile(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\w+)\s*;", re.M)


@dataclass(frozen=True)
class Exported:
    """One exported file: the instance name used in test benches (the variant's name, with
    ``_noinit`` without initial values), the variant, its module name, path and text."""
    instance: str
    variant: str
    initial_values: bool
    module: str
    path: Path
    verilog: str

    @property
    def core(self):
        return VARIANTS[self.variant][0]

    @property
    def params(self):
        return VARIANTS[self.variant][1]


def export_all(folder):
    """Export every variant, with and without initial values, into ``folder`` (each file
    named after its module); returns ``{instance: Exported}``."""
    found = {}
    for variant, (core, params) in VARIANTS.items():
        for instance, initial_values in ((variant, True), (f"{variant}_noinit", False)):
            module = f"utf8_{instance}"
            verilog = export_verilog(core, name=module, initial_values=initial_values, **params)
            path = Path(folder) / f"{module}.v"
            path.write_text(verilog)
            found[instance] = Exported(instance, variant, initial_values, module, path, verilog)
    return found


def ports(verilog):
    """``[(direction, width, name)]`` of the module in ``verilog`` (as Yosys declares them)."""
    return [(direction, int(msb) + 1 if msb else 1, name)
            for direction, msb, name in _PORT.findall(verilog)]


def top_module(name, exported):
    """A Verilog top level ``name`` with one instance of each of ``exported``: ``aclk`` and
    ``aresetn`` shared, every other port brought out as ``<instance>_<port>``."""
    declarations, instances = ["  input aclk,", "  input aresetn"], []
    for item in exported:
        connections = []
        for direction, width, port in ports(item.verilog):
            if port in ("aclk", "aresetn"):
                connections.append(f".{port}({port})")
                continue
            vector = f"[{width - 1}:0] " if width > 1 else ""
            declarations[-1] += ","
            declarations.append(f"  {direction} {vector}{item.instance}_{port}")
            connections.append(f".{port}({item.instance}_{port})")
        instances.append(f"  {item.module} {item.instance} (\n    " +
                         ",\n    ".join(connections) + "\n  );")
    return (f"module {name} (\n" + "\n".join(declarations) + "\n);\n" + "\n".join(instances) +
            "\nendmodule\n")
