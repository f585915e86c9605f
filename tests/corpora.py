"""Loaders for the external UTF-8 conformance corpora in ``../shared/corpora``.

The corpora are read in place (never copied into this repository). Tests call :func:`require`
first, which skips them with a clear reason when the folder is absent. ``$UTF8_GATEWARE_CORPORA``
overrides the location.
"""

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest


ROOT = Path(os.environ.get("UTF8_GATEWARE_CORPORA",
                           Path(__file__).resolve().parents[1].parent / "shared" / "corpora"))


def require():
    """Skip the calling test unless the corpora are present."""
    if not (ROOT / "README.md").is_file():
        pytest.skip(f"conformance corpora not found at {ROOT} (expected ../shared/corpora "
                    f"beside the repository, or $UTF8_GATEWARE_CORPORA)")


@dataclass(frozen=True)
class DecodeCase:
    """One decoding case. ``expected``: the code points with ``errors="replace"`` (or None if
    the corpus states only validity); ``valid``: whether strict decoding must succeed (or None
    if not stated)."""
    id: str
    data: bytes
    expected: tuple = None
    valid: bool = None


@dataclass(frozen=True)
class EncodeCase:
    """UTF-32 code units (surrogate pairs of the corpus's UTF-16 joined, lone surrogates kept)
    and the UTF-8 bytes a WHATWG encoder (our ``errors="replace"``) produces for them."""
    id: str
    units: tuple
    expected: bytes


def _load(name):
    with open(ROOT / name, encoding="utf-8") as file:
        return json.load(file)


def _hex(text):
    return bytes.fromhex("" if text in (None, "nothing") else text.replace(" ", ""))


def _replace_corpus(name):
    for case in _load(name)["cases"]:
        data = _hex(case["input_hex"])
        expected = tuple(case["expected_codepoints"])
        valid = "".join(map(chr, expected)).encode("utf-8", "surrogatepass") == data
        yield DecodeCase(case["id"], data, expected, valid)


def _flenniken():
    with open(ROOT / "flenniken_utf8tests" / "utf8tests.txt", encoding="ascii") as file:
        for line in file:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = [part.strip() for part in line.split(":")]
            number, kind = parts[0], parts[1]
            if kind == "valid":
                data = parts[2].encode("ascii")
                yield DecodeCase(f"flenniken#{number}", data, tuple(data), True)
            elif kind == "valid hex":
                yield DecodeCase(f"flenniken#{number}", _hex(parts[2]), None, True)
            elif kind == "invalid hex":
                # The corpus states the replaced output as UTF-8 bytes of U+FFFD and scalars.
                expected = tuple(map(ord, _hex(parts[4]).decode("utf-8")))
                yield DecodeCase(f"flenniken#{number}", _hex(parts[2]), expected, False)
            else:
                raise ValueError(f"unknown flenniken line kind: {line!r}")


def decode_cases():
    """Every whole-buffer decoding case with a stated expectation."""
    cases = []
    for name in ("unicode_ch3/maximal_subparts_examples.json", "rust_std/from_utf8_lossy.json",
                 "bstr/lossy_tests.json", "encoding_rs/utf8_decode_replace.json"):
        cases.extend(_replace_corpus(name))
    llvm = _load("llvm_convertutf/utf8_to_utf32_lenient.json")
    for case in llvm["cases"]:
        if not case["partial"]:
            cases.append(DecodeCase(case["id"], _hex(case["input_hex"]),
                                    tuple(case["expected_codepoints"]),
                                    case["llvm_result"] == "conversionOK"))
    cases.extend(_flenniken())
    wpt = _load("wpt/wpt_utf8_cases.json")
    for case in wpt["fatal_must_error"]:
        cases.append(DecodeCase(case["id"], _hex(case["input_hex"]), None, False))
    for case in wpt["eof_replace"]:
        cases.append(DecodeCase(case["id"], _hex(case["input_hex"]),
                                tuple(case["expected_codepoints"]), None))
    manifest = _load("jsontestsuite/manifest.json")
    for entry in manifest["files"]:
        data = (ROOT / "jsontestsuite" / entry["file"]).read_bytes()
        cases.append(DecodeCase(f"jsontestsuite/{entry['file']}", data, None,
                                entry["utf8_valid"]))
    return cases


