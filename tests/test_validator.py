# amaranth: UnusedElaboratable=no
"""The validator: one verdict per message, checked against CPython and the reference model."""

import json
import random

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.sim import Simulator

from utf8_gateware.hdl.chunked_sum import LevelSum, SplitSum
from utf8_gateware.hdl import synth
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.pipeline import Pipeline
from utf8_gateware.hdl.validator import Utf8Validator
from utf8_gateware.sim import reference
from utf8_gateware.sim.testbench import run_simulation, run_stream

import corpora
from test_decoder_family import second_lut_levels
from test_decoder_lanes import ALPHABET, beats, run_with_reset


def verdict(message):
    """``(valid, offset, error, errors)``: CPython for validity and the offset, the reference
    model for the kinds and the count of maximal subparts."""
    try:
        message.decode("utf-8")
        offset, valid = 0, 1
    except UnicodeDecodeError as error:
        offset, valid = error.start, 0
    kinds = [d.error for d in reference.decode(message, "replace") if d.error != ErrorKind.NONE]
    return (valid, offset, kinds[0] if kinds else ErrorKind.NONE, len(kinds))


def check(lanes, messages, *, rng=None, name, inputs=None, dut=None, **kwargs):
    inputs = beats(messages, lanes, rng) if inputs is None else inputs
    dut = Utf8Validator(lanes=lanes) if dut is None else dut
    run = run_stream(dut, inputs, name=name, **kwargs)
    got = [(p.valid, p.offset, ErrorKind(p.error), p.errors) for p in run.outputs]
    assert got == [verdict(m) for m in messages]
    return run


def test_parameters():
    assert Utf8Validator(lanes=8).lanes == 8
    with pytest.raises(ValueError, match=r"^lanes must be one of 1, 2, 4, 8, 16, not 3$"):
        Utf8Validator(lanes=3)
    with pytest.raises(ValueError, match=r"^counter_width must be 8 to 64, not 4$"):
        Utf8Validator(counter_width=4)
    with pytest.raises(TypeError, match=r"^counter_width must be an integer, not '32'$"):
        Utf8Validator(counter_width="32")
    # One lane: the sums' read-out takes 2, 3, 4 steps for 8..17, 18..57, 58..64 bits.
    assert [Utf8Validator(counter_width=w).LATENCY for w in (8, 17, 18, 32, 57, 58, 64)] == \
        [13, 13, 14, 14, 14, 15, 15]
    assert Utf8Validator(lanes=4, counter_width=8).LATENCY == \
        Utf8Validator(lanes=4, counter_width=64).LATENCY == 16
    # N lanes: A, B1, B2, C, V1, V1b, V2, the tree, P1..P3, M, the read-out and the verdict slot.
    assert [Utf8Validator(lanes=n).LATENCY for n in (2, 4, 8, 16)] == [15, 16, 17, 18]


@pytest.mark.parametrize("lanes", [1, 2, 4, 8, 16])
def test_random_messages(lanes):
    # Mostly well-formed text with an error here and there (so that the first error's offset
    # varies), and messages of the grammar's bytes; partial beats under backpressure.
    rng = random.Random(lanes)
    text = "aé€😀ÿ\u0800\U00010000".encode()
    messages = []
    for n in range(40):
        if n % 2:
            message = bytes(rng.choice(ALPHABET) for _ in range(rng.randint(1, 4 * lanes)))
        else:
            message = bytearray(rng.choice(text) for _ in range(rng.randint(1, 6 * lanes)))
            message = bytes(message)
        messages.append(message)
    check(lanes, messages, rng=rng, stall=0.3, gap=0.2, seed=lanes, name=f"validator{lanes}")


@pytest.mark.parametrize("lanes", [1, 4])
def test_corpora(lanes):
    corpora.require()
    messages = [case.data for case in corpora.decode_cases() if case.data]
    check(lanes, messages, rng=random.Random(2), name=f"validator{lanes}-corpora")


