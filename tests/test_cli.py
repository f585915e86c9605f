"""The command line: results, statistics, and one-line errors for everything a user can get wrong."""

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from utf8_gateware.cli import main


SAMPLE = Path(__file__).resolve().parents[1] / "utf8_gateware" / "samples" / "sample.txt"
BAD = b"a\xc0\xafb\xed\xa0\x80c\xf4\x90\x80\x80\xe2\x82"


def run(capsys, *argv):
    status = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return status, err


def assert_one_line_error(err):
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("utf8-gateware: error: ")


@pytest.mark.parametrize("errors", ["replace", "surrogateescape"])
def test_decode_utf8(tmp_path, capsys, errors):
    data = SAMPLE.read_bytes() + BAD
    (tmp_path / "in").write_bytes(data)
    status, _ = run(capsys, "decode", tmp_path / "in", "-o", tmp_path / "out",
                    "--errors", errors, "--engine", "reference", "--stats", tmp_path / "s.json")
    assert status == 0
    out = (tmp_path / "out").read_bytes()
    if errors == "replace":
        assert out == data.decode("utf-8", "replace").encode("utf-8")
    else:
        assert out == data
    stats = json.loads((tmp_path / "s.json").read_text())
    text = data.decode("utf-8", errors)
    assert stats["bytes_in"] == len(data)
    assert stats["codepoints_out"] == len(text)
    assert sum(stats["errors"].values()) == text.count("\ufffd") if errors == "replace" else True
    assert stats["errors"]["surrogate"] >= 1 and stats["errors"]["truncated"] >= 1


def test_decode_utf32le(tmp_path, capsys):
    (tmp_path / "in").write_bytes(BAD)
    status, _ = run(capsys, "decode", tmp_path / "in", "-o", tmp_path / "out",
                    "--output-format", "utf32le", "--errors", "surrogateescape",
                    "--engine", "reference")
    assert status == 0
    units = struct.unpack(f"<{len(BAD.decode('utf-8', 'surrogateescape'))}I",
                          (tmp_path / "out").read_bytes())
    assert units == tuple(map(ord, BAD.decode("utf-8", "surrogateescape")))


def test_encode(tmp_path, capsys):
    units = [0x41, 0xE9, 0x20AC, 0x1F600, 0xD800, 0x110000, 0xFFFFFFFF]
    (tmp_path / "in").write_bytes(struct.pack(f"<{len(units)}I", *units))
    status, _ = run(capsys, "encode", tmp_path / "in", "-o", tmp_path / "out",
                    "--engine", "reference", "--stats", tmp_path / "s.json")
    assert status == 0
    assert (tmp_path / "out").read_bytes() == "Aé€😀".encode() + b"\xef\xbf\xbd" * 3
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["codepoints_in"] == 7 and stats["bytes_out"] == 19
    assert stats["errors"]["surrogate"] == 1 and stats["errors"]["too_large"] == 2


def test_encode_strict_reports_the_first_bad_index(tmp_path, capsys):
    units = [0x41, 0x42, 0xDFFF, 0x43, 0x110000]
    (tmp_path / "in").write_bytes(struct.pack(f"<{len(units)}I", *units))
    status, err = run(capsys, "encode", tmp_path / "in", "-o", tmp_path / "out",
                      "--errors", "strict", "--engine", "reference")
    assert status == 1
    assert_one_line_error(err)
    assert "index 2" in err and "U+DFFF" in err
    assert (tmp_path / "out").read_bytes() == b"ABC"


def test_encode_rejects_a_partial_unit(tmp_path, capsys):
    (tmp_path / "in").write_bytes(b"A\0\0\0B")
    status, err = run(capsys, "encode", tmp_path / "in", "--engine", "reference")
    assert status == 2
    assert_one_line_error(err)
    assert "multiple of 4" in err


@pytest.mark.parametrize("argv", [
    ["decode", "/nonexistent/input"],
    ["encode", "/nonexistent/input"],
    ["decode", "{sample}", "-o", "/nonexistent/dir/out"],
    ["decode", "{sample}", "--stats", "/nonexistent/dir/s.json", "-o", os.devnull],
    ["decode", "{tmp}"],  # a directory
])
def test_unreadable_and_unwritable_files(capsys, tmp_path, argv):
    argv = [arg.format(sample=SAMPLE, tmp=tmp_path) for arg in argv]
    status, err = run(capsys, *argv, "--engine", "reference")
    assert status == 2
    assert_one_line_error(err)


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["decode", "--errors", "strict"],
                                  ["decode", "--engine", "fpga"], ["encode", "--errors", "x"]])
def test_bad_arguments(capsys, argv):
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_console_script_with_pipes():
    script = shutil.which("utf8-gateware", path=str(Path(sys.executable).parent))
    assert script, "the utf8-gateware console script is not installed"
    result = subprocess.run([script, "decode", "--engine", "reference"], input=BAD,
                            capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == BAD.decode("utf-8", "replace").encode()
    result = subprocess.run([script, "decode", "/nonexistent"], capture_output=True, timeout=60)
    assert result.returncode == 2 and b"Traceback" not in result.stderr


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_gateware_engines_match_the_model(tmp_path, capsys, engine):
    data = BAD + "ok €😀".encode() + b"\xe1\xa0"
    (tmp_path / "in").write_bytes(data)
    for errors in ("replace", "surrogateescape"):
        status, _ = run(capsys, "decode", tmp_path / "in", "-o", tmp_path / "out", "--errors",
                        errors, "--engine", engine, "--stats", tmp_path / "s.json")
        assert status == 0
        want = data.decode("utf-8", errors).encode("utf-8", "surrogateescape")
        assert (tmp_path / "out").read_bytes() == want
        stats = json.loads((tmp_path / "s.json").read_text())
        assert stats["engine"] == engine and stats["cycles"] >= len(data)
    units = [0x41, 0xDC80, 0x1F600, 0x110000]
    (tmp_path / "units").write_bytes(struct.pack("<4I", *units))
    status, err = run(capsys, "encode", tmp_path / "units", "-o", tmp_path / "out",
                      "--errors", "strict", "--engine", engine)
    assert status == 1 and "index 1" in err
    assert (tmp_path / "out").read_bytes() == "A😀".encode()


def test_compiled_engine_falls_back_without_a_compiler(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    monkeypatch.setenv("PATH", str(tmp_path))
    (tmp_path / "in").write_bytes(b"abc")
    status, err = run(capsys, "decode", tmp_path / "in", "-o", tmp_path / "out")
    assert status == 0
    assert (tmp_path / "out").read_bytes() == b"abc"
    assert "Traceback" not in err


def test_asking_for_the_compiled_engine_without_a_compiler_notes_the_fallback(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    monkeypatch.setenv("PATH", str(tmp_path))
    (tmp_path / "in").write_bytes(b"abc")
    status, err = run(capsys, "decode", tmp_path / "in", "-o", tmp_path / "out",
                      "--engine", "compiled", "--stats", tmp_path / "s.json")
    assert status == 0
    assert err.startswith("utf8-gateware: note: ") and len(err.strip().splitlines()) == 1
    assert json.loads((tmp_path / "s.json").read_text())["engine"] == "python"
