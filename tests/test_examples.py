"""The examples for users (``examples/``): the Amaranth design that instantiates the cores, and
the Verilog top level that instantiates the exported cores, each run and checked."""

import importlib.util
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from utf8_gateware.hdl.export import VERILATOR_WAIVERS
from utf8_gateware.sim import cocotb_verilator
from utf8_gateware.sim.testbench import run_stream


EXAMPLES = Path(__file__).parent.parent / "examples"


def _load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


control_pictures = _load(EXAMPLES / "amaranth" / "control_pictures.py")

MESSAGES = [b"plain", b"tab\tnew\nline\r", b"\x00\x01\x1f\x7f", b"\xff", b"\xc0\x80",
            b"\xe2\x82", b"\xf0\x9f\x98\x80\x07", b"\xed\xa0\x80x", control_pictures.SAMPLE]


def test_amaranth_example_matches_its_model():
    # Every message through ControlPictures under random source gaps and sink stalls (and the
    # stream rules checked on its output) gives what CPython's codec and the mapping say.
    rng = random.Random(3)
    pieces = [b"a", b"\t", b"\x01", b"\x7f", b"\xc3\xa9", b"\xe2\x82\xac", b"\x80", b"\xe0\x80",
              b"\xf4\x90\x80\x80", b"\xff", b"\xf0\x9f\x98"]
    messages = MESSAGES + [b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 20)))
                           for _ in range(30)]
    inputs = [{"data": byte, "last": index == len(message) - 1}
              for message in messages for index, byte in enumerate(message)]
    run = run_stream(control_pictures.ControlPictures(), inputs, gap=0.3, stall=0.3, seed=5,
                     name="control-pictures")
    got, message = [], bytearray()
    for payload in run.outputs:
        message.append(payload.data)
        if payload.last:
            got.append(bytes(message))
            message.clear()
    assert got == [control_pictures.expected(message)[0] for message in messages]


def test_amaranth_example_counts():
    for message in MESSAGES:
        assert control_pictures.simulate(message) == control_pictures.expected(message), message


def test_amaranth_example_runs_as_a_program():
    result = subprocess.run([sys.executable, str(EXAMPLES / "amaranth" / "control_pictures.py")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "2 ill-formed, 2 control characters" in result.stdout
    assert "\u2407" in result.stdout   # the bell's picture


@pytest.mark.cocotb
def test_verilog_example(tmp_path):
    # The README's steps: export the two cores with the command line, lint the top level with
    # them (no warning beyond the exported files' listed ones), then the cocotb test.
    command = shutil.which("utf8-gateware", path=str(Path(sys.executable).parent))
    assert command, "the utf8-gateware command is not installed beside this Python"
    for core in ("decoder", "encoder"):
        subprocess.run([command, "export", core, "--errors", "replace",
                        "-o", str(tmp_path / f"utf8_{core}.v")], check=True, timeout=300)
    shutil.copy(EXAMPLES / "verilog" / "utf8_clean.v", tmp_path)
    sources = [tmp_path / name for name in ("utf8_clean.v", "utf8_decoder.v", "utf8_encoder.v")]
    warnings = cocotb_verilator.lint(sources, "utf8_clean")
    assert not [text for _, text in warnings if "utf8_clean.v" in text], warnings
    assert {code for code, _ in warnings} <= set(VERILATOR_WAIVERS)
    build = cocotb_verilator.build(sources, "utf8_clean", "example-utf8-clean")
    cocotb_verilator.run(build, "utf8_clean", EXAMPLES / "verilog" / "test_utf8_clean.py",
                         test_dir=tmp_path / "run", plusargs=["+messages=60", "+seed=1"])
