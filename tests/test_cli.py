"""The command line: results, statistics, and one-line errors for everything a user can get
wrong."""

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from utf8_gateware.cli import main
from utf8_gateware.sim import engines


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


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_decode_lanes(tmp_path, capsys, engine):
    data = BAD + "ok €😀".encode() + b"\xe1\xa0"
    (tmp_path / "in").write_bytes(data)
    status, _ = run(capsys, "decode", tmp_path / "in", "-o", tmp_path / "out", "--lanes", 4,
                    "--engine", engine, "--stats", tmp_path / "s.json")
    assert status == 0
    assert (tmp_path / "out").read_bytes() == data.decode("utf-8", "replace").encode()
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["lanes"] == 4 and len(data) / 4 <= stats["cycles"] < len(data)
    status, err = run(capsys, "decode", tmp_path / "in", "--lanes", 4, "--engine", "reference")
    assert status == 2 and "--lanes" in err
    assert_one_line_error(err)


@pytest.mark.parametrize("engine, lanes", [("reference", 1), ("python", 2), ("compiled", 4)])
def test_validate(tmp_path, capsys, engine, lanes):
    for data, valid in [("ok €".encode() * 60 + BAD, False), ("ok €😀".encode() * 50, True),
                        (b"", True)]:
        (tmp_path / "in").write_bytes(data)
        status = main(["validate", str(tmp_path / "in"), "--engine", engine, "--lanes",
                       str(lanes), "--json", str(tmp_path / "v.json")])
        out, err = capsys.readouterr()
        report = json.loads((tmp_path / "v.json").read_text())
        assert status == (0 if valid else 1) and err == ""
        assert set(report) >= {"valid", "first_error_offset", "first_error_kind", "errors",
                               "bytes", "cycles"}
        assert report["valid"] is valid and report["bytes"] == len(data)
        if valid:
            assert out.startswith("valid") and report["errors"] == 0
            continue
        with pytest.raises(UnicodeDecodeError) as error:
            data.decode("utf-8")
        assert report["first_error_offset"] == error.value.start
        assert report["errors"] == data.decode("utf-8", "replace").count("\ufffd") - \
            data.decode("utf-8", "ignore").count("\ufffd")
        assert report["first_error_kind"] == "overlong"   # BAD's first: C0 AF
        assert out.startswith(f"invalid: first error at byte {error.value.start} (overlong)")
        assert (report["cycles"] is None) == (engine == "reference")


@pytest.mark.parametrize("argv", [["validate", "/nonexistent"], ["validate", "--lanes", "3"],
                                  ["validate", "--engine", "fpga"]])
def test_validate_usage_and_io_errors(capsys, argv):
    try:
        status = main(argv)
    except SystemExit as exit:
        status = exit.code
    assert status == 2
    assert "Traceback" not in capsys.readouterr().err


def _peak_rss_mb(argv, stdin_path):
    """Peak resident memory (MB) of ``utf8-gateware argv`` reading ``stdin_path``, measured in a
    wrapper process so that no other child of the test session counts."""
    probe = ("import resource, subprocess, sys\n"
             "with open(sys.argv[1], 'rb') as source:\n"
             "    status = subprocess.run(sys.argv[2:], stdin=source,\n"
             "                            stdout=subprocess.DEVNULL).returncode\n"
             "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
             "print(status, peak / (1 << 20 if sys.platform == 'darwin' else 1 << 10))\n")
    script = shutil.which("utf8-gateware", path=str(Path(sys.executable).parent))
    result = subprocess.run([sys.executable, "-c", probe, str(stdin_path), script, *argv],
                            capture_output=True, text=True, timeout=600, check=True)
    status, peak = result.stdout.split()
    return int(status), float(peak)


def _generated_input(path, size):
    """``size`` bytes of log-like text: mostly ASCII, some of every UTF-8 length, some errors."""
    block = (b"2026-11-24T15:00:00Z host app[1234]: GET /api/v1/items status=200 bytes=1234\n"
             * 40 + "user=Jürgen city=Zürich ¥€ 😀 ✓\n".encode() + BAD + b"\n")
    with open(path, "wb") as file:
        for _ in range(size // len(block)):
            file.write(block)
    return path.stat().st_size


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="resource is POSIX only")
def test_decode_streams_200_mb_in_constant_memory(tmp_path):
    size = _generated_input(tmp_path / "big", 200 << 20)
    status, peak = _peak_rss_mb(["decode", "--engine", "reference"], tmp_path / "big")
    assert status == 0 and size > 190 << 20
    assert peak < 200, f"decoding {size >> 20} MB took {peak:.0f} MB of memory"


@pytest.mark.skipif(sys.platform == "win32", reason="resource is POSIX only")
@pytest.mark.skipif(not shutil.which("c++") and not shutil.which("g++")
                    and not shutil.which("clang++"), reason="no C++ compiler")
def test_compiled_engine_streams_in_constant_memory(tmp_path):
    # 8 MB: as whole buffers (the input, the outputs as Python objects) this took about 800 MB.
    size = _generated_input(tmp_path / "big", 8 << 20)
    # The models are built first: the C++ compiler's memory is not the command's.
    engines.compiled_model("decoder", "replace")
    engines.compiled_model("validator")
    for command in (["decode", "--engine", "compiled"], ["validate", "--engine", "compiled"]):
        status, peak = _peak_rss_mb(command, tmp_path / "big")
        assert status == (0 if command[0] == "decode" else 1)
        assert peak < 100, f"{command[0]} of {size >> 20} MB took {peak:.0f} MB of memory"
