"""The shape of the small decoding stages that act on decoded code points one at a time."""

from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from .component import CheckedComponent
from .error_kind import ErrorKind
from .layouts import CodepointLayout
from .pipeline import Pipeline, keep


__all__ = ["CodepointFilter"]


_REPLACEMENT = 0xFFFD


class CodepointFilter(CheckedComponent):
    """A decoding stage that passes each code point on, drops it, or replaces it by an error,
    from the code point and one bit of state per message (what came before it in the message).

    Subclasses define :meth:`rule`.

    Ports
    -----
    ``i``, ``o``: :data:`~utf8_gateware.hdl.layouts.CodepointLayout` streams (``codepoint: 21``,
    ``error: ErrorKind``, ``last``), as a decoder's output. ``last`` passes through with its
    output (a dropped output with ``last`` takes its message's end with it).

    Latency and throughput
    ----------------------
    One item is taken every cycle while the sink is ready (``i.ready`` is a flip-flop); an
    output is valid :attr:`LATENCY` = 2 cycles after its input's transfer (the input register,
    then the output slot, which :meth:`rule` fills from the input register's flip-flops only).
    """

    #: Cycles from an input's transfer to its output being valid.
    LATENCY = 2

    def __init__(self):
        super().__init__({
            "i": In(stream.Signature(CodepointLayout)),
            "o": Out(stream.Signature(CodepointLayout)),
        })

    def rule(self, x, state):
        """What becomes of the item ``x`` (a namespace of its registers: ``valid``,
        ``codepoint``, ``error``, ``last``, ``ok``: it is well-formed) with the message's
        ``state`` before it (0 at the start of a message): ``(state after it, drop, replace)``,
        ``drop`` a Value (the item is left out), ``replace`` ``None`` or ``(flag, kind)`` (the
        item becomes U+FFFD of that kind where ``flag``)."""
        raise NotImplementedError

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, flush_steps=2)
        m.d.comb += self.i.ready.eq(pipe.adv & ~pipe.flushing)
        p = self.i.payload

        # -- the input register -----------------------------------------------------------------
        X = SimpleNamespace(
            valid=pipe.fact("x_valid", self.i.valid, pipe.flushing),
            codepoint=pipe.data("x_cp", p.codepoint, 21),
            error=pipe.data("x_error", p.error, ErrorKind),
            last=pipe.data("x_last", p.last),
            ok=pipe.data("x_ok", p.error == ErrorKind.NONE))

        # -- the state (cleared at the end of a message and while flushing) and the slot -------
        state = pipe.register("state")
        after, drop, replace = self.rule(X, state)
        with m.If(pipe.enable()):
            m.d.sync += state.eq(keep(X.valid, after & ~X.last, state) & ~pipe.flushing)
        s_valid = pipe.fact("s_valid", X.valid & ~drop, pipe.flushing)
        if replace is None:
            s_cp = pipe.data("s_cp", X.codepoint, 21)
            s_error = pipe.data("s_error", X.error, ErrorKind)
        else:
            flag, kind = replace
            s_cp = pipe.data("s_cp", Mux(flag, _REPLACEMENT, X.codepoint), 21)
            s_error = pipe.data("s_error", Mux(flag, kind, X.error), ErrorKind)
        s_last = pipe.data("s_last", X.last)
        pipe.drive_output(self.o, s_valid, Cat(s_cp, s_error, s_last))
        return m