def test_saturation():
    # 8-bit counters: 300 errors saturate at 255, and so does an offset past 255.
    messages = [b"\xff" * 300, b"a" * 300 + b"\xff"]
    inputs = [{"data": b, "last": int(n == len(m) - 1)} for m in messages
              for n, b in enumerate(m)]
    run = run_stream(Utf8Validator(counter_width=8), inputs, name="validator-saturation")
    got = [(p.valid, p.offset, ErrorKind(p.error), p.errors) for p in run.outputs]
    assert got == [(0, 0, ErrorKind.INVALID_BYTE, 255), (0, 255, ErrorKind.INVALID_BYTE, 1)]


@pytest.mark.parametrize("lanes", [1, 4])
def test_chunked_sums(lanes):
    # 12-bit sums in chunks of 8 bits: carries cross a chunk boundary (offsets and counts past
    # 255) while a message runs and in its last beat, and both sums saturate at 4095.
    messages = [b"\xff" * 300, b"a" * 254 + b"\xe0\x80", b"\xc3\xa9" * 200 + b"\xed\xa0",
                b"a" * 4100 + b"\xff", b"\x80" * 4100, b"\xf0\x90\x80" * 90, b"ok"]
    inputs = beats(messages, lanes, random.Random(3))
    dut = Utf8Validator(lanes=lanes, counter_width=12)
    run = run_stream(dut, inputs, name=f"validator{lanes}-chunked", stall=0.2, seed=lanes)
    got = [(p.valid, p.offset, ErrorKind(p.error), p.errors) for p in run.outputs]
    assert got == [(valid, min(offset, 4095), error, min(errors, 4095))
                   for valid, offset, error, errors in map(verdict, messages)]
    assert got[3][1] == got[4][3] == 4095


@pytest.mark.parametrize("width", [20, 32, 64])
def test_held_high_parts(width):
    # One lane, from 32 bits (two levels; three at 64; 20 bits as before, read out): the sums' high
    # parts hold the verdict's high bits until it has left, then restart. Long messages (carries
    # into the high parts, in the last step too) between short ones and back to back, at a sink that
    # refuses often: a short message's verdict must not show the high bits of the long one before
    # it, nor a long one's those of an older one.
    rng = random.Random(width)
    long = [b"a" * 300 + b"\xff", b"\xff" * 400, b"\x80" * 129, b"a" * 127 + b"\xc3",
            "é".encode() * 100 + b"\xe0\x80" * 70, b"a" * 1100, b"\xf0\x90\x80" * 60,
            b"\xff" * 700]
    messages = []
    for message in long:
        messages += [message] + [bytes(rng.choice(ALPHABET) for _ in range(rng.randint(1, 6)))
                                 for _ in range(rng.randint(0, 3))]
    messages += [long[1], long[0], b"\xff", long[4], long[2]]
    # Sums that end at the low part's wrap (the last carry into the high part in the read).
    edge = 1 << 3 + 2 * LevelSum.levels_for(width)
    messages += [m for d in range(-2, 3) for m in (b"a" * (edge + d) + b"\xff", b"\xff" *
                                                    (edge + d), b"\x80" * (edge + d) + b"ok")]
    for stall in (0.0, 0.6):
        check(1, messages, rng=random.Random(width), dut=Utf8Validator(counter_width=width),
              stall=stall, seed=width, name=f"validator-held{width}")


@pytest.mark.parametrize("lanes", [1, 4, 16])
def test_one_beat_messages_under_backpressure(lanes):
    # One-beat messages back to back (verdicts in consecutive steps: the later one goes to the
    # output's small place while the sink refuses the earlier), some after longer ones (a big
    # verdict behind a small one), at a sink that refuses half the time.
    rng = random.Random(lanes + 7)
    messages = [bytes(rng.choice(ALPHABET) for _ in range(rng.randint(1, lanes)))
                for _ in range(60)]
    messages[20:20] = [b"abc\xff" * 40, b"\x80", "é€".encode() * 9, b"\xe2\x82"]
    check(lanes, messages, rng=rng, stall=0.5, seed=lanes, name=f"validator{lanes}-one-beat")


