"""UTF-16 byte order stage, encoding side: UTF-16 code units in, UTF-16LE/BE bytes out."""

from amaranth.hdl import Cat, Module, Mux, Signal

from .error_kind import ErrorKind
from .layouts import CodeUnitLayout, EncodedByteLayout
from .pipeline import Pipeline, keep
from .utf16_units import ByteOrderStage


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
    One byte per cycle with no idle cycle: a unit is taken every second cycle (a marker beat in
    one), when its predecessor's last byte goes to the output slot. The first byte of a unit is
    valid on ``o`` :attr:`LATENCY` = 2 cycles after its transfer (the unit register, the output
    slot). ``i.ready`` is one LUT of flip-flops,
    ``o.valid`` and ``o.payload`` one LUT (output slot or skid register) of flip-flops.
    """

    #: Cycles from the transfer of a unit to its first byte being valid on ``o``.
    LATENCY = 2

    #: Payload layouts of ``i`` and ``o``.
    LAYOUTS = (CodeUnitLayout, EncodedByteLayout)

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, flush_steps=2)
        # The slot holds a unit's first byte; its second goes next. The unit register is taken
        # when its second byte (or its only beat) goes to the slot.
        pending = Signal()
        a_valid = Signal()
        a_marker = Signal()
        two = a_valid & ~a_marker
        take = (pending | ~two) & ~pipe.flushing
        m.d.comb += self.i.ready.eq(pipe.adv & take)

        # The unit register holds through its LUT (`keep`): its clock enable stays a flip-flop.
        a = Signal(CodeUnitLayout)
        with m.If(pipe.enable(len(a.as_value()) + 2)):
            m.d.sync += [
                a_valid.eq(keep(take, self.i.valid, a_valid) & ~pipe.flushing),
                a.as_value().eq(keep(take, self.i.payload.as_value(), a.as_value())),
                a_marker.eq(keep(take, (self.i.p.error != ErrorKind.NONE) &
                                       (self.i.p.unit == 0), a_marker)),
            ]
        low, high = a.unit[:8], a.unit[8:]
        first, second = (low, high) if self._byteorder == "little" else (high, low)
        with m.If(pipe.enable()):
            m.d.sync += pending.eq(~pending & two & ~pipe.flushing)

        s_valid = pipe.fact("s_valid", pending | a_valid, pipe.flushing)
        s_p = Cat(pipe.data("s_data", Mux(pending, second, first), 8),
                  pipe.data("s_error", Mux(pending, ErrorKind.NONE, a.error), 3),
                  pipe.data("s_last", a.last & (pending | ~two)))
        pipe.drive_output(self.o, s_valid, s_p)
        return m
