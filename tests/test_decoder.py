# amaranth: UnusedElaboratable=no
"""The streaming UTF-8 decoder core (:mod:`utf8_gateware.hdl.decoder`) in Amaranth's simulator,
against the reference model, CPython's codec and the external corpora."""

import multiprocessing
import random
import re
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import pytest
from amaranth.back import rtlil
from amaranth.hdl import ResetInserter, Signal
from amaranth.sim import Simulator

import corpora
from utf8_gateware.hdl.decoder import DECODE_ERRORS, Utf8Decoder
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim import reference
from utf8_gateware.sim.testbench import (put_and_collect, run_full_rate, run_simulation,
                                         run_stream)


MODES = DECODE_ERRORS

# Bytes on every boundary of Table 3-7, plus ASCII and the invalid bytes.
EDGE_BYTES = bytes([0x00, 0x0A, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1,
                    0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4,
                    0xF5, 0xF7, 0xF8, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF])

# Streams that need the most of the core at one byte per cycle: every byte ends a subpart and
# starts one; four outputs due at one byte (surrogateescape); an error at every byte; and a
# lead whose range error ends it, followed by three uncovered continuations.
WORST_CASES = {
    "E1A020": bytes.fromhex("E1A020"),
    "F0908041": bytes.fromhex("F0908041"),
    "80": bytes.fromhex("80"),
    "F4908080": bytes.fromhex("F4908080"),
}


# Well-formed and ill-formed sequences that a message's `last` cuts at every position.
CUT_SEQUENCES = ["é".encode(), "€".encode(), "😀".encode(), "\U0010FFFF".encode(),
                 b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf",
                 b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80",
                 b"\xf0\x90\x80\x41", b"\xc0\xaf"]

# (data, index of the byte that determines the last output, whether data ends the message)
LATENCY_CASES = [
    (b"a", 0, False),                   # ASCII
    (b"\xc3\xa9", 1, False),            # the last byte of a well-formed sequence
    (b"\xf0\x9f\x98\x80", 3, False),
    (b"\xe2\x82a", 2, False),           # a byte that ends a bad prefix (and is itself output)
    (b"\xf0\x90\x80a", 3, False),       # ... of three bytes (four outputs with surrogateescape)
    (b"\xe0\x80", 1, False),            # a continuation byte out of the lead's range
    (b"\xff", 0, False),                # an invalid byte
    (b"\xf0\x90\x80", 2, True),         # `last` cuts a prefix
    (b"\xe2\x82\xf0", 2, True),         # `last` on a lead that ends a prefix
]


# -------------------------------------------------------------------------------------------------
# Helpers

def expected(messages, errors):
    """Reference outputs ``(codepoint, ErrorKind, last)`` of ``messages``, in order."""
    out = []
    for message in messages:
        decoded = reference.decode(message, errors)
        out += [(d.codepoint, d.error, int(k == len(decoded) - 1))
                for k, d in enumerate(decoded)]
    return out


def as_tuple(payload):
    return (int(payload.codepoint), ErrorKind(payload.error), int(payload.last))


def items_of(messages):
    """Input items (``(byte, last)``) for ``messages`` (each non-empty)."""
    items = []
    for message in messages:
        assert message, "a message has at least one byte"
        items += [(byte, int(k == len(message) - 1)) for k, byte in enumerate(message)]
    return items


def split_messages(outputs):
    """Group outputs by message (every message ends with exactly one `last` output)."""
    groups, current = [], []
    for output in outputs:
        current.append(output)
        if output[2]:
            groups.append(current)
            current = []
    assert not current, "outputs after the final `last`"
    return groups


