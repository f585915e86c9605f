# amaranth: UnusedElaboratable=no
"""The UTF-16 byte stage of encoding (:class:`utf8_gateware.hdl.utf16_bytes.Utf16Bytes`), alone
and after :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder`, against the reference model's
``utf-16-le`` / ``utf-16-be`` encoders."""

import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.layouts import EncodedByteLayout, UnitLayout
from utf8_gateware.hdl.utf16_bytes import Utf16Bytes
from utf8_gateware.hdl.utf16_encoder import UTF16_ENCODE_ERRORS, Utf16Encoder
from utf8_gateware.hdl.utf16_units import BYTE_ORDERS
from utf8_gateware.sim.encodings.utf16 import encoded_beats
from utf8_gateware.sim.testbench import run_stream


class _Chain(wiring.Component):
    """Utf16Encoder -> Utf16Bytes: code points to UTF-16LE/BE bytes."""
    i: In(stream.Signature(UnitLayout))
    o: Out(stream.Signature(EncodedByteLayout))

    def __init__(self, errors, byteorder):
        self.errors, self.byteorder = errors, byteorder
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.encoder = encoder = Utf16Encoder(self.errors)
        m.submodules.bytes = stage = Utf16Bytes(self.byteorder)
        wiring.connect(m, wiring.flipped(self.i), encoder.i)
        wiring.connect(m, encoder.o, stage.i)
        wiring.connect(m, stage.o, wiring.flipped(self.o))
        return m


def expected_beats(codepoints, lasts, errors, byteorder):
    """``(byte, error, last)`` beats from the reference model's ``utf-16-le`` / ``-be`` encoder."""
    beats = []
    for codepoint, last in zip(codepoints, lasts):
        data = encoded_beats(codepoint, errors, byteorder, size=1)
        beats += [(byte, kind, int(last and index == len(data) - 1))
                  for index, (byte, kind) in enumerate(data)]
    return beats


@pytest.mark.parametrize("errors", UTF16_ENCODE_ERRORS)
@pytest.mark.parametrize("byteorder", BYTE_ORDERS)
def test_after_encoder(errors, byteorder):
    """Random code points (scalars, surrogates, values past U+10FFFF) in random messages, with
    source gaps and sink stalls."""
    rng = random.Random(f"utf16-bytes-{errors}-{byteorder}")
    codepoints = [rng.choice([rng.randrange(0xD800), rng.randrange(0xD800, 0xE000),
                              rng.randrange(0x10000, 0x110000), rng.getrandbits(32)])
                  for _ in range(200)]
    lasts = [int(rng.random() < 0.1) for _ in codepoints[:-1]] + [1]
    run = run_stream(_Chain(errors, byteorder),
                     [{"codepoint": cp, "last": last} for cp, last in zip(codepoints, lasts)],
                     gap=0.3, stall=0.3, seed=3)
    got = [(int(p.data), ErrorKind(p.error), int(p.last)) for p in run.outputs]
    assert got == expected_beats(codepoints, lasts, errors, byteorder)


def test_pace():
    """One byte every cycle: a unit goes in every second cycle, a marker beat (a unit of one
    beat) in one, and the first byte is out :attr:`LATENCY` cycles after the unit."""
    units = [{"unit": unit, "error": ErrorKind.NONE, "last": 0} for unit in range(0x41, 0x81)]
    for index in (3, 4, 9, 20, 21, 22, 40):        # marker beats, alone and in runs
        units[index] = {"unit": 0, "error": ErrorKind.TOO_LARGE, "last": index == 22}
    units[30]["error"] = ErrorKind.SURROGATE       # a flagged unit is two bytes
    units[-1]["last"] = 1
    run = run_stream(Utf16Bytes("big"), units)
    beats = [[(0, unit["error"])] if unit["unit"] == 0 else
             [(unit["unit"] >> 8, unit["error"]), (unit["unit"] & 0xFF, ErrorKind.NONE)]
             for unit in units]
    assert [(int(p.data), ErrorKind(p.error)) for p in run.outputs] == \
        [beat for unit in beats for beat in unit]
    first = run.in_cycles[0]
    assert run.out_cycles == list(range(first + Utf16Bytes.LATENCY,
                                        first + Utf16Bytes.LATENCY + len(run.outputs)))


@pytest.mark.parametrize("byteorder", BYTE_ORDERS)
def test_without_markers(byteorder):
    """``markers=False`` (no marker beat in: every unit two bytes, as the UTF-16 decoder's
    units are): random units and errors in random messages, with source gaps and sink stalls;
    then at full rate, a byte every cycle, the first :attr:`LATENCY` = 3 cycles after its
    unit."""
    rng = random.Random(f"utf16-bytes-units-{byteorder}")
    units = [{"unit": rng.randrange(1, 0x10000), "last": int(rng.random() < 0.2),
              "error": rng.choice([ErrorKind.NONE, ErrorKind.SURROGATE, ErrorKind.TRUNCATED])}
             for _ in range(150)]
    units[-1]["last"] = 1
    expected = []
    for unit in units:
        data = unit["unit"].to_bytes(2, byteorder)
        expected += [(data[0], unit["error"], 0), (data[1], ErrorKind.NONE, unit["last"])]
    for kwargs in ({"gap": 0.3, "stall": 0.3, "seed": 4}, {}):
        dut = Utf16Bytes(byteorder, markers=False)
        run = run_stream(dut, units, **kwargs)
        assert [(int(p.data), ErrorKind(p.error), int(p.last)) for p in run.outputs] == expected
    assert dut.LATENCY == Utf16Bytes.latency(markers=False) == 3
    first = run.in_cycles[0]
    assert run.out_cycles == list(range(first + 3, first + 3 + len(expected)))


def test_parameters():
    assert Utf16Bytes().byteorder == "little"
    assert Utf16Bytes().markers and Utf16Bytes.LATENCY == 5
    with pytest.raises(ValueError, match="byteorder must be one of"):
        Utf16Bytes("middle")
    with pytest.raises(TypeError, match="markers must be a bool, not None"):
        Utf16Bytes(markers=None)
