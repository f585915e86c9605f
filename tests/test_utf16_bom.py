# amaranth: UnusedElaboratable=no
"""``utf-16`` (the encoding scheme with a byte order mark) in gateware: the byte stage that reads
the mark (:class:`~utf8_gateware.hdl.utf16_bom_units.Utf16BomUnits`), the stage that writes it
(:class:`~utf8_gateware.hdl.utf16_bom_writer.Utf16BomWriter`), and ``TextDecoder("utf-16")`` /
``TextEncoder("utf-16")``, against the reference model's own stages and CPython's ``utf-16``
codec where their semantics agree (CPython reads the machine's order without a mark: only
messages with one are compared with it)."""

import random

import pytest

import corpora
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.text_decoder import DECODINGS, TextDecoder
from utf8_gateware.hdl.text_encoder import ENCODINGS, TextEncoder
from utf8_gateware.hdl.utf16_bom_units import Utf16BomUnits
from utf8_gateware.hdl.utf16_bom_writer import BYTE_ORDER_MARK, Utf16BomWriter
from utf8_gateware.hdl.utf16_bytes import Utf16BomBytes
from utf8_gateware.sim import encodings
from utf8_gateware.sim.encodings.surrogates import StripByteOrderMark
from utf8_gateware.sim.encodings.utf16 import CodeUnits
from utf8_gateware.sim.testbench import run_full_rate, run_stream
from test_transcoder import byte_items, random_utf16


BE, LE = b"\xfe\xff", b"\xff\xfe"


def model_units(messages):
    """``(unit, ErrorKind, last)`` of ``messages`` by the model's stages: the units in the order
    the first two bytes give, a leading U+FEFF dropped."""
    beats = []
    for message in messages:
        units, strip = CodeUnits(None), StripByteOrderMark()
        pieces = strip.feed(units.feed(message) + units.finish())
        beats += [(piece.value or 0, piece.kind, int(index == len(pieces) - 1))
                  for index, piece in enumerate(pieces)]
    return beats


def unit_beats(run):
    return [(int(p.unit), ErrorKind(p.error), int(p.last)) for p in run.outputs]


def random_message(rng):
    """UTF-16 with a mark of either order or none, marks and FE/FF bytes later too, and often
    an odd length; never a message of only a mark (it has no output to end it)."""
    mark = rng.choice([BE, LE, b""])
    data = random_utf16(rng, rng.randrange(1, 14), "little" if mark == LE else "big")
    for _ in range(rng.randrange(3)):
        cut = rng.randrange(len(data) + 1)
        data = data[:cut] + rng.choice([BE, LE, b"\xfe", b"\xff"]) + data[cut:]
    message = mark + data
    return message + b"A" if message in (BE, LE) else message


# --- the byte stage ---------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [1, 2])
def test_units_random(seed):
    rng = random.Random(f"utf16-bom-units-{seed}")
    messages = [random_message(rng) for _ in range(60)]
    run = run_stream(Utf16BomUnits(), byte_items(messages), gap=0.3, stall=0.3, seed=seed)
    assert unit_beats(run) == model_units(messages)


def test_units_order_per_message():
    """Each message reads its own mark: a message of only a mark has no output, and the next
    one is big-endian again, after a little-endian one of even or odd length too."""
    messages = [LE + b"A\0", b"\0B", LE, b"\0C", LE + b"D\0\xd8", b"\0E", BE, BE + BE, LE + LE,
                b"\xff", b"\xfe", b"\xff\xfe\xff", b"\xfe\xff\x00", LE + b"\xff", b"\xfe\xfe"]
    run = run_full_rate(Utf16BomUnits(), byte_items(messages), idle=8, name="utf16-bom-units")
    got = unit_beats(run)
    assert got == model_units(messages)
    assert got[:3] == [(0x41, ErrorKind.NONE, 1), (0x42, ErrorKind.NONE, 1),
                       (0x43, ErrorKind.NONE, 1)]


def test_units_throughput():
    """A byte every cycle; each unit :attr:`LATENCY` cycles after its second byte (a mark's
    slot stays empty)."""
    data = LE + "aΩ😀".encode("utf-16-le") * 8
    run = run_full_rate(Utf16BomUnits(), byte_items([data]), idle=8, name="utf16-bom-rate")
    assert run.ready_low == 0
    first = run.in_cycles[0]
    assert run.in_cycles == list(range(first, first + len(data)))
    seconds = run.in_cycles[3::2]
    assert run.out_cycles == [cycle + Utf16BomUnits.LATENCY for cycle in seconds]


# --- the writer -------------------------------------------------------------------------------

def random_unit_messages(rng, count):
    """Messages of code unit beats, among them marker beats (``unit`` 0, an error)."""
    return [[(0, rng.choice([ErrorKind.SURROGATE, ErrorKind.TOO_LARGE])) if rng.random() < 0.2
             else (rng.randrange(0x10000), rng.choice([ErrorKind.NONE, ErrorKind.SURROGATE]))
             for _ in range(rng.randrange(1, 6))] for _ in range(count)]


