"""The UTF-8 byte grammar as data: Table 3-7 of The Unicode Standard (section 3.9) and the error
kinds of the bytes that break it.

This module is plain Python. The decoder's classification logic is generated from it
(:mod:`utf8_gateware.hdl.decoder_lane`), and the formal specification model may use it. The
reference model (:mod:`utf8_gateware.sim.reference`) is deliberately *not* built on it: it is
written from the standard on its own, and CPython's codec checks both, so a mistake here cannot
hide behind a shared table.

Well-formed sequences (Table 3-7)::

    00..7F
    C2..DF  80..BF
    E0      A0..BF  80..BF
    E1..EC  80..BF  80..BF
    ED      80..9F  80..BF
    EE..EF  80..BF  80..BF
    F0      90..BF  80..BF  80..BF
    F1..F3  80..BF  80..BF  80..BF
    F4      80..8F  80..BF  80..BF

Every lead allows any continuation byte (80..BF) after its second byte; only the second byte's
range depends on the lead. A byte examined as the start of a sequence is ASCII, a lead, or an
error of its own (:data:`START_ERRORS`). A lone lead followed by a continuation byte outside its
second-byte range is an error whose kind depends on the lead (:attr:`Lead.range_error`).

The hardware wants these facts as small codes that few LUT inputs can combine:

* :data:`CONTINUATION_RANGES`: the continuation bytes cut into the ranges whose boundaries some
  lead's second-byte range needs (80..8F, 90..9F, A0..BF); a byte's *continuation code* is its
  range's index plus one (0: not a continuation byte).
* :func:`lead_codes`: for each sequence length, the leads of that length with the same second
  range and error merged into one class; a byte's *lead code* for a length is its class's index
  plus one (0: not a lead of that length).
* :func:`second_byte_table`: (lead code, continuation code) -> whether the byte is an allowed
  second byte, or the error a lone lead then is.
* :func:`nibble_groups`: a set of bytes as a union of rectangles (a set of high nibbles times a
  set of low nibbles), so that membership is an AND of two functions of four bits each, one LUT
  level each.

The grammar is a value, :class:`ByteGrammar`; the module-level names above are those of
:data:`UTF8`. The other byte grammars of the family are variants of it, written as data
(:data:`GRAMMARS`), from which the same decoder lane is generated:

:data:`GENERALIZED` (WTF-8's bytes)
    ED allows 80..BF: the surrogate code points U+D800..U+DFFF are well-formed 3-byte sequences.
:data:`CESU8` (CESU-8's bytes)
    :data:`GENERALIZED` without 4-byte sequences: F0..F4 start none (``INVALID_BYTE``).
:data:`MUTF8` (Modified UTF-8's bytes)
    :data:`CESU8` with C0 80 for U+0000: C0 is a lead whose only second byte is 80 (else
    ``OVERLONG``), and a raw 00 is ``INVALID_BYTE``.

They equal the reference model's grammars (``utf8_gateware.sim.encodings``), which are written
from the specifications on their own; a test compares them byte by byte.
"""

from dataclasses import dataclass
from functools import cached_property

from .error_kind import ErrorKind


__all__ = [
    "Lead", "ByteGrammar", "ASCII", "CONTINUATION", "LEADS", "START_ERRORS", "MAX_LENGTH",
    "UTF8", "GENERALIZED", "CESU8", "MUTF8", "GRAMMARS",
    "CONTINUATION_RANGES", "continuation_code", "lead_codes", "lead_code", "second_byte_table",
    "start_error", "nibble_groups",
]


@dataclass(frozen=True)
class Lead:
    """A class of lead bytes: ``bytes`` start a sequence of ``length`` bytes whose second byte
    lies in ``second``; a continuation byte outside ``second`` right after the lead ends it as a
    ``range_error`` (``TRUNCATED`` where the standard gives no more specific kind)."""
    bytes: range
    length: int
    second: range
    range_error: ErrorKind = ErrorKind.TRUNCATED


