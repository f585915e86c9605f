"""The command line: ``utf8-gateware COMMAND ...``.

One module per group of commands, each with ``add_parsers(commands)`` that adds its parsers and
sets each one's ``handler``; :func:`main` runs the handler and turns every failure the user can
cause into one line on standard error (:mod:`.common`): exit status 0 success, 1 a finding, 2 bad
usage or input that could not be processed.

=============  ==================================  ===================
command        what it does                         module
=============  ==================================  ===================
``decode``     UTF-8 to code points, any engine     :mod:`.codec`
``encode``     code points to UTF-8, any engine     :mod:`.codec`
``validate``   a verdict on UTF-8, any engine       :mod:`.validate`
``synth``      a core alone through the FPGA flow  :mod:`.synth`
``export``     a core as Verilog, AXI4-Stream ports :mod:`.export`
``build``      the board's bitstream                :mod:`.board`
``program``    flash it                             :mod:`.board`
``stream``     a file through the (virtual) board   :mod:`.board`
``formal``     the formal proofs                    :mod:`.formal`
=============  ==================================  ===================
"""

import argparse
import sys

from utf8_gateware import __version__
from . import board, codec, export, formal, synth, validate
from .common import ONE_LINE_ERRORS, PROG, CommandError, one_line


__all__ = ["build_parser", "main"]


def build_parser():
    """The :class:`argparse.ArgumentParser` of ``utf8-gateware`` with every command."""
    parser = argparse.ArgumentParser(prog=PROG,
        description="Streaming UTF-8 decoder and encoder gateware: simulate, synthesise, build, "
                    "stream through a board, prove.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (codec, validate, synth, export, board, formal):
        module.add_parsers(commands)
    return parser


def main(argv=None):
    """Run ``utf8-gateware`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit
    status."""
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except CommandError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return error.status
    except ONE_LINE_ERRORS as error:
        print(f"{PROG}: error: {one_line(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
