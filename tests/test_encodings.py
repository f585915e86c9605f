"""The reference model of the encoding family (``sim/encodings``) against its oracles.

Oracles: CPython's codecs (``utf-8`` with ``strict``/``surrogatepass``, ``utf-8-sig``,
``utf-16-le``/``-be``/``utf-16``), the ``mutf8`` package (Modified UTF-8), and, for ill-formed
CESU-8, Modified UTF-8 and WTF-8, CPython's UTF-8 decoder with an error handler that reads the
one row where generalized UTF-8 differs from Table 3-7 (ED followed by A0..BF), followed by
CPython's UTF-16 codec for joining surrogate pairs. The external corpora are in
``test_encodings_corpora.py``.
"""

import codecs
import itertools
import random

import mutf8
import pytest
from hypothesis import given, settings, strategies as st

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim import encodings, reference
from utf8_gateware.sim.encodings import (
    DECODE_POLICIES, ENCODE_POLICIES, ENCODINGS, Decoded, DecodeError, Decoder, Encoder,
    codepoints_from_utf16, decode, encode, utf16_units)
from utf8_gateware.sim.encodings.rfc2279 import RFC2279_LENGTH_LIMITS


POLICIES = ("replace", "strict", "surrogateescape", "surrogatepass")
SCALARS = [*range(0xD800), *range(0xE000, 0x110000)]


def outputs(data, encoding, errors):
    """Our code points, or ``("error", position)`` where a stopping policy stops."""
    try:
        return [output.codepoint for output in decode(data, encoding, errors)]
    except DecodeError as error:
        return ("error", error.position)


def cpython(data, codec, errors, offset=0):
    """CPython's code points, or ``("error", start + offset)``."""
    try:
        return [ord(char) for char in data.decode(codec, errors)]
    except UnicodeDecodeError as error:
        return ("error", error.start + offset)


def kinds(outputs_):
    return [None if o.error is ErrorKind.NONE else o.error.label for o in outputs_]


# --- CPython-built oracles for the encodings CPython has no codec for ------------------------

def _generalized(error):
    """Error handler: CPython's UTF-8 decoder is Table 3-7; generalized UTF-8 (WTF-8 spec,
    Table 3) differs only in the row ED, which also allows A0..BF (surrogate code points)."""
    data, start = error.object, error.start
    if data[start] == 0xED and start + 1 < len(data) and 0xA0 <= data[start + 1] <= 0xBF:
        if start + 2 < len(data) and 0x80 <= data[start + 2] <= 0xBF:
            value = 0xD000 | (data[start + 1] & 0x3F) << 6 | data[start + 2] & 0x3F
            return chr(value), start + 3
        return "\ufffd", start + 2   # a cut-short surrogate sequence: one maximal subpart
    return "\ufffd", error.end


def _generalized_java(error):
    """As :func:`_generalized`, and C0 80 is U+0000 (Modified UTF-8)."""
    data, start = error.object, error.start
    if data[start] == 0xC0 and start + 1 < len(data) and data[start + 1] == 0x80:
        return "\0", start + 2
    return _generalized(error)


codecs.register_error("test-generalized", _generalized)
codecs.register_error("test-generalized-java", _generalized_java)

# Bytes that start no sequence and are not continuation bytes are single-byte errors, as FF is.
_NO_FOUR_BYTE_FORMS = bytes(0xFF if 0xF0 <= b <= 0xF4 else b for b in range(256))
_NO_FOUR_BYTE_FORMS_NO_NUL = bytes(0xFF if 0xF0 <= b <= 0xF4 or b == 0 else b
                                   for b in range(256))


def oracle_cesu8(data):
    """CESU-8 with ``replace``: generalized UTF-8 without 4-byte forms, then UTF-16's pairing
    (a lone surrogate is one U+FFFD)."""
    text = data.translate(_NO_FOUR_BYTE_FORMS).decode("utf-8", "test-generalized")
    return [ord(c) for c in text.encode("utf-16-le", "surrogatepass")
                                .decode("utf-16-le", "replace")]


def oracle_mutf8(data):
    """Modified UTF-8 with ``replace``: CESU-8's bytes with C0 80 and without 00; pairs joined,
    lone surrogates kept."""
    text = data.translate(_NO_FOUR_BYTE_FORMS_NO_NUL).decode("utf-8", "test-generalized-java")
    return [ord(c) for c in text.encode("utf-16-le", "surrogatepass")
                                .decode("utf-16-le", "surrogatepass")]


def oracle_wtf8(data):
    """WTF-8 with ``replace``: generalized UTF-8, and a trail surrogate right after a lead
    surrogate is one U+FFFD."""
    out = []
    for char in data.decode("utf-8", "test-generalized"):
        value = ord(char)
        if out and 0xD800 <= out[-1] <= 0xDBFF and 0xDC00 <= value <= 0xDFFF:
            value = 0xFFFD
        out.append(value)
    return out


