"""``utf8-gateware decode`` and ``encode``: UTF-8 to code points and back, with any engine."""

import array
import sys

from utf8_gateware.hdl.error_kind import DECODE_ERRORS, ENCODE_ERRORS
from utf8_gateware.sim import engines
from utf8_gateware.sim.reference import count_errors, encode as reference_encode
from .common import CommandError, note, progress, read_input, write_json, write_output


__all__ = ["add_parsers"]


def _add_files(parser, what):
    """The ``INPUT`` file (``what``, default standard input) and ``-o OUTPUT`` arguments."""
    parser.add_argument("input", nargs="?", metavar="INPUT",
        help=f"{what} input file (default: standard input)")
    parser.add_argument("-o", "--output", metavar="OUTPUT",
        help="output file (default: standard output)")


def add_parsers(commands):
    """Add ``decode`` and ``encode`` to ``commands`` (from ``add_subparsers``)."""
    decode = commands.add_parser("decode", help="decode UTF-8 to code points",
        description="Decode UTF-8 bytes. Ill-formed input becomes one U+FFFD per maximal "
                    "subpart (--errors replace) or one U+DC80..U+DCFF per undecodable byte "
                    "(--errors surrogateescape), exactly like CPython's bytes.decode.")
    _add_files(decode, "UTF-8")
    decode.add_argument("--errors", choices=DECODE_ERRORS, default=DECODE_ERRORS[0],
        help=f"error policy (default: {DECODE_ERRORS[0]})")
    decode.add_argument("--output-format", choices=("utf8", "utf32le"), default="utf8",
        help="utf8: well-formed UTF-8, except that with surrogateescape each escape is written "
             "back as the raw byte it stands for (so the input is reproduced); utf32le: each "
             "output code point as 4 little-endian bytes (escapes as U+DCxx). Default: utf8")
    _add_engine_option(decode)
    decode.add_argument("--stats", metavar="STATS.json",
        help="write bytes_in, codepoints_out, errors per kind (and cycles) as JSON")
    decode.set_defaults(handler=run_decode)

    encode = commands.add_parser("encode", help="encode UTF-32LE code units to UTF-8",
        description="Encode UTF-32LE code units (any 32-bit value) to UTF-8. Surrogates and "
                    "values above U+10FFFF are errors: replaced by U+FFFD (replace), left out "
                    "and reported (strict; exit status 1), or, for U+DC80..U+DCFF, turned back "
                    "into the raw byte 80..FF (surrogateescape).")
    _add_files(encode, "UTF-32LE")
    encode.add_argument("--errors", choices=ENCODE_ERRORS, default=ENCODE_ERRORS[0],
        help=f"error policy (default: {ENCODE_ERRORS[0]})")
    _add_engine_option(encode)
    encode.add_argument("--stats", metavar="STATS.json",
        help="write codepoints_in, bytes_out, errors per kind (and cycles) as JSON")
    encode.set_defaults(handler=run_encode)


def _add_engine_option(parser):
    parser.add_argument("--engine", choices=engines.ENGINES,
        help="reference: the Python model; python: the gateware in Amaranth's simulator; "
             "compiled: the gateware compiled to C++ (CXXRTL). Default: compiled where a C++ "
             "compiler exists, else python")


def _run_engine(args, function, items, item_size):
    """Run ``function(items, errors=, engine=, progress=)`` of :mod:`~utf8_gateware.sim.engines`
    on the requested engine (falling back, with a note, when the compiled one is unavailable)."""
    engine, fallback = engines.resolve_engine(args.engine)
    if fallback:
        note(fallback)
    advance, close = progress(len(items) * item_size, "B", args.command)
    try:
        return engine, function(items, errors=args.errors, engine=engine, progress=advance)
    except engines.EngineError as error:
        raise CommandError(f"{engine} engine: {error}") from None
    finally:
        close()


def run_decode(args):
    data = read_input(args.input)
    engine, run = _run_engine(args, engines.decode, data, 1)
    codepoints = [output.codepoint for output in run.outputs]
    if args.output_format == "utf32le":
        units = array.array("I", codepoints)
        if sys.byteorder != "little":
            units.byteswap()
        payload = units.tobytes()
    else:
        # U+FFFD becomes EF BF BD; surrogate escapes become the raw bytes they stand for.
        payload = reference_encode(codepoints, "surrogateescape").data
    write_output(args.output, payload)
    stats = {
        "bytes_in": len(data),
        "codepoints_out": len(codepoints),
        "errors": count_errors(output.error for output in run.outputs),
        "errors_mode": args.errors,
        "engine": engine,
    }
    if run.cycles is not None:
        stats["cycles"] = run.cycles
    write_json(args.stats, stats)
    return 0


def run_encode(args):
    data = read_input(args.input)
    if len(data) % 4:
        raise CommandError(f"input is {len(data)} bytes, not a whole number of UTF-32LE code "
                           f"units (a multiple of 4)")
    units = array.array("I")
    units.frombytes(data)
    if sys.byteorder != "little":
        units.byteswap()
    engine, run = _run_engine(args, engines.encode, units, 4)
    write_output(args.output, run.data)
    stats = {
        "codepoints_in": len(units),
        "bytes_out": len(run.data),
        "errors": count_errors(kind for _, kind in run.errors),
        "errors_mode": args.errors,
        "engine": engine,
    }
    if run.cycles is not None:
        stats["cycles"] = run.cycles
    write_json(args.stats, stats)
    if args.errors == "strict" and run.errors:
        index, kind = run.errors[0]
        raise CommandError(
            f"{len(run.errors)} invalid code unit(s); the first is U+{units[index]:04X} "
            f"({kind.label}) at index {index}; the valid ones were written", status=1)
    return 0
