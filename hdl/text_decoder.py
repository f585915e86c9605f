"""Bytes of an encoding in, code points out: the decoder for an encoding chosen by name."""

from .component import EncodingStage, in_a_row
from .decoder import Utf8Decoder
from .decoder_family import DECODER_ENCODINGS, decoder_policies, output_layout
from .error_kind import check_encoding, check_policy
from .layouts import ByteLayout
from .utf16_bom_units import Utf16BomUnits
from .utf16_decoder import UTF16_DECODE_ERRORS, Utf16Decoder
from .utf16_units import SCHEMES, UTF16_SCHEMES, Utf16Units


__all__ = ["DECODINGS", "byte_stage", "TextDecoder"]


#: The encodings the gateware decodes, and the error policies of each: the UTF-8 family's
#: (:class:`~utf8_gateware.hdl.decoder.Utf8Decoder`), then UTF-16's.
DECODINGS = {
    **{encoding: policies for encoding in DECODER_ENCODINGS
       if (policies := decoder_policies(encoding))},
    **{scheme: UTF16_DECODE_ERRORS for scheme in UTF16_SCHEMES},
}


def byte_stage(encoding):
    """The class of the byte stage of a UTF-16 scheme, and its parameters: the scheme's byte
    order, or none (read from the mark)."""
    if encoding == "utf-16":
        return Utf16BomUnits, ()
    return Utf16Units, (SCHEMES[encoding],)


class TextDecoder(EncodingStage):
    """The decoder of ``encoding``: bytes in, one code point (or error output) per character out.

    It is the cores of the encoding in a row, so a transcoder or an engine can take the decoder
    of any encoding by name:

    ``"utf-8"``, ``"utf-8-sig"``, ``"cesu-8"``, ``"mutf-8"``, ``"wtf-8"``, ``"utf-8-rfc2279"``
        :class:`~utf8_gateware.hdl.decoder.Utf8Decoder` with that ``encoding`` (``errors``:
        ``"replace"``, and ``"surrogateescape"`` where the encoding has it).
    ``"utf-16-le"``, ``"utf-16-be"``
        :class:`~utf8_gateware.hdl.utf16_units.Utf16Units` (two bytes in the scheme's order per
        code unit; an odd trailing byte is ``TRUNCATED``), then the surrogate-joining
        :class:`~utf8_gateware.hdl.utf16_decoder.Utf16Decoder` (``errors``: ``"replace"`` or
        ``"surrogatepass"``). No byte order mark is read: a leading FF FE / FE FF is U+FEFF
        (D96, D97).
    ``"utf-16"``
        :class:`~utf8_gateware.hdl.utf16_bom_units.Utf16BomUnits` (a leading FE FF or FF FE
        gives the message's byte order and is dropped; big-endian without one: D98), then
        :class:`~utf8_gateware.hdl.utf16_decoder.Utf16Decoder`. A message of exactly the mark
        has no output (no ``last``).

    The outputs equal ``utf8_gateware.sim.encodings.decode(data, encoding, errors)``.

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.ByteLayout` stream (``data: 8``, ``last``).
    ``o``: :data:`~utf8_gateware.hdl.layouts.CodepointLayout` stream (``codepoint: 21``,
    ``error``, ``last``); ``last`` on the final output of each message. For
    ``"utf-8-rfc2279"``: :data:`~utf8_gateware.hdl.layouts.WideCodepointLayout`
    (``codepoint: 31``).

    Latency and throughput
    ----------------------
    The stages' own: one byte a cycle in; an output at most :attr:`LATENCY` cycles after the
    byte that completes it (the sum of the stages' latencies). Ready paths are the stages'
    (registered).
    """

    def __init__(self, encoding="utf-8", errors="replace"):
        self.LAYOUTS = (ByteLayout, output_layout(encoding))
        super().__init__(encoding, errors)

    @classmethod
    def check_parameters(cls, encoding="utf-8", errors="replace"):
        check_encoding(encoding, DECODINGS, "decodes")
        check_policy(errors, DECODINGS[encoding])

    @property
    def LATENCY(self):
        """Cycles from the transfer of the byte that completes an output to the output being
        valid, at most."""
        return self.latency(self._encoding, self._errors)

    @staticmethod
    def latency(encoding="utf-8", errors="replace"):
        """:attr:`LATENCY` of a decoder with these parameters, without building one."""
        if encoding in UTF16_SCHEMES:
            return byte_stage(encoding)[0].LATENCY + Utf16Decoder.LATENCY
        return Utf8Decoder.latency(errors, encoding=encoding)

    @property
    def USES_READIES(self):
        """Whether the last stage reads copies of ``o.ready``
        (:func:`~utf8_gateware.hdl.component.share_ready`): the UTF-16 decoder."""
        return self._encoding in UTF16_SCHEMES

    def elaborate(self, platform):
        if self._encoding in UTF16_SCHEMES:
            stage, params = byte_stage(self._encoding)
            stages = [stage(*params), Utf16Decoder(self._errors)]
        else:
            stages = [Utf8Decoder(self._errors, encoding=self._encoding)]
        stages[-1].o_readies = self.o_readies
        return in_a_row(stages, self)

