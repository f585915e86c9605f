"""The WTF-8 decoding stage: a trail surrogate right after a lead surrogate is an error."""

from .lane_marks import surrogate_sequences


__all__ = ["surrogate_pair"]


def surrogate_pair(marks):
    """Marks WTF-8's ill-formed pair (the WTF-8 specification): the last byte of a trail
    surrogate sequence (ED B0..BF 80..BF) directly after a lead surrogate sequence
    (ED A0..AF 80..BF), whose scalar the decoder then rejects: U+FFFD, ``SURROGATE`` (one
    maximal subpart: its 3-byte sequence is complete), since the pair must be written as its
    supplementary code point's 4-byte sequence. The lead before it stays the lone surrogate it
    is. The reference's ``RejectSurrogatePairs``. ``marks``: the decoder's
    :class:`~utf8_gateware.hdl.lane_marks.ByteMarks`; returns the stage-``D`` register.

    Why in the byte decoder rather than after it: "the previous output is a well-formed lead
    surrogate" is, for a trail sequence, "the three bytes before it are a lead sequence" (its
    first two bytes have no outputs, and nothing is pending between two complete sequences),
    a fact of six bytes in a row. Three states kept in histories beside stage ``D`` follow it
    one byte at a time (a lead just completed; then ED; then B0..BF), one LUT each, and the
    mark is the third state and a continuation byte: about fifteen flip-flops, no latency, no LUT
    level.
    """
    seq = surrogate_sequences(marks)
    c = marks.stages["c"].lanes[0]
    after_lead = marks.before("c", "dh_after_lead", seq.lead)
    then_ed = marks.before("c", "dh_then_ed", after_lead & seq.ed)
    then_b0 = marks.before("c", "dh_then_b0", then_ed & seq.b0)
    return marks.fact("pair", then_b0 & c.cont)
