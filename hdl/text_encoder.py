"""Code points in, bytes of an encoding out: the encoder for an encoding chosen by name."""

from .component import EncodingStage, in_a_row
from utf8_gateware.sim.encodings import ENCODE_POLICIES
from .encoder import ENCODER_ENCODINGS, OWN_CORES, Utf8Encoder
from .error_kind import ENCODE_ERRORS, check_encoding, check_policy
from .layouts import CarriedUnitLayout, EncodedByteLayout, UnitLayout
from .utf16_bytes import Utf16BomBytes, Utf16Bytes
from .utf16_encoder import UTF16_ENCODE_ERRORS, Utf16Encoder
from .utf16_units import SCHEMES, UTF16_SCHEMES


__all__ = ["ENCODINGS", "CARRYING", "unit_bytes", "unit_bytes_latency", "TextEncoder"]


#: The encodings the gateware writes, and the error policies of each: the UTF-8 family's
#: (:class:`~utf8_gateware.hdl.encoder.Utf8Encoder`, the model's policies; UTF-8 keeps its own
#: three), then UTF-16's.
ENCODINGS = {
    "utf-8": ENCODE_ERRORS,
    **{encoding: ENCODE_POLICIES[encoding] for encoding in ENCODER_ENCODINGS
       if encoding != "utf-8"},
    **{scheme: UTF16_ENCODE_ERRORS for scheme in UTF16_SCHEMES},
}

#: The encodings whose encoder can carry a decoder's error kind (``carry_error``): the targets
#: of a transcoder (all but ``utf-8-rfc2279``, whose 31-bit values a transcoder's 21-bit register
#: cannot hold).
CARRYING = (*(encoding for encoding in ENCODER_ENCODINGS if encoding not in OWN_CORES),
            *UTF16_SCHEMES)


def unit_bytes(encoding, markers=True):
    """The byte stage of a UTF-16 scheme's encoder (a new one; ``markers``: its input may hold
    marker beats)."""
    if encoding == "utf-16":
        return Utf16BomBytes(markers=markers)
    return Utf16Bytes(SCHEMES[encoding], markers=markers)


def unit_bytes_latency(encoding, markers=True):
    """:attr:`LATENCY` of :func:`unit_bytes`, without building one."""
    return (Utf16BomBytes if encoding == "utf-16" else Utf16Bytes).latency(markers)


class TextEncoder(EncodingStage):
    """The encoder of ``encoding``: code units (any 32-bit value) in, bytes out.

    It is the cores of the encoding in a row, so a transcoder or an engine can take the encoder
    of any encoding by name:

    ``"utf-8"``, ``"utf-8-sig"``, ``"cesu-8"``, ``"mutf-8"``, ``"wtf-8"``, ``"utf-8-rfc2279"``
        :class:`~utf8_gateware.hdl.encoder.Utf8Encoder` with that ``encoding`` (``errors``:
        the policies of :data:`ENCODINGS`).
    ``"utf-16-le"``, ``"utf-16-be"``
        :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder` (``errors``: ``"replace"``,
        ``"strict"`` or ``"surrogatepass"``), then
        :class:`~utf8_gateware.hdl.utf16_bytes.Utf16Bytes` (each code unit as two bytes in the
        scheme's order). No byte order mark is written.
    ``"utf-16"``
        :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder`, then
        :class:`~utf8_gateware.hdl.utf16_bytes.Utf16BomBytes` (FE FF before every message, then
        big-endian units: D98). An empty message has no beat, so it gets no mark.

    The output equals ``utf8_gateware.sim.encodings.encode(units, encoding, errors)``: the bytes,
    and ``error`` on the first beat written for an invalid unit; with ``"strict"`` an invalid
    unit is one *marker beat* (``data`` 0, ``error`` set) that is not an output byte.
    ``carry_error``: the input has an ``error`` field
    (:data:`~utf8_gateware.hdl.encoder.CarriedUnitLayout`) reported on the first beat of its
    unit (unless the unit is itself invalid), as a transcoder needs: for the encodings of
    :data:`CARRYING`.

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
        if carry_error and encoding not in CARRYING:
            raise ValueError(f"carry_error is offered for {', '.join(CARRYING)}, not "
                             f"{encoding!r}")

    def __init__(self, encoding="utf-8", errors="replace", *, carry_error=False):
        self._carry_error = carry_error
        self.LAYOUTS = (CarriedUnitLayout if carry_error else UnitLayout, EncodedByteLayout)
        super().__init__(encoding, errors)

    @property
    def LATENCY(self):
        """Cycles from the transfer of a unit to its first byte being valid on ``o``."""
        return self.latency(self._encoding, self._errors, carry_error=self._carry_error)

    @staticmethod
    def latency(encoding="utf-8", errors=None, *, carry_error=False):
        """:attr:`LATENCY` of an encoder of ``encoding``, without building one."""
        if encoding in UTF16_SCHEMES:
            return Utf16Encoder.latency(carry_error) + unit_bytes_latency(encoding)
        return Utf8Encoder.latency(encoding, errors, carry_error=carry_error)

    @property
    def DRIVES_READIES(self):
        """Whether the first stage drives copies of ``i.ready``
        (:func:`~utf8_gateware.hdl.component.share_ready`): the UTF-16 encoder."""
        return self._encoding in UTF16_SCHEMES

    def elaborate(self, platform):
        if self._encoding in UTF16_SCHEMES:
            stages = [Utf16Encoder(self._errors, carry_error=self._carry_error),
                      unit_bytes(self._encoding)]
        else:
            stages = [Utf8Encoder(self._errors, encoding=self._encoding,
                                  carry_error=self._carry_error)]
        stages[0].i_readies = self.i_readies
        return in_a_row(stages, self)
