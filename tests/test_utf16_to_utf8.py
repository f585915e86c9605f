# amaranth: UnusedElaboratable=no
"""The unit-level UTF-16 to UTF-8 core (:class:`~utf8_gateware.hdl.utf16_to_utf8.Utf16ToUtf8`):
each unit's (a pair's) UTF-8 bytes, lone surrogates and odd trailing bytes as U+FFFD with their
kinds, under forced backpressure; and the transcoders from UTF-16 to UTF-8 it makes."""

import random

import pytest
from amaranth.hdl import Fragment

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.transcoder import Transcoder
from utf8_gateware.hdl.utf16_to_utf8 import Utf16ToUtf8
from utf8_gateware.sim import encodings
from utf8_gateware.sim.testbench import run_full_rate, run_stream
from test_transcoder import byte_items


NONE, SURROGATE, TRUNCATED = ErrorKind.NONE, ErrorKind.SURROGATE, ErrorKind.TRUNCATED
FFFD = b"\xef\xbf\xbd"
BOUNDARIES = [0, 0x41, 0x7F, 0x80, 0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF, 0xD800, 0xDBFF, 0xDC00,
              0xDFFF, 0xE000, 0xFEFF, 0xFFFD, 0xFFFF]


def expected(messages):
    """The model: ``(data, error, last)`` beats of messages of ``(unit, error)`` beats."""
    beats = []
    for message in messages:
        out, i = [], 0
        while i < len(message):
            unit, error = message[i]
            following = message[i + 1] if i + 1 < len(message) else None
            if error != NONE:
                data, kind = FFFD, error
            elif 0xD800 <= unit < 0xDC00 and following is not None:
                nunit, nerror = following
                if nerror == NONE and 0xDC00 <= nunit < 0xE000:
                    cp = 0x10000 + ((unit - 0xD800) << 10) + (nunit - 0xDC00)
                    data, kind, i = chr(cp).encode("utf-8"), NONE, i + 1
                elif nerror == TRUNCATED:
                    data, kind, i = FFFD, TRUNCATED, i + 1
                else:
                    data, kind = FFFD, SURROGATE
            elif 0xD800 <= unit < 0xE000:
                data, kind = FFFD, SURROGATE
            else:
                data, kind = chr(unit).encode("utf-8"), NONE
            out += [(byte, kind if n == 0 else NONE, 0) for n, byte in enumerate(data)]
            i += 1
        out[-1] = out[-1][:2] + (1,)
        beats += out
    return beats


def random_unit(rng):
    return rng.choice([
        lambda: rng.randrange(0x80), lambda: rng.randrange(0x80, 0x800),
        lambda: rng.randrange(0x800, 0x10000), lambda: rng.randrange(0xD800, 0xDC00),
        lambda: rng.randrange(0xDC00, 0xE000), lambda: rng.choice(BOUNDARIES)])()


def random_messages(rng, count, longest=8):
    """Messages of units (pairs, lone surrogates, boundaries; some end with the marker beat of
    an odd trailing byte, ``unit`` 0 and ``TRUNCATED``)."""
    messages = []
    for _ in range(count):
        message = []
        for _ in range(rng.choice([1, 1, rng.randrange(1, longest + 1)])):
            if rng.random() < 0.3:
                lead = rng.choice([0xD800, 0xDBFF, rng.randrange(0xD800, 0xDC00)])
                message += [(lead, NONE)]
                if rng.random() < 0.8:
                    trail = rng.choice([0xDC00, 0xDFFF, rng.randrange(0xDC00, 0xE000)])
                    message += [(trail, NONE)]
            else:
                message += [(random_unit(rng), NONE)]
        if rng.random() < 0.2:
            message += [(0, TRUNCATED)]
        messages.append(message)
    return messages


def unit_items(messages):
    return [{"unit": unit, "error": error, "last": int(index == len(message) - 1)}
            for message in messages for index, (unit, error) in enumerate(message)]


def beats(run):
    return [(int(p.data), ErrorKind(p.error), int(p.last)) for p in run.outputs]


def test_model_is_cpython():
    """The test's model against CPython's codecs (well-formed pairs, lone surrogates)."""
    rng = random.Random(3)
    for message in random_messages(rng, 200):
        if message[-1][1] == TRUNCATED:
            continue
        data = b"".join(unit.to_bytes(2, "little") for unit, _ in message)
        got = bytes(byte for byte, _, _ in expected([message]))
        assert got == data.decode("utf-16-le", "replace").encode("utf-8")


@pytest.mark.parametrize("gap,stall,seed", [(0.3, 0.3, 1), (0.0, 0.5, 2), (0.5, 0.0, 3),
                                            (0.1, 0.8, 4), (0.0, 0.0, 5)])
def test_random(gap, stall, seed):
    """Random units, pairs and lone surrogates under random gaps and a sink that refuses."""
    rng = random.Random(f"utf16-to-utf8-{seed}")
    messages = random_messages(rng, 80)
    run = run_stream(Utf16ToUtf8(), unit_items(messages), gap=gap, stall=stall, seed=seed)
    assert beats(run) == expected(messages)


