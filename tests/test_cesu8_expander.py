# amaranth: UnusedElaboratable=no
"""The byte-level expander into CESU-8 and MUTF-8
(:class:`~utf8_gateware.hdl.cesu8_expander.Cesu8Expander`) against the reference model's
encoders, fed what the sanitiser writes: well-formed UTF-8, and with ``surrogateescape`` the
bytes of ill-formed subparts flagged (they pass unchanged); its rate (an output byte every
cycle); and the idle output cycles of the transcoder that joins the two (utf-8 to cesu-8 /
mutf-8)."""

import random

import pytest

from utf8_gateware.hdl.cesu8_expander import Cesu8Expander
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.transcoder import Transcoder
from utf8_gateware.sim import encodings
from utf8_gateware.sim.testbench import run_full_rate, run_stream
from test_sanitizer import random_message as random_utf8


#: The edges: the first and last supplementary characters, the BMP's last, NUL, every plane's
#: first and last, each top nibble of the low 16 bits (where b1 borrows from b0, and not).
EDGES = [0x10000, 0x10FFFF, 0xFFFF, 0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD] + [
    plane << 16 | nibble << 12 | low for plane in range(1, 17) for nibble in range(16)
    for low in (0, 0xFFF) if plane < 16 or nibble == 0]


def beats_of(message, errors):
    """The sanitiser's beats for ``message``, ``(data, error)``: per decoded item its UTF-8
    bytes, unflagged (U+FFFD's too: the transcoder's own test checks its flag), or with
    ``surrogateescape`` an escaped byte with its kind."""
    given = []
    for item in encodings.decode(message, "utf-8", errors):
        if errors == "surrogateescape" and item.error != ErrorKind.NONE:
            given.append((item.codepoint - 0xDC00, item.error))
        else:
            given += [(byte, ErrorKind.NONE) for byte in chr(item.codepoint).encode()]
    return given


def expected_beats(message, encoding, errors):
    beats = []
    for item in encodings.decode(message, "utf-8", errors):
        if errors == "surrogateescape" and item.error != ErrorKind.NONE:
            beats.append((item.codepoint - 0xDC00, item.error))
        else:
            data = encodings.encode([item.codepoint], encoding, "replace").data
            beats += [(byte, ErrorKind.NONE) for byte in data]
    return beats


def items_of(messages, errors):
    items = []
    for message in messages:
        beats = beats_of(message, errors)
        items += [{"data": data, "error": error, "last": int(index == len(beats) - 1)}
                  for index, (data, error) in enumerate(beats)]
    return items


def expected_of(messages, encoding, errors):
    out = []
    for message in messages:
        beats = expected_beats(message, encoding, errors)
        out += [(data, error, int(index == len(beats) - 1))
                for index, (data, error) in enumerate(beats)]
    return out


def got_of(run):
    return [(int(p.data), ErrorKind(p.error), int(p.last)) for p in run.outputs]


def text_message(rng, size):
    return "".join(chr(rng.choice([rng.randrange(0x80), rng.randrange(0x80, 0x800),
                                   rng.randrange(0x800, 0xD800), rng.randrange(0xE000, 0x10000),
                                   rng.randrange(0x10000, 0x110000), rng.choice(EDGES)]))
                   for _ in range(size)).encode()


CASES = [("cesu-8", "replace"), ("cesu-8", "surrogateescape"), ("mutf-8", "replace")]


@pytest.mark.parametrize("encoding,errors", CASES)
@pytest.mark.parametrize("seed", [1, 2])
def test_random(encoding, errors, seed):
    """Random text with ill-formed pieces (escaped with ``surrogateescape``, as the sanitiser
    marks them; replaced by U+FFFD with ``replace``), gaps and stalls."""
    rng = random.Random(f"expander-{encoding}-{errors}-{seed}")
    messages = [text_message(rng, rng.randrange(1, 10)) if rng.random() < 0.5 else
                random_utf8(rng, rng.randrange(1, 24)) for _ in range(40)]
    messages = [message or b"\0" for message in messages]
    run = run_stream(Cesu8Expander(encoding), items_of(messages, errors), gap=0.3, stall=0.3,
                     seed=seed)
    assert got_of(run) == expected_of(messages, encoding, errors)


