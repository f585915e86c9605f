# amaranth: UnusedElaboratable=no
"""The formal proofs' specification models of the decoder (``formal/spec_decoder.py``) and the
validator (``formal/spec_validator.py``) against the reference model and CPython, in
simulation."""

import random

import pytest
from amaranth.sim import Simulator

from utf8_gateware.sim.testbench import run_simulation

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim import engines, reference
from utf8_gateware.formal.spec_decoder import SpecDecoder, MAX_OUTPUTS_PER_BYTE
from utf8_gateware.formal.spec_validator import SpecValidator

import corpora


ERRORS = ("replace", "surrogateescape")


def run_spec(errors, messages):
    """Feed ``messages`` (a list of ``bytes``, each ended by ``last``) to a :class:`SpecDecoder`
    one byte per cycle; returns, per message, the list of ``(codepoint, ErrorKind, last)`` and
    the most outputs any one byte produced."""
    dut = SpecDecoder(errors)
    i_bits, o_bits = dut.i.payload.as_value(), dut.o.as_value()
    assert (len(i_bits), len(o_bits)) == (9, 3 + 25 * MAX_OUTPUTS_PER_BYTE)
    results, widest = [], [0]

    async def testbench(ctx):
        for message in messages:
            outputs = []
            ctx.set(dut.i.valid, 1)
            for index, byte in enumerate(message):
                ctx.set(i_bits, byte | (index == len(message) - 1) << 8)
                # Raw bits (much faster than views): count, then 4 x (codepoint, error, last).
                o = ctx.get(o_bits)
                count = o & 7
                widest[0] = max(widest[0], count)
                for item in range(count):
                    bits = o >> (3 + 25 * item)
                    outputs.append((bits & 0x1FFFFF, ErrorKind((bits >> 21) & 7),
                                    bool(bits >> 24 & 1)))
                await ctx.tick()
            # Idle cycles change nothing.
            ctx.set(dut.i.valid, 0)
            assert ctx.get(dut.o.count) == 0
            assert ctx.get(dut.k) == 0, "a message left a pending prefix"
            results.append(outputs)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    run_simulation(sim, f"spec-decoder-{errors}")
    return results, widest[0]


def expected(message, errors):
    decoded = reference.decode(message, errors)
    return [(out.codepoint, out.error, index == len(decoded) - 1)
            for index, out in enumerate(decoded)]


def check(errors, messages):
    results, widest = run_spec(errors, messages)
    assert widest <= MAX_OUTPUTS_PER_BYTE
    for message, outputs in zip(messages, results):
        assert outputs == expected(message, errors), message.hex(" ")
        # The independent oracle: CPython's codec (code points only).
        assert "".join(chr(cp) for cp, _, _ in outputs) == message.decode("utf-8", errors), \
            message.hex(" ")
    return widest


@pytest.mark.parametrize("errors", ERRORS)
def test_parameters(errors):
    dut = SpecDecoder(errors)
    assert dut.errors == errors
    with pytest.raises(ValueError, match="errors must be"):
        SpecDecoder("strict")
    with pytest.raises(TypeError, match="errors must be a string"):
        SpecDecoder(None)


@pytest.mark.parametrize("errors", ERRORS)
def test_one_byte(errors):
    check(errors, [bytes([b]) for b in range(256)])


@pytest.mark.slow
@pytest.mark.parametrize("errors", ERRORS)
def test_two_bytes(errors):
    """Every 2-byte message (and so every byte after every 1-byte prefix, cut by ``last``)."""
    check(errors, [bytes([a, b]) for a in range(256) for b in range(256)])


@pytest.mark.parametrize("errors", ERRORS)
def test_two_bytes_interesting(errors):
    """Every byte after each lead and after a few other bytes (the fast subset of the above)."""
    firsts = [0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE,
              0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF7, 0xF8, 0xFD, 0xFE, 0xFF]
    check(errors, [bytes([a, b]) for a in firsts for b in range(256)])


@pytest.mark.parametrize("errors", ERRORS)
def test_three_and_four_bytes(errors):
    """Every continuation-ish third byte after every valid/invalid 2-byte prefix of each kind,
    plus 4-byte forms at the edges of each range."""
    seconds = {0xE0: (0x9F, 0xA0, 0xBF), 0xED: (0x80, 0x9F, 0xA0), 0xF0: (0x8F, 0x90, 0xBF),
               0xF4: (0x80, 0x8F, 0x90), 0xE1: (0x80, 0xBF), 0xF1: (0x80, 0xBF), 0xC2: (0x80,)}
    thirds = (0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC2, 0xE0, 0xF0, 0xF4, 0xF5, 0xFF)
    messages = []
    for lead, seconds_ in seconds.items():
        for second in seconds_:
            for third in thirds:
                messages.append(bytes([lead, second, third]))
                for fourth in thirds:
                    messages.append(bytes([lead, second, 0x80, fourth]))
                    messages.append(bytes([lead, second, third, fourth]))
    # The widest case: a 3-byte subpart escaped, then a byte of its own.
    messages += [b"\xf0\x90\x80\x41", b"\xf0\x90\x80\xf0", b"\xf4\x8f\xbf\xff"]
    widest = check(errors, messages)
    assert widest == (4 if errors == "surrogateescape" else 2)