def unit_items(messages):
    return [{"unit": unit, "error": error, "last": int(index == len(message) - 1)}
            for message in messages for index, (unit, error) in enumerate(message)]


def with_marks(messages):
    return [beat for message in messages
            for beat in [(BYTE_ORDER_MARK, ErrorKind.NONE, 0)] +
            [(unit, error, int(index == len(message) - 1))
             for index, (unit, error) in enumerate(message)]]


@pytest.mark.parametrize("seed", [1, 2])
def test_writer_random(seed):
    rng = random.Random(f"utf16-bom-writer-{seed}")
    messages = random_unit_messages(rng, 40)
    run = run_stream(Utf16BomWriter(), unit_items(messages), gap=0.3, stall=0.3, seed=seed)
    assert unit_beats(run) == with_marks(messages)


def test_writer_throughput():
    """A beat out every cycle: the input waits one cycle per message (after the beat that
    follows its first: the mark goes out while the first waits behind it)."""
    messages = random_unit_messages(random.Random(3), 20)
    run = run_stream(Utf16BomWriter(), unit_items(messages))
    assert unit_beats(run) == with_marks(messages)
    first = run.out_cycles[0]
    assert run.out_cycles == list(range(first, first + len(run.out_cycles)))
    steps = [after - before for before, after in zip(run.in_cycles, run.in_cycles[1:])]
    opens = [index == 0 for message in messages for index, _ in enumerate(message)]
    assert steps[1:] == [2 if opener else 1 for opener in opens[:-2]]   # a cycle for the mark
    assert run.out_cycles[0] == run.in_cycles[0] + Utf16BomWriter.LATENCY


# --- the byte stage with the mark --------------------------------------------------------------

def marked_bytes(messages):
    """``(byte, ErrorKind, last)`` of ``messages`` (lists of ``(unit, error)``) in ``utf-16``:
    FE FF, then each unit big-endian (a marker beat, ``unit`` 0 with an error, one byte 0),
    its error on its first byte, ``last`` on the message's last byte."""
    beats = []
    for message in messages:
        data = [(0xFE, ErrorKind.NONE), (0xFF, ErrorKind.NONE)]
        for unit, error in message:
            data += [(0, error)] if unit == 0 and error is not ErrorKind.NONE else \
                [(unit >> 8, error), (unit & 0xFF, ErrorKind.NONE)]
        beats += [(byte, kind, int(index == len(data) - 1))
                  for index, (byte, kind) in enumerate(data)]
    return beats


def byte_beats(run):
    return [(int(p.data), ErrorKind(p.error), int(p.last)) for p in run.outputs]


def no_markers(messages):
    """``messages`` without marker beats (``Utf16BomBytes(markers=False)``'s input: a unit 0 with
    an error becomes U+FFFD)."""
    return [[(0xFFFD if unit == 0 and error is not ErrorKind.NONE else unit, error)
             for unit, error in message] for message in messages]


@pytest.mark.parametrize("markers", [True, False])
@pytest.mark.parametrize("seed", [1, 2])
def test_bom_bytes_random(seed, markers):
    """FE FF before every message, then its units as ``Utf16Bytes("big")`` writes them (a
    message of only a marker beat too), with source gaps and sink stalls."""
    rng = random.Random(f"utf16-bom-bytes-{seed}")
    messages = random_unit_messages(rng, 40) + [[(0, ErrorKind.TOO_LARGE)]]
    if not markers:
        messages = no_markers(messages)
    run = run_stream(Utf16BomBytes(markers=markers), unit_items(messages), gap=0.3, stall=0.3,
                     seed=seed)
    assert byte_beats(run) == marked_bytes(messages)


@pytest.mark.parametrize("markers", [True, False])
def test_bom_bytes_pace(markers):
    """A byte out every cycle: B takes a unit every second cycle, a marker beat in one, and a
    message's first beat in two cycles more (its mark), and the stages move with it; the mark's
    first byte is out :attr:`LATENCY` cycles after the message's first unit."""
    messages = random_unit_messages(random.Random(4), 20)
    if not markers:
        messages = no_markers(messages)
    dut = Utf16BomBytes(markers=markers)
    run = run_stream(dut, unit_items(messages))
    assert byte_beats(run) == marked_bytes(messages)
    first = run.out_cycles[0]
    assert run.out_cycles == list(range(first, first + len(run.out_cycles)))
    assert first == run.in_cycles[0] + dut.LATENCY == \
        run.in_cycles[0] + Utf16BomBytes.latency(markers)
    sizes = [(1 if unit == 0 and error is not ErrorKind.NONE else 2) + 2 * (index == 0)
             for message in messages for index, (unit, error) in enumerate(message)]
    steps = [after - before for before, after in zip(run.in_cycles, run.in_cycles[1:])]
    # a unit a cycle while A0..A3 fill (A0 and A3 without markers), then each waits for B to
    # write the unit four (two) ahead
    fill = 4 if markers else 2
    assert steps[:fill] == [1] * fill and steps[fill:] == sizes[:len(steps) - fill]


