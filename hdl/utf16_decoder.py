"""Streaming UTF-16 decoder: code units in, code points out (the surrogate-joining stage)."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal

from .component import PolicyStage
from .error_kind import ErrorKind
from .layouts import CodeUnitLayout, CodepointLayout
from .pipeline import Pipeline, keep


__all__ = ["UTF16_DECODE_ERRORS", "Utf16Decoder"]


#: Error policies of :class:`Utf16Decoder`.
UTF16_DECODE_ERRORS = ("replace", "surrogatepass")

_REPLACEMENT = 0xFFFD


class Utf16Decoder(PolicyStage):
    """Streaming UTF-16 decoder: code units in, code points out.

    A lead surrogate unit (D800..DBFF) directly followed by a trail surrogate unit (DC00..DFFF)
    of the same message is one supplementary code point; a surrogate unit anywhere else is
    *lone*: an error (``SURROGATE``, one maximal subpart). Every other unit is its own code point.
    The output equals the reference model's ``JoinSurrogates`` stage followed by its error
    policy (``utf8_gateware.sim.encodings.surrogates``, ``reference.render``). (CESU-8 and
    Modified UTF-8 decoding join pairs by the same rule inside the byte decoder's pipeline:
    :class:`~utf8_gateware.hdl.surrogate_joiner.SurrogateJoiner`.)

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
    output for a unit is valid on ``o`` at most :attr:`LATENCY` = 3 cycles after its transfer
    (the input register, the held register, the output slot), a pair's 2 cycles after its
    trail's. ``i.ready`` is one LUT of two flip-flops; ``o.valid`` and ``o.payload`` one LUT
    (output slot or skid register) of flip-flops; nothing depends on ``o.ready`` in the same
    cycle but the pipeline's advance flip-flops. LUT depth: the held register's next state is
    one LUT of the input register's flags; the output slot two (the pair test, then the
    multiplexer).
    """

    #: Cycles from the transfer of the unit that completes an output to the output being valid.
    LATENCY = 3

    POLICIES = UTF16_DECODE_ERRORS
    LAYOUTS = (CodeUnitLayout, CodepointLayout)

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, flush_steps=3)
        m.d.comb += self.i.ready.eq(pipe.adv & ~pipe.flushing)
        replace = self._errors == "replace"
        merge = lone_sub = replace      # a lead and an error beat: one subpart; a lone
                                        # surrogate becomes U+FFFD

        def term(name, value, width=1):
            """`value` as a signal that synthesis maps to LUTs of its own (a LUT level)."""
            sig = Signal(width, name=name, attrs={"keep": 1})
            m.d.comb += sig.eq(value)
            return sig

        # -- the input register: the unit and its flags (two LUT levels from the port) ---------
        p = self.i.p
        ok = p.error == ErrorKind.NONE
        surrogate = ok & (p.unit[11:16] == 0b11011)
        lead, trail = surrogate & ~p.unit[10], surrogate & p.unit[10]
        trunc = p.error == ErrorKind.TRUNCATED
        x_valid = pipe.fact("x_valid", self.i.valid, pipe.flushing)
        x_unit  = pipe.data("x_unit", p.unit, 16)
        x_last  = pipe.data("x_last", p.last)
        x_trail = pipe.data("x_trail", trail)
        x_trunc = pipe.data("x_trunc", trunc)
        # x completes a held lead's output: a pair, or (replace) one TRUNCATED subpart.
        x_ends  = pipe.data("x_ends", trail | (trunc if merge else 0))
        x_waits = pipe.data("x_waits", lead & ~p.last)       # x would wait for the next unit
        x_sub   = pipe.data("x_sub", ~ok |
                            (surrogate if lone_sub else 0))     # alone: U+FFFD
        # The kind of x alone: its own error, or SURROGATE for a (lone) surrogate unit.
        x_kind  = pipe.data("x_kind", Mux(surrogate, ErrorKind.SURROGATE, p.error), 3)

        # -- the held unit: shifted in every step, but while a lead waits for the next unit -----
        # `h_wait`: a lead surrogate that is not the last unit of its message (it may join).
        h_valid, h_wait = pipe.register("h_valid"), pipe.register("h_wait")
        shift = term("shift", ~h_wait | x_valid)
        # x completes the held lead's output: a pair, or (replace) one TRUNCATED subpart.
        consumed = h_wait & x_valid & x_ends
        h_unit, h_last = pipe.register("h_unit", 16), pipe.register("h_last")
        h_error = pipe.register("h_error", ErrorKind)
        h_sub = pipe.register("h_sub")         # goes out alone as U+FFFD
        with m.If(pipe.enable(2 + 16 + 1 + 3 + 1)):
            m.d.sync += [
                h_valid.eq(keep(shift, x_valid & ~consumed, h_valid) & ~pipe.flushing),
                h_wait.eq(keep(shift, x_valid & x_waits & ~consumed, h_wait) &
                          ~pipe.flushing),
                h_unit.eq(keep(shift, x_unit, h_unit)),
                h_last.eq(keep(shift, x_last, h_last)),
                h_error.eq(keep(shift, x_kind, h_error)),
                h_sub.eq(keep(shift, x_sub, h_sub)),
            ]

        # -- the output slot: the held unit alone, or joined with x ------------------------------
        emit = h_valid & shift
        pair = h_wait & x_valid & x_trail
        merged = h_wait & x_valid & x_trunc if merge else 0
        # (`keep` rather than Mux: synthesis keeps the constants in the LUTs rather than making
        # set/reset logic of them.)
        alone = keep(h_sub, _REPLACEMENT, h_unit)
        joined = Cat(x_unit[:10], h_unit[:6], h_unit[6:10] + 1)
        s_valid = pipe.fact("s_valid", emit, pipe.flushing)
        # (A merged subpart's U+FFFD is the held lead's own: with replace a lead goes out alone
        # as U+FFFD.)
        s_cp = pipe.data("s_cp", keep(pair, joined, Cat(alone, Const(0, 5))), 21)
        s_error = pipe.data("s_error", keep(pair, ErrorKind.NONE,
                                            keep(merged, ErrorKind.TRUNCATED, h_error)), 3)
        s_last = pipe.data("s_last", keep(pair | merged, x_last, h_last))
        pipe.drive_output(self.o, s_valid, Cat(s_cp, s_error, s_last))
        return m
