"""Stretching short events into LED blinks a person can see."""

from amaranth.hdl import Module, Signal
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.component import CheckedComponent


__all__ = ["LEDStretcher"]


class LEDStretcher(CheckedComponent):
    """Two LEDs: activity (lit for ``activity_ms`` after each ``activity`` pulse, and while
    ``busy``) and error (lit for ``error_ms`` after each ``error`` pulse).

    Parameters: ``clk_freq`` (Hz; at least 1 kHz), ``activity_ms``, ``error_ms``.

    Ports: ``activity``, ``error``, ``busy`` In(1); ``led_activity``, ``led_error`` Out(1)
    (active high). A millisecond tick drives two small down-counters.
    """
    @classmethod
    def check_parameters(cls, clk_freq, *, activity_ms=50, error_ms=500):
        if isinstance(clk_freq, bool) or not isinstance(clk_freq, (int, float)) or \
                clk_freq < 1000:
            raise ValueError(f"clk_freq must be a frequency of at least 1 kHz, not {clk_freq!r}")
        for name, value in (("activity_ms", activity_ms), ("error_ms", error_ms)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")

    def __init__(self, clk_freq, *, activity_ms=50, error_ms=500):
        self.ms_cycles = int(clk_freq // 1000)
        self.activity_ms = activity_ms
        self.error_ms = error_ms
        super().__init__({
            "activity": In(1),
            "error": In(1),
            "busy": In(1),
            "led_activity": Out(1),
            "led_error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        ms_max = self.ms_cycles - 1
        ms_count = Signal(range(ms_max + 1))
        ms_tick = Signal()
        m.d.sync += ms_tick.eq(ms_count == ms_max)
        with m.If(ms_count == ms_max):
            m.d.sync += ms_count.eq(0)
        with m.Else():
            m.d.sync += ms_count.eq(ms_count + 1)
        lit = []
        for event, duration in ((self.activity, self.activity_ms),
                                (self.error, self.error_ms)):
            timer = Signal(range(duration + 1))
            with m.If(event):
                m.d.sync += timer.eq(duration)
            with m.Elif(ms_tick & (timer != 0)):
                m.d.sync += timer.eq(timer - 1)
            lit.append(timer != 0)
        m.d.comb += [self.led_activity.eq(lit[0] | self.busy), self.led_error.eq(lit[1])]
        return m