def cpython_wtf8(units):
    """WTF-8 of potentially ill-formed UTF-16 ``units`` through CPython (the spec's "convert
    from potentially ill-formed UTF-16": decode to code points, then generalized UTF-8)."""
    text = "".join(map(chr, units)).encode("utf-16-le", "surrogatepass") \
                                   .decode("utf-16-le", "surrogatepass")
    return text.encode("utf-8", "surrogatepass")


def cpython_cesu8(codepoints):
    """CESU-8 through CPython: UTF-16 code units, each as generalized UTF-8."""
    return "".join(map(chr, utf16_units(codepoints))).encode("utf-8", "surrogatepass")


def rfc2279_bytes(value):
    """RFC 2279's bit-pattern table, written out as bit strings (independent of the model)."""
    for length, limit in enumerate(RFC2279_LENGTH_LIMITS, start=1):
        if value < limit:
            break
    if length == 1:
        return bytes([value])
    bits = format(value, "b").zfill(5 * length + 1)   # 7, 11, 16, 21, 26, 31 payload bits
    lead = "1" * length + "0" + bits[:7 - length]
    tail = [bits[7 - length + 6 * k:7 - length + 6 * (k + 1)] for k in range(length - 1)]
    return bytes(int(pattern, 2) for pattern in [lead, *("10" + t for t in tail)])


# --- byte streams ------------------------------------------------------------------------------

EDGE_BYTES = [0x00, 0x0A, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xAF, 0xB0, 0xBF, 0xC0,
              0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED, 0xEE, 0xEF, 0xF0, 0xF4, 0xF5, 0xF7, 0xF8, 0xFB,
              0xFC, 0xFD, 0xFE, 0xFF]
FRAGMENTS = [bytes.fromhex(text) for text in (
    "eda080", "edafbf", "edb080", "edbfbf", "eda0bdedb2a9", "edb2a9eda0bd", "c080", "efbbbf",
    "feff", "fffe", "f0908080", "f48fbfbf", "f4908080", "e282ac", "c3a9", "ed9fbf",
    "f888808080", "fc8480808080", "fdbfbfbfbfbf", "f887bfbfbf", "00d8", "00dc", "d800", "dc00")]
byte_streams = st.lists(st.one_of(st.sampled_from(FRAGMENTS),
                                  st.sampled_from(EDGE_BYTES).map(lambda b: bytes([b])),
                                  st.integers(0, 255).map(lambda b: bytes([b]))),
                        max_size=20).map(b"".join)
INTERESTING_UNITS = [0x0000, 0x0041, 0x007F, 0x0080, 0x07FF, 0x0800, 0xD7FF, 0xD800, 0xDBFF,
                     0xDC00, 0xDFFF, 0xE000, 0xFEFF, 0xFFFD, 0xFFFE, 0xFFFF]
units16 = st.lists(st.one_of(st.sampled_from(INTERESTING_UNITS), st.integers(0, 0xFFFF)),
                   max_size=24)


# --- names, policies, bad arguments -------------------------------------------------------

ALL = ("replace", "strict", "surrogateescape", "surrogatepass")
NO_SURROGATE_POLICIES = ("replace", "strict")
UTF16 = ("replace", "strict", "surrogatepass")
OFFERED = {"utf-8": ALL, "utf-8-sig": ALL, "cesu-8": ALL, "mutf-8": NO_SURROGATE_POLICIES,
           "wtf-8": NO_SURROGATE_POLICIES, "utf-8-rfc2279": NO_SURROGATE_POLICIES,
           "utf-16-le": UTF16, "utf-16-be": UTF16, "utf-16": UTF16}


def test_names_and_policies():
    assert ENCODINGS == ("utf-8", "utf-8-sig", "cesu-8", "mutf-8", "wtf-8", "utf-8-rfc2279",
                         "utf-16-le", "utf-16-be", "utf-16")
    assert DECODE_POLICIES == OFFERED
    assert ENCODE_POLICIES == OFFERED


REFUSED = [(encoding, errors) for encoding in ENCODINGS for errors in POLICIES
           if errors not in OFFERED[encoding]]


@pytest.mark.parametrize("encoding, errors", REFUSED)
def test_pairs_that_make_no_sense_are_one_line_errors(encoding, errors):
    for call in (lambda: decode(b"", encoding, errors), lambda: Decoder(encoding, errors),
                 lambda: encode([], encoding, errors), lambda: Encoder(encoding, errors),
                 lambda: encodings.check(encoding, errors, "encode")):
        with pytest.raises(ValueError) as info:
            call()
        message = str(info.value)
        assert "\n" not in message and encoding in message and repr(errors) in message
        assert "could not be told" in message or "already" in message or "anything" in message


