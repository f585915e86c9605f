"""Unpipelined specification model of the UTF-8 decoder, in Amaranth, for the formal proofs.

:class:`SpecDecoder` is the decoder as plainly as it can be written: a byte-serial state machine
that follows the Unicode Standard, section 3.9 (Table 3-7 and the "maximal subpart" practice of
U+FFFD substitution) step by step, with no pipeline and no output queue. It is never built for
an FPGA; :mod:`utf8_gateware.formal.checks` proves properties of it and proves the real
:class:`~utf8_gateware.hdl.decoder.Utf8Decoder` equivalent to it. ``tests/test_spec_decoder.py``
checks it against :mod:`utf8_gateware.sim.reference` and CPython in simulation.

Well-formed sequences: Table 3-7, as :mod:`utf8_gateware.hdl.utf8_grammar` lists it.

State: the *pending prefix* ``buf[0..k-1]`` (``k`` = 0..3 bytes: a lead C2..F4 and the
continuation bytes it accepted so far). For each byte ``b``:

1. If a prefix is pending and ``b`` is an allowed next byte, ``b`` joins it; a complete sequence
   is output as a scalar value. A prefix that ``last`` cuts short is one ``TRUNCATED`` error.
2. Otherwise a pending prefix is one error (its maximal subpart): ``OVERLONG`` / ``SURROGATE`` /
   ``TOO_LARGE`` if a lone E0/F0, ED or F4 was followed by a continuation byte outside its
   second-byte range, ``TRUNCATED`` otherwise. Then ``b`` is examined as a new start: ASCII is
   output as is, a lead C2..F4 starts a prefix (or is a ``TRUNCATED`` error if ``last``), any
   other byte is an error of its own (80..BF ``UNEXPECTED_CONTINUATION``, C0/C1 ``OVERLONG``,
   F5..FD ``TOO_LARGE``, FE/FF ``INVALID_BYTE``).

An error is one U+FFFD with ``errors="replace"``; with ``errors="surrogateescape"`` each byte
``x`` of the subpart is one U+DC00+x output. Every output of an error carries its kind.

Ports
-----
``i``: ``In(stream.Signature(ByteLayout, always_ready=True))``
    One byte per cycle when ``i.valid``; the model is always ready.
``o``: ``Out(SpecOutputLayout)``
    Combinational: the outputs the byte on ``i`` produces in this cycle (``o.count`` = 0..4,
    ``o.items[0..count-1]`` in order, the last of them carries ``last`` if ``i.payload.last``).
    ``o.count`` is 0 when ``i.valid`` is low.
``k``, ``buf``: ``Out``
    The pending prefix (for the formal proofs' invariants).
``ks``: ``Out``
    The length of the prefix pending before each byte of the beat (``ks[0]`` is ``k``).

Latency 0 (outputs in the cycle of the byte), throughput one byte per cycle.
"""

from types import SimpleNamespace

from amaranth.hdl import Module, Mux, Signal, Cat
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.component import CheckedComponent
from utf8_gateware.hdl.decoder import check_lanes
from utf8_gateware.hdl.error_kind import DECODE_ERRORS, ErrorKind, check_policy
from utf8_gateware.hdl.layouts import ByteLayout, CodepointLayout, byte_beat_layout


__all__ = ["SpecDecoder", "SpecOutputLayout", "MAX_OUTPUTS_PER_BYTE"]


#: Most outputs one input byte can produce: a 3-byte subpart escaped byte by byte, then the byte
#: itself as an error or ASCII.
MAX_OUTPUTS_PER_BYTE = 4

SpecOutputLayout = data.StructLayout({
    "count": range(MAX_OUTPUTS_PER_BYTE + 1),
    "items": data.ArrayLayout(CodepointLayout, MAX_OUTPUTS_PER_BYTE),
})


def _in(value, lo, hi):
    return (value >= lo) & (value <= hi)


def _sequence_length(lead):
    """Length of the sequence a lead C2..F4 starts (2..4)."""
    return Mux(lead < 0xE0, 2, Mux(lead < 0xF0, 3, 4))


