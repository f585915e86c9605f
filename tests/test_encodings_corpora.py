"""The reference model of the encoding family against the corpora in ``../shared/corpora``.

Each case states which semantics its expectation follows (``errors``, ``bom``, ``profile``,
``encoding``; see each folder's README.txt). Every case is mapped onto our encodings and
policies, or is a documented disagreement (``KNOWN``: the source follows a rule we chose not to
follow; the test asserts our answer and that it differs), or is not applicable (``ELSEWHERE``:
an encoding or an error callback this project does not have). The counts per folder are pinned.
"""

from collections import Counter

import pytest

import corpora
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim.encodings import (
    DecodeError, Decoder, codepoints_from_utf16, decode, encode, utf16_units)


CHECKED, KNOWN_, ELSEWHERE_ = "checked", "known disagreement", "not applicable"


def codepoints(outputs):
    return [o.codepoint for o in outputs]


def has_errors(outputs):
    return any(o.error is not ErrorKind.NONE for o in outputs)


def strict(data, encoding):
    """Our strict decoding: ``(code points, None)`` or ``(outputs before, DecodeError)``."""
    try:
        return codepoints(decode(data, encoding, "strict")), None
    except DecodeError as error:
        return codepoints(error.decoded), error


def chunked(data, encoding, errors, boundaries):
    """Decoding fed in pieces split at ``boundaries`` (byte offsets)."""
    decoder, out = Decoder(encoding, errors), []
    edges = [0, *boundaries, len(data)]
    for start, end in zip(edges, edges[1:]):
        out += decoder.feed(data[start:end])
    return out + decoder.finish()


def drop_leading_bom(outputs):
    """WHATWG TextDecoder: one leading U+FEFF of the output is removed."""
    if outputs and outputs[0].error is ErrorKind.NONE and outputs[0].codepoint == 0xFEFF:
        return outputs[1:]
    return outputs


def hex_bytes(case, field="input_hex"):
    return corpora.hex_bytes(case[field])


def input_units(case):
    """The case's input as code units for our encoders (UTF-16 input is passed as is)."""
    return case["input_utf16"] if "input_utf16" in case else case["input_codepoints"]


# --- cesu8/ ------------------------------------------------------------------------------------

def check_cesu8(case):
    op = case["op"]
    if op in ("decode", "validate"):
        data = hex_bytes(case)
        if case["errors"] in ("icu-substitute", "icu-default"):
            # ICU is lenient about lone surrogates: our surrogatepass.
            assert codepoints(decode(data, "cesu-8", "surrogatepass")) == \
                case["expected_codepoints"]
            return CHECKED
        if case["errors"] == "icu-skip":
            # ICU's skip callback drops each ill-formed sequence: our replace, errors dropped.
            kept = [o for o in decode(data, "cesu-8") if o.error is ErrorKind.NONE]
            assert codepoints(kept) == case["expected_codepoints"]
            return CHECKED
        got, error = strict(data, "cesu-8")
        assert (error is None) == case["valid"]
        if error is None and "expected_codepoints" in case:
            assert got == case["expected_codepoints"]
        if "valid_up_to" in case:
            assert (error.position, error.kind.label) == (case["valid_up_to"], case["error"])
        return CHECKED
    if op == "encode":
        assert encode(case["input_codepoints"], "cesu-8") == (hex_bytes(case, "expected_hex"), [])
    elif op == "roundtrip":
        data = encode(case["input_codepoints"], "cesu-8").data
        assert data == hex_bytes(case, "expected_hex")
        assert strict(data, "cesu-8") == (case["input_codepoints"], None)
    elif op == "utf8_identical":
        units = case["input_codepoints"]
        assert (encode(units, "cesu-8").data == encode(units, "utf-8").data) == case["expected"]
    elif op == "encoded_length":
        assert len(encode(case["input_codepoints"], "cesu-8").data) == case["expected"]
    elif op == "encode_file":
        text = corpora.family_file("cesu8", case["input_file"])
        cesu8 = corpora.family_file("cesu8", case["expected_file"])
        units, error = strict(text, "utf-8")
        assert error is None and encode(units, "cesu-8") == (cesu8, [])
        assert strict(cesu8, "cesu-8") == (units, None)
    else:
        raise AssertionError(f"unknown op {op}")
    return CHECKED


