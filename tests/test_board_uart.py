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


def _receive_at_rate(divisor, data, rate_error, phase):
    """A sender whose bit time is ``divisor * (1 + rate_error)`` clock cycles, its first start
    bit ``phase`` cycles (fractional) after a clock edge, bytes back to back; the line is
    sampled by the receiver at every clock edge. Returns (bytes, framing errors)."""
    bit_time = divisor * (1 + rate_error)
    levels = [bit for byte in data for bit in _bits(byte)]
    dut = UARTReceiver(divisor)
    got, errors = [], []

    async def line(ctx):
        ctx.set(dut.rx, 1)
        await ctx.tick().repeat(2 * divisor)
        cycle = 0
        while True:
            position = int((cycle - phase) // bit_time)      # the bit on the line now
            if position >= len(levels):
                break
            ctx.set(dut.rx, 1 if position < 0 else levels[position])
            await ctx.tick()
            cycle += 1
        ctx.set(dut.rx, 1)
        await ctx.tick().repeat(12 * divisor)

    async def watch(ctx):
        ctx.set(dut.o.ready, 1)
        async for _, _, valid, payload, framing in ctx.tick().sample(
                dut.o.valid, dut.o.payload, dut.framing_error):
            if valid:
                got.append(payload)
            errors.append(framing)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(line)
    sim.add_testbench(watch, background=True)
    run_simulation(sim, f"uart-rate-{divisor}")
    return bytes(got), sum(errors)


@pytest.mark.parametrize("rate_error", [-0.015, 0.0, 0.015])
def test_receiver_at_12_mbaud_from_48_mhz(rate_error):
    """4 clock cycles per bit (12 Mbaud at 48 MHz): mid-bit sampling after the 2-FF
    synchroniser still finds every bit of back-to-back bytes when the sender's rate is off by
    up to 1.5 % either way (the FT2232H makes 12 Mbaud exactly, from its 120 MHz clock), at
    any phase of its start bit against the clock."""
    data = bytes(random.Random(12).randrange(256) for _ in range(48)) + b"\x00\xff\x55\xaa"
    for phase in (0.0, 0.25, 0.5, 0.75):
        got, errors = _receive_at_rate(4, data, rate_error, phase)
        assert (got, errors) == (data, 0), (rate_error, phase)


def test_receiver_rate_margin_at_4_cycles_per_bit():
    """The test above can fail: a sender 10 % off is not received correctly."""
    data = bytes(random.Random(13).randrange(256) for _ in range(24))
    for rate_error in (-0.10, 0.10):
        got, errors = _receive_at_rate(4, data, rate_error, 0.5)
        assert (got, errors) != (data, 0), rate_error
