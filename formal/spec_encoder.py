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

from amaranth.hdl import Cat, Const, Module, Mux
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.component import CheckedComponent
from utf8_gateware.hdl.error_kind import ENCODE_ERRORS, ErrorKind, check_policy
from utf8_gateware.hdl.layouts import EncodedByteLayout, UnitLayout
from utf8_gateware.sim.reference import UTF8_LENGTH_LIMITS


__all__ = ["SpecEncoder", "SpecEncoderOutputLayout", "utf8_length", "utf8_bytes"]


SpecEncoderOutputLayout = data.StructLayout({
    "count": range(5),
    "items": data.ArrayLayout(EncodedByteLayout, 4),
})


def utf8_length(cp):
    """The length (1..4) of the UTF-8 form of the value ``cp`` (below 0x110000), as a Value."""
    length = 4
    for n, limit in reversed(list(enumerate(UTF8_LENGTH_LIMITS[:3], start=1))):
        length = Mux(cp < limit, n, length)
    return length


def utf8_bytes(cp, length):
    """The ``length`` (a Python int, 1..4) bytes of the UTF-8 form of ``cp``, as Values."""
    if length == 1:
        return [cp[:8]]
    lead_marker = {2: 0b110, 3: 0b1110, 4: 0b11110}[length]
    lead_bits = 7 - length
    top = 6 * (length - 1)
    out = [Cat(cp[top:top + lead_bits], Const(lead_marker, length + 1))]
    for index in range(length - 1):
        shift = 6 * (length - 2 - index)
        out.append(Cat(cp[shift:shift + 6], Const(0b10, 2)))
    return out


class SpecEncoder(CheckedComponent):
    """Unit-serial specification model of the UTF-8 encoder (see the module documentation).

    Parameters
    ----------
    errors : ``"replace"``, ``"strict"`` or ``"surrogateescape"``
    """
    @classmethod
    def check_parameters(cls, errors="replace"):
        check_policy(errors, ENCODE_ERRORS)

    def __init__(self, errors="replace"):
        self._errors = errors
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

        with m.If(self.i.valid):
            with m.If((u >= 0xDC80) & (u <= 0xDCFF) & (self._errors == "surrogateescape")):
                emit([u[:8]])
            with m.Elif((u >= 0xD800) & (u <= 0xDFFF)):
                invalid(ErrorKind.SURROGATE)
            with m.Elif(u >= 0x110000):
                invalid(ErrorKind.TOO_LARGE)
            with m.Else():
                with m.Switch(utf8_length(u)):
                    for length in (1, 2, 3, 4):
                        with m.Case(length):
                            emit(utf8_bytes(u, length))
        return m