# --- mutf8/ ------------------------------------------------------------------------------------

MUTF8_KNOWN = {
    "art/utf_test.cc#GetUtf16FromUtf8:kAllSequences":
        "ART also accepts the 4-byte UTF-8 form F0 9F 8F A0; Modified UTF-8 has none (readUTF "
        "and the JVM specification reject a 1111xxxx byte), and so do we",
    "art/utf_test.cc#CountModifiedUtf8Chars:kAllSequences": "the same input",
}


def check_mutf8(case):
    op = case["op"]
    if case["id"] in MUTF8_KNOWN:
        got, error = strict(hex_bytes(case), "mutf-8")
        assert error is not None and error.kind is ErrorKind.INVALID_BYTE
        return KNOWN_
    if op == "decode":
        got, error = strict(hex_bytes(case), "mutf-8")
        assert (error is None) == case["valid"]
        if error is None:
            assert got == case.get("expected_codepoints", got)
            assert utf16_units(got) == case.get("expected_utf16", utf16_units(got))
    elif op == "utf16_length":
        got, error = strict(hex_bytes(case), "mutf-8")
        assert error is None and len(utf16_units(got)) == case["expected"]
    elif op in ("encode", "pair"):
        assert encode(input_units(case), "mutf-8") == (hex_bytes(case, "expected_hex"), [])
        if op == "pair":
            assert strict(hex_bytes(case, "expected_hex"), "mutf-8") == \
                (case["input_codepoints"], None)
    elif op == "roundtrip":
        data = encode(input_units(case), "mutf-8").data
        got, error = strict(data, "mutf-8")
        assert error is None
        if "input_utf16" in case:
            assert utf16_units(got) == case["input_utf16"]
        else:
            assert got == case["input_codepoints"]
    elif op == "utf8_identical":
        units = case["input_codepoints"]
        assert (encode(units, "mutf-8").data == encode(units, "utf-8").data) == case["expected"]
    elif op == "utf8_mutf8_pair":
        utf8, mutf8 = hex_bytes(case, "input_utf8_hex"), hex_bytes(case, "expected_hex")
        units, error = strict(utf8, "utf-8")
        assert error is None and encode(units, "mutf-8") == (mutf8, [])
        assert encode(strict(mutf8, "mutf-8")[0], "utf-8") == (utf8, [])
    else:
        raise AssertionError(f"unknown op {op}")
    return CHECKED


# --- wtf8/ -------------------------------------------------------------------------------------

def check_wtf8(case):
    op = case["op"]
    if op in ("encode", "from_utf16", "pair_utf16"):
        expected = hex_bytes(case, "expected_hex")
        # Our encoder joins a lead surrogate followed by a trail one, so UTF-16 input can be
        # given as is, or decoded to code points first (the spec's conversion): the same.
        assert encode(input_units(case), "wtf-8") == (expected, [])
        if "input_utf16" in case:
            assert encode(codepoints_from_utf16(case["input_utf16"]), "wtf-8").data == expected
        if op == "pair_utf16":
            got, error = strict(expected, "wtf-8")
            assert error is None and utf16_units(got) == case["input_utf16"]
        if "expected_is_utf8" in case:
            assert (strict(expected, "utf-8")[1] is None) == case["expected_is_utf8"]
    elif op == "concat":
        # Concatenation = converting both to UTF-16, concatenating, converting back (spec).
        units = [u for part in case["input_parts_hex"]
                 for u in utf16_units(strict(corpora.hex_bytes(part), "wtf-8")[0])]
        assert encode(units, "wtf-8") == (hex_bytes(case, "expected_hex"), [])
    elif op in ("decode", "to_utf16"):
        got, error = strict(hex_bytes(case), "wtf-8")
        assert error is None
        if op == "decode":
            assert got == case["expected_codepoints"]
        else:
            assert utf16_units(got) == case["expected_utf16"]
    elif op in ("to_utf8_lossy", "to_utf8_strict"):
        got, error = strict(hex_bytes(case), "wtf-8")
        assert error is None
        if op == "to_utf8_lossy":   # surrogates become U+FFFD
            assert encode(got, "utf-8", "replace").data == hex_bytes(case, "expected_hex")
        else:
            utf8 = encode(got, "utf-8", "strict")
            assert (not utf8.errors) == case["valid"]
            if case["valid"]:
                assert utf8.data == hex_bytes(case, "expected_hex")
    elif op == "validate":
        assert (strict(hex_bytes(case), "wtf-8")[1] is None) == case["valid"]
    else:
        raise AssertionError(f"unknown op {op}")
    return CHECKED


