"""What ``Utf8Decoder(encoding=...)`` is made of for each encoding of the UTF-8 family.

Each encoding is the lane-parametric byte decoder (:mod:`.decoder_lane`) generated from the
encoding's byte grammar (:data:`~utf8_gateware.hdl.utf8_grammar.GRAMMARS`), with marks its lane
computes and stages after it, as the reference model composes it
(``utf8_gateware.sim.encodings``):

=============  ===================================  =========================================
encoding       byte grammar                         marks and stages
=============  ===================================  =========================================
``utf-8``      UTF-8 (Table 3-7)                    none
``utf-8-sig``  UTF-8                                a leading EF BB BF's scalar hidden
                                                    (:func:`~.bom_stripper.byte_order_mark`)
``cesu-8``     CESU-8 (surrogates, no 4-byte form)  :class:`~.surrogate_joiner.SurrogateJoiner`
                                                    in the pipeline (joins pairs; a lone
                                                    surrogate is an error); with
                                                    ``surrogateescape`` its escape stages
                                                    write a lone surrogate's three escapes
                                                    into silent slots
``mutf-8``     Modified UTF-8 (also C0 80, no 00)   ``SurrogateJoiner`` (joins pairs; a lone
                                                    surrogate is well-formed)
``wtf-8``      generalized UTF-8 (surrogates)       a trail sequence right after a lead
                                                    sequence rejected
                                                    (:mod:`.surrogate_pair_rejecter`)
=============  ===================================  =========================================

``utf-8-rfc2279`` (values to 0x7FFFFFFF in up to six bytes) is not the lane pipeline but a core
of its own (:data:`OWN_CORES`: :class:`~.rfc2279_decoder.Rfc2279Decoder`, one lane, 31-bit
values, :func:`output_layout`): its sequences reach past the lane pipeline's three-byte
look-back.

Why these boundaries, and why all of it is one pipeline: a byte order mark is three fixed
bytes at a message's start, and WTF-8's ill-formed pair a trail sequence right after a lead
sequence, both facts of a few bytes in a row that the byte decoder's lane computes beside its
own (:mod:`.lane_marks`: a few flip-flops, no latency), marking the byte whose scalar it then
hides or rejects. A CESU-8 pair spans six bytes and a lead is lone or not by the next output,
which may come any number of bubbles later: that is a stage after the byte decoder's output
slot that keeps a lead's ten bits until the next item is seen coming, inside its rigid pipeline
(one clock enable, one skid register), fed by flags the lane computes. ``surrogateescape``'s
three escapes per lone CESU-8 surrogate (more items out than the surrogate's one) go into slots
that are always silent, the surrogate's own bytes' or bubbles, by three more stages of the
joiner; so no stage has a queue, and everything keeps one byte per cycle. The stages' latencies
add (:func:`stages_latency`).

The error policies of an encoding are those the reference model offers
(:data:`~utf8_gateware.sim.encodings.DECODE_POLICIES`) that the gateware has (``replace``,
``surrogateescape``), but for the pairs in :data:`NOT_YET`.
"""

from utf8_gateware.sim.encodings import DECODE_POLICIES, lookup
from .bom_stripper import byte_order_mark
from .error_kind import DECODE_ERRORS
from .lane_marks import ByteMarks
from .layouts import CodepointLayout
from .rfc2279_decoder import Rfc2279Decoder
from .surrogate_joiner import SurrogateJoiner
from .surrogate_pair_rejecter import surrogate_pair
from .utf8_grammar import GRAMMARS


__all__ = ["DECODER_ENCODINGS", "NOT_YET", "decoder_policies", "check_family_parameters",
           "FamilyStages", "OWN_CORES", "output_layout", "stages_latency"]


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
    if lanes != 1 and (FamilyStages.folds(encoding, errors) or encoding in OWN_CORES):
        raise ValueError(f"encoding {encoding!r} is decoded one lane at a time (lanes=1), "
                         f"not {lanes} lanes")


def _entry(table, encoding, errors):
    return table.get((encoding, errors), table.get((encoding, None)))


#: Per encoding and policy (``None``: any): the mark whose scalar stage ``E`` hides, the mark
#: whose scalar it rejects (U+FFFD, ``SURROGATE``), and the joiner's keyword arguments.
_HIDE = {("utf-8-sig", None): byte_order_mark}
_REJECT = {("wtf-8", None): surrogate_pair}
_JOIN = {
    ("cesu-8", "replace"): {},
    ("cesu-8", "surrogateescape"): {"errors": "surrogateescape"},
    ("mutf-8", None): {"lone_is_error": False},
}


class FamilyStages:
    """What ``encoding`` with ``errors`` adds to the one-lane byte decoder being built, in the
    order the decoder calls it: :meth:`mark` after stage ``D``, :meth:`after` on its last
    output slot. :attr:`steps`: pipeline steps it adds (the joiner's)."""

    def __init__(self, encoding, errors):
        self.hide = _entry(_HIDE, encoding, errors)
        self.reject = _entry(_REJECT, encoding, errors)
        join = _entry(_JOIN, encoding, errors)
        self.joiner = SurrogateJoiner(**join) if join is not None else None
        self.steps = self.joiner.LATENCY if self.joiner else 0
        self._flags = None

    @staticmethod
    def folds(encoding, errors):
        """Whether ``encoding`` with ``errors`` adds anything to the byte decoder."""
        return any(_entry(table, encoding, errors) is not None
                   for table in (_HIDE, _REJECT, _JOIN))

    def mark(self, pipe, byte, a, b, c, d, slots):
        """The marks beside the lane's stages ``a`` .. ``d`` (``byte``: stage ``A``'s input),
        as ``hide``/``reject`` of ``d``'s lane for stage ``E``; the joiner's flags, carried to
        the last of ``slots`` slot stages."""
        if not (self.hide or self.reject or self.joiner):
            return
        marks = ByteMarks(pipe, byte, a, b, c)
        lane = d.lanes[0]
        if self.hide:
            lane.hide = self.hide(marks)
        if self.reject:
            lane.reject = self.reject(marks)
        if self.joiner:
            self._flags = self.joiner.flags(pipe, self.joiner.mark(marks, d), lane.last, slots)

    def after(self, pipe, slot, valid, payload):
        """The output slot after the last slot stage ``slot`` (whose ``valid`` and ``payload``
        are given): ``(valid, payload)``, or ``(valid, payload, ones)`` with bits set at the
        output, or ``(valid, payload, ones, gated)`` with bits gated there too
        (:meth:`~.pipeline.Pipeline.drive_output`)."""
        if not self.joiner:
            return valid, payload
        return self.joiner.build(pipe, slot, self._flags)


def stages_latency(encoding, errors):
    """Cycles the marks and stages of ``encoding`` with ``errors`` add to the byte decoder's
    latency."""
    return FamilyStages(encoding, errors).steps
