"""The reference engine's fast paths against the per-byte model and CPython's codec.

The fast paths: the well-formed runs that :meth:`Grammar.well_formed_spans` finds, passed over
the per-byte loop (:class:`~utf8_gateware.sim.engines._ReferenceStream`), their UTF-8 output
(the run itself) and their code points (:func:`decode_well_formed`); the bulk :func:`encode`
against :func:`encode_unit`, unit by unit.
"""

import array
import itertools
import random

import pytest
from hypothesis import given, settings, strategies as st

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim import engines
from utf8_gateware.sim.reference import (
    DECODE_ERRORS, ENCODE_ERRORS, UTF8, ByteDecoder, Encoded, decode, decode_well_formed, encode,
    encode_errors, encode_unit)


EDGE_BYTES = bytes([0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
                    0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFE, 0xFF])

# Scalar values of every row of Table 3-7, with each row's first and last value.
ROWS = [(0x00, 0x7F), (0x80, 0x7FF), (0x800, 0xFFF), (0x1000, 0xCFFF), (0xD000, 0xD7FF),
        (0xE000, 0xFFFF), (0x10000, 0x3FFFF), (0x40000, 0xFFFFF), (0x100000, 0x10FFFF)]
ALPHABETS = {
    "ascii": [chr(value) for value in range(0x20, 0x7F)] + ["\n", "\x00"],
    "cyrillic": [chr(value) for value in range(0x400, 0x460)] + [" "],
    "cjk": [chr(value) for value in range(0x4E00, 0x4F00)] + ["\u3000", "\uFFFD"],
    "emoji": [chr(value) for value in range(0x1F600, 0x1F650)] + ["\u200D", " "],
    "rows": [chr(value) for low, high in ROWS for value in (low, high, (low + high) // 2)],
}


def chunks_at(data, cuts):
    points = [0, *sorted(cut % (len(data) + 1) for cut in cuts), len(data)]
    return [data[start:end] for start, end in itertools.pairwise(points)]


def assert_stream_is_the_model(data, chunks):
    """The reference engine on ``chunks`` gives the per-byte model's outputs on ``data``, the
    UTF-8 output CPython gives, and the model's verdict."""
    assert b"".join(chunks) == data
    for errors in DECODE_ERRORS:
        stream = list(engines.decode_stream(chunks, errors, "reference"))
        want = decode(data, errors)
        assert [output for chunk in stream for output in engines._outputs(chunk)] == want
        assert sum(chunk.count for chunk in stream) == len(want)
        assert b"".join(chunk.utf8 for chunk in stream) == \
            data.decode("utf-8", errors).encode("utf-8", "surrogateescape")
    model = ByteDecoder(UTF8)
    bad = [piece for piece in model.feed(data) + model.finish() if piece.kind.value]
    verdict = engines.validate(chunks, "reference")
    assert verdict[:4] == ((True, None, None, 0) if not bad else
                           (False, bad[0].start, bad[0].kind, len(bad)))
    assert verdict.bytes == len(data)


def fast_share(data):
    """The share of ``data`` that the fast path passes over (fed in one chunk)."""
    parts = engines._ReferenceStream().feed(data)
    return sum(len(part) for part in parts if isinstance(part, bytes)) / len(data)


# --- the pattern of well-formed runs ------------------------------------------------------------

def _is_well_formed(data):
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return bool(data)


def test_well_formed_spans_are_table_3_7():
    cases = [bytes(values) for length in (1, 2) for values in
             itertools.product(range(256), repeat=length)]
    cases += [bytes([lead, *tail]) for lead in range(0xE0, 0xF5)
              for tail in itertools.product(EDGE_BYTES, repeat=2)]
    cases += [bytes([lead, *tail]) for lead in range(0xF0, 0xF5)
              for tail in itertools.product(EDGE_BYTES, repeat=3)]
    for data in cases:
        assert (UTF8.well_formed_spans(data) == [(0, len(data))]) == _is_well_formed(data), \
            data.hex()


def test_well_formed_spans_around_errors():
    data = b"ab\xc3\xa9\xff\xe2\x82\xac\xe2\x82x\xf0\x9f\x98\x80\xed\xa0\x80z\xf0\x9f\x98"
    assert [data[start:stop] for start, stop in UTF8.well_formed_spans(data)] == [
        b"ab\xc3\xa9", b"\xe2\x82\xac", b"x\xf0\x9f\x98\x80", b"z"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(EDGE_BYTES), st.integers(0, 255)),
                max_size=40).map(bytes))
def test_well_formed_spans_are_well_formed_sequences(data):
    # Each span is whole sequences of the model's own cut, and the rest is what the model
    # does not decode to a scalar value, but at most a sequence next to each error.
    model = ByteDecoder(UTF8)
    pieces = model.feed(data) + model.finish()
    starts = {piece.start for piece in pieces if piece.kind is ErrorKind.NONE}
    ends = {piece.start + len(piece.data) for piece in pieces if piece.kind is ErrorKind.NONE}
    spans = UTF8.well_formed_spans(data)
    for start, stop in spans:
        assert _is_well_formed(data[start:stop]) and start in starts and stop in ends
    outside = len(data) - sum(stop - start for start, stop in spans)
    assert outside <= sum(len(piece.data) + 4 for piece in pieces if piece.kind.value)


# --- the bulk decoder of well-formed runs -------------------------------------------------------

