"""The ``utf-8-sig`` decoding stage: one leading byte order mark dropped per message."""

__all__ = ["byte_order_mark"]


def byte_order_mark(marks):
    """Marks the BF of EF BB BF at the start of a message, whose scalar (U+FEFF) the decoder
    then hides: CPython's ``utf-8-sig`` decoder, the reference's ``StripByteOrderMark`` (The
    Unicode Standard D95). ``marks``: the decoder's
    :class:`~utf8_gateware.hdl.lane_marks.ByteMarks`; returns the stage-``D`` register.

    Why the decoded U+FEFF of the bytes, and only the third byte's: EF BB BF is a complete
    well-formed sequence, so a message that starts with it decodes to U+FEFF followed by what
    the rest decodes to alone (a maximal subpart never reaches back across a complete
    sequence), and a message that does not start with it never decodes to a well-formed U+FEFF
    first (an error output, a U+FFFD or an escape, is not a mark). Hiding the scalar of a
    leading EF BB BF is therefore exactly dropping a leading well-formed U+FEFF; the first two
    bytes never had an output of their own, and no burst lands in the third's slot (nothing is
    pending before or after a complete sequence). A message of exactly EF BB BF has no output,
    ``last`` with it (the reference gives it no output either).

    Cost: eight flip-flops beside the lane, each one LUT of flip-flops (the nibble tests in
    stage ``A``; "EF first in its message", BB, BF in ``B``; "EF BB" in ``C``; the mark in
    ``D``), no latency and no LUT level.
    """
    pipe = marks.pipe
    seen = marks.before("a", "bh_seen", 1)      # a byte of this message came before
    first_ef = pipe.data("mark_b_ef", marks.byte_is(0xEF) & ~seen)
    bb = pipe.data("mark_b_bb", marks.byte_is(0xBB))
    bf = pipe.data("mark_b_bf", marks.byte_is(0xBF))
    efbb = pipe.data("mark_c_efbb", marks.before("b", "ch_ef", first_ef) & bb)
    c_bf = pipe.data("mark_c_bf", bf)
    return marks.fact("bom", marks.before("c", "dh_efbb", efbb) & c_bf)
