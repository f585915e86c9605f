"""The top level every board shares: clock pad -> the board's PLL -> ``sync``, the USB-UART's
lines, two LEDs, and :class:`~utf8_gateware.boards.board.BoardCore` between them. A board
module (:mod:`.icebreaker`, :mod:`.ulx3s`) names its PLL, clock and LED resources; the
memories follow the platform (:class:`~utf8_gateware.boards.buffer.ByteRAM`: SPRAM on the
iCE40 UltraPlus, block RAM elsewhere)."""

from amaranth.hdl import Elaboratable, Module

from .board import BoardCore


__all__ = ["BoardTop"]


class BoardTop(Elaboratable):
    """Top level for an Amaranth board platform.

    ``pll``: the PLL's elaboratable class, built as ``pll(parameters, pad)`` with the clock
    resource ``clock`` requested as a bare pad (``dir="-"``); ``parameters``: its setting
    (``f_out`` is the design clock); ``leds``: the resources ``(name, number)`` of the
    activity and error LEDs; ``baud`` and ``core_kwargs``: the
    :class:`~utf8_gateware.boards.board.BoardCore`'s. Attributes: ``pll`` (the setting) and
    ``core``."""
    def __init__(self, *, pll, parameters, clock, leds, baud, **core_kwargs):
        self._pll_class = pll
        self.pll = parameters
        self._clock = clock
        self._leds = leds
        self.core = BoardCore(clk_freq=parameters.f_out, baud=baud, **core_kwargs)

    def elaborate(self, platform):
        m = Module()
        pad = platform.request(self._clock, dir="-")
        m.submodules.pll = self._pll_class(self.pll, pad)
        m.submodules.core = core = self.core
        uart = platform.request("uart", 0)
        led_activity, led_error = (platform.request(*led) for led in self._leds)
        m.d.comb += [
            core.rx.eq(uart.rx.i),
            uart.tx.o.eq(core.tx),
            led_activity.o.eq(core.led_activity),
            led_error.o.eq(core.led_error),
        ]
        return m