ASCII = range(0x00, 0x80)
CONTINUATION = range(0x80, 0xC0)


def _cut(ranges, whole):
    """``whole`` cut at every boundary of ``ranges`` (a list of adjacent ranges)."""
    cuts = sorted({whole.start, whole.stop} |
                  {bound for r in ranges for bound in (r.start, r.stop)
                   if whole.start <= bound <= whole.stop})
    return tuple(range(lo, hi) for lo, hi in zip(cuts, cuts[1:]))


@dataclass(frozen=True)
class ByteGrammar:
    """A byte grammar of the shape of Table 3-7: ``single`` (the bytes that stand alone),
    ``leads`` (:class:`Lead` s: every lead allows any continuation byte 80..BF after its second
    byte) and ``start_errors`` (``(range, ErrorKind)``: the bytes that are errors when examined
    as the start of a sequence). Every byte is exactly one of these."""
    name: str
    single: range
    leads: tuple
    start_errors: tuple

    def __post_init__(self):
        starts = [self.single, *(lead.bytes for lead in self.leads),
                  *(r for r, _ in self.start_errors)]
        covered = sorted(byte for r in starts for byte in r)
        assert covered == list(range(256)), f"{self.name}: every byte is one kind of start"
        for lead in self.leads:
            assert set(lead.second) <= set(CONTINUATION)
            assert 2 <= lead.length <= 4

    @property
    def max_length(self):
        """The longest sequence."""
        return max(lead.length for lead in self.leads)

    @cached_property
    def continuation_ranges(self):
        """The continuation bytes cut into the ranges some lead's second byte needs (for
        :data:`UTF8`: 80..8F, 90..9F, A0..BF)."""
        return _cut([lead.second for lead in self.leads], CONTINUATION)

    def continuation_code(self, byte):
        """1 + the index of ``byte``'s range in :attr:`continuation_ranges`, or 0."""
        for index, r in enumerate(self.continuation_ranges):
            if byte in r:
                return index + 1
        return 0

    def lead_codes(self, length):
        """The classes of leads of ``length``: a tuple of ``(byte set, second range, range
        error)``, leads with the same second range and error merged. A lead's code for this
        length is its class's index plus one."""
        classes = {}
        for lead in self.leads:
            if lead.length == length:
                key = (lead.second, lead.range_error)
                classes.setdefault(key, set()).update(lead.bytes)
        return tuple((frozenset(members), second, error)
                     for (second, error), members in classes.items())

    def lead_code(self, byte, length):
        """``byte``'s lead code for ``length`` (see :meth:`lead_codes`), or 0."""
        for index, (members, _, _) in enumerate(self.lead_codes(length)):
            if byte in members:
                return index + 1
        return 0

    def second_byte_table(self, length):
        """``{(lead code, continuation code): (allowed, range_error)}`` for ``length``, for
        every non-zero pair: whether a byte of the continuation range may follow a lead of the
        class, and if not, the error the lone lead then is."""
        table = {}
        for code, (_, second, error) in enumerate(self.lead_codes(length), start=1):
            for q, r in enumerate(self.continuation_ranges, start=1):
                allowed = set(r) <= set(second)
                assert allowed or not set(r) & set(second), "ranges are cut at every boundary"
                table[code, q] = (allowed, None if allowed else error)
        return table

    def start_error(self, byte):
        """The error of ``byte`` examined as a start, or ``ErrorKind.NONE``."""
        for r, kind in self.start_errors:
            if byte in r:
                return kind
        return ErrorKind.NONE


