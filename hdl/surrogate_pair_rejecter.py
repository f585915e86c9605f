"""The WTF-8 decoding stage: a trail surrogate right after a lead surrogate is an error."""

from .codepoint_filter import CodepointFilter
from .error_kind import ErrorKind


__all__ = ["SurrogatePairRejecter"]


class SurrogatePairRejecter(CodepointFilter):
    """WTF-8's constraint on generalized UTF-8 (the WTF-8 specification): a trail surrogate
    U+DC00..U+DFFF decoded directly after a lead surrogate U+D800..U+DBFF (both well-formed) is
    ill-formed, since the pair must be written as its supplementary code point's 4-byte
    sequence. It becomes U+FFFD, ``SURROGATE`` (one maximal subpart: its 3-byte sequence is
    complete); the lead before it stays the lone surrogate it is. The reference's
    ``RejectSurrogatePairs``.

    Ports, latency (:attr:`LATENCY` = 2), throughput: :class:`~.codepoint_filter.CodepointFilter`.
    State: one flip-flop, "the previous output of the message is a well-formed lead surrogate".
    LUT depth: the surrogate tests are two LUT4 levels over 11 + 1 input register bits.
    """

    def rule(self, x, state):
        high = x.ok & (x.codepoint[11:21] == 0xD800 >> 11)   # D800..DFFF, well-formed
        lead, trail = high & ~x.codepoint[10], high & x.codepoint[10]
        return lead, 0, (state & trail, ErrorKind.SURROGATE)
