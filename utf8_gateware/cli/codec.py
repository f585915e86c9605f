"""``utf8-gateware decode``, ``encode`` and ``transcode``: bytes of an encoding (UTF-8 by
default) to code points, back, and to another encoding, with any engine.

All three stream: the input is read in blocks, goes through the engine
(:func:`~utf8_gateware.sim.engines.decode_stream`, :func:`~utf8_gateware.sim.engines.encode_stream`,
:func:`~utf8_gateware.sim.engines.transcode_stream`) and the output is written as it comes, so
memory does not grow with the input.
"""

import array
import sys

from utf8_gateware.hdl.error_kind import DECODE_ERRORS, ENCODE_ERRORS
from utf8_gateware.hdl.text_decoder import DECODINGS
from utf8_gateware.hdl.text_encoder import CARRYING, ENCODINGS
from utf8_gateware.sim import encodings, engines
from utf8_gateware.sim.reference import count_errors, encode as reference_encode
from .common import CommandError, InputFile, OutputFile, note, progress, write_json


__all__ = ["add_parsers", "add_files", "add_engine_option", "add_lanes_option", "run_engine"]


#: Every policy some encoding offers, in the order of the tables (``strict`` decoding excepted:
#: the engines report errors, they do not stop at them).
_DECODE_CHOICES = tuple(dict.fromkeys(
    policy for policies in encodings.DECODE_POLICIES.values() for policy in policies
    if policy != "strict"))
_ENCODE_CHOICES = tuple(dict.fromkeys(
    policy for policies in encodings.ENCODE_POLICIES.values() for policy in policies))
_ENCODING_HELP = (f"the gateware engines decode {', '.join(DECODINGS)} and write "
                  f"{', '.join(ENCODINGS)}; the reference engine has every encoding")


def add_files(parser, what):
    """The ``INPUT`` file (``what``, default standard input) and ``-o OUTPUT`` arguments."""
    parser.add_argument("input", nargs="?", metavar="INPUT",
        help=f"{what} input file (default: standard input)")
    parser.add_argument("-o", "--output", metavar="OUTPUT",
        help="output file (default: standard output)")


def add_parsers(commands):
    """Add ``decode``, ``encode`` and ``transcode`` to ``commands`` (from ``add_subparsers``)."""
    decode = commands.add_parser("decode", help="decode UTF-8 (or --encoding) to code points",
        description="Decode UTF-8 bytes (or those of --encoding). Ill-formed input becomes one "
                    "U+FFFD per maximal subpart (--errors replace) or one U+DC80..U+DCFF per "
                    "undecodable byte (--errors surrogateescape), exactly like CPython's "
                    "bytes.decode.")
    add_files(decode, "UTF-8 (or --encoding)")
    add_encoding_option(decode, "--encoding", "the input's encoding")
    add_errors_option(decode, _DECODE_CHOICES, DECODE_ERRORS)
    decode.add_argument("--output-format", choices=("utf8", "utf32le"), default="utf8",
        help="utf8: well-formed UTF-8, except that with surrogateescape each escape is written "
             "back as the raw byte it stands for (so the input is reproduced), and a lone "
             "surrogate (well-formed in wtf-8 and mutf-8) as U+FFFD; utf32le: each output code "
             "point as 4 little-endian bytes (escapes as U+DCxx). Default: utf8")
    add_engine_option(decode)
    add_lanes_option(decode, "decoder")
    decode.add_argument("--stats", metavar="STATS.json",
        help="write bytes_in, codepoints_out, errors per kind, lanes (and cycles) as JSON")
    decode.set_defaults(handler=run_decode)

    encode = commands.add_parser("encode",
        help="encode UTF-32LE code units to UTF-8 (or --encoding)",
        description="Encode UTF-32LE code units (any 32-bit value) to UTF-8 (or --encoding). "
                    "Surrogates and values above U+10FFFF are errors: replaced by U+FFFD "
                    "(replace), left out and reported (strict; exit status 1), or, for "
                    "U+DC80..U+DCFF, turned back into the raw byte 80..FF (surrogateescape).")
    add_files(encode, "UTF-32LE")
    add_encoding_option(encode, "--encoding", "the output's encoding")
    add_errors_option(encode, _ENCODE_CHOICES, ENCODE_ERRORS)
    add_engine_option(encode)
    encode.add_argument("--stats", metavar="STATS.json",
        help="write codepoints_in, bytes_out, errors per kind (and cycles) as JSON")
    encode.set_defaults(handler=run_encode)

    transcode = commands.add_parser("transcode", help="convert text from one encoding to another",
        description="Decode the input from --from and encode it to --to, in one core (the "
                    "decoder, a register and the encoder). Ill-formed input becomes the target's "
                    "U+FFFD per maximal subpart (replace); surrogateescape (utf-8 to utf-8) "
                    "passes the bytes unchanged; surrogatepass passes lone surrogates. The "
                    f"gateware engines write {', '.join(CARRYING)} here (the encoders that "
                    "carry a decoder's errors).")
    add_files(transcode, "text (in the --from encoding)")
    add_encoding_option(transcode, "--from", "the input's encoding", dest="source")
    add_encoding_option(transcode, "--to", "the output's encoding", dest="target")
    transcode.add_argument("--errors", choices=_DECODE_CHOICES, default=DECODE_ERRORS[0],
        help=f"error policy, one both encodings have (default: {DECODE_ERRORS[0]})")
    add_engine_option(transcode)
    transcode.add_argument("--stats", metavar="STATS.json",
        help="write bytes_in, bytes_out, errors per kind (and cycles) as JSON")
    transcode.set_defaults(handler=run_transcode)


