# amaranth: UnusedElaboratable=no
"""The validator: one verdict per message, checked against CPython and the reference model."""

import random

import pytest
from amaranth.hdl import Module, Mux, Signal
from amaranth.sim import Simulator

from utf8_gateware.hdl.chunked_sum import SplitSum
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.validator import Utf8Validator
from utf8_gateware.sim import reference
from utf8_gateware.sim.testbench import run_simulation, run_stream

import corpora
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
    assert Utf8Validator(counter_width=32).LATENCY == Utf8Validator(counter_width=8).LATENCY == 10


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


class _Advancing:
    """What SplitSum needs of a Pipeline, for one that advances every cycle."""
    def __init__(self, m):
        self.m = m

    def enable(self, width=1):
        return 1


def test_split_sum():
    # A 12-bit sum of increments up to 7 (a 6-bit low part, three pairs of high bits), read
    # after every step and checked against the true sum: runs of the largest increment wrap the
    # low part as often as it can (the flags must settle in between), zeros leave a carry
    # pending, the sum saturates at 2**12 - 1; then a message ends and the next one starts from
    # zero in the same step in which the first one's sum is read.
    m = Module()
    inc, ends, fresh = Signal(3), Signal(), Signal()
    m.d.sync += fresh.eq(ends)
    total = SplitSum("s", 12, 7)
    assert total.chunk == 6 and SplitSum.spacing(7, 6) == 9 and len(total.below) == 4
    with pytest.raises(ValueError, match=r"^s: a 5-bit low part wraps too often for a 12-bit "
                                         r"sum of increments up to 7$"):
        SplitSum("s", 12, 7, chunk=5)
    total.accumulate(_Advancing(m), inc, ends, fresh)
    value = Signal(12)
    resolved, over = total.resolved()
    m.d.comb += value.eq(Mux(over, -1, resolved))
    seen = {"pending": 0, "carried": 0}

    async def bench(ctx):
        rng = random.Random(5)
        for limit in (1 << 12 | 1 << 8, 3000):
            expected = 0
            while expected < limit:
                step = rng.choice([0, 7, 7, 7, rng.randrange(8)])
                expected += step
                ctx.set(inc, step)
                ctx.set(ends, expected >= limit)
                await ctx.tick()
                assert ctx.get(value) == min(expected, (1 << 12) - 1), expected
                seen["pending"] += ctx.get(total.pending)
                seen["carried"] += ctx.get(total.pending) and ctx.get(total.high[0]) and \
                    ctx.get(total.high[1])
        assert seen["pending"] > 100 and seen["carried"] > 20

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    run_simulation(sim, "split-sum")