@pytest.mark.parametrize("call, exception", [
    (lambda: decode(b"", "utf8"), ValueError),
    (lambda: encode([], "latin-1"), ValueError),
    (lambda: decode(b"", None), TypeError),
    (lambda: decode(b"", "utf-8", "ignore"), ValueError),
    (lambda: decode(b"", "utf-8", 1), TypeError),
    (lambda: decode("text", "utf-8"), TypeError),
    (lambda: encode([-1], "wtf-8"), ValueError),
    (lambda: encode([1 << 32], "utf-16"), ValueError),
    (lambda: encode(["a"], "cesu-8"), ValueError),
    (lambda: encodings.check("utf-8", "strict", "both"), ValueError),
])
def test_bad_arguments(call, exception):
    with pytest.raises(exception) as info:
        call()
    assert "\n" not in str(info.value)


def test_unknown_encoding_names_the_choices():
    with pytest.raises(ValueError, match="unknown encoding 'utf8'; one of utf-8, utf-8-sig"):
        decode(b"", "utf8")


def test_utf8_replace_and_surrogateescape_are_the_reference_model():
    data = bytes(range(256)) + b"\xed\xa0\x80\xf0\x90\x80\x80\xe1\x80"
    for errors in reference.DECODE_ERRORS:
        assert decode(data, "utf-8", errors) == reference.decode(data, errors)
    units = [0x41, 0xD800, 0xDC80, 0x110000, 0x10FFFF, 0xFFFFFFFF]
    for errors in reference.ENCODE_ERRORS:
        assert encode(units, "utf-8", errors) == reference.encode(units, errors)


# --- UTF-8 and utf-8-sig against CPython ------------------------------------------------------

@pytest.mark.parametrize("errors", ["strict", "surrogatepass"])
def test_utf8_every_short_sequence(errors):
    # Every 1- and 2-byte string and every ED A0..BF xx: code points, or the error's start.
    cases = [bytes(v) for n in (1, 2) for v in itertools.product(range(256), repeat=n)]
    cases += [bytes([0xED, second, third]) for second in range(0xA0, 0xC0)
              for third in range(256)]
    for data in cases:
        assert outputs(data, "utf-8", errors) == cpython(data, "utf-8", errors), data.hex()


def test_utf8_strict_error_carries_the_subpart_and_the_outputs_before_it():
    for data in (b"ab\xe1\x80c", b"\xff", b"a\xed\xa0\x80", b"abc\xf0\x90\x80"):
        with pytest.raises(DecodeError) as info:
            decode(data, "utf-8", "strict")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as error:
            assert (info.value.position, info.value.end) == (error.start, error.end)
        assert info.value.decoded == decode(data[:info.value.position], "utf-8", "strict")
        assert info.value.kind is decode(data, "utf-8")[len(info.value.decoded)].error


@settings(max_examples=300, deadline=None)
@given(byte_streams, st.sampled_from(ALL), st.sampled_from([b"", b"\xef\xbb\xbf", b"\xef\xbb"]))
def test_utf8_and_utf8_sig_streams(data, errors, prefix):
    data = prefix + data
    assert outputs(data, "utf-8", errors) == cpython(data, "utf-8", errors)
    # CPython's utf-8-sig counts error positions from after the byte order mark; we do not.
    offset = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    assert outputs(data, "utf-8-sig", errors) == cpython(data, "utf-8-sig", errors, offset)


def test_utf8_sig_byte_order_mark():
    assert decode(b"\xef\xbb\xbfa\xef\xbb\xbf", "utf-8-sig") == [Decoded(0x61),
                                                                Decoded(0xFEFF)]
    assert decode(b"\xef\xbb", "utf-8-sig") == [Decoded(0xFFFD, ErrorKind.TRUNCATED)]
    assert encode([], "utf-8-sig").data == b"\xef\xbb\xbf" == "".encode("utf-8-sig")
    assert encode([0x61], "utf-8-sig").data == "a".encode("utf-8-sig")
    with pytest.raises(DecodeError) as info:
        decode(b"\xef\xbb\xbfa\xff", "utf-8-sig", "strict")
    assert info.value.position == 4 and info.value.decoded == [Decoded(0x61)]


def invalid_kind(unit, errors):
    """The error kind of a code unit in UTF-8 or UTF-16 under ``errors``, or ``None``."""
    if unit >= 0x110000:
        return ErrorKind.TOO_LARGE
    if 0xD800 <= unit <= 0xDFFF and not (errors == "surrogatepass" or (
            errors == "surrogateescape" and 0xDC80 <= unit <= 0xDCFF)):
        return ErrorKind.SURROGATE
    return None


