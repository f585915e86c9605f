"""Stream drivers for Amaranth simulations: one source, sink and checker for every test.

* :func:`stream_put` / :func:`stream_get` -- one transfer, for hand-written testbenches;
  :func:`put_and_collect` -- a list of inputs in, every output meanwhile and after.
* :func:`run_full_rate` -- offer payloads back to back at full rate to a core whose sink is
  always ready, and record when each went in and came out (throughput and latency tests; it
  waits for no ``last``).
* :func:`run_stream` -- push a list of payloads into a core's input stream (with optional random
  source gaps), take its output stream (with optional random sink stalls) until every message has
  ended, check the stream rules on the output port every cycle, and return what came out, when,
  and how often the core refused input.

On a failure :func:`run_stream` runs the same case again with a waveform dump and names the VCD
file (plus a GTKWave save file) in the exception. The files go to ``$UTF8_GATEWARE_FAILURES``, or
``sim-failures/`` in the current directory.
"""

import os
import random
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.sim import Simulator


__all__ = ["stream_put", "stream_get", "put_and_collect", "StreamRun", "StreamRuleError",
           "run_stream", "run_full_rate", "run_simulation", "failure_dir"]


async def stream_put(ctx, stream, payload):
    """Offer ``payload`` on ``stream`` (a source) until it is taken; one transfer."""
    ctx.set(stream.valid, 1)
    ctx.set(stream.payload, payload)
    while True:
        _, _, ready = await ctx.tick().sample(stream.ready)
        if ready:
            break
    ctx.set(stream.valid, 0)


async def stream_get(ctx, stream):
    """Take one payload from ``stream`` (a sink); returns it."""
    ctx.set(stream.ready, 1)
    while True:
        _, _, valid, payload = await ctx.tick().sample(stream.valid, stream.payload)
        if valid:
            break
    ctx.set(stream.ready, 0)
    return payload


async def put_and_collect(ctx, dut, inputs, *, idle):
    """Offer ``inputs`` (payloads) one after the other on ``dut.i``, each until taken, with
    ``dut.o`` ready, then wait ``idle`` cycles; returns every payload ``dut.o`` gave meanwhile
    (for hand-written testbenches, e.g. after a reset)."""
    outputs = []
    ctx.set(dut.o.ready, 1)
    for item in inputs:
        ctx.set(dut.i.valid, 1)
        ctx.set(dut.i.payload, item)
        while True:
            _, _, ready, valid, payload = await ctx.tick().sample(
                dut.i.ready, dut.o.valid, dut.o.payload)
            if valid:
                outputs.append(payload)
            if ready:
                break
    ctx.set(dut.i.valid, 0)
    for _ in range(idle):
        _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
        if valid:
            outputs.append(payload)
    return outputs


class StreamRuleError(AssertionError):
    """The core broke a rule of :mod:`amaranth.lib.stream` on its output."""


@dataclass
class StreamRun:
    """What :func:`run_stream` saw.

    ``outputs``: the payloads transferred out (:class:`amaranth.lib.data.Const`), in order.
    ``out_cycles`` / ``in_cycles``: the cycle of each output / input transfer (cycle 0 is the
    first clock edge). ``cycles``: clock cycles from the first input transfer to the last output
    transfer, both included. ``ready_low``: cycles in which input was offered but refused.
    """
    outputs: list = field(default_factory=list)
    out_cycles: list = field(default_factory=list)
    in_cycles: list = field(default_factory=list)
    ready_low: int = 0
    total_cycles: int = 0

    @property
    def cycles(self):
        if not self.in_cycles or not self.out_cycles:
            return 0
        return self.out_cycles[-1] - self.in_cycles[0] + 1


def failure_dir():
    """Where waveforms of failing simulations are written."""
    return Path(os.environ.get("UTF8_GATEWARE_FAILURES", "sim-failures"))


