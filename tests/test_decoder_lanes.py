# amaranth: UnusedElaboratable=no
"""The decoder with 1, 2, 4 and 8 lanes, checked against the reference model.

The contract (see :class:`Utf8Decoder`): read in lane order and then beat order, the valid output
lanes are exactly the one-lane decoder's outputs, with ``last`` on the beat that holds a
message's final output; any input beat may be partial (junk in the lanes past ``count``); nothing
is lost, duplicated or reordered under any backpressure; one beat is taken every cycle while the
sink is ready; every output is valid within ``LATENCY`` cycles of the byte that determines it.

The cases are those of ``test_decoder.py`` (the one-lane tests), parametrised over the lane
count: ``lanes=1`` runs through the same helpers (one item a beat). Every run except the
exhaustive sweep goes through :func:`run_stream`, whose monitor checks the stream rules on the
output every cycle and dumps a waveform of a failing case.
"""

import multiprocessing
import random
import re
from types import SimpleNamespace
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import pytest
from amaranth.back import rtlil
from amaranth.hdl import ResetInserter, Signal
from amaranth.sim import Simulator

from utf8_gateware.hdl import decoder_lane
from utf8_gateware.hdl.decoder import LANES, Utf8Decoder
from utf8_gateware.hdl.error_kind import DECODE_ERRORS, ErrorKind
from utf8_gateware.sim import compiled, engines, reference
from utf8_gateware.sim.testbench import put_and_collect, run_simulation, run_stream, stream_put

import corpora
from test_decoder import (CUT_SEQUENCES, LATENCY_CASES, WORST_CASES, describe, expected,
                          random_messages)


#: The lane counts tested here (16 lanes: test_random_streams and test_corpora only).
LANE_COUNTS = (1, 2, 4, 8)
WIDE = [lanes for lanes in LANE_COUNTS if lanes > 1]

#: Bytes that reach every branch of the grammar: ASCII, each continuation range's edges, every
#: lead class (C0/C1, E0, ED, F0, F4, F5..FF).
ALPHABET = bytes([0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
                  0xE0, 0xE1, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFE, 0xFF])


# -------------------------------------------------------------------------------------------------
# Helpers (also used by test_validator.py)

def beats(messages, lanes, rng=None):
    """Input payloads carrying ``messages``: with one lane, one byte each; with N lanes full
    beats, or (with ``rng``) beats of random counts 1..N; lane 0 is the first byte; the lanes
    past ``count`` hold junk, which must be ignored."""
    out = []
    junk = rng or random.Random(0)
    for message in messages:
        position = 0
        while position < len(message):
            count = min(rng.randint(1, lanes) if rng else lanes, len(message) - position)
            chunk = message[position:position + count]
            position += count
            last = int(position == len(message))
            if lanes == 1:
                out.append({"data": chunk[0], "last": last})
                continue
            pad = bytes(junk.choice(ALPHABET) for _ in range(lanes - count))
            out.append({"data": int.from_bytes(chunk + pad, "little"), "count": count,
                        "last": last})
    return out


def flatten(outputs):
    """``(codepoint, ErrorKind, last)`` of each output (one lane) or valid output lane, in lane
    and beat order; ``last`` on the final valid lane of a beat with ``last``."""
    result = []
    for beat in outputs:
        if not hasattr(beat, "lanes"):
            result.append((int(beat.codepoint), ErrorKind(beat.error), int(beat.last)))
            continue
        valid = [lane for lane in beat.lanes if lane.valid]
        assert valid or not beat.last, "a beat with last has no valid lane"
        result += [(int(lane.codepoint), ErrorKind(lane.error), 0) for lane in valid]
        if beat.last:
            result[-1] = result[-1][:2] + (1,)
    return result


def first_difference(got, want):
    at = next(n for n, (g, w) in enumerate(zip(got + [None], want + [None])) if g != w)
    return (f"first difference at output {at}: got {describe(got[at:at + 4])}, want "
            f"{describe(want[at:at + 4])}")


def check(errors, lanes, messages, *, rng=None, name, **kwargs):
    """:func:`run_stream` of ``messages`` into a fresh decoder; its outputs must be the reference
    model's."""
    run = run_stream(Utf8Decoder(errors, lanes=lanes), beats(messages, lanes, rng),
                     name=name, **kwargs)
    got, want = flatten(run.outputs), expected(messages, errors)
    assert got == want, f"{name}: {first_difference(got, want)}"
    return run