def simulate(errors, items, *, idle=32):
    """Stream ``items`` at full rate into a fresh core, with the sink always ready; returns the
    outputs as tuples. Lighter than :func:`run_stream` (used for the long runs)."""
    dut = Utf8Decoder(errors)
    outputs = []
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        ctx.set(dut.o.ready, 1)
        index, quiet, cycles = 0, 0, 0
        while index < len(items) or quiet < idle:
            cycles += 1
            assert cycles < 2 * len(items) + 100, f"only {index} of {len(items)} bytes taken"
            if index < len(items):
                byte, last = items[index]
                ctx.set(dut.i.valid, 1)
                ctx.set(dut.i.payload.data, byte)
                ctx.set(dut.i.payload.last, last)
            else:
                ctx.set(dut.i.valid, 0)
                quiet += 1
            _, _, ready, valid, payload = await ctx.tick().sample(
                dut.i.ready, dut.o.valid, dut.o.payload)
            if index < len(items) and ready:
                index += 1
            if valid:
                outputs.append(as_tuple(payload))

    sim.add_testbench(testbench)
    run_simulation(sim, f"decoder-{errors}",
                   traces=[dut.i.valid, dut.i.ready, dut.i.payload,
                           dut.o.valid, dut.o.ready, dut.o.payload])
    return outputs


def simulate_messages(errors, messages, workers=2):
    """:func:`simulate` of ``messages``, split over ``workers`` processes; returns the outputs
    grouped by message."""
    chunks = [messages[k::workers] for k in range(workers)]
    try:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            results = list(pool.map(_simulate_chunk, [errors] * workers, chunks))
    except (OSError, ImportError, BrokenProcessPool):
        # No worker processes here (or this module cannot be imported by one): one process.
        results = [_simulate_chunk(errors, chunk) for chunk in chunks]
    grouped = [None] * len(messages)
    for k, groups in enumerate(results):
        assert len(groups) == len(chunks[k]), \
            f"{len(chunks[k])} messages in, {len(groups)} ended"
        grouped[k::workers] = groups
    return grouped


def _simulate_chunk(errors, messages):
    return split_messages(simulate(errors, items_of(messages)))


def check_messages(errors, messages, grouped):
    """Compare per-message outputs with the reference model and CPython."""
    for message, got in zip(messages, grouped):
        want = expected([message], errors)
        assert got == want, (f"{errors} {message.hex()}: got {describe(got)}, "
                             f"want {describe(want)}")
        text = message.decode("utf-8", errors)
        assert [c for c, _, _ in got] == [ord(ch) for ch in text], message.hex()


def describe(outputs):
    return " ".join(f"U+{c:04X}" + ("" if k is ErrorKind.NONE else f"!{k.label}") +
                    ("$" if last else "") for c, k, last in outputs)


def run_checked(errors, messages, **kwargs):
    """:func:`run_stream` (stream rules checked) of ``messages``; compare with the reference."""
    dut = Utf8Decoder(errors)
    inputs = [{"data": byte, "last": last} for byte, last in items_of(messages)]
    run = run_stream(dut, inputs, **kwargs)
    got = [as_tuple(payload) for payload in run.outputs]
    check_messages(errors, messages, split_messages(got))
    return run


# -------------------------------------------------------------------------------------------------
# Parameters

def test_parameters():
    assert Utf8Decoder().errors == "replace"
    assert Utf8Decoder("surrogateescape").errors == "surrogateescape"
    assert Utf8Decoder().LATENCY < Utf8Decoder("surrogateescape").LATENCY
    with pytest.raises(ValueError, match=r"errors must be one of 'replace', 'surrogateescape'"):
        Utf8Decoder("strict")
    with pytest.raises(ValueError):
        Utf8Decoder("ignore")
    with pytest.raises(TypeError, match=r"errors must be a string"):
        Utf8Decoder(None)
    with pytest.raises(TypeError):
        Utf8Decoder(errors=1)


@pytest.mark.parametrize("encoding, errors, controls", [
    ("utf-8", "replace", 0), ("utf-8", "surrogateescape", 10), ("cesu-8", "replace", 10)])
def test_adv_enables(encoding, errors, controls):
    # One-lane `utf-8` `replace`: `adv` (also the output's multiplexer select) is the clock
    # enable of the flush thermometer only; the control flip-flops (`nv`, `vl`) take copies of
    # it, as the data do (UP5K, seeds 1-3: 164.8 / 162.1 / 172.0 MHz against 162.1 / 163.4 /
    # 162.1). The others keep `adv` on their control flip-flops.
    decoder = Utf8Decoder(errors, encoding=encoding)
    text = rtlil.convert(decoder)
    flush = len(re.findall(r"connect \\Q \\fl\d+\n", text))
    assert flush >= 3
    assert text.count("switch \\adv [0]\n") == flush + controls