#: Table 3-7's lead bytes.
LEADS = (
    Lead(range(0xC2, 0xE0), 2, CONTINUATION),
    Lead(range(0xE0, 0xE1), 3, range(0xA0, 0xC0), ErrorKind.OVERLONG),
    Lead(range(0xE1, 0xED), 3, CONTINUATION),
    Lead(range(0xED, 0xEE), 3, range(0x80, 0xA0), ErrorKind.SURROGATE),
    Lead(range(0xEE, 0xF0), 3, CONTINUATION),
    Lead(range(0xF0, 0xF1), 4, range(0x90, 0xC0), ErrorKind.OVERLONG),
    Lead(range(0xF1, 0xF4), 4, CONTINUATION),
    Lead(range(0xF4, 0xF5), 4, range(0x80, 0x90), ErrorKind.TOO_LARGE),
)

#: The bytes that are errors when examined as the start of a sequence, and their kinds.
START_ERRORS = (
    (CONTINUATION, ErrorKind.UNEXPECTED_CONTINUATION),
    (range(0xC0, 0xC2), ErrorKind.OVERLONG),        # would be overlong 2-byte forms
    (range(0xF5, 0xFE), ErrorKind.TOO_LARGE),       # legacy leads of values above U+10FFFF
    (range(0xFE, 0x100), ErrorKind.INVALID_BYTE),   # never part of any UTF-8 form
)

#: UTF-8: Table 3-7.
UTF8 = ByteGrammar("utf-8", ASCII, LEADS, START_ERRORS)

#: Generalized UTF-8 (the WTF-8 specification): ED allows every continuation byte, so the
#: surrogate code points are 3-byte sequences.
GENERALIZED = ByteGrammar(
    "generalized utf-8", ASCII,
    tuple(Lead(lead.bytes, 3, CONTINUATION) if lead.range_error is ErrorKind.SURROGATE else lead
          for lead in LEADS),
    START_ERRORS)

#: CESU-8 (Unicode TR #26): generalized UTF-8 without 4-byte sequences.
CESU8 = ByteGrammar(
    "cesu-8", ASCII,
    tuple(lead for lead in GENERALIZED.leads if lead.length < 4),
    (*START_ERRORS, (range(0xF0, 0xF5), ErrorKind.INVALID_BYTE)))

#: Java's Modified UTF-8: CESU-8 with U+0000 as C0 80 and no raw 00.
MUTF8 = ByteGrammar(
    "mutf-8", range(0x01, 0x80),
    (Lead(range(0xC0, 0xC1), 2, range(0x80, 0x81), ErrorKind.OVERLONG), *CESU8.leads),
    ((range(0x00, 0x01), ErrorKind.INVALID_BYTE),
     (CONTINUATION, ErrorKind.UNEXPECTED_CONTINUATION),
     (range(0xC1, 0xC2), ErrorKind.OVERLONG),
     *CESU8.start_errors[2:]))

#: The byte grammar of each decoder encoding.
GRAMMARS = {"utf-8": UTF8, "utf-8-sig": UTF8, "cesu-8": CESU8, "mutf-8": MUTF8,
            "wtf-8": GENERALIZED}

#: The longest sequence.
MAX_LENGTH = UTF8.max_length

#: The continuation bytes in the ranges some lead's second byte needs: 80..8F, 90..9F, A0..BF.
CONTINUATION_RANGES = UTF8.continuation_ranges

continuation_code = UTF8.continuation_code
lead_codes = UTF8.lead_codes
lead_code = UTF8.lead_code
second_byte_table = UTF8.second_byte_table
start_error = UTF8.start_error


def nibble_groups(members):
    """``members`` (a set of byte values) as a union of rectangles: a tuple of ``(high nibbles,
    low nibbles)`` (frozensets of 0..15), the high nibbles of a rectangle being those that share
    the same set of low nibbles. A byte is a member iff, for some rectangle, its high nibble is
    in the first set and its low nibble in the second."""
    by_high = {}
    for high in range(16):
        lows = frozenset(low for low in range(16) if (high << 4 | low) in members)
        if lows:
            by_high.setdefault(lows, set()).add(high)
    return tuple((frozenset(highs), lows) for lows, highs in
                 sorted(by_high.items(), key=lambda item: min(item[1])))