def test_bom_bytes_parameters():
    assert Utf16BomBytes().markers and Utf16BomBytes.LATENCY == 5
    assert Utf16BomBytes(markers=False).LATENCY == 3
    with pytest.raises(TypeError, match="markers must be a bool, not 0"):
        Utf16BomBytes(markers=0)


# --- the decoder and encoder of utf-16 ----------------------------------------------------------

def decoded(run):
    return [(int(p.codepoint), ErrorKind(p.error), int(p.last)) for p in run.outputs]


def model_decoded(messages, errors):
    beats = []
    for message in messages:
        outputs = encodings.decode(message, "utf-16", errors)
        beats += [(d.codepoint, d.error, int(index == len(outputs) - 1))
                  for index, d in enumerate(outputs)]
    return beats


@pytest.mark.parametrize("errors", DECODINGS["utf-16"])
def test_decoder_cpython(errors):
    """Messages with a mark: what CPython's ``utf-16`` codec reads; without one, its
    ``utf-16-be``. (With surrogatepass no odd length: CPython and the model stop there.)"""
    rng = random.Random(f"utf16-decoder-{errors}")
    messages = []
    for _ in range(24):
        mark = rng.choice([BE, LE, b""])
        messages.append(mark + random_utf16(rng, rng.randrange(2, 16),
                                            "little" if mark == LE else "big",
                                            odd=errors != "surrogatepass"))
    run = run_stream(TextDecoder("utf-16", errors), byte_items(messages), gap=0.2, stall=0.2,
                     seed=4)
    got = decoded(run)
    assert got == model_decoded(messages, errors)
    for message in messages:
        end = next(index for index, beat in enumerate(got) if beat[2]) + 1
        text, got = "".join(chr(cp) for cp, _, _ in got[:end]), got[end:]
        codec = "utf-16" if message[:2] in (BE, LE) else "utf-16-be"
        assert text == message.decode(codec, errors), message.hex()


@pytest.mark.parametrize("errors", ENCODINGS["utf-16"])
def test_encoder_cpython(errors):
    """FE FF and CPython's ``utf-16-be`` bytes for each message (U+FFFD where the model
    replaces, as CPython's ``replace`` writes ``?``; a ``strict`` marker beat left out)."""
    rng = random.Random(f"utf16-encoder-{errors}")
    messages = [[rng.choice([rng.randrange(0xD800), rng.randrange(0xD800, 0xE000),
                             rng.randrange(0xE000, 0x110000), rng.randrange(0x110000, 1 << 32)])
                 for _ in range(rng.randrange(1, 8))] for _ in range(16)]
    items = [{"codepoint": unit, "last": int(index == len(message) - 1)}
             for message in messages for index, unit in enumerate(message)]
    run = run_stream(TextEncoder("utf-16", errors), items, gap=0.2, stall=0.2, seed=5)
    beats = [(int(p.data), ErrorKind(p.error), int(p.last)) for p in run.outputs]
    for message in messages:
        end = next(index for index, beat in enumerate(beats) if beat[2]) + 1
        got, beats = beats[:end], beats[end:]
        data = bytes(byte for byte, kind, _ in got
                     if kind is ErrorKind.NONE or errors == "replace")
        invalid = {ErrorKind.SURROGATE: lambda u: 0xD800 <= u < 0xE000 and
                   errors != "surrogatepass", ErrorKind.TOO_LARGE: lambda u: u >= 0x110000}
        kinds = [kind for unit in message for kind, test in invalid.items() if test(unit)]
        assert [kind for _, kind, _ in got if kind is not ErrorKind.NONE] == kinds
        text = "".join("\ufffd" if any(test(unit) for test in invalid.values()) else chr(unit)
                       for unit in message if errors == "replace" or
                       not any(test(unit) for test in invalid.values()))
        assert data == BE + text.encode("utf-16-be", "surrogatepass")
        assert data == encodings.encode(message, "utf-16", errors).data
    assert beats == []


@pytest.mark.parametrize("folder", ["utf16", "bom"])
def test_decoder_corpora(folder):
    """Every byte string of the corpora's UTF-16 and BOM cases, decoded as ``utf-16`` (the
    folders' own expectations are checked on the model by tests/test_encodings_corpora.py)."""
    corpora.require()
    messages = [corpora.hex_bytes(case[field]) for _, case in corpora.family_cases(folder)
                for field in ("input_hex", "expected_hex") if isinstance(case.get(field), str)]
    messages = [message for message in messages if message not in (b"", BE, LE)]
    assert len(messages) > 50
    run = run_full_rate(TextDecoder("utf-16"), byte_items(messages), idle=16,
                        name=f"utf16-corpora-{folder}")
    assert decoded(run) == model_decoded(messages, "replace")