# -------------------------------------------------------------------------------------------------
# Exhaustive and corpus cases (full rate, sink always ready)

@pytest.mark.parametrize("errors", MODES)
def test_every_short_sequence(errors):
    # Every 1-byte and 2-byte message, each its own message, in one run per process.
    messages = [bytes([a]) for a in range(256)]
    messages += [bytes([a, b]) for a in range(256) for b in range(256)]
    check_messages(errors, messages, simulate_messages(errors, messages))


def corpus_messages():
    """Every decoding input of the corpora: ``(id, bytes, code points, valid, pending)``. The code
    points (with ``errors="replace"``) and the validity are None where the corpus states none.
    ``pending`` is None, or (for decoding stopped before the end) whether a prefix is left
    pending after the stated code points."""
    corpora.require()
    cases = []
    for case in corpora.decode_cases():
        if case.data:   # a message has at least one byte (nothing would carry its `last`)
            cases.append((case.id, case.data, case.expected, case.valid, None))
    for cid, data, want, pending in corpora.partial_cases():
        cases.append((cid, data, want, None, pending))
    for cid, steps in corpora.streaming_cases():
        data = b"".join(chunk for chunk, _, _ in steps if chunk)
        if data:
            want = tuple(c for _, _, points in steps for c in points)
            cases.append((cid, data, want, None, None))
    whole, replaced = corpora.flenniken_whole_file()
    cases.append(("flenniken/utf8tests.bin", whole, tuple(map(ord, replaced.decode())), None,
                  None))
    cases.append(("kuhn/UTF-8-test.txt", corpora.kuhn(), None, None, None))
    return cases


@pytest.mark.parametrize("errors", MODES)
def test_corpora(errors):
    cases = corpus_messages()
    messages = [data for _, data, _, _, _ in cases]
    grouped = simulate_messages(errors, messages)
    check_messages(errors, messages, grouped)   # reference model and CPython
    for (cid, data, want, valid, pending), got in zip(cases, grouped):
        if valid is not None:
            assert all(k is ErrorKind.NONE for _, k, _ in got) == valid, cid
        if errors != "replace" or want is None:
            continue
        points = [c for c, _, _ in got]
        if pending is None:
            assert points == list(want), f"{cid}: {describe(got)}"
        else:
            # Decoding stopped before the end: the stated outputs, then the pending prefix (if
            # the corpus says one is left) as one TRUNCATED error.
            assert points[:len(want)] == list(want), f"{cid}: {describe(got)}"
            tail = got[len(want):]
            assert len(tail) == int(pending), f"{cid}: {describe(got)}"
            assert all(k is ErrorKind.TRUNCATED for _, k, _ in tail), f"{cid}: {describe(got)}"


# -------------------------------------------------------------------------------------------------
# Streams with gaps and stalls (stream rules checked every cycle)

def random_messages(rng, count):
    pieces = [bytes([b]) for b in EDGE_BYTES] + [
        "é€😀".encode(), b"\xe2\x82", b"\xf0\x9f\x98", b"\xf4\x8f\xbf\xbf", b"\xed\x9f\xbf",
        b"\xee\x80\x80", b"\xf0\x90\x80\x80", b"\xe0\xa0\x80", b"\xc2\x80", b"\xdf\xbf"]
    messages = []
    for _ in range(count):
        if rng.random() < 0.2:
            message = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        else:
            message = b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 7)))
        messages.append(message)
    return messages


@pytest.mark.parametrize("errors", MODES)
@pytest.mark.parametrize("seed", range(4))
def test_random_streams(errors, seed):
    rng = random.Random(seed)
    gap, stall = [(0.0, 0.5), (0.5, 0.0), (0.3, 0.3), (0.7, 0.7)][seed]
    run_checked(errors, random_messages(rng, 60), gap=gap, stall=stall, seed=seed,
                name=f"decoder-{errors}-random{seed}")


