"""The command line with encodings other than UTF-8: ``decode --encoding``, ``encode
--encoding`` and ``transcode --from --to``, on every engine, against CPython's codecs where they
have the encoding and against the reference model of the family where they do not."""

import json

import pytest

from utf8_gateware.sim import encodings
from test_cli import BAD, SAMPLE, assert_one_line_error, run


ENGINES = ["reference", "python", "compiled"]


def cases(first, second):
    """``(engine, encoding)`` pairs: every engine with ``first``, the compiled one (a C++ build
    of a model per core) not with ``second``, whose core differs only in its byte order."""
    return [(engine, encoding) for encoding in (first, second) for engine in ENGINES
            if engine != "compiled" or encoding == first]
#: Text with every length of UTF-8 and UTF-16 character, and ill-formed UTF-8.
TEXT = SAMPLE.read_bytes()[:600] + BAD + "Ω€😀\0".encode()
#: UTF-16LE with a lone lead and a lone trail surrogate, a pair, and an odd trailing byte.
UTF16LE = "aΩ😀b".encode("utf-16-le") + b"\x00\xd8c\x00\x00\xdc" + b"\x41"


def swap(data):
    """UTF-16LE bytes as UTF-16BE (an odd trailing byte stays)."""
    pairs = bytearray(data[:len(data) & ~1])
    pairs[0::2], pairs[1::2] = data[1:len(data) & ~1:2], data[0:len(data) & ~1:2]
    return bytes(pairs) + data[len(data) & ~1:]


@pytest.mark.parametrize("engine,target", cases("utf-16-le", "utf-16-be"))
def test_transcode_from_utf8(tmp_path, capsys, engine, target):
    (tmp_path / "in").write_bytes(TEXT)
    status, _ = run(capsys, "transcode", tmp_path / "in", "--from", "utf-8", "--to", target,
                    "-o", tmp_path / "out", "--engine", engine, "--stats", tmp_path / "s.json")
    assert status == 0
    assert (tmp_path / "out").read_bytes() == TEXT.decode("utf-8", "replace").encode(target)
    stats = json.loads((tmp_path / "s.json").read_text())
    assert (stats["from"], stats["to"], stats["bytes_in"]) == ("utf-8", target, len(TEXT))
    # BAD: C0 AF (2), ED A0 80 (3), F4 90 80 80 (4), E2 82 (1): 10 maximal subparts.
    assert sum(stats["errors"].values()) == 10
    assert stats["errors"]["truncated"] == 1
    assert ("cycles" in stats) == (engine != "reference")


@pytest.mark.parametrize("engine,source", cases("utf-16-be", "utf-16-le"))
def test_decode_and_transcode_utf16(tmp_path, capsys, engine, source):
    data = UTF16LE if source == "utf-16-le" else swap(UTF16LE)
    (tmp_path / "in").write_bytes(data)
    status, _ = run(capsys, "decode", tmp_path / "in", "--encoding", source, "-o",
                    tmp_path / "cp", "--output-format", "utf32le", "--engine", engine)
    assert status == 0
    assert (tmp_path / "cp").read_bytes() == data.decode(source, "replace").encode("utf-32-le")
    status, _ = run(capsys, "transcode", tmp_path / "in", "--from", source, "--to", "utf-8",
                    "-o", tmp_path / "out", "--engine", engine, "--stats", tmp_path / "s.json")
    assert status == 0
    assert (tmp_path / "out").read_bytes() == data.decode(source, "replace").encode("utf-8")
    # Two lone surrogates and the odd byte.
    errors = json.loads((tmp_path / "s.json").read_text())["errors"]
    assert (errors["surrogate"], errors["truncated"]) == (2, 1)


@pytest.mark.parametrize("engine", ENGINES)
def test_utf16_surrogatepass(tmp_path, capsys, engine):
    """UTF-16LE to UTF-16BE passing lone surrogates (potentially ill-formed UTF-16 kept)."""
    data = UTF16LE[:-1]
    (tmp_path / "in").write_bytes(data)
    status, _ = run(capsys, "transcode", tmp_path / "in", "--from", "utf-16-le", "--to",
                    "utf-16-be", "--errors", "surrogatepass", "-o", tmp_path / "out", "--engine",
                    engine)
    assert status == 0
    assert (tmp_path / "out").read_bytes() == \
        data.decode("utf-16-le", "surrogatepass").encode("utf-16-be", "surrogatepass")


