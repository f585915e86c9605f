"""UART receiver and transmitter (boards/uart.py) in Amaranth's simulator."""

import random

import pytest
from amaranth.hdl import Elaboratable, Module
from amaranth.sim import Simulator

from utf8_gateware.sim.testbench import run_simulation

from utf8_gateware.boards.uart import UARTReceiver, UARTTransmitter, uart_divisor


def test_divisor():
    assert uart_divisor(48e6, 3e6) == 16
    assert uart_divisor(36e6, 3e6) == 12
    assert uart_divisor(12e6, 3e6) == 4
    assert uart_divisor(48e6, 115200) == 417


@pytest.mark.parametrize("clk, baud, message", [
    (12e6, 4e6, "at least 4 clock cycles per bit"),
    (48e6, 2.9e6, "off by"),
    (48e6, 0, "must be positive"),
])
def test_divisor_errors(clk, baud, message):
    with pytest.raises(ValueError, match=message):
        uart_divisor(clk, baud)


def test_parameter_checks():
    with pytest.raises(ValueError, match="at least 4"):
        UARTReceiver(3)
    with pytest.raises(TypeError, match="integer"):
        UARTTransmitter(16.0)


class Loopback(Elaboratable):
    def __init__(self, divisor):
        self.tx = UARTTransmitter(divisor)
        self.rx = UARTReceiver(divisor)

    def elaborate(self, platform):
        m = Module()
        m.submodules.tx = self.tx
        m.submodules.rx = self.rx
        m.d.comb += self.rx.rx.eq(self.tx.tx)
        return m


@pytest.mark.parametrize("divisor", [4, 5, 16])
def test_loopback(divisor):
    data = bytes(random.Random(divisor).randrange(256) for _ in range(40)) + b"\x00\xff\x55"
    dut = Loopback(divisor)
    received = []
    accepted = []

    async def source(ctx):
        cycle = 0
        for byte in data:
            ctx.set(dut.tx.i.valid, 1)
            ctx.set(dut.tx.i.payload, byte)
            while True:
                _, _, ready = await ctx.tick().sample(dut.tx.i.ready)
                cycle += 1
                if ready:
                    accepted.append(cycle)
                    break
        ctx.set(dut.tx.i.valid, 0)

    async def sink(ctx):
        ctx.set(dut.rx.o.ready, 1)
        async for clk_edge, rst, valid, payload, framing in ctx.tick().sample(
                dut.rx.o.valid, dut.rx.o.payload, dut.rx.framing_error):
            assert not framing
            if valid:
                received.append(payload)
                if len(received) == len(data):
                    return

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(source)
    sim.add_testbench(sink)
    run_simulation(sim, f"uart-loopback-{divisor}")
    assert bytes(received) == data
    # Back to back: a new byte is taken exactly every 10 bit times.
    assert {b - a for a, b in zip(accepted, accepted[1:])} == {10 * divisor}


def _drive(divisor, frames, *, stop_low_at=None):
    """Drive a receiver with ``frames`` (lists of line levels per bit); returns (bytes, framing
    error pulses)."""
    dut = UARTReceiver(divisor)
    got, errors = [], []

    async def line(ctx):
        ctx.set(dut.rx, 1)
        await ctx.tick().repeat(3 * divisor)
        for bits in frames:
            for bit in bits:
                ctx.set(dut.rx, bit)
                await ctx.tick().repeat(divisor)
        ctx.set(dut.rx, 1)
        await ctx.tick().repeat(12 * divisor)

    async def watch(ctx):
        ctx.set(dut.o.ready, 1)
        async for _, _, valid, payload, framing in ctx.tick().sample(
                dut.o.valid, dut.o.payload, dut.framing_error):
            if valid:
                got.append(payload)
            if framing:
                errors.append(len(got))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(line)
    sim.add_testbench(watch, background=True)
    run_simulation(sim, f"uart-drive-{divisor}")
    return bytes(got), errors


def _bits(byte, stop=1):
    return [0] + [(byte >> i) & 1 for i in range(8)] + [stop]


def test_framing_error_drops_the_byte_and_recovers():
    frames = [_bits(0x41), _bits(0x42, stop=0), [1, 1], _bits(0x43)]
    got, errors = _drive(8, frames)
    assert got == b"AC"
    assert errors == [1]


def test_break_gives_one_error():
    frames = [_bits(0x41), [0] * 30, [1, 1], _bits(0x44)]
    got, errors = _drive(8, frames)
    assert got == b"AD"
    assert errors == [1]


def test_glitch_is_not_a_start_bit():
    dut_divisor = 8
    # A low pulse of 2 cycles (a quarter bit): sampled high at mid-start, ignored.
    dut = UARTReceiver(dut_divisor)
    got = []

    async def line(ctx):
        ctx.set(dut.rx, 1)
        await ctx.tick().repeat(20)
        ctx.set(dut.rx, 0)
        await ctx.tick().repeat(2)
        ctx.set(dut.rx, 1)
        await ctx.tick().repeat(200)

    async def watch(ctx):
        ctx.set(dut.o.ready, 1)
        async for _, _, valid, framing in ctx.tick().sample(dut.o.valid, dut.framing_error):
            assert not framing
            if valid:
                got.append(1)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(line)
    sim.add_testbench(watch, background=True)
    run_simulation(sim, "uart-glitch")
    assert got == []


def test_overrun_when_not_taken():
    dut = UARTReceiver(4)
    seen = {"overrun": 0}

    async def line(ctx):
        ctx.set(dut.rx, 1)
        await ctx.tick().repeat(8)
        for byte in (1, 2):
            for bit in _bits(byte):
                ctx.set(dut.rx, bit)
                await ctx.tick().repeat(4)
        await ctx.tick().repeat(20)

    async def watch(ctx):
        ctx.set(dut.o.ready, 0)
        async for _, _, overrun in ctx.tick().sample(dut.overrun):
            seen["overrun"] += overrun

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(line)
    sim.add_testbench(watch, background=True)
    run_simulation(sim, "uart-overrun")
    assert seen["overrun"] == 1