def _second_byte_range(lead):
    """The allowed second bytes ``(lo, hi)`` after the lead ``lead``."""
    lo = Mux(lead == 0xE0, 0xA0, Mux(lead == 0xF0, 0x90, 0x80))
    hi = Mux(lead == 0xED, 0x9F, Mux(lead == 0xF4, 0x8F, 0xBF))
    return lo, hi


def _second_byte_error(lead):
    """Why a lone lead E0/F0/ED/F4 fails when a continuation byte outside its range follows."""
    return Mux((lead == 0xE0) | (lead == 0xF0), ErrorKind.OVERLONG,
           Mux(lead == 0xED, ErrorKind.SURROGATE, ErrorKind.TOO_LARGE))


def _scalar(sequence):
    """The scalar value of a well-formed sequence (a list of 2..4 byte values)."""
    value = sequence[0] & (0x7F >> len(sequence))
    for byte in sequence[1:]:
        value = Cat(byte[:6], value)
    return value


class SpecDecoder(CheckedComponent):
    """Byte-serial specification model of the UTF-8 decoder (see the module documentation).

    Parameters
    ----------
    errors : ``"replace"`` or ``"surrogateescape"``
    lanes : int
        With N > 1 lanes, the input is a beat of
        :func:`~utf8_gateware.hdl.layouts.byte_beat_layout` (N) (``count`` bytes in lanes
        0..count-1, junk in the others) and the model takes the beat's bytes one after another
        within the cycle: N copies of the one-byte step, each handing its pending prefix to the
        next. ``o`` is then an array of N :data:`SpecOutputLayout`: ``o[k]`` holds the outputs
        of the beat's byte ``k`` (none for a lane past ``count``); the beat's ``last`` belongs
        to its byte ``count - 1``. ``k`` and ``buf`` are the prefix pending before the beat.
    """
    @classmethod
    def check_parameters(cls, errors="replace", *, lanes=1):
        check_policy(errors, DECODE_ERRORS)
        check_lanes(lanes)

    def __init__(self, errors="replace", *, lanes=1):
        self._errors, self._lanes = errors, lanes
        super().__init__({
            "i":   In(stream.Signature(ByteLayout if lanes == 1 else byte_beat_layout(lanes),
                                       always_ready=True)),
            "o":   Out(SpecOutputLayout if lanes == 1 else
                       data.ArrayLayout(SpecOutputLayout, lanes)),
            "k":   Out(range(4)),
            "buf": Out(data.ArrayLayout(8, 3)),
            "ks":  Out(data.ArrayLayout(range(4), lanes)),
        })

    @property
    def errors(self):
        return self._errors

    def _error(self, subpart, kind):
        """The outputs of one error: its subpart (a list of byte values) and its kind."""
        if self._errors == "replace":
            return [(0xFFFD, kind)]
        return [(0xDC00 | byte, kind) for byte in subpart]

    def elaborate(self, platform):
        m = Module()
        k, buf = Signal.like(self.k), Signal.like(self.buf)
        m.d.comb += [self.k.eq(k), self.buf.eq(buf)]
        if self._lanes == 1:
            m.d.comb += self.ks[0].eq(k)
            step = self.step(m, "s0", self.i.valid, self.i.payload.data, self.i.payload.last,
                              k, buf)
            m.d.comb += [self.o.count.eq(step.count),
                         *[self.o.items[n].eq(item) for n, item in enumerate(step.items)]]
            m.d.sync += [k.eq(step.k), buf.eq(step.buf)]
            return m
        # N lanes: the steps in a chain, each handing its pending prefix to the next.
        state = (k, buf)
        for lane, o in enumerate(self.o):
            m.d.comb += self.ks[lane].eq(state[0])
            step = self.step(m, f"s{lane}", self.i.valid & (lane < self.i.payload.count),
                              self.i.payload.data[8 * lane:8 * lane + 8],
                              self.i.payload.last & (self.i.payload.count == lane + 1), *state)
            m.d.comb += [o.count.eq(step.count),
                         *[o.items[n].eq(item) for n, item in enumerate(step.items)]]
            state = (step.k, step.buf)
        m.d.sync += [k.eq(state[0]), buf.eq(state[1])]
        return m

    def step(self, m, name, valid, b, last, k, buf):
        """The model's step as combinational logic in ``m`` (signals named ``name``_*): one
        byte ``b`` (if ``valid``, ending a message if ``last``) after the pending prefix ``k``
        (a signal of ``range(4)``), ``buf`` (a signal of ``ArrayLayout(8, 3)``). Returns a
        namespace of Signals ``count``, ``items`` (4 :data:`CodepointLayout` items) and the next
        prefix ``k``, ``buf``. The proofs of all time evaluate it on the bytes in the real
        decoder's stages (:class:`~utf8_gateware.formal.decoder_invariants.SpecPlaces`)."""
        out = SimpleNamespace(
            count=Signal(range(MAX_OUTPUTS_PER_BYTE + 1), name=f"{name}_count"),
            items=[Signal(CodepointLayout, name=f"{name}_item{n}")
                   for n in range(MAX_OUTPUTS_PER_BYTE)],
            k=Signal.like(k, name=f"{name}_k"), buf=Signal.like(buf, name=f"{name}_buf"))
        m.d.comb += [out.k.eq(k), out.buf.eq(buf)]
        pending = [buf[n] for n in range(3)]

        def emit(items):
            # Output `items` (a list of (codepoint, kind)); the last of them ends the message
            # if `b` does.
            m.d.comb += out.count.eq(len(items))
            for index, (codepoint, kind) in enumerate(items):
                m.d.comb += [
                    out.items[index].codepoint.eq(codepoint),
                    out.items[index].error.eq(kind),
                    out.items[index].last.eq(last if index == len(items) - 1 else 0),
                ]

        def new_start(before):
            # `b` examined as the start of a new sequence, after the outputs `before`.
            with m.If(b < 0x80):
                emit(before + [(b, ErrorKind.NONE)])
            with m.Elif(b < 0xC0):
                emit(before + self._error([b], ErrorKind.UNEXPECTED_CONTINUATION))
            with m.Elif(b < 0xC2):
                emit(before + self._error([b], ErrorKind.OVERLONG))
            with m.Elif(b < 0xF5):
                with m.If(last):
                    emit(before + self._error([b], ErrorKind.TRUNCATED))
                with m.Else():
                    emit(before)
                    m.d.comb += [out.buf[0].eq(b), out.k.eq(1)]
            with m.Elif(b < 0xFE):
                emit(before + self._error([b], ErrorKind.TOO_LARGE))
            with m.Else():
                emit(before + self._error([b], ErrorKind.INVALID_BYTE))

        with m.If(valid):
            m.d.comb += out.k.eq(0)  # unless the prefix grows (below)
            with m.Switch(k):
                with m.Case(0):
                    new_start([])
                for n in (1, 2, 3):
                    with m.Case(n):
                        prefix = pending[:n]
                        if n == 1:
                            lo, hi = _second_byte_range(prefix[0])
                        else:
                            lo, hi = 0x80, 0xBF
                        with m.If(_in(b, lo, hi)):
                            # `b` continues the prefix.
                            if n == 3:  # only a 4-byte sequence gets this far
                                emit([(_scalar(prefix + [b]), ErrorKind.NONE)])
                            else:
                                with m.If(_sequence_length(prefix[0]) == n + 1):
                                    emit([(_scalar(prefix + [b]), ErrorKind.NONE)])
                                with m.Elif(last):
                                    emit(self._error(prefix + [b], ErrorKind.TRUNCATED))
                                with m.Else():
                                    emit([])
                                    m.d.comb += [out.buf[n].eq(b), out.k.eq(n + 1)]
                        with m.Else():
                            # `b` ends the prefix's maximal subpart.
                            if n == 1:
                                kind = Mux(_in(b, 0x80, 0xBF),
                                           _second_byte_error(prefix[0]), ErrorKind.TRUNCATED)
                            else:
                                kind = ErrorKind.TRUNCATED
                            new_start(self._error(prefix, kind))
        return out