def decode_full_rate(errors, lanes, messages):
    """``messages`` in full beats at full rate into a decoder whose sink is always ready (no
    rule monitor: lighter than :func:`run_stream`, for the long sweep); the outputs flattened."""
    dut = Utf8Decoder(errors, lanes=lanes)
    inputs = beats(messages, lanes)
    outputs = []
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        ctx.set(dut.o.ready, 1)
        index, quiet = 0, 0
        while index < len(inputs) or quiet < 2 * dut.LATENCY:
            if index < len(inputs):
                ctx.set(dut.i.valid, 1)
                ctx.set(dut.i.payload, inputs[index])
            else:
                ctx.set(dut.i.valid, 0)
                quiet += 1
            _, _, ready, valid, payload = await ctx.tick().sample(
                dut.i.ready, dut.o.valid, dut.o.payload)
            index += index < len(inputs) and ready
            if valid:
                outputs.append(payload)

    sim.add_testbench(testbench)
    run_simulation(sim, f"decoder{lanes}-{errors}-sweep")
    return flatten(outputs)


def decode_compiled(errors, lanes, messages):
    """:func:`decode_full_rate` of ``messages`` (``lanes`` > 1) through the compiled model of the
    same decoder (:func:`engines.compiled_model`, shared with ``test_exhaustive`` and the
    engines): the same input payloads (junk lanes included) go in whole, the output payloads
    come back whole, so :func:`flatten` sees every beat as the Amaranth simulation gives it (a
    stray output after the final ``last`` too: the driver runs on after it)."""
    dut = Utf8Decoder(errors, lanes=lanes)
    model = engines.compiled_model("decoder", errors, lanes)
    whole = compiled.StreamModel(model.executable, in_width=model.in_width,
                                 out_width=model.out_width, in_last_bit=model.in_last_bit,
                                 out_last_bit=model.out_last_bit)
    # (Bit arithmetic: views of lib.data constants would take a minute for 65,792 beats.)
    into = dut.i.payload.shape()
    in_bytes = -(-into.size // 8)
    items = b"".join((payload["data"] | payload["count"] << into["count"].offset |
                      payload["last"] << into["last"].offset).to_bytes(in_bytes, "little")
                     for payload in beats(messages, lanes))
    result = whole.run(items, in_bytes=in_bytes, auto_last=False, lanes=False)
    out = dut.o.payload.shape()
    lane = out["lanes"].shape.elem_shape
    fields = {name: (out["lanes"].offset + lane[name].offset, (1 << lane[name].width) - 1)
              for name in ("valid", "codepoint", "error")}

    def field(value, name, k):
        at, mask = fields[name]
        return value >> (at + k * lane.size) & mask

    size = whole.out_bytes
    payloads = [int.from_bytes(result.data[at:at + size], "little")
                for at in range(0, len(result.data), size)]
    return flatten(SimpleNamespace(
        last=value >> out["last"].offset & 1,
        lanes=[SimpleNamespace(**{name: field(value, name, k) for name in fields})
               for k in range(lanes)]) for value in payloads)


def decode_in_workers(errors, lanes, messages, workers=2):
    """:func:`decode_full_rate` of ``messages`` split into ``workers`` processes (each a fresh
    decoder); the outputs in the order of ``messages``."""
    chunks = [messages[len(messages) * k // workers:len(messages) * (k + 1) // workers]
              for k in range(workers)]
    try:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            results = list(pool.map(decode_full_rate, [errors] * workers, [lanes] * workers,
                                    chunks))
    except (OSError, ImportError, BrokenProcessPool):
        results = [decode_full_rate(errors, lanes, chunk) for chunk in chunks]
    return [output for result in results for output in result]


def run_with_reset(dut, before, after, *, stall=True):
    """Offer the payloads ``before`` (with the sink refusing every other cycle, so outputs are
    pending), stop the sink, pulse a reset (through :class:`ResetInserter`), then stream the
    payloads ``after`` into an always-ready sink. Returns the output payloads after the reset."""
    rst = Signal()
    top = ResetInserter(rst)(dut)
    outputs = []
    sim = Simulator(top)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        for n, payload in enumerate(before):
            ctx.set(dut.o.ready, stall and n % 2)
            await stream_put(ctx, dut.i, payload)
        ctx.set(dut.o.ready, 0)
        await ctx.tick()
        ctx.set(rst, 1)
        await ctx.tick()
        ctx.set(rst, 0)
        outputs.extend(await put_and_collect(ctx, dut, after, idle=3 * dut.LATENCY))

    sim.add_testbench(testbench)
    run_simulation(sim, f"{type(dut).__name__}-reset")
    return outputs


# -------------------------------------------------------------------------------------------------
# Parameters

def test_parameters():
    for lanes in LANES:
        assert Utf8Decoder(lanes=lanes).lanes == lanes
    with pytest.raises(ValueError, match=r"^lanes must be one of 1, 2, 4, 8, 16, not 3$"):
        Utf8Decoder(lanes=3)
    with pytest.raises(TypeError, match=r"^lanes must be an integer, not '4'$"):
        Utf8Decoder(lanes="4")
    # The one-lane decoder keeps its ports; a wide one has count and lanes.
    assert set(Utf8Decoder().i.payload.shape().members) == {"data", "last"}
    wide = Utf8Decoder(lanes=4)
    assert set(wide.i.payload.shape().members) == {"data", "count", "last"}
    assert len(wide.o.payload.lanes) == 4


def test_byte_rom_words():
    """The words of stage A's byte ROM (:data:`~utf8_gateware.hdl.decoder_lane.BYTE_ROM`) say
    what the nibble-predicate sets say of every byte (each set derived on its own from the
    grammar); and only the decoders of ``BYTE_ROM`` have the ROMs, one per lane."""
    tables = decoder_lane.UTF8_TABLES
    sets = decoder_lane._sets(tables.grammar)
    kinds = {name: kind for name, _, kind in decoder_lane._start_error_sets(tables.grammar)}
    for byte in range(256):
        word = decoder_lane.byte_facts(tables, byte)
        q = [int(byte in sets[f"q{bit}"]) for bit in range(2)]
        want = {"asc": int(byte in sets["ascii"]), "cont": int(any(q)),
                "lead2": int(byte in sets["lead2"]), "lead34": int(byte in sets["lead34"]),
                "startkind": next((kind for name, kind in kinds.items() if byte in sets[name]),
                                  ErrorKind.NONE),
                "q": q[0] | q[1] << 1}
        for length in (2, 3, 4):
            want[f"code{length}"] = sum(int(byte in sets[f"lead{length}_{bit}"]) << bit
                                        for bit in range(tables.code_width(length)))
        assert word == want, f"{byte:02x}"
    layout = decoder_lane.byte_facts_layout(tables)
    assert layout.size <= 16      # one 256 x 16 iCE40 block RAM
    for lanes in (1, 2, 4):
        for errors in DECODE_ERRORS:
            text = rtlil.convert(Utf8Decoder(errors, lanes=lanes), name="top")
            roms = re.findall(r"^\s*memory width 14 size 256 ", text, re.MULTILINE)
            assert len(roms) == (lanes if (lanes, errors) in decoder_lane.BYTE_ROM else 0)


# -------------------------------------------------------------------------------------------------
# Against the reference model

@pytest.mark.parametrize("errors", DECODE_ERRORS)
@pytest.mark.parametrize("lanes", [*LANE_COUNTS, 16])
def test_random_streams(errors, lanes):
    # Adversarial streams: random bytes of the grammar's edges and pieces of well- and
    # ill-formed sequences (test_decoder.random_messages), in random partial beats or full ones,
    # with gaps at the source and stalls at the sink.
    rng = random.Random(lanes * 7 + len(errors))
    for trial in range(4):
        messages = random_messages(rng, 6) + [
            bytes(rng.choice(ALPHABET) for _ in range(rng.randint(1, 3 * lanes)))
            for _ in range(6)]
        gap, stall = [(0, 0), (0.3, 0.5), (0.6, 0.2), (0.2, 0.7)][trial]
        check(errors, lanes, messages, rng=rng if trial else None, gap=gap, stall=stall,
              seed=trial, name=f"lanes{lanes}-{errors}-random{trial}")


@pytest.mark.parametrize("errors", DECODE_ERRORS)
@pytest.mark.parametrize("lanes", [*LANE_COUNTS, 16])
def test_corpora(errors, lanes):
    # Every corpus decoding case as one message, in partial beats under backpressure.
    corpora.require()
    messages = [case.data for case in corpora.decode_cases() if case.data]
    check(errors, lanes, messages, rng=random.Random(lanes), stall=0.2, seed=lanes,
          name=f"lanes{lanes}-{errors}-corpora")


@pytest.mark.parametrize("errors", DECODE_ERRORS)
@pytest.mark.parametrize("lanes", WIDE)
def test_every_short_message(errors, lanes):
    # Every 1-byte and 2-byte message (a beat each), in one run through the compiled model
    # (without a C++ compiler, through Amaranth's simulator in two processes). (One lane:
    # test_decoder.test_every_short_sequence.)
    messages = [bytes([a]) for a in range(256)]
    messages += [bytes([a, b]) for a in range(256) for b in range(256)]
    decode = decode_compiled if compiled.have_compiler() else decode_in_workers
    got, want = decode(errors, lanes, messages), expected(messages, errors)
    assert got == want, first_difference(got, want)


@pytest.mark.parametrize("errors", DECODE_ERRORS)
@pytest.mark.parametrize("lanes", LANE_COUNTS)
def test_last_in_every_lane(errors, lanes):
    # Every prefix of every sequence of test_decoder.CUT_SEQUENCES ends a message, after 0..N-1
    # ASCII bytes (so `last` falls in every lane of a full beat), then in random partial beats;
    # the next message must start clean.
    messages = []
    for sequence in CUT_SEQUENCES:
        for cut in range(1, len(sequence) + 1):
            for pad in range(lanes):
                messages.append(b"A" * pad + sequence[:cut])
                messages.append(sequence[cut:] or b"Z")   # must not continue the cut prefix
    check(errors, lanes, messages, name=f"lanes{lanes}-{errors}-last")
    check(errors, lanes, messages, rng=random.Random(lanes), stall=0.3, seed=lanes,
          name=f"lanes{lanes}-{errors}-last-partial")


@pytest.mark.parametrize("errors", DECODE_ERRORS)
@pytest.mark.parametrize("lanes", WIDE)
def test_every_split_of_a_sequence(errors, lanes):
    # Each sequence split across a beat boundary at every position: the look-back across beats.
    rng = random.Random(lanes)
    seqs = [b"\xf0\x9f\x98\x80", b"\xf4\x8f\xbf\xbf", b"\xed\x9f\xbf", b"\xed\xa0\x80",
            b"\xe0\xa0\x80", b"\xe0\x9f\x80", b"\xf0\x8f\x80\x80", b"\xc2\x80", b"\xf0\x90\x80"]
    messages = [b"a" * pad + seq + b"z" for seq in seqs for pad in range(lanes)]
    check(errors, lanes, messages, rng=None, name=f"lanes{lanes}-{errors}-splits")
    check(errors, lanes, messages, rng=rng, stall=0.3, seed=1,
          name=f"lanes{lanes}-{errors}-splits-partial")


@pytest.mark.parametrize("errors", DECODE_ERRORS)
@pytest.mark.parametrize("lanes", LANE_COUNTS)
def test_reset_mid_message(errors, lanes):
    # A reset in the middle of a message (a prefix pending, outputs pending in the core, the
    # sink stalled); a fresh message then decodes as if nothing came before.
    before = b"abc\xf0\x9f\x98\x80\xe2\x82\xac\xf0\x90\x80"    # ends with a pending prefix
    fresh = b"\x80\xbfz\xe2\x82\xac\xc3"
    rng = random.Random(lanes)
    before_beats = [dict(beat, last=0) for beat in beats([before], lanes, rng)]
    outputs = run_with_reset(Utf8Decoder(errors, lanes=lanes), before_beats,
                             beats([fresh], lanes, rng))
    got = flatten(outputs)
    assert got == expected([fresh], errors), describe(got)


# -------------------------------------------------------------------------------------------------
# Throughput and latency

def _throughput_messages(lanes, rng):
    """The one-lane worst cases (test_decoder.WORST_CASES: every byte ends a subpart, four
    outputs due at one byte with surrogateescape, an error at every byte, ...), all-ASCII and
    all 4-byte, each a message of 24 full beats; then random bytes in random partial beats."""
    length = 24 * lanes
    full = [(data * length)[:length] for data in WORST_CASES.values()]
    full += [bytes(rng.randrange(0x80) for _ in range(length)),
             ("😀\U0010FFFF\U00010000".encode() * length)[:length]]
    partial = [bytes(rng.choice(ALPHABET) for _ in range(length))]
    return full + partial, beats(full, lanes) + beats(partial, lanes, rng)


@pytest.mark.parametrize("errors", DECODE_ERRORS)
@pytest.mark.parametrize("lanes", LANE_COUNTS)
def test_throughput(errors, lanes):
    # The streams of _throughput_messages back to back at full rate into an always-ready sink:
    # once the core takes the first beat it takes one every cycle, and the last output is out
    # within LATENCY cycles of the last beat (cycles from the first input transfer to the last
    # output transfer <= beats + LATENCY).
    messages, inputs = _throughput_messages(lanes, random.Random(lanes))
    run = run_stream(Utf8Decoder(errors, lanes=lanes), inputs,
                     name=f"lanes{lanes}-{errors}-throughput")
    got, want = flatten(run.outputs), expected(messages, errors)
    assert got == want, first_difference(got, want)
    first = run.in_cycles[0]
    assert run.in_cycles == list(range(first, first + len(inputs)))
    assert run.cycles <= len(inputs) + Utf8Decoder.latency(errors, lanes=lanes)


def timed_cases(errors, lanes, cases):
    """Each of ``cases`` (``(payloads, end)``) in turn into one decoder with an always-ready
    sink: its beats at full rate, then no input for LATENCY + 2 cycles (the outputs of that
    window are the case's), then ``end`` (payloads that close the message; their outputs are
    dropped) and another quiet window. Returns per case ``(outputs, in_cycles, out_cycles)``."""
    dut = Utf8Decoder(errors, lanes=lanes)
    results = []
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        ctx.set(dut.o.ready, 1)
        cycle = 0
        for payloads, end in cases:
            for part in (payloads, end):
                outputs, in_cycles, out_cycles = [], [], []
                index, quiet = 0, 0
                while index < len(part) or quiet < dut.LATENCY + 2:
                    ctx.set(dut.i.valid, index < len(part))
                    if index < len(part):
                        ctx.set(dut.i.payload, part[index])
                    else:
                        quiet += 1
                    _, _, ready, valid, payload = await ctx.tick().sample(
                        dut.i.ready, dut.o.valid, dut.o.payload)
                    if index < len(part) and ready:
                        in_cycles.append(cycle)
                        index += 1
                    if valid:
                        outputs.append(payload)
                        out_cycles.append(cycle)
                    cycle += 1
                if part is payloads:
                    results.append((flatten(outputs), in_cycles, out_cycles))

    sim.add_testbench(testbench)
    run_simulation(sim, f"decoder{lanes}-{errors}-latency")
    return results


@pytest.mark.parametrize("errors", DECODE_ERRORS)
@pytest.mark.parametrize("lanes", LANE_COUNTS)
def test_latency(errors, lanes):
    # Each case of test_decoder.LATENCY_CASES after 0..N-1 ASCII bytes (its determining byte in
    # every lane): the source stops after it, and every output is out within LATENCY cycles of
    # the transfer of the beat holding the determining byte. Without `last`, a pending prefix
    # stays pending (no output for it; a beat with "\n" and `last` then ends the message).
    latency = Utf8Decoder.latency(errors, lanes=lanes)
    cases, wants, beat_of = [], [], []
    for data, determining, last in LATENCY_CASES:
        for pad in range(lanes):
            message = b"a" * pad + data
            payloads = beats([message], lanes)
            payloads[-1]["last"] = int(last)
            cases.append((payloads, [] if last else beats([b"\n"], lanes)))
            if last:
                wants.append(expected([message], errors))
            else:
                wants.append([(d.codepoint, d.error, 0)
                              for d in reference.Decoder(errors).feed(message)])
            beat_of.append((pad + determining) // lanes)
    for (got, in_cycles, out_cycles), want, beat, (payloads, _) in zip(
            timed_cases(errors, lanes, cases), wants, beat_of, cases):
        assert got == want, f"{payloads}: {describe(got)}"
        assert out_cycles[-1] - in_cycles[beat] <= latency, payloads


@pytest.mark.parametrize("errors", DECODE_ERRORS)
@pytest.mark.parametrize("lanes", [lanes for lanes in LANES if lanes > 1])
def test_latency_is_exact(errors, lanes):
    # LATENCY is the exact delay, not a bound: the final output of a message whose last byte
    # completes everything appears LATENCY cycles after that byte's transfer.
    run = check(errors, lanes, [b"a" * (2 * lanes) + b"\xe2\x82\xac"],
                name=f"lanes{lanes}-{errors}-latency")
    assert run.out_cycles[-1] - run.in_cycles[-1] == Utf8Decoder(errors, lanes=lanes).LATENCY