def test_boundaries():
    """Every boundary alone, and U+10000, U+10FFFF and the pairs' edges, back to back."""
    pairs = [(0xD800, 0xDC00), (0xDBFF, 0xDFFF), (0xD800, 0xDFFF), (0xDBFF, 0xDC00),
             (0xD83D, 0xDE00)]
    messages = [[(unit, NONE)] for unit in BOUNDARIES]
    messages += [[(lead, NONE), (trail, NONE)] for lead, trail in pairs]
    messages += [[(0xD800, NONE), (0xD800, NONE), (0xDC00, NONE)],
                 [(0xDC00, NONE), (0xD800, NONE)], [(0xD800, NONE), (0x41, NONE)],
                 [(0xD800, NONE), (0, TRUNCATED)], [(0, TRUNCATED)],
                 [(0x41, NONE), (0xDBFF, NONE), (0, TRUNCATED)]]
    for stall, seed in [(0.0, 0), (0.5, 6)]:
        run = run_stream(Utf16ToUtf8(), unit_items(messages), stall=stall, seed=seed)
        assert beats(run) == expected(messages)


def test_throughput():
    """BMP units back to back: a byte out every cycle (the input waits while a unit's bytes
    go out); the first unit's first byte :attr:`~Utf16ToUtf8.LATENCY` cycles after its transfer
    (later units wait behind the bytes of those ahead of them too)."""
    rng = random.Random(8)
    messages = [[(rng.choice([rng.randrange(0x80), rng.randrange(0x80, 0x800),
                              rng.randrange(0xE000, 0x10000)]), NONE)
                 for _ in range(rng.randrange(1, 6))] for _ in range(30)]
    run = run_full_rate(Utf16ToUtf8(), unit_items(messages), idle=16, name="u16-u8-rate")
    want = expected(messages)
    assert beats(run) == want
    first = run.out_cycles[0]
    assert run.out_cycles == list(range(first, first + len(run.out_cycles)))
    starts = [index for index, (data, _, _) in enumerate(want) if data & 0xC0 != 0x80]
    waits = [run.out_cycles[start] - cycle for start, cycle in zip(starts, run.in_cycles)]
    assert waits[0] == min(waits) == Utf16ToUtf8.LATENCY


@pytest.mark.parametrize("source", ["utf-16-le", "utf-16-be", "utf-16"])
def test_transcoder(source):
    """The transcoders from UTF-16 into UTF-8 are the byte stage and this core; their output
    equals the model's decode then encode and CPython's (``utf-16`` without a mark: the model's
    big-endian, not CPython's native order)."""
    transcoder = Transcoder(source, "utf-8", "replace")
    fragment = Fragment.get(transcoder, None)
    assert [name for _, name, _ in fragment.subfragments] == ["units", "to_utf8"]
    rng = random.Random(f"u16-u8-{source}")
    messages = []
    for message in random_messages(rng, 25):
        units = [unit for unit, error in message if error == NONE]
        data = b"".join(unit.to_bytes(2, "big" if source.endswith("be") else "little")
                        for unit in units)
        if source == "utf-16":
            data = rng.choice([b"\xff\xfe", b""]) + data
            data = b"".join(unit.to_bytes(2, "big") for unit in units) if data[:1] != b"\xff" \
                else b"\xff\xfe" + b"".join(unit.to_bytes(2, "little") for unit in units)
        data += b"\x41" if message[-1][1] == TRUNCATED else b""
        messages.append(data or b"\x00\x41")
    run = run_stream(transcoder, byte_items(messages), gap=0.2, stall=0.4, seed=9)
    got, start = beats(run), 0
    for message in messages:
        end = next(index for index in range(start, len(got)) if got[index][2]) + 1
        items = encodings.decode(message, source, "replace")
        assert bytes(b for b, _, _ in got[start:end]) == \
            encodings.encode([d.codepoint for d in items], "utf-8", "replace").data
        if source != "utf-16" or message[:2] == b"\xff\xfe":   # CPython's utf-16: native
            assert bytes(b for b, _, _ in got[start:end]) == \
                message.decode(source, "replace").encode("utf-8")
        start = end
    assert start == len(got)


@pytest.mark.parametrize("text,least", [("cjk", 1.0), ("astral", 1.0), ("mixed", 0.88)])
def test_transcoder_rate(text, least):
    """``utf-16-le`` to ``utf-8`` with the sink always ready: output bytes per cycle from the
    first output byte to the last (the source gives an input byte a cycle, so a unit every
    second cycle). A pair is two groups of two bytes and a lead goes on from H when its trail
    is in A3 behind a bubble, so supplementary text keeps a byte a cycle (0.889 while the lead
    waited for its trail in A4; 0.728 while a pair was one group of four)."""
    rng = random.Random(f"u16-u8-rate-{text}")
    ranges = {"cjk": [(0x4E00, 0xA000)], "astral": [(0x10000, 0x110000)],
              "mixed": [(0x20, 0x7F), (0x80, 0x800), (0x4E00, 0xA000), (0x10000, 0x110000)]}
    chars = "".join(chr(rng.randrange(*rng.choice(ranges[text]))) for _ in range(80))
    data = chars.encode("utf-16-le")
    run = run_full_rate(Transcoder("utf-16-le", "utf-8"), byte_items([data]), idle=30,
                        name=f"u16-u8-rate-{text}")
    out = chars.encode("utf-8")
    assert bytes(int(p.data) for p in run.outputs) == out
    assert len(out) / (run.out_cycles[-1] - run.out_cycles[0] + 1) >= least
