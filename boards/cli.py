"""The board commands of ``utf8-gateware``: ``build``, ``program`` and ``stream``.

``cli/main.py`` wires them in with::

    from .boards import cli as board_cli
    board_cli.add_build_parser(commands)
    board_cli.add_program_parser(commands)
    board_cli.add_stream_parser(commands)

Each parser sets ``handler`` to a function ``(args) -> exit status`` that prints its own
one-line errors (``utf8-gateware: error: ...``): 0 success, 1 a finding (timing not met, output
mismatch, the board reported an error), 2 bad usage or an environment problem (no tool, no
board, no port).
"""

import importlib.resources
import json
import os
import sys


__all__ = ["add_build_parser", "add_program_parser", "add_stream_parser",
           "main_build", "main_program", "main_stream", "sample_path"]


PROG = "utf8-gateware"
BOARDS = ("icebreaker",)
MODES = ("transcode", "decode", "encode", "validate")


def _error(message, status=2):
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return status


def _write_json(path, data):
    if path is None:
        return None
    try:
        with open(path, "w") as file:
            json.dump(data, file, indent=2)
            file.write("\n")
    except OSError as error:
        return f"cannot write {path!r}: {error.strerror or error}"
    return None


def sample_path():
    """Path of the bundled sample text (package data ``utf8_gateware/samples/sample.txt``)."""
    return importlib.resources.files("utf8_gateware") / "samples" / "sample.txt"


# -- build ---------------------------------------------------------------------------------------

def add_build_parser(subparsers):
    parser = subparsers.add_parser("build", help="build the board's bitstream",
        description="Synthesise, place and route the board design (PLL, UART, framer, cores) "
                    "with the YoWASP tools and write a JSON report. Exits with 1 if timing is "
                    "not met at the design clock.")
    parser.add_argument("--board", choices=BOARDS, default="icebreaker",
        help="target board (default: icebreaker)")
    parser.add_argument("--build-dir", metavar="DIR", default="build",
        help="directory for the build products (default: build)")
    parser.add_argument("--json", metavar="REPORT.json",
        help="write the report (fmax_mhz, clock_mhz, lc, ram, spram, pll, ...) as JSON")
    parser.add_argument("--seed", type=int, default=1, help="nextpnr placement seed (default 1)")
    parser.set_defaults(handler=main_build)
    return parser


def main_build(args):
    from . import icebreaker
    try:
        report = icebreaker.build(args.build_dir, seed=args.seed)
    except icebreaker.BuildError as error:
        return _error(str(error))
    except KeyboardInterrupt:
        return _error("interrupted", 130)
    problem = _write_json(args.json, report)
    if problem:
        return _error(problem)
    fmax = ", ".join(f"{name} {value:.1f} MHz" for name, value in report["fmax_mhz"].items())
    print(f"bitstream: {report['bitstream']}")
    print(f"clock {report['clock_mhz']:g} MHz, post-route fmax: {fmax} "
          f"({'timing met' if report['timing_met'] else 'TIMING NOT MET'})")
    print(f"logic cells {report['lc']['used']}/{report['lc']['available']}, "
          f"block RAM {report['ram']['used']}/{report['ram']['available']}, "
          f"SPRAM {report['spram']['used']}/{report['spram']['available']}, "
          f"PLL DIVR={report['pll']['divr']} DIVF={report['pll']['divf']} "
          f"DIVQ={report['pll']['divq']}, UART {report['baud']} baud, "
          f"{report['seconds']:.0f} s")
    if not report["timing_met"]:
        return _error(f"timing not met: fmax {fmax} is below the {report['clock_mhz']:g} MHz "
                      f"clock", 1)
    return 0


# -- program -------------------------------------------------------------------------------------

def add_program_parser(subparsers):
    parser = subparsers.add_parser("program", help="flash the bitstream to the board",
        description="Write the bitstream to the board's SPI flash with iceprog or "
                    "openFPGALoader.")
    parser.add_argument("--board", choices=BOARDS, default="icebreaker",
        help="target board (default: icebreaker)")
    parser.add_argument("--bitstream", metavar="FILE", default=os.path.join("build",
        "utf8_gateware.bin"), help="bitstream file (default: build/utf8_gateware.bin)")
    parser.set_defaults(handler=main_program)
    return parser


def main_program(args):
    from . import icebreaker
    try:
        tool = icebreaker.program(args.bitstream, timeout=120)
    except icebreaker.ProgramError as error:
        return _error(str(error))
    except KeyboardInterrupt:
        return _error("interrupted", 130)
    print(f"programmed {args.bitstream} with {tool}")
    return 0


# -- stream --------------------------------------------------------------------------------------

