"""UTF-16 byte order stage, encoding side: UTF-16 code units in, UTF-16LE/BE bytes out."""

from amaranth.hdl import Module, Signal

from .error_kind import ErrorKind
from .layouts import CodeUnitLayout, EncodedByteLayout
from .pipeline import keep
from .component import drive_ready, ready_source
from .utf16_units import ByteOrderStage, slot_controls, unit_register
from .utf8_shift_encoder import stage_signals, shift_stage


__all__ = ["Utf16Bytes"]


class Utf16Bytes(ByteOrderStage):
    """The byte stage of UTF-16LE / UTF-16BE encoding: every code unit becomes two bytes in
    ``byteorder`` (The Unicode Standard 3.10, D96/D97), the inverse of
    :class:`~utf8_gateware.hdl.utf16_units.Utf16Units`.

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.CodeUnitLayout` stream, as
    :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder` writes it. A *marker beat*
    (``error`` set, ``unit`` 0: an invalid code point that ``strict`` leaves out) becomes one
    marker beat on ``o`` (``data`` 0, ``error``), as :class:`~utf8_gateware.hdl.encoder.Utf8Encoder`
    writes one; any other unit becomes two bytes, its ``error`` (a substitute U+FFFD) on the
    first, ``last`` on the second.
    ``o``: :data:`~utf8_gateware.hdl.layouts.EncodedByteLayout` stream.

    Latency and throughput
    ----------------------
    Stages, each loaded under a clock enable that is a flip-flop (as in
    :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder`)::

        A0  the input beat as it is (each input bit goes to one flip-flop and nothing else:
            after another core's output multiplexer, one LUT level still)
        A1  the unit, and pieces of it: ``vok`` (valid, no error), ``z0``..``z3`` (a nibble
            of the unit is zero)
        A2  the unit, ``y1`` and ``y2`` (two bytes: ``y1 | y2``), ``lz`` (``last`` unless
            ``y2``)
        A3  the first and the second byte in ``byteorder``, ``n2`` (two bytes: a valid beat
            that is not a marker beat), the first byte's ``last``
        B   the output slot and the second byte behind it; K the skid register

    A0..A3 and B's load move together when ``take`` (a flip-flop, and ``i.ready``) is set: low
    for the cycle after B took a unit of two bytes (its second byte moves up then) and after
    the sink refused a byte. The first byte of a unit is valid on ``o`` :attr:`LATENCY` = 5
    cycles after its transfer. One byte per cycle with no idle cycle while the source has a
    unit and the sink is ready: a unit is taken every second cycle, a marker beat in one; a
    refusal costs one idle cycle more, never a byte. LUT depth: one (every register bit is one
    LUT of at most four flip-flops; ``o`` is a 2:1 multiplexer of slot and skid register;
    nothing depends on ``o.ready`` in the same cycle but ``adv`` and ``take``).
    """

    #: Cycles from the transfer of a unit to its first byte being valid on ``o``.
    LATENCY = 5

    #: Payload layouts of ``i`` and ``o``.
    LAYOUTS = (CodeUnitLayout, EncodedByteLayout)

    #: Copies of ``i.ready`` driven, of ``o.ready`` read
    #: (:func:`~utf8_gateware.hdl.component.share_ready`).
    DRIVES_READIES = USES_READIES = True

    def elaborate(self, platform):
        m = Module()
        o = self.o
        b = stage_signals("b", "valid", "n2", "last", "qlast", s=8, q=8, error=3)
        k = stage_signals("k", "valid", "last", data=8, error=3)
        a3_n2 = Signal(name="a3_n2")    # A3 holds a unit of two bytes
        adv, take = slot_controls(m, ready_source(self), b.valid, k.valid, a3_n2)
        drive_ready(m, self, take)
        a0 = unit_register(take, "a0", self.i)
        a1 = shift_stage(take, "a1", self._pieces(a0))
        a2 = shift_stage(take, "a2", self._flags(a1))
        a3 = shift_stage(take, "a3", {
            "valid": a2.valid, "last": a2.last, "error": a2.error, "n2": a2.y1 | a2.y2,
            "last1": a2.lz & ~a2.y1,
            **dict(zip(("first", "second"), (a2.unit[:8], a2.unit[8:])[::self._step()])),
        }, n2=a3_n2)
        t = [take.new() for _ in range(2)]
        adv.load([
            (b.valid, keep(t[0], a3.valid, b.n2)),
            (b.n2, t[0] & a3.n2),
            (b.last, keep(t[0], a3.last1, b.qlast)),
            (b.qlast, keep(t[0], a3.last, b.qlast)),
            (b.error, t[0].replicate(3) & a3.error),
            (b.s, keep(t[1], a3.first, b.q)),
            (b.q, keep(t[1], a3.second, b.q)),
        ])
        adv.drive([(o.valid, b.valid, k.valid), (o.p.data, b.s, k.data),
                   (o.p.error, b.error, k.error), (o.p.last, b.last, k.last)])
        return m

    @staticmethod
    def _pieces(a0):
        """A1, from A0: the unit, and ``vok`` (a valid beat without error: two bytes) and
        ``z0``..``z3`` (unit[4n + 3:4n] zero), each a function of at most four bits."""
        u = a0.unit
        return {
            "valid": a0.valid, "last": a0.last, "unit": u, "error": a0.error,
            "vok": a0.valid & (a0.error == ErrorKind.NONE),
            **{f"z{n}": u[4 * n:4 * n + 4] == 0 for n in range(4)},
        }

    def _step(self):
        """1 if the low byte goes first (``little``), else -1."""
        return 1 if self.byteorder == "little" else -1

    @staticmethod
    def _flags(a1):
        """A2, from A1: the unit, and ``y1 | y2``, a beat of two bytes (valid, and no error or
        a unit other than 0: not a marker beat), split in two functions of four bits; ``lz``,
        ``last`` unless ``y2`` (the first byte's ``last`` is ``lz & ~y1``)."""
        y2 = a1.valid & ~(a1.z2 & a1.z3)
        return {
            "valid": a1.valid, "last": a1.last, "unit": a1.unit, "error": a1.error,
            "y1": a1.vok | (a1.valid & ~(a1.z0 & a1.z1)), "y2": y2, "lz": a1.last & ~y2,
        }
