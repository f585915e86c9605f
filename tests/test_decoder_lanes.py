# amaranth: UnusedElaboratable=no
"""The decoder with N > 1 lanes, checked against the reference model.

The contract (see :class:`Utf8Decoder`): read in lane order and then beat order, the valid output
lanes are exactly the one-lane decoder's outputs, with ``last`` on the beat that holds a
message's final output; any input beat may be partial; nothing is lost, duplicated or reordered
under any backpressure; a stream of full beats is taken one beat every cycle.

Every run goes through :func:`run_stream`, whose monitor checks the stream rules on the output
every cycle and dumps a waveform of a failing case.
"""

import random

import pytest

from utf8_gateware.hdl.decoder import LANES, Utf8Decoder
from utf8_gateware.hdl.error_kind import DECODE_ERRORS, ErrorKind
from utf8_gateware.sim import reference
from utf8_gateware.sim.testbench import run_stream

from corpora import decode_cases


WIDE = [lanes for lanes in LANES if lanes > 1]

#: Bytes that reach every branch of the grammar: ASCII, each continuation range's edges, every
#: lead class (C0/C1, E0, ED, F0, F4, F5..FF).
ALPHABET = bytes([0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
                  0xE0, 0xE1, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFE, 0xFF])


def beats(messages, lanes, rng=None):
    """Input beats carrying ``messages``: full beats, or (with ``rng``) beats of random counts
    1..N; lane 0 is the first byte; the lanes past ``count`` hold junk, which must be ignored."""
    out = []
    for message in messages:
        position = 0
        while position < len(message):
            count = min(rng.randint(1, lanes) if rng else lanes, len(message) - position)
            chunk = message[position:position + count]
            position += count
            junk = bytes((rng or random).choice(ALPHABET) for _ in range(lanes - count))
            out.append({"data": int.from_bytes(chunk + junk, "little"), "count": count,
                        "last": int(position == len(message))})
    return out


def flatten(outputs):
    """``(codepoint, ErrorKind, last)`` of each valid output lane, in lane and beat order;
    ``last`` on the final valid lane of a beat with ``last``."""
    result = []
    for beat in outputs:
        valid = [lane for lane in beat.lanes if lane.valid]
        assert valid or not beat.last, "a beat with last has no valid lane"
        result += [(int(lane.codepoint), ErrorKind(lane.error), 0) for lane in valid]
        if beat.last:
            result[-1] = result[-1][:2] + (1,)
    return result


def expected(messages, errors):
    out = []
    for message in messages:
        decoded = reference.decode(message, errors)
        out += [(d.codepoint, d.error, int(n == len(decoded) - 1)) for n, d in enumerate(decoded)]
    return out


def check(errors, lanes, messages, *, rng=None, name, **kwargs):
    run = run_stream(Utf8Decoder(errors, lanes=lanes), beats(messages, lanes, rng),
                     name=name, **kwargs)
    got, want = flatten(run.outputs), expected(messages, errors)
    assert got == want, f"{name}: first difference at output " \
        f"{next(n for n, (g, w) in enumerate(zip(got + [None], want + [None])) if g != w)}"
    return run


def test_parameters():
    for lanes in LANES:
        assert Utf8Decoder(lanes=lanes).lanes == lanes
    with pytest.raises(ValueError, match=r"^lanes must be one of 1, 2, 4, 8, 16, not 3$"):
        Utf8Decoder(lanes=3)
    with pytest.raises(TypeError, match=r"^lanes must be an integer, not '4'$"):
        Utf8Decoder(lanes="4")
    # The one-lane decoder keeps its ports; a wide one has count and lanes.
    assert set(Utf8Decoder().i.payload.shape().members) == {"data", "last"}
    wide = Utf8Decoder(lanes=4)
    assert set(wide.i.payload.shape().members) == {"data", "count", "last"}
    assert len(wide.o.payload.lanes) == 4


@pytest.mark.parametrize("errors", DECODE_ERRORS)
@pytest.mark.parametrize("lanes", WIDE)
def test_random_streams(errors, lanes):
    # Short messages of the grammar's bytes, partial or full beats, with and without gaps at
    # the source and backpressure at the sink.
    rng = random.Random(lanes * 7 + len(errors))
    for trial in range(6):
        messages = [bytes(rng.choice(ALPHABET) for _ in range(rng.randint(1, 3 * lanes)))
                    for _ in range(rng.randint(4, 12))]
        check(errors, lanes, messages, rng=rng if trial % 2 else None,
              gap=(0, 0.3)[trial % 3 == 2], stall=(0, 0.5)[trial >= 3], seed=trial,
              name=f"lanes{lanes}-{errors}-random{trial}")


@pytest.mark.parametrize("errors", DECODE_ERRORS)
@pytest.mark.parametrize("lanes", [4, 16])
def test_corpora(errors, lanes):
    # Every corpus decoding case as one message, in partial beats under backpressure.
    messages = [case.data for case in decode_cases() if case.data]
    if not messages:
        pytest.skip("../shared/corpora is absent: no corpus cases to run")
    check(errors, lanes, messages, rng=random.Random(lanes), stall=0.2, seed=lanes,
          name=f"lanes{lanes}-{errors}-corpora")


@pytest.mark.parametrize("errors", DECODE_ERRORS)
@pytest.mark.parametrize("lanes", WIDE)
def test_every_split_of_a_sequence(errors, lanes):
    # Each sequence of up to four bytes of the alphabet's interesting leads, split across a
    # beat boundary at every position: the look-back across beats.
    rng = random.Random(lanes)
    seqs = [b"\xf0\x9f\x98\x80", b"\xf4\x8f\xbf\xbf", b"\xed\x9f\xbf", b"\xed\xa0\x80",
            b"\xe0\xa0\x80", b"\xe0\x9f\x80", b"\xf0\x8f\x80\x80", b"\xc2\x80", b"\xf0\x90\x80"]
    messages = []
    for seq in seqs:
        for pad in range(lanes):
            messages.append(b"a" * pad + seq + b"z")
    check(errors, lanes, messages, rng=None, name=f"lanes{lanes}-{errors}-splits")
    check(errors, lanes, messages, rng=rng, stall=0.3, seed=1,
          name=f"lanes{lanes}-{errors}-splits-partial")


@pytest.mark.parametrize("errors", DECODE_ERRORS)
@pytest.mark.parametrize("lanes", WIDE)
def test_throughput(errors, lanes):
    # Full beats at full rate into an always-ready sink: one beat every cycle once started,
    # the input never refused, and the last output within LATENCY cycles of the last input.
    rng = random.Random(3)
    message = bytes(rng.choice(ALPHABET) for _ in range(24 * lanes))
    run = check(errors, lanes, [message], name=f"lanes{lanes}-{errors}-throughput")
    first = run.in_cycles[0]
    assert run.in_cycles == list(range(first, first + 24))
    dut = Utf8Decoder(errors, lanes=lanes)
    assert run.out_cycles[-1] - run.in_cycles[-1] <= dut.LATENCY


@pytest.mark.parametrize("errors", DECODE_ERRORS)
@pytest.mark.parametrize("lanes", WIDE)
def test_latency_is_exact(errors, lanes):
    # LATENCY is the exact delay, not a bound: the final output of a message whose last byte
    # completes everything appears LATENCY cycles after that byte's transfer.
    run = check(errors, lanes, [b"a" * (2 * lanes) + b"\xe2\x82\xac"],
                name=f"lanes{lanes}-{errors}-latency")
    assert run.out_cycles[-1] - run.in_cycles[-1] == Utf8Decoder(errors, lanes=lanes).LATENCY
