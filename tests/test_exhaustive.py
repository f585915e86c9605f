"""Exhaustive sweeps of the decoder (and encoder -> decoder) through the compiled simulation.

Each sweep is fed as one long stream and checked against CPython's codec on the whole buffer
(CPython decodes a buffer in one call), so a sweep of millions of cases costs seconds. Every case
is followed by a newline, which always ends whatever the case left pending and starts a new
sequence, so no case can hide a difference in the next.

What is compared for every output: the code point; and, per sweep, the number of error outputs
(CPython's output with ``errors`` minus its output with ``"ignore"``: one per maximal subpart
with ``replace``, one per byte with ``surrogateescape``), and that exactly one output carries
``last``, the final one. The error *kinds* are compared with the reference model output by
output in the simulation tests and proven equal to the specification model formally.
"""

import itertools
import random

import numpy
import pytest

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


def decode_and_compare(data, errors):
    """Decode ``data`` (one message) with the compiled decoder and compare with CPython."""
    model = engines.compiled_model("decoder", errors)
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
    # The decoder takes one byte every cycle: the whole stream passes in bytes + latency cycles.
    assert result.cycles <= len(data) + 8
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
