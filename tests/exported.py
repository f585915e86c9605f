"""The exported Verilog of every core, shared by the export tests (``test_export.py``) and the
cocotb tests (``test_export_cocotb.py``) through the session fixture ``exported`` of
``conftest.py``: each core in each error mode, with and without initial values."""

import re
from dataclasses import dataclass
from pathlib import Path

from utf8_gateware.hdl.export import export_verilog
from utf8_gateware.hdl.synth import CORES


#: ``<core>_<errors>`` for every core and error mode.
VARIANTS = [f"{core}_{errors}" for core, (_, policies) in CORES.items() for errors in policies]

_PORT = re.compile(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\w+)\s*;", re.M)


@dataclass(frozen=True)
class Exported:
    """One exported file: the instance name used in test benches (``<variant>`` or
    ``<variant>_noinit``), its module name, path and text."""
    instance: str
    variant: str
    initial_values: bool
    module: str
    path: Path
    verilog: str

    @property
    def core(self):
        return self.variant.split("_", 1)[0]

    @property
    def errors(self):
        return self.variant.split("_", 1)[1]


def export_all(folder):
    """Export every variant, with and without initial values, into ``folder`` (each file
    named after its module); returns ``{instance: Exported}``."""
    found = {}
    for variant in VARIANTS:
        core, errors = variant.split("_", 1)
        for instance, initial_values in ((variant, True), (f"{variant}_noinit", False)):
            module = f"utf8_{instance}"
            verilog = export_verilog(core, errors=errors, name=module,
                                     initial_values=initial_values)
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
