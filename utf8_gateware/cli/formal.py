"""``utf8-gateware formal``: the formal proofs of the cores, run with SymbiYosys."""

import textwrap
import time

from utf8_gateware.formal.catalog import catalog
from utf8_gateware.formal.runner import run_many
from .common import CommandError, at_least


__all__ = ["add_parsers"]


def add_parsers(commands):
    """Add ``formal`` to ``commands``."""
    parser = commands.add_parser("formal", help="run the formal proofs of the cores",
        description="Run the formal proofs of the UTF-8 cores (yowasp-sby with the Yices "
                    "solver) and print a table: each proof and its cover run. Exits with 1 if "
                    "a run did not end as expected.")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="proofs to run (default: those of the test marker `formal`, or "
                             "all with --all; see --list)")
    parser.add_argument("--list", action="store_true",
                        help="list every proof the tests run (with its test marker) and exit")
    parser.add_argument("--all", action="store_true",
                        help="also run the long proofs (test marker `formal_long`)")
    parser.add_argument("--jobs", "-j", type=at_least(1), default=None,
                        help="parallel sby processes (default: the number of CPUs)")
    parser.add_argument("--workdir", default=None,
                        help="where to keep the sby files and traces (default: a temporary "
                             "directory, kept)")
    parser.add_argument("--extra-depth", type=at_least(0), default=0, metavar="N",
                        help="add N steps to every proof's depth (slower, stronger)")
    parser.add_argument("--timeout", type=at_least(1), default=600, metavar="SECONDS",
                        help="per sby run (default: 600)")
    parser.set_defaults(handler=run_formal)


def run_formal(args):
    entries = catalog()
    if args.list:
        for entry in entries:
            proof = entry.proof
            print(f"{proof.name:32} {proof.method:5} depth {proof.depth:3}  {entry.marker:11} "
                  f"{entry.module:32} {proof.statement}")
        return 0
    unknown = set(args.names) - {entry.proof.name for entry in entries}
    if unknown:
        raise CommandError(f"unknown proof(s): {', '.join(sorted(unknown))} (see --list)")
    selected = [entry.proof for entry in entries
                if entry.proof.name in args.names or
                (not args.names and (args.all or entry.marker == "formal"))]
    jobs = [job for proof in selected for job in proof.jobs(extra_depth=args.extra_depth)]
    for job in jobs:
        job.timeout = args.timeout
    started = time.monotonic()
    results = run_many(jobs, workdir=args.workdir, max_workers=args.jobs)
    bad = 0
    for job in jobs:
        result = results[job.name]
        ok = result.status == job.expect
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {job.name:28} {result.mode:5} depth "
              f"{result.depth:3} {result.status:7} {result.elapsed:6.1f} s")
        if not ok:
            print(textwrap.indent(result.summary(), "     "))
    where = next(iter(results.values())).workdir.parent
    print(f"{len(jobs) - bad} of {len(jobs)} sby runs as expected in "
          f"{time.monotonic() - started:.0f} s; files in {where}")
    if bad:
        raise CommandError(f"{bad} sby run(s) did not end as expected", status=1)
    return 0