@pytest.mark.parametrize("encoding", ["cesu-8", "mutf-8"])
def test_edges(encoding):
    """Every edge character alone, and all in a row (each plane and borrow; NUL)."""
    messages = [chr(u).encode() for u in EDGES] + ["".join(map(chr, EDGES)).encode()]
    run = run_stream(Cesu8Expander(encoding), items_of(messages, "replace"), gap=0.2,
                     stall=0.4, seed=7)
    assert got_of(run) == expected_of(messages, encoding, "replace")
    data = bytes(beat[0] for beat in got_of(run))
    assert data.startswith(b"\xed\xa0\x80\xed\xb0\x80\xed\xaf\xbf\xed\xbf\xbf\xef\xbf\xbf" +
                           (b"\xc0\x80" if encoding == "mutf-8" else b"\0"))


@pytest.mark.parametrize("encoding", ["cesu-8", "mutf-8"])
def test_throughput(encoding):
    """One output byte per cycle with no idle cycle, the sink always ready; the input waits a
    cycle after b0 .. b2 of a four-byte sequence's and after a MUTF-8 NUL; the first byte is
    :attr:`LATENCY` cycles after its transfer."""
    text = ("a\0é€😀" + chr(0x10FFFF)) * 6
    dut = Cesu8Expander(encoding)
    run = run_full_rate(dut, items_of([text.encode()], "replace"), idle=12,
                        name=f"expander-rate-{encoding}")
    first = run.out_cycles[0]
    expected = encodings.encode([ord(c) for c in text], encoding, "replace").data
    assert bytes(int(p.data) for p in run.outputs) == expected
    assert run.out_cycles == list(range(first, first + len(expected)))
    assert first == run.in_cycles[0] + Cesu8Expander.LATENCY
    # The input waits only where the output takes more bytes: at most 2 cycles per
    # supplementary character, 1 per MUTF-8 NUL (those after the last input byte not counted)
    waits = run.in_cycles[-1] - run.in_cycles[0] + 1 - len(text.encode())
    assert waits == run.ready_low
    assert 2 * 10 <= waits <= 2 * 12 + (6 if encoding == "mutf-8" else 0)


@pytest.mark.parametrize("target", ["cesu-8", "mutf-8"])
def test_transcoder_rate(target):
    """The transcoder from UTF-8, the sanitiser then the expander, the sink always ready: no
    idle output cycle, on text with or without supplementary characters (the sanitiser's front
    moves in the cycle after a refusal, so the expander's refusals cost it no cycle)."""
    rng = random.Random(f"expander-rate-{target}")
    for pool in [(0x80, 0x800, 0xD800), (0x80, 0x800, 0xD800, 0x110000)]:
        text = "".join(chr(rng.choice([rng.randrange(1 if i == 0 else pool[i - 1], top)
                                       for i, top in enumerate(pool) if top != 0x110000] +
                                      ([rng.randrange(0x10000, 0x110000)]
                                       if 0x110000 in pool else [])))
                       for _ in range(200))
        dut = Transcoder("utf-8", target)
        run = run_full_rate(dut, [{"data": byte, "last": 0} for byte in text.encode()],
                            idle=40, name=f"transcoder-rate-{target}")
        expected = encodings.encode([ord(c) for c in text], target, "replace").data
        assert bytes(int(p.data) for p in run.outputs) == expected
        idle = run.out_cycles[-1] - run.out_cycles[0] + 1 - len(expected)
        assert idle == 0


def test_parameters():
    with pytest.raises(ValueError, match="^encoding must be one of those the gateware expands "
                                         r"into \('cesu-8', 'mutf-8'\), not 'utf-8'$"):
        Cesu8Expander("utf-8")