def add_errors_option(parser, choices, utf8):
    """``--errors``: every policy in ``choices``, checked per encoding and engine when the
    command runs; ``utf8``: UTF-8's policies (the first is the default)."""
    parser.add_argument("--errors", choices=choices, default=utf8[0],
        help=f"error policy: for utf-8 {', '.join(utf8)}; for the others see README "
             f"(default: {utf8[0]})")


def add_encoding_option(parser, flag, what, dest=None):
    """An encoding option (``flag``) with the reference model's encodings as choices."""
    parser.add_argument(flag, dest=dest, choices=encodings.ENCODINGS, default="utf-8",
        metavar="ENCODING",
        help=f"{what}: {', '.join(encodings.ENCODINGS)} (default: utf-8; {_ENCODING_HELP})")


def add_engine_option(parser):
    parser.add_argument("--engine", choices=engines.ENGINES,
        help="reference: the Python model; python: the gateware in Amaranth's simulator; "
             "compiled: the gateware compiled to C++ (CXXRTL). Default: compiled where a C++ "
             "compiler exists, else python")


def add_lanes_option(parser, core):
    """``--lanes N`` (one of :data:`~utf8_gateware.sim.engines.LANES`) for ``core``."""
    parser.add_argument("--lanes", type=int, choices=engines.LANES, default=engines.LANES[0],
        help=f"bytes per cycle of the simulated {core} (python and compiled engines; "
             f"default: {engines.LANES[0]})")


def run_engine(args, work, size, check=None):
    """Run ``work(engine, advance)`` on the engine ``args`` ask for (falling back, with a note,
    when the compiled one is unavailable), with a progress bar over ``size`` input bytes (none if
    unknown); engine failures become one-line errors. ``check(engine)``, if given, raises a
    :class:`ValueError` for parameters the engine cannot run (a usage error). Returns
    ``(engine, result)``."""
    engine, fallback = engines.resolve_engine(args.engine)
    if fallback:
        note(fallback)
    if getattr(args, "lanes", 1) != 1 and engine == "reference":
        raise CommandError("--lanes applies to the python and compiled engines, not to the "
                           "reference")
    if check is not None:
        try:
            check(engine)
        except ValueError as error:
            raise CommandError(str(error)) from None
    advance, close = progress(size or 0, "B", args.command)
    try:
        return engine, work(engine, advance)
    except engines.EngineError as error:
        raise CommandError(f"{engine} engine: {error}") from None
    finally:
        close()


def write_stats(args, stats, engine, cycles):
    """Write ``stats`` to ``--stats`` (if given) with ``errors_mode``, ``engine`` and, for the
    gateware engines, ``cycles``."""
    stats.update(errors_mode=args.errors, engine=engine)
    if cycles is not None:
        stats["cycles"] = cycles
    write_json(args.stats, stats)


def _utf8(chunk):
    """UTF-8 of a :class:`~utf8_gateware.sim.engines.DecodedChunk`: U+FFFD becomes EF BF BD;
    surrogate escapes become the raw bytes they stand for. (The codec of CPython does the
    formatting, which the reference encoder defines: anything else a core might output, it
    encodes.) The reference engine's chunks carry their UTF-8 form already."""
    if chunk.utf8 is not None:
        return chunk.utf8
    try:
        return chunk.codepoints.decode("utf-32-le", "surrogatepass").encode(
            "utf-8", "surrogateescape")
    except UnicodeError:
        units = array.array("I")
        units.frombytes(chunk.codepoints)
        if sys.byteorder != "little":
            units.byteswap()
        return reference_encode(units, "surrogateescape").data


