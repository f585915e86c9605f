# amaranth: UnusedElaboratable=no
"""The UTF-16 encoder core (:class:`utf8_gateware.hdl.utf16_encoder.Utf16Encoder`) in Amaranth's
Python simulator, beat by beat against the reference model's UTF-16 encoder."""

import array
import random

import pytest

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.utf16_encoder import UTF16_ENCODE_ERRORS, Utf16Encoder
from utf8_gateware.sim import compiled
from utf8_gateware.sim.encodings.utf16 import encoded_beats
from utf8_gateware.sim.testbench import run_stream


BOUNDARIES = [
    0x0, 0x41, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xE000,
    0xFFFD, 0xFFFF, 0x10000, 0x10001, 0x103FF, 0x10400, 0x1F600, 0xFFFFF, 0x100000, 0x10FFFF,
    0x110000, 0x1FFFFF, 0x200000, 0x7FFFFFFF, 0xFFFFFFFF, 0x1D800, 0x10DC00, 0x11D800,
]


def random_codepoint(rng):
    return rng.choice([
        lambda: rng.randrange(0xD800),
        lambda: rng.randrange(0xD800, 0xE000),
        lambda: rng.randrange(0xE000, 0x10000),
        lambda: rng.randrange(0x10000, 0x110000),
        lambda: rng.randrange(0x110000, 0x200000),
        lambda: rng.getrandbits(32),
        lambda: rng.choice(BOUNDARIES),
    ])()


def expected_beats(codepoints, lasts, errors):
    """``(unit, error, last)`` beats from the reference model's ``utf-16-le`` encoder."""
    beats = []
    for codepoint, last in zip(codepoints, lasts):
        units = encoded_beats(codepoint, errors)
        beats += [(unit, kind, int(last and index == len(units) - 1))
                  for index, (unit, kind) in enumerate(units)]
    return beats


def encode_beats(codepoints, lasts=None, errors="replace", **kwargs):
    if lasts is None:
        lasts = [0] * (len(codepoints) - 1) + [1]
    items = [{"codepoint": cp, "last": last} for cp, last in zip(codepoints, lasts)]
    run = run_stream(Utf16Encoder(errors), items, **kwargs)
    return [(int(p.unit), ErrorKind(p.error), int(p.last)) for p in run.outputs], run


@pytest.mark.parametrize("errors", UTF16_ENCODE_ERRORS)
def test_boundaries(errors):
    beats, _ = encode_beats(BOUNDARIES, errors=errors)
    assert beats == expected_beats(BOUNDARIES, [0] * (len(BOUNDARIES) - 1) + [1], errors)


@pytest.mark.parametrize("errors", UTF16_ENCODE_ERRORS)
@pytest.mark.parametrize("seed", [1, 2])
def test_random_streams(errors, seed):
    """Random code points in random messages, with source gaps and sink stalls."""
    rng = random.Random(f"utf16-encoder-{errors}-{seed}")
    codepoints = [random_codepoint(rng) for _ in range(300)]
    lasts = [int(rng.random() < 0.1) for _ in codepoints[:-1]] + [1]
    beats, _ = encode_beats(codepoints, lasts, errors, gap=0.3, stall=0.3, seed=seed)
    assert beats == expected_beats(codepoints, lasts, errors)


def test_cpython_surrogatepass():
    """Well-formed text and lone surrogates: the units CPython's ``utf-16-le`` writes."""
    rng = random.Random("utf16-cpython")
    codepoints = [rng.choice([rng.randrange(0x10000), rng.randrange(0x10000, 0x110000)])
                  for _ in range(200)]
    beats, _ = encode_beats(codepoints, errors="surrogatepass")
    data = "".join(map(chr, codepoints)).encode("utf-16-le", "surrogatepass")
    assert [unit for unit, _, _ in beats] == \
        [int.from_bytes(data[index:index + 2], "little") for index in range(0, len(data), 2)]


@pytest.mark.parametrize("errors", UTF16_ENCODE_ERRORS)
def test_pace(errors):
    """Input always available, sink always ready: one code unit every cycle, the first
    LATENCY cycles after the first transfer; a code point goes in every 1 or 2 cycles."""
    rng = random.Random(f"utf16-pace-{errors}")
    codepoints = [rng.choice([rng.randrange(0xD800), rng.randrange(0x10000, 0x110000)])
                  for _ in range(100)]
    beats, run = encode_beats(codepoints, errors=errors)
    first = run.in_cycles[0]
    latency = Utf16Encoder.LATENCY
    assert run.out_cycles == list(range(first + latency, first + latency + len(beats)))
    # A code point goes in every cycle but the one after a supplementary code point reaches the
    # output slot (its trail goes out then): code point k goes in with code point k - d to the
    # slot, d = LATENCY - 1 stages ahead.
    depth = latency - 1
    extra = [int(cp >= 0x10000) for cp in codepoints]
    assert [cycle - first for cycle in run.in_cycles] == \
        [index + sum(extra[:max(0, index - depth)]) for index in range(len(codepoints))]


@pytest.mark.slow
def test_sweep():
    """Every value around and in the surrogates, every 17th other BMP value, a sweep of the
    supplementary planes and past U+10FFFF (replace)."""
    codepoints = sorted({*range(0xD700, 0xE100), *range(0, 0x10000, 17),
                         *range(0x10000, 0x110000, 0x3FF), *range(0x10FF00, 0x110100)})
    beats, _ = encode_beats(codepoints, [0] * (len(codepoints) - 1) + [1])
    assert beats == expected_beats(codepoints, [0] * (len(codepoints) - 1) + [1], "replace")


def test_parameters():
    assert Utf16Encoder().errors == "replace"
    with pytest.raises(ValueError, match="errors must be one of"):
        Utf16Encoder("surrogateescape")
    with pytest.raises(TypeError, match="errors must be a string"):
        Utf16Encoder(1)


@pytest.mark.exhaustive
@pytest.mark.skipif(not compiled.have_compiler(), reason="no C++ compiler")
def test_compiled_every_code_point(errors="replace"):
    """Every value below 0x110000 and a sweep above it, through the compiled core (``replace``;
    the other policies differ only in the invalid values, which test_sweep and the random
    streams cover)."""
    codepoints = list(range(0x110000)) + list(range(0x110000, 1 << 32, 4093 * 4099))
    model = compiled.build_stream_model(Utf16Encoder(errors), f"utf16-encoder-{errors}")
    result = model.run(array.array("I", codepoints).tobytes())
    size = result.out_bytes
    items = (int.from_bytes(result.data[k:k + size], "little")
             for k in range(0, len(result.data), size))
    got = [(item & 0xFFFF, (item >> 16) & 0x7) for item in items]
    want = [(unit, kind.value) for unit, kind, _ in
            expected_beats(codepoints, [0] * (len(codepoints) - 1) + [1], errors)]
    assert got == want
