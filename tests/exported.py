"""The exported Verilog of every core, shared by the export tests (``test_export.py``) and the
cocotb tests (``test_export_cocotb.py``) through the session fixture ``exported`` of
``conftest.py``: each core in each error mode (the decoder also with 2 lanes, the validator with
1 and 4, the transcoder between UTF-8 and UTF-16LE, the UTF-16 code-unit cores and the
stages of the ``utf-16`` mark in one mode each, the byte stages after the sanitiser and the
UTF-16 encoder (the ``utf-8-sig`` mark, the MUTF-8 expander, the ``utf-16`` bytes) once each,
the text decoder and encoder of ``utf-16``), with and without initial values."""

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
       for core in ("decoder", "encoder", "sanitizer") for errors in CORES[core][1]},
    **{f"decoder_{errors}_lanes2": ("decoder", {"errors": errors, "lanes": 2})
       for errors in CORES["decoder"][1]},
    # The validator (no policies): one lane and four.
    **{f"validator_lanes{lanes}": ("validator", {"lanes": lanes}) for lanes in (1, 4)},
    # The transcoder's policies depend on its pair of encodings: UTF-8 and UTF-16LE each way.
    **{f"transcoder_{source}_{target}".replace("-", ""):
       ("transcoder", {"source_encoding": source, "target_encoding": target, "errors": "replace"})
       for source, target in (("utf-8", "utf-16-le"), ("utf-16-le", "utf-8"))},
    # The UTF-16 code-unit cores, once each (their other policies and byte order are the same
    # wiring in the adapter): both directions of each stage.
    "utf16_encoder_replace": ("utf16_encoder", {"errors": "replace"}),
    "utf16_decoder_replace": ("utf16_decoder", {"errors": "replace"}),
    "utf16_units_little": ("utf16_units", {"byteorder": "little"}),
    "utf16_bytes_big": ("utf16_bytes", {"byteorder": "big"}),
    # The stages of the `utf-16` scheme's mark: reading it from bytes, writing it as a unit.
    "utf16_bom_units": ("utf16_bom_units", {}),
    "utf16_bom_writer": ("utf16_bom_writer", {}),
    # The byte stages after the sanitiser and the UTF-16 encoder, once each: the `utf-8-sig`
    # mark, the expander into MUTF-8 (CESU-8's surrogates and the NUL as C0 80; cesu-8 is the
    # same wiring without the NUL), UTF-16 units into bytes with FE FF before every message.
    "utf8_bom_writer": ("utf8_bom_writer", {}),
    "cesu8_expander_mutf8": ("cesu8_expander", {"encoding": "mutf-8"}),
    "utf16_bom_bytes": ("utf16_bom_bytes", {}),
    # Any encoding by name: the utf-16 scheme's stages in a row (its mark read and written; the
    # UTF-8 family's are the decoder and encoder above).
    "text_decoder_utf16": ("text_decoder", {"encoding": "utf-16", "errors": "replace"}),
    "text_encoder_utf16": ("text_encoder", {"encoding": "utf-16", "errors": "strict"}),
}

#: The variants exported only with initial values: the text decoder and encoder are the UTF-16
#: stages in a row, each of which the power-up test runs alone (a smaller Verilator build).
WITH_INITIAL_VALUES_ONLY = frozenset(variant for variant, (core, _) in VARIANTS.items()
                                     if core.startswith("text_"))

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
    """Export every variant, with and without initial values (but those of
    :data:`WITH_INITIAL_VALUES_ONLY`), into ``folder`` (each file named after its module);
    returns ``{instance: Exported}``."""
    found = {}
    for variant, (core, params) in VARIANTS.items():
        for instance, initial_values in ((variant, True), (f"{variant}_noinit", False))[
                :1 if variant in WITH_INITIAL_VALUES_ONLY else 2]:
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
    """A Verilog test bench top level ``name`` with one instance of each of ``exported``.

    Every port of an instance is brought out as ``<instance>_<port>``, its clock too (an idle
    instance's clock stands still, so Verilator does not evaluate its logic); ``aresetn`` is
    shared. Beside each instance a checker of the output stream rules (once
    ``m_axis_tvalid`` is high, it and the payload hold until the transfer) sets the output
    ``<instance>_rule_error`` for good and prints the time of a breach; the shared input
    ``rule_probe`` makes it count the cycle as a breach if an output is being held (to check
    the checker)."""
    declarations = ["  input aresetn", "  input rule_probe"]
    body = []
    for item in exported:
        connections, payload = [], []
        for direction, width, port in ports(item.verilog):
            wire = "aresetn" if port == "aresetn" else f"{item.instance}_{port}"
            if port != "aresetn":
                vector = f"[{width - 1}:0] " if width > 1 else ""
                declarations.append(f"  {direction} {vector}{wire}")
            connections.append(f".{port}({wire})")
            if port.startswith("m_axis_") and port not in ("m_axis_tvalid", "m_axis_tready"):
                payload.append((wire, width))
        name_of = f"{item.instance}_".__add__
        width = sum(bits for _, bits in payload)
        declarations.append(f"  output reg {name_of('rule_error')}")
        body.append(f"""  {item.module} {item.instance} (
    {(","+chr(10)+"    ").join(connections)}
  );
  reg {name_of('held')};
  reg [{width - 1}:0] {name_of('held_payload')};
  initial {name_of('rule_error')} = 1'b0;
  initial {name_of('held')} = 1'b0;
  always @(posedge {name_of('aclk')}) begin
    if (!aresetn) begin
      {name_of('held')} <= 1'b0;
    end else begin
      if ({name_of('held')} && (rule_probe || !{name_of('m_axis_tvalid')} ||
          {{{", ".join(wire for wire, _ in payload)}}} != {name_of('held_payload')})) begin
        if (!{name_of('rule_error')})
          $display("{item.instance}: m_axis broke the stream rules at %0t", $time);
        {name_of('rule_error')} <= 1'b1;
      end
      {name_of('held')} <= {name_of('m_axis_tvalid')} && !{name_of('m_axis_tready')};
      {name_of('held_payload')} <= {{{", ".join(wire for wire, _ in payload)}}};
    end
  end""")
    return (f"module {name} (\n" + ",\n".join(declarations) + "\n);\n" + "\n".join(body) +
            "\nendmodule\n")
