"""``utf8-gateware build``, ``program`` and ``stream``: the board."""

import importlib.resources
import os
import sys

from utf8_gateware.boards import icebreaker, ulx3s
from utf8_gateware.boards.flow import BuildError, ProgramError
from utf8_gateware.boards.host import BoardError, Link, fault_frame, stream
from utf8_gateware.boards.protocol import Mode
from utf8_gateware.boards.uart import uart_divisor
from utf8_gateware.boards.virtual import FAULT_KINDS, Faults
from utf8_gateware.hdl.synth import PLACERS
from .common import PROG, CommandError, progress, write_json


__all__ = ["add_parsers", "sample_path", "BOARDS"]


#: Boards ``build`` and ``program`` know, and their modules (``build``, ``program``, ``FLOW``,
#: ``NAME``); ``stream`` talks to any of them (the protocol is the same).
BOARDS = {"icebreaker": icebreaker, "ulx3s": ulx3s}


def sample_path():
    """Path of the bundled sample text (package data ``utf8_gateware/samples/sample.txt``)."""
    return importlib.resources.files("utf8_gateware") / "samples" / "sample.txt"


def add_parsers(commands):
    """Add ``build``, ``program`` and ``stream`` to ``commands``."""
    build = commands.add_parser("build", help="build the board's bitstream",
        description="Synthesise, place and route the board design (PLL, UART, framer, cores) "
                    "with the YoWASP tools and write a JSON report. Exits with 1 if timing is "
                    "not met at the design clock.")
    build.add_argument("--board", choices=BOARDS, default="icebreaker",
        help="target board: icebreaker (iCE40 UP5K), ulx3s (ECP5 LFE5U-25F) (default: "
             "icebreaker)")
    build.add_argument("--build-dir", metavar="DIR", default="build",
        help="directory for the build products (default: build)")
    build.add_argument("--json", metavar="REPORT.json",
        help="write the report (fmax_mhz, clock_mhz, cells, ram, pll, ...) as JSON")
    build.add_argument("--seed", type=int, default=1, help="nextpnr placement seed (default 1)")
    build.add_argument("--placer", default=PLACERS[0], metavar="PLACER",
        help=f"nextpnr's placer: {', '.join(PLACERS)} (default: {PLACERS[0]})")
    build.add_argument("--baud", type=int,
        help=f"the bitstream's UART rate (default: {icebreaker.BAUD}; a whole number of clock "
             f"cycles per bit, at least 4: up to {icebreaker.CLOCK_HZ // 4} baud on the "
             f"iCEBreaker ({icebreaker.CLOCK_HZ / 1e6:g} MHz), {ulx3s.CLOCK_HZ // 4} on the "
             f"ULX3S ({ulx3s.CLOCK_HZ / 1e6:g} MHz))")
    build.add_argument("--routed-netlist", action="store_true",
        help="also keep nextpnr's placed and routed netlist (NAME.routed.json in the build "
             "directory; the report's routed_netlist), which utf8_gateware.sim.postroute "
             "simulates for the iCEBreaker")
    build.set_defaults(handler=run_build)

    program = commands.add_parser("program", help="flash the bitstream to the board",
        description="Write the bitstream to the board's SPI flash: the iCEBreaker with iceprog "
                    "or openFPGALoader, the ULX3S with openFPGALoader, fujprog or ujprog.")
    program.add_argument("--board", choices=BOARDS, default="icebreaker",
        help="target board (default: icebreaker)")
    program.add_argument("--bitstream", metavar="FILE",
        help=f"bitstream file (default: build/{icebreaker.NAME}.bin for the iCEBreaker, "
             f"build/{ulx3s.NAME}.bit for the ULX3S)")
    program.set_defaults(handler=run_program)

    modes = [mode.label for mode in Mode]
    parser = commands.add_parser("stream", help="stream a file through the board and check it",
        description="Send FILE through the board (or, without --port, the virtual board: the "
                    "same gateware compiled with CXXRTL behind a pseudo-terminal) and check "
                    "every output byte against the reference model. Prints bytes, code points, "
                    "errors per kind, throughput and line utilisation. Exits with 1 on a "
                    "mismatch.")
    parser.add_argument("input", nargs="?", metavar="FILE",
        help="input file (default: the bundled multilingual sample)")
    parser.add_argument("--port", metavar="PORT",
        help="serial port of the board, e.g. /dev/ttyUSB1 (default: the virtual board)")
    parser.add_argument("--baud", type=int, default=icebreaker.BAUD,
        help=f"UART baud rate (default: {icebreaker.BAUD}; the bitstream's rate for a real "
             f"board)")
    parser.add_argument("--mode", choices=modes, default=modes[0],
        help="transcode: UTF-8 in, sanitised UTF-8 out; decode: UTF-8 in, UTF-32 code points "
             "out; encode: UTF-32LE in, UTF-8 out; validate: UTF-8 in, counts only; to-utf16: "
             "UTF-8 in, UTF-16LE out; from-utf16: UTF-16LE in, UTF-8 out (errors replaced by "
             f"U+FFFD) (default: {modes[0]})")
    parser.add_argument("-o", "--output", metavar="OUTPUT",
        help="also write the board's output to OUTPUT")
    parser.add_argument("--json", metavar="REPORT.json",
        help="write the report (match, line_utilisation, baud, counts, ...) as JSON")
    parser.add_argument("--timeout", type=float, default=30.0,
        help="seconds without progress before giving up (default: 30)")
    parser.add_argument("--frame", type=int, metavar="BYTES",
        help="largest DATA frame payload in both directions (default: the board's largest, "
             "4096; with --inject-faults about sqrt(10/RATE), which loses least to faults)")
    parser.add_argument("--inject-faults", metavar="RATE[,SEED]",
        help="virtual board only: the bridge injects RATE faults per byte in each direction "
             "(bit flips, dropped and inserted bytes, stalls of up to 2 ms; see --fault-kinds), "
             "from a generator seeded with SEED (default 1); the link recovers by "
             "retransmission")
    parser.add_argument("--fault-kinds", metavar="KIND,...", default="flip,drop,insert,stall",
        help=f"the faults to draw from: {', '.join(FAULT_KINDS)} (reset: the board is reset "
             f"and the message starts over; default: flip,drop,insert,stall)")
    parser.set_defaults(handler=run_stream)