# --- utf16/ and bom/: the labels and BOM rules of the sources ---------------------------------

LABELS = {"utf-8": "utf-8", "utf-16le": "utf-16-le", "utf-16be": "utf-16-be",
          "utf-16": "utf-16"}


def sniffed(data, label):
    """WHATWG "decode" (BOM sniffing): a leading EF BB BF / FE FF / FF FE overrides the label
    and is removed: our utf-8-sig, or utf-16 (which reads the mark); else the label."""
    if data.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    if data[:2] in (b"\xfe\xff", b"\xff\xfe"):
        return "utf-16"
    return LABELS.get(label)


def whatwg_decode(case, errors):
    """Outputs under the case's BOM rule, fed whole and at every split the case names."""
    data, label, rule = hex_bytes(case), case["encoding"], case["bom"]
    encoding = sniffed(data, label) if rule == "whatwg-sniff" else LABELS[label]
    splits = [list(case.get("chunk_boundaries", []))]
    if case.get("all_split_points"):
        splits += [[k] for k in range(len(data) + 1)]
    for size in [case.get("chunk_size"), *case.get("stream_window_sizes", [])]:
        if size:
            splits.append(list(range(size, len(data), size)))
    results = []
    for boundaries in splits:
        outputs = chunked(data, encoding, errors, boundaries)
        if rule in ("textdecoder", "iconv-lite", "strip-own") and encoding != "utf-16":
            outputs = drop_leading_bom(outputs)
        results.append(outputs)
    assert all(r == results[0] for r in results)
    return results[0]


UTF16_KNOWN = {
    "iconv-lite/utf16-test.js#UTF-16BE:decodes uneven length buffers with no error":
        "iconv-lite drops an odd trailing byte silently; we (CPython, WHATWG) give U+FFFD",
}


def check_utf16(case):
    if case["id"] in UTF16_KNOWN:
        assert codepoints(decode(hex_bytes(case), "utf-16-be")) == \
            case["expected_codepoints"] + [0xFFFD]
        return KNOWN_
    if case["op"] == "encode":
        encoding = LABELS[case["encoding"]]
        got = encode(case["input_codepoints"], encoding, "replace")
        if case.get("errors") == "icu-stop":
            got = encode(case["input_codepoints"], encoding, "strict")
            assert got.errors and not case["valid"]
        assert got.data == hex_bytes(case, "expected_hex")
        return CHECKED
    errors = case["errors"]
    if errors in ("fatal", "icu-stop"):
        data = hex_bytes(case)
        got, error = strict(data, LABELS[case["encoding"]])
        assert (error is None) == case["valid"]
        if error is not None and "expected_codepoints" in case:
            assert got == case["expected_codepoints"]
        if case.get("error") == "truncated":
            assert error.kind is ErrorKind.TRUNCATED
        return CHECKED
    outputs = whatwg_decode(case, "replace")
    if "expected_codepoints" in case:
        assert codepoints(outputs) == case["expected_codepoints"]
    if "valid" in case:
        assert has_errors(outputs) != case["valid"]
    if "had_errors" in case:
        assert has_errors(outputs) == case["had_errors"]
    if errors == "icu-default":
        assert not has_errors(outputs)
    return CHECKED


