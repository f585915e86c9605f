"""Original UTF-8 (RFC 2279, January 1998; ISO/IEC 10646-1 Annex R): values 0..0x7FFFFFFF in
1 to 6 bytes, shortest form only.

=====================  ==========================================================
value                  bytes
=====================  ==========================================================
0000 0000..0000 007F   0xxxxxxx
0000 0080..0000 07FF   110xxxxx 10xxxxxx
0000 0800..0000 FFFF   1110xxxx 10xxxxxx 10xxxxxx
0001 0000..001F FFFF   11110xxx 10xxxxxx 10xxxxxx 10xxxxxx
0020 0000..03FF FFFF   111110xx 10xxxxxx 10xxxxxx 10xxxxxx 10xxxxxx
0400 0000..7FFF FFFF   1111110x 10xxxxxx 10xxxxxx 10xxxxxx 10xxxxxx 10xxxxxx
=====================  ==========================================================

"The rows in the table are mutually exclusive" (RFC 2279, section 2): only the shortest form is
well-formed. As a byte grammar of the shape of Table 3-7 (:class:`~utf8_gateware.sim.reference.
Grammar`): 00..7F; C2..DF; E0 A0..BF; E1..EF (surrogate values included: RFC 2279 predates
their exclusion); F0 90..BF; F1..F7; F8 88..BF; F9..FB; FC 84..BF; FD; each lead followed by
its continuation bytes 80..BF. Errors, one per maximal subpart as in UTF-8: C0, C1 and a lead
E0/F0/F8/FC ended by a continuation byte below its range are ``OVERLONG``; FE, FF are
``INVALID_BYTE``; stray continuation bytes and cut-short sequences as in UTF-8. There is no
``TOO_LARGE`` when decoding; encoding reports values of 0x80000000 and more as ``TOO_LARGE``
(EF BF BD with ``replace``).

Policies: ``replace`` and ``strict``. Surrogate values decode and encode like any other, so an
escape U+DC80..U+DCFF could not be told from the value (no ``surrogateescape``) and
``surrogatepass`` would change nothing.
"""

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim.reference import ByteDecoder, sequence_bytes
from .codec import Encoding, substitute
from .utf8 import GENERALIZED


__all__ = ["RFC2279_LENGTH_LIMITS", "RFC2279_GRAMMAR", "rfc2279_length", "UTF_8_RFC2279"]


#: A value below ``RFC2279_LENGTH_LIMITS[n - 1]`` (and not below the one before) takes n bytes.
RFC2279_LENGTH_LIMITS = (0x80, 0x800, 0x10000, 0x200000, 0x4000000, 0x80000000)

RFC2279_GRAMMAR = GENERALIZED.derive(
    "utf-8-rfc2279",
    lengths={**{lead: 4 for lead in range(0xF0, 0xF8)},
             **{lead: 5 for lead in range(0xF8, 0xFC)},
             0xFC: 6, 0xFD: 6},
    second_ranges={0xF4: (0x80, 0xBF), 0xF8: (0x88, 0xBF), 0xFC: (0x84, 0xBF)},
    second_errors={0xF8: ErrorKind.OVERLONG, 0xFC: ErrorKind.OVERLONG})

_REPLACEMENT = sequence_bytes(0xFFFD, 3)


def rfc2279_length(value):
    """The length (1..6) of the RFC 2279 form of a value below 0x80000000."""
    for length, limit in enumerate(RFC2279_LENGTH_LIMITS, start=1):
        if value < limit:
            return length
    raise ValueError(f"0x{value:X} has no RFC 2279 form (values end at 0x7FFFFFFF)")


def encode_unit(unit, errors):
    """One value in RFC 2279 UTF-8 under ``errors``."""
    if unit >= RFC2279_LENGTH_LIMITS[-1]:
        return substitute(errors, _REPLACEMENT), ErrorKind.TOO_LARGE
    return sequence_bytes(unit, rfc2279_length(unit)), ErrorKind.NONE


UTF_8_RFC2279 = Encoding(
    "utf-8-rfc2279", ("replace", "strict"), ("replace", "strict"),
    lambda errors: [ByteDecoder(RFC2279_GRAMMAR)], encode_unit,
    refused={
        "surrogateescape": "surrogate values are well-formed in RFC 2279, so an escape "
                           "U+DC80..U+DCFF could not be told from one",
        "surrogatepass": "surrogate values are well-formed in RFC 2279 already",
    })
