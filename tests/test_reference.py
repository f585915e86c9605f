"""The reference model against CPython's codec (the oracle) and the external corpora."""

import codecs
import itertools
import random

import pytest
from hypothesis import given, settings, strategies as st

import corpora
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim.reference import (
    Decoded, Decoder, decode, decode_to_str, encode, encode_unit, count_errors,
    sequence_length, second_byte_range)


MODES = ("replace", "surrogateescape")
# Bytes that sit on every boundary of Table 3-7, plus ASCII and the invalid bytes.
EDGE_BYTES = bytes([0x00, 0x0A, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1,
                    0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4,
                    0xF5, 0xF7, 0xF8, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF])


def assert_same_as_cpython(data, errors):
    got, want = decode_to_str(data, errors), data.decode("utf-8", errors)
    if got != want:
        # Find the first difference to make the failure readable.
        index = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b),
                     min(len(got), len(want)))
        raise AssertionError(f"{errors}: model and CPython differ at output {index}: "
                             f"model {got[index:index + 4]!r}, CPython {want[index:index + 4]!r}")


@pytest.mark.parametrize("errors", MODES)
@pytest.mark.parametrize("length", [1, 2])
def test_every_short_sequence(length, errors):
    # Each case on its own, so that no case can hide a difference in the next.
    for values in itertools.product(range(256), repeat=length):
        data = bytes(values)
        assert decode_to_str(data, errors) == data.decode("utf-8", errors), data.hex()


@pytest.mark.parametrize("errors", MODES)
def test_every_lead_and_second_byte_with_sampled_tails(errors):
    # All 65,536 (lead, second) pairs, each with two sampled 1..3-byte tails drawn from the
    # edge bytes; cases joined by a newline, which always starts a new sequence.
    rng = random.Random(3_9)
    cases = []
    for lead, second in itertools.product(range(256), repeat=2):
        for _ in range(2):
            tail = bytes(rng.choice(EDGE_BYTES) for _ in range(rng.randint(1, 3)))
            cases.append(bytes([lead, second]) + tail)
    assert_same_as_cpython(b"\n".join(cases), errors)


interesting_bytes = st.one_of(st.sampled_from(EDGE_BYTES), st.integers(0, 255))


@settings(max_examples=400, deadline=None)
@given(st.lists(interesting_bytes, max_size=40).map(bytes), st.sampled_from(MODES),
       st.lists(st.integers(0, 40), max_size=4))
def test_random_streams_incremental(data, errors, cuts):
    assert_same_as_cpython(data, errors)
    # Fed in arbitrary chunks, the incremental decoder gives the same outputs.
    decoder = Decoder(errors)
    outputs = []
    for start, end in itertools.pairwise([0, *sorted(cuts), len(data)]):
        outputs += decoder.feed(data[start:end])
    outputs += decoder.finish()
    assert outputs == decode(data, errors)
    # ... and so does CPython's incremental decoder.
    reference = codecs.getincrementaldecoder("utf-8")(errors)
    text = "".join(reference.decode(data[start:end])
                   for start, end in itertools.pairwise([0, *sorted(cuts), len(data)]))
    assert "".join(chr(o.codepoint) for o in outputs) == text + reference.decode(b"", final=True)


@settings(max_examples=300, deadline=None)
@given(st.lists(interesting_bytes, max_size=60).map(bytes))
def test_surrogateescape_round_trip(data):
    units = [output.codepoint for output in decode(data, "surrogateescape")]
    assert encode(units, "surrogateescape") == (data, [])


def test_round_trip_of_every_two_byte_string():
    data = b"".join(bytes(pair) for pair in itertools.product(range(256), repeat=2))
    units = [output.codepoint for output in decode(data, "surrogateescape")]
    assert encode(units, "surrogateescape").data == data


@pytest.mark.parametrize("data, kinds", [
    ("c0 80",       ["overlong", "unexpected_continuation"]),
    ("c1 bf",       ["overlong", "unexpected_continuation"]),
    ("e0 9f 80",    ["overlong", "unexpected_continuation", "unexpected_continuation"]),
    ("e0 41",       ["truncated", None]),
    ("f0 8f",       ["overlong", "unexpected_continuation"]),
    ("ed a0 80",    ["surrogate", "unexpected_continuation", "unexpected_continuation"]),
    ("ed 9f bf",    [None]),
    ("f4 90 80 80", ["too_large"] + ["unexpected_continuation"] * 3),
    ("f4 8f bf bf", [None]),
    ("f5",          ["too_large"]),
    ("fd",          ["too_large"]),
    ("fe",          ["invalid_byte"]),
    ("ff",          ["invalid_byte"]),
    ("80",          ["unexpected_continuation"]),
    ("e1 80",       ["truncated"]),
    ("f1 80 80 41", ["truncated", None]),
    ("f1 80 80 f1", ["truncated", "truncated"]),
    ("e1 80 e1 80 80", ["truncated", None]),
    ("c2 c2 80",    ["truncated", None]),
])
def test_error_kinds(data, kinds):
    outputs = decode(bytes.fromhex(data))
    assert [None if o.error is ErrorKind.NONE else o.error.label for o in outputs] == kinds
    assert all((o.codepoint == 0xFFFD) == (o.error is not ErrorKind.NONE) for o in outputs)