BOM_KNOWN = {
    "iconv-lite/utf16-test.js#UTF-16 decoder:handles very short buffers:61":
        "iconv-lite drops a single odd byte; we (CPython, WHATWG) give U+FFFD",
    "iconv-lite/utf16-test.js#UTF-16 decoder:uses spaces when there is no BOM (LE)":
        "iconv-lite guesses little-endian from the text; without a mark we read big-endian "
        "(The Unicode Standard D98)",
    "iconv-lite/utf16-test.js#UTF-16 decoder:uses UTF-16LE if no BOM and heuristics failed":
        "iconv-lite's default without a mark is little-endian; ours is big-endian (D98)",
    "iconv-lite/utf16-test.js#UTF-16 decoder:default utf-16le option": "the same",
    "iconv-lite/bom-test.js#'UTF-16' encoding adds BOM by default":
        "iconv-lite's utf-16 writes FF FE and little-endian units; ours FE FF and big-endian",
    "iconv-lite/utf16-test.js#UTF-16 encoder:uses UTF-16LE and adds BOM": "the same",
    "icu/conversion.txt#fromUnicode:UTF-16:empty":
        "ICU writes no byte order mark for an empty text; we (CPython) write it for every "
        "message",
}

#: ICU's converters that are none of ours: the Java "Unicode" converter, which requires a
#: mark, and the callbacks that write illegal bytes as text.
BOM_ELSEWHERE_ICU = {
    "icu/conversion.txt#toUnicode:+UTF-16,version=1:00610062",
    "icu/conversion.txt#toUnicode:UnicodeBig:fffe0061",
    "icu/conversion.txt#toUnicode:x-UTF-16LE-BOM:feff6100",
}

# ICU converter -> ours: "UTF-16", UnicodeBig and the Java-compatible ones read a mark (BE
# without one); UTF-16BE/LE never do; UnicodeLittle reads an LE mark (LE without one).
ICU = {"icu:UTF-16": "utf-16", "icu:+UTF-16,version=1": "utf-16",
       "icu:+UTF-16,version=2": "utf-16", "icu:UTF-16BE,version=1": "utf-16",
       "icu:UnicodeBig": "utf-16", "icu:UTF-16BE": "utf-16-be", "icu:UTF-16LE": "utf-16-le"}
ICU_LITTLE = {"icu:UTF-16LE,version=1", "icu:UnicodeLittle"}


def check_bom(case):
    label, rule, op = case["encoding"], case["bom"], case["op"]
    if case["id"] in BOM_KNOWN:
        return check_bom_known(case)
    if case["id"] in BOM_ELSEWHERE_ICU:
        return ELSEWHERE_
    if label.startswith("icu:"):
        if op == "encode":
            units = case["input_codepoints"]
            data = (b"\xff\xfe" + encode(units, "utf-16-le").data if label in ICU_LITTLE else
                    encode(units, ICU[label]).data)
            assert data == hex_bytes(case, "expected_hex")
            return CHECKED
        data = hex_bytes(case)
        encoding = ICU.get(label) or ("utf-16" if data[:2] == b"\xff\xfe" else "utf-16-le")
        assert codepoints(decode(data, encoding)) == case["expected_codepoints"]
        return CHECKED
    if op == "encode":
        units = case["input_codepoints"]
        data = {"utf-8+addBOM": lambda: encode(units, "utf-8-sig").data,
                "utf-16le+addBOM": lambda: b"\xff\xfe" + encode(units, "utf-16-le").data,
                "utf-16be+addBOM": lambda: encode(units, "utf-16").data,
                "utf-16-noBOM": lambda: encode(units, "utf-16-le").data}[label]()
        assert data == hex_bytes(case, "expected_hex")
        return CHECKED
    data = hex_bytes(case)
    encoding = sniffed(data, label) if rule == "whatwg-sniff" else LABELS.get(label)
    if encoding is None or (rule == "strip-own" and label not in LABELS):
        return ELSEWHERE_   # windows-1252 and windows-1257 (single-byte encodings)
    if case["errors"] == "fatal":
        assert (strict(data, encoding)[1] is None) == case["valid"]
        return CHECKED
    if label == "utf-16" and rule == "none":
        # iconv-lite with stripBOM=false: the mark chooses the byte order and stays.
        encoding = "utf-16-le" if data[:2] == b"\xff\xfe" else "utf-16-be"
        case = {**case, "encoding": encoding.replace("-le", "le").replace("-be", "be")}
    outputs = whatwg_decode(case, "replace")
    if op == "decode_not_equal":
        assert codepoints(outputs) != case["not_expected_codepoints"]
    else:
        assert codepoints(outputs) == case["expected_codepoints"]
    if "had_errors" in case:
        assert has_errors(outputs) == case["had_errors"]
    return CHECKED


