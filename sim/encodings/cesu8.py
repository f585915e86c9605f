"""CESU-8 (Unicode Technical Report #26) and Java's Modified UTF-8 (``java.io.DataInput``).

Both write each UTF-16 code unit of the text as a 1-, 2- or 3-byte sequence of the UTF-8 bit
distribution, so a supplementary character is the 3-byte sequence of its lead surrogate
followed by that of its trail surrogate (ED A0..AF 80..BF ED B0..BF 80..BF); no 4-byte
sequences. Modified UTF-8 also writes U+0000 as C0 80, so that no 00 byte occurs.

Decoding is two stages, as the bytes are two levels: the bytes are cut into code-unit
sequences by a byte grammar (Table 3-7 with ED followed by 80..BF, without the leads F0..F4),
one error per maximal subpart as in UTF-8; then pairs of surrogate units are joined
(:class:`~.surrogates.JoinSurrogates`). So an ill-formed pair never swallows a well-formed
sequence after it, and a lone surrogate is one maximal subpart of three bytes, as a lone code
unit is in UTF-16.

CESU-8 (TR #26 defines it for Unicode text, i.e. scalar values; it leaves lone surrogates
open; ICU passes them, Ruby and the Rust crates reject them). Choices:

* A lone surrogate sequence is ill-formed, kind ``SURROGATE``: one U+FFFD for its three bytes
  (``replace``), three escapes (``surrogateescape``, lossless: no well-formed CESU-8 decodes to
  a surrogate), the surrogate itself flagged ``SURROGATE`` (``surrogatepass``: ICU's reading).
* An ill-formed pair gives one U+FFFD per 3-byte surrogate sequence, plus the maximal subparts
  of any broken bytes: ED A0 80 ED A0 80 ED B0 80 is U+FFFD U+10000; a swapped pair ED B0 80
  ED A0 80 is U+FFFD U+FFFD; a lead followed by a cut-short trail ED A0 80 ED B0 is U+FFFD
  (``SURROGATE``) U+FFFD (``TRUNCATED``).
* F0..F4 (the 4-byte form of UTF-8) start no sequence: ``INVALID_BYTE``. Every other byte is
  classified as in UTF-8 (C0, C1 ``OVERLONG``; F5..FD ``TOO_LARGE``; FE, FF ``INVALID_BYTE``).
* Encoding: a lone surrogate is an error (``SURROGATE``): EF BF BD, left out (``strict``), the
  raw byte for U+DC80..U+DCFF (``surrogateescape``), its 3-byte sequence (``surrogatepass``).

Modified UTF-8 (``java.io.DataOutput.writeUTF`` and ``DataInput.readUTF``; the JVM
specification, 4.4.7): every Java ``char`` sequence is well-formed, lone surrogates included,
so they decode to themselves (pairs are joined) and encode without error. Choices where
``readUTF`` is more lenient than what ``writeUTF`` can produce (the JVM specification, 4.4.7:
"no byte may have the value (byte)0 or lie in the range (byte)0xf0 - (byte)0xff"):

* A raw 00 byte is ill-formed: ``INVALID_BYTE`` (``readUTF`` accepts it as U+0000; the ``mutf8``
  package rejects it).
* Overlong forms other than C0 80 are ill-formed: C0 followed by 81..BF and E0 followed by
  80..9F are ``OVERLONG`` (``readUTF`` accepts them); C1 is ``OVERLONG``.
* F0..FF as in CESU-8.
* Policies: ``replace`` and ``strict`` only: a lone surrogate is well-formed here, so an escape
  U+DC80..U+DCFF could not be told from one, and there is nothing for ``surrogatepass`` to do.
"""

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim.reference import ByteDecoder, sequence_bytes, utf8_length
from .codec import Encoding, substitute
from .surrogates import JoinSurrogates, is_surrogate, split
from .utf8 import GENERALIZED


__all__ = ["CESU8_GRAMMAR", "MUTF8_GRAMMAR", "CESU_8", "MUTF_8"]


_FOUR_BYTE_LEADS = range(0xF0, 0xF5)

#: CESU-8's bytes: generalized UTF-8 without 4-byte sequences.
CESU8_GRAMMAR = GENERALIZED.derive(
    "cesu-8",
    lengths={lead: 0 for lead in _FOUR_BYTE_LEADS},
    start_errors={lead: ErrorKind.INVALID_BYTE for lead in _FOUR_BYTE_LEADS})

#: Modified UTF-8's bytes: CESU-8's, with C0 80 for U+0000 instead of 00.
MUTF8_GRAMMAR = CESU8_GRAMMAR.derive(
    "mutf-8",
    lengths={0x00: 0, 0xC0: 2},
    second_ranges={0xC0: (0x80, 0x80)},
    second_errors={0xC0: ErrorKind.OVERLONG},
    start_errors={0x00: ErrorKind.INVALID_BYTE})

_REPLACEMENT = sequence_bytes(0xFFFD, 3)


def _code_unit_sequences(value):
    """The bytes of a code point below 0x110000: each UTF-16 code unit as 1..3 bytes."""
    if value < 0x10000:
        return sequence_bytes(value, utf8_length(value))
    lead, trail = split(value)
    return sequence_bytes(lead, 3) + sequence_bytes(trail, 3)


def encode_cesu8_unit(unit, errors):
    """One code unit in CESU-8 under ``errors``."""
    if unit >= 0x110000:
        return substitute(errors, _REPLACEMENT), ErrorKind.TOO_LARGE
    if is_surrogate(unit):
        if errors == "surrogatepass":
            return sequence_bytes(unit, 3), ErrorKind.NONE
        if errors == "surrogateescape" and 0xDC80 <= unit <= 0xDCFF:
            return bytes([unit - 0xDC00]), ErrorKind.NONE
        return substitute(errors, _REPLACEMENT), ErrorKind.SURROGATE
    return _code_unit_sequences(unit), ErrorKind.NONE


def encode_mutf8_unit(unit, errors):
    """One code unit in Modified UTF-8 under ``errors`` (lone surrogates are Java chars)."""
    if unit >= 0x110000:
        return substitute(errors, _REPLACEMENT), ErrorKind.TOO_LARGE
    if unit == 0:
        return b"\xc0\x80", ErrorKind.NONE
    return _code_unit_sequences(unit), ErrorKind.NONE


_CESU8_POLICIES = ("replace", "strict", "surrogateescape", "surrogatepass")

CESU_8 = Encoding(
    "cesu-8", _CESU8_POLICIES, _CESU8_POLICIES,
    lambda errors: [ByteDecoder(CESU8_GRAMMAR), JoinSurrogates(lone_is_error=True)],
    encode_cesu8_unit)

MUTF_8 = Encoding(
    "mutf-8", ("replace", "strict"), ("replace", "strict"),
    lambda errors: [ByteDecoder(MUTF8_GRAMMAR), JoinSurrogates(lone_is_error=False)],
    encode_mutf8_unit,
    refused={
        "surrogateescape": "lone surrogates are well-formed Modified UTF-8, so an escape "
                           "U+DC80..U+DCFF could not be told from one",
        "surrogatepass": "lone surrogates are well-formed Modified UTF-8 already",
    })
