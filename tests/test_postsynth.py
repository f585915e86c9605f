# amaranth: UnusedElaboratable=no
"""Post-synthesis simulation (marker ``postsynth``): each core after ``synth_ice40``, simulated
with the iCE40 cell models (:mod:`utf8_gateware.sim.postsynth`), on the corpora and a random
adversarial stream, against the reference model and bit- and cycle-exactly against the RTL's
compiled model; a netlist with one LUT inverted, which must fail. The whole board, one step
further (after place and route), is in ``test_board_build.py``; ``sim/postroute.py``'s netlist
completion in ``test_postroute.py``."""

import array
import random

import pytest
from amaranth.hdl import Shape

import corpora
from cocotb_axis_bench import random_messages
from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.encoder import Utf8Encoder
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.sanitizer import Utf8Sanitizer
from utf8_gateware.hdl.validator import Utf8Validator
from utf8_gateware.sim import compiled, engines, postsynth, reference


pytestmark = [
    pytest.mark.postsynth,
    pytest.mark.skipif(not compiled.have_compiler(), reason="no C++ compiler"),
]

#: The cores simulated after synthesis: name -> (factory, kind of stimulus, error policy).
CORES = {
    "decoder-replace": (lambda: Utf8Decoder(errors="replace"), "decode", "replace"),
    "decoder-surrogateescape": (lambda: Utf8Decoder(errors="surrogateescape"), "decode",
                                "surrogateescape"),
    "encoder-strict": (lambda: Utf8Encoder(errors="strict"), "encode", "strict"),
    "encoder-replace": (lambda: Utf8Encoder(errors="replace"), "encode", "replace"),
    "encoder-surrogateescape": (lambda: Utf8Encoder(errors="surrogateescape"), "encode",
                                "surrogateescape"),
    "sanitizer-replace": (lambda: Utf8Sanitizer(errors="replace"), "sanitize", "replace"),
    "validator-4lanes": (lambda: Utf8Validator(lanes=4, counter_width=16), "validate",
                         "replace"),
}


@pytest.fixture(scope="session")
def models():
    """``models(name) -> (rtl, netlist)``: the compiled models of core ``name`` (built once per
    session; the compiled-model cache makes later sessions cheap)."""
    built = {}

    def get(name):
        if name not in built:
            factory = CORES[name][0]
            built[name] = (compiled.build_stream_model(factory(), name),
                           postsynth.build_stream_model(factory(), name))
        return built[name]
    return get


# -------------------------------------------------------------------------------------------------
# Stimulus: messages of items, each item a payload with its `last` bit

def _field(core, port, name):
    """``(offset, width)`` of field ``name`` in the payload of stream ``port``."""
    field = core.signature.members[port].signature.members["payload"].shape[name]
    return field.offset, Shape.cast(field.shape).width


def _messages(kind, rng):
    """The corpora (when present) and random adversarial messages, as lists of bytes / units."""
    messages = []
    corpus = (corpora.ROOT / "README.md").is_file()
    if kind == "encode":
        if corpus:
            messages += [list(case.units) for case in corpora.encode_cases() if case.units]
        messages += random_messages("encoder", rng, 20000)
    else:
        if corpus:
            messages += [case.data for case in corpora.decode_cases() if case.data]
            messages.append(corpora.kuhn())
        messages += random_messages("decoder", rng, 40000)
    return messages


def _items(core, kind, messages):
    """``(bytes, in_bytes)`` of the driver's input file: one item per byte / unit (per beat of
    four bytes for the validator), ``last`` on each message's final item."""
    last, _ = _field(core, "i", "last")
    if kind == "validate":
        count, _ = _field(core, "i", "count")
        words = []
        for message in messages:
            beats = [message[k:k + 4] for k in range(0, len(message), 4)]
            for index, beat in enumerate(beats):
                words.append(int.from_bytes(beat, "little") | (len(beat) << count) |
                             (int(index == len(beats) - 1) << last))
        return array.array("Q", words).tobytes(), 8
    words = [unit | (int(index == len(message) - 1) << last)
             for message in messages for index, unit in enumerate(message)]
    in_bytes = 2 if last < 16 else 8
    return array.array("H" if in_bytes == 2 else "Q", words).tobytes(), in_bytes


def _outputs(core, result):
    """Output payloads split into messages (at each ``last``), as ints."""
    last, _ = _field(core, "o", "last")
    words = array.array({2: "H", 4: "I", 8: "Q"}[result.out_bytes])
    words.frombytes(result.data)
    messages, current = [], []
    for word in words:
        current.append(word)
        if (word >> last) & 1:
            messages.append(current)
            current = []
    assert not current, "outputs after the last `last`"
    return messages