@pytest.mark.parametrize("engine,target", cases("utf-16-le", "utf-16-be"))
def test_encode_utf16(tmp_path, capsys, engine, target):
    units = [0x41, 0xD800, 0x1F600, 0xFEFF, 0x110000, 0xDFFF, 0]
    (tmp_path / "in").write_bytes(b"".join(unit.to_bytes(4, "little") for unit in units))
    status, _ = run(capsys, "encode", tmp_path / "in", "--encoding", target, "-o",
                    tmp_path / "out", "--engine", engine, "--stats", tmp_path / "s.json")
    assert status == 0
    assert (tmp_path / "out").read_bytes() == encodings.encode(units, target).data == \
        "A\ufffd😀\ufeff\ufffd\ufffd\0".encode(target)
    status, err = run(capsys, "encode", tmp_path / "in", "--encoding", target, "--errors",
                      "strict", "-o", tmp_path / "out", "--engine", engine)
    assert status == 1
    assert "3 invalid code unit(s); the first is U+D800 (surrogate) at index 1" in err
    assert (tmp_path / "out").read_bytes() == "A😀\ufeff\0".encode(target)


@pytest.mark.parametrize("engine,command", [("python", "decode"), ("python", "encode"),
                                            ("python", "transcode"), ("compiled", "decode")])
def test_utf16_with_mark(tmp_path, capsys, engine, command):
    """``utf-16`` through the gateware (``TextDecoder``/``TextEncoder("utf-16")``): the mark
    gives the order and is dropped, FE FF is written before big-endian units; an empty message
    and one of only a mark give what the reference engine gives (the mark, or nothing)."""
    def utf16(text):          # CPython's utf-16 writes the machine's order
        return b"\xfe\xff" + text.encode("utf-16-be")

    text = "aΩ😀\ufeff"
    decode = ["decode", "--encoding", "utf-16", "--output-format", "utf32le"]
    cases = {   # (input, arguments, expected output)
        "decode": [(LE_MARKED, decode, LE_MARKED.decode("utf-16", "replace")),
                   (swap(UTF16LE), decode, swap(UTF16LE).decode("utf-16-be", "replace")),
                   (b"\xfe\xff", decode, ""), (b"", decode, "")],
        "encode": [(text.encode("utf-32-le"), ["encode", "--encoding", "utf-16"], utf16(text)),
                   (b"", ["encode", "--encoding", "utf-16"], utf16(""))],
        "transcode": [
            (LE_MARKED, ["transcode", "--from", "utf-16", "--to", "utf-8-sig"],
             LE_MARKED.decode("utf-16", "replace").encode("utf-8-sig")),
            (b"\xff\xfe", ["transcode", "--from", "utf-16", "--to", "utf-8-sig"],
             b"\xef\xbb\xbf"),
            (TEXT, ["transcode", "--to", "utf-16"], utf16(TEXT.decode("utf-8", "replace"))),
            (b"", ["transcode", "--to", "utf-16"], utf16(""))],
    }[command]
    for index, (data, argv, want) in enumerate(cases):
        (tmp_path / "in").write_bytes(data)
        status, _ = run(capsys, *argv, tmp_path / "in", "-o", tmp_path / "out", "--engine",
                        engine)
        assert status == 0
        got = (tmp_path / "out").read_bytes()
        assert got == (want.encode("utf-32-le") if isinstance(want, str) else want), index


#: UTF-16 with a little-endian mark, text with a U+FEFF (kept) and an odd trailing byte.
LE_MARKED = "\ufeffaΩ😀\ufeff".encode("utf-16-le") + b"\x41"