#: How ``build`` names the cells of a report.
_CELL_NAMES = {"lc": "logic cells", "lut4": "LUT4", "ff": "flip-flops", "ram": "block RAM",
               "spram": "SPRAM"}


def run_build(args):
    board = BOARDS[args.board]
    baud = board.BAUD if args.baud is None else args.baud
    try:
        uart_divisor(board.CLOCK_HZ, baud)
    except (TypeError, ValueError) as error:
        raise CommandError(f"--baud {baud}: {error}") from None
    try:
        report = board.build(args.build_dir, seed=args.seed, baud=baud,
                             routed_netlist=args.routed_netlist, placer=args.placer)
    except BuildError as error:
        raise CommandError(str(error)) from None
    write_json(args.json, report)
    fmax = ", ".join(f"{name} {value:.1f} MHz" for name, value in report["fmax_mhz"].items())
    print(f"bitstream: {report['bitstream']}")
    print(f"clock {report['clock_mhz']:g} MHz, post-route fmax: {fmax} "
          f"({'timing met' if report['timing_met'] else 'TIMING NOT MET'})")
    pll = ", ".join(f"{key.upper()}={report['pll'][key]}" for key in
                    ("divr", "divf", "divq", "clki_div", "clkfb_div", "clkop_div")
                    if key in report["pll"])
    print(", ".join(f"{label} {report[key]['used']}/{report[key]['available']}"
                    for key, label in _CELL_NAMES.items() if key in report)
          + f", PLL {pll}, UART {report['baud']} baud, {report['seconds']:.0f} s")
    if not report["timing_met"]:
        raise CommandError(f"timing not met: fmax {fmax} is below the "
                           f"{report['clock_mhz']:g} MHz clock", status=1)
    return 0