def cpython_encode(units, codec, errors):
    """CPython's encoding of ``units`` under our policy ``errors`` (our replacement is U+FFFD,
    CPython's is ``?``; ``strict`` leaves invalid units out): the invalid units are substituted
    first, then CPython encodes with the policy it has."""
    text = "".join(chr(u) if invalid_kind(u, errors) is None else
                   "" if errors in ("strict", "surrogatepass") else "\ufffd" for u in units)
    return text.encode(codec, "strict" if errors == "replace" else errors)


@pytest.mark.slow
def test_utf8_surrogatepass_every_code_point():
    units = range(0x110000)
    assert encode(units, "utf-8", "surrogatepass") == (
        cpython_encode(units, "utf-8", "surrogatepass"), [])


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16-le", "utf-16-be",
                                      "utf-16"])
def test_encode_every_policy_on_sampled_units(encoding):
    rng = random.Random(10)
    units = [*range(0, 0x110000, 97), *range(0xD780, 0xE080), 0x10FFFF, 0x110000, 0xFFFFFFFF,
             *(rng.randrange(0x110000, 1 << 32) for _ in range(50))]
    rng.shuffle(units)
    codec = {"utf-16": "utf-16-be"}.get(encoding, encoding)
    prefix = b"\xfe\xff" if encoding == "utf-16" else b""
    for errors in OFFERED[encoding]:
        encoded = encode(units, encoding, errors)
        assert encoded.data == prefix + cpython_encode(units, codec, errors), errors
        assert encoded.errors == [(i, invalid_kind(u, errors)) for i, u in enumerate(units)
                                  if invalid_kind(u, errors) is not None], errors


# --- UTF-16 against CPython -------------------------------------------------------------------

def test_utf16_every_short_unit_sequence():
    # Every sequence of up to 3 interesting code units, then nothing or an odd byte, in both
    # byte orders; utf-16 with each byte order mark (without one it reads big-endian, CPython
    # the machine's order: compared with utf-16-be).
    units = [0x0041, 0x00E9, 0xD7FF, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xE000, 0xFEFF, 0xFFFE]
    for count in range(4):
        for sequence in itertools.product(units, repeat=count):
            for tail in (b"", b"\x00", b"\xd8", b"\xdc", b"\xff"):
                for order in ("little", "big"):
                    data = b"".join(u.to_bytes(2, order) for u in sequence) + tail
                    mark = (0xFEFF).to_bytes(2, order)
                    for errors in UTF16:
                        assert outputs(data, f"utf-16-{order[0]}e", errors) == \
                            cpython(data, f"utf-16-{order[0]}e", errors), (data.hex(), errors)
                        assert outputs(mark + data, "utf-16", errors) == \
                            cpython(mark + data, "utf-16", errors), (data.hex(), errors)
                    if order == "big" and data[:2] not in (b"\xfe\xff", b"\xff\xfe"):
                        assert outputs(data, "utf-16", "replace") == \
                            cpython(data, "utf-16-be", "replace")


@settings(max_examples=300, deadline=None)
@given(units16, st.sampled_from(["", "00", "d8", "dc"]), st.sampled_from(UTF16))
def test_utf16_streams(units, tail, errors):
    for order, encoding in (("little", "utf-16-le"), ("big", "utf-16-be")):
        data = b"".join(u.to_bytes(2, order) for u in units) + bytes.fromhex(tail)
        assert outputs(data, encoding, errors) == cpython(data, encoding, errors)


@pytest.mark.parametrize("data, want", [
    ("00d8",         [(0xFFFD, "surrogate")]),
    ("00dc00d8",     [(0xFFFD, "surrogate"), (0xFFFD, "surrogate")]),
    ("00d84100",     [(0xFFFD, "surrogate"), (0x41, None)]),
    ("00d800dc",     [(0x10000, None)]),
    ("41",           [(0xFFFD, "truncated")]),
    ("00d800",       [(0xFFFD, "truncated")]),   # the input ends inside a possible pair
    ("00dc00",       [(0xFFFD, "surrogate"), (0xFFFD, "truncated")]),
    ("fffe4100",     [(0xFEFF, None), (0x41, None)]),
])
def test_utf16_le_error_kinds(data, want):
    got = decode(bytes.fromhex(data), "utf-16-le")
    assert [(o.codepoint, k) for o, k in zip(got, kinds(got))] == want


def test_utf16_surrogatepass_flags_and_stops():
    assert decode(b"\x00\xd8A\x00", "utf-16-le", "surrogatepass") == [
        Decoded(0xD800, ErrorKind.SURROGATE), Decoded(0x41)]
    with pytest.raises(DecodeError) as info:   # as CPython: the lead passes, the odd byte stops
        decode(b"\x00\xd8\x00", "utf-16-le", "surrogatepass")
    assert (info.value.position, info.value.kind) == (2, ErrorKind.TRUNCATED)
    assert info.value.decoded == [Decoded(0xD800, ErrorKind.SURROGATE)]


