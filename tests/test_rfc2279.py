# amaranth: UnusedElaboratable=no
"""RFC 2279 in gateware: ``Utf8Decoder(encoding="utf-8-rfc2279")``
(:class:`~utf8_gateware.hdl.rfc2279_decoder.Rfc2279Decoder`) and
``Utf8Encoder(encoding="utf-8-rfc2279")`` (:class:`~utf8_gateware.hdl.rfc2279_encoder.
Rfc2279Encoder`) against the reference model (``utf8_gateware.sim.encodings``), and the engines.

The family tests (tests/test_decoder_family.py, tests/test_encoder_family.py) run these cores
too: reset, message boundaries, worst cases at full rate, the rfc2279/ corpus, boundaries and
random units. Here: streams rich in 5- and 6-byte forms, their overlong and cut forms;
the shortest form of values sampled at every length boundary up to 0x7FFFFFFF, through the
encoder and back through the decoder; the encoder at one byte per cycle on 6-byte forms; and
(``exhaustive``, compiled) every message of one and two bytes and every long lead with every
second byte; (``formal``) encoder then decoder is the identity on values below 0x80000000
(:mod:`utf8_gateware.formal.rfc2279`).
"""

import itertools
import random

import numpy
import pytest

from utf8_gateware.formal import rfc2279 as rfc2279_proofs, runner as formal
from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.encoder import Utf8Encoder
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.layouts import WideCodepointLayout
from utf8_gateware.sim import compiled, encodings, engines
from utf8_gateware.sim.encodings.rfc2279 import RFC2279_LENGTH_LIMITS
from utf8_gateware.sim.reference import sequence_bytes
from utf8_gateware.sim.testbench import run_full_rate, run_stream
from proofs import assert_proved


ENCODING = "utf-8-rfc2279"


def form(value, length):
    """``value`` in ``length`` bytes of the bit distribution (overlong if longer than its
    shortest form)."""
    return sequence_bytes(value, length)


def values_of(length, rng, count):
    """``count`` values whose shortest form has ``length`` bytes: both ends, and random."""
    low = RFC2279_LENGTH_LIMITS[length - 2] if length > 1 else 0
    high = RFC2279_LENGTH_LIMITS[length - 1] - 1
    return [low, high] + [rng.randint(low, high) for _ in range(count - 2)]


def random_piece(rng):
    """A well-formed form (5 and 6 bytes more often), an overlong one, a cut one, a stray
    continuation byte, FE/FF, C0/C1 or ASCII."""
    length = rng.choice([1, 2, 3, 4, 5, 5, 6, 6])
    value = rng.choice(values_of(length, rng, 3))
    whole = form(value, length)
    return rng.choice([
        lambda: whole,
        lambda: whole,
        lambda: form(value, min(6, length + 1)),          # overlong
        lambda: whole[:rng.randrange(1, max(2, length))],   # cut short
        lambda: bytes([rng.randrange(0x80, 0xC0)]),
        lambda: bytes([rng.choice([0xFE, 0xFF, 0xC0, 0xC1])]),
        lambda: bytes([rng.randrange(0x80)]),
    ])()


def random_messages(rng, count):
    return [b"".join(random_piece(rng) for _ in range(rng.randrange(1, 8)))
            for _ in range(count)]


def items(messages):
    return [{"data": byte, "last": int(k == len(message) - 1)}
            for message in messages for k, byte in enumerate(message)]


def model(messages):
    out = []
    for message in messages:
        decoded = encodings.decode(message, ENCODING)
        out += [(d.codepoint, d.error, int(k == len(decoded) - 1)) for k, d in enumerate(decoded)]
    return out


def outputs(run):
    return [(int(p.codepoint), ErrorKind(p.error), int(p.last)) for p in run.outputs]


# --- decoder -------------------------------------------------------------------------------------

def test_decoder_ports():
    dut = Utf8Decoder(encoding=ENCODING)
    assert dut.o.payload.shape() == WideCodepointLayout
    assert WideCodepointLayout["codepoint"].width == 31


@pytest.mark.parametrize("seed, gap, stall", [(0, 0.0, 0.0), (1, 0.3, 0.3), (2, 0.6, 0.2)])
def test_decoder_random_streams(seed, gap, stall):
    # 5- and 6-byte forms, overlong forms of every length, cut forms, FE/FF, stray
    # continuation bytes; with source gaps and sink stalls, the stream rules checked.
    rng = random.Random(f"rfc2279-{seed}")
    messages = random_messages(rng, 60)
    run = run_stream(Utf8Decoder(encoding=ENCODING), items(messages), gap=gap, stall=stall,
                     seed=seed, name=f"rfc2279-decoder-random{seed}")
    assert outputs(run) == model(messages)


def test_shortest_forms_round_trip():
    # Values at both ends of every length and random ones up to 0x7FFFFFFF: the encoder
    # writes the model's bytes, the decoder gives the values back; and 0x80000000 and more are
    # TOO_LARGE.
    rng = random.Random("round trip")
    values = [v for length in range(1, 7) for v in values_of(length, rng, 12)]
    encoded = engines.encode(values, "strict", "python", encoding=ENCODING, gaps=0.2,
                             stalls=0.2)
    assert (encoded.data, encoded.errors) == tuple(encodings.encode(values, ENCODING, "strict"))
    decoded = engines.decode(encoded.data, engine="python", encoding=ENCODING, gaps=0.2,
                             stalls=0.2)
    assert [(d.codepoint, d.error) for d in decoded.outputs] == \
        [(v, ErrorKind.NONE) for v in values]
    large = [0x7FFFFFFF, 0x80000000, 0x41, 0xFFFFFFFF]
    for errors in ("replace", "strict"):
        run = engines.encode(large, errors, "python", encoding=ENCODING)
        assert (run.data, run.errors) == tuple(encodings.encode(large, ENCODING, errors))
        assert run.errors == [(1, ErrorKind.TOO_LARGE), (3, ErrorKind.TOO_LARGE)]


