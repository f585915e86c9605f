"""Streaming transcoder: bytes of one encoding in, bytes of another out."""

from amaranth.hdl import Module
from amaranth.lib import wiring

from .cesu8_expander import EXPANSIONS, Cesu8Expander
from .component import StreamStage, in_a_row, share_ready
from .pipeline import SKID_LATENCY, skid_buffer
from .error_kind import check_encoding
from .layouts import ByteLayout, CodepointLayout, EncodedByteLayout
from .decoder_family import output_layout
from .sanitizer import Utf8Sanitizer
from .text_decoder import DECODINGS, TextDecoder, byte_stage
from .text_encoder import (CARRYING, ENCODINGS, TextEncoder, unit_bytes,
                           unit_bytes_latency)
from .utf8_bom_writer import Utf8BomWriter
from .utf16_decoder import Utf16Decoder
from .utf16_to_utf8 import Utf16ToUtf8
from .utf16_units import UTF16_SCHEMES


__all__ = ["TRANSCODE_ERRORS", "transcode_policies", "carry_register", "carry_through",
           "Transcoder"]


def transcode_policies(source, target):
    """The error policies of a :class:`Transcoder` from ``source`` to ``target``: those both the
    decoder of ``source`` and the encoder of ``target`` have (the same policy runs on both
    sides: ``surrogateescape`` escapes on one side and writes the bytes back on the other);
    none where the target's encoder cannot carry the decoder's errors
    (:data:`~utf8_gateware.hdl.text_encoder.CARRYING`) or the source's values are wider than
    a code point (``utf-8-rfc2279``: the register between holds 21 bits)."""
    if target not in CARRYING or output_layout(source) is not CodepointLayout:
        return ()
    return tuple(policy for policy in DECODINGS[source] if policy in ENCODINGS[target])


#: Every policy of some pair of encodings (see :func:`transcode_policies`).
TRANSCODE_ERRORS = tuple(dict.fromkeys(policy for source in DECODINGS for target in ENCODINGS
                                       for policy in transcode_policies(source, target)))


def carry_register(m, decoded, units):
    """The registers between a decoder's output stream ``decoded`` and an encoder's input stream
    ``units`` (:data:`~utf8_gateware.hdl.encoder.CarriedUnitLayout`): a
    :func:`~utf8_gateware.hdl.pipeline.skid_buffer` (three decoded items), each offered as a
    unit whose error kind the encoder reports on the first beat it writes for it. It cuts the
    path from the decoder's output multiplexer into the encoder's classification, its
    ``ready`` into the decoder is a flip-flop (the encoder's ``i.ready`` reaches only the
    buffer), and its slots smooth the rates where character lengths change."""
    r_valid, r_bits = skid_buffer(m, decoded.valid, decoded.payload, decoded.ready, units.ready)
    r_p = CodepointLayout(r_bits)
    m.d.comb += [
        units.valid      .eq(r_valid),
        units.p.codepoint.eq(r_p.codepoint),
        units.p.error    .eq(r_p.error),
        units.p.last     .eq(r_p.last),
    ]


def carry_through(m, decoded, units):
    """A decoder's output stream ``decoded`` straight into an encoder's input stream ``units``
    (:data:`~utf8_gateware.hdl.encoder.CarriedUnitLayout`) whose first stage is a register of
    its input as it is (the UTF-16 encoder with ``carry_error``): that register takes the
    place of :func:`carry_register`'s buffer, its ``ready`` a flip-flop too."""
    m.d.comb += [
        units.valid      .eq(decoded.valid),
        units.p.codepoint.eq(decoded.p.codepoint),
        units.p.error    .eq(decoded.p.error),
        units.p.last     .eq(decoded.p.last),
        decoded.ready    .eq(units.ready),
    ]


