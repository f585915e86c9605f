# amaranth: UnusedElaboratable=no
"""The UTF-16 byte order stage (:class:`utf8_gateware.hdl.utf16_units.Utf16Units`) against the
reference model's ``CodeUnits`` stage and CPython."""

import random

import pytest

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.utf16_units import BYTE_ORDERS, Utf16Units
from utf8_gateware.sim.encodings.utf16 import CodeUnits
from utf8_gateware.sim.testbench import run_stream


def expected_beats(messages, byteorder):
    beats = []
    for message in messages:
        stage = CodeUnits(byteorder)
        pieces = stage.feed(message) + stage.finish()
        beats += [(0 if piece.value is None else piece.value, piece.kind,
                   int(index == len(pieces) - 1)) for index, piece in enumerate(pieces)]
    return beats


def units(messages, byteorder, **kwargs):
    items = [{"data": byte, "last": int(index == len(message) - 1)}
             for message in messages for index, byte in enumerate(message)]
    run = run_stream(Utf16Units(byteorder), items, **kwargs)
    return [(int(p.unit), ErrorKind(p.error), int(p.last)) for p in run.outputs], run


@pytest.mark.parametrize("byteorder", BYTE_ORDERS)
@pytest.mark.parametrize("seed", [1, 2])
def test_random_messages(byteorder, seed):
    """Messages of even and odd length (one byte too), with source gaps and sink stalls."""
    rng = random.Random(f"utf16-units-{byteorder}-{seed}")
    messages = [rng.randbytes(rng.randrange(1, 12)) for _ in range(80)]
    got, _ = units(messages, byteorder, gap=0.3, stall=0.3, seed=seed)
    assert got == expected_beats(messages, byteorder)


@pytest.mark.parametrize("byteorder", BYTE_ORDERS)
def test_cpython(byteorder):
    """The units of an even message are the code units CPython's codec reads."""
    rng = random.Random(f"utf16-units-cpython-{byteorder}")
    text = "".join(chr(rng.choice([rng.randrange(0xD800), rng.randrange(0x10000, 0x110000)]))
                   for _ in range(100))
    data = text.encode({"little": "utf-16-le", "big": "utf-16-be"}[byteorder])
    got, run = units([data], byteorder)
    assert [unit for unit, _, _ in got] == \
        [int.from_bytes(data[k:k + 2], byteorder) for k in range(0, len(data), 2)]
    first = run.in_cycles[0]
    assert run.in_cycles == list(range(first, first + len(data)))        # a byte every cycle
    assert run.out_cycles == list(range(first + 1 + Utf16Units.LATENCY,
                                        first + 1 + Utf16Units.LATENCY + len(data), 2))


def test_parameters():
    assert Utf16Units().byteorder == "little"
    with pytest.raises(ValueError, match="byteorder must be one of"):
        Utf16Units("middle")
