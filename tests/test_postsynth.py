# amaranth: UnusedElaboratable=no
"""Post-synthesis simulation (marker ``postsynth``): each core after ``synth_ice40``, simulated
with the iCE40 cell models (:mod:`utf8_gateware.sim.postsynth`), on the corpora and a random
adversarial stream, against the reference model and bit- and cycle-exactly against the RTL's
compiled model; a netlist with one LUT inverted, which must fail. One step further, after place
and route: the cores in ``test_postroute.py``, the whole board in ``test_board_build.py``. The
stimulus and the checks are ``netlist_checks.py``'s."""

import array
import random
import re

import pytest

from cocotb_axis_bench import random_messages
from netlist_checks import check_against_rtl
from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.encoder import Utf8Encoder
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
# The cores

@pytest.mark.parametrize("name", list(CORES))
def test_core_after_synthesis(models, name):
    factory, kind, errors = CORES[name]
    rtl, netlist = models(name)
    check_against_rtl(factory(), kind, errors, rtl, netlist, name)


def test_decoder_with_block_rams_after_synthesis(monkeypatch):
    """The 4-lane ``surrogateescape`` decoder, whose stage A reads its bytes' facts from a ROM
    per lane (``BYTE_ROM``): four ``SB_RAM40_4K`` in the netlist, simulated with their cell
    model, bit- and cycle-exactly the RTL's compiled model on random streams with source gaps
    and sink stalls, and the reference model's outputs."""
    core = engines.make_core("decoder", "surrogateescape", 4)
    assert len(re.findall(r"^\s*SB_RAM40_4K\b", postsynth.netlist(core), re.MULTILINE)) == 4
    rtl = engines.compiled_model("decoder", "surrogateescape", 4)
    netlist = postsynth.build_stream_model(engines.make_core("decoder", "surrogateescape", 4),
                                           "decoder-surrogateescape-x4")
    rng = random.Random("decoder-x4-rams")
    data = bytes(byte for message in random_messages("decoder", rng, 20000) for byte in message)
    for gaps, stalls, seed in ((0.0, 0.0, 1), (0.3, 0.4, 2)):
        want = rtl.run(data, gaps=gaps, stalls=stalls, seed=seed)
        got = netlist.run(data, gaps=gaps, stalls=stalls, seed=seed)
        assert (got.data, got.cycles) == (want.data, want.cycles)
    monkeypatch.setattr(engines, "compiled_model", lambda *args, **kwargs: netlist)
    run = engines.decode(data, "surrogateescape", "compiled", lanes=4, gaps=0.2, stalls=0.2)
    assert run.outputs == reference.decode(data, "surrogateescape")


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