class Transcoder(StreamStage):
    """Bytes of ``source_encoding`` (``source`` below) in, bytes of ``target_encoding``
    (``target``) out: the decoder of ``source``
    (:class:`~utf8_gateware.hdl.text_decoder.TextDecoder`), a buffer, the encoder of
    ``target`` (:class:`~utf8_gateware.hdl.text_encoder.TextEncoder`), both with ``errors``
    (one of :func:`transcode_policies`).

    The output equals ``encodings.encode(encodings.decode(data, source, errors), target,
    errors)`` of the reference model (``utf8_gateware.sim.encodings``): with ``"replace"`` each
    maximal subpart of ill-formed input becomes the target's U+FFFD; with ``"surrogateescape"``
    (UTF-8 to UTF-8) the bytes pass unchanged; with ``"surrogatepass"`` (UTF-16 to UTF-16) a lone
    surrogate passes, flagged.

    From UTF-8 to UTF-8, and to WTF-8 (``"replace"``: a UTF-8 decoder gives only scalar
    values, and WTF-8 writes a scalar as UTF-8 does), the transcoder is
    :class:`~utf8_gateware.hdl.sanitizer.Utf8Sanitizer`, which gives the same output byte for
    byte without forming code points (faster and smaller than a decoder joined to an encoder:
    docs/cores.md, "Sanitizer"). To UTF-8-SIG it is the sanitiser and
    :class:`~utf8_gateware.hdl.utf8_bom_writer.Utf8BomWriter` (EF BB BF before every message).
    From UTF-8 to CESU-8 and MUTF-8 (each policy: ``"replace"``, and
    ``"surrogateescape"`` into CESU-8) it is the sanitiser followed by
    :class:`~utf8_gateware.hdl.cesu8_expander.Cesu8Expander`, which writes a four-byte sequence
    as its two surrogates' three-byte sequences (and MUTF-8's 00 as C0 80) byte by byte: the
    same output as the decoder, buffer and encoder, at one output byte per cycle but where the
    sanitiser loses a cycle after the expander's refusals (at most one per supplementary
    character); the sanitiser reads copies of the expander's ``i.ready``.
    From UTF-16 (``utf-16-le``, ``utf-16-be``, ``utf-16``) to UTF-8 it is the byte stage
    (:class:`~utf8_gateware.hdl.utf16_units.Utf16Units`,
    :class:`~utf8_gateware.hdl.utf16_bom_units.Utf16BomUnits`) and
    :class:`~utf8_gateware.hdl.utf16_to_utf8.Utf16ToUtf8`, which writes each code unit's (each
    pair's) UTF-8 bytes without forming a code point: the same output byte for byte.

    From UTF-16 to UTF-16 (any two schemes, each policy) it is the source's byte stage,
    :class:`~utf8_gateware.hdl.utf16_decoder.Utf16Decoder` with ``units`` (code units out: a
    pair as it came, a lone surrogate or an odd trailing byte as the decoder and the UTF-16
    encoder would write it) and the target's byte stage (``utf-16``: without marker beats), no
    code points: the same output, with the UTF-16 encoder left out.

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.ByteLayout` stream (``data: 8``, ``last``).
    ``o``: :data:`~utf8_gateware.hdl.layouts.EncodedByteLayout` stream (``data: 8``,
    ``error``, ``last``): ``error`` is the decoder's kind of an ill-formed subpart on the first
    byte written for it; ``last`` on the final byte of each message.

    Latency and throughput
    ----------------------
    The first byte written for a decoded item is valid on ``o`` :attr:`LATENCY` cycles after the
    input byte that completes it, at most (the decoder's latency, the buffer's two registers
    (:func:`carry_register`), the encoder's; into UTF-16 the UTF-16 encoder's first stage is the
    register between: :func:`carry_through`; the sanitiser's, with the expander's after it;
    from UTF-16 to UTF-16 the three stages').
    One byte a cycle on each side where the characters' lengths in both encodings match; where
    they differ, the slower side sets the pace (UTF-8 to UTF-16LE: two output bytes per
    character, 1 to 4 input bytes).
    """

    LAYOUTS = (ByteLayout, EncodedByteLayout)

    @classmethod
    def check_parameters(cls, source_encoding="utf-8", target_encoding="utf-8", errors="replace"):
        check_encoding(source_encoding, DECODINGS, "decodes")
        check_encoding(target_encoding, ENCODINGS, "writes")
        policies = transcode_policies(source_encoding, target_encoding)
        if not policies:
            raise ValueError(f"the transcoder does not write {target_encoding} yet (its encoder "
                             f"does not carry the decoder's error kinds); it writes "
                             f"{', '.join(CARRYING)}")
        if errors not in policies:
            raise ValueError(f"errors from {source_encoding} to {target_encoding} must be one of "
                             f"{', '.join(map(repr, policies))}, not {errors!r}")

    def __init__(self, source_encoding="utf-8", target_encoding="utf-8", errors="replace"):
        self._source, self._target, self._errors = source_encoding, target_encoding, errors
        super().__init__()

    @property
    def source_encoding(self):
        return self._source

    @property
    def target_encoding(self):
        return self._target

    @property
    def errors(self):
        return self._errors

    @property
    def LATENCY(self):
        """Cycles from the input byte that completes a decoded item to the first byte written for
        it, at most."""
        if self._bytes_only:
            return Utf8Sanitizer.latency(self._errors)
        if self._marked_bytes:
            return Utf8Sanitizer.latency(self._errors) + Utf8BomWriter.LATENCY
        if self._expands:
            return Utf8Sanitizer.latency(self._errors) + Cesu8Expander.LATENCY
        if self._units_only:
            return (byte_stage(self._source)[0].LATENCY + Utf16Decoder.LATENCY +
                    unit_bytes_latency(self._target, markers=False))
        if self._unit_level:
            return byte_stage(self._source)[0].LATENCY + Utf16ToUtf8.LATENCY
        if self._target in UTF16_SCHEMES:     # the register is the encoder's first stage
            return (TextDecoder.latency(self._source, self._errors) +
                    TextEncoder.latency(self._target, carry_error=True))
        return (TextDecoder.latency(self._source, self._errors) + SKID_LATENCY +
                TextEncoder.latency(self._target, self._errors, carry_error=True))

    @property
    def _bytes_only(self):
        """UTF-8 to UTF-8 or WTF-8: the byte-level sanitiser, no code points."""
        return self._source == "utf-8" and self._target in ("utf-8", "wtf-8")

    @property
    def _marked_bytes(self):
        """UTF-8 to UTF-8-SIG: the sanitiser, then the byte-level mark writer."""
        return self._source == "utf-8" and self._target == "utf-8-sig"

    @property
    def _expands(self):
        """UTF-8 to CESU-8 or MUTF-8: the sanitiser, then the byte-level expander (both policies
        of the pair give the output of the decoder and encoder: a sanitised stream is UTF-8,
        and its escaped bytes are flagged, so the expander leaves them)."""
        return self._source == "utf-8" and self._target in EXPANSIONS

    @property
    def _units_only(self):
        """UTF-16 to UTF-16: the byte stage, the decoder writing code units, the byte stage (no
        code points: the UTF-16 encoder would only split the pairs the decoder joined)."""
        return self._source in UTF16_SCHEMES and self._target in UTF16_SCHEMES

    @property
    def _unit_level(self):
        """UTF-16 to UTF-8: the byte stage, then the unit-level writer (no code points)."""
        return self._source in UTF16_SCHEMES and self._target == "utf-8"

    def _byte_stages(self):
        """The byte-level chain (named stages) from UTF-8, or UTF-16's to UTF-8, where there is
        one, else ``None``."""
        if self._bytes_only:
            return [("sanitizer", Utf8Sanitizer(self._errors))]
        if self._marked_bytes:
            return [("sanitizer", Utf8Sanitizer(self._errors)), ("bom_writer", Utf8BomWriter())]
        if self._expands:
            return [("sanitizer", Utf8Sanitizer(self._errors)),
                    ("expander", Cesu8Expander(self._target))]
        if self._unit_level:
            source, params = byte_stage(self._source)
            return [("units", source(*params)), ("to_utf8", Utf16ToUtf8())]
        return None

    def elaborate(self, platform):
        if self._units_only:
            source, params = byte_stage(self._source)
            return in_a_row([source(*params), Utf16Decoder(self._errors, units=True),
                             unit_bytes(self._target, markers=False)], self)
        m = Module()
        stages = self._byte_stages()
        if stages:
            for name, stage in stages:
                m.submodules[name] = stage
            if isinstance(stages[-1][1], (Cesu8Expander, Utf16ToUtf8)):   # copies of ready
                share_ready(stages[0][1], stages[-1][1])
            wiring.connect(m, wiring.flipped(self.i), stages[0][1].i)
            for (_, source), (_, sink) in zip(stages, stages[1:]):
                wiring.connect(m, source.o, sink.i)
            wiring.connect(m, stages[-1][1].o, wiring.flipped(self.o))
            return m
        m.submodules.decoder = decoder = TextDecoder(self._source, self._errors)
        m.submodules.encoder = encoder = TextEncoder(self._target, self._errors, carry_error=True)
        (carry_through if self._target in UTF16_SCHEMES else carry_register)(m, decoder.o,
                                                                              encoder.i)
        if self._target in UTF16_SCHEMES:   # copies of the encoder's i.ready (a UTF-16 decoder)
            share_ready(decoder, encoder)
        wiring.connect(m, wiring.flipped(self.i), decoder.i)
        wiring.connect(m, encoder.o, wiring.flipped(self.o))
        return m