def flenniken_whole_file():
    """``(utf8tests.bin, its replaced output as UTF-8)`` from the flenniken corpus."""
    folder = ROOT / "flenniken_utf8tests"
    return ((folder / "utf8tests.bin").read_bytes(),
            (folder / "artifacts_utf8.replace.ref.txt").read_bytes())


def partial_cases():
    """LLVM's partial cases: ``(id, data, expected code points, prefix left pending?)`` for
    decoding without the end of the stream."""
    llvm = _load("llvm_convertutf/utf8_to_utf32_lenient.json")
    return [(case["id"], _hex(case["input_hex"]), tuple(case["expected_codepoints"]),
             case["llvm_result"] == "sourceExhausted")
            for case in llvm["cases"] if case["partial"]]


def streaming_cases():
    """WPT streaming cases: ``(id, [(chunk or None for the end, expected code points)])``."""
    wpt = _load("wpt/wpt_utf8_cases.json")
    return [(case["id"], [(None if step["chunk_hex"] is None else _hex(step["chunk_hex"]),
                           bool(step["stream"]), tuple(step["expected_codepoints"]))
                          for step in case["steps"]])
            for case in wpt["streaming"]]


def _utf16_to_utf32(units):
    out, index = [], 0
    while index < len(units):
        unit = units[index]
        if (0xD800 <= unit <= 0xDBFF and index + 1 < len(units)
                and 0xDC00 <= units[index + 1] <= 0xDFFF):
            out.append(0x10000 + ((unit - 0xD800) << 10) + (units[index + 1] - 0xDC00))
            index += 2
        else:
            out.append(unit)
            index += 1
    return tuple(out)


def encode_cases():
    """Encoder cases (encoding_rs and WPT): lone surrogates must become EF BF BD."""
    cases = []
    for case in _load("encoding_rs/utf16_to_utf8_encode.json")["cases"]:
        cases.append(EncodeCase(case["id"], _utf16_to_utf32(case["utf16_units"]),
                                _hex(case["expected_utf8_hex"])))
    for case in _load("wpt/wpt_utf8_cases.json")["encode_utf16_to_utf8"]:
        cases.append(EncodeCase(case["id"], _utf16_to_utf32(case["utf16_units"]),
                                _hex(case["expected_utf8_hex"])))
    return cases


def kuhn():
    """Markus Kuhn's UTF-8 decoder capability and stress test (input only)."""
    return (ROOT / "kuhn" / "UTF-8-test.txt").read_bytes()


# --- the encoding family (cesu8/, mutf8/, wtf8/, utf16/, bom/, rfc2279/) -----------------------

#: The folders of the encoding family, each with its own README.txt and check.py.
FAMILY_FOLDERS = ("cesu8", "mutf8", "wtf8", "utf16", "bom", "rfc2279")


def family_cases(folder):
    """Every case of the family folder ``folder``, as ``(file name, case dict)`` in file order.

    The fields are the folder's README.txt's: ``op``, ``input_hex``/``input_codepoints``/
    ``input_utf16``, the expectation, and the semantics it follows (``errors``, ``bom``,
    ``profile``, ``encoding``)."""
    cases = []
    for path in sorted((ROOT / folder).glob("*.json")):
        cases.extend((path.name, case) for case in _load(f"{folder}/{path.name}")["cases"])
    return cases


def family_file(folder, name):
    """The bytes of a data file of a family folder (e.g. cesu8/random.cesu8.txt)."""
    return (ROOT / folder / name).read_bytes()


def hex_bytes(text):
    """A corpus hex string (spaces allowed) as bytes."""
    return _hex(text)
