"""Payload layouts of the cores' streams.

========================  ==========================================  ==========================
layout                    fields                                      used by
========================  ==========================================  ==========================
:data:`ByteLayout`        ``data: 8``, ``last: 1``                    decoder input
:data:`CodepointLayout`   ``codepoint: 21``, ``error: ErrorKind``,    decoder output
                          ``last: 1``
:data:`UnitLayout`        ``codepoint: 32``, ``last: 1``              encoder input (UTF-32 unit)
:data:`EncodedByteLayout` ``data: 8``, ``error: ErrorKind``,          encoder output
                          ``last: 1``
========================  ==========================================  ==========================

``last`` marks the final item of a message. Every core yields exactly one ``last`` item per
message.
"""

from amaranth.lib import data

from .error_kind import ErrorKind


__all__ = ["ByteLayout", "CodepointLayout", "UnitLayout", "EncodedByteLayout"]


ByteLayout = data.StructLayout({
    "data": 8,
    "last": 1,
})

CodepointLayout = data.StructLayout({
    "codepoint": 21,
    "error":     ErrorKind,
    "last":      1,
})

UnitLayout = data.StructLayout({
    "codepoint": 32,
    "last":      1,
})

EncodedByteLayout = data.StructLayout({
    "data":  8,
    "error": ErrorKind,
    "last":  1,
})
