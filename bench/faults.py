#!/usr/bin/env python3
"""What faults on the line cost the board link: board time of a message with and without faults.

Runs the virtual board (the iCEBreaker's gateware compiled with CXXRTL, 3 Mbaud) as
``utf8-gateware stream --inject-faults RATE,SEED`` does, on the first ``--size`` bytes of the
bundled sample (``encode``: as many bytes of the same text in UTF-32LE; ``from-utf16``: in
UTF-16LE), in each mode, for each
seed and each set of fault kinds (``all``: flip, drop, insert and stall drawn alike; ``loss``:
the first three; or one kind alone). Prints per mode the board time without faults (4 KiB
frames, the default; and with the DATA frames the host uses at that fault rate, about
sqrt(10/RATE) bytes), the median over the seeds with faults and its cost, the time stalls
paused the line to the board (the input stops and the output follows it: no protocol gets that
time back) and the cost without it (what the protocol adds), the input bytes sent again, the
go-backs, rewinds and timeouts. ``--breakdown``: per seed, where its time went, against the
message without faults in 4 KiB frames: the smaller frames' framing and requests (the same
message without faults in them), the bytes sent again on the busier line (beyond that
message's), the stalls of the busier line, and the rest (the busier line idle).
Every message must complete with ``match`` true (a run that does not is reported as a failure).

Usage: ``python bench/faults.py [--size 16384] [--rate 1e-4] [--seeds 1 2 3 4 5]
[--modes MODE ...] [--kinds all loss stall ...] [--stall-ms 2]
[--inflight BYTES] [--breakdown] [--json FILE]``
"""

import argparse
import json
import statistics
import sys
import time

from utf8_gateware.boards.host import Link, BoardError, stream, fault_frame
from utf8_gateware.boards.icebreaker import board_core
from utf8_gateware.boards.protocol import Mode
from utf8_gateware.boards.virtual import FAULT_KINDS, Faults, VirtualBoard
from utf8_gateware.cli.board import sample_path


#: The fault sets (``--kinds``): all four line faults, the three that lose or corrupt bytes
#: (``loss``), or one alone.
KIND_SETS = {"all": FAULT_KINDS[:4], "loss": FAULT_KINDS[:3],
             **{kind: (kind,) for kind in FAULT_KINDS[:4]}}


