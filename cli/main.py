"""Command-line interface: ``utf8-gateware COMMAND ...``.

Every failure the user can cause (a bad argument, an unreadable file, a missing tool or board)
ends in one line on stderr and a non-zero exit status, never a traceback.

Exit status: 0 success; 1 the command ran but found a problem (e.g. ``encode --errors strict``
met an invalid code unit, ``stream`` saw a mismatch); 2 bad usage or input that could not be
processed.
"""

import argparse
import json
import os
import sys

from . import __version__


PROG = "utf8-gateware"
# Files larger than this show a progress bar when stderr is a terminal.
PROGRESS_THRESHOLD = 4 << 20


class CommandError(Exception):
    """A problem to report in one line (exit status 2 unless ``status`` says otherwise)."""
    def __init__(self, message, status=2):
        super().__init__(message)
        self.status = status


def _read_input(path):
    try:
        if path in (None, "-"):
            return sys.stdin.buffer.read()
        with open(path, "rb") as file:
            return file.read()
    except OSError as error:
        raise CommandError(f"cannot read {path!r}: {error.strerror or error}")


def _write_output(path, data):
    try:
        if path in (None, "-"):
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            with open(path, "wb") as file:
                file.write(data)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error of ours; keep Python quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError as error:
        raise CommandError(f"cannot write {path!r}: {error.strerror or error}")


def _write_stats(path, stats):
    if path is None:
        return
    try:
        with open(path, "w") as file:
            json.dump(stats, file, indent=2)
            file.write("\n")
    except OSError as error:
        raise CommandError(f"cannot write {path!r}: {error.strerror or error}")


def _progress(total, unit, description):
    """A progress callback ``advance(n)`` (tqdm on a terminal for big inputs), and a closer."""
    if total < PROGRESS_THRESHOLD or not sys.stderr.isatty():
        return (lambda n: None), (lambda: None)
    from tqdm import tqdm
    bar = tqdm(total=total, unit=unit, unit_scale=True, desc=description, leave=False)
    return bar.update, bar.close


def _note(message):
    print(f"{PROG}: note: {message}", file=sys.stderr)


def _run_engine(args, function, items, item_size):
    """Run ``function(items, errors=, engine=, progress=)`` of :mod:`.sim.engines` on the
    requested engine (falling back, with a note, when the compiled one is unavailable)."""
    from .sim import engines
    try:
        engine, note = engines.resolve_engine(args.engine)
    except ValueError as error:
        raise CommandError(str(error))
    if note:
        _note(note)
    advance, close = _progress(len(items) * item_size, "B", args.command)
    try:
        return engine, function(items, errors=args.errors, engine=engine, progress=advance)
    except engines.EngineError as error:
        raise CommandError(f"{engine} engine: {error}")
    finally:
        close()


def cmd_decode(args):
    from .sim.reference import count_errors, encode
    data = _read_input(args.input)
    from .sim.engines import decode
    engine, run = _run_engine(args, decode, data, 1)
    codepoints = [output.codepoint for output in run.outputs]
    if args.output_format == "utf32le":
        import array
        units = array.array("I", codepoints)
        if sys.byteorder != "little":
            units.byteswap()
        payload = units.tobytes()
    else:
        # U+FFFD becomes EF BF BD; surrogate escapes become the raw bytes they stand for.
        payload = encode(codepoints, "surrogateescape").data
    _write_output(args.output, payload)
    stats = {
        "bytes_in": len(data),
        "codepoints_out": len(codepoints),
        "errors": count_errors(output.error for output in run.outputs),
        "errors_mode": args.errors,
        "engine": engine,
    }
    if run.cycles is not None:
        stats["cycles"] = run.cycles
    _write_stats(args.stats, stats)
    return 0


