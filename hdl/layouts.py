"""Payload layouts of the cores' streams.

===========================  ==========================================  ===========================
layout                       fields                                      used by
===========================  ==========================================  ===========================
:data:`ByteLayout`           ``data: 8``, ``last: 1``                    decoder input
:data:`CodepointLayout`      ``codepoint: 21``, ``error: ErrorKind``,    decoder output
                             ``last: 1``
:data:`WideCodepointLayout`  ``codepoint: 31``, ``error: ErrorKind``,    RFC 2279 decoder output
                             ``last: 1``
:data:`UnitLayout`           ``codepoint: 32``, ``last: 1``              encoder input (UTF-32 unit)
:data:`EncodedByteLayout`    ``data: 8``, ``error: ErrorKind``,          encoder output
                             ``last: 1``
:data:`CodeUnitLayout`       ``unit: 16``, ``error: ErrorKind``,         UTF-16 encoder output,
                             ``last: 1``                                 UTF-16 decoder input
===========================  ==========================================  ===========================

Several items per beat (``lanes`` = N > 1):

==============================  ===================================================  ===========
layout                          fields                                               used by
==============================  ===================================================  ===========
:func:`byte_beat_layout` (N)    ``data: 8*N`` (lane 0 in bits 0..7: the first        decoder and
                                byte), ``count: 1..N`` (valid bytes, in lanes        validator
                                0..count-1), ``last: 1``                             input
:func:`codepoint_beat_layout`   ``lanes: N x {codepoint: 21, error: ErrorKind,       decoder
(N)                             valid: 1}``, ``last: 1``                             output
==============================  ===================================================  ===========

``last`` marks the final item (or beat) of a message. Every core yields exactly one ``last``
item (or beat) per message.
"""

from amaranth.lib import data

from .error_kind import ErrorKind


__all__ = ["ByteLayout", "CodepointLayout", "WideCodepointLayout", "UnitLayout",
           "CarriedUnitLayout", "EncodedByteLayout",
           "CodeUnitLayout", "CodepointLaneLayout", "byte_beat_layout", "codepoint_beat_layout"]


ByteLayout = data.StructLayout({
    "data": 8,
    "last": 1,
})

#: The fields of one decoded item: a scalar value (or the error's code point) and its kind.
_DECODED = {
    "codepoint": 21,
    "error":     ErrorKind,
}

CodepointLayout = data.StructLayout({
    **_DECODED,
    "last": 1,
})

#: A decoded RFC 2279 value (0..0x7FFFFFFF, 31 bits; U+FFFD for an error) and its kind:
#: :class:`~utf8_gateware.hdl.rfc2279_decoder.Rfc2279Decoder`'s output.
WideCodepointLayout = data.StructLayout({
    "codepoint": 31,
    "error":     ErrorKind,
    "last":      1,
})

UnitLayout = data.StructLayout({
    "codepoint": 32,
    "last":      1,
})

#: Input of an encoder with ``carry_error=True`` (:class:`~utf8_gateware.hdl.encoder.Utf8Encoder`,
#: :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder`): a code unit and an error kind to
#: report on the unit's first output beat.
CarriedUnitLayout = data.StructLayout({
    "codepoint": 32,
    "error":     ErrorKind,
    "last":      1,
})

EncodedByteLayout = data.StructLayout({
    "data":  8,
    "error": ErrorKind,
    "last":  1,
})

#: One output lane of a multi-lane decoder: a :data:`CodepointLayout` item without ``last`` (the
#: beat carries it) and with ``valid`` (a lane may be empty).
CodepointLaneLayout = data.StructLayout({
    **_DECODED,
    "valid": 1,
})


def byte_beat_layout(lanes):
    """Input beat of ``lanes`` bytes: ``data`` (lane k in bits 8k..8k+7), ``count`` (1..lanes:
    the bytes in lanes 0..count-1 are valid), ``last``."""
    return data.StructLayout({
        "data":  8 * lanes,
        "count": range(lanes + 1),
        "last":  1,
    })


def codepoint_beat_layout(lanes):
    """Output beat of ``lanes`` lanes of :data:`CodepointLaneLayout`, and ``last`` (the beat
    holds the message's final output)."""
    return data.StructLayout({
        "lanes": data.ArrayLayout(CodepointLaneLayout, lanes),
        "last":  1,
    })

#: A UTF-16 code unit and an error kind: the stream between the UTF-16 cores
#: (:class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder` output,
#: :class:`~utf8_gateware.hdl.utf16_decoder.Utf16Decoder` input). ``error`` other than ``NONE``
#: reports an error on a substitute unit (U+FFFD, ``replace``) or on a *marker beat* that
#: stands for no code unit (``unit`` 0): an invalid code point that ``strict`` leaves out, or an
#: odd trailing byte (``TRUNCATED``, from :class:`~utf8_gateware.hdl.utf16_units.Utf16Units`).
CodeUnitLayout = data.StructLayout({
    "unit":  16,
    "error": ErrorKind,
    "last":  1,
})
