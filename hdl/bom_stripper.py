"""The ``utf-8-sig`` decoding stage: one leading byte order mark dropped per message."""

from .codepoint_filter import CodepointFilter


__all__ = ["ByteOrderMarkStripper"]


_BYTE_ORDER_MARK = 0xFEFF


class ByteOrderMarkStripper(CodepointFilter):
    """Drops the first output of each message if it is a well-formed U+FEFF: CPython's
    ``utf-8-sig`` decoder, the reference's ``StripByteOrderMark`` (The Unicode Standard D95).

    After a UTF-8 byte decoder, a message's first output is a well-formed U+FEFF exactly when
    the message starts with EF BB BF: an error output (U+FFFD, an escape) is never well-formed,
    and a U+FEFF decoded later in the message is kept. A message of exactly EF BB BF has no
    output, so its ``last`` goes with the mark (the reference gives no output either).

    Ports, latency (:attr:`LATENCY` = 2), throughput: :class:`~.codepoint_filter.CodepointFilter`.
    State: one flip-flop, "past the message's first output". LUT depth: the U+FEFF test is a
    tree of three LUT4 levels over the input register's 21 + 3 bits.
    """

    def rule(self, x, state):
        mark = x.ok & (x.codepoint == _BYTE_ORDER_MARK)
        return 1, ~state & mark, None
