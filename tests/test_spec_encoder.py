"""The formal proofs' encoder specification model (``formal/spec_encoder.py``) against the
reference model and CPython, in simulation."""

import random

import pytest
from amaranth.sim import Simulator

from utf8_gateware.sim.testbench import run_simulation

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim import reference
from utf8_gateware.formal.spec_encoder import SpecEncoder


ERRORS = ("replace", "strict", "surrogateescape")
EDGES = [0x00, 0x41, 0x7F, 0x80, 0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF, 0xD800, 0xDBFF, 0xDC00,
         0xDC7F, 0xDC80, 0xDCFF, 0xDD00, 0xDFFF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x3FFFF,
         0x40000, 0xFFFFF, 0x100000, 0x10FFFF, 0x110000, 0x1FFFFF, 0x200000, 0x7FFFFFFF,
         0x80000000, 0xFFFFFFFF, 0x10DC80, 0x1DC80, 0xFFFF_DC80]


def run_spec(errors, units):
    """Feed ``units`` (each with ``last`` on odd positions) one per cycle; returns the beats of
    each as a list of ``(data, ErrorKind, last)``."""
    dut = SpecEncoder(errors)
    i_bits, o_bits = dut.i.payload.as_value(), dut.o.as_value()
    assert (len(i_bits), len(o_bits)) == (33, 3 + 12 * 4)
    results = []

    async def testbench(ctx):
        ctx.set(dut.i.valid, 1)
        for index, unit in enumerate(units):
            ctx.set(i_bits, unit | (index & 1) << 32)
            o = ctx.get(o_bits)
            beats = []
            for item in range(o & 7):
                bits = o >> (3 + 12 * item)
                beats.append((bits & 0xFF, ErrorKind((bits >> 8) & 7), bool(bits >> 11 & 1)))
            results.append(beats)
            await ctx.delay(1e-8)  # combinational: no clock
        ctx.set(dut.i.valid, 0)
        assert ctx.get(dut.o.count) == 0

    sim = Simulator(dut)
    sim.add_testbench(testbench)
    run_simulation(sim, f"spec-encoder-{errors}")
    return results


def expected(unit, errors, last):
    data, kind = reference.encode_unit(unit, errors)
    if not data:  # strict: the marker beat
        return [(0, kind, last)]
    return [(byte, kind if index == 0 else ErrorKind.NONE, last and index == len(data) - 1)
            for index, byte in enumerate(data)]


@pytest.mark.parametrize("errors", ERRORS)
def test_units(errors):
    rng = random.Random(f"spec-encoder-{errors}")
    units = EDGES + [rng.randrange(1 << 32) for _ in range(200)] + \
        [rng.randrange(0x110000) for _ in range(400)] + \
        [rng.randrange(0xD700, 0xE100) for _ in range(200)]
    for index, (unit, beats) in enumerate(zip(units, run_spec(errors, units))):
        assert beats == expected(unit, errors, bool(index & 1)), hex(unit)
        if 0 <= unit < 0x110000 and not 0xD800 <= unit <= 0xDFFF:
            assert bytes(data for data, _, _ in beats) == chr(unit).encode("utf-8")


def test_parameters():
    with pytest.raises(ValueError, match="errors must be"):
        SpecEncoder("ignore")
    with pytest.raises(TypeError, match="errors must be a string"):
        SpecEncoder(1)