def add_stream_parser(subparsers):
    parser = subparsers.add_parser("stream", help="stream a file through the board and check it",
        description="Send FILE through the board (or, without --port, the virtual board: the "
                    "same gateware compiled with CXXRTL behind a pseudo-terminal) and check "
                    "every output byte against the reference model. Prints bytes, code points, "
                    "errors per kind, throughput and line utilisation. Exits with 1 on a "
                    "mismatch.")
    parser.add_argument("input", nargs="?", metavar="FILE",
        help="input file (default: the bundled multilingual sample)")
    parser.add_argument("--port", metavar="PORT",
        help="serial port of the board, e.g. /dev/ttyUSB1 (default: the virtual board)")
    parser.add_argument("--baud", type=int, default=3_000_000,
        help="UART baud rate (default: 3000000; the bitstream's rate for a real board)")
    parser.add_argument("--mode", choices=MODES, default="transcode",
        help="transcode: UTF-8 in, sanitised UTF-8 out; decode: UTF-8 in, UTF-32 code points "
             "out; encode: UTF-32LE in, UTF-8 out; validate: UTF-8 in, counts only "
             "(default: transcode)")
    parser.add_argument("-o", "--output", metavar="OUTPUT",
        help="also write the board's output to OUTPUT")
    parser.add_argument("--json", metavar="REPORT.json",
        help="write the report (match, line_utilisation, baud, counts, ...) as JSON")
    parser.add_argument("--timeout", type=float, default=10.0,
        help="seconds to wait for the board before giving up (default: 10)")
    parser.set_defaults(handler=main_stream)
    return parser


def _progress(total):
    if not sys.stderr.isatty() or total < 1:
        return None, lambda: None
    from tqdm import tqdm
    bar = tqdm(total=total, unit="B", unit_scale=True, desc="sent to the board", leave=False)
    return bar.update, bar.close


def _print_report(report, source, where):
    errors = ", ".join(f"{name} {count}" for name, count in report["errors"].items())
    direction = ("host->board" if report["busier_direction"] == "to_board" else "board->host")
    print(f"stream: {source} through {where}, mode {report['mode']}")
    print(f"  bytes in {report['bytes_in']}, bytes out {report['bytes_out']}, "
          f"code points {report['codepoints']}")
    print(f"  errors: {errors}")
    print(f"  throughput {report['throughput_bytes_per_s'] / 1e3:.1f} kB/s "
          f"(board time {report['board_seconds'] * 1e3:.1f} ms, wall time "
          f"{report['wall_seconds']:.1f} s); line utilisation "
          f"{report['line_utilisation']:.2%} ({direction}, {report['baud']} baud)")
    if report["match"]:
        print("  match: every output byte and count equals the reference model")
    else:
        for problem in report["problems"]:
            print(f"  MISMATCH: {problem}")


def main_stream(args):
    from .host import BoardError, Link, stream
    from .protocol import Mode
    if args.timeout <= 0:
        return _error("--timeout must be positive")
    if args.input is None:
        source = sample_path()
        name = "the bundled sample"
    else:
        source = args.input
        name = args.input
    try:
        with open(source, "rb") as file:
            data = file.read()
    except OSError as error:
        return _error(f"cannot read {str(source)!r}: {error.strerror or error}")
    mode = Mode[args.mode.upper()]
    if len(data) >= 1 << 31:
        return _error("the input is too large for one message (2 GiB at most)")
    board = None
    try:
        if args.port is None:
            from .virtual import VirtualBoard, VirtualBoardError
            from .icebreaker import board_core
            try:
                core = board_core(baud=args.baud)
            except ValueError as error:
                return _error(f"the virtual board cannot run at --baud {args.baud}: {error}")
            if sys.stderr.isatty():
                print(f"{PROG}: starting the virtual board (its first run compiles it, about "
                      f"half a minute)", file=sys.stderr)
            try:
                board = VirtualBoard(core).start()
            except VirtualBoardError as error:
                return _error(str(error))
            port = board.port
            where = (f"the virtual board (CXXRTL model at {core.clk_freq / 1e6:g} MHz, "
                     f"simulated time)")
        else:
            port = args.port
            where = f"the board on {port}"
        advance, close = _progress(len(data))
        try:
            with Link(port, baud=args.baud, timeout=args.timeout) as link:
                link.connect()
                report, output = stream(link, mode, data, progress=advance)
        finally:
            close()
    except BoardError as error:
        return _error(str(error), error.status)
    except KeyboardInterrupt:
        return _error("interrupted", 130)
    finally:
        if board is not None:
            try:
                board.stop()
            except Exception:
                pass
    report = {"input": str(source), "port": args.port or "virtual", **report}
    problem = _write_json(args.json, report)
    if problem:
        return _error(problem)
    if args.output:
        try:
            with open(args.output, "wb") as file:
                file.write(output)
        except OSError as error:
            return _error(f"cannot write {args.output!r}: {error.strerror or error}")
    _print_report(report, name, where)
    if not report["match"]:
        return _error("the board's output does not match the reference model", 1)
    return 0
