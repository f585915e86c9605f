# amaranth: UnusedElaboratable=no
"""The streaming UTF-8 encoder (:class:`utf8_gateware.hdl.encoder.Utf8Encoder`) in Amaranth's
Python simulator, beat by beat against the reference model and CPython's codec.

The exhaustive sweep over every code point runs on the compiled engine:
``tests/test_compiled.py::test_compiled_encoder_every_code_point`` (marked ``exhaustive``).
"""

import random

import pytest

from utf8_gateware.hdl.encoder import ENCODE_ERRORS, Utf8Encoder
from utf8_gateware.hdl.utf8_shift_encoder import Utf8ShiftEncoder
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim import reference
from utf8_gateware.sim.testbench import run_stream


#: Cycles from the cycle of an input transfer to the cycle its first byte is valid on ``o``.
#: Cycles from a unit's transfer to its first byte, per error policy.
LATENCY = {errors: Utf8Encoder(errors).LATENCY for errors in ENCODE_ERRORS}

#: Units the encoder takes ahead of the one whose bytes it writes: the three unit stages of the
#: shift encoder.
AHEAD = {errors: 3 for errors in ENCODE_ERRORS}

BOUNDARIES = [
    0x0, 0x1, 0x41, 0x7F, 0x80, 0x81, 0xFF, 0x100, 0x7FF, 0x800, 0x801, 0xFFF, 0x1000,
    0xCFFF, 0xD000, 0xD7FF, 0xD800, 0xD801, 0xDBFF, 0xDC00, 0xDC7F, 0xDC80, 0xDCFF, 0xDD00,
    0xDFFF, 0xE000, 0xFFFD, 0xFFFE, 0xFFFF, 0x10000, 0x3FFFF, 0x40000, 0xFFFFF, 0x100000,
    0x10FFFF, 0x110000, 0x110001, 0x11FFFF, 0x120000, 0x1FFFFF, 0x200000, 0x3FFFFF,
    0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF,
    # A value outside the BMP with the low 16 bits of a surrogate, an escape or ASCII.
    0x1D800, 0x1DC80, 0x10DC80, 0x110041, 0x100041, 0x1000DC80, 0x8000DC80,
]


def random_unit(rng):
    """A code unit from a random class (each class about equally likely)."""
    return rng.choice([
        lambda: rng.randrange(0x80),
        lambda: rng.randrange(0x80, 0x800),
        lambda: rng.randrange(0x800, 0x10000),
        lambda: rng.randrange(0x10000, 0x110000),
        lambda: rng.randrange(0xD800, 0xE000),
        lambda: rng.randrange(0xDC80, 0xDD00),
        lambda: rng.randrange(0x110000, 0x200000),
        lambda: rng.getrandbits(32),
        lambda: rng.choice(BOUNDARIES),
    ])()


def expected_beats(units, lasts, errors):
    """The beats ``(data, error, last)`` the encoder must produce, from the reference model."""
    beats = []
    for unit, last in zip(units, lasts):
        data, kind = reference.encode_unit(unit, errors)
        if errors == "strict" and kind is not ErrorKind.NONE:
            unit_beats = [(0, kind, 0)]                          # the marker beat
        else:
            unit_beats = [(byte, kind if index == 0 else ErrorKind.NONE, 0)
                          for index, byte in enumerate(data)]
        if last:
            unit_beats[-1] = (*unit_beats[-1][:2], 1)
        beats += unit_beats
    return beats


def encode_beats(units, lasts=None, errors="replace", **kwargs):
    """Run ``units`` through the encoder; returns the output beats and the :class:`StreamRun`."""
    if lasts is None:
        lasts = [0] * (len(units) - 1) + [1]
    items = [{"codepoint": unit, "last": last} for unit, last in zip(units, lasts)]
    run = run_stream(Utf8Encoder(errors), items, **kwargs)
    beats = [(int(p.data), ErrorKind(p.error), int(p.last)) for p in run.outputs]
    return beats, run


def beats_to_encoded(beats, units, errors):
    """``(data, [(unit index, kind)])`` of ``beats``, to compare with ``reference.encode``."""
    data, found, position = bytearray(), [], 0
    starts = []                     # first beat of every unit
    for unit in units:
        starts.append(position)
        _, kind = reference.encode_unit(unit, errors)
        position += 1 if errors == "strict" and kind is not ErrorKind.NONE else \
            len(reference.encode_unit(unit, errors)[0])
    for index, (byte, kind, _) in enumerate(beats):
        if kind is not ErrorKind.NONE:
            found.append((starts.index(index), kind))
            if errors == "strict":
                continue
        data.append(byte)
    return bytes(data), found


