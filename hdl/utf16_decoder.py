"""Streaming UTF-16 decoder: code units in, code points out (the surrogate-joining stage)."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from .component import CheckedComponent
from .error_kind import ErrorKind, check_policy
from .layouts import CodeUnitLayout, CodepointLayout
from .pipeline import Pipeline


__all__ = ["UTF16_DECODE_ERRORS", "Utf16Decoder"]


#: Error policies of :class:`Utf16Decoder`.
UTF16_DECODE_ERRORS = ("replace", "surrogatepass")

_REPLACEMENT = 0xFFFD


class Utf16Decoder(CheckedComponent):
    """Streaming UTF-16 decoder: code units in, code points out.

    A lead surrogate unit (D800..DBFF) directly followed by a trail surrogate unit (DC00..DFFF)
    of the same message is one supplementary code point; a surrogate unit anywhere else is
    *lone*: an error (``SURROGATE``, one maximal subpart). Every other unit is its own code point.
    The output equals the reference model's ``JoinSurrogates`` stage followed by its error
    policy (``utf8_gateware.sim.encodings.surrogates``, ``reference.render``). It is also the
    joining stage that CESU-8 and Modified UTF-8 decoding compose after a byte decoder that
    accepts surrogates: the boundary lies at code units, so neither byte decoder needs a longer
    look-back window.

    Parameters
    ----------
    errors : ``"replace"`` or ``"surrogatepass"``
        A lone surrogate becomes U+FFFD (``"replace"``) or is passed through as its own value
        (``"surrogatepass"``), flagged ``SURROGATE`` either way.

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.CodeUnitLayout` stream (``unit: 16``, ``error``,
    ``last``). A beat with ``error`` set stands for an ill-formed piece of the byte stage (an odd
    trailing byte: ``TRUNCATED``): it becomes U+FFFD with its kind; with ``"replace"`` a lead
    surrogate directly before it is part of the same maximal subpart (one U+FFFD, ``TRUNCATED``,
    as CPython). (The reference raises on it with ``"surrogatepass"``; the core reports it.)
    ``o``: :data:`~utf8_gateware.hdl.layouts.CodepointLayout` stream (``codepoint: 21``,
    ``error``, ``last``); ``last`` on the final output of each message.

    Latency and throughput
    ----------------------
    One unit is taken every cycle (``i.ready`` falls only while the sink stalls); at most one
    code point comes out per cycle, with no idle cycle but where a pair gives one output for two
    units. A unit is held in one register until the next unit shows whether it begins a pair; a
    unit that cannot (not a lead surrogate, or the last of its message) goes out at once. The
    output for a unit is valid on ``o`` at most :attr:`LATENCY` = 2 cycles after its transfer
    (the held register, then the output slot), a pair's 1 cycle after its trail's. ``o.valid``
    and ``o.payload`` are one LUT (output slot or skid register) of flip-flops; nothing depends
    on ``o.ready`` in the same cycle but the pipeline's advance flip-flops.
    """

    #: Cycles from the transfer of the unit that completes an output to the output being valid.
    LATENCY = 2

    @classmethod
    def check_parameters(cls, errors="replace"):
        check_policy(errors, UTF16_DECODE_ERRORS)

    def __init__(self, errors="replace"):
        self._errors = errors
        super().__init__({
            "i": In(stream.Signature(CodeUnitLayout)),
            "o": Out(stream.Signature(CodepointLayout)),
        })

    @property
    def errors(self):
        """The error policy."""
        return self._errors

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, flush_steps=2)
        m.d.comb += self.i.ready.eq(pipe.adv & ~pipe.flushing)
        x, x_take = self.i.p, self.i.valid & ~pipe.flushing

        def kinds(unit, error):
            ok = error == ErrorKind.NONE
            return ok & (unit[10:] == 0b110110), ok & (unit[10:] == 0b110111)

        # The held unit: a lead surrogate waiting for its trail, or a unit to go out.
        h_valid = pipe.register("h_valid")
        h_unit, h_error, h_last = pipe.register("h_unit", 16), \
            pipe.register("h_error", ErrorKind), pipe.register("h_last")
        h_lead, h_trail = kinds(h_unit, h_error)
        x_lead, x_trail = kinds(x.unit, x.error)
        waits = h_valid & h_lead & ~h_last         # the held lead needs the next unit
        pair = waits & x_take & x_trail
        merged = waits & x_take & (x.error == ErrorKind.TRUNCATED) if self._errors == "replace" \
            else 0
        emit = h_valid & (~waits | x_take)        # an output in this step
        consumed = pair | merged                  # x is part of that output
        hold = x_take & ~consumed                 # x becomes the held unit
        with m.If(pipe.enable(1 + 16 + 3 + 1)):
            m.d.sync += h_valid.eq((hold | (h_valid & ~emit)) & ~pipe.flushing)
            with m.If(hold):
                m.d.sync += [h_unit.eq(x.unit), h_error.eq(x.error), h_last.eq(x.last)]

        # What the held unit (and x) give.
        lone = h_lead | h_trail
        bad = h_error != ErrorKind.NONE
        joined = Cat(x.unit[:10], h_unit[:6], h_unit[6:10] + 1)
        passed = h_unit if self._errors == "surrogatepass" else _REPLACEMENT
        codepoint = Mux(pair, joined, Mux(merged | bad, _REPLACEMENT, Mux(lone, passed, h_unit)))
        error = Mux(pair, ErrorKind.NONE, Mux(merged, ErrorKind.TRUNCATED,
                                               Mux(bad, h_error, Mux(lone, ErrorKind.SURROGATE,
                                                                     ErrorKind.NONE))))
        last = Mux(consumed, x.last, h_last)

        s_valid = pipe.fact("s_valid", emit, pipe.flushing)
        s_p = Cat(pipe.data("s_cp", codepoint, 21), pipe.data("s_error", error, 3),
                  pipe.data("s_last", last))
        pipe.drive_output(self.o, s_valid, s_p)
        return m
