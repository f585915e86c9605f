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
"""

from dataclasses import dataclass

from .error_kind import ErrorKind


__all__ = [
    "Lead", "ASCII", "CONTINUATION", "LEADS", "START_ERRORS", "MAX_LENGTH",
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

#: The longest sequence.
MAX_LENGTH = max(lead.length for lead in LEADS)


def _check():
    starts = [ASCII, *(lead.bytes for lead in LEADS), *(r for r, _ in START_ERRORS)]
    covered = sorted(byte for r in starts for byte in r)
    assert covered == list(range(256)), "every byte is exactly one kind of start"
    for lead in LEADS:
        assert set(lead.second) <= set(CONTINUATION)


_check()


def _cut(ranges, whole):
    """``whole`` cut at every boundary of ``ranges`` (a list of adjacent ranges)."""
    cuts = sorted({whole.start, whole.stop} |
                  {bound for r in ranges for bound in (r.start, r.stop)
                   if whole.start <= bound <= whole.stop})
    return tuple(range(lo, hi) for lo, hi in zip(cuts, cuts[1:]))


#: The continuation bytes in the ranges some lead's second byte needs: 80..8F, 90..9F, A0..BF.
CONTINUATION_RANGES = _cut([lead.second for lead in LEADS], CONTINUATION)


def continuation_code(byte):
    """1 + the index of ``byte``'s range in :data:`CONTINUATION_RANGES`, or 0."""
    for index, r in enumerate(CONTINUATION_RANGES):
        if byte in r:
            return index + 1
    return 0


def lead_codes(length):
    """The classes of leads of ``length``: a tuple of ``(byte set, second range, range
    error)``, leads with the same second range and error merged. A lead's code for this length
    is its class's index plus one."""
    classes = {}
    for lead in LEADS:
        if lead.length == length:
            key = (lead.second, lead.range_error)
            classes.setdefault(key, set()).update(lead.bytes)
    return tuple((frozenset(members), second, error)
                 for (second, error), members in classes.items())


def lead_code(byte, length):
    """``byte``'s lead code for ``length`` (see :func:`lead_codes`), or 0."""
    for index, (members, _, _) in enumerate(lead_codes(length)):
        if byte in members:
            return index + 1
    return 0


def second_byte_table(length):
    """``{(lead code, continuation code): (allowed, range_error)}`` for ``length``, for every
    non-zero pair: whether a byte of the continuation range may follow a lead of the class, and
    if not, the error the lone lead then is."""
    table = {}
    for code, (_, second, error) in enumerate(lead_codes(length), start=1):
        for q, r in enumerate(CONTINUATION_RANGES, start=1):
            allowed = set(r) <= set(second)
            assert allowed or not set(r) & set(second), "ranges are cut at every boundary"
            table[code, q] = (allowed, None if allowed else error)
    return table


def start_error(byte):
    """The error of ``byte`` examined as a start, or ``ErrorKind.NONE``."""
    for r, kind in START_ERRORS:
        if byte in r:
            return kind
    return ErrorKind.NONE


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
