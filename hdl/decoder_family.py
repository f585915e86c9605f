"""What ``Utf8Decoder(encoding=...)`` is made of for each encoding of the UTF-8 family.

Each encoding is the lane-parametric byte decoder (:mod:`.decoder_lane`) generated from the
encoding's byte grammar (:data:`~utf8_gateware.hdl.utf8_grammar.GRAMMARS`), with small stages
in front of it (on bytes) or after it (on code points), as the reference model composes it
(``utf8_gateware.sim.encodings``):

=============  ===================================  =========================================
encoding       byte grammar                         stages
=============  ===================================  =========================================
``utf-8``      UTF-8 (Table 3-7)                    none
``utf-8-sig``  UTF-8                                in front:
                                                    :class:`~.bom_stripper.ByteOrderMarkStripper`
``cesu-8``     CESU-8 (surrogates, no 4-byte form)  after:
                                                    :class:`~.surrogate_joiner.SurrogateJoiner`
                                                    (joins pairs; a lone surrogate is an
                                                    error); with ``surrogateescape`` it passes
                                                    a lone surrogate on and
                                                    :class:`~.surrogate_escaper.SurrogateEscaper`
                                                    writes its three bytes' escapes
``mutf-8``     Modified UTF-8 (also C0 80, no 00)   after: ``SurrogateJoiner`` (joins pairs; a
                                                    lone surrogate is well-formed)
``wtf-8``      generalized UTF-8 (surrogates)       after: ``SurrogatePairRejecter``
                                                    (:mod:`.surrogate_pair_rejecter`)
=============  ===================================  =========================================

``utf-8-rfc2279`` (values to 0x7FFFFFFF in up to six bytes) is not the lane pipeline but a core
of its own (:data:`OWN_CORES`: :class:`~.rfc2279_decoder.Rfc2279Decoder`, one lane, 31-bit
values, :func:`output_layout`): its sequences reach past the lane pipeline's three-byte
look-back.

Why these boundaries: a CESU-8 pair spans six bytes, past the byte decoder's three-byte
look-back, but it is two items for a stage that sees code units, so pairs are joined after the
byte decoder, by the UTF-16 decoder that joins them anyway (as
:class:`~.surrogate_joiner.SurrogateJoiner`); WTF-8's rule is about two decoded
surrogates in a row, one flip-flop of state after the byte decoder; a byte order mark is three
fixed bytes at a message's start, cheaper to compare as bytes in front than as a 21-bit code
point after. Every stage takes one item every cycle, so the composition keeps the byte
decoder's throughput (one byte per cycle) and adds the stages' latencies
(:func:`stages_latency`).

The error policies of an encoding are those the reference model offers
(:data:`~utf8_gateware.sim.encodings.DECODE_POLICIES`) that the gateware has (``replace``,
``surrogateescape``), but for the pairs in :data:`NOT_YET`.
"""

from amaranth.lib import stream

from utf8_gateware.sim.encodings import DECODE_POLICIES, lookup
from .bom_stripper import ByteOrderMarkStripper
from .error_kind import DECODE_ERRORS
from .layouts import ByteLayout, CodepointLayout
from .rfc2279_decoder import Rfc2279Decoder
from .surrogate_escaper import SurrogateEscaper
from .surrogate_joiner import SurrogateJoiner
from .surrogate_pair_rejecter import SurrogatePairRejecter
from .utf8_grammar import GRAMMARS


__all__ = ["DECODER_ENCODINGS", "OWN_CORES", "NOT_YET", "decoder_policies", "output_layout",
           "check_family_parameters",
           "front_stages", "back_stages", "stages_latency", "connect_front", "connect_back"]


#: The encodings ``Utf8Decoder`` decodes with a core of their own instead of the lane pipeline:
#: ``{encoding: class}`` (a class with ``errors``, ``LATENCY`` and ``OUTPUT_LAYOUT``).
OWN_CORES = {"utf-8-rfc2279": Rfc2279Decoder}

#: The encodings ``Utf8Decoder`` decodes.
DECODER_ENCODINGS = (*GRAMMARS, *OWN_CORES)

#: Encodings and policies the reference model has and the gateware does not offer yet, and why
#: (``(encoding, None)``: the encoding as a whole).
NOT_YET = {}