@pytest.mark.parametrize("errors", MODES)
def test_last_at_every_position(errors):
    # Every prefix of every well-formed and ill-formed sequence ends a message, alone and
    # after other bytes; the next message must start clean.
    messages = []
    for sequence in CUT_SEQUENCES:
        for cut in range(1, len(sequence) + 1):
            for before in (b"", b"A", b"\xe2\x82", b"\xf0\x90\x80"):
                messages.append(before + sequence[:cut])
                messages.append(sequence[cut:] or b"Z")   # must not continue the cut prefix
    run_checked(errors, messages, stall=0.2, seed=1, name=f"decoder-{errors}-last")


@pytest.mark.parametrize("errors", MODES)
def test_reset_mid_stream(errors):
    # Reset (through ResetInserter) in the middle of a message, with outputs pending in the
    # core and the sink stalled; a fresh message then decodes as if nothing came before.
    rst = Signal()
    dut = Utf8Decoder(errors)
    top = ResetInserter(rst)(dut)
    before = b"abc\xf0\x9f\x98\x80\xe2\x82\xac\xf0\x90\x80"    # ends with a pending prefix
    fresh = b"\x80\xbfz\xe2\x82\xac\xc3"
    outputs = []

    sim = Simulator(top)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        for stall_after in range(len(before)):
            ctx.set(dut.o.ready, stall_after % 2)
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload.data, before[stall_after])
            ctx.set(dut.i.payload.last, 0)
            while True:
                _, _, ready = await ctx.tick().sample(dut.i.ready)
                if ready:
                    break
        ctx.set(dut.i.valid, 0)
        ctx.set(dut.o.ready, 0)
        await ctx.tick()
        ctx.set(rst, 1)
        await ctx.tick()
        ctx.set(rst, 0)
        outputs.extend(as_tuple(payload) for payload in await put_and_collect(
            ctx, dut, [{"data": byte, "last": int(k == len(fresh) - 1)}
                       for k, byte in enumerate(fresh)], idle=3 * dut.LATENCY))

    sim.add_testbench(testbench)
    run_simulation(sim, f"decoder-reset-{errors}")
    assert outputs == expected([fresh], errors), describe(outputs)


# -------------------------------------------------------------------------------------------------
# Throughput and latency

def timed_run(errors, data, *, last=True, idle=None):
    """Offer ``data`` (one message) at full rate to a fresh core whose sink is always ready,
    from the first cycle ``i.ready`` is high. Returns ``(in_cycles, out_cycles, outputs,
    ready_low)``: the cycles of the transfers, and how often ``i.ready`` was low while a byte
    was offered."""
    dut = Utf8Decoder(errors)
    inputs = [{"data": byte, "last": int(last and index == len(data) - 1)}
              for index, byte in enumerate(data)]
    run = run_full_rate(dut, inputs, idle=4 * dut.LATENCY if idle is None else idle,
                        name=f"decoder-timed-{errors}")
    return run.in_cycles, run.out_cycles, [as_tuple(p) for p in run.outputs], run.ready_low


@pytest.mark.parametrize("errors", MODES)
@pytest.mark.parametrize("case", WORST_CASES)
def test_throughput(errors, case):
    # One byte every cycle, i.ready never low, and nothing left waiting beyond the latency.
    data = WORST_CASES[case] * 24
    in_cycles, out_cycles, outputs, ready_low = timed_run(errors, data)
    assert outputs == expected([data], errors)
    assert ready_low == 0
    assert in_cycles == list(range(in_cycles[0], in_cycles[0] + len(data)))
    assert out_cycles[-1] - in_cycles[0] + 1 <= len(data) + Utf8Decoder(errors).LATENCY


@pytest.mark.parametrize("errors", MODES)
@pytest.mark.parametrize("data, determining, last", LATENCY_CASES)
def test_latency(errors, data, determining, last):
    # The source stops for ever after `data`: every output due by then appears within LATENCY
    # cycles of the transfer of the byte that determines it. Without `last`, a pending prefix
    # stays pending (no output for it).
    in_cycles, out_cycles, outputs, _ = timed_run(errors, data, last=last)
    if last:
        want = expected([data], errors)
    else:
        want = [(d.codepoint, d.error, 0) for d in reference.Decoder(errors).feed(data)]
    assert outputs == want, describe(outputs)
    assert out_cycles and out_cycles[-1] - in_cycles[determining] <= Utf8Decoder(errors).LATENCY