def test_decoder_throughput_and_latency():
    # One byte per cycle on 6-byte forms, cut forms whose last byte has an output of its own
    # (two outputs for one byte) and overlong leads; each output within LATENCY of its byte.
    dut = Utf8Decoder(encoding=ENCODING)
    messages = [bytes.fromhex(h) * 8 for h in
                ("fdbfbfbfbfbf", "fc848080804141", "f8888080fe", "fc83", "41")]
    run = run_full_rate(dut, items(messages), idle=4 * dut.LATENCY, name="rfc2279-rate")
    assert outputs(run) == model(messages)
    assert run.ready_low == 0
    assert run.in_cycles == list(range(run.in_cycles[0], run.in_cycles[0] + len(run.in_cycles)))
    assert run.out_cycles[-1] - run.in_cycles[-1] == dut.LATENCY


# --- encoder -------------------------------------------------------------------------------------

@pytest.mark.parametrize("errors", ["replace", "strict"])
def test_encoder_one_byte_per_cycle(errors):
    # 6-byte forms, too large units and ASCII back to back: the bytes come out one per cycle
    # with no idle cycle, the first LATENCY cycles after the first unit.
    units = [0x7FFFFFFF, 0x4000000, 0x80000000, 0x41, 0x3FFFFFF, 0xFFFFFFFF, 0x200000] * 6
    want = encodings.encode(units, ENCODING, errors)
    dut = Utf8Encoder(errors, encoding=ENCODING)
    run = run_full_rate(dut, [{"codepoint": u, "last": 0} for u in units], idle=32,
                        name=f"rfc2279-encoder-rate-{errors}")
    beats = len(want.data) + (len(want.errors) if errors == "strict" else 0)
    assert len(run.out_cycles) == beats
    assert run.out_cycles == list(range(run.out_cycles[0], run.out_cycles[0] + beats))
    assert run.out_cycles[0] - run.in_cycles[0] == dut.LATENCY
    data = bytes(int(p.data) for p in run.outputs
                 if not (errors == "strict" and ErrorKind(p.error) is not ErrorKind.NONE))
    assert data == want.data


# --- engines -------------------------------------------------------------------------------------

@pytest.mark.skipif(not compiled.have_compiler(), reason="no C++ compiler for the compiled "
                                                         "simulation")
def test_compiled_engine():
    # The compiled model's 35-bit outputs (8 bytes each through the driver), against the
    # model. (The encoder's beats are those of every encoder; its compiled path is the CLI's.)
    rng = random.Random("compiled")
    data = b"".join(random_messages(rng, 40))
    run = engines.decode(data, engine="compiled", encoding=ENCODING, gaps=0.2, stalls=0.2)
    assert [(d.codepoint, d.error) for d in run.outputs] == \
        [(d.codepoint, d.error) for d in encodings.decode(data, ENCODING)]


# --- exhaustive (compiled) -----------------------------------------------------------------------

TAILS = bytes([0x00, 0x41, 0x80, 0x83, 0x84, 0x87, 0x88, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0,
               0xC2, 0xE0, 0xF0, 0xF8, 0xFC, 0xFD, 0xFE, 0xFF])


def sweep_messages():
    """Every message of one and two bytes; every lead F8..FD with every second byte and four
    sampled bytes after it (a whole 5- or 6-byte form, or one cut or broken)."""
    rng = random.Random("sweep")
    messages = [bytes([byte]) for byte in range(256)]
    messages += [bytes(pair) for pair in itertools.product(range(256), repeat=2)]
    for lead, second in itertools.product(range(0xF8, 0xFE), range(256)):
        tail = [rng.choice([rng.randrange(0x80, 0xC0), rng.choice(TAILS)]) for _ in range(4)]
        messages.append(bytes([lead, second, *tail]))
    return messages


@pytest.mark.exhaustive
@pytest.mark.skipif(not compiled.have_compiler(), reason="no C++ compiler for the compiled "
                                                         "simulation")
def test_sweep():
    model_ = engines.compiled_model("decoder", "replace", encoding=ENCODING)   # as the engine's
    messages = sweep_messages()
    items_ = numpy.array([byte | int(k == len(message) - 1) << 8
                          for message in messages for k, byte in enumerate(message)],
                         dtype="<u2")
    result = model_.run(items_.tobytes(), in_bytes=2, auto_last=False)
    assert model_.out_bytes == 8
    got = numpy.frombuffer(result.data, dtype="<u8") & ((1 << WideCodepointLayout.size) - 1)
    error_at = WideCodepointLayout["error"].offset
    last_at = WideCodepointLayout["last"].offset
    want = numpy.array([d.codepoint | d.error.value << error_at | int(k == len(out) - 1) << last_at
                        for message in messages
                        for out in [encodings.decode(message, ENCODING)]
                        for k, d in enumerate(out)], dtype="<u8")
    assert got.shape == want.shape
    differ = numpy.flatnonzero(got != want)
    assert not differ.size, f"first difference at output {differ[0]}: " \
                            f"{hex(got[differ[0]])}, model {hex(want[differ[0]])}"
    assert result.cycles <= len(items_) + Utf8Decoder.latency(encoding=ENCODING) + 8


# --- formal --------------------------------------------------------------------------------------

@pytest.mark.formal
@pytest.mark.parametrize("proof", rfc2279_proofs.PROOFS, ids=lambda proof: proof.name)
def test_proof(proof, tmp_path):
    results = formal.run_many(proof.jobs(), workdir=tmp_path, max_workers=1)
    assert_proved(results, proof.name)
