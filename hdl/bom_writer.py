"""The last stage of the ``utf-8-sig`` encoder: EF BB BF written before every message."""

from amaranth.hdl import Cat, Module, Mux
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from .component import CheckedComponent
from .error_kind import ErrorKind
from .layouts import EncodedByteLayout
from .pipeline import Pipeline


__all__ = ["BYTE_ORDER_MARK_UTF8", "ByteOrderMarkWriter"]


#: U+FEFF in UTF-8.
BYTE_ORDER_MARK_UTF8 = (0xEF, 0xBB, 0xBF)


class ByteOrderMarkWriter(CheckedComponent):
    """Writes a byte order mark, EF BB BF, before the first beat of every message (CPython's
    ``utf-8-sig`` encoder writes it before every encoded text; The Unicode Standard D95).

    It works on encoded bytes, after the byte encoder, so the byte encoder stays that of
    ``utf-8`` (same netlist, same error beats) and the mark costs three cycles per message and
    no logic in the encoder's paths. A message is the beats up to one with ``last``; a message
    of only a ``strict`` marker beat gets its mark too. (An empty message has no beat on a
    stream, so it cannot be given one here; the reference model writes EF BB BF for it.)

    Ports
    -----
    ``i``, ``o``: :data:`~utf8_gateware.hdl.layouts.EncodedByteLayout` streams (``data: 8``,
    ``error``, ``last``). The mark's beats have ``error`` ``NONE`` and ``last`` clear; the
    input's beats pass unchanged.

    Latency and throughput
    ----------------------
    A beat is valid on ``o`` :attr:`LATENCY` = 1 cycle after its transfer (the output slot).
    One beat per cycle; the mark is written in the three cycles after the first beat of a
    message is offered, while ``i.ready`` stays low, then the message's beats follow with no
    idle cycle. ``i.ready`` is one LUT of flip-flops; ``o.valid`` and ``o.payload`` one LUT
    (output slot or skid register) of flip-flops; nothing depends on ``o.ready`` in the same
    cycle but the pipeline's advance flip-flops. LUT depth: one level.
    """

    i: In(stream.Signature(EncodedByteLayout))
    o: Out(stream.Signature(EncodedByteLayout))

    #: Cycles from the transfer of a beat to its being valid on ``o``.
    LATENCY = 1

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, flush_steps=1)
        # One-hot: `mark[k]`, the mark's byte k is next; `passing`, the message's beats pass.
        # (One-hot, so that each next state is one LUT of four inputs: the input's valid, its
        # `last`, two state bits; flushing is the flip-flops' synchronous set/reset.)
        mark = [pipe.register(f"mark{k}") for k in range(3)]
        passing = pipe.register("passing")
        m.d.comb += self.i.ready.eq(pipe.adv & passing & ~pipe.flushing)
        p = self.i.p
        offered = self.i.valid
        with m.If(pipe.enable(4)):
            with m.If(pipe.flushing):
                m.d.sync += [mark[0].eq(1), mark[1].eq(0), mark[2].eq(0), passing.eq(0)]
            with m.Elif(offered):
                m.d.sync += [
                    mark[0].eq(passing & p.last),
                    mark[1].eq(mark[0]),
                    mark[2].eq(mark[1]),
                    passing.eq(mark[2] | (passing & ~p.last)),
                ]
        first, second, third = BYTE_ORDER_MARK_UTF8
        byte = Mux(mark[0], first, Mux(mark[1], second, third))
        s_valid = pipe.fact("s_valid", offered, pipe.flushing)
        s_data  = pipe.data("s_data", Mux(passing, p.data, byte), 8)
        s_error = pipe.data("s_error", Mux(passing, p.error, ErrorKind.NONE), ErrorKind)
        s_last  = pipe.data("s_last", passing & p.last)
        pipe.drive_output(self.o, s_valid, Cat(s_data, s_error, s_last))
        return m
