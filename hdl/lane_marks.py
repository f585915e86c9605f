"""Marks a one-lane decoder computes beside its lane for an encoding of the UTF-8 family.

A byte order mark at a message's start and a WTF-8 surrogate pair are facts of a few bytes in a
row, so the decoder's lane (:mod:`~utf8_gateware.hdl.decoder_lane`) can compute them as it
computes everything else: stage by stage, each stage from the byte's own facts and the facts of
the byte before it (a *history*: the latest valid byte's facts, kept across bubbles, cleared at
the end of a message). :class:`ByteMarks` makes such registers beside stages ``A`` .. ``D``;
each is one LUT4 of flip-flops (a history adds its keep multiplexer and its synchronous reset),
so a mark costs a few flip-flops and no LUT level. The users mark a byte in stage ``D``, and
stage ``E`` hides or rejects its scalar (:func:`~utf8_gateware.hdl.decoder_lane.stage_e`).
"""

from types import SimpleNamespace


__all__ = ["ByteMarks", "surrogate_sequences"]


class ByteMarks:
    """Registers beside the one-lane decoder's stages ``a``, ``b``, ``c`` (the
    :class:`~utf8_gateware.hdl.decoder_lane.Stage` objects) of the pipeline ``pipe``; ``byte``
    is the input byte that stage ``A`` registers (8 bits)."""

    def __init__(self, pipe, byte, a, b, c):
        self.pipe, self.byte = pipe, byte
        self.stages = {"a": a, "b": b, "c": c}
        self._nibbles = {}

    def nibble(self, half, value):
        """Stage ``A``: whether the byte's ``half`` (``"hi"``, ``"lo"``) nibble is ``value``:
        the lane's own predicate register where its classifier has one (a second register of
        the same LUT would keep that LUT out of the flip-flops' logic cells), else a new one."""
        a = self.stages["a"]
        nibble = "high" if half == "hi" else "low"
        for index, (n, values) in enumerate(a.tables.classifier.predicates):
            if n == nibble and values in ({value}, frozenset(range(16)) - {value}):
                reg = a.lanes[0].p[index]
                return reg if values == {value} else ~reg
        if (half, value) not in self._nibbles:
            bits = self.byte[4:8] if half == "hi" else self.byte[0:4]
            self._nibbles[half, value] = self.pipe.data(f"mark_a_{half}{value:x}",
                                                        bits == value)
        return self._nibbles[half, value]

    def byte_is(self, value):
        """Stage ``A`` registers whose AND is "the byte is ``value``"."""
        return self.nibble("hi", value >> 4) & self.nibble("lo", value & 0xF)

    def before(self, stage, name, value):
        """The ``value`` (of stage ``stage``'s registers) of the message's previous valid byte,
        for the next stage: a history register (0 at a message's start)."""
        s = self.stages[stage]
        return self.pipe.history(f"mark_{name}", [value], [~s.bubble], s.bubble, s.beat_vl)

    def fact(self, name, value):
        """A stage-``D`` register of ``value`` (of stage ``C``'s registers), 0 for a bubble."""
        return self.pipe.fact(f"mark_d_{name}", value, self.stages["c"].lanes[0].nv)


def surrogate_sequences(marks):
    """The surrogate sequences of generalized UTF-8 (ED A0..AF 80..BF: a lead, ED B0..BF 80..BF:
    a trail), for grammars in which ED takes every continuation byte (WTF-8, CESU-8, Modified
    UTF-8). Returns a namespace of Values of stage ``C``'s registers and histories, for stage
    ``D``: ``lead``, ``trail`` (the byte completes a lead, a trail sequence); ``ed``, ``b0``
    (stage ``C`` registers: the byte is ED, is in B0..BF)."""
    pipe, c = marks.pipe, marks.stages["c"].lanes[0]
    ed = pipe.data("mark_b_ed", marks.byte_is(0xED))
    a0 = pipe.data("mark_b_a0", marks.nibble("hi", 0xA))
    b0 = pipe.data("mark_b_b0", marks.nibble("hi", 0xB))
    after_ed = marks.before("b", "ch_ed", ed)
    lead2 = pipe.data("mark_c_lead2", after_ed & a0)     # ED A0..AF
    trail2 = pipe.data("mark_c_trail2", after_ed & b0)   # ED B0..BF
    return SimpleNamespace(
        lead=marks.before("c", "dh_lead2", lead2) & c.cont,
        trail=marks.before("c", "dh_trail2", trail2) & c.cont,
        ed=pipe.data("mark_c_ed", ed), b0=pipe.data("mark_c_b0", b0))
