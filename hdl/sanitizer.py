"""Streaming UTF-8 sanitiser: bytes in, well-formed UTF-8 (or the same bytes) out."""

from amaranth.hdl import Module
from amaranth.lib import wiring

from .decoder import Utf8Decoder
from .encoder import Utf8Encoder
from .component import PolicyStage
from .error_kind import DECODE_ERRORS
from .layouts import ByteLayout, EncodedByteLayout
from .transcoder import carry_register


__all__ = ["SANITIZE_ERRORS", "Utf8Sanitizer"]


#: Error policies of :class:`Utf8Sanitizer`: the decoder's (the encoder gets the same one, and
#: surrogateescape undoes the decoder's escapes).
SANITIZE_ERRORS = DECODE_ERRORS


class Utf8Sanitizer(PolicyStage):
    """Streaming UTF-8 sanitiser: :class:`~utf8_gateware.hdl.decoder.Utf8Decoder` followed by
    :class:`~utf8_gateware.hdl.encoder.Utf8Encoder`, both with the same ``errors``.

    ``errors="replace"``
        The output is the input made well-formed: every maximal subpart of an ill-formed
        sequence becomes EF BF BD (U+FFFD), everything else passes unchanged. The output equals
        ``data.decode("utf-8", "replace").encode("utf-8")``.
    ``errors="surrogateescape"``
        The output bytes are exactly the input bytes (the decoder escapes every byte of an
        ill-formed subpart as U+DC80..U+DCFF, the encoder turns the escape back into the byte);
        the cores only mark where the input is ill-formed.

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.ByteLayout` stream (``data: 8``, ``last``).
    ``o``: :data:`~utf8_gateware.hdl.layouts.EncodedByteLayout` stream (``data: 8``,
    ``error: ErrorKind``, ``last``). ``error`` reports the decoder's
    :class:`~utf8_gateware.hdl.error_kind.ErrorKind` of an ill-formed subpart on the first byte
    produced for each decoder output that stands for it: with ``"replace"`` on the EF of its
    EF BF BD, with ``"surrogateescape"`` on every byte of the subpart (each byte is one escape).
    Every other byte has ``error`` ``NONE``; the encoder's own errors (surrogates, values above
    U+10FFFF) cannot occur, as the decoder never produces them. ``last`` is set on the final
    byte of each message: every message of at least one byte yields at least one byte with
    ``last``.

    Latency and throughput
    ----------------------
    A decoder output goes through a buffer of three registers (two cycles:
    :func:`~utf8_gateware.hdl.transcoder.carry_register`) into the encoder
    (:class:`~utf8_gateware.hdl.utf8_shift_encoder.Utf8ShiftEncoder`): the first byte produced
    for it is valid on ``o`` 6 cycles after the decoder output, at most 12 cycles with
    ``"replace"`` and 14 with ``"surrogateescape"`` after the input byte that determines it.
    Text whose characters all have the same length flows at one byte per cycle (the decoder
    takes a byte every cycle, the encoder emits an n-byte character in n cycles). Where the
    length changes from one character to the next, the decoder may offer a character before the
    encoder has room for it; the buffer holds up to three, and random mixtures of 1- to 4-byte
    characters run at about 0.95 bytes per cycle (0.92 with the one register before). An
    ill-formed subpart replaced by EF BF BD takes 3 output cycles however short it is.

    Ready
    -----
    ``i.ready`` is the decoder's (from flip-flops); the decoder's own ``ready`` is the buffer's
    flip-flop. ``o.valid`` and ``o.payload`` are the encoder's (one LUT of flip-flops). Nothing
    depends on ``o.ready`` in the same cycle but the encoder's pipeline-advance flip-flops.
    """

    POLICIES = SANITIZE_ERRORS
    LAYOUTS = (ByteLayout, EncodedByteLayout)

    def elaborate(self, platform):
        m = Module()

        m.submodules.decoder = decoder = Utf8Decoder(errors=self._errors)
        m.submodules.encoder = encoder = Utf8Encoder(errors=self._errors, carry_error=True)

        carry_register(m, decoder.o, encoder.i)
        wiring.connect(m, wiring.flipped(self.i), decoder.i)
        wiring.connect(m, encoder.o, wiring.flipped(self.o))

        return m
