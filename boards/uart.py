"""UART receiver and transmitter (8 data bits, no parity, 1 stop bit), stream interfaces.

Both take an integer clock ``divisor`` (clock cycles per bit); :func:`uart_divisor` derives it
from a clock and a baud rate and refuses combinations whose rate error is too large for 8N1
(the receiver samples mid-bit, so the two ends may differ by a few percent in total).
"""

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import stream
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.component import CheckedComponent


__all__ = ["MIN_DIVISOR", "uart_divisor", "UARTReceiver", "UARTTransmitter"]


#: Smallest divisor (clock cycles per bit) the receiver can sample at: it needs a half-bit
#: wait and a full bit of cycles after the 2-FF synchroniser.
MIN_DIVISOR = 4


def uart_divisor(clk_freq, baud, *, tolerance=0.01):
    """Clock cycles per bit for ``baud`` at ``clk_freq`` (Hz), rounded to the nearest integer.

    Raises :class:`ValueError` if the divisor would be below :data:`MIN_DIVISOR` or if the
    achieved rate is off by more than ``tolerance`` (relative; 1 % by default, well inside the
    ~4 % an 8N1 link tolerates between both ends).
    """
    for name, value in (("clk_freq", clk_freq), ("baud", baud), ("tolerance", tolerance)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, not {value!r}")
        if value <= 0 and name != "tolerance":
            raise ValueError(f"{name} must be positive, not {value!r}")
    divisor = round(clk_freq / baud)
    if divisor < MIN_DIVISOR:
        raise ValueError(f"{baud:g} baud needs at least {MIN_DIVISOR} clock cycles per bit; a "
                         f"{clk_freq / 1e6:g} MHz clock allows at most "
                         f"{clk_freq / MIN_DIVISOR:g} baud")
    error = clk_freq / divisor / baud - 1
    if abs(error) > tolerance:
        raise ValueError(f"{baud:g} baud from a {clk_freq / 1e6:g} MHz clock is off by "
                         f"{error:+.2%} (divisor {divisor}); the tolerance is {tolerance:.2%}")
    return divisor


class _BitTimed(CheckedComponent):
    """Base of both UART sides: timed by an integer ``divisor`` (clock cycles per bit); the ports
    are the subclass's annotations."""
    @classmethod
    def check_parameters(cls, divisor):
        if isinstance(divisor, bool) or not isinstance(divisor, int):
            raise TypeError(f"divisor must be an integer number of clock cycles per bit, "
                            f"not {divisor!r}")
        if divisor < MIN_DIVISOR:
            raise ValueError(f"divisor must be at least {MIN_DIVISOR} clock cycles per bit, "
                             f"not {divisor}")

    def __init__(self, divisor):
        self.divisor = divisor
        super().__init__()


class UARTReceiver(_BitTimed):
    """8N1 UART receiver.

    Ports
    -----
    ``rx``: In(1)
        The serial line (idle high); synchronised with two flip-flops inside.
    ``o``: Out(stream.Signature(8))
        Received bytes. The line cannot be stalled: a byte that arrives while the previous one
        has not been taken is dropped and ``overrun`` pulses.
    ``framing_error``: Out(1)
        Pulses for one cycle when a stop bit is low (the byte is dropped); the receiver then
        waits for the line to go high (a *break* gives one error, not a stream of them).
    ``overrun``: Out(1)
        Pulses when a byte is dropped because ``o`` was still full.
    ``busy``: Out(1)
        High while a character is being received.

    Timing: a falling edge starts a character; the start bit is checked half a bit later (a
    shorter low pulse is a glitch and ignored), then each data bit and the stop bit are sampled
    in their middle. The byte is offered in the cycle after the middle of the stop bit, so a
    receiver is ready for the next start bit half a bit early (tolerates a slower sender).
    """
    rx:            In(1, init=1)
    o:             Out(stream.Signature(8))
    framing_error: Out(1)
    overrun:       Out(1)
    busy:          Out(1)

    def elaborate(self, platform):
        m = Module()
        rx = Signal(init=1)
        m.submodules.sync = FFSynchronizer(self.rx, rx, init=1)

        timer = Signal(range(self.divisor))
        shreg = Signal(8)
        bits  = Signal(range(8))

        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        m.d.sync += [self.framing_error.eq(0), self.overrun.eq(0)]

        # Every state but IDLE and BREAK waits for `timer` to run out, then acts.
        with m.If(timer != 0):
            m.d.sync += timer.eq(timer - 1)

        with m.FSM() as fsm:
            with m.State("IDLE"):
                with m.If(~rx):
                    m.d.sync += timer.eq(self.divisor // 2 - 1)
                    m.next = "START"
            with m.State("START"):
                with m.If((timer == 0) & rx):
                    m.next = "IDLE"        # a glitch, not a start bit
                with m.Elif(timer == 0):
                    m.d.sync += [timer.eq(self.divisor - 1), bits.eq(0)]
                    m.next = "DATA"
            with m.State("DATA"):
                with m.If(timer == 0):
                    m.d.sync += [shreg.eq(Cat(shreg[1:], rx)),
                                 timer.eq(self.divisor - 1), bits.eq(bits + 1)]
                    with m.If(bits == 7):
                        m.next = "STOP"
            with m.State("STOP"):
                with m.If((timer == 0) & rx):
                    with m.If(self.o.valid & ~self.o.ready):
                        m.d.sync += self.overrun.eq(1)
                    with m.Else():
                        m.d.sync += [self.o.payload.eq(shreg), self.o.valid.eq(1)]
                    m.next = "IDLE"
                with m.Elif(timer == 0):
                    m.d.sync += self.framing_error.eq(1)
                    m.next = "BREAK"
            with m.State("BREAK"):
                with m.If(rx):
                    m.next = "IDLE"
        m.d.comb += self.busy.eq(fsm.ongoing("START") | fsm.ongoing("DATA") | fsm.ongoing("STOP"))
        return m


class UARTTransmitter(_BitTimed):
    """8N1 UART transmitter.

    Ports
    -----
    ``i``: In(stream.Signature(8))
        Bytes to send. ``ready`` (a register) is high when idle and in the last cycle of a stop
        bit, so consecutive bytes go out back to back (10 bit times per byte, no gap).
    ``tx``: Out(1)
        The serial line (idle high).
    ``busy``: Out(1)
        High while a character is on the line.
    """
    i:    In(stream.Signature(8))
    tx:   Out(1, init=1)
    busy: Out(1)

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self.divisor))
        shreg = Signal(10, init=1)         # bit 0 is on the line
        left  = Signal(range(11))          # bits still to finish, including the current one

        # `ready` is a register: high when the line will be idle or in the last cycle of the
        # stop bit in the next cycle.
        ready = Signal(init=1)
        transfer = self.i.valid & ready
        m.d.sync += ready.eq(~transfer & ((left == 0) | ((left == 1) & (timer <= 1))))
        m.d.comb += [
            self.tx.eq(shreg[0]),
            self.busy.eq(left != 0),
            self.i.ready.eq(ready),
        ]
        with m.If(transfer):
            m.d.sync += [
                shreg.eq(Cat(Const(0, 1), self.i.payload, Const(1, 1))),
                left.eq(10),
                timer.eq(self.divisor - 1),
            ]
        with m.Elif(left != 0):
            with m.If(timer != 0):
                m.d.sync += timer.eq(timer - 1)
            with m.Else():
                m.d.sync += [
                    shreg.eq(Cat(shreg[1:], Const(1, 1))),
                    left.eq(left - 1),
                    timer.eq(self.divisor - 1),
                ]
        return m
