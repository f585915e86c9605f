"""UTF-16 encoding schemes: ``utf-16-le``, ``utf-16-be`` and ``utf-16`` (with a byte order mark).

The Unicode Standard, section 3.9 (D91: the UTF-16 encoding form; D96-D98: the encoding
schemes; "U+FFFD Substitution"): a code unit is two bytes in the scheme's byte order; a lead
surrogate unit followed by a trail surrogate unit is one supplementary code point; a lone
surrogate unit is ill-formed, one maximal subpart.

Decoding, and the choices where sources differ:

* ``utf-16-le``/``utf-16-be``: a leading FF FE / FE FF is U+FEFF, kept (D96, D97; CPython).
* ``utf-16``: a leading FE FF (big-endian) or FF FE (little-endian) selects the byte order and
  is removed; without one the bytes are big-endian (D98: "in the absence of a higher-level
  protocol"; ICU and Java agree; CPython reads the machine's own order, WHATWG little-endian).
  Only the first two bytes can be a byte order mark.
* A lone surrogate unit: ``SURROGATE``; one U+FFFD (``replace``); the surrogate itself, flagged
  ``SURROGATE`` (``surrogatepass``).
* An odd trailing byte: ``TRUNCATED``, one U+FFFD (CPython, WHATWG). If a lead surrogate unit
  comes just before it, the two are one maximal subpart (the odd byte may be the start of the
  lead's trail): one U+FFFD, ``TRUNCATED`` (CPython, WHATWG); with ``surrogatepass`` the lead is
  passed through and the odd byte is the error (CPython).
* ``surrogatepass`` stops (raises) at anything but a lone surrogate, like ``strict`` (CPython).

Encoding takes code points: a scalar value is one or two code units; a surrogate code point is
``SURROGATE`` (U+FFFD with ``replace``, left out with ``strict``, written as its own code unit
with ``surrogatepass``); a value of 0x110000 or more is ``TOO_LARGE`` (U+FFFD with ``replace``,
left out otherwise; CPython's own ``replace`` writes ``?``, we write U+FFFD as the WHATWG
encoders do). ``utf-16`` writes FE FF and big-endian units (D98 allows either order; this is the
order it reads without a mark; CPython writes the machine's order).

No ``surrogateescape``: an escape U+DC80..U+DCFF stands for one byte 80..FF, but the bytes of a
lone surrogate unit or of an odd trailing byte can be anything.
"""

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim.reference import Piece
from .codec import Encoding, substitute
from .surrogates import (BYTE_ORDER_MARK, JoinSurrogates, StripByteOrderMark, is_surrogate,
                         split)


__all__ = ["CodeUnits", "UTF_16_LE", "UTF_16_BE", "UTF_16", "encoded_beats"]


class CodeUnits:
    """The byte stage of UTF-16: every two bytes are one code unit in ``byteorder``
    (``"little"``, ``"big"``, or ``None``: little if the first two bytes of the stream are FF FE,
    else big). At the end of the stream an odd byte is one ``TRUNCATED`` piece."""
    def __init__(self, byteorder):
        self.byteorder = byteorder
        self._order = byteorder
        self._odd = b""
        self._offset = 0   # the offset of the next whole code unit

    def feed(self, data):
        data = self._odd + bytes(data)
        if self._order is None and len(data) >= 2:
            self._order = "little" if data[:2] == b"\xff\xfe" else "big"
        out = []
        for index in range(0, len(data) - 1, 2):
            pair = data[index:index + 2]
            out.append(Piece(int.from_bytes(pair, self._order), ErrorKind.NONE, pair,
                             self._offset))
            self._offset += 2
        self._odd = data[len(data) & ~1:]
        return out

    def finish(self):
        out = [Piece(None, ErrorKind.TRUNCATED, self._odd, self._offset)] if self._odd else []
        self._order, self._odd, self._offset = self.byteorder, b"", 0
        return out


_POLICIES = ("replace", "strict", "surrogatepass")
_REFUSED = {"surrogateescape": "an escape U+DC80..U+DCFF stands for one byte 80..FF, but the "
                               "bytes of an ill-formed UTF-16 unit can be anything"}


def _decoder_stages(byteorder, strip_byte_order_mark=False):
    def stages(errors):
        return [CodeUnits(byteorder),
                JoinSurrogates(lone_is_error=True, merge_truncated=errors != "surrogatepass"),
                *([StripByteOrderMark()] if strip_byte_order_mark else [])]
    return stages


def _unit_encoder(byteorder):
    replacement = (0xFFFD).to_bytes(2, byteorder)

    def encode_unit(unit, errors):
        """One code point in UTF-16 (in ``byteorder``) under ``errors``."""
        if unit >= 0x110000:
            return substitute(errors, replacement), ErrorKind.TOO_LARGE
        if is_surrogate(unit) and errors != "surrogatepass":
            return substitute(errors, replacement), ErrorKind.SURROGATE
        if unit < 0x10000:
            return unit.to_bytes(2, byteorder), ErrorKind.NONE
        lead, trail = split(unit)
        return lead.to_bytes(2, byteorder) + trail.to_bytes(2, byteorder), ErrorKind.NONE
    return encode_unit


UTF_16_LE = Encoding("utf-16-le", _POLICIES, _POLICIES, _decoder_stages("little"),
                     _unit_encoder("little"), refused=_REFUSED)

UTF_16_BE = Encoding("utf-16-be", _POLICIES, _POLICIES, _decoder_stages("big"),
                     _unit_encoder("big"), refused=_REFUSED)

UTF_16 = Encoding("utf-16", _POLICIES, _POLICIES, _decoder_stages(None, True),
                  _unit_encoder("big"), prefix=BYTE_ORDER_MARK.to_bytes(2, "big"),
                  refused=_REFUSED)


def encoded_beats(codepoint, errors, byteorder="little", size=2):
    """What a UTF-16 encoding stage writes for one code point under ``errors``: ``[(value,
    ErrorKind)]``, ``size``-byte values (2: code units, 1: bytes in ``byteorder``), the error kind
    on the first and ``NONE`` on the others; a code point the policy leaves out (``strict``) is
    one marker beat, value 0 and its kind."""
    encoding = UTF_16_LE if byteorder == "little" else UTF_16_BE
    data, kind = encoding.encode_unit(codepoint, errors)
    values = [int.from_bytes(data[k:k + size], byteorder)
              for k in range(0, len(data), size)] or [0]
    return [(value, kind if index == 0 else ErrorKind.NONE) for index, value in enumerate(values)]
