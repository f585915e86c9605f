"""Unpipelined specification model of the UTF-8 encoder, in Amaranth, for the formal proofs.

:class:`SpecEncoder` turns one UTF-32 code unit per cycle into the beats the encoder must output
for it, combinationally, written from :mod:`utf8_gateware.sim.reference` (``encode_unit``) and
the encoder's interface contract:

* a scalar value: its UTF-8 form (1..4 bytes, the inverse of Table 3-7), no error;
* U+DC80..U+DCFF with ``errors="surrogateescape"``: the single byte 0x80..0xFF, no error;
* any other surrogate U+D800..U+DFFF (``SURROGATE``) or a value of 0x110000 or more
  (``TOO_LARGE``): EF BF BD (U+FFFD) with the error on the first beat (``"replace"``,
  ``"surrogateescape"``), or one marker beat (data 0, the error) with ``"strict"``;
* ``last`` on the final beat of a unit with ``last``.

Ports
-----
``i``: ``In(stream.Signature(UnitLayout, always_ready=True))``
``o``: ``Out(SpecEncoderOutputLayout)``: ``count`` (0..4; 0 when ``i.valid`` is low) and
``items[0..count-1]`` (:data:`~utf8_gateware.hdl.layouts.EncodedByteLayout`), combinational.
"""

from amaranth.hdl import Cat, Const, Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..hdl.error_kind import ErrorKind
from ..hdl.layouts import EncodedByteLayout, UnitLayout


__all__ = ["SpecEncoder", "SpecEncoderOutputLayout"]


SpecEncoderOutputLayout = data.StructLayout({
    "count": range(5),
    "items": data.ArrayLayout(EncodedByteLayout, 4),
})


class SpecEncoder(wiring.Component):
    """Unit-serial specification model of the UTF-8 encoder (see the module documentation).

    Parameters
    ----------
    errors : ``"replace"``, ``"strict"`` or ``"surrogateescape"``
    """
    def __init__(self, errors="replace"):
        self._MustUse__silence = True  # a bad parameter must not also warn "never used"
        if not isinstance(errors, str):
            raise TypeError(f"errors must be a string, not {errors!r}")
        if errors not in ("replace", "strict", "surrogateescape"):
            raise ValueError(f"errors must be 'replace', 'strict' or 'surrogateescape', "
                             f"not {errors!r}")
        self._errors = errors
        self._MustUse__silence = False
        super().__init__({
            "i": In(stream.Signature(UnitLayout, always_ready=True)),
            "o": Out(SpecEncoderOutputLayout),
        })

    @property
    def errors(self):
        return self._errors

    def elaborate(self, platform):
        m = Module()
        u, last = self.i.payload.codepoint, self.i.payload.last

        def emit(beats, error=ErrorKind.NONE):
            m.d.comb += self.o.count.eq(len(beats))
            for index, byte in enumerate(beats):
                m.d.comb += [
                    self.o.items[index].data.eq(byte),
                    self.o.items[index].error.eq(error if index == 0 else ErrorKind.NONE),
                    self.o.items[index].last.eq(last if index == len(beats) - 1 else 0),
                ]

        def invalid(kind):
            if self._errors == "strict":
                emit([0], kind)  # the marker beat
            else:
                emit([0xEF, 0xBF, 0xBD], kind)

        def cont(shift):
            return Cat(u[shift:shift + 6], Const(0b10, 2))

        with m.If(self.i.valid):
            with m.If((u >= 0xDC80) & (u <= 0xDCFF) & (self._errors == "surrogateescape")):
                emit([u[:8]])
            with m.Elif((u >= 0xD800) & (u <= 0xDFFF)):
                invalid(ErrorKind.SURROGATE)
            with m.Elif(u >= 0x110000):
                invalid(ErrorKind.TOO_LARGE)
            with m.Elif(u < 0x80):
                emit([u[:8]])
            with m.Elif(u < 0x800):
                emit([Cat(u[6:11], Const(0b110, 3)), cont(0)])
            with m.Elif(u < 0x10000):
                emit([Cat(u[12:16], Const(0b1110, 4)), cont(6), cont(0)])
            with m.Else():
                emit([Cat(u[18:21], Const(0b11110, 5)), cont(12), cont(6), cont(0)])
        return m
