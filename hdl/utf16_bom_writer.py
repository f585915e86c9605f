"""The ``utf-16`` encoder's mark: the code unit U+FEFF written before every message."""

from amaranth.hdl import Const, Module, Mux, Signal

from .component import StreamStage
from .error_kind import ErrorKind
from .layouts import CodeUnitLayout
from .pipeline import keep
from .utf16_units import drive_units
from .utf8_shift_encoder import EnableCopies, stage_signals


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
    Every register is loaded when ``adv`` (a flip-flop in copies, low for the cycle after the
    sink refused a beat). ``i.ready`` is one LUT of two flip-flops (``adv`` and ``passing``,
    set while the message's beats pass); LUT depth: one (every register bit is one LUT of at
    most four flip-flops; ``o`` is a 2:1 multiplexer of slot and skid register; nothing depends
    on ``o.ready`` in the same cycle but ``adv``).
    """

    #: Cycles from the transfer of a beat to its being valid on ``o``.
    LATENCY = 1

    LAYOUTS = (CodeUnitLayout, CodeUnitLayout)

    def elaborate(self, platform):
        m = Module()
        s, k = (stage_signals(stage, "valid", "last", unit=16, error=3) for stage in "sk")
        adv = EnableCopies(m, "adv", lambda own: self.o.ready | ~Mux(own, s.valid, k.valid))
        passing = Signal(name="passing")    # the message's beats pass (clear: its mark next)
        m.d.comb += self.i.ready.eq(adv.new() & passing)
        p, offered = self.i.p, self.i.valid
        adv.load([
            (passing, keep(offered, ~(passing & p.last), passing)),
            (s.valid, offered),
            # (`keep`, not `Mux`: a constant under a condition would be a set/reset)
            (s.unit, keep(passing, p.unit, Const(BYTE_ORDER_MARK, 16))),
            (s.error, keep(passing, p.error.as_value(), Const(ErrorKind.NONE, 3))),
            (s.last, passing & p.last),
        ])
        drive_units(self.o, adv, s, k)
        return m