def run_decode(args):
    with InputFile(args.input) as source, OutputFile(args.output) as sink:
        totals = {"codepoints": 0, "errors": count_errors(())}

        def work(engine, advance):
            stream = engines.decode_stream(source, args.errors, engine, lanes=args.lanes,
                                           encoding=args.encoding, progress=advance)
            for chunk in stream:
                sink.write(chunk.codepoints if args.output_format == "utf32le" else
                           _utf8(chunk))
                totals["codepoints"] += chunk.count
                for _, kind in chunk.errors:
                    totals["errors"][kind.label] += 1
            return stream.cycles
        engine, cycles = run_engine(args, work, source.size, lambda engine: engines.check_codec(
            "decoder", args.encoding, args.errors, engine, lanes=args.lanes))
    write_stats(args, {"bytes_in": source.consumed, "encoding": args.encoding,
                       "codepoints_out": totals["codepoints"], "errors": totals["errors"],
                       "lanes": args.lanes}, engine, cycles)
    return 0


def run_encode(args):
    # Blocks of 64 Ki units: the reference encoder holds a Python object per unit meanwhile.
    with InputFile(args.input, block=1 << 18) as source, OutputFile(args.output) as sink:
        if source.size is not None and source.size % 4:
            raise CommandError(f"input is {source.size} bytes, not a whole number of UTF-32LE "
                               f"code units (a multiple of 4)")
        # `first`: the first invalid unit (index, kind, value), found on the way in.
        totals = {"units": 0, "bytes": 0, "errors": [], "first": None}

        def units():
            rest = b""
            for block in source:
                block, rest = rest + block, b""
                cut = len(block) - len(block) % 4
                block, rest = block[:cut], block[cut:]
                if totals["first"] is None:
                    units = array.array("I")
                    units.frombytes(block)
                    if sys.byteorder != "little":
                        units.byteswap()
                    found = engines.invalid_units(units, totals["units"], args.errors,
                                                  args.encoding)
                    if found:
                        totals["first"] = (*found[0], units[found[0][0] - totals["units"]])
                totals["units"] += len(block) // 4
                yield block
            if rest:
                totals["partial"] = totals["units"] * 4 + len(rest)

        def work(engine, advance):
            stream = engines.encode_stream(units(), args.errors, engine, encoding=args.encoding,
                                           progress=advance)
            for chunk in stream:
                sink.write(chunk.data)
                totals["bytes"] += len(chunk.data)
                totals["errors"].append(count_errors(kind for _, kind in chunk.errors))
            return stream.cycles
        engine, cycles = run_engine(args, work, source.size, lambda engine: engines.check_codec(
            "encoder", args.encoding, args.errors, engine))
    if "partial" in totals:
        raise CommandError(f"input is {totals['partial']} bytes, not a whole number of UTF-32LE "
                           f"code units (a multiple of 4); the whole units were encoded")
    errors = count_errors(())
    for counts in totals["errors"]:
        for label, count in counts.items():
            errors[label] += count
    write_stats(args, {"codepoints_in": totals["units"], "encoding": args.encoding,
                       "bytes_out": totals["bytes"], "errors": errors}, engine, cycles)
    if args.errors == "strict" and sum(errors.values()):
        index, kind, unit = totals["first"]
        raise CommandError(
            f"{sum(errors.values())} invalid code unit(s); the first is U+{unit:04X} "
            f"({kind.label}) at index {index}; the valid ones were written", status=1)
    return 0


def run_transcode(args):
    with InputFile(args.input) as source, OutputFile(args.output) as sink:
        totals = {"bytes": 0, "errors": count_errors(())}

        def work(engine, advance):
            stream = engines.transcode_stream(source, args.source, args.target, args.errors,
                                              engine, progress=advance)
            for chunk in stream:
                sink.write(chunk.data)
                totals["bytes"] += len(chunk.data)
                for kind in chunk.errors:
                    totals["errors"][kind.label] += 1
            return stream.cycles
        engine, cycles = run_engine(args, work, source.size, lambda engine: engines.check_codec(
            "transcoder", args.source, args.errors, engine, target=args.target))
    write_stats(args, {"bytes_in": source.consumed, "from": args.source, "to": args.target,
                       "bytes_out": totals["bytes"], "errors": totals["errors"]}, engine, cycles)
    return 0