def test_utf16_byte_order_mark():
    assert decode(b"\xff\xfeA\x00", "utf-16") == [Decoded(0x41)]
    assert decode(b"\xfe\xff\x00A", "utf-16") == [Decoded(0x41)]
    assert decode(b"\x00A", "utf-16") == [Decoded(0x41)]               # big-endian by default
    assert decode(b"\xfe\xff\xfe\xff", "utf-16") == [Decoded(0xFEFF)]  # only the first is a mark
    assert decode(b"\xff\xfe", "utf-16-le") == [Decoded(0xFEFF)]      # kept by the LE scheme
    assert encode([0x41, 0x1F600], "utf-16").data == b"\xfe\xff\x00A\xd8\x3d\xde\x00"
    assert encode([], "utf-16").data == b"\xfe\xff"


@pytest.mark.slow
def test_utf16_every_code_point():
    units = range(0x110000)
    data = encode(units, "utf-16-le", "surrogatepass").data
    assert data == "".join(map(chr, units)).encode("utf-16-le", "surrogatepass")
    # Decoding it back joins D BFF DC00 (adjacent in this order) into U+10FC00, as CPython does.
    got = [o.codepoint for o in decode(data, "utf-16-le", "surrogatepass")]
    assert got == [ord(c) for c in data.decode("utf-16-le", "surrogatepass")]
    scalars = encode(SCALARS, "utf-16-be", "strict")
    assert scalars == ("".join(map(chr, SCALARS)).encode("utf-16-be"), [])


# --- CESU-8, Modified UTF-8, WTF-8, RFC 2279 on arbitrary bytes --------------------------------

ORACLES = {"cesu-8": oracle_cesu8, "mutf-8": oracle_mutf8, "wtf-8": oracle_wtf8}


@pytest.mark.parametrize("encoding", ORACLES)
def test_every_lead_and_second_byte(encoding):
    # All 65,536 (lead, second) pairs with a sampled tail, cases joined by a newline (which
    # ends any sequence in every one of these encodings).
    rng = random.Random(26)
    data = b"\n".join(bytes([lead, second, *rng.choices(EDGE_BYTES, k=rng.randint(0, 4))])
                      for lead, second in itertools.product(range(256), repeat=2))
    assert [o.codepoint for o in decode(data, encoding)] == ORACLES[encoding](data)


@settings(max_examples=400, deadline=None)
@given(byte_streams)
def test_family_streams(data):
    for encoding, oracle in ORACLES.items():
        assert outputs(data, encoding, "replace") == oracle(data), encoding
    # RFC 2279 is generalized UTF-8 where no byte F4..FD occurs.
    if not any(0xF4 <= byte <= 0xFD for byte in data):
        assert outputs(data, "utf-8-rfc2279", "replace") == cpython(data, "utf-8",
                                                                     "test-generalized")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["41", "c3a9", "e282ac", "eda080", "edafbf", "edb080",
                                 "edbfbf", "eda0bdedb2a9", "00"]), max_size=12))
def test_cesu8_surrogatepass_is_icu_lenient(parts):
    data = bytes.fromhex("".join(parts))
    text = data.decode("utf-8", "surrogatepass").encode("utf-16-le", "surrogatepass") \
               .decode("utf-16-le", "surrogatepass")
    got = decode(data, "cesu-8", "surrogatepass")
    assert [o.codepoint for o in got] == [ord(c) for c in text]
    assert all((o.error is ErrorKind.SURROGATE) == (0xD800 <= o.codepoint <= 0xDFFF)
               for o in got)


