"""The reference model of every encoding of the family: one entry point for the engines, the
command line and the tests.

Each encoding is written from its specification (never by calling CPython's codecs or the
``mutf8`` package, which are the tests' oracles):

=================  ==========================================================================
``utf-8``          The Unicode Standard 3.9, Table 3-7 (:mod:`utf8_gateware.sim.reference`)
``utf-8-sig``      UTF-8 with one leading byte order mark dropped / written (CPython's codec)
``cesu-8``         Unicode Technical Report #26 (:mod:`.cesu8`)
``mutf-8``         Java's Modified UTF-8: ``java.io.DataInput``/``DataOutput``, JVM spec 4.4.7
``wtf-8``          The WTF-8 encoding, Simon Sapin (:mod:`.wtf8`)
``utf-8-rfc2279``  RFC 2279: values up to 0x7FFFFFFF in 1..6 bytes (:mod:`.rfc2279`)
``utf-16-le``,     The Unicode Standard 3.9/3.10, D91, D96-D98 (:mod:`.utf16`)
``utf-16-be``,
``utf-16``
=================  ==========================================================================

Decoding takes bytes and gives :class:`~utf8_gateware.sim.reference.Decoded` outputs (a code
point, and the :class:`~utf8_gateware.hdl.error_kind.ErrorKind` of an error output); encoding
takes code units (integers 0..0xFFFFFFFF: code points, surrogates included) and gives
:class:`~utf8_gateware.sim.reference.Encoded` (bytes, and ``(index, kind)`` per invalid unit).
Error policies, where the encoding offers them (:data:`DECODE_POLICIES`,
:data:`ENCODE_POLICIES`; any other pair is a one-line :class:`ValueError` that says why):

``replace``
    Decoding: one U+FFFD per maximal subpart. Encoding: the encoding's U+FFFD per invalid unit.
``strict``
    Decoding: the first maximal subpart raises
    :class:`~utf8_gateware.sim.reference.DecodeError` (``position``: its first byte's offset).
    Encoding: invalid units are left out and reported (the first index is the first error).
``surrogateescape``
    (PEP 383) Decoding: each byte b of a maximal subpart becomes U+DC00+b; encoding turns
    U+DC80..U+DCFF back into the byte. Offered where it is lossless (decode, then encode, gives
    the input back): not where a lone surrogate is well-formed (``mutf-8``, ``wtf-8``,
    ``utf-8-rfc2279``) nor for UTF-16.
``surrogatepass``
    (as CPython) Decoding: a lone surrogate is passed through, flagged ``SURROGATE``; anything
    else ill-formed raises as with ``strict``. Encoding: a surrogate is written as its own
    sequence. Offered where surrogates are otherwise errors (``utf-8``, ``utf-8-sig``,
    ``cesu-8``, UTF-16).
"""

from utf8_gateware.sim.reference import (Decoded, DecodeError, Encoded, count_errors)
from . import cesu8, rfc2279, utf16, utf8, wtf8
from .codec import StreamDecoder, StreamEncoder
from .surrogates import codepoints_from_utf16, utf16_units


__all__ = [
    "ENCODINGS", "DECODE_POLICIES", "ENCODE_POLICIES", "lookup", "check",
    "Decoder", "Encoder", "decode", "decode_to_str", "encode",
    "Decoded", "DecodeError", "Encoded", "count_errors",
    "utf16_units", "codepoints_from_utf16",
]


_ENCODINGS = {encoding.name: encoding for encoding in (
    utf8.UTF_8, utf8.UTF_8_SIG, cesu8.CESU_8, cesu8.MUTF_8, wtf8.WTF_8,
    rfc2279.UTF_8_RFC2279, utf16.UTF_16_LE, utf16.UTF_16_BE, utf16.UTF_16)}

#: The names of the encodings, in the order a user would look for them.
ENCODINGS = tuple(_ENCODINGS)

#: The error policies each encoding offers when decoding (the first is the default).
DECODE_POLICIES = {name: encoding.decode_errors for name, encoding in _ENCODINGS.items()}

#: The error policies each encoding offers when encoding (the first is the default).
ENCODE_POLICIES = {name: encoding.encode_errors for name, encoding in _ENCODINGS.items()}


def lookup(encoding):
    """The :class:`~.codec.Encoding` named ``encoding`` (one of :data:`ENCODINGS`)."""
    if not isinstance(encoding, str):
        raise TypeError(f"encoding must be a string, not {encoding!r}")
    try:
        return _ENCODINGS[encoding]
    except KeyError:
        raise ValueError(f"unknown encoding {encoding!r}; one of "
                         f"{', '.join(ENCODINGS)}") from None


def check(encoding, errors, direction="decode"):
    """Check that ``encoding`` offers the policy ``errors`` for ``direction`` (``"decode"`` or
    ``"encode"``); one-line :class:`ValueError` (or :class:`TypeError`) if not."""
    if direction not in ("decode", "encode"):
        raise ValueError(f"direction must be 'decode' or 'encode', not {direction!r}")
    return lookup(encoding).check(errors, direction)


class Decoder(StreamDecoder):
    """Incremental decoder: :meth:`feed` bytes, :meth:`finish` the stream (see
    :class:`~.codec.StreamDecoder`)."""
    def __init__(self, encoding="utf-8", errors="replace"):
        super().__init__(lookup(encoding), errors)


class Encoder(StreamEncoder):
    """Incremental encoder: :meth:`feed` code units, :meth:`finish` the message (see
    :class:`~.codec.StreamEncoder`)."""
    def __init__(self, encoding="utf-8", errors="replace"):
        super().__init__(lookup(encoding), errors)


def decode(data, encoding="utf-8", errors="replace"):
    """Decode the whole message ``data``; returns a list of :class:`Decoded`, or raises
    :class:`DecodeError` (its ``decoded``: every output before the error)."""
    decoder = Decoder(encoding, errors)
    outputs = decoder.feed(data)
    try:
        return outputs + decoder.finish()
    except DecodeError as error:
        error.decoded = outputs + error.decoded
        raise


def decode_to_str(data, encoding="utf-8", errors="replace"):
    """Decode ``data`` to a :class:`str` (for comparison with ``bytes.decode``)."""
    return "".join(chr(output.codepoint) for output in decode(data, encoding, errors))


def encode(units, encoding="utf-8", errors="replace"):
    """Encode the whole message ``units`` (code units, integers 0..0xFFFFFFFF); returns
    :class:`Encoded`."""
    encoder = Encoder(encoding, errors)
    first, last = encoder.feed(units), encoder.finish()
    return Encoded(first.data + last.data, first.errors + last.errors)