# -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("errors", ENCODE_ERRORS)
def test_boundaries(errors):
    """Every range boundary and a sample of random 32-bit values, beat by beat."""
    rng = random.Random(f"boundaries-{errors}")
    units = BOUNDARIES + [rng.getrandbits(32) for _ in range(16)] + \
        [rng.randrange(0x110000) for _ in range(16)]
    beats, _ = encode_beats(units, errors=errors)
    assert beats == expected_beats(units, [0] * (len(units) - 1) + [1], errors)
    assert beats_to_encoded(beats, units, errors) == tuple(reference.encode(units, errors))


@pytest.mark.parametrize("errors", ENCODE_ERRORS)
def test_cpython(errors):
    """Scalar values encode as CPython encodes them; errors as its handlers would."""
    rng = random.Random(f"cpython-{errors}")
    scalars = [u for u in BOUNDARIES if u < 0x110000 and not 0xD800 <= u <= 0xDFFF]
    scalars += [rng.randrange(0x110000) for _ in range(32)]
    scalars = [u for u in scalars if not 0xD800 <= u <= 0xDFFF]
    beats, _ = encode_beats(scalars, errors=errors)
    data, found = beats_to_encoded(beats, scalars, errors)
    assert data == "".join(map(chr, scalars)).encode("utf-8")
    assert found == []
    surrogates = [0xD800, 0xDBFF, 0xDC00, 0xDC7F, 0xDC80, 0xDCFF, 0xDD00, 0xDFFF]
    beats, _ = encode_beats(surrogates, errors=errors)
    data, found = beats_to_encoded(beats, surrogates, errors)
    text = "".join(map(chr, surrogates))
    if errors == "replace":
        assert data == text.encode("utf-8", "replace").replace(b"?", "\ufffd".encode())
    elif errors == "surrogateescape":
        escaped = [u for u in surrogates if 0xDC80 <= u <= 0xDCFF]
        assert data == b"".join(
            chr(u).encode("utf-8", "surrogateescape") if u in escaped else "\ufffd".encode()
            for u in surrogates)
    else:
        assert data == b""
    assert all(kind is ErrorKind.SURROGATE for _, kind in found)