@pytest.mark.parametrize("encoding, data, want", [
    # CESU-8: a lone surrogate sequence is one error; an ill-formed pair one per sequence.
    ("cesu-8", "eda080edb080", [(0x10000, None)]),
    ("cesu-8", "eda080", [(0xFFFD, "surrogate")]),
    ("cesu-8", "eda080eda080edb080", [(0xFFFD, "surrogate"), (0x10000, None)]),
    ("cesu-8", "edb080eda080", [(0xFFFD, "surrogate"), (0xFFFD, "surrogate")]),
    ("cesu-8", "eda080edb0", [(0xFFFD, "surrogate"), (0xFFFD, "truncated")]),
    ("cesu-8", "eda08041", [(0xFFFD, "surrogate"), (0x41, None)]),
    ("cesu-8", "eda0", [(0xFFFD, "truncated")]),
    ("cesu-8", "f0908080", [(0xFFFD, "invalid_byte")] + [(0xFFFD, "unexpected_continuation")] * 3),
    ("cesu-8", "f5", [(0xFFFD, "too_large")]),
    ("cesu-8", "c080", [(0xFFFD, "overlong"), (0xFFFD, "unexpected_continuation")]),
    ("cesu-8", "00", [(0x00, None)]),
    # Modified UTF-8: C0 80 is U+0000, a raw 00 and other overlongs are errors, lone surrogates
    # are Java chars.
    ("mutf-8", "c080", [(0x00, None)]),
    ("mutf-8", "00", [(0xFFFD, "invalid_byte")]),
    ("mutf-8", "c081", [(0xFFFD, "overlong"), (0xFFFD, "unexpected_continuation")]),
    ("mutf-8", "c0", [(0xFFFD, "truncated")]),
    ("mutf-8", "c1bf", [(0xFFFD, "overlong"), (0xFFFD, "unexpected_continuation")]),
    ("mutf-8", "e08080", [(0xFFFD, "overlong")] + [(0xFFFD, "unexpected_continuation")] * 2),
    ("mutf-8", "eda080eda080edb080", [(0xD800, None), (0x10000, None)]),
    ("mutf-8", "edb080eda080", [(0xDC00, None), (0xD800, None)]),
    ("mutf-8", "f09f8fa0", [(0xFFFD, "invalid_byte")] + [(0xFFFD, "unexpected_continuation")] * 3),
    # WTF-8: a trail sequence right after a lead sequence is one error; the lead stays.
    ("wtf-8", "eda080edb080", [(0xD800, None), (0xFFFD, "surrogate")]),
    ("wtf-8", "eda080eda080", [(0xD800, None), (0xD800, None)]),
    ("wtf-8", "edb080eda080", [(0xDC00, None), (0xD800, None)]),
    ("wtf-8", "eda08041edb080", [(0xD800, None), (0x41, None), (0xDC00, None)]),
    ("wtf-8", "f0908080", [(0x10000, None)]),
    ("wtf-8", "eda0", [(0xFFFD, "truncated")]),
    ("wtf-8", "f4908080", [(0xFFFD, "too_large")] + [(0xFFFD, "unexpected_continuation")] * 3),
    # RFC 2279: 1..6 bytes, shortest form only, surrogate values accepted.
    ("utf-8-rfc2279", "eda080", [(0xD800, None)]),
    ("utf-8-rfc2279", "f4908080", [(0x110000, None)]),
    ("utf-8-rfc2279", "f7bfbfbf", [(0x1FFFFF, None)]),
    ("utf-8-rfc2279", "f888808080", [(0x200000, None)]),
    ("utf-8-rfc2279", "fc8480808080", [(0x4000000, None)]),
    ("utf-8-rfc2279", "fdbfbfbfbfbf", [(0x7FFFFFFF, None)]),
    ("utf-8-rfc2279", "f887bfbfbf", [(0xFFFD, "overlong")] +
                                    [(0xFFFD, "unexpected_continuation")] * 4),
    ("utf-8-rfc2279", "fc83bfbfbfbf", [(0xFFFD, "overlong")] +
                                      [(0xFFFD, "unexpected_continuation")] * 5),
    ("utf-8-rfc2279", "fc80808080", [(0xFFFD, "overlong")] +
                                    [(0xFFFD, "unexpected_continuation")] * 4),
    ("utf-8-rfc2279", "fdbfbfbfbf41", [(0xFFFD, "truncated"), (0x41, None)]),
    ("utf-8-rfc2279", "fe", [(0xFFFD, "invalid_byte")]),
    ("utf-8-rfc2279", "c0af", [(0xFFFD, "overlong"), (0xFFFD, "unexpected_continuation")]),
])
def test_error_kinds(encoding, data, want):
    got = decode(bytes.fromhex(data), encoding)
    assert [(o.codepoint, k) for o, k in zip(got, kinds(got))] == want


def test_strict_positions_of_the_family():
    for encoding, data, position in [("cesu-8", "41eda08041", 1), ("cesu-8", "eda080edb0", 0),
                                     ("mutf-8", "410042", 1), ("wtf-8", "eda080edb080", 3),
                                     ("utf-8-rfc2279", "fdbfbf", 0), ("utf-16-be", "0041d800", 2)]:
        with pytest.raises(DecodeError) as info:
            decode(bytes.fromhex(data), encoding, "strict")
        assert info.value.position == position, encoding


# --- every policy, every encoding: whole buffers, streams, strict, surrogateescape ----------

ENCODING_POLICY_PAIRS = [(e, p) for e in ENCODINGS for p in OFFERED[e]]


@settings(max_examples=150, deadline=None)
@given(byte_streams, st.lists(st.integers(0, 40), max_size=4))
def test_streaming_equals_whole_buffer(data, cuts):
    for encoding, errors in ENCODING_POLICY_PAIRS:
        want = outputs(data, encoding, errors)
        decoder, got = Decoder(encoding, errors), []
        try:
            for start, end in itertools.pairwise([0, *sorted(cuts), len(data)]):
                got += decoder.feed(data[start:end])
            got = [o.codepoint for o in got + decoder.finish()]
        except DecodeError as error:
            got = ("error", error.position)
        assert got == want, (encoding, errors)