def test_decode_well_formed_every_scalar_value():
    text = "".join(map(chr, itertools.chain(range(0xD800), range(0xE000, 0x110000))))
    assert decode_well_formed(text.encode("utf-8")) == text.encode("utf-32-le")
    assert decode_well_formed(b"") == b""
    # Mostly ASCII: the long ASCII stretches are widened apart from the rest.
    text = "".join(("ab\n" * (length // 3)) + rest for length, rest in [
        (255, "\u00e9"), (256, "\u4e2d"), (600, "\U0001F600\u0416"), (300, ""), (2, "\u00ff")])
    assert decode_well_formed(text.encode("utf-8")) == text.encode("utf-32-le")


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from(sorted(set().union(*ALPHABETS.values()))), max_size=60))
def test_decode_well_formed_is_the_model(text):
    data = text.encode("utf-8")
    units = decode_well_formed(data)
    assert [int.from_bytes(units[k:k + 4], "little") for k in range(0, len(units), 4)] == \
        [output.codepoint for output in decode(data)]


# --- the stream: runs, the per-byte model between them, chunk boundaries ------------------------

def mixed_sample():
    rng = random.Random(12)
    parts = []
    for kind, alphabet in ALPHABETS.items():
        parts.append("".join(rng.choice(alphabet) for _ in range(24)).encode("utf-8"))
        parts.append(bytes(rng.choice(EDGE_BYTES) for _ in range(3)))
    parts.append("\u00e9\u4e2d\U0001F600".encode("utf-8")[:-1])   # ends cut short
    return b"".join(parts)


def test_the_fast_path_is_taken():
    # Otherwise the tests below would only compare the model with itself.
    for alphabet in ALPHABETS.values():
        text = "".join(random.Random(1).choice(alphabet) for _ in range(500))
        assert fast_share(text.encode("utf-8")) > 0.95
    assert fast_share(mixed_sample()) > 0.5


def test_every_chunk_boundary():
    # Every cut of the sample in two, and a one-byte chunk at every position.
    data = mixed_sample()
    for cut in range(len(data) + 1):
        assert_stream_is_the_model(data, chunks_at(data, [cut]))
        assert_stream_is_the_model(data, chunks_at(data, [cut, cut + 1]))


segments = st.one_of(
    *(st.text(st.sampled_from(alphabet), min_size=1, max_size=40).map(
        lambda text: text.encode("utf-8")) for alphabet in ALPHABETS.values()),
    st.lists(st.sampled_from(EDGE_BYTES), min_size=1, max_size=4).map(bytes),
    st.binary(min_size=1, max_size=4),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(segments, max_size=12).map(b"".join), st.lists(st.integers(0, 1000), max_size=6))
def test_random_chunked_streams(data, cuts):
    assert_stream_is_the_model(data, chunks_at(data, cuts))


def test_skip_needs_no_pending_prefix():
    decoder = ByteDecoder(UTF8)
    decoder.feed(b"\xe2")
    with pytest.raises(ValueError, match="pending"):
        decoder.skip(3)
    decoder.finish()
    decoder.skip(3)
    assert decoder.feed(b"\x80")[0].start == 3


def test_other_engines_have_no_utf8_form():
    assert engines.DecodedChunk(b"A\0\0\0", []).utf8 is None


# --- the bulk encoder ---------------------------------------------------------------------------

def encode_unit_by_unit(units, errors):
    results = [encode_unit(unit, errors) for unit in units]
    return Encoded(b"".join(data for data, _ in results),
                   [(index, kind) for index, (_, kind) in enumerate(results) if kind.value])


ENCODE_EDGES = [0x00, 0x7F, 0x80, 0xFF, 0x100, 0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF, 0xD800, 0xDBFF,
                0xDC00, 0xDC7F, 0xDC80, 0xDCFE, 0xDCFF, 0xDD00, 0xDFFF, 0xE000, 0xFFFD, 0xFFFF,
                0x10000, 0x3FFFF, 0x40000, 0x10FFFF, 0x110000, 0x1DCFF, 0x10DC80, 0x1000DCFF,
                0x20000, 0xFFFFFF, 0x1000000, 0x7FFFFFFF, 0xFFFFFFFF]


def test_encode_every_scalar_value():
    text = "".join(map(chr, itertools.chain(range(0xD800), range(0xE000, 0x110000))))
    units = array.array("I", map(ord, text))
    for errors in ENCODE_ERRORS:
        assert encode(units, errors) == (text.encode("utf-8"), [])


@pytest.mark.parametrize("errors", ENCODE_ERRORS)
def test_encode_surrogates_and_edges(errors):
    units = [*range(0xD800, 0xE000), *ENCODE_EDGES, 0xDCFF, 0xDCFF, 0x41, 0xDCFF]
    assert encode(units, errors) == encode_unit_by_unit(units, errors)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(ENCODE_EDGES), st.integers(0, 0x10FFFF),
                          st.integers(0xD800, 0xDFFF), st.integers(0, 0xFFFFFFFF)), max_size=50),
       st.sampled_from(ENCODE_ERRORS))
def test_encode_is_unit_by_unit(units, errors):
    assert encode(units, errors) == encode_unit_by_unit(units, errors)


def test_encode_errors_are_those_of_encode():
    units = [*ENCODE_EDGES, *range(0xD7F0, 0xE010)]
    for errors in ENCODE_ERRORS:
        assert encode_errors(units, errors) == encode_unit_by_unit(units, errors).errors
    assert engines.invalid_units(array.array("I", [0x41, 0xD800]), 10, "replace") == \
        [(11, ErrorKind.SURROGATE)]