def cmd_encode(args):
    import array
    from .sim.reference import count_errors
    data = _read_input(args.input)
    if len(data) % 4:
        raise CommandError(f"input is {len(data)} bytes, not a whole number of UTF-32LE code "
                           f"units (a multiple of 4)")
    units = array.array("I")
    units.frombytes(data)
    if sys.byteorder != "little":
        units.byteswap()
    from .sim.engines import encode
    engine, run = _run_engine(args, encode, units, 4)
    _write_output(args.output, run.data)
    stats = {
        "codepoints_in": len(units),
        "bytes_out": len(run.data),
        "errors": count_errors(kind for _, kind in run.errors),
        "errors_mode": args.errors,
        "engine": engine,
    }
    if run.cycles is not None:
        stats["cycles"] = run.cycles
    _write_stats(args.stats, stats)
    if args.errors == "strict" and run.errors:
        index, kind = run.errors[0]
        raise CommandError(
            f"{len(run.errors)} invalid code unit(s); the first is U+{units[index]:04X} "
            f"({kind.label}) at index {index}; the valid ones were written", status=1)
    return 0


def _add_engine_option(parser):
    parser.add_argument("--engine", choices=("reference", "python", "compiled"),
        help="reference: the Python model; python: the gateware in Amaranth's simulator; "
             "compiled: the gateware compiled to C++ (CXXRTL). Default: compiled where a C++ "
             "compiler exists, else python")


def build_parser():
    parser = argparse.ArgumentParser(prog=PROG,
        description="Streaming UTF-8 decoder and encoder gateware: simulate, synthesise, build, "
                    "stream through a board.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    decode = commands.add_parser("decode", help="decode UTF-8 to code points",
        description="Decode UTF-8 bytes. Ill-formed input becomes one U+FFFD per maximal "
                    "subpart (--errors replace) or one U+DC80..U+DCFF per undecodable byte "
                    "(--errors surrogateescape), exactly like CPython's bytes.decode.")
    decode.add_argument("input", nargs="?", metavar="INPUT",
        help="UTF-8 input file (default: standard input)")
    decode.add_argument("-o", "--output", metavar="OUTPUT",
        help="output file (default: standard output)")
    decode.add_argument("--errors", choices=("replace", "surrogateescape"), default="replace",
        help="error policy (default: replace)")
    decode.add_argument("--output-format", choices=("utf8", "utf32le"), default="utf8",
        help="utf8: well-formed UTF-8, except that with surrogateescape each escape is written "
             "back as the raw byte it stands for (so the input is reproduced); utf32le: each "
             "output code point as 4 little-endian bytes (escapes as U+DCxx). Default: utf8")
    _add_engine_option(decode)
    decode.add_argument("--stats", metavar="STATS.json",
        help="write bytes_in, codepoints_out, errors per kind (and cycles) as JSON")
    decode.set_defaults(handler=cmd_decode)

    encode = commands.add_parser("encode", help="encode UTF-32LE code units to UTF-8",
        description="Encode UTF-32LE code units (any 32-bit value) to UTF-8. Surrogates and "
                    "values above U+10FFFF are errors: replaced by U+FFFD (replace), left out "
                    "and reported (strict; exit status 1), or, for U+DC80..U+DCFF, turned back "
                    "into the raw byte 80..FF (surrogateescape).")
    encode.add_argument("input", nargs="?", metavar="INPUT",
        help="UTF-32LE input file (default: standard input)")
    encode.add_argument("-o", "--output", metavar="OUTPUT",
        help="output file (default: standard output)")
    encode.add_argument("--errors", choices=("replace", "strict", "surrogateescape"),
        default="replace", help="error policy (default: replace)")
    _add_engine_option(encode)
    encode.add_argument("--stats", metavar="STATS.json",
        help="write codepoints_in, bytes_out, errors per kind (and cycles) as JSON")
    encode.set_defaults(handler=cmd_encode)

    from .hdl.synth import add_synth_parser
    add_synth_parser(commands)

    # Board commands (build, program, stream): boards/cli.py.
    from .boards import cli as board_cli
    board_cli.add_build_parser(commands)
    board_cli.add_program_parser(commands)
    board_cli.add_stream_parser(commands)

    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except CommandError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return error.status
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