@settings(max_examples=200, deadline=None)
@given(byte_streams)
def test_strict_stops_at_the_first_error_of_replace(data):
    for encoding in ENCODINGS:
        replaced = decode(data, encoding, "replace")
        errors = [i for i, o in enumerate(replaced) if o.error is not ErrorKind.NONE]
        try:
            assert decode(data, encoding, "strict") == replaced and not errors, encoding
        except DecodeError as error:
            assert error.decoded == replaced[:errors[0]], encoding
            assert error.kind is replaced[errors[0]].error, encoding
            assert decode(data[:error.position], encoding, "strict") == error.decoded
            assert data[error.position:error.end]


@settings(max_examples=300, deadline=None)
@given(byte_streams)
def test_surrogateescape_is_lossless_where_offered(data):
    for encoding in ("utf-8", "cesu-8"):
        decoded = decode(data, encoding, "surrogateescape")
        assert all(0xDC80 <= o.codepoint <= 0xDCFF for o in decoded if o.error is not
                   ErrorKind.NONE)
        assert encode([o.codepoint for o in decoded], encoding, "surrogateescape") == (data, [])
    bom = b"\xef\xbb\xbf"
    decoded = decode(bom + data, "utf-8-sig", "surrogateescape")
    assert encode([o.codepoint for o in decoded], "utf-8-sig", "surrogateescape").data == \
        bom + data


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(INTERESTING_UNITS + [0x10000, 0x10FFFF, 0x110000]),
                          st.integers(0, 0x10FFFF)), max_size=20),
       st.lists(st.integers(0, 20), max_size=3))
def test_streaming_encoder_equals_whole_message(units, cuts):
    for encoding, errors in ENCODING_POLICY_PAIRS:
        encoder, data, errs = Encoder(encoding, errors), b"", []
        for start, end in itertools.pairwise([0, *sorted(cuts), len(units)]):
            chunk = encoder.feed(units[start:end])
            data, errs = data + chunk.data, errs + chunk.errors
        last = encoder.finish()
        assert (data + last.data, errs + last.errors) == encode(units, encoding, errors)


# --- Modified UTF-8 against the mutf8 package -------------------------------------------------

java_strings = st.lists(st.one_of(st.sampled_from(INTERESTING_UNITS), st.integers(0, 0xFFFF)),
                        max_size=30)


@settings(max_examples=400, deadline=None)
@given(java_strings)
def test_mutf8_round_trip_of_any_java_string(units):
    # Java chars (UTF-16 code units, U+0000 and lone surrogates included) to Modified UTF-8
    # and back, losslessly; the bytes are the mutf8 package's.
    data = encode(codepoints_from_utf16(units), "mutf-8", "strict")
    assert data == (mutf8.encode_modified_utf8("".join(map(chr, units))), [])
    assert encode(units, "mutf-8", "strict") == data      # pairs given as two units: the same
    decoded = decode(data.data, "mutf-8", "strict")
    assert utf16_units([o.codepoint for o in decoded]) == units
    if 0 not in units:   # the package accepts only C0 80 for U+0000 (and so do we)
        assert utf16_units([ord(c) for c in mutf8.decode_modified_utf8(data.data)]) == units


@pytest.mark.slow
def test_mutf8_every_code_point():
    units = range(0x110000)
    data = encode(units, "mutf-8", "strict")
    assert data == (mutf8.encode_modified_utf8("".join(map(chr, units))), [])
    # Decoding: the BMP (U+0000..U+FFFF, lone surrogates and all) in full, then every 61st
    # supplementary code point and the last, each on its own line.
    sample = [*range(0x10000), *range(0x10000, 0x110000, 61), 0x10FFFF]
    lines = [encode([u, 0x0A], "mutf-8").data for u in sample]
    got = [o.codepoint for o in decode(b"".join(lines), "mutf-8", "strict")]
    assert got == [c for u in sample for c in (u, 0x0A)]
    assert mutf8.decode_modified_utf8(b"".join(lines)) == "".join(
        chr(c) for u in sample for c in (u, 0x0A))


def test_mutf8_choices_against_readutf():
    # DataInput.readUTF accepts a raw 00 and overlong forms; writeUTF never writes them, the
    # JVM specification forbids 00 and F0..FF, and so do we.
    for data in (b"\x00", b"\xc0\x81", b"\xe0\x80\x80", b"\xf0\x9f\x8f\xa0"):
        assert any(o.error is not ErrorKind.NONE for o in decode(data, "mutf-8"))
    assert decode(b"\xc0\x80", "mutf-8") == [Decoded(0)]