@pytest.mark.parametrize("errors", ERRORS)
def test_random_streams(errors):
    """Random messages biased towards lead and continuation bytes."""
    rng = random.Random(f"spec-{errors}")
    alphabet = [0x00, 0x2F, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2,
                0xDF, 0xE0, 0xE1, 0xED, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFE, 0xFF]
    messages = []
    for _ in range(300):
        length = rng.randint(1, 12)
        messages.append(bytes(rng.choice(alphabet) if rng.random() < 0.8 else rng.randrange(256)
                              for _ in range(length)))
    # Valid text with every sequence length.
    for _ in range(40):
        text = "".join(chr(rng.choice([rng.randrange(0x80), rng.randrange(0x80, 0x800),
                                       rng.randrange(0x800, 0xD800),
                                       rng.randrange(0xE000, 0x10000),
                                       rng.randrange(0x10000, 0x110000)]))
                       for _ in range(rng.randint(1, 6)))
        messages.append(text.encode("utf-8"))
    check(errors, messages)


@pytest.mark.parametrize("errors", ERRORS)
def test_corpus(errors):
    corpora.require()
    cases = [case for case in corpora.decode_cases() if case.data and len(case.data) <= 4096]
    check(errors, [case.data for case in cases])
    if errors == "replace":
        results, _ = run_spec(errors, [case.data for case in cases if case.expected is not None])
        for case, outputs in zip([case for case in cases if case.expected is not None], results):
            assert tuple(cp for cp, _, _ in outputs) == case.expected, case.id


#: Bytes that exercise every branch of the grammar (leads, each second-byte range's edges).
ALPHABET = [0x41, 0x80, 0x9F, 0xA0, 0xBF, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF]


def beats(message, lanes, rng):
    """``message`` in beats of 1..``lanes`` bytes, junk in the unused lanes: a list of input
    payloads (a dict for ``ByteLayout`` with one lane, else for ``byte_beat_layout``)."""
    payloads, at = [], 0
    while at < len(message):
        count = min(rng.randint(1, lanes), len(message) - at)
        chunk = message[at:at + count] + bytes(rng.randrange(256) for _ in range(lanes - count))
        at += count
        last = int(at == len(message))
        payloads.append({"data": chunk[0], "last": last} if lanes == 1 else
                        {"data": int.from_bytes(chunk, "little"), "count": count, "last": last})
    return payloads


def feed(dut, messages, lanes, rng, read, name):
    """Simulate ``dut`` (a spec model, always ready) taking ``messages`` in random beats; after
    setting each beat, ``read(ctx, payload)`` checks and collects what it wants."""
    async def testbench(ctx):
        for message in messages:
            for payload in beats(message, lanes, rng):
                ctx.set(dut.i.valid, 1)
                ctx.set(dut.i.payload, payload)
                read(ctx, payload)
                await ctx.tick()
            ctx.set(dut.i.valid, 0)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    run_simulation(sim, name)


@pytest.mark.parametrize("errors", ERRORS)
def test_wide_spec_matches_reference(errors):
    # SpecDecoder(lanes=4), the formal proofs' model of the 4-lane decoder: random messages in
    # beats of 1..4 bytes (a message may end in any lane) give the reference model's outputs.
    lanes, rng = 4, random.Random(7)
    messages = [bytes(rng.choice(ALPHABET) for _ in range(rng.randint(1, 9))) for _ in range(150)]
    dut = SpecDecoder(errors, lanes=lanes)
    outputs, ended = [], [True]

    def read(ctx, payload):
        if ended[0]:
            assert ctx.get(dut.k) == 0, "a message left a pending prefix"
        ended[0] = payload["last"]
        for lane in ctx.get(dut.o):
            for item in list(lane.items)[:lane.count]:
                outputs.append((item.codepoint, ErrorKind(item.error), bool(item.last)))

    feed(dut, messages, lanes, rng, read, f"spec-decoder-{errors}-wide")
    assert outputs == [output for message in messages for output in expected(message, errors)]


@pytest.mark.parametrize("lanes", [1, 4])
def test_spec_validator(lanes):
    # SpecValidator, the formal proofs' model of the validator: random messages in beats of
    # 1..N bytes (junk in the unused lanes) give the reference validator's verdict, and CPython's
    # validity and first error offset. Its counters are 8 bits wide: long messages check that
    # they saturate.
    rng = random.Random(11 + lanes)
    messages = [bytes(rng.choice(ALPHABET) for _ in range(rng.randint(1, 9))) for _ in range(120)]
    messages += [b"a" * 300 + b"\xc2", b"\x80" * 300,
                 bytes(rng.choice(ALPHABET) for _ in range(400))]
    dut = SpecValidator(lanes=lanes, counter_width=8)
    verdicts = []

    def read(ctx, payload):
        assert ctx.get(dut.done) == payload["last"]
        if payload["last"]:
            o = ctx.get(dut.o)
            verdicts.append((bool(o.valid), o.offset, ErrorKind(o.error), o.errors))

    feed(dut, messages, lanes, rng, read, f"spec-validator-x{lanes}")
    for message, (valid, offset, kind, errors) in zip(messages, verdicts, strict=True):
        want = engines.validate(message, "reference")
        assert (valid, errors) == (want.valid, min(want.errors, 255)), message.hex(" ")
        if valid:
            assert (offset, kind) == (0, ErrorKind.NONE)
            message.decode("utf-8")
        else:
            assert (offset, kind) == (min(want.first_error_offset, 255),
                                      want.first_error_kind), message.hex(" ")
            with pytest.raises(UnicodeDecodeError) as info:
                message.decode("utf-8")
            assert min(info.value.start, 255) == offset, message.hex(" ")