@pytest.mark.parametrize("errors", ENCODE_ERRORS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_streams(errors, seed):
    """Random units in random messages, with source gaps and sink stalls."""
    rng = random.Random(f"random-{errors}-{seed}")
    units = [random_unit(rng) for _ in range(500)]
    lasts = [int(rng.random() < 0.1) for _ in units[:-1]] + [1]
    gap, stall = [(0.3, 0.3), (0.1, 0.6), (0.6, 0.1)][seed - 1]
    beats, _ = encode_beats(units, lasts, errors, gap=gap, stall=stall, seed=seed)
    assert beats == expected_beats(units, lasts, errors)


@pytest.mark.parametrize("errors", ENCODE_ERRORS)
def test_every_unit_its_own_message(errors):
    """`last` on every unit: exactly one `last` beat per unit, on its final beat."""
    units = [0x41, 0xE9, 0x20AC, 0x1F600, 0xD800, 0xDC80, 0x110000, 0xFFFFFFFF, 0x7F]
    lasts = [1] * len(units)
    beats, _ = encode_beats(units, lasts, errors, stall=0.3, seed=5)
    assert beats == expected_beats(units, lasts, errors)
    assert sum(last for _, _, last in beats) == len(units)


@pytest.mark.parametrize("unit", [0xD800, 0xDFFF, 0xDC80, 0x110000, 0xFFFFFFFF])
def test_strict_invalid_last_unit(unit):
    """With strict, an invalid last unit still ends its message: its marker beat has `last`."""
    beats, _ = encode_beats([0x41, unit], errors="strict")
    kind = ErrorKind.SURROGATE if unit < 0x110000 else ErrorKind.TOO_LARGE
    assert beats == [(0x41, ErrorKind.NONE, 0), (0x00, kind, 1)]
    beats, _ = encode_beats([unit], errors="strict")
    assert beats == [(0x00, kind, 1)]


@pytest.mark.parametrize("errors", ENCODE_ERRORS)
def test_error_flag_on_first_beat_only(errors):
    beats, _ = encode_beats([0xD800, 0x110000], errors=errors)
    if errors == "strict":
        assert beats == [(0, ErrorKind.SURROGATE, 0), (0, ErrorKind.TOO_LARGE, 1)]
    else:
        assert beats == [(0xEF, ErrorKind.SURROGATE, 0), (0xBF, ErrorKind.NONE, 0),
                         (0xBD, ErrorKind.NONE, 0), (0xEF, ErrorKind.TOO_LARGE, 0),
                         (0xBF, ErrorKind.NONE, 0), (0xBD, ErrorKind.NONE, 1)]


@pytest.mark.parametrize("errors", ENCODE_ERRORS)
def test_pace(errors):
    """With input always available and the sink always ready, one byte comes out every cycle:
    the first LATENCY cycles after the first input transfer, then no idle cycle."""
    rng = random.Random(f"pace-{errors}")
    units = [rng.choice([rng.randrange(0x80), rng.randrange(0x80, 0x800),
                         rng.randrange(0x800, 0xD800), rng.randrange(0x10000, 0x110000)])
             for _ in range(120)]
    beats, run = encode_beats(units, errors=errors)
    assert beats == expected_beats(units, [0] * (len(units) - 1) + [1], errors)
    first, latency, ahead = run.in_cycles[0], LATENCY[errors], AHEAD[errors]
    assert run.out_cycles == list(range(first + latency, first + latency + len(beats)))
    assert run.cycles == latency + len(beats)
    # An n-byte character takes n cycles: the units ahead move up (and the next unit goes in)
    # in the cycle the last byte of unit k goes out of the byte register.
    lengths = [len(chr(unit).encode()) for unit in units]
    assert [cycle - first for cycle in run.in_cycles] == \
        list(range(ahead)) + [ahead + sum(lengths[:index])
                              for index in range(len(units) - ahead)]


def test_pace_ascii():
    """One ASCII unit per cycle in, one byte per cycle out."""
    units = list(range(0x20, 0x7F))
    beats, run = encode_beats(units)
    assert [byte for byte, _, _ in beats] == units
    first = run.in_cycles[0]
    assert run.in_cycles == list(range(first, first + len(units)))
    assert run.out_cycles == list(range(first + LATENCY["replace"],
                                        first + LATENCY["replace"] + len(units)))
    # Refused only before the first transfer: the shift encoder's `take` (i.ready) rises in the
    # second cycle after reset (its flip-flops start at 0, the iCE40's power-up state).
    assert run.ready_low == first == 2


def test_parameters():
    assert Utf8Encoder().errors == "replace"
    for errors in ENCODE_ERRORS:
        assert Utf8Encoder(errors).errors == errors
        assert Utf8Encoder(errors=errors).errors == errors
    assert ENCODE_ERRORS == reference.ENCODE_ERRORS
    with pytest.raises(ValueError, match="errors must be one of"):
        Utf8Encoder("ignore")
    with pytest.raises(ValueError, match="errors must be one of"):
        Utf8Encoder("Replace")
    with pytest.raises(TypeError, match="errors must be a string"):
        Utf8Encoder(None)
    with pytest.raises(TypeError, match="errors must be a string"):
        Utf8Encoder(b"replace")
    # The shift encoder takes only its own policies.
    with pytest.raises(ValueError, match="errors must be one of 'replace', 'strict'"):
        Utf8ShiftEncoder("ignore")
    with pytest.raises(ValueError, match="^encoding must be one of 'utf-8', 'utf-8-sig', "
                                         "'cesu-8', 'mutf-8', 'wtf-8', not 'utf-8-rfc2279'$"):
        Utf8ShiftEncoder(encoding="utf-8-rfc2279")
    with pytest.raises(ValueError, match="errors must be one of 'replace', 'strict'"):
        Utf8ShiftEncoder("surrogatepass", encoding="mutf-8")
    assert [Utf8Encoder(errors).LATENCY for errors in ENCODE_ERRORS] == [4, 4, 4]
    assert Utf8Encoder("surrogateescape", carry_error=True).LATENCY == 4  # the shift encoder too
    assert Utf8Encoder("replace", encoding="cesu-8").LATENCY == 4         # the shift encoder too
