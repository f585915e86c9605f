"""The exported Verilog of every core in every error mode, simulated by Verilator under cocotb
(``tests/cocotb_axis_bench.py``), checked against the reference model and, cycle by cycle,
against Amaranth's simulation of the same design.

Four Verilator builds (:data:`GROUPS`) hold every exported core (``cocotb_top``: one instance per
core and mode, ports prefixed by the instance name), cached across runs by
:mod:`utf8_gateware.sim.cocotb_verilator`. (Verilator evaluates the input logic of every instance of
a build whenever an input changes: with one build of all of them that was most of the simulations'
time. Four builds cost about three times the compile time of one and cut the simulations to a third
or less: the corpora went from 299 s to 44 s.) Each core (but the text decoder and encoder,
``exported.WITH_INITIAL_VALUES_ONLY``) also without initial values (instance ``<variant>_noinit``),
built with ``--x-initial unique`` so that its registers start from random values
(``+verilator+rand+reset+2``), as in silicon.
"""

import json
from pathlib import Path

import pytest
from amaranth.sim import Simulator

import corpora
from cocotb_axis_bench import OUTPUTS
from exported import VARIANTS, WITH_INITIAL_VALUES_ONLY, top_module
from utf8_gateware.hdl.axi_stream import AxiStreamAdapter
from utf8_gateware.hdl.export import make_core
from utf8_gateware.sim import cocotb_verilator
from utf8_gateware.sim.testbench import run_simulation


pytestmark = pytest.mark.cocotb

TOP = "cocotb_top"
BENCH = Path(__file__).parent / "cocotb_axis_bench.py"
#: Cycles of the random test that the Amaranth simulation replays.
TRACE_CYCLES = 1500


#: Verilator builds the exported instances are spread over (in the order of ``VARIANTS``).
GROUPS = 4