def message(mode, size):
    """``size`` bytes of the sample (repeated; cut at a character), as the mode takes it
    (``encode``: UTF-32LE, ``from-utf16``: UTF-16LE, else UTF-8)."""
    sample = sample_path().read_bytes()
    text = (sample * (size // len(sample) + 1))[:size].decode("utf-8", "ignore")
    if mode is Mode.ENCODE:
        return text.encode("utf-32-le")[:size - size % 4]
    if mode is Mode.FROM_UTF16:
        return text.encode("utf-16-le")[:size - size % 2]
    return text.encode("utf-8")


def run(mode, data, faults=None, inflight=None, rate=None, timeout=60.0):
    """One message through a fresh virtual board; the ``stream`` report plus the bridge's
    statistics (``stats``). DATA frames as ``stream`` chooses them for ``rate`` faults per
    byte (default: the rate of ``faults``; none: the board's largest)."""
    board = VirtualBoard(board_core(), faults).start()
    if rate is None:
        rate = faults.rate if faults else 0
    try:
        with Link(board.port, timeout=timeout, retransmit_after=board.RETRANSMIT_AFTER,
                  inflight=inflight) as link:
            hello = link.connect()
            link.frame = fault_frame(rate, hello.max_payload)
            report, _ = stream(link, mode, data)
    except BoardError as error:
        report = {"match": False, "problems": [str(error)]}
    finally:
        stats = board.stop() or {}
    return {**report, "stats": stats}


def stalled(report):
    """Seconds the line to the board was paused by stalls (board time): the input stops, and
    the output follows it, so no protocol gets this time back (at most: a direction with room
    to spare may make some of it up)."""
    return report["stats"].get("stalled", {}).get("to_board", 0) / report["clock_hz"]


def breakdown(report, clean, small):
    """Where the time of ``report`` (a message with faults) went, against ``clean`` (no faults,
    4 KiB frames) and ``small`` (no faults, the frames ``report`` used), as fractions of
    ``clean``'s board time: the small frames' framing and requests, the bytes sent again on the
    busier line (beyond ``small``'s), that line's stalls, and the rest (that line idle)."""
    to_board = clean["busier_direction"] == "to_board"
    wire = "wire_bytes_to_board" if to_board else "wire_bytes_from_board"
    byte_time = 10 / clean["baud"]
    base = clean["board_seconds"]
    framing = (small[wire] - clean[wire]) * byte_time
    again = (report[wire] - small[wire]) * byte_time
    paused = (report["stats"].get("stalled", {}).get("to_board" if to_board else "to_host", 0)
              / report["clock_hz"])
    idle = report["board_seconds"] - base - framing - again - paused
    return {"cost": report["board_seconds"] / base - 1, "framing": framing / base,
            "again": again / base, "again_bytes": report[wire] - small[wire],
            "stalled": paused / base, "idle": idle / base}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=16384, help="bytes of the sample (16 KiB)")
    parser.add_argument("--rate", type=float, default=1e-4, help="faults per byte each way")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--modes", nargs="+", default=[mode.label for mode in Mode],
                        choices=[mode.label for mode in Mode], help="default: every mode")
    parser.add_argument("--kinds", nargs="*", default=["all"], choices=list(KIND_SETS),
                        help="fault sets to run (none: only the messages without faults)")
    parser.add_argument("--stall-ms", type=float, default=Faults.STALL_S * 1e3,
                        help=f"the longest stall (default {Faults.STALL_S * 1e3:g} ms)")
    parser.add_argument("--inflight", type=int,
                        help="the host's input bytes in flight (default: the host's, "
                             "inflight_for the baud rate and frame)")
    parser.add_argument("--breakdown", action="store_true",
                        help="print where each seed's time went (see breakdown)")
    parser.add_argument("--json", metavar="FILE", help="also write every run's figures")
    args = parser.parse_args(argv)

    results = {}
    failures = 0
    print(f"{args.size} bytes of the sample, {args.rate:g} faults per byte each way (stalls of "
          f"up to {args.stall_ms:g} ms), seeds "
          f"{' '.join(map(str, args.seeds))}; board time (median over the seeds)", flush=True)
    for label in args.modes:
        mode = Mode.from_label(label)
        data = message(mode, args.size)
        clean = run(mode, data, inflight=args.inflight)
        small = run(mode, data, inflight=args.inflight, rate=args.rate)
        base = clean["board_seconds"]
        results[label] = {"clean": clean, "clean_small_frames": small}
        print(f"{label}: no faults {base * 1e3:.1f} ms ({small['board_seconds'] * 1e3:.1f} ms "
              f"with the frames chosen for faults)", flush=True)
        for kinds in args.kinds:
            reports = []
            for seed in args.seeds:
                started = time.monotonic()
                report = run(mode, data, Faults(args.rate, seed, KIND_SETS[kinds],
                                                    stall=args.stall_ms / 1e3),
                             args.inflight)
                report["wall"] = time.monotonic() - started
                reports.append(report)
                if not report["match"]:
                    failures += 1
                    print(f"  FAILED {kinds} seed {seed}: {report['problems']}", flush=True)
            results[label][kinds] = reports
            good = [r for r in reports if r["match"]]
            if not good:
                continue
            median = statistics.median(r["board_seconds"] for r in good)
            paused = statistics.mean(stalled(r) for r in good)
            protocol = statistics.median(r["board_seconds"] - stalled(r) for r in good)
            resent = statistics.median(r["link"]["bytes_resent"] for r in good)
            totals = {name: sum(r["link"][name] for r in good)
                      for name in ("go_backs", "rewinds", "timeouts")}
            print(f"  {kinds:9} {median * 1e3:6.1f} ms ({median / base - 1:+.1%}; line to the "
                  f"board paused {paused / base:.1%} (mean), the rest {protocol / base - 1:+.1%}"
                  f"); input sent again {resent:.0f} B (median); in all "
                  + ", ".join(f"{name} {count}" for name, count in totals.items())
                  + "; per seed " + " ".join(f"{r['board_seconds'] * 1e3:.1f}" for r in good),
                  flush=True)
            if args.breakdown:
                matched = [(seed, r) for seed, r in zip(args.seeds, reports) if r["match"]]
                parts = [breakdown(r, clean, small) for _, r in matched]
                for (seed, r), part in zip(matched, parts):
                    print(f"    seed {seed}: {part['cost']:+.1%} = framing {part['framing']:+.1%}"
                          f" + sent again {part['again']:+.1%} ({part['again_bytes']} B) + "
                          f"stalled {part['stalled']:+.1%} + idle {part['idle']:+.1%}; faults "
                          f"{r['stats'].get('faults', {})}", flush=True)
                print("    median " + ", ".join(
                    f"{name} {statistics.median(p[name] for p in parts):+.1%}"
                    for name in ("cost", "framing", "again", "stalled", "idle")), flush=True)
        if args.json:
            with open(args.json, "w") as file:
                json.dump(results, file, indent=1, default=str)
    if failures:
        print(f"{failures} message(s) did not complete with match true")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
