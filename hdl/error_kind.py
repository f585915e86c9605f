"""The kinds of error the decoder, the encoder and the reference model report."""

from amaranth.lib import enum


__all__ = ["Labelled", "ErrorKind", "DECODE_ERRORS", "ENCODE_ERRORS", "check_policy",
           "check_encoding"]


class Labelled:
    """Mixin of the project's enums that reports and JSON name: :attr:`label` is the member's
    name in lower case (``"too_large"``, ``"transcode"``)."""
    @property
    def label(self):
        return self.name.lower()


class ErrorKind(Labelled, enum.Enum, shape=3):
    """Why an output is an error (``NONE`` for a correctly decoded or encoded scalar value).

    Decoder (one kind per *maximal subpart*; the byte that ends the subpart decides):

    ``OVERLONG``
        C0 or C1 (always overlong); E0 followed by 80..9F; F0 followed by 80..8F.
    ``SURROGATE``
        ED followed by A0..BF (would encode U+D800..U+DFFF).
    ``TOO_LARGE``
        F4 followed by 90..BF; any of F5..FD (legacy leads of values above U+10FFFF).
    ``INVALID_BYTE``
        FE or FF (never part of any UTF-8 form).
    ``UNEXPECTED_CONTINUATION``
        A continuation byte 80..BF that no lead byte covers.
    ``TRUNCATED``
        A well-formed prefix (a lead C2..F4 and the continuation bytes it allowed) cut short by a
        byte that cannot continue it, or by the end of the message.

    Encoder (per input code unit):

    ``SURROGATE``
        U+D800..U+DFFF (except U+DC80..U+DCFF, the escapes, with ``errors="surrogateescape"``).
    ``TOO_LARGE``
        A value of 0x110000 or more.

    The other encodings of the family (:mod:`utf8_gateware.sim.encodings`) use the same kinds:
    ``SURROGATE`` is also a lone surrogate of CESU-8 or UTF-16 and a WTF-8 trail surrogate
    sequence right after a lead one; ``TRUNCATED`` also an odd trailing UTF-16 byte;
    ``INVALID_BYTE`` also F0..F4 in CESU-8 and Modified UTF-8, and 00 in Modified UTF-8;
    ``OVERLONG`` also C0 81..BF in Modified UTF-8 and F8 80..87, FC 80..83 in RFC 2279;
    ``TOO_LARGE`` when encoding RFC 2279 is a value of 0x80000000 or more.
    """
    NONE                    = 0
    OVERLONG                = 1
    SURROGATE               = 2
    TOO_LARGE               = 3
    INVALID_BYTE            = 4
    UNEXPECTED_CONTINUATION = 5
    TRUNCATED               = 6


#: Error policies of a decoder (and of the reference model's ``decode``): what an ill-formed byte
#: sequence becomes (see :class:`~utf8_gateware.hdl.decoder.Utf8Decoder`).
DECODE_ERRORS = ("replace", "surrogateescape")

#: Error policies of an encoder (and of the reference model's ``encode``): what an invalid code
#: unit becomes (see :class:`~utf8_gateware.hdl.encoder.Utf8Encoder`).
ENCODE_ERRORS = ("replace", "strict", "surrogateescape")


def check_policy(errors, allowed):
    """Check an ``errors`` parameter against the policies ``allowed``; returns it.

    Raises :class:`TypeError` if it is not a string and :class:`ValueError` if it is not one of
    ``allowed``, with a message naming the choices.
    """
    if not isinstance(errors, str):
        raise TypeError(f"errors must be a string, not {errors!r}")
    if errors not in allowed:
        raise ValueError(f"errors must be one of {', '.join(map(repr, allowed))}, not {errors!r}")
    return errors


def check_encoding(encoding, table, what):
    """Check an ``encoding`` name against ``table`` (encoding -> policies); ``what``: what the
    gateware does with it (``"decodes"``). Raises a one-line :class:`TypeError` or
    :class:`ValueError`."""
    if not isinstance(encoding, str):
        raise TypeError(f"encoding must be a string, not {encoding!r}")
    if encoding not in table:
        raise ValueError(f"encoding must be one of those the gateware {what} "
                         f"({', '.join(map(repr, table))}), not {encoding!r}")
