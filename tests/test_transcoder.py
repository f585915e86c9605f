# amaranth: UnusedElaboratable=no
"""The decoder and encoder of an encoding by name (:class:`~utf8_gateware.hdl.text_decoder.
TextDecoder`, :class:`~utf8_gateware.hdl.text_encoder.TextEncoder`) and the transcoder between
two encodings (:class:`~utf8_gateware.hdl.transcoder.Transcoder`) in Amaranth's Python
simulator, against the reference model of every encoding (``utf8_gateware.sim.encodings``), which
CPython's codecs check in tests/test_encodings.py."""

import random

import pytest

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.text_decoder import DECODINGS, TextDecoder
from utf8_gateware.hdl.text_encoder import ENCODINGS, TextEncoder
from utf8_gateware.hdl.transcoder import Transcoder, transcode_policies
from utf8_gateware.hdl.utf16_units import SCHEMES
from utf8_gateware.sim import encodings
from utf8_gateware.sim.testbench import run_stream
from test_sanitizer import random_message as random_utf8


#: Every pair of encodings and policy the gateware transcodes that is tested: into utf-8 and
#: utf-16-le/be from every source; into the encodings with a mark in front or states of the shift
#: encoder of the UTF-8 family's own (tests/test_encoder_family.py) from one source of each decoder
#: kind (UTF-8's and UTF-16's), for time; and utf-16 to utf-16 (a mark read, a mark written).
PAIRS = [(source, target, errors) for source in DECODINGS for target in ENCODINGS
         for errors in transcode_policies(source, target)
         if target in ("utf-8", *SCHEMES) or source in ("utf-8", "utf-16-le")
         or source == target == "utf-16"]


def random_utf16(rng, size, byteorder, odd=True):
    """UTF-16 bytes in ``byteorder``: BMP units, pairs, lone lead and trail surrogates, byte
    order marks, and (with ``odd``) sometimes an odd trailing byte."""
    units = []
    while len(units) * 2 < size:
        units += rng.choice([
            lambda: [rng.randrange(0xD800)],
            lambda: [rng.randrange(0xE000, 0x10000)],
            lambda: [rng.randrange(0xD800, 0xDC00), rng.randrange(0xDC00, 0xE000)],   # a pair
            lambda: [rng.randrange(0xD800, 0xE000)],                                 # lone
            lambda: [rng.choice([0xFEFF, 0xFFFE, 0xFFFD, 0, 0xD800, 0xDFFF])],
        ])()
    data = b"".join(unit.to_bytes(2, byteorder) for unit in units)
    return data + bytes([rng.randrange(256)]) if odd and rng.random() < 0.3 else data


#: Byte sequences the UTF-8 family reads differently: a mark, surrogates alone and in pairs
#: (CESU-8, MUTF-8, WTF-8), C0 80 and 00 (MUTF-8).
FAMILY_PIECES = [b"\xef\xbb\xbf", b"\xed\xa0\x80", b"\xed\xb0\x80", b"\xed\xa0\xbd\xed\xb8\x80",
                 b"\xc0\x80", b"\0"]


def random_bytes(rng, encoding, errors, size):
    if encoding == "utf-16":
        # The order of a mark, or of none (big-endian); a mark later is U+FEFF or U+FFFE.
        mark = rng.choice([b"\xfe\xff", b"\xff\xfe", b""])
        order = "little" if mark == b"\xff\xfe" else "big"
        return mark + random_utf16(rng, size, order, odd=errors != "surrogatepass")
    if encoding in SCHEMES:
        # The reference raises on an odd trailing byte with surrogatepass (the core reports it).
        return random_utf16(rng, size, SCHEMES[encoding], odd=errors != "surrogatepass")
    data = random_utf8(rng, size)
    for _ in range(3):
        cut = rng.randrange(len(data) + 1)
        data = data[:cut] + rng.choice(FAMILY_PIECES) + data[cut:]
    return rng.choice([b"", b"\xef\xbb\xbf"]) + data


def messages_of(rng, encoding, errors, count=6, size=24):
    return [random_bytes(rng, encoding, errors, rng.randrange(1, size)) or b"\0"
            for _ in range(count)]


def byte_items(messages):
    return [{"data": byte, "last": int(index == len(message) - 1)}
            for message in messages for index, byte in enumerate(message)]


def with_last(beats):
    """Set ``last`` on the final beat of a message's list of ``(data, error)`` beats."""
    return [(*beat, int(index == len(beats) - 1)) for index, beat in enumerate(beats)]


def encoded_beats(codepoint, carried, target, errors):
    """The beats ``(data, error)`` an encoder writes for one unit that carries ``carried``: its
    bytes, the first flagged (without the mark some targets write in front of a message); a unit
    the policy leaves out is one *marker beat* (0, its kind)."""
    encoded = encodings.encode([codepoint], target, errors)
    kind = encoded.errors[0][1] if encoded.errors else carried
    data = encoded.data[len(encodings.encode([], target, errors).data):]   # no mark
    return [(byte, kind if index == 0 else ErrorKind.NONE)
            for index, byte in enumerate(data or b"\0")]


# -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("encoding,errors", [(e, p) for e in DECODINGS for p in DECODINGS[e]])
@pytest.mark.parametrize("seed", [1, 2])
def test_text_decoder(encoding, errors, seed):
    rng = random.Random(seed)
    messages = messages_of(rng, encoding, errors)
    run = run_stream(TextDecoder(encoding, errors), byte_items(messages), gap=0.3, stall=0.3,
                     seed=seed)
    expected = []
    for message in messages:
        expected += with_last([(d.codepoint, d.error)
                               for d in encodings.decode(message, encoding, errors)])
    assert [(int(p.codepoint), ErrorKind(p.error), int(p.last)) for p in run.outputs] == expected