def test_surrogateescape_outputs_carry_the_kind_of_their_subpart():
    assert decode(bytes.fromhex("f1 80 80 41"), "surrogateescape") == [
        Decoded(0xDCF1, ErrorKind.TRUNCATED), Decoded(0xDC80, ErrorKind.TRUNCATED),
        Decoded(0xDC80, ErrorKind.TRUNCATED), Decoded(0x41)]


def test_tables():
    assert [sequence_length(b) for b in (0x00, 0x7F, 0x80, 0xC1, 0xC2, 0xDF, 0xE0, 0xEF,
                                         0xF0, 0xF4, 0xF5, 0xFF)] == \
        [1, 1, 0, 0, 2, 2, 3, 3, 4, 4, 0, 0]
    assert second_byte_range(0xE0) == (0xA0, 0xBF)
    assert second_byte_range(0xF4) == (0x80, 0x8F)
    assert second_byte_range(0xC2) == (0x80, 0xBF)


def test_count_errors():
    counts = count_errors(o.error for o in decode(b"\xff\xc0a\x80\x80"))
    assert counts == {"overlong": 1, "surrogate": 0, "too_large": 0, "invalid_byte": 1,
                      "unexpected_continuation": 2, "truncated": 0}


def test_incremental_decoder_restarts_after_finish():
    decoder = Decoder()
    assert decoder.feed(b"\xe2\x82") == []
    assert decoder.pending == b"\xe2\x82"
    assert decoder.finish() == [Decoded(0xFFFD, ErrorKind.TRUNCATED)]
    assert decoder.feed(b"\xac") == [Decoded(0xFFFD, ErrorKind.UNEXPECTED_CONTINUATION)]


# --- encoder ------------------------------------------------------------------------------

@pytest.mark.parametrize("errors", ["replace", "strict", "surrogateescape"])
def test_every_code_point(errors):
    for unit in range(0x110000):
        data, kind = encode_unit(unit, errors)
        if 0xD800 <= unit <= 0xDFFF:
            if errors == "surrogateescape" and 0xDC80 <= unit <= 0xDCFF:
                assert (data, kind) == (chr(unit).encode("utf-8", "surrogateescape"),
                                        ErrorKind.NONE)
            else:
                assert kind is ErrorKind.SURROGATE
                assert data == (b"" if errors == "strict" else b"\xef\xbf\xbd")
        else:
            assert (data, kind) == (chr(unit).encode("utf-8"), ErrorKind.NONE), hex(unit)


@pytest.mark.parametrize("errors, want", [("replace", b"\xef\xbf\xbd"), ("strict", b""),
                                          ("surrogateescape", b"\xef\xbf\xbd")])
def test_values_beyond_unicode(errors, want):
    rng = random.Random(1)
    units = [0x110000, 0x1FFFFF, 0x200000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF] + \
            [rng.randrange(0x110000, 1 << 32) for _ in range(1000)]
    for unit in units:
        assert encode_unit(unit, errors) == (want, ErrorKind.TOO_LARGE)


def test_encode_reports_indices():
    units = [0x41, 0xD800, 0x42, 0x110000, 0xDC80]
    assert encode(units, "strict") == (b"AB", [(1, ErrorKind.SURROGATE), (3, ErrorKind.TOO_LARGE),
                                               (4, ErrorKind.SURROGATE)])
    assert encode(units, "surrogateescape") == (
        b"A\xef\xbf\xbdB\xef\xbf\xbd\x80",
        [(1, ErrorKind.SURROGATE), (3, ErrorKind.TOO_LARGE)])


@pytest.mark.parametrize("call", [
    lambda: decode(b"", "strict"), lambda: Decoder("ignore"), lambda: encode([], "ignore"),
    lambda: encode_unit(1 << 32), lambda: encode_unit(-1)])
def test_bad_parameters(call):
    with pytest.raises(ValueError):
        call()


def test_errors_must_be_a_string():
    with pytest.raises(TypeError):
        decode(b"", None)


# --- external corpora -------------------------------------------------------------------------

def test_corpus_decode_cases():
    corpora.require()
    cases = corpora.decode_cases()
    assert len(cases) > 600
    for case in cases:
        outputs = decode(case.data)
        if case.expected is not None:
            assert tuple(o.codepoint for o in outputs) == case.expected, case.id
        if case.valid is not None:
            assert all(o.error is ErrorKind.NONE for o in outputs) == case.valid, case.id
        for errors in MODES:
            assert_same_as_cpython(case.data, errors)


def test_corpus_flenniken_whole_file():
    corpora.require()
    data, expected = corpora.flenniken_whole_file()
    assert encode([o.codepoint for o in decode(data)]).data == expected


def test_corpus_llvm_partial_cases():
    corpora.require()
    for case_id, data, expected, pending in corpora.partial_cases():
        decoder = Decoder()
        assert tuple(o.codepoint for o in decoder.feed(data)) == expected, case_id
        assert bool(decoder.pending) == pending, case_id


def test_corpus_wpt_streaming_cases():
    corpora.require()
    for case_id, steps in corpora.streaming_cases():
        decoder = Decoder()
        for chunk, more, expected in steps:
            outputs = decoder.feed(chunk or b"")
            if not more:
                outputs += decoder.finish()
            assert tuple(o.codepoint for o in outputs) == expected, case_id


def test_corpus_encode_cases():
    corpora.require()
    for case in corpora.encode_cases():
        assert encode(case.units, "replace").data == case.expected, case.id


def test_corpus_kuhn():
    corpora.require()
    data = corpora.kuhn()
    for errors in MODES:
        assert_same_as_cpython(data, errors)