def decoder_policies(encoding):
    """The error policies ``Utf8Decoder(encoding=encoding)`` offers."""
    return tuple(policy for policy in DECODE_POLICIES[encoding]
                 if policy in DECODE_ERRORS and (encoding, policy) not in NOT_YET)


def output_layout(encoding):
    """The payload layout of the one-lane ``Utf8Decoder(encoding=encoding)``'s ``o``."""
    core = OWN_CORES.get(encoding)
    return CodepointLayout if core is None else core.OUTPUT_LAYOUT


def check_family_parameters(encoding, errors, lanes):
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
    if lanes != 1 and (stages_latency(encoding, errors) or encoding in OWN_CORES):
        raise ValueError(f"encoding {encoding!r} is decoded one lane at a time (lanes=1), "
                         f"not {lanes} lanes")


#: The stages in front of the byte decoder (on bytes) and after it (on code points), per
#: encoding and policy (``None``: any): ``(class, keyword arguments)`` in order.
_FRONT = {
    ("utf-8-sig", None): ((ByteOrderMarkStripper, {}),),
}
_BACK = {
    ("cesu-8", "replace"): ((SurrogateJoiner, {}),),
    ("cesu-8", "surrogateescape"): ((SurrogateJoiner, {"errors": "surrogatepass"}),
                                    (SurrogateEscaper, {})),
    ("mutf-8", None): ((SurrogateJoiner, {"lone_is_error": False}),),
    ("wtf-8", None): ((SurrogatePairRejecter, {}),),
}


def _stages(table, encoding, errors):
    return table.get((encoding, errors), table.get((encoding, None), ()))


def front_stages(encoding, errors):
    """New instances of the stages in front of the byte decoder of ``encoding`` with
    ``errors``, in order."""
    return [cls(**kwargs) for cls, kwargs in _stages(_FRONT, encoding, errors)]


def back_stages(encoding, errors):
    """New instances of the stages after the byte decoder of ``encoding`` with ``errors``, in
    order."""
    return [cls(**kwargs) for cls, kwargs in _stages(_BACK, encoding, errors)]


def stages_latency(encoding, errors):
    """Cycles the stages of ``encoding`` with ``errors`` add to the byte decoder's latency."""
    return sum(cls.LATENCY for table in (_FRONT, _BACK)
               for cls, _ in _stages(table, encoding, errors))


def connect_front(m, stages, i):
    """Add ``stages`` to ``m`` as submodules, chained, the first one taking the stream ``i``;
    returns the stream the byte decoder is to take (``i`` itself without stages)."""
    if not stages:
        return i
    tail = stream.Signature(ByteLayout).flip().create(path=("bytes_in",))
    _chain(m, "front", stages, i, tail)
    return tail


def connect_back(m, stages, o):
    """Add ``stages`` to ``m`` as submodules, chained, the last one driving the stream ``o``;
    returns the stream the byte decoder is to drive (``o`` itself without stages)."""
    if not stages:
        return o
    head = stream.Signature(CodepointLayout).create(path=("codepoints",))
    _chain(m, "back", stages, head, o)
    return head


def _chain(m, name, stages, source, sink):
    """``source`` -> ``stages`` (submodules ``{name}0``, ...) -> ``sink``."""
    for n, stage in enumerate(stages):
        m.submodules[f"{name}{n}"] = stage
        _feed(m, source, stage.i)
        source = stage.o
    _feed(m, source, sink)


def _feed(m, source, sink):
    """``sink`` takes ``source``'s items, payload fields by name (a code unit's ``unit``: the
    low 16 bits of ``codepoint``, which a CESU-8 or Modified UTF-8 byte decoder never
    exceeds)."""
    fields = {name for name, _ in sink.payload.shape()}
    m.d.comb += [sink.valid.eq(source.valid), source.ready.eq(sink.ready),
                 sink.payload.last.eq(source.payload.last)]
    for name in fields & {"data", "codepoint", "error"}:
        m.d.comb += getattr(sink.payload, name).eq(getattr(source.payload, name))
    if "unit" in fields:
        m.d.comb += sink.payload.unit.eq(source.payload.codepoint[:16])
