"""WTF-8 (Simon Sapin, "The WTF-8 encoding"): UTF-8 extended to the code points of potentially
ill-formed UTF-16, i.e. with lone surrogates.

Well-formed WTF-8 is generalized UTF-8 (Table 3-7 with ED followed by 80..BF: surrogate code
points as 3-byte sequences) in which no lead surrogate sequence (ED A0..AF 80..BF) is directly
followed by a trail surrogate sequence (ED B0..BF 80..BF): such a pair must be written as the
4-byte sequence of its supplementary code point.

Decoding: the specification defines it for well-formed input only. Choices for ill-formed
input: maximal subparts of generalized UTF-8 as in UTF-8 (same kinds); a trail surrogate
sequence directly after a lead surrogate sequence is one ``SURROGATE`` error (it is a complete
sequence: one U+FFFD), and the lead before it stays the lone surrogate it is (ED A0 80 ED B0 80
is U+D800 U+FFFD; ``strict`` reports offset 3).

Encoding (the specification's "Encoding"): code points, any value below 0x110000; a lead
surrogate directly followed by a trail surrogate in the input is joined into the pair's
supplementary code point (so encoding potentially ill-formed UTF-16 read as code points is
lossless, and the output is always well-formed); 0x110000 and above are ``TOO_LARGE``.

Policies: ``replace`` and ``strict``. A lone surrogate is well-formed WTF-8, so an escape
U+DC80..U+DCFF could not be told from one (no ``surrogateescape``), and ``surrogatepass`` would
change nothing.
"""

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim.reference import ByteDecoder, sequence_bytes, utf8_length
from .codec import Encoding, substitute
from .surrogates import RejectSurrogatePairs
from .utf8 import GENERALIZED


__all__ = ["WTF_8"]


_REPLACEMENT = sequence_bytes(0xFFFD, 3)


def encode_unit(unit, errors):
    """One code point (pairs already joined) in WTF-8 under ``errors``."""
    if unit >= 0x110000:
        return substitute(errors, _REPLACEMENT), ErrorKind.TOO_LARGE
    return sequence_bytes(unit, utf8_length(unit)), ErrorKind.NONE


WTF_8 = Encoding(
    "wtf-8", ("replace", "strict"), ("replace", "strict"),
    lambda errors: [ByteDecoder(GENERALIZED), RejectSurrogatePairs()],
    encode_unit, join_pairs=True,
    refused={
        "surrogateescape": "lone surrogates are well-formed WTF-8, so an escape "
                           "U+DC80..U+DCFF could not be told from one",
        "surrogatepass": "lone surrogates are well-formed WTF-8 already",
    })