@pytest.mark.slow
def test_one_lane_cells_and_levels(tmp_path):
    # Every register of the one-lane validator is one LUT of flip-flops, no LUT drives a clock
    # enable or a synchronous reset, and its output has two places (a big one and a small one
    # for a one-beat message's verdict) instead of a slot and a skid register: 456 LCs with them;
    # the big one without the sums' high bits (the high parts hold them): 416 LCs with them.
    report = synth.synth_target("validator", build_dir=tmp_path)
    with open(report["files"]["netlist"]) as file:
        assert second_lut_levels(json.load(file), resets=True) == []
    assert report["core_lc"] <= 390


@pytest.mark.parametrize("lanes", [2, 4, 8])
def test_histories_from_four_lanes_are_masked(lanes):
    # From 4 lanes on (validator_lanes.ONE_HOT_LANES), lane 0's histories OR registers masked
    # with a registered flag of the beat's latest lane (`a{k}_latest` from the input's count):
    # six inputs at 4 lanes, where the tree of multiplexers on the lanes' `nv` flags reads nine
    # (105.8 to 107.3 MHz median of seeds 1-3 on the UP5K, 795 to 838 LCs). 2 lanes keep the
    # multiplexer.
    text = rtlil.convert(Utf8Validator(lanes=lanes))
    assert (" \\a0_latest\n" in text) == (lanes >= 4)


def test_throughput():
    # Full beats at full rate: one beat every cycle.
    message = "héllo wörld €😀 ".encode() * 16
    run = check(4, [message], name="validator-throughput")
    first = run.in_cycles[0]
    assert run.in_cycles == list(range(first, first + len(run.in_cycles)))


@pytest.mark.parametrize("lanes", [1, 2, 4, 8, 16])
def test_latency_and_rate(lanes):
    # One-byte-beat messages back to back (the densest verdict stream): one beat taken every
    # cycle, and each verdict exactly LATENCY cycles after its message's last beat.
    rng = random.Random(lanes)
    messages = [bytes(rng.choice(ALPHABET) for _ in range(rng.randint(1, 2 * lanes)))
                for _ in range(30)]
    dut = Utf8Validator(lanes=lanes)
    inputs = beats(messages, lanes, rng)
    run = check(lanes, messages, inputs=inputs, dut=dut, name=f"validator{lanes}-latency")
    first = run.in_cycles[0]
    assert run.in_cycles == list(range(first, first + len(run.in_cycles)))
    ends = [cycle for cycle, beat in zip(run.in_cycles, inputs) if beat["last"]]
    assert [out - end for out, end in zip(run.out_cycles, ends)] == [dut.LATENCY] * len(ends)


@pytest.mark.parametrize("lanes", [1, 2, 4, 8])
def test_reset_mid_message(lanes):
    # A reset in the middle of a message that already has an error (its sums and first error
    # half counted, a prefix pending, a verdict pending at the stalled sink): the next message's
    # verdict is as if nothing came before.
    rng = random.Random(lanes)
    pending = [b"ok\xff", b"a\xe2\x82\xac\x80xyz\xf0\x9f"]
    before = beats(pending, lanes, rng)
    before[-1] = dict(before[-1], last=0)      # the second message never ends
    fresh = b"\xbf\xe2\x82\xacz\xc3"
    dut = Utf8Validator(lanes=lanes)
    outputs = run_with_reset(dut, before, beats([fresh], lanes, rng))
    got = [(p.valid, p.offset, ErrorKind(p.error), p.errors) for p in outputs]
    assert got == [verdict(fresh)]


@pytest.mark.parametrize("lanes", [1, 2])
def test_reset_with_verdicts_in_flight(lanes):
    # A reset while verdicts of one-beat messages fill the pipeline (every stage, the sums'
    # read-out included, holds the end of a message): none of them comes out after the reset,
    # and the next message's verdict is as if nothing came before. (With one lane the read-out
    # stages are data registers: the flush must last until they have drained.)
    rng = random.Random(lanes)
    before = beats([bytes([rng.choice(ALPHABET)]) for _ in range(40)], lanes, rng)
    fresh = b"\xc0\xafz\xe2\x82"
    dut = Utf8Validator(lanes=lanes)
    outputs = run_with_reset(dut, before, beats([fresh], lanes, rng))
    got = [(p.valid, p.offset, ErrorKind(p.error), p.errors) for p in outputs]
    assert got == [verdict(fresh)]


