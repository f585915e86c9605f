"""What ``Utf8Decoder(encoding=...)`` is made of for each encoding of the UTF-8 family.

Each encoding is the lane-parametric byte decoder (:mod:`.decoder_lane`) generated from the
encoding's byte grammar (:data:`~utf8_gateware.hdl.utf8_grammar.GRAMMARS`), followed by the
code-point stages that act on what the bytes decode to, as the reference model composes it
(``utf8_gateware.sim.encodings``):

=============  =================  ============================================================
encoding       byte grammar       then
=============  =================  ============================================================
``utf-8``      UTF-8 (Table 3-7)  nothing
``utf-8-sig``  UTF-8              :class:`~.bom_stripper.ByteOrderMarkStripper`
``cesu-8``     CESU-8             :class:`~.utf16_decoder.Utf16Decoder` (joins surrogate pairs;
                                  a lone surrogate is an error); with ``surrogateescape``
                                  it passes a lone surrogate on and
                                  :class:`~.surrogate_escaper.SurrogateEscaper` writes its
                                  three bytes' escapes
``mutf-8``     Modified UTF-8     :class:`~.utf16_decoder.Utf16Decoder` (joins pairs; a lone
                                  surrogate is well-formed)
``wtf-8``      generalized UTF-8  :class:`~.surrogate_pair_rejecter.SurrogatePairRejecter`
=============  =================  ============================================================

The boundary lies between bytes and code points because a CESU-8 pair spans six bytes: past
the byte decoder's three-byte look-back, but two items for a stage that sees code units. The
stages hold at most one item and take one every cycle, so the composition keeps the byte
decoder's throughput (one byte per cycle) and adds their latency.

The error policies of an encoding are those the reference model offers
(:data:`~utf8_gateware.sim.encodings.DECODE_POLICIES`) that the gateware has (``replace``,
``surrogateescape``), but for the pairs in :data:`NOT_YET`.
"""

from amaranth.lib import stream

from utf8_gateware.sim.encodings import DECODE_POLICIES, lookup
from .bom_stripper import ByteOrderMarkStripper
from .error_kind import DECODE_ERRORS
from .layouts import CodepointLayout
from .surrogate_escaper import SurrogateEscaper
from .surrogate_pair_rejecter import SurrogatePairRejecter
from .utf16_decoder import Utf16Decoder
from .utf8_grammar import GRAMMARS


__all__ = ["DECODER_ENCODINGS", "NOT_YET", "decoder_policies", "check_encoding",
           "code_point_stages", "stages_latency", "connect_stages"]


#: The encodings ``Utf8Decoder`` decodes.
DECODER_ENCODINGS = tuple(GRAMMARS)

#: Encodings and policies the reference model has and the gateware does not offer yet, and why.
NOT_YET = {
    ("utf-8-rfc2279", None): "values above U+10FFFF need a 6-byte look-back and 31-bit code "
                             "points",
}


def decoder_policies(encoding):
    """The error policies ``Utf8Decoder(encoding=encoding)`` offers."""
    return tuple(policy for policy in DECODE_POLICIES[encoding]
                 if policy in DECODE_ERRORS and (encoding, policy) not in NOT_YET)


def check_encoding(encoding, errors, lanes):
    """Check ``encoding`` for a decoder with ``errors`` (one of ``DECODE_ERRORS``) and
    ``lanes``; one-line :class:`ValueError` / :class:`TypeError`."""
    lookup(encoding)             # a string, and an encoding of the family
    if (encoding, None) in NOT_YET:
        raise ValueError(f"encoding {encoding!r} is not offered in gateware yet "
                         f"({NOT_YET[encoding, None]})")
    if encoding not in DECODER_ENCODINGS:
        raise ValueError(f"encoding {encoding!r} is not decoded by Utf8Decoder; one of "
                         f"{', '.join(DECODER_ENCODINGS)}")
    if errors not in decoder_policies(encoding):
        reason = NOT_YET.get((encoding, errors)) or lookup(encoding).refused.get(errors)
        raise ValueError(f"{encoding} decodes in gateware with errors "
                         f"{', '.join(map(repr, decoder_policies(encoding)))}, not {errors!r}"
                         + (f" ({reason})" if reason else ""))
    if lanes != 1 and _stages(encoding, errors):
        raise ValueError(f"encoding {encoding!r} is decoded one lane at a time (lanes=1), "
                         f"not {lanes} lanes")


#: The stages after the byte decoder, per encoding and policy (``None``: any):
#: ``(class, keyword arguments)`` in order.
_STAGES = {
    ("utf-8-sig", None): ((ByteOrderMarkStripper, {}),),
    ("cesu-8", "replace"): ((Utf16Decoder, {"byte_errors": "utf-8"}),),
    ("cesu-8", "surrogateescape"): ((Utf16Decoder, {"errors": "surrogatepass",
                                                    "byte_errors": "utf-8"}),
                                    (SurrogateEscaper, {})),
    ("mutf-8", None): ((Utf16Decoder, {"lone_is_error": False, "byte_errors": "utf-8"}),),
    ("wtf-8", None): ((SurrogatePairRejecter, {}),),
}


def _stages(encoding, errors):
    return _STAGES.get((encoding, errors), _STAGES.get((encoding, None), ()))


def code_point_stages(encoding, errors):
    """New instances of the stages after the byte decoder of ``encoding`` with ``errors``, in
    order."""
    return [cls(**kwargs) for cls, kwargs in _stages(encoding, errors)]


def stages_latency(encoding, errors):
    """Cycles the stages after the byte decoder of ``encoding`` with ``errors`` add to its
    latency."""
    return sum(cls.LATENCY for cls, _ in _stages(encoding, errors))


def connect_stages(m, stages, o):
    """Add ``stages`` to ``m`` as submodules, chained, the last one driving the stream ``o``;
    returns the stream the byte decoder is to drive (``o`` itself without stages)."""
    if not stages:
        return o
    head = source = stream.Signature(CodepointLayout).create(path=("bytes",))
    for n, stage in enumerate(stages):
        m.submodules[f"stage{n}"] = stage
        _feed(m, source, stage.i)
        source = stage.o
    _feed(m, source, o)
    return head


def _feed(m, source, sink):
    """``sink`` takes ``source``'s items, payload fields by name (a code unit's ``unit``: the
    low 16 bits of ``codepoint``, which a CESU-8 or Modified UTF-8 byte decoder never
    exceeds)."""
    fields = {name for name, _ in sink.payload.shape()}
    m.d.comb += [sink.valid.eq(source.valid), source.ready.eq(sink.ready),
                 sink.payload.error.eq(source.payload.error),
                 sink.payload.last.eq(source.payload.last)]
    if "unit" in fields:
        m.d.comb += sink.payload.unit.eq(source.payload.codepoint[:16])
    else:
        m.d.comb += sink.payload.codepoint.eq(source.payload.codepoint)
