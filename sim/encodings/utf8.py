"""UTF-8 and ``utf-8-sig``: the Unicode Standard's UTF-8 with every error policy, and CPython's
byte-order-mark variant.

``utf-8`` is :mod:`utf8_gateware.sim.reference` (Table 3-7, one error per maximal subpart) with
two more policies:

* ``strict``: the first maximal subpart raises
  :class:`~utf8_gateware.sim.reference.DecodeError`; encoding leaves invalid units out and
  reports each (as the reference model always did).
* ``surrogatepass`` (as CPython): decoding reads *generalized* UTF-8 (Table 3-7 with ED
  followed by 80..BF, so ED A0..BF 80..BF is a surrogate code point U+D800..U+DFFF); each
  surrogate is passed through on its own (pairs are not joined), flagged ``SURROGATE``; any
  other ill-formed input raises as with ``strict``. Encoding writes a surrogate as its 3-byte
  sequence; a value of 0x110000 or more is left out and reported.

``utf-8-sig`` (CPython's codec; The Unicode Standard D95 allows a byte order mark in the UTF-8
encoding scheme): decoding drops one leading EF BB BF (a U+FEFF anywhere else is kept);
encoding writes EF BB BF before every message, an empty one too. Error positions count the
byte order mark's bytes (CPython's ``utf-8-sig`` counts them from after it). With
``surrogateescape``, decoding then encoding gives back an input that starts with EF BB BF, and
any other input with EF BB BF in front.
"""

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim import reference
from utf8_gateware.sim.reference import UTF8, ByteDecoder, sequence_bytes
from .codec import Encoding
from .surrogates import BYTE_ORDER_MARK, FlagSurrogates, StripByteOrderMark, is_surrogate


__all__ = ["GENERALIZED", "UTF_8", "UTF_8_SIG"]


#: Generalized UTF-8 (WTF-8 specification, Table 3): Table 3-7 with surrogate code points.
GENERALIZED = UTF8.derive("generalized utf-8", second_ranges={0xED: (0x80, 0xBF)})

POLICIES = ("replace", "strict", "surrogateescape", "surrogatepass")


def _decoder_stages(errors):
    if errors == "surrogatepass":
        return [ByteDecoder(GENERALIZED), FlagSurrogates()]
    return [ByteDecoder(UTF8)]


def encode_unit(unit, errors):
    """One code unit in UTF-8 under ``errors`` (any of :data:`POLICIES`)."""
    if errors == "surrogatepass":
        if is_surrogate(unit):
            return sequence_bytes(unit, 3), ErrorKind.NONE
        errors = "strict"
    return reference.encode_unit(unit, errors)


UTF_8 = Encoding(
    "utf-8", POLICIES, POLICIES, _decoder_stages, encode_unit)

UTF_8_SIG = Encoding(
    "utf-8-sig", POLICIES, POLICIES,
    lambda errors: [*_decoder_stages(errors), StripByteOrderMark()], encode_unit,
    prefix=sequence_bytes(BYTE_ORDER_MARK, 3))
