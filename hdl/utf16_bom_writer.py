"""The ``utf-16`` encoder's mark: the code unit U+FEFF written before every message."""

from amaranth.hdl import Cat, Module, Mux

from .component import StreamStage
from .error_kind import ErrorKind
from .layouts import CodeUnitLayout
from .pipeline import Pipeline


__all__ = ["BYTE_ORDER_MARK", "Utf16BomWriter"]


#: U+FEFF, the byte order mark, as a UTF-16 code unit.
BYTE_ORDER_MARK = 0xFEFF


class Utf16BomWriter(StreamStage):
    """Writes the code unit U+FEFF before the first beat of every message, between
    :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder` and
    :class:`~utf8_gateware.hdl.utf16_bytes.Utf16Bytes`: the ``utf-16`` encoding scheme's mark
    (The Unicode Standard D98; the reference model writes FE FF and big-endian units, so the
    byte stage after it is ``Utf16Bytes("big")``).

    It works on code units, so the mark is one beat whatever the byte order, the encoder stays
    that of ``utf-16-be``, and the mark costs one cycle per message on a stream that the byte
    stage takes at one unit per two cycles (the bytes stay one per cycle). A message is the
    beats up to one with ``last``; a message of only a ``strict`` marker beat gets its mark too.
    (An empty message has no beat on a stream, so it cannot be given a mark here; the reference
    model writes FE FF for it, and so do the engines, without simulating.)

    Ports
    -----
    ``i``, ``o``: :data:`~utf8_gateware.hdl.layouts.CodeUnitLayout` streams (``unit: 16``,
    ``error``, ``last``). The mark's beat has ``error`` ``NONE`` and ``last`` clear; the input's
    beats pass unchanged.

    Latency and throughput
    ----------------------
    A beat is valid on ``o`` :attr:`LATENCY` = 1 cycle after its transfer (the output slot).
    One beat per cycle; the mark is written in the cycle after the first beat of a message is
    offered, while ``i.ready`` stays low, then the message's beats follow with no idle cycle.
    ``i.ready`` is one LUT of flip-flops; ``o.valid`` and ``o.payload`` one LUT (output slot or
    skid register) of flip-flops. LUT depth: one level.
    """

    #: Cycles from the transfer of a beat to its being valid on ``o``.
    LATENCY = 1

    LAYOUTS = (CodeUnitLayout, CodeUnitLayout)

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, flush_steps=1)
        # `passing`: the message's beats pass (clear: its mark goes next).
        passing = pipe.register("passing")
        m.d.comb += self.i.ready.eq(pipe.adv & passing & ~pipe.flushing)
        p = self.i.p
        offered = self.i.valid
        with m.If(pipe.enable()):
            m.d.sync += passing.eq(Mux(offered, ~(passing & p.last), passing) & ~pipe.flushing)
        s_valid = pipe.fact("s_valid", offered, pipe.flushing)
        s_unit  = pipe.data("s_unit", Mux(passing, p.unit, BYTE_ORDER_MARK), 16)
        s_error = pipe.data("s_error", Mux(passing, p.error, ErrorKind.NONE), ErrorKind)
        s_last  = pipe.data("s_last", passing & p.last)
        pipe.drive_output(self.o, s_valid, Cat(s_unit, s_error, s_last))
        return m
