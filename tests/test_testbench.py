"""The shared stream drivers catch what they are there to catch, and leave a waveform behind."""

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from standins import ByteWiden
from utf8_gateware.sim.testbench import StreamRuleError, run_simulation, run_stream


class Widen(ByteWiden):
    """:class:`ByteWiden`, or with ``bug`` a copy that breaks the stream rules."""
    def __init__(self, bug=None):
        self.bug = bug
        super().__init__()

    def elaborate(self, platform):
        if self.bug == "payload":  # takes input while its output is held: the payload changes
            m = Module()
            m.d.comb += self.i.ready.eq(1)
            m.d.sync += [
                self.o.valid.eq(self.i.valid),
                self.o.payload.codepoint.eq(self.i.payload.data),
            ]
            return m
        m = super().elaborate(platform)
        if self.bug == "lose-last":
            m.d.sync += self.o.payload.last.eq(0)
        return m


ITEMS = [{"data": 0x41 + k % 26, "last": int(k % 7 == 6)} for k in range(70)]


def test_a_correct_stage_passes_with_gaps_and_stalls():
    run = run_stream(Widen(), ITEMS, gap=0.3, stall=0.3, seed=5)
    assert [int(o.codepoint) for o in run.outputs] == [item["data"] for item in ITEMS]
    assert run.ready_low > 0 and run.cycles > len(ITEMS)


def test_full_rate_without_stalls():
    run = run_stream(Widen(), ITEMS)
    assert run.ready_low == 0 and run.cycles == len(ITEMS) + 1


def test_a_changed_payload_is_caught_and_leaves_a_waveform(tmp_path, monkeypatch):
    monkeypatch.setenv("UTF8_GATEWARE_FAILURES", str(tmp_path))
    with pytest.raises(StreamRuleError, match="payload changed") as error:
        run_stream(Widen(bug="payload"), ITEMS, stall=0.5, name="payload-bug")
    assert (tmp_path / "payload-bug.vcd").stat().st_size > 0
    assert (tmp_path / "payload-bug.gtkw").exists()
    assert str(tmp_path / "payload-bug.vcd") in str(error.value)


def test_a_lost_last_is_a_time_out():
    with pytest.raises(AssertionError, match="timed out"):
        run_stream(Widen(bug="lose-last"), ITEMS, max_cycles=500)


def test_run_simulation_writes_a_waveform_on_failure(tmp_path, monkeypatch):
    monkeypatch.setenv("UTF8_GATEWARE_FAILURES", str(tmp_path))
    dut = Widen()
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        ctx.set(dut.i.valid, 1)
        await ctx.tick().repeat(3)
        assert ctx.get(dut.o.valid) == 0, "deliberate failure"

    sim.add_testbench(testbench)
    with pytest.raises(AssertionError, match="deliberate failure") as error:
        run_simulation(sim, "deliberate", traces=[dut.o.valid])
    assert (tmp_path / "deliberate.vcd").exists() and "waveform:" in str(error.value)