@pytest.fixture(scope="module")
def build(exported, tmp_path_factory):
    """``build(instance)``: the Verilator model (built or found in the cache, on first use) of
    the top level that holds ``instance``, one of :data:`GROUPS` tops of every exported core."""
    instances = list(exported)
    builds = {}

    def build_of(instance):
        group = instances.index(instance) * GROUPS // len(instances)
        if group not in builds:
            items = [exported[name] for n, name in enumerate(instances)
                     if n * GROUPS // len(instances) == group]
            top = tmp_path_factory.mktemp("top") / f"{TOP}.v"
            top.write_text(top_module(TOP, items))
            builds[group] = cocotb_verilator.build(
                [*(item.path for item in items), top], TOP, f"exported-cores-{group}",
                args=("--x-initial", "unique"))
        return builds[group]
    return build_of


def simulate(build, variant, testcase, test_dir, instance=None, flags=(), **plusargs):
    core, params = VARIANTS[variant]
    instance = instance or variant
    args = {"dut": instance, "core": core, "errors": None, **params, **plusargs}
    cocotb_verilator.run(build(instance), TOP, BENCH, test_dir=test_dir, testcase=testcase,
                         plusargs=[*(f"+{key}={value}" for key, value in args.items()), *flags])


# -------------------------------------------------------------------------------------------------
# Amaranth's simulation of the same cycles

def replay(variant, trace):
    """Drive :class:`AxiStreamAdapter` around the core in Amaranth's simulator with the inputs
    that Verilator saw in every cycle of ``trace`` (``{"ports", "cycles"}``) and compare the
    outputs; returns the first difference (``None`` if there is none)."""
    core, params = VARIANTS[variant]
    adapter = AxiStreamAdapter(make_core(core, **params)[0])
    names = trace["ports"]
    signals = [getattr(adapter, name) for name in names]
    outputs = [index for index, name in enumerate(names) if name in OUTPUTS]
    found = []

    async def testbench(ctx):
        for cycle, sample in enumerate(trace["cycles"]):
            for signal, name, value in zip(signals, names, sample):
                if name not in OUTPUTS:
                    ctx.set(signal, value)
            await ctx.delay(5e-9)
            got = [ctx.get(signals[index]) for index in outputs]
            want = [sample[index] for index in outputs]
            if got != want:
                inputs = {name: value for name, value in zip(names, sample)
                          if name not in OUTPUTS}
                found.append(f"cycle {cycle}: inputs {inputs}: Verilator "
                             f"{dict(zip((names[index] for index in outputs), want))}, "
                             f"Amaranth {dict(zip((names[index] for index in outputs), got))}")
                return
            ctx.set(adapter.aclk, 1)
            await ctx.delay(5e-9)
            ctx.set(adapter.aclk, 0)

    sim = Simulator(adapter)
    sim.add_testbench(testbench)
    run_simulation(sim, f"replay-{variant}", traces=signals)
    return found[0] if found else None


# -------------------------------------------------------------------------------------------------
# Tests

@pytest.mark.parametrize("variant", VARIANTS)
def test_cocotb_random(build, variant, tmp_path):
    """Random messages under random pauses on both sides, a reset in the middle of a message;
    the first cycles again in Amaranth's simulation: every output in every cycle the same."""
    path = tmp_path / "trace.json"
    # (The UTF-16 code-unit cores are small: fewer items. The byte stage writes up to four
    # bytes per input item: fewer before the reset, so that it falls within the traced cycles.)
    core = VARIANTS[variant][0]
    simulate(build, variant, "random_stream", tmp_path, trace=path, trace_cycles=TRACE_CYCLES,
             items=1000 if core.startswith(("utf16_", "text_")) else 3000,
             items_before_reset=30 if core in ("utf16_bytes", "utf16_bom_bytes", "text_encoder")
             else 60)
    trace = json.loads(path.read_text())
    cycles, names = trace["cycles"], trace["ports"]
    assert len(cycles) == TRACE_CYCLES
    running = [sample[0] for sample in cycles].index(1)
    assert 0 in [sample[0] for sample in cycles[running:]], "the trace holds no reset"
    valid, ready = names.index("m_axis_tvalid"), names.index("m_axis_tready")
    # (The validator gives one output per message, the others one per item.)
    assert sum(sample[valid] and sample[ready] for sample in cycles) > \
        (10 if VARIANTS[variant][0] == "validator" else 100), \
        "the trace holds too few output transfers"
    assert replay(variant, trace) is None
    # The replay sees a difference: one output bit changed in cycle 200.
    cycles[200][names.index("m_axis_tlast")] ^= 1
    del cycles[201:]
    assert replay(variant, trace).startswith("cycle 200:")


@pytest.mark.parametrize("variant", [variant for variant, (core, _) in VARIANTS.items()
                                     if core in ("decoder", "encoder", "sanitizer", "validator")])
def test_cocotb_corpora(build, variant, tmp_path):
    """Every corpus case as one message, under random pauses on both sides (the transcoder's
    decoder and encoder run them alone, and the UTF-8 corpora are not UTF-16: the UTF-16 cores
    and the text decoder and encoder of ``utf-16`` run the random streams)."""
    corpora.require()
    simulate(build, variant, "corpora_stream", tmp_path)


def test_cocotb_rule_checker_fires(build, tmp_path):
    """The top level's stream-rule checker, which the other tests rely on, can fail."""
    simulate(build, "decoder_replace", "rule_checker", tmp_path)


@pytest.mark.parametrize("variant", [variant for variant in VARIANTS
                                     if variant not in WITH_INITIAL_VALUES_ONLY])
def test_cocotb_power_up_without_initial_values(build, variant, tmp_path):
    """Exported without initial values, every register starts from a random value; after one
    cycle of reset the core is correct (random messages, a reset mid-message). (The text
    decoder and encoder are the UTF-16 stages in a row, each tested here alone.)"""
    seed = list(VARIANTS).index(variant) + 1
    simulate(build, variant, "random_stream", tmp_path, instance=f"{variant}_noinit",
             flags=["+verilator+rand+reset+2", f"+verilator+seed+{seed}"], reset_cycles=1,
             items=600, items_before_reset=60, seed=seed)