def run_program(args):
    board = BOARDS[args.board]
    bitstream = args.bitstream or os.path.join("build", f"{board.NAME}{board.FLOW.bitstream}")
    try:
        tool = board.program(bitstream, timeout=120)
    except ProgramError as error:
        raise CommandError(str(error)) from None
    print(f"programmed {bitstream} with {tool}")
    return 0


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
    if report["retransmissions"] or report.get("faults_injected"):
        injected = report.get("faults_injected") or {}
        print(f"  link: {report['retransmissions']} retransmissions ("
              + ", ".join(f"{name} {count}" for name, count in report["link"].items() if count)
              + ")" + ("; faults injected: " + ", ".join(f"{name} {count}" for name, count
                                                         in injected.items())
                       if injected else ""))
    if report["match"]:
        print("  match: every output byte and count equals the reference model")
    else:
        for problem in report["problems"]:
            print(f"  MISMATCH: {problem}")


def _faults(args):
    """The :class:`~utf8_gateware.boards.virtual.Faults` of ``--inject-faults`` (or ``None``)."""
    if args.inject_faults is None:
        return None
    if args.port is not None:
        raise CommandError("--inject-faults works with the virtual board only (no --port)")
    kinds = [kind.strip() for kind in args.fault_kinds.split(",") if kind.strip()]
    try:
        return Faults.parse(args.inject_faults, kinds)
    except ValueError as error:
        raise CommandError(f"--inject-faults: {error}") from None


def _frame_size(args, faults, hello):
    """``--frame``, or the frame size that loses least to faults at the injected rate."""
    if args.frame is not None:
        if not 1 <= args.frame <= hello.max_payload:
            raise CommandError(f"--frame must be 1..{hello.max_payload}, not {args.frame}")
        return args.frame
    return fault_frame(faults.rate if faults else 0, hello.max_payload)


def _virtual_board(baud, faults=None):
    """Start the virtual board at ``baud``; returns ``(board, description)``."""
    from utf8_gateware.boards.virtual import VirtualBoard, VirtualBoardError
    try:
        core = icebreaker.board_core(baud=baud)
    except ValueError as error:
        raise CommandError(f"the virtual board cannot run at --baud {baud}: {error}") from None
    if sys.stderr.isatty():
        print(f"{PROG}: starting the virtual board (its first run compiles it, about half a "
              f"minute)", file=sys.stderr)
    try:
        board = VirtualBoard(core, faults).start()
    except VirtualBoardError as error:
        raise CommandError(str(error)) from None
    return board, (f"the virtual board (CXXRTL model at {core.clk_freq / 1e6:g} MHz, "
                   f"simulated time)")


def run_stream(args):
    if args.timeout <= 0:
        raise CommandError("--timeout must be positive")
    if args.input is None:
        source, name = sample_path(), "the bundled sample"
    else:
        source, name = args.input, args.input
    try:
        with open(source, "rb") as file:
            data = file.read()
    except OSError as error:
        raise CommandError(f"cannot read {str(source)!r}: {error.strerror or error}") from None
    if len(data) >= 1 << 31:
        raise CommandError("the input is too large for one message (2 GiB at most)")
    mode = Mode.from_label(args.mode)
    faults = _faults(args)
    board = stats = None
    try:
        if args.port is None:
            board, where = _virtual_board(args.baud, faults)
            port = board.port
        else:
            port, where = args.port, f"the board on {args.port}"
        advance, close = progress(len(data), "B", "sent to the board", threshold=1)
        try:
            pace = {} if board is None else {"retransmit_after": board.RETRANSMIT_AFTER}
            with Link(port, baud=args.baud, timeout=args.timeout, **pace) as link:
                link.frame = _frame_size(args, faults, link.connect())
                report, output = stream(link, mode, data, progress=advance)
        finally:
            close()
    except BoardError as error:
        raise CommandError(str(error), error.status) from None
    finally:
        if board is not None:
            try:
                stats = board.stop()
            except Exception:
                pass
    report = {"input": str(source), "port": args.port or "virtual", **report}
    if faults is not None:
        report["faults_injected"] = (stats or {}).get("faults")
    write_json(args.json, report)
    if args.output:
        try:
            with open(args.output, "wb") as file:
                file.write(output)
        except OSError as error:
            raise CommandError(f"cannot write {args.output!r}: {error.strerror or error}") \
                from None
    _print_report(report, name, where)
    if not report["match"]:
        raise CommandError("the board's output does not match the reference model", 1)
    return 0
