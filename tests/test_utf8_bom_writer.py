# amaranth: UnusedElaboratable=no
"""The ``utf-8-sig`` mark writer (:class:`~utf8_gateware.hdl.utf8_bom_writer.Utf8BomWriter`,
byte-level): EF BB BF before every message, under forced backpressure, with 1-byte messages
and messages back to back; and the ``utf-8`` to ``utf-8-sig`` transcoder it makes with the
sanitiser, against CPython's ``utf-8-sig`` codec."""

import random

import pytest
from amaranth.hdl import Fragment

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.sanitizer import Utf8Sanitizer
from utf8_gateware.hdl.transcoder import Transcoder, transcode_policies
from utf8_gateware.hdl.utf8_bom_writer import UTF8_BYTE_ORDER_MARK, Utf8BomWriter
from utf8_gateware.sim import encodings
from utf8_gateware.sim.testbench import run_full_rate, run_stream
from test_sanitizer import random_message as random_utf8
from test_transcoder import byte_items


KINDS = [ErrorKind.NONE] * 4 + list(ErrorKind)


def random_beat_messages(rng, count, longest=6):
    """Messages of ``(data, error)`` beats: any byte, any error kind; many of one beat."""
    return [[(rng.randrange(256), rng.choice(KINDS))
             for _ in range(rng.choice([1, 1, rng.randrange(1, longest + 1)]))]
            for _ in range(count)]


def beat_items(messages):
    return [{"data": data, "error": error, "last": int(index == len(message) - 1)}
            for message in messages for index, (data, error) in enumerate(message)]


def with_marks(messages):
    return [beat for message in messages
            for beat in [(byte, ErrorKind.NONE, 0) for byte in UTF8_BYTE_ORDER_MARK] +
            [(data, error, int(index == len(message) - 1))
             for index, (data, error) in enumerate(message)]]


def beats(run):
    return [(int(p.data), ErrorKind(p.error), int(p.last)) for p in run.outputs]


@pytest.mark.parametrize("gap,stall,seed", [(0.3, 0.3, 1), (0.0, 0.5, 2), (0.5, 0.0, 3),
                                            (0.1, 0.8, 4)])
def test_writer_random(gap, stall, seed):
    """Random messages (many of one byte), random gaps and a sink that refuses often."""
    rng = random.Random(f"utf8-bom-writer-{seed}")
    messages = random_beat_messages(rng, 60)
    run = run_stream(Utf8BomWriter(), beat_items(messages), gap=gap, stall=stall, seed=seed)
    assert beats(run) == with_marks(messages)


def test_writer_one_byte_messages():
    """Back to back 1-byte messages, among them EF, BB and BF: a mark before each."""
    messages = [[(byte, ErrorKind.NONE)] for byte in [0x41, *UTF8_BYTE_ORDER_MARK, 0, 0xFF]] * 4
    for stall, seed in [(0.0, 0), (0.4, 5)]:
        run = run_stream(Utf8BomWriter(), beat_items(messages), stall=stall, seed=seed)
        assert beats(run) == with_marks(messages)


def test_writer_throughput():
    """A byte out every cycle, the marks included: the input waits three cycles per message
    (after the beat that follows its first); each beat's first output byte (a message's first
    beat: its mark's EF) at most :attr:`~Utf8BomWriter.LATENCY` cycles after its transfer, and
    as late as that behind a message's first beat."""
    messages = random_beat_messages(random.Random(6), 30)
    run = run_full_rate(Utf8BomWriter(), beat_items(messages), idle=12, name="utf8-bom-rate")
    assert beats(run) == with_marks(messages)
    first = run.out_cycles[0]
    assert run.out_cycles == list(range(first, first + len(run.out_cycles)))
    steps = [after - before for before, after in zip(run.in_cycles, run.in_cycles[1:])]
    opens = [index == 0 for message in messages for index, _ in enumerate(message)]
    assert steps[1:] == [4 if opener else 1 for opener in opens[:-2]]   # 3 cycles: the mark
    waits = [run.out_cycles[index + 3 * sum(opens[:index + 1]) - 3 * opener] - cycle
             for index, (cycle, opener) in enumerate(zip(run.in_cycles, opens))]
    assert (min(waits), max(waits)) == (2, Utf8BomWriter.LATENCY)


# --- the transcoder ---------------------------------------------------------------------------

@pytest.mark.parametrize("errors", transcode_policies("utf-8", "utf-8-sig"))
def test_transcoder_is_sanitizer_and_writer(errors):
    """From UTF-8 to UTF-8-SIG the transcoder is the sanitiser and the writer: no code point."""
    transcoder = Transcoder("utf-8", "utf-8-sig", errors)
    fragment = Fragment.get(transcoder, None)
    assert [name for _, name, _ in fragment.subfragments] == ["sanitizer", "bom_writer"]
    assert transcoder.LATENCY == Utf8Sanitizer.latency(errors) + Utf8BomWriter.LATENCY


@pytest.mark.parametrize("errors", transcode_policies("utf-8", "utf-8-sig"))
def test_transcoder_cpython(errors):
    """Random UTF-8 (ill-formed too, a mark of its own in front of some: it stays, after the
    written one) and 1-byte messages back to back under backpressure: the model's decode then
    encode, and CPython's ``utf-8-sig`` encoder of the ``utf-8`` decoder's text."""
    rng = random.Random(f"utf8-sig-{errors}")
    messages = [rng.choice([b"", UTF8_BYTE_ORDER_MARK]) + random_utf8(rng, rng.randrange(1, 20))
                for _ in range(20)]
    messages += [bytes([byte]) for byte in [0x41, 0xEF, 0xBB, 0x80, 0xFF, 0]]
    rng.shuffle(messages)
    run = run_stream(Transcoder("utf-8", "utf-8-sig", errors), byte_items(messages),
                     gap=0.2, stall=0.4, seed=7)
    got, start = beats(run), 0
    for message in messages:
        end = next(index for index in range(start, len(got)) if got[index][2]) + 1
        data = bytes(byte for byte, _, _ in got[start:end])
        units = [d.codepoint for d in encodings.decode(message, "utf-8", errors)]
        assert data == encodings.encode(units, "utf-8-sig", errors).data
        assert data == message.decode("utf-8", errors).encode("utf-8-sig", errors)
        start = end
    assert start == len(got)