def check_bom_known(case):
    if case["op"] == "encode":
        units = case["input_codepoints"]
        ours = encode(units, "utf-16").data
        assert ours != hex_bytes(case, "expected_hex")
        if units:   # the source's bytes are our little-endian scheme after FF FE
            assert hex_bytes(case, "expected_hex") == b"\xff\xfe" + encode(units,
                                                                          "utf-16-le").data
        else:
            assert ours == b"\xfe\xff"
        return KNOWN_
    data = hex_bytes(case)
    ours = codepoints(decode(data, "utf-16"))
    assert ours != case["expected_codepoints"]
    if len(data) % 2:
        assert ours == case["expected_codepoints"] + [0xFFFD]
    else:   # the source read little-endian
        assert codepoints(decode(data, "utf-16-le")) == case["expected_codepoints"]
    return KNOWN_


# --- rfc2279/ ----------------------------------------------------------------------------------

#: Kuhn counts one error per lead byte with the continuation bytes it announces; maximal
#: subparts end an overlong prefix at its second byte (E0 80 is two errors).
RFC2279_KNOWN = {
    "kuhn/UTF-8-test.txt#3.3.2": 2, "kuhn/UTF-8-test.txt#3.3.3": 3,
    "kuhn/UTF-8-test.txt#3.3.4": 4, "kuhn/UTF-8-test.txt#3.3.5": 5,
    "kuhn/UTF-8-test.txt#3.4": 20,
}
PROFILES = {"rfc2279": "utf-8-rfc2279", "lua-lax": "utf-8-rfc2279", "lua-strict": "utf-8"}


def check_rfc2279(case):
    encoding = PROFILES[case["profile"]]
    op = case["op"]
    if op == "decode":
        data = hex_bytes(case)
        got, error = strict(data, encoding)
        assert (error is None) == case["valid"]
        if error is None and "expected_codepoints" in case:
            assert got == case["expected_codepoints"]
        if "error_offset" in case:
            assert error.position == case["error_offset"]
        if "naive_value" in case:
            assert error.kind is ErrorKind.OVERLONG
        if "valid_rfc3629" in case:
            assert (strict(data, "utf-8")[1] is None) == case["valid_rfc3629"]
        if "expected_error_count" in case:
            count = sum(o.error is not ErrorKind.NONE for o in decode(data, encoding))
            if case["id"] in RFC2279_KNOWN:
                assert count == RFC2279_KNOWN[case["id"]] != case["expected_error_count"]
                return KNOWN_
            assert count == case["expected_error_count"]
        return CHECKED
    units = case["input_codepoints"]
    encoded = encode(units, encoding, "strict")
    if op == "encode" and case.get("valid") is False:
        assert encoded.errors
        return CHECKED
    assert not encoded.errors
    if "expected_hex" in case:
        assert encoded.data == hex_bytes(case, "expected_hex")
    if "expected_length" in case:
        assert len(encoded.data) == case["expected_length"]
    if op in ("pair", "roundtrip"):
        assert strict(encoded.data, encoding) == (units, None)
    return CHECKED


# --- the corpora ------------------------------------------------------------------------------

CHECKS = {"cesu8": check_cesu8, "mutf8": check_mutf8, "wtf8": check_wtf8,
          "utf16": check_utf16, "bom": check_bom, "rfc2279": check_rfc2279}


@pytest.mark.parametrize("folder, expected", [
    ("cesu8",   {CHECKED: 108}),
    ("mutf8",   {CHECKED: 224, KNOWN_: 2}),
    ("wtf8",    {CHECKED: 129}),
    ("utf16",   {CHECKED: 61, KNOWN_: 1}),
    ("bom",     {CHECKED: 112, KNOWN_: 7, ELSEWHERE_: 18}),
    ("rfc2279", {CHECKED: 89, KNOWN_: 5}),
])
def test_corpus(folder, expected):
    corpora.require()
    tally = Counter()
    for name, case in corpora.family_cases(folder):
        try:
            tally[CHECKS[folder](case)] += 1
        except AssertionError as error:
            raise AssertionError(f"{folder}/{name} {case['id']}: {error}") from None
    assert dict(tally) == expected