# --- round trips ---------------------------------------------------------------------------

def wtf8_round_trip(units):
    data = encode(units, "wtf-8", "strict")
    assert data == (cpython_wtf8(units), [])
    assert encode(codepoints_from_utf16(units), "wtf-8", "strict") == data
    decoded = decode(data.data, "wtf-8", "strict")
    assert [o.codepoint for o in decoded] == codepoints_from_utf16(units)
    assert utf16_units([o.codepoint for o in decoded]) == units


@settings(max_examples=400, deadline=None)
@given(units16)
def test_wtf8_round_trip_of_any_utf16(units):
    wtf8_round_trip(units)


def test_wtf8_round_trip_of_every_unit_and_interesting_pairs():
    wtf8_round_trip([unit for u in range(0x10000) for unit in (u, 0x0A)])
    for pair in itertools.product(INTERESTING_UNITS, repeat=2):
        wtf8_round_trip(list(pair))


@pytest.mark.slow
def test_wtf8_every_code_point():
    # In this order the only lead surrogate followed by a trail one is U+DBFF U+DC00: joined.
    units = range(0x110000)
    assert encode(units, "wtf-8") == (cpython_wtf8(units), [])


@pytest.mark.slow
def test_cesu8_round_trip_of_every_scalar():
    data = encode(SCALARS, "cesu-8", "strict")
    assert data == (cpython_cesu8(SCALARS), [])
    # The mutf8 package's bytes too, once U+0000's C0 80 is 00 again.
    assert mutf8.encode_modified_utf8("".join(map(chr, SCALARS))).replace(
        b"\xc0\x80", b"\x00") == data.data
    # ... and back to the same scalars (whose UTF-8 is then CPython's: test_reference.py).
    assert [o.codepoint for o in decode(data.data, "cesu-8", "strict")] == SCALARS


def test_cesu8_is_utf8_on_the_bmp_only():
    for value in (0x00, 0x7F, 0x80, 0x7FF, 0x800, 0xFFFF):
        assert encode([value], "cesu-8").data == chr(value).encode("utf-8")
    for value in (0x10000, 0x1F600, 0x10FFFF):
        assert len(encode([value], "cesu-8").data) == 6
        assert encode([value], "cesu-8").data != chr(value).encode("utf-8")


def rfc2279_values():
    """Every length boundary and its neighbours, every power of two and its neighbours, and
    100,000 random values: each length's range sampled with the same weight."""
    values = set(range(0x200))
    for limit in (0, *RFC2279_LENGTH_LIMITS):
        values.update(range(max(0, limit - 64), min(limit + 64, 0x80000000)))
    for bit in range(31):
        values.update(v for v in ((1 << bit) - 1, 1 << bit, (1 << bit) + 1) if v < 0x80000000)
    rng = random.Random(2279)
    bounds = (0, *RFC2279_LENGTH_LIMITS)
    for _ in range(100_000):
        length = rng.randrange(6)
        values.add(rng.randrange(bounds[length], bounds[length + 1]))
    return sorted(values)


def test_rfc2279_shortest_forms_of_sampled_values():
    values = rfc2279_values()
    data = encode(values, "utf-8-rfc2279", "strict")
    assert data == (b"".join(rfc2279_bytes(v) for v in values), [])
    assert [o.codepoint for o in decode(data.data, "utf-8-rfc2279", "strict")] == values
    assert encode([0x80000000, 0xFFFFFFFF], "utf-8-rfc2279") == (
        b"\xef\xbf\xbd" * 2, [(0, ErrorKind.TOO_LARGE), (1, ErrorKind.TOO_LARGE)])


@pytest.mark.slow
def test_rfc2279_every_code_point_below_0x110000():
    units = range(0x110000)
    assert encode(units, "utf-8-rfc2279") == (
        "".join(map(chr, units)).encode("utf-8", "surrogatepass"), [])


def test_rfc2279_overlong_forms_of_every_length_are_rejected():
    # The shortest form of each value, re-encoded one byte longer (the naive decoder's value).
    for value in (0, 0x2F, 0x7F, 0x7FF, 0xFFFF, 0x1FFFFF, 0x3FFFFFF):
        length = len(rfc2279_bytes(value)) + 1
        bits = format(value, "b").zfill(5 * length + 1)
        lead = "1" * length + "0" + bits[:7 - length]
        tail = ["10" + bits[7 - length + 6 * k:7 - length + 6 * (k + 1)]
                for k in range(length - 1)]
        overlong = bytes(int(p, 2) for p in [lead, *tail])
        assert [o.error for o in decode(overlong, "utf-8-rfc2279")] == [ErrorKind.OVERLONG] + \
            [ErrorKind.UNEXPECTED_CONTINUATION] * (length - 1), overlong.hex()
