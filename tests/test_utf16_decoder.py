# amaranth: UnusedElaboratable=no
"""The UTF-16 decoder core (:class:`utf8_gateware.hdl.utf16_decoder.Utf16Decoder`) in Amaranth's
Python simulator, against the reference model (``JoinSurrogates`` and ``render``) and CPython."""

import itertools
import random

import pytest

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.utf16_decoder import UTF16_DECODE_ERRORS, Utf16Decoder
from utf8_gateware.sim.encodings.surrogates import JoinSurrogates
from utf8_gateware.sim.reference import Piece, render
from utf8_gateware.sim.testbench import run_stream


TRUNCATED = "truncated"   # an odd trailing byte, as the byte-order stage marks it

CLASSES = [
    lambda rng: rng.randrange(0xD800),
    lambda rng: rng.randrange(0xD800, 0xDC00),          # lead
    lambda rng: rng.randrange(0xDC00, 0xE000),          # trail
    lambda rng: rng.randrange(0xE000, 0x10000),
    lambda rng: rng.choice([0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xFFFF, 0xFEFF, 0]),
]


def random_messages(rng, count, truncated=True):
    """Messages of code units: pairs, lone surrogates of both kinds, BMP units, and (with
    ``truncated``) an odd trailing byte at the end of some messages."""
    messages = []
    for _ in range(count):
        units = [rng.choice(CLASSES)(rng) for _ in range(rng.randrange(1, 12))]
        if truncated and rng.random() < 0.3:
            units.append(TRUNCATED)
        messages.append(units)
    return messages


def expected_outputs(messages, errors):
    """``(codepoint, error, last)`` per output, from the reference stage and policy."""
    out = []
    for units in messages:
        pieces = [Piece(None, ErrorKind.TRUNCATED, b"x", 0) if unit == TRUNCATED else
                  Piece(unit, ErrorKind.NONE, b"xx", 0) for unit in units]
        stage = JoinSurrogates(lone_is_error=True, merge_truncated=errors != "surrogatepass")
        joined = stage.feed(pieces) + stage.finish()
        if errors == "surrogatepass":
            # The reference raises on the odd byte; the core reports it on a U+FFFD.
            decoded = [(0xFFFD, p.kind) if p.value is None else (p.value, p.kind)
                       for p in joined]
        else:
            decoded = [(d.codepoint, d.error) for d in render(joined, errors)]
        out += [(cp, kind, int(index == len(decoded) - 1))
                for index, (cp, kind) in enumerate(decoded)]
    return out


def as_units(outputs):
    """The outputs of :func:`expected_outputs` as ``Utf16Decoder(units=True)`` writes them: a
    supplementary code point as its two units, its kind on the first, ``last`` on the second."""
    out = []
    for cp, kind, last in outputs:
        if cp < 0x10000:
            out.append((cp, kind, last))
        else:
            cp -= 0x10000
            out += [(0xD800 | cp >> 10, kind, 0), (0xDC00 | cp & 0x3FF, ErrorKind.NONE, last)]
    return out


def decode(messages, errors="replace", units=False, **kwargs):
    items = []
    for message in messages:
        for index, unit in enumerate(message):
            last = int(index == len(message) - 1)
            items.append({"unit": 0, "error": ErrorKind.TRUNCATED, "last": last}
                         if unit == TRUNCATED else
                         {"unit": unit, "error": ErrorKind.NONE, "last": last})
    run = run_stream(Utf16Decoder(errors, units=units), items, **kwargs)
    return [(int(p.unit if units else p.codepoint), ErrorKind(p.error), int(p.last))
            for p in run.outputs], run


def expected(messages, errors, units):
    outputs = expected_outputs(messages, errors)
    return as_units(outputs) if units else outputs


@pytest.mark.parametrize("units", [False, True])
@pytest.mark.parametrize("errors", UTF16_DECODE_ERRORS)
@pytest.mark.parametrize("seed", [1, 2])
def test_random_messages(errors, seed, units):
    rng = random.Random(f"utf16-decoder-{errors}-{seed}")
    messages = random_messages(rng, 60)
    got, _ = decode(messages, errors, units, gap=0.3, stall=0.3, seed=seed)
    assert got == expected(messages, errors, units)


@pytest.mark.parametrize("units", [False, True])
@pytest.mark.parametrize("errors", UTF16_DECODE_ERRORS)
def test_every_pair_of_classes(errors, units):
    """Every sequence of two and three units drawn from the class boundaries, each its own
    message."""
    edges = [0x0, 0xD7FF, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xE000, 0xFFFF, TRUNCATED]
    messages = [list(message) for length in (1, 2, 3)
                for message in itertools.product(edges, repeat=length)]
    got, _ = decode(messages, errors, units)
    assert got == expected(messages, errors, units)


def test_cpython():
    """Random text with lone surrogates, as CPython's ``utf-16-le`` decodes it."""
    rng = random.Random("utf16-decoder-cpython")
    for errors in UTF16_DECODE_ERRORS:
        units = [rng.choice(CLASSES)(rng) for _ in range(400)]
        data = b"".join(unit.to_bytes(2, "little") for unit in units)
        got, _ = decode([units], errors)
        assert "".join(map(chr, (cp for cp, _, _ in got))) == \
            data.decode("utf-16-le", errors)


@pytest.mark.slow
def test_units():
    """Every surrogate unit followed by a trail surrogate that it may join; every 31st other
    unit."""
    units = sorted({*range(0xD800, 0xE000), *range(0, 0x10000, 31)})
    messages = [[unit, 0xDC00 + (unit & 0x3FF)] for unit in units]
    got, _ = decode(messages, "replace")
    assert got == expected_outputs(messages, "replace")


def test_pace():
    """One unit in every cycle; the outputs of well-formed text come with no idle cycle."""
    rng = random.Random("utf16-decoder-pace")
    units = [rng.choice([rng.randrange(0xD800), rng.randrange(0xE000, 0x10000)])
             for _ in range(100)]
    got, run = decode([units])
    first = run.in_cycles[0]
    assert run.in_cycles == list(range(first, first + len(units)))
    assert run.out_cycles == list(range(first + Utf16Decoder.LATENCY,
                                        first + Utf16Decoder.LATENCY + len(units)))


def test_pace_units():
    """``units``: one unit in and one out every cycle, pairs and lone surrogates included."""
    rng = random.Random("utf16-decoder-pace-units")
    units = [unit for _ in range(60) for unit in rng.choice(
        [[rng.randrange(0xD800)], [rng.randrange(0xD800, 0xDC00), rng.randrange(0xDC00, 0xE000)],
         [rng.randrange(0xDC00, 0xE000)], [rng.randrange(0xE000, 0x10000)]])]
    got, run = decode([units], "surrogatepass", units=True)
    assert [unit for unit, _, _ in got] == units
    first = run.in_cycles[0]
    assert run.in_cycles == list(range(first, first + len(units)))
    assert run.out_cycles == list(range(first + Utf16Decoder.LATENCY,
                                        first + Utf16Decoder.LATENCY + len(units)))


def test_parameters():
    assert Utf16Decoder().errors == "replace"
    assert not Utf16Decoder().units
    with pytest.raises(ValueError, match="errors must be one of"):
        Utf16Decoder("strict")
    with pytest.raises(TypeError, match="units must be a bool, not 1"):
        Utf16Decoder(units=1)