def _bits(word, core, name):
    """Field ``name`` of output payload ``word``."""
    offset, width = _field(core, "o", name)
    return (word >> offset) & ((1 << width) - 1)


def _check_reference(core, kind, errors, messages, outputs):
    """The outputs of each message are the reference model's (CPython's for the verdicts)."""
    assert len(outputs) == len(messages)
    for message, got in zip(messages, outputs):
        if kind == "decode":
            decoded = [(_bits(word, core, "codepoint"), ErrorKind(_bits(word, core, "error")))
                       for word in got]
            assert decoded == [tuple(item) for item in reference.decode(message, errors)], message
            continue
        if kind == "encode":
            assert engines._parse_encoded(got, message, errors) == \
                tuple(reference.encode(message, errors)), message
            continue
        decoded = reference.decode(message, errors)
        flagged = [kind_ for _, kind_ in decoded if kind_ is not ErrorKind.NONE]
        if kind == "validate":
            try:
                bytes(message).decode("utf-8")
                offset = 0
            except UnicodeDecodeError as error:
                offset = error.start
            (word,) = got
            assert (_bits(word, core, "valid"), _bits(word, core, "offset"),
                    _bits(word, core, "error"), _bits(word, core, "errors")) == \
                (int(not flagged), offset, (flagged or [ErrorKind.NONE])[0].value,
                 len(flagged)), message
        else:
            data = b"".join(reference.encode_unit(cp, errors)[0] for cp, _ in decoded)
            assert bytes(_bits(word, core, "data") for word in got) == data, message
            assert sum(_bits(word, core, "error") != 0 for word in got) == len(flagged), message


# -------------------------------------------------------------------------------------------------
# The cores

@pytest.mark.parametrize("name", list(CORES))
def test_core_after_synthesis(models, name):
    factory, kind, errors = CORES[name]
    core = factory()
    rtl, netlist = models(name)
    messages = _messages(kind, random.Random(name))
    items, in_bytes = _items(core, kind, messages)
    for options in ({}, {"gaps": 0.3, "stalls": 0.3, "seed": 7}):
        # The items are whole payloads (beats with their `last`), not lanes for the driver to pack.
        got = netlist.run(items, in_bytes=in_bytes, auto_last=False, lanes=False, **options)
        want = rtl.run(items, in_bytes=in_bytes, auto_last=False, lanes=False, **options)
        assert got.data == want.data, f"{name} {options}: outputs differ from the RTL's"
        assert got.cycles == want.cycles, f"{name} {options}: timing differs from the RTL's"
    _check_reference(core, kind, errors, messages, _outputs(core, got))


def test_flipped_lut_is_caught(models):
    """A netlist with one LUT's output inverted does not pass the comparison (the check can
    fail); the netlist and its simulation RTLIL come from the cache of the test above."""
    rtl, _ = models("encoder-replace")
    core = Utf8Encoder(errors="replace")
    mutant = postsynth.build_stream_model(core, "encoder-replace-mutant",
                                          edit=postsynth.flip_lut)
    units = [unit for message in random_messages("encoder", random.Random(3), 2000)
             for unit in message]
    items = array.array("I", units).tobytes()
    want = rtl.run(items, in_bytes=4)
    try:
        got = mutant.run(items, in_bytes=4, max_idle=1000)
    except compiled.CompiledSimError:
        return   # the mutant hangs: caught too
    assert (got.data, got.cycles) != (want.data, want.cycles)


def test_cell_models_and_cache():
    """Only the cells a netlist uses are read, PLL and SPRAM are substituted, and a warm build
    runs no tool."""
    text = postsynth.netlist(Utf8Decoder(errors="replace"))
    models_text = postsynth.cell_models(text)
    assert "module SB_LUT4" in models_text and "module SB_DFFESR" in models_text
    assert "module SB_SPRAM256KA" not in models_text and "module SB_MAC16" not in models_text
    pll = postsynth.cell_models("SB_PLL40_PAD #(.DIVR(4'h0)) pll (.PACKAGEPIN(clk));\n")
    assert "assign PLLOUTGLOBAL = PACKAGEPIN" in pll and "blackbox" not in pll
    assert "negedge POWEROFF" not in postsynth.cell_models("SB_SPRAM256KA ram (.CLOCK(clk));\n")
    first = postsynth.build_stream_model(Utf8Decoder(errors="replace"), "decoder-replace")
    before = dict(postsynth.STATS), dict(compiled.STATS)
    again = postsynth.build_stream_model(Utf8Decoder(errors="replace"), "decoder-replace")
    assert (dict(postsynth.STATS), dict(compiled.STATS)) == before
    assert again.executable == first.executable
