"""The WTF-8 decoding stage: a trail surrogate right after a lead surrogate is an error."""

from amaranth.hdl import Cat, Module, Mux
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from .component import CheckedComponent
from .error_kind import ErrorKind
from .layouts import CodepointLayout
from .pipeline import Pipeline, keep


__all__ = ["SurrogatePairRejecter"]


_REPLACEMENT = 0xFFFD


class SurrogatePairRejecter(CheckedComponent):
    """WTF-8's constraint on generalized UTF-8 (the WTF-8 specification): a trail surrogate
    U+DC00..U+DFFF decoded directly after a lead surrogate U+D800..U+DBFF (both well-formed) is
    ill-formed, since the pair must be written as its supplementary code point's 4-byte
    sequence. It becomes U+FFFD, ``SURROGATE`` (one maximal subpart: its 3-byte sequence is
    complete); the lead before it stays the lone surrogate it is. The reference's
    ``RejectSurrogatePairs``.

    Ports
    -----
    ``i``, ``o``: :data:`~utf8_gateware.hdl.layouts.CodepointLayout` streams (``codepoint:
    21``, ``error: ErrorKind``, ``last``), as a decoder's output.

    Latency and throughput
    ----------------------
    One item is taken every cycle while the sink is ready; an output is valid :attr:`LATENCY`
    = 3 cycles after its input's transfer: the input register (the port's bits as they are),
    the flags register (well-formed lead, well-formed trail: two LUT levels of 14 bits), the
    output slot (one LUT of the flags, one flip-flop of state, "the message's previous output
    is a well-formed lead", and the item's bits). ``i.ready`` is a flip-flop; ``o.valid`` and
    ``o.payload`` one LUT of flip-flops.
    """

    #: Cycles from an input's transfer to its output being valid.
    LATENCY = 3

    i: In(stream.Signature(CodepointLayout))
    o: Out(stream.Signature(CodepointLayout))

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, flush_steps=3)
        m.d.comb += self.i.ready.eq(pipe.adv & ~pipe.flushing)

        # -- the input register, then the flags ------------------------------------------------
        x_valid = pipe.fact("x_valid", self.i.valid, pipe.flushing)
        x = pipe.data("x_item", self.i.payload, CodepointLayout)
        high = (x.error == ErrorKind.NONE) & (x.codepoint[11:21] == 0xD800 >> 11)
        y_valid = pipe.fact("y_valid", x_valid, pipe.flushing)
        y = pipe.data("y_item", x, CodepointLayout)
        y_lead = pipe.data("y_lead", high & ~x.codepoint[10])
        y_trail = pipe.data("y_trail", high & x.codepoint[10])

        # -- the state and the output slot -----------------------------------------------------
        after_lead = pipe.register("after_lead")
        with m.If(pipe.enable()):
            m.d.sync += after_lead.eq(keep(y_valid, y_lead & ~y.last, after_lead) &
                                      ~pipe.flushing)
        rejected = after_lead & y_trail
        s_valid = pipe.fact("s_valid", y_valid, pipe.flushing)
        s_cp = pipe.data("s_cp", keep(rejected, _REPLACEMENT, y.codepoint), 21)
        s_error = pipe.data("s_error", Mux(rejected, ErrorKind.SURROGATE, y.error), ErrorKind)
        s_last = pipe.data("s_last", y.last)
        pipe.drive_output(self.o, s_valid, Cat(s_cp, s_error, s_last))
        return m
