"""Exhaustive sweeps of the decoder (one and four lanes), the validator (four lanes) and
encoder -> decoder through the compiled simulation.

Each sweep is fed as one long stream and checked against CPython's codec on the whole buffer
(CPython decodes a buffer in one call), so a sweep of millions of cases costs seconds. Every case
is followed by a newline, which always ends whatever the case left pending and starts a new
sequence, so no case can hide a difference in the next.

What is compared for every output: the code point; and, per sweep, the number of error outputs
(CPython's output with ``errors`` minus its output with ``"ignore"``: one per maximal subpart
with ``replace``, one per byte with ``surrogateescape``), and that exactly one output carries
``last``, the final one. The error *kinds* are compared with the reference model output by
output in the simulation tests and proven equal to the specification model formally.

The validator gives one verdict per message, so there each case is a message of its own (host-
packed beats of four lanes, ``last`` on the case's final beat), shifted by 0 or 2 ASCII bytes so
that cases also straddle two beats; CPython's verdict for every case comes from two whole-buffer
decodes (:func:`cpython_verdicts`).

Cost (measured with ``time`` on the shared development machine): the marker takes about 80 s of
processor time, the four-lane sweeps about 10 s of it; the compiled models are shared with the
other tests (per process, and cached on disk across runs; a cold build of the four-lane decoder
or validator takes a few seconds of Yosys and about 15 s of the C++ compiler).
"""

import itertools
import random

import numpy
import pytest

from utf8_gateware.hdl.layouts import byte_beat_layout
from utf8_gateware.sim import compiled, engines


pytestmark = [
    pytest.mark.exhaustive,
    pytest.mark.skipif(not compiled.have_compiler(), reason="no C++ compiler for the compiled "
                                                            "simulation"),
]

MODES = ("replace", "surrogateescape")
CODEPOINT_MASK = (1 << 21) - 1
ERROR_SHIFT, ERROR_MASK = 21, 0b111
LAST_BIT = 24
# Third and fourth bytes on every boundary of Unicode's Table 3-7 (the continuation ranges
# 80..8F, 90..9F, A0..BF and their ends), ASCII, a lead of each length and an invalid byte.
REPRESENTATIVE = bytes([0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC2, 0xE0, 0xF4, 0xFF])


