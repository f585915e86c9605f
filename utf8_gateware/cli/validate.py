"""``utf8-gateware validate``: is the input well-formed UTF-8, and if not, where and why.

Streams the input through the engine (:func:`~utf8_gateware.sim.engines.validate`: the reference
model, or the :class:`~utf8_gateware.hdl.validator.Utf8Validator` core simulated) in constant
memory, prints the verdict, and exits 0 for valid input, 1 for invalid input (the verdict is then
the command's finding) and 2 for bad usage or I/O.
"""

from utf8_gateware.sim import engines
from .codec import add_engine_option, add_lanes_option, run_engine
from .common import InputFile, write_json


__all__ = ["add_parsers", "verdict_text"]


def add_parsers(commands):
    """Add ``validate`` to ``commands`` (from ``add_subparsers``)."""
    validate = commands.add_parser("validate", help="check that the input is well-formed UTF-8",
        description="Check that the input is well-formed UTF-8. Prints valid or invalid, the "
                    "byte offset and kind of the first error (the first maximal subpart, where "
                    "CPython's UnicodeDecodeError starts) and the number of errors (U+FFFD that "
                    "decode --errors replace would write). Exit status 0 valid, 1 invalid, 2 "
                    "bad usage or I/O.")
    validate.add_argument("input", nargs="?", metavar="INPUT",
        help="input file (default: standard input)")
    add_engine_option(validate)
    add_lanes_option(validate, "validator")
    validate.add_argument("--json", metavar="REPORT.json",
        help="write valid, first_error_offset, first_error_kind, errors, bytes, cycles (and "
             "engine, lanes) as JSON")
    validate.set_defaults(handler=run_validate)


def verdict_text(verdict):
    """One line for a :class:`~utf8_gateware.sim.engines.Verdict`."""
    if verdict.valid:
        return f"valid: {verdict.bytes} bytes of well-formed UTF-8"
    return (f"invalid: first error at byte {verdict.first_error_offset} "
            f"({verdict.first_error_kind.label}); {verdict.errors} error(s) in {verdict.bytes} "
            f"bytes")


def run_validate(args):
    with InputFile(args.input) as source:
        engine, verdict = run_engine(
            args, lambda engine, advance: engines.validate(source, engine, lanes=args.lanes,
                                                           progress=advance),
            source.size)
    write_json(args.json, {
        "valid": verdict.valid,
        "first_error_offset": verdict.first_error_offset,
        "first_error_kind": verdict.first_error_kind and verdict.first_error_kind.label,
        "errors": verdict.errors,
        "bytes": verdict.bytes,
        "cycles": verdict.cycles,
        "engine": engine,
        "lanes": args.lanes,
    })
    print(verdict_text(verdict), flush=True)
    return 0 if verdict.valid else 1