class _Advancing:
    """What the sums need of a Pipeline, for one that advances every cycle."""
    def __init__(self, m):
        self.m = m
        self.flush = [Const(0)] * 8      # (never flushing)

    clear_in_data = False
    load_cleared = Pipeline.load_cleared      # (the same method: a reset under the enable)

    def enable(self, width=1):
        return 1

    def data(self, name, value, shape=1):
        reg = Signal(shape, name=name)
        self.m.d.sync += reg.eq(value)
        return reg

    control = data

    def control_copies(self, name, value, copies):
        return [self.data(f"{name}{k}", value) for k in range(copies)]


def run_sum(total, messages, most, name):
    """Feed ``messages`` (lists of increments) to the sum ``total`` back to back, advancing
    every cycle, and check each message's sum where it is read: ``read_stages`` steps after the
    step after its last."""
    m = Module()
    inc, ends, fresh = Signal(range(most + 1)), Signal(), Signal()
    m.d.sync += fresh.eq(ends)
    value, over = total.build(_Advancing(m), inc, ends, fresh)
    shown = Signal(total.width)
    m.d.comb += shown.eq(Mux(over, -1, value))
    steps = [(step, n == len(message) - 1) for message in messages
             for n, step in enumerate(message)]
    ends_at = [n for n, (_, last) in enumerate(steps) if last]
    expected = [min(sum(message), (1 << total.width) - 1) for message in messages]
    got = []

    async def bench(ctx):
        for n in range(len(steps) + total.read_stages + 2):
            step, last = steps[n] if n < len(steps) else (0, False)
            ctx.set(inc, step)
            ctx.set(ends, last)
            await ctx.tick()
            # After this tick the registers hold the sum up to step n; that of a message whose
            # last step is e is read while they hold step e + read_stages.
            if n - total.read_stages in ends_at:
                got.append(ctx.get(shown))

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    run_simulation(sim, name)
    assert got == expected


@pytest.mark.parametrize("kind", ["split", "level"])
def test_sums(kind):
    # Messages of the largest increment (the low part wraps as often as it can, so the flags
    # must settle in between), of zeros (carries left pending), long ones that saturate (the
    # 1-lane validator's tests saturate LevelSum), and one-step messages back to back (read
    # while the next ones run).
    rng = random.Random(5)
    most = 7 if kind == "split" else 3
    width = 12 if kind == "split" else 20      # (LevelSum: two levels)
    messages = [[most] * 700, [0, most, 0, 0, most], [1], [most], [2, 3], [0],
                [rng.choice([0, most, most, rng.randrange(most + 1)]) for _ in range(1500)],
                [rng.randrange(most + 1) for _ in range(300)], [most] * 300, [1, 1], [3, 3, 1, 1]]
    # Short messages end with every state of the low parts (carries pending at the end).
    messages += [[rng.randrange(most + 1) for _ in range(rng.randint(1, 60 * most))]
                 for _ in range(50)]
    if kind == "split":
        total = SplitSum("s", width, most)
        assert total.chunk == 6 and SplitSum.spacing(7, 6) == 9 and len(total.high.below) == 4
        with pytest.raises(ValueError, match=r"^s: a 5-bit low part wraps too often for a "
                                             r"12-bit sum of increments up to 7$"):
            SplitSum("s", 12, 7, chunk=5)
    else:
        total = LevelSum("s", width)
        assert total.levels == 2 and total.read_stages == 3 and LevelSum.levels_for(12) == 1
    if kind == "split":
        assert sum(messages[0]) > 1 << width and sum(messages[6]) > 1 << width
    run_sum(total, messages, most, f"{kind}-sum")
