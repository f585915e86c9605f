"""Command-line interface: ``utf8-gateware SUBCOMMAND ...``."""

import argparse
import sys


def build_parser():
    parser = argparse.ArgumentParser(prog="utf8-gateware",
        description="Streaming UTF-8 decoder and encoder gateware: simulate, synthesise, stream.")
    parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