def _case_name(name):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def run_simulation(sim, name, traces=()):
    """Run ``sim`` (an :class:`amaranth.sim.Simulator` with its clocks and testbenches added).

    If it fails, run it again from the start (:meth:`~amaranth.sim.Simulator.reset`) writing a
    waveform, ``<failure_dir>/<name>.vcd`` and a GTKWave save file beside it with ``traces``,
    and re-raise the first failure with the paths added to its message.
    """
    try:
        sim.run()
    except Exception as error:
        path = failure_dir() / f"{_case_name(name)}.vcd"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        try:
            sim.reset()
            with sim.write_vcd(str(path), str(path.with_suffix(".gtkw")), traces=traces):
                sim.run()
        except Exception:
            pass
        if path.exists():
            _annotate(error, path)
        raise


def _annotate(error, path):
    note = f"\nwaveform: {path.resolve()} (GTKWave: {path.with_suffix('.gtkw').resolve()})"
    error.args = ((str(error.args[0]) if error.args else "") + note, *error.args[1:])
    print(note.strip(), file=sys.stderr)   # never into a command's output


def _simulate(dut, inputs, *, i, o, gap, stall, seed, idle, max_cycles, extra, vcd):
    rng_source = random.Random(f"{seed}:source")
    rng_sink = random.Random(f"{seed}:sink")
    messages = sum(1 for item in inputs if _last(item))
    run = StreamRun()
    state = {"lasts": 0, "error": None}

    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def source(ctx):
        for item in inputs:
            while gap and rng_source.random() < gap:
                await ctx.tick()
            await stream_put(ctx, i, item)

    async def monitor(ctx):
        cycle = 0
        held = None  # (payload) of an output offered but not taken in the previous cycle
        async for _, _, i_valid, i_ready, o_valid, o_ready, o_payload in ctx.tick().sample(
                i.valid, i.ready, o.valid, o.ready, o.payload):
            payload_bits = o_payload.as_value().value
            if held is not None and state["error"] is None:
                if not o_valid:
                    state["error"] = StreamRuleError(
                        f"cycle {cycle}: o.valid fell before the transfer")
                elif payload_bits != held:
                    state["error"] = StreamRuleError(
                        f"cycle {cycle}: o.payload changed before the transfer")
            held = payload_bits if o_valid and not o_ready else None
            if i_valid and i_ready:
                run.in_cycles.append(cycle)
            elif i_valid:
                run.ready_low += 1
            if o_valid and o_ready:
                run.outputs.append(o_payload)
                run.out_cycles.append(cycle)
                if o_payload.last:
                    state["lasts"] += 1
            cycle += 1
            run.total_cycles = cycle

    async def sink(ctx):
        idle_left = idle
        while idle_left > 0 and state["error"] is None:
            if state["lasts"] >= messages:
                idle_left -= 1
            if run.total_cycles > max_cycles:
                state["error"] = AssertionError(
                    f"timed out after {run.total_cycles} cycles: {len(run.in_cycles)} of "
                    f"{len(inputs)} inputs taken, {state['lasts']} of {messages} messages ended")
                return
            ctx.set(o.ready, not (stall and rng_sink.random() < stall))
            await ctx.tick()
        if state["error"] is not None:
            return
        if state["lasts"] > messages:
            state["error"] = AssertionError(
                f"{state['lasts']} outputs carry `last`, {messages} expected")
        elif len(run.in_cycles) != len(inputs):
            state["error"] = AssertionError(
                f"only {len(run.in_cycles)} of {len(inputs)} inputs were taken")

    sim.add_process(monitor)
    sim.add_testbench(source, background=True)
    for testbench in extra:
        sim.add_testbench(testbench, background=True)
    sim.add_testbench(sink)
    if vcd is None:
        sim.run()
    else:
        vcd.parent.mkdir(parents=True, exist_ok=True)
        with sim.write_vcd(str(vcd), str(vcd.with_suffix(".gtkw")),
                           traces=[i.valid, i.ready, i.payload, o.valid, o.ready, o.payload]):
            sim.run()
    if state["error"] is not None:
        raise state["error"]
    return run


