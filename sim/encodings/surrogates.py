"""Surrogates: UTF-16 code units and code points, and the decoding stages that act on them.

The Unicode Standard, section 3.9 (D71-D75, D91): a *lead* (high) surrogate is U+D800..U+DBFF,
a *trail* (low) surrogate U+DC00..U+DFFF; in UTF-16 a lead code unit followed by a trail code
unit is one supplementary code point, and a surrogate in any other place (an *unpaired* or
*lone* surrogate) is ill-formed. A *potentially ill-formed* UTF-16 string (the WTF-8
specification's term: JavaScript strings, Java strings, Windows file names) is any sequence of
16-bit code units; read as code points it is the same sequence with every pair joined, so it
never contains a lead surrogate code point directly followed by a trail one.

The stages here take and return :class:`~utf8_gateware.sim.reference.Piece` s (a byte decoder
of an encoding produces them; see :mod:`.codec`). Each has ``feed(pieces)`` and ``finish()``.
"""

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim.reference import Piece


__all__ = [
    "BYTE_ORDER_MARK", "is_surrogate", "is_lead", "is_trail", "join_pair", "split",
    "utf16_units", "codepoints_from_utf16",
    "JoinSurrogates", "FlagSurrogates", "RejectSurrogatePairs", "StripByteOrderMark",
]


BYTE_ORDER_MARK = 0xFEFF


def is_surrogate(value):
    return 0xD800 <= value <= 0xDFFF


def is_lead(value):
    return 0xD800 <= value <= 0xDBFF


def is_trail(value):
    return 0xDC00 <= value <= 0xDFFF


def join_pair(lead, trail):
    """The supplementary code point that the pair ``lead``, ``trail`` stands for."""
    return 0x10000 + ((lead - 0xD800) << 10) + (trail - 0xDC00)


def split(value):
    """The UTF-16 code units of a code point below 0x110000: itself if it is below 0x10000 (a
    surrogate code point too), else its surrogate pair."""
    if value < 0x10000:
        return (value,)
    value -= 0x10000
    return (0xD800 + (value >> 10), 0xDC00 + (value & 0x3FF))


def utf16_units(codepoints):
    """Encode code points below 0x110000 to potentially ill-formed UTF-16 (WTF-8 spec,
    "Encoding to potentially ill-formed UTF-16"): supplementary code points become pairs, every
    other code point (a surrogate too) one code unit."""
    return [unit for value in codepoints for unit in split(value)]


def codepoints_from_utf16(units):
    """Decode potentially ill-formed UTF-16 to code points (WTF-8 spec, "Decoding from
    potentially ill-formed UTF-16"): each lead surrogate directly followed by a trail surrogate
    is joined; every other code unit (a lone surrogate too) is its own code point."""
    out, index = [], 0
    while index < len(units):
        unit = units[index]
        if is_lead(unit) and index + 1 < len(units) and is_trail(units[index + 1]):
            out.append(join_pair(unit, units[index + 1]))
            index += 2
        else:
            out.append(unit)
            index += 1
    return out


def _well_formed(piece, test):
    return piece.kind is ErrorKind.NONE and test(piece.value)


class JoinSurrogates:
    """Joins surrogate pairs of code units into supplementary code points (UTF-16, and the
    CESU-8 family, whose byte sequences stand for UTF-16 code units).

    A well-formed lead surrogate directly followed by a well-formed trail surrogate becomes one
    piece (the pair's code point, the bytes of both). A surrogate in any other place is *lone*:
    with ``lone_is_error`` it becomes an ill-formed piece of kind ``SURROGATE`` whose value is
    the surrogate (so ``surrogatepass`` passes it through, and ``replace`` gives one U+FFFD for
    the whole surrogate: it is one code unit, the maximal subpart of UTF-16); without it, it
    stays well-formed (Java's Modified UTF-8). With ``merge_truncated`` a lead surrogate
    followed by a ``TRUNCATED`` piece (UTF-16: the input ended one byte into the next code
    unit, which could have been the trail) is one ``TRUNCATED`` piece.
    """
    def __init__(self, lone_is_error=True, merge_truncated=False):
        self.lone_is_error = lone_is_error
        self.merge_truncated = merge_truncated
        self._lead = None

    def _lone(self, piece):
        if self.lone_is_error:
            return Piece(piece.value, ErrorKind.SURROGATE, piece.data, piece.start)
        return piece

    def feed(self, pieces):
        out, none = [], ErrorKind.NONE
        for piece in pieces:
            value = piece.value if piece.kind is none else -1   # -1: not a well-formed value
            lead, self._lead = self._lead, None
            if lead is not None:
                if 0xDC00 <= value <= 0xDFFF:
                    out.append(Piece(join_pair(lead.value, value), none,
                                     lead.data + piece.data, lead.start))
                    continue
                if self.merge_truncated and piece.kind is ErrorKind.TRUNCATED:
                    out.append(Piece(None, ErrorKind.TRUNCATED, lead.data + piece.data,
                                     lead.start))
                    continue
                out.append(self._lone(lead))
            if 0xD800 <= value <= 0xDBFF:
                self._lead = piece
            elif 0xDC00 <= value <= 0xDFFF:
                out.append(self._lone(piece))
            else:
                out.append(piece)
        return out

    def finish(self):
        lead, self._lead = self._lead, None
        return [] if lead is None else [self._lone(lead)]


class FlagSurrogates:
    """Marks every well-formed surrogate as a ``SURROGATE`` error that keeps its value (UTF-8
    with ``surrogatepass``, as CPython: each surrogate passes on its own, pairs are not
    joined)."""
    def feed(self, pieces):
        return [Piece(piece.value, ErrorKind.SURROGATE, piece.data, piece.start)
                if _well_formed(piece, is_surrogate) else piece for piece in pieces]

    def finish(self):
        return []


class RejectSurrogatePairs:
    """WTF-8's constraint: a trail surrogate sequence directly after a lead surrogate sequence
    is ill-formed (the pair must be the 4-byte sequence of its supplementary code point). The
    trail's sequence becomes one ``SURROGATE`` error (a complete sequence of generalized UTF-8,
    so it is one maximal subpart, as a lone surrogate is one in UTF-16); the lead before it
    stays a well-formed (lone) lead surrogate."""
    def __init__(self):
        self._after_lead = False

    def feed(self, pieces):
        out = []
        for piece in pieces:
            if self._after_lead and _well_formed(piece, is_trail):
                piece = Piece(None, ErrorKind.SURROGATE, piece.data, piece.start)
            self._after_lead = _well_formed(piece, is_lead)
            out.append(piece)
        return out

    def finish(self):
        self._after_lead = False
        return []


class StripByteOrderMark:
    """Drops the first piece of a stream if it is a well-formed U+FEFF (a byte order mark):
    CPython's ``utf-8-sig`` and ``utf-16`` decoders, The Unicode Standard D95 and D98."""
    def __init__(self):
        self._first = True

    def feed(self, pieces):
        if self._first and pieces:
            self._first = False
            if pieces[0].kind is ErrorKind.NONE and pieces[0].value == BYTE_ORDER_MARK:
                return pieces[1:]
        return pieces

    def finish(self):
        self._first = True
        return []
