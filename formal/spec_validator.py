"""Unpipelined specification model of the UTF-8 validator, for the formal proofs.

:class:`SpecValidator` is :class:`~utf8_gateware.formal.spec_decoder.SpecDecoder` (``replace``)
read as a verdict: a message is valid if no output is an error; its first maximal subpart starts
at the first byte of the first error output (the lead of the prefix pending before the byte
whose outputs hold it, or that byte itself); each error output (one U+FFFD) is one maximal
subpart. ``tests/test_spec_decoder.py`` checks it against the reference model and CPython in
simulation.

Ports
-----
``i``: ``In(stream.Signature(..., always_ready=True))``
    One byte (one lane: ``ByteLayout``) or one beat (``byte_beat_layout(lanes)``: ``count``
    bytes in lanes 0..count-1, junk in the others) per cycle when ``i.valid``.
``o``: ``Out(verdict_layout(counter_width))``
    Combinational: the verdict of the message the input ends (meaningful when ``done``), its
    counters saturating like the core's.
``done``: ``Out(1)``
    ``i.valid & i.payload.last``: the input ends a message.

Latency 0, throughput one beat per cycle.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.component import CheckedComponent
from utf8_gateware.hdl.decoder import check_lanes
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.layouts import ByteLayout, byte_beat_layout
from utf8_gateware.hdl.validator import verdict_layout
from .spec_decoder import SpecDecoder


__all__ = ["SpecValidator"]


class SpecValidator(CheckedComponent):
    """The verdict per message of :class:`~utf8_gateware.formal.spec_decoder.SpecDecoder`
    (``replace``, ``lanes``) (see the module documentation). ``length_width``: the width of the
    model's own (unsaturated) counters of the message's bytes and errors."""
    @classmethod
    def check_parameters(cls, *, lanes=1, counter_width=8, length_width=16):
        check_lanes(lanes)
        for name, value in (("counter_width", counter_width), ("length_width", length_width)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an integer, not {value!r}")
            if value < 1:
                raise ValueError(f"{name} must be at least 1, not {value!r}")

    def __init__(self, *, lanes=1, counter_width=8, length_width=16):
        self._lanes, self._width, self._length = lanes, counter_width, length_width
        super().__init__({
            "i":    In(stream.Signature(ByteLayout if lanes == 1 else byte_beat_layout(lanes),
                                        always_ready=True)),
            "o":    Out(verdict_layout(counter_width)),
            "done": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        n, beat = self._lanes, self.i.payload
        m.submodules.spec = spec = SpecDecoder("replace", lanes=n)
        m.d.comb += [spec.i.valid.eq(self.i.valid), spec.i.payload.eq(beat)]

        # The message before this beat: its bytes, whether it has an error, the first error's
        # offset and kind, the error count; then each byte of the beat in turn.
        state = {"bytes": Signal(self._length), "bad": Signal(),
                 "offset": Signal(self._length), "kind": Signal(ErrorKind),
                 "errors": Signal(self._length)}
        now = dict(state)
        count = beat.count if n > 1 else 1
        for lane, outputs in enumerate([spec.o] if n == 1 else list(spec.o)):
            first = outputs.items[0]
            error = (outputs.count != 0) & (first.error != ErrorKind.NONE)
            # With replace a byte ends at most two maximal subparts: the prefix's and its own.
            errors = sum((index < outputs.count) & (item.error != ErrorKind.NONE)
                         for index, item in enumerate(outputs.items[:2]))
            new = ~now["bad"] & error
            now = {"bytes": now["bytes"] + (lane < count),
                   "bad": now["bad"] | error,
                   # The first error output is the pending prefix's, or the byte's own.
                   "offset": Mux(new, now["bytes"] - spec.ks[lane], now["offset"]),
                   "kind": Mux(new, first.error, now["kind"]),
                   "errors": now["errors"] + errors}
        with m.If(self.i.valid):
            m.d.sync += [signal.eq(Mux(beat.last, 0, now[key])) for key, signal in state.items()]

        most = (1 << self._width) - 1

        def saturated(value):
            return Mux(value > most, most, value)

        m.d.comb += [
            self.done.eq(self.i.valid & beat.last),
            self.o.valid.eq(~now["bad"]),
            self.o.offset.eq(Mux(now["bad"], saturated(now["offset"]), 0)),
            self.o.error.eq(Mux(now["bad"], now["kind"], ErrorKind.NONE)),
            self.o.errors.eq(saturated(now["errors"])),
            self.o.last.eq(1),
        ]
        return m
