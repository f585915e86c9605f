"""A verdict per message: is it well-formed UTF-8, and if not, where and why."""

from amaranth.hdl import Const, Module, Signal
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from ..sim.reference import UTF8_LENGTH_LIMITS
from .component import CheckedComponent
from .decoder import Utf8Decoder, check_lanes
from .error_kind import ErrorKind
from .layouts import ByteLayout, byte_beat_layout
from .pipeline import any_of


__all__ = ["Utf8Validator", "verdict_layout"]


def verdict_layout(counter_width):
    """One result per message: ``valid`` (well-formed), ``offset`` (the byte offset of the first
    maximal subpart's first byte; 0 if ``valid``), ``error`` (its kind; ``NONE`` if ``valid``)
    and ``errors`` (the number of maximal subparts: the U+FFFD count of ``replace``); ``last``
    is always 1 (each verdict ends its message, so the verdict stream is framed like the
    project's other streams)."""
    return data.StructLayout({
        "valid":  1,
        "offset": counter_width,
        "error":  ErrorKind,
        "errors": counter_width,
        "last":   1,
    })


class Utf8Validator(CheckedComponent):
    """Checks each message of a byte stream and gives one verdict per message.

    Parameters
    ----------
    lanes : int
        Bytes per beat: 1, 2, 4, 8 or 16 (the decoder's input layout).
    counter_width : int
        Width of ``offset`` and ``errors`` (8..64, default 32). Both saturate at their largest
        value, so a message longer than ``2**counter_width - 1`` bytes never reports a wrong
        small offset: a saturated value means "at least this".

    Ports
    -----
    i : ``In(stream.Signature(...))``
        As :class:`Utf8Decoder`'s input: ``ByteLayout`` with one lane, else
        ``byte_beat_layout(lanes)`` (``data``, ``count`` 1..N, ``last``).
    o : ``Out(stream.Signature(verdict_layout(counter_width)))``
        One payload per message, after its ``last`` byte.

    The verdict agrees with CPython: ``valid`` iff ``data.decode("utf-8")`` succeeds;
    ``offset`` is the ``start`` of its :class:`UnicodeDecodeError`; ``errors`` is the number of
    U+FFFD in ``data.decode("utf-8", "replace")``; ``error`` is the :class:`ErrorKind` of the first
    maximal subpart, as the decoder reports it.

    Structure, latency and throughput
    ---------------------------------
    A :class:`Utf8Decoder` with ``errors="replace"`` and the same lanes (one maximal subpart,
    one U+FFFD), followed by two registers: the beat's summary (the UTF-8 length of its
    well-formed code points before its first error lane, all of them, the first error's kind,
    the number of error lanes), then the message's accumulators. Before the first error every
    byte belongs to a well-formed code point, so the first error's offset is the sum of the
    lengths of the code points before it. One beat every cycle, like the decoder; the verdict is
    on ``o`` at most ``LATENCY`` cycles after the ``last`` byte while the sink is ready.

    Cost (measured, one lane, 32-bit counters, UP5K): 504 LCs and 37.5 MHz: the counters' carry
    chains, not the decoder, are the critical path, and the decoder's code-point assembly is
    carried along. A validator with split, pipelined counters that drops stages D and E would be
    smaller and as fast as the decoder; this one is built from the tested decoder so that it
    cannot disagree with it, and is the correct reference for that one.
    """

    @classmethod
    def check_parameters(cls, *, lanes=1, counter_width=32):
        check_lanes(lanes)
        if not isinstance(counter_width, int) or isinstance(counter_width, bool):
            raise TypeError(f"counter_width must be an integer, not {counter_width!r}")
        if not 8 <= counter_width <= 64:
            raise ValueError(f"counter_width must be 8 to 64, not {counter_width!r}")

    def __init__(self, *, lanes=1, counter_width=32):
        self._lanes, self._width = lanes, counter_width
        layout = ByteLayout if lanes == 1 else byte_beat_layout(lanes)
        super().__init__({
            "i": In(stream.Signature(layout)),
            "o": Out(stream.Signature(verdict_layout(counter_width))),
        })

    @property
    def lanes(self):
        return self._lanes

    @property
    def LATENCY(self):
        """Cycles from the transfer of a message's ``last`` byte to its verdict on ``o``."""
        return Utf8Decoder.latency("replace", lanes=self._lanes) + 2

    def elaborate(self, platform):
        m = Module()
        m.submodules.decoder = decoder = Utf8Decoder("replace", lanes=self._lanes)
        m.d.comb += [decoder.i.valid.eq(self.i.valid), decoder.i.payload.eq(self.i.payload),
                     self.i.ready.eq(decoder.i.ready)]

        adv = ~self.o.valid | self.o.ready
        m.d.comb += decoder.o.ready.eq(adv)
        beat = decoder.o.payload
        if self._lanes == 1:
            lanes = [(decoder.o.valid, beat.codepoint, beat.error)]
        else:
            lanes = [(lane.valid, lane.codepoint, lane.error) for lane in beat.lanes]

        # Stage 1: the beat's summary.
        n = len(lanes)
        s_valid, s_last = Signal(), Signal()
        s_all = Signal(range(4 * n + 1))          # bytes of the beat's well-formed code points
        s_before = Signal(range(4 * n + 1))       # ... before its first error lane
        s_has = Signal()
        s_kind = Signal(ErrorKind)
        s_errors = Signal(range(n + 1))
        bad = [valid & (error != ErrorKind.NONE) for valid, _, error in lanes]
        lengths = [Signal(range(5), name=f"len{k}") for k in range(n)]
        for k, (valid, codepoint, _) in enumerate(lanes):
            m.d.comb += lengths[k].eq(
                (valid & ~bad[k]).replicate(3) &
                (1 + sum((codepoint >= limit) for limit in UTF8_LENGTH_LIMITS[:3])))
        before, kind, seen = 0, 0, Const(0, 1)
        for k in range(n):
            # Lanes before the first error count; the first error lane gives the kind.
            before = before + (lengths[k] & (~(seen | bad[k])).replicate(3))
            kind = (bad[k] & ~seen).replicate(3) & lanes[k][2].as_value() | kind
            seen = seen | bad[k]
        with m.If(adv):
            m.d.sync += [
                s_valid.eq(decoder.o.valid),
                s_last.eq(beat.last),
                s_all.eq(sum(lengths)),
                s_before.eq(before),
                s_has.eq(any_of(bad)),
                s_kind.as_value().eq(kind),
                s_errors.eq(sum(bad)),
            ]

        # Stage 2: the message's accumulators and the verdict.
        offset = Signal(self._width)
        errors = Signal(self._width)
        found = Signal()
        first = Signal(ErrorKind)
        top = (1 << self._width) - 1

        def saturating(total, step):
            wide = total + step
            return (wide > top).replicate(self._width) | wide[:self._width]

        new_offset = Signal(self._width)
        new_errors = Signal(self._width)
        m.d.comb += [
            new_offset.eq(offset),
            new_errors.eq(saturating(errors, s_errors)),
        ]
        with m.If(~found):
            m.d.comb += new_offset.eq(saturating(offset, (s_has).replicate(len(s_all)) & s_before |
                                                         (~s_has).replicate(len(s_all)) & s_all))
        new_found = found | s_has
        new_first = Signal(ErrorKind)
        m.d.comb += new_first.eq(first)
        with m.If(~found):
            m.d.comb += new_first.eq(s_kind)

        with m.If(adv):
            m.d.sync += self.o.valid.eq(0)
            with m.If(s_valid):
                with m.If(s_last):
                    m.d.sync += [
                        self.o.valid.eq(1),
                        self.o.payload.valid.eq(~new_found),
                        self.o.payload.offset.eq(new_found.replicate(self._width) & new_offset),
                        self.o.payload.error.eq(new_first),
                        self.o.payload.errors.eq(new_errors),
                        self.o.payload.last.eq(1),
                        offset.eq(0), errors.eq(0), found.eq(0), first.eq(ErrorKind.NONE),
                    ]
                with m.Else():
                    m.d.sync += [offset.eq(new_offset), errors.eq(new_errors),
                                 found.eq(new_found), first.eq(new_first)]
        return m