def _last(item):
    if isinstance(item, dict):
        return item.get("last", 0)
    return getattr(item, "last", 0)


def run_stream(dut, inputs, *, gap=0.0, stall=0.0, seed=0, idle=8, max_cycles=None,
               in_port="i", out_port="o", extra=(), name=None, vcd=False):
    """Drive ``dut``'s input stream with ``inputs`` and collect its output stream.

    ``inputs`` are payloads for the input port (dicts such as ``{"data": 0x41, "last": 1}``).
    The run ends ``idle`` cycles after as many outputs with ``last`` came out as inputs with
    ``last`` went in (outputs in those idle cycles are caught too). ``gap`` is the probability
    that the source waits a cycle before an item, ``stall`` the probability that the sink is not
    ready in a cycle; both are seeded by ``seed``. ``extra`` are more testbenches to run
    alongside (e.g. one that pulses reset).

    Raises :class:`StreamRuleError` if the output breaks the stream rules, :class:`AssertionError`
    on a time-out; any exception is re-raised after the case was simulated again with a
    waveform dump, whose path is added to the message. ``vcd=True`` always dumps one.
    """
    inputs = list(inputs)
    if max_cycles is None:
        slow = 1 + 8 * max(gap, stall) / max(1e-9, 1 - max(gap, stall))
        max_cycles = int(64 + 8 * len(inputs) * slow)
    i, o = getattr(dut, in_port), getattr(dut, out_port)
    case = _case_name(name or f"{type(dut).__name__}-seed{seed}")
    kwargs = dict(i=i, o=o, gap=gap, stall=stall, seed=seed, idle=idle,
                  max_cycles=max_cycles, extra=extra)
    if vcd:
        return _simulate(dut, inputs, vcd=failure_dir() / f"{case}.vcd", **kwargs)
    try:
        return _simulate(dut, inputs, vcd=None, **kwargs)
    except Exception as error:
        path = failure_dir() / f"{case}.vcd"
        path.unlink(missing_ok=True)
        try:
            _simulate(dut, inputs, vcd=path, **kwargs)
        except Exception:
            pass
        if path.exists():
            _annotate(error, path)
        raise


def run_full_rate(dut, inputs, *, idle, name):
    """Offer the payloads ``inputs`` back to back to ``dut`` (streams ``i`` and ``o``), from
    the first cycle ``i.ready`` is high, with the sink always ready, until ``idle`` cycles
    after the last was taken. Returns a :class:`StreamRun` (``ready_low``: cycles in which an
    input was offered and refused). Lighter than :func:`run_stream`: no gaps, stalls or rule
    monitor, and no wait for a ``last`` per message. ``name`` names the waveform of a failure
    (:func:`run_simulation`)."""
    inputs = list(inputs)
    run = StreamRun()
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        ctx.set(dut.o.ready, 1)
        cycle = 0
        while not ctx.get(dut.i.ready):
            await ctx.tick()
            cycle += 1
            assert cycle < 16, "i.ready stays low"
        index, quiet = 0, 0
        while index < len(inputs) or quiet < idle:
            assert cycle < 4 * len(inputs) + 100, f"only {index} of {len(inputs)} inputs taken"
            if index < len(inputs):
                ctx.set(dut.i.valid, 1)
                ctx.set(dut.i.payload, inputs[index])
            else:
                ctx.set(dut.i.valid, 0)
                quiet += 1
            _, _, ready, valid, payload = await ctx.tick().sample(
                dut.i.ready, dut.o.valid, dut.o.payload)
            if index < len(inputs):
                if ready:
                    run.in_cycles.append(cycle)
                    index += 1
                else:
                    run.ready_low += 1
            if valid:
                run.out_cycles.append(cycle)
                run.outputs.append(payload)
            cycle += 1
        run.total_cycles = cycle

    sim.add_testbench(testbench)
    run_simulation(sim, name, traces=[dut.i.valid, dut.i.ready, dut.i.payload,
                                      dut.o.valid, dut.o.ready, dut.o.payload])
    return run