@pytest.mark.parametrize("source,target", [("cesu-8", "utf-8"), ("mutf-8", "utf-16-le"),
                                           ("utf-8", "wtf-8"), ("utf-16", "utf-8-sig")])
def test_reference_family(tmp_path, capsys, source, target):
    """The reference engine transcodes between any two encodings of the model."""
    text = "a\0Ω😀"
    data = encodings.encode([ord(c) for c in text], source).data
    (tmp_path / "in").write_bytes(data)
    status, _ = run(capsys, "transcode", tmp_path / "in", "--from", source, "--to", target,
                    "-o", tmp_path / "out", "--engine", "reference")
    assert status == 0
    assert (tmp_path / "out").read_bytes() == \
        encodings.encode([ord(c) for c in text], target).data


@pytest.mark.parametrize("argv,message", [
    (["transcode", "--from", "utf-8-rfc2279", "--engine", "python"],
     "the gateware has no transcoder from utf-8-rfc2279 to utf-8 (the reference engine has)"),
    (["transcode", "--to", "utf-16-le", "--errors", "surrogateescape", "--engine", "python"],
     "transcoder from utf-8 to utf-16-le: errors must be one of 'replace', not "
     "'surrogateescape'"),
    (["decode", "--errors", "surrogatepass", "--engine", "reference"],
     "decoder for utf-8: errors must be one of 'replace', 'surrogateescape', not "
     "'surrogatepass'"),
    (["decode", "--encoding", "utf-16-le", "--lanes", "4", "--engine", "python"],
     "lanes apply to the UTF-8 decoder, not to the decoder for utf-16-le"),
    (["decode", "--encoding", "utf-8-rfc2279", "--errors", "surrogateescape", "--engine",
      "python"], "decoder for utf-8-rfc2279: errors must be one of 'replace', not "
                 "'surrogateescape'"),
    (["encode", "--encoding", "mutf-8", "--errors", "surrogateescape", "--engine", "python"],
     "encoder for mutf-8: errors must be one of 'replace', 'strict', not 'surrogateescape'"),
])
def test_errors(tmp_path, capsys, argv, message):
    (tmp_path / "in").write_bytes(b"abcd")
    status, err = run(capsys, *argv, tmp_path / "in", "-o", tmp_path / "out")
    assert status == 2
    assert_one_line_error(err)
    assert err.strip() == f"utf8-gateware: error: {message}"


@pytest.mark.parametrize("encoding,engine", [("utf-8-sig", "python"), ("cesu-8", "compiled"),
                                             ("mutf-8", "python"), ("wtf-8", "python")])
def test_family_on_gateware(tmp_path, capsys, encoding, engine):
    """The UTF-8 family through the gateware (``Utf8Decoder``/``Utf8Encoder(encoding=...)``):
    encode, decode and transcode give what the reference engine gives."""
    units = [0x41, 0, 0xD83D, 0xDE00, 0x1F600, 0xD800, 0x42, 0xDC80, 0x110000, 0xFEFF, 0xDFFF]
    (tmp_path / "units").write_bytes(b"".join(unit.to_bytes(4, "little") for unit in units))

    def outputs(*argv):
        results = []
        for each in ("reference", engine):
            status, _ = run(capsys, *argv, "-o", tmp_path / each, "--engine", each, "--stats",
                            tmp_path / f"{each}.json")
            assert status == 0
            stats = json.loads((tmp_path / f"{each}.json").read_text())
            results.append(((tmp_path / each).read_bytes(), stats["errors"]))
        assert results[0] == results[1]
        return results[0][0]

    encoded = outputs("encode", tmp_path / "units", "--encoding", encoding)
    assert encoded == encodings.encode(units, encoding).data
    # Ill-formed pieces of every kind the family reads differently, a mark in the middle too.
    (tmp_path / "bytes").write_bytes(encoded + BAD + b"\xed\xa0\x80\xc0\x80\0\xef\xbb\xbfz")
    outputs("decode", tmp_path / "bytes", "--encoding", encoding, "--output-format", "utf32le")
    outputs("transcode", tmp_path / "bytes", "--from", encoding, "--to", "utf-16-be")