@pytest.mark.parametrize("encoding,errors", [(e, p) for e in ENCODINGS for p in ENCODINGS[e]])
def test_text_encoder(encoding, errors):
    """Per message: the bytes (marker beats left out), the flagged kinds in order, and ``last``
    on the final beat only (a mark in front and joined pairs make beats not add up unit by
    unit, so positions are checked by the encoders' own tests)."""
    rng = random.Random(3)
    units = [rng.choice([rng.randrange(0x80), rng.randrange(0x80, 0x10000),
                         rng.randrange(0x10000, 0x110000), rng.randrange(0xD800, 0xE000),
                         rng.randrange(0xDC80, 0xDD00), rng.randrange(0x110000, 1 << 32)])
             for _ in range(60)]
    units[30:30] = [0xD83D, 0xDE00, 0]                       # a pair (joined by wtf-8), NUL
    messages = [units[:20], units[20:21], units[21:]]
    items = [{"codepoint": unit, "last": int(index == len(message) - 1)}
             for message in messages for index, unit in enumerate(message)]
    run = run_stream(TextEncoder(encoding, errors), items, gap=0.3, stall=0.3, seed=3)
    beats = [(int(p.data), ErrorKind(p.error), int(p.last)) for p in run.outputs]
    for message in messages:
        end = next(index for index, beat in enumerate(beats) if beat[2]) + 1
        got, beats = beats[:end], beats[end:]
        encoded = encodings.encode(message, encoding, errors)
        markers = errors in ("strict", "surrogatepass")
        assert bytes(data for data, kind, _ in got
                     if not (markers and kind is not ErrorKind.NONE)) == encoded.data
        assert [kind for _, kind, _ in got if kind is not ErrorKind.NONE] == \
            [kind for _, kind in encoded.errors]
    assert beats == []


@pytest.mark.parametrize("source,target,errors", PAIRS)
def test_transcoder(source, target, errors):
    rng = random.Random(f"{source}:{target}:{errors}")     # the same streams in every run
    messages = messages_of(rng, source, errors, count=8)
    run = run_stream(Transcoder(source, target, errors), byte_items(messages), gap=0.2,
                     stall=0.3, seed=5)
    expected = []
    # A mark in front (utf-8-sig, utf-16): what the target writes for an empty message.
    mark = [(byte, ErrorKind.NONE) for byte in encodings.encode([], target, errors).data]
    for message in messages:
        beats = list(mark)
        for decoded in encodings.decode(message, source, errors):
            beats += encoded_beats(decoded.codepoint, decoded.error, target, errors)
        expected += with_last(beats)
    got = [(int(p.data), ErrorKind(p.error), int(p.last)) for p in run.outputs]
    assert got == expected
    # The bytes alone: what the reference model's decode then encode writes.
    for message, data in zip(messages, _split(got)):
        units = [d.codepoint for d in encodings.decode(message, source, errors)]
        assert data == encodings.encode(units, target, errors).data


def _split(beats):
    messages, current = [], b""
    for data, _, last in beats:
        current += bytes([data])
        if last:
            messages.append(current)
            current = b""
    return messages


def test_parameters():
    for args, error in [
        (("utf-32",), "encoding must be one of those the gateware decodes ('utf-8', "),
        (("utf-8", "utf-7"), "encoding must be one of those the gateware writes ('utf-8', "),
        (("utf-8", "utf-16-le", "surrogateescape"),
         "errors from utf-8 to utf-16-le must be one of 'replace', not 'surrogateescape'"),
        (("utf-8", "utf-8-rfc2279"), "the transcoder does not write utf-8-rfc2279 yet (its "
                                     "encoder does not carry the decoder's error kinds); it "
                                     "writes utf-8, "),
    ]:
        with pytest.raises(ValueError, match="^" + error.replace("(", r"\(").replace(")", r"\)")):
            Transcoder(*args)
    with pytest.raises(TypeError, match="^encoding must be a string, not 8$"):
        TextDecoder(8)
    with pytest.raises(ValueError, match="^errors must be one of 'replace', 'strict', "
                                         "'surrogatepass', not 'surrogateescape'$"):
        TextEncoder("utf-16-be", "surrogateescape")
    with pytest.raises(TypeError, match="^carry_error must be a bool, not 1$"):
        TextEncoder("utf-16-le", carry_error=1)


@pytest.mark.parametrize("target,errors", [("utf-8", "replace"), ("utf-8", "surrogateescape"),
                                           ("wtf-8", "replace")])
def test_utf8_to_utf8_is_the_byte_level_sanitizer(target, errors):
    """From UTF-8 to UTF-8 (or WTF-8, which writes scalars as UTF-8 does) the transcoder is the
    sanitiser (no decoder, no encoder), with its latency: the output is the same byte for byte
    (test_transcoder), faster and smaller."""
    from amaranth.hdl import Fragment
    from utf8_gateware.hdl.sanitizer import Utf8Sanitizer
    transcoder = Transcoder("utf-8", target, errors)
    fragment = Fragment.get(transcoder, None)
    assert [name for _, name, _ in fragment.subfragments] == ["sanitizer"]
    assert transcoder.LATENCY == Utf8Sanitizer.latency(errors)
