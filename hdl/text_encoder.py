"""Code points in, bytes of an encoding out: the encoder for an encoding chosen by name."""

from .component import StreamStage, in_a_row
from .encoder import CarriedUnitLayout, Utf8Encoder
from .error_kind import ENCODE_ERRORS, check_encoding, check_policy
from .layouts import EncodedByteLayout, UnitLayout
from .utf16_bytes import Utf16Bytes
from .utf16_units import SCHEMES
from .utf16_encoder import UTF16_ENCODE_ERRORS, Utf16Encoder


__all__ = ["ENCODINGS", "TextEncoder"]


#: The encodings the gateware writes, and the error policies of each.
ENCODINGS = {
    "utf-8":     ENCODE_ERRORS,
    "utf-16-le": UTF16_ENCODE_ERRORS,
    "utf-16-be": UTF16_ENCODE_ERRORS,
}


class TextEncoder(StreamStage):
    """The encoder of ``encoding``: code units (any 32-bit value) in, bytes out.

    It is the cores of the encoding in a row, so a transcoder or an engine can take the encoder
    of any encoding by name:

    ``"utf-8"``
        :class:`~utf8_gateware.hdl.encoder.Utf8Encoder` (``errors``: ``"replace"``,
        ``"strict"`` or ``"surrogateescape"``).
    ``"utf-16-le"``, ``"utf-16-be"``
        :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder` (``errors``: ``"replace"``,
        ``"strict"`` or ``"surrogatepass"``), then
        :class:`~utf8_gateware.hdl.utf16_bytes.Utf16Bytes` (each code unit as two bytes in the
        scheme's order). No byte order mark is written.

    The output equals ``utf8_gateware.sim.encodings.encode(units, encoding, errors)``: the bytes,
    and ``error`` on the first beat written for an invalid unit; with ``"strict"`` an invalid
    unit is one *marker beat* (``data`` 0, ``error`` set) that is not an output byte.
    ``carry_error``: the input has an ``error`` field
    (:data:`~utf8_gateware.hdl.encoder.CarriedUnitLayout`) reported on the first beat of its
    unit (unless the unit is itself invalid), as a transcoder needs.

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.UnitLayout` stream (``codepoint: 32``, ``last``;
    ``error`` too with ``carry_error``).
    ``o``: :data:`~utf8_gateware.hdl.layouts.EncodedByteLayout` stream (``data: 8``,
    ``error``, ``last``).

    Latency and throughput
    ----------------------
    One byte a cycle out with no idle cycle; the first byte of a unit is valid :attr:`LATENCY`
    cycles after its transfer (the sum of the stages' latencies). Ready paths are the stages'
    (registered).
    """

    @classmethod
    def check_parameters(cls, encoding="utf-8", errors="replace", *, carry_error=False):
        check_encoding(encoding, ENCODINGS, "writes")
        check_policy(errors, ENCODINGS[encoding])
        if not isinstance(carry_error, bool):
            raise TypeError(f"carry_error must be a bool, not {carry_error!r}")

    def __init__(self, encoding="utf-8", errors="replace", *, carry_error=False):
        self._encoding, self._errors, self._carry_error = encoding, errors, carry_error
        self.LAYOUTS = (CarriedUnitLayout if carry_error else UnitLayout, EncodedByteLayout)
        super().__init__()

    @property
    def encoding(self):
        return self._encoding

    @property
    def errors(self):
        return self._errors

    @property
    def LATENCY(self):
        """Cycles from the transfer of a unit to its first byte being valid on ``o``."""
        return self.latency(self._encoding)

    @staticmethod
    def latency(encoding="utf-8"):
        """:attr:`LATENCY` of an encoder of ``encoding``, without building one."""
        if encoding == "utf-8":
            return Utf8Encoder.LATENCY
        return Utf16Encoder.LATENCY + Utf16Bytes.LATENCY

    def elaborate(self, platform):
        if self._encoding == "utf-8":
            stages = [Utf8Encoder(self._errors, carry_error=self._carry_error)]
        else:
            stages = [Utf16Encoder(self._errors, carry_error=self._carry_error),
                      Utf16Bytes(SCHEMES[self._encoding])]
        return in_a_row(stages, self)
