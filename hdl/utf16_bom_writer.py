"""The ``utf-16`` encoder's mark: the code unit U+FEFF written before every message."""

from amaranth.hdl import Const, Module, Signal

from .component import StreamStage, drive_ready, ready_source
from .layouts import CodeUnitLayout
from .pipeline import keep
from .utf16_units import drive_units, slot_controls, unit_register
from .utf8_shift_encoder import stage_signals


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
    Stages, each loaded under a clock enable that is a flip-flop (as in
    :class:`~utf8_gateware.hdl.utf16_bytes.Utf16Bytes`)::

        A0  the input beat as it is (each input bit goes to one flip-flop and nothing else:
            after the encoder's output multiplexer, one LUT level still), and ``opens``: the
            latest valid beat before it ended a message (its beat opens one)
        B   the output slot (the mark, or A0's beat) and the beat behind the mark; K the skid
            register

    A0 and B's load move together when ``take`` (a flip-flop, and ``i.ready``) is set: low for the
    cycle after B took a message's first beat (it goes out after the mark) and after the sink
    refused a beat. A beat is valid on ``o`` 2 cycles after its transfer, or 3 behind a mark (and a
    message's first beat a cycle after its mark, which is 2 or 3 cycles after the beat's transfer:
    :attr:`LATENCY` = 3 at most). One beat per cycle with no idle cycle while the source has a beat
    and the sink is ready: the input waits a cycle per message; a refusal costs one idle cycle more
    (and so does a cycle without a beat after a message's end). LUT depth: one (every register bit
    is one LUT of at most four flip-flops; ``o`` is a 2:1 multiplexer of slot and skid register;
    nothing depends on ``o.ready`` in the same cycle but ``adv`` and ``take``).
    """

    #: Cycles from the transfer of a beat to its being valid on ``o``, at most (a message's
    #: first beat: to its mark).
    LATENCY = 3

    LAYOUTS = (CodeUnitLayout, CodeUnitLayout)

    #: Copies of ``i.ready`` driven, of ``o.ready`` read
    #: (:func:`~utf8_gateware.hdl.component.share_ready`).
    DRIVES_READIES = USES_READIES = True

    def elaborate(self, platform):
        m = Module()
        o = self.o
        b = stage_signals("b", "valid", "n2", "last", unit=16, error=3)
        q = stage_signals("q", "last", unit=16, error=3)
        k = stage_signals("k", "valid", "last", unit=16, error=3)
        opens = Signal(name="a0_opens", init=1)
        adv, take = slot_controls(m, ready_source(self), b.valid, k.valid, opens)
        drive_ready(m, self, take)
        a0 = unit_register(take, "a0", self.i)
        take.load([(opens, keep(a0.valid, a0.last, opens))])
        t = [take.new() for _ in range(2)]
        mark = opens & a0.valid
        adv.load([
            (b.valid, keep(t[0], a0.valid, b.n2)),
            (b.n2, t[0] & mark),
            # (`keep`, not `Mux`: a constant under a condition would be a set/reset)
            (b.unit, keep(t[1], keep(opens, Const(BYTE_ORDER_MARK, 16), a0.unit), q.unit)),
            (b.error, keep(t[0], a0.error & ~opens.replicate(3), q.error)),
            (b.last, keep(t[0], a0.last & ~opens, q.last)),
        ])
        take.load([(q.unit, a0.unit), (q.error, a0.error), (q.last, a0.last)])
        drive_units(o, adv, b, k)
        return m