def decode_and_compare(data, errors, lanes=1):
    """Decode ``data`` (one message) with the compiled decoder and compare with CPython."""
    model = engines.compiled_model("decoder", errors, lanes)
    result = model.run(data)
    words = numpy.frombuffer(result.data, dtype="<u4")
    text = data.decode("utf-8", errors)
    want = numpy.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    got = words & CODEPOINT_MASK
    if got.shape != want.shape or not numpy.array_equal(got, want):
        length = min(len(got), len(want))
        first = int(numpy.argmax(got[:length] != want[:length])) \
            if not numpy.array_equal(got[:length], want[:length]) else length
        raise AssertionError(
            f"{errors}: {len(got)} outputs, CPython {len(want)}; first difference at output "
            f"{first}: gateware {[hex(v) for v in got[first:first + 4]]}, CPython "
            f"{[hex(v) for v in want[first:first + 4]]}")
    errors_out = int(numpy.count_nonzero((words >> ERROR_SHIFT) & ERROR_MASK))
    assert errors_out == len(text) - len(data.decode("utf-8", "ignore"))
    lasts = numpy.flatnonzero((words >> LAST_BIT) & 1)
    assert lasts.tolist() == [len(words) - 1]
    # The decoder takes one beat every cycle: the whole stream passes in beats + latency cycles.
    assert result.cycles <= -(-len(data) // lanes) + 8 + 2 * (lanes > 1)
    return words


def sweep(cases):
    return b"\n".join(cases) + b"\n"


@pytest.mark.parametrize("errors", MODES)
def test_every_one_two_and_three_byte_sequence(errors):
    one = [bytes([a]) for a in range(256)]
    two = [bytes(pair) for pair in itertools.product(range(256), repeat=2)]
    # All 16,777,216 three-byte sequences: the sweep of all byte values appended to each pair.
    three = bytes(numpy.stack(numpy.meshgrid(
        numpy.arange(256, dtype=numpy.uint8), numpy.arange(256, dtype=numpy.uint8),
        numpy.arange(256, dtype=numpy.uint8), numpy.array([0x0A], dtype=numpy.uint8),
        indexing="ij"), axis=-1).reshape(-1))
    decode_and_compare(sweep(one + two) + three, errors)


@pytest.mark.parametrize("errors", MODES)
def test_four_byte_leads_with_sampled_tails(errors):
    # Every F0..F4 lead with every continuation second byte, and 1,024 sampled (third, fourth)
    # pairs each, drawn from all byte values.
    rng = random.Random(4)
    cases = [bytes([lead, second, rng.randrange(256), rng.randrange(256)])
             for lead in range(0xF0, 0xF5) for second in range(0x80, 0xC0) for _ in range(1024)]
    decode_and_compare(sweep(cases), errors)


@pytest.mark.parametrize("errors", MODES)
def test_every_first_and_second_byte_with_representative_tails(errors):
    tails = bytes(numpy.array(list(itertools.product(REPRESENTATIVE, repeat=2)),
                              dtype=numpy.uint8).reshape(-1))
    heads = numpy.array(list(itertools.product(range(256), repeat=2)), dtype=numpy.uint8)
    tails = numpy.frombuffer(tails, dtype=numpy.uint8).reshape(-1, 2)
    cases = numpy.concatenate([
        numpy.repeat(heads, len(tails), axis=0),
        numpy.tile(tails, (len(heads), 1)),
        numpy.full((len(heads) * len(tails), 1), 0x0A, dtype=numpy.uint8)], axis=1)
    decode_and_compare(bytes(cases.reshape(-1)), errors)


@pytest.mark.parametrize("errors", ["replace", "surrogateescape"])
def test_every_code_point_through_encoder_then_decoder(errors):
    # Every scalar value, surrogate and the invalid range up to 0x1FFFFF, then a sample above.
    units = list(range(0x200000)) + [0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0x00200000]
    encoded = engines.encode(units, errors, "compiled")
    words = decode_and_compare(encoded.data, errors)
    got = (words & CODEPOINT_MASK).tolist()
    want = [unit if unit < 0x110000 and not 0xD800 <= unit <= 0xDFFF
            else unit if errors == "surrogateescape" and 0xDC80 <= unit <= 0xDCFF
            else 0xFFFD for unit in units]
    assert got == want


# -------------------------------------------------------------------------------------------------
# Four lanes

LEADS = bytes([0x00, 0x80, 0xC0, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3,
               0xF4, 0xF5, 0xFF])


def lead_triples(leads):
    """Every three-byte sequence whose first byte is in ``leads`` (an array of shape (n, 3))."""
    grid = numpy.meshgrid(numpy.frombuffer(leads, dtype=numpy.uint8),
                          numpy.arange(256, dtype=numpy.uint8),
                          numpy.arange(256, dtype=numpy.uint8), indexing="ij")
    return numpy.stack(grid, axis=-1).reshape(-1, 3)


@pytest.mark.parametrize("errors", MODES)
def test_four_lanes_every_short_sequence(errors):
    # Every one- and two-byte sequence and every three-byte one after one of LEADS, newline
    # separated: cases of 2..4 bytes fall on every lane position.
    one = [bytes([a]) for a in range(256)]
    two = [bytes(pair) for pair in itertools.product(range(256), repeat=2)]
    three = lead_triples(LEADS)
    three = numpy.concatenate([three, numpy.full((len(three), 1), 0x0A, numpy.uint8)], axis=1)
    decode_and_compare(sweep(one + two) + bytes(three.reshape(-1)), errors, lanes=4)


@pytest.mark.parametrize("errors", MODES)
def test_four_lanes_four_byte_leads(errors):
    rng = random.Random(44)
    cases = [bytes([lead, second, rng.randrange(256), rng.randrange(256)])
             for lead in range(0xF0, 0xF5) for second in range(0x80, 0xC0) for _ in range(256)]
    decode_and_compare(sweep(cases), errors, lanes=4)


def cpython_verdicts(cases):
    """``(valid, first_error_offset, errors)`` arrays for each case (rows of an array of bytes,
    none containing a newline), by CPython: the cases joined by newlines (a newline ends any
    prefix and is never part of an error) decoded with ``surrogateescape`` (each byte of a
    maximal subpart one escape: the first escape of a case is its first error's first byte) and
    with ``replace`` (one U+FFFD per maximal subpart; genuine U+FFFD appear in both)."""
    data = bytes(numpy.concatenate([cases, numpy.full((len(cases), 1), 0x0A, numpy.uint8)],
                                   axis=1).reshape(-1))
    escaped = numpy.frombuffer(data.decode("utf-8", "surrogateescape").encode(
        "utf-32-le", "surrogatepass"), dtype="<u4")
    replaced = numpy.frombuffer(data.decode("utf-8", "replace").encode("utf-32-le"), dtype="<u4")

    def per_case(units, flags):
        # The count of flags in each case, and the position of each unit within its case.
        case = numpy.cumsum(units == 0x0A) - (units == 0x0A)
        return numpy.bincount(case, weights=flags, minlength=len(cases)).astype(numpy.int64), case
    size = numpy.where(units_escape := (escaped >= 0xDC80) & (escaped <= 0xDCFF), 1,
                       numpy.select([escaped < 0x80, escaped < 0x800, escaped < 0x10000],
                                    [1, 2, 3], 4))
    fffd_escaped, case = per_case(escaped, escaped == 0xFFFD)
    errors = per_case(replaced, replaced == 0xFFFD)[0] - fffd_escaped
    # Byte offset of every unit within its case; the first escape of each case.
    starts = numpy.cumsum(size) - size
    case_start = starts[numpy.searchsorted(case, numpy.arange(len(cases)))]
    offsets = starts - case_start[case]
    first = numpy.full(len(cases), -1, dtype=numpy.int64)
    where = numpy.flatnonzero(units_escape)[::-1]
    first[case[where]] = offsets[where]
    return errors == 0, first, errors


def pack_messages(cases, lanes):
    """Each case (rows of equal length) as one message of ``lanes``-byte beats: 8-byte items
    ``{data, count, last}`` (the validator's input layout)."""
    length = cases.shape[1]
    beats = -(-length // lanes)
    padded = numpy.zeros((len(cases), beats * lanes), dtype=numpy.uint8)
    padded[:, :length] = cases
    data = padded.reshape(-1, lanes).view("<u4").reshape(-1).astype(numpy.uint64)
    counts = numpy.tile(numpy.array([lanes] * (beats - 1) + [length - lanes * (beats - 1)],
                                    dtype=numpy.uint64), len(cases))
    lasts = numpy.tile(numpy.array([0] * (beats - 1) + [1], dtype=numpy.uint64), len(cases))
    layout = byte_beat_layout(lanes)
    items = data | (counts << numpy.uint64(layout["count"].offset)) | \
        (lasts << numpy.uint64(layout["last"].offset))
    return items.astype("<u8").tobytes()


def verdict_fields(raw, out_bytes):
    """The validator's verdicts (``out_bytes`` little-endian bytes each) as arrays by field."""
    words = numpy.frombuffer(raw, dtype="<u8").reshape(-1, out_bytes // 8)
    fields = {}
    for name, field in engines._VERDICT:
        offset, width = field.offset, field.width
        low = words[:, offset // 64] >> numpy.uint64(offset % 64)
        if offset % 64 + width > 64:
            low = low | (words[:, offset // 64 + 1] << numpy.uint64(64 - offset % 64))
        fields[name] = (low & numpy.uint64((1 << width) - 1)).astype(numpy.int64)
    return fields


@pytest.mark.parametrize("shift", [0, 2])
def test_four_lane_validator_every_short_message(shift):
    # Every message of one or two bytes and every three-byte one after one of LEADS, each after
    # `shift` ASCII bytes (with 2, three-byte cases straddle two beats): the verdict equals
    # CPython's (valid, offset of the first maximal subpart, their number).
    model = engines.compiled_model("validator", lanes=4)
    groups = [numpy.arange(256, dtype=numpy.uint8).reshape(-1, 1),
              numpy.array(list(itertools.product(range(256), repeat=2)), dtype=numpy.uint8),
              lead_triples(LEADS)]
    for cases in groups:
        cases = cases[~(cases == 0x0A).any(axis=1)]   # the newline separates cases for CPython
        cases = numpy.concatenate([numpy.full((len(cases), shift), 0x41, numpy.uint8), cases],
                                  axis=1)
        result = model.run(pack_messages(cases, 4), in_bytes=8, auto_last=False, lanes=False)
        got = verdict_fields(result.data, model.out_bytes)
        assert len(got["last"]) == len(cases) and got["last"].all()
        valid, first, errors = cpython_verdicts(cases)
        assert numpy.array_equal(got["valid"] == 1, valid)
        assert numpy.array_equal(got["errors"], errors)
        assert numpy.array_equal(numpy.where(valid, 0, got["offset"]), numpy.where(valid, 0, first))
