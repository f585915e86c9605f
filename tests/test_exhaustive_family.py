"""Exhaustive sweeps of ``Utf8Decoder(encoding=...)`` for the UTF-8 family through the compiled
simulation, against the reference model (``utf8_gateware.sim.encodings``) output by output:
code point, error kind and ``last``.

Each sweep is one run of many messages (every item carries its own ``last``), so a difference
can neither hide in the next case nor come from a case before it. The sweeps: every lead byte
with every second byte and a sampled tail; every 3-byte window after ED (the surrogate
sequences, and everything that breaks them) followed by a sampled sequence (another
surrogate, ASCII, a cut lead, a mark); with ``utf-8-sig`` every message that starts with EF and
two more bytes. The run also shows one byte per cycle: the cycles are the bytes plus at most the
latency and the start-up.

Cost (measured with ``time`` on the shared development machine): 17 s of processor time for
the six encodings and policies once the compiled models are cached; a cold build adds about 15 s
each.
"""

import itertools
import random

import numpy
import pytest

from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.decoder_family import DECODER_ENCODINGS, OWN_CORES, decoder_policies
from utf8_gateware.hdl.layouts import CodepointLayout
from utf8_gateware.sim import compiled, encodings


pytestmark = [
    pytest.mark.exhaustive,
    pytest.mark.skipif(not compiled.have_compiler(), reason="no C++ compiler for the compiled "
                                                            "simulation"),
]

#: (``utf-8-rfc2279``'s own core has its sweep in tests/test_rfc2279.py.)
CASES = [(encoding, errors) for encoding in DECODER_ENCODINGS
         if encoding != "utf-8" and encoding not in OWN_CORES
         for errors in decoder_policies(encoding)]

EDGE = bytes([0x00, 0x41, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xAF, 0xB0, 0xBF, 0xC0, 0xC1, 0xC2,
              0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF])
AFTER = [bytes.fromhex(h) for h in ("eda080", "edb080", "edbfbf", "41", "ed", "eda0", "efbbbf",
                                    "c080", "f09f9880", "80")]


def messages_for(encoding):
    rng = random.Random(encoding)
    messages = [bytes([lead, second, *rng.choices(EDGE, k=rng.randint(0, 3))])
                for lead, second in itertools.product(range(256), repeat=2)]
    messages += [bytes([0xED, second, third]) + rng.choice(AFTER)
                 for second, third in itertools.product(range(256), repeat=2)]
    if encoding == "utf-8-sig":
        messages += [bytes([0xEF, second, third, *rng.choices(EDGE, k=rng.randint(0, 2))])
                     for second, third in itertools.product(range(256), repeat=2)]
    return messages


def expected(messages, encoding, errors):
    """The model's outputs as one array of :data:`CodepointLayout` words."""
    words = []
    for message in messages:
        decoded = encodings.decode(message, encoding, errors)
        words += [d.codepoint | d.error.value << 21 | int(k == len(decoded) - 1) << 24
                  for k, d in enumerate(decoded)]
    return numpy.array(words, dtype="<u4")


@pytest.mark.parametrize("encoding, errors", CASES)
def test_sweep(encoding, errors):
    assert CodepointLayout.size == 25
    dut = Utf8Decoder(errors, encoding=encoding)
    model = compiled.build_stream_model(dut, f"decoder-{encoding}-{errors}")
    messages = messages_for(encoding)
    items = numpy.array([byte | int(k == len(message) - 1) << 8
                         for message in messages for k, byte in enumerate(message)],
                        dtype="<u2")
    result = model.run(items.tobytes(), in_bytes=2, auto_last=False)
    got = numpy.frombuffer(result.data, dtype="<u4") & ((1 << 25) - 1)
    want = expected(messages, encoding, errors)
    if got.shape != want.shape or not numpy.array_equal(got, want):
        length = min(len(got), len(want))
        first = int(numpy.argmax(got[:length] != want[:length])) \
            if not numpy.array_equal(got[:length], want[:length]) else length
        raise AssertionError(
            f"{encoding} {errors}: {len(got)} outputs, model {len(want)}; first difference at "
            f"output {first}: gateware {[hex(v) for v in got[first:first + 4]]}, model "
            f"{[hex(v) for v in want[first:first + 4]]}")
    assert result.cycles <= len(items) + dut.LATENCY + 8
