"""Reference model of UTF-8 decoding and encoding, written from the Unicode Standard.

This is the executable specification the gateware is checked against. It is written from
RFC 3629 and The Unicode Standard, section 3.9 (Table 3-7, "Well-Formed UTF-8 Byte Sequences",
and the "maximal subpart" practice of U+FFFD substitution) -- not by calling Python's codec.
CPython's codec is the independent oracle the tests compare this model with.

Decoding
--------
Well-formed sequences (Table 3-7)::

    U+0000..U+007F      00..7F
    U+0080..U+07FF      C2..DF  80..BF
    U+0800..U+0FFF      E0      A0..BF  80..BF
    U+1000..U+CFFF      E1..EC  80..BF  80..BF
    U+D000..U+D7FF      ED      80..9F  80..BF
    U+E000..U+FFFF      EE..EF  80..BF  80..BF
    U+10000..U+3FFFF    F0      90..BF  80..BF  80..BF
    U+40000..U+FFFFF    F1..F3  80..BF  80..BF  80..BF
    U+100000..U+10FFFF  F4      80..8F  80..BF  80..BF

The decoder keeps a *pending prefix*: a lead byte C2..F4 and the continuation bytes it has
accepted so far. Each byte either extends the prefix (and completes a scalar value when the
sequence is full) or, if it is not an allowed next byte, ends the prefix's *maximal subpart*
(one error) and is then examined again as the start of a new sequence. A byte examined as a new
start is ASCII (a scalar), a lead (a new prefix) or an error of its own. At the end of the input
(``finish``) a pending prefix is one ``TRUNCATED`` error.

Error kinds (:class:`~utf8_gateware.hdl.error_kind.ErrorKind`), exactly:

* ``OVERLONG``: C0 or C1; a lone E0 ended by 80..9F; a lone F0 ended by 80..8F.
* ``SURROGATE``: a lone ED ended by A0..BF.
* ``TOO_LARGE``: a lone F4 ended by 90..BF; any of F5..FD.
* ``INVALID_BYTE``: FE or FF.
* ``UNEXPECTED_CONTINUATION``: 80..BF examined as a new start.
* ``TRUNCATED``: a prefix ended by a byte that is not a continuation byte, or by the end of input
  (a prefix of two or more bytes can only be ended that way: every later position allows all of
  80..BF).

With ``errors="replace"`` an error is one U+FFFD; with ``errors="surrogateescape"`` (PEP 383)
each byte ``b`` of the subpart becomes U+DC00+b (always U+DC80..U+DCFF: an undecodable byte is
never ASCII). Every output of an error carries its kind. The result equals CPython's
``bytes.decode("utf-8", errors)``.

Encoding
--------
Input is a sequence of UTF-32 code units (any 32-bit value). A scalar value encodes to 1..4
bytes (the inverse of the table above). Surrogates U+D800..U+DFFF (``SURROGATE``) and values of
0x110000 and more (``TOO_LARGE``) are errors:

* ``errors="replace"``: EF BF BD (U+FFFD).
* ``errors="strict"``: no bytes; the error is reported.
* ``errors="surrogateescape"``: U+DC80..U+DCFF become the single byte 0x80..0xFF (not an error:
  this undoes the decoder's escapes); every other error as ``replace``.

So ``encode(decode(b, "surrogateescape"), "surrogateescape") == b`` for every byte string ``b``.

The machine every encoding of the family reuses
-----------------------------------------------
The decoder is one instance of a table-driven machine: a :class:`Grammar` (the per-byte facts of
a table of the shape of Table 3-7), a :class:`ByteDecoder` that cuts bytes into
:class:`Piece` s (well-formed sequences and maximal subparts, by the rule above), and
:func:`render`, which applies an error policy. :mod:`utf8_gateware.sim.encodings` builds the
other encodings on it (CESU-8, Modified UTF-8, WTF-8, RFC 2279 with other grammars) and adds the
policies ``strict`` and ``surrogatepass``; :func:`decode` and :func:`encode` here keep the UTF-8
model's policies (:data:`DECODE_ERRORS`, :data:`ENCODE_ERRORS`).

Bulk forms
----------
For speed on large inputs (the ``reference`` engine of :mod:`utf8_gateware.sim.engines`), three
functions do the same work on whole buffers with ``bytes.translate`` and the bitwise operations of
Python's integers (each byte, or each 32-bit unit, a lane of one integer) instead of a loop per
byte: :meth:`Grammar.well_formed_spans` (the runs of whole well-formed sequences, from the
grammar's tables), :func:`decode_well_formed` (the values of such a run, from the bit
distribution of Table 3-6) and :func:`encode` (all units at once; :func:`encode_unit` is the
same unit by unit). The per-byte :class:`ByteDecoder` stays the definition; the tests hold the
bulk forms to it and to CPython.
"""

import array
import functools
import re
import sys
from typing import NamedTuple, Sequence

from utf8_gateware.hdl.error_kind import DECODE_ERRORS, ENCODE_ERRORS, ErrorKind, check_policy


__all__ = [
    "DECODE_ERRORS", "ENCODE_ERRORS", "REPLACEMENT_CHARACTER",
    "Decoded", "Decoder", "decode", "decode_to_str",
    "Encoded", "encode_unit", "encode", "count_errors",
    "sequence_length", "second_byte_range", "UTF8_LENGTH_LIMITS", "utf8_length",
    "Grammar", "UTF8", "Piece", "ByteDecoder", "DecodeError", "render",
    "sequence_bytes", "check_unit", "unit_array", "decode_well_formed", "encode_errors",
]


REPLACEMENT_CHARACTER = 0xFFFD
_REPLACEMENT_BYTES    = b"\xef\xbf\xbd"
_ESCAPE_BASE          = 0xDC00


def sequence_length(lead):
    """Length of the well-formed sequence that ``lead`` starts (1..4), or 0 if ``lead`` cannot
    start one (a continuation byte 80..BF, or C0, C1, F5..FF)."""
    if lead < 0x80:
        return 1
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0


def second_byte_range(lead):
    """The inclusive range ``(lo, hi)`` of second bytes that lead ``lead`` (C2..F4) allows."""
    return {
        0xE0: (0xA0, 0xBF),  # below: overlong
        0xED: (0x80, 0x9F),  # above: surrogates
        0xF0: (0x90, 0xBF),  # below: overlong
        0xF4: (0x80, 0x8F),  # above: beyond U+10FFFF
    }.get(lead, (0x80, 0xBF))


# Why a lone lead fails when a continuation byte outside its second-byte range follows it.
_SECOND_BYTE_ERROR = {
    0xE0: ErrorKind.OVERLONG,
    0xF0: ErrorKind.OVERLONG,
    0xED: ErrorKind.SURROGATE,
    0xF4: ErrorKind.TOO_LARGE,
}


def _start_error(byte):
    """The error of ``byte`` examined as a new start, or ``None`` if it is ASCII or a lead."""
    if byte < 0x80:
        return None
    if byte <= 0xBF:
        return ErrorKind.UNEXPECTED_CONTINUATION
    if byte <= 0xC1:
        return ErrorKind.OVERLONG
    if byte <= 0xF4:
        return None
    if byte <= 0xFD:
        return ErrorKind.TOO_LARGE
    return ErrorKind.INVALID_BYTE


def _scalar(sequence):
    """The value of a sequence of 1..6 bytes of the UTF-8 bit distribution (a lead byte with
    ``len(sequence)`` leading ones, then six bits per continuation byte)."""
    value = sequence[0] & (0x7F >> len(sequence))
    for byte in sequence[1:]:
        value = (value << 6) | (byte & 0x3F)
    return value


class Decoded(NamedTuple):
    """One output of the decoder: a scalar value (``error`` is ``NONE``), or an error output
    (U+FFFD or a U+DC80..U+DCFF escape) and its kind."""
    codepoint: int
    error: ErrorKind = ErrorKind.NONE

    def __repr__(self):
        if self.error is ErrorKind.NONE:
            return f"U+{self.codepoint:04X}"
        return f"U+{self.codepoint:04X}!{self.error.label}"


class Grammar:
    """A byte grammar of the shape of Table 3-7, from which :class:`ByteDecoder` cuts a byte
    stream into well-formed sequences and maximal subparts.

    A well-formed sequence is a byte that stands alone, or a lead byte followed by continuation
    bytes 80..BF, as many as the lead byte says; only the second byte's range may be narrower.

    ``lengths``: the length of the sequence each byte starts (1: the byte stands alone; a byte
    that is not listed, or listed with 0, starts none). ``second_ranges``: the inclusive range
    of second bytes a lead byte allows (default 80..BF). ``second_errors``: the kind of error of
    a lone lead byte ended by a continuation byte outside that range. ``start_errors``: the kind
    of a byte that starts no sequence, examined as a new start (default, for 80..BF:
    ``UNEXPECTED_CONTINUATION``). :meth:`derive` makes a grammar from this one with changes.
    """
    def __init__(self, name, lengths, second_ranges=None, second_errors=None, start_errors=None):
        self.name = name
        self.lengths = {byte: length for byte, length in lengths.items() if length}
        self.second_ranges = dict(second_ranges or {})
        self.second_errors = dict(second_errors or {})
        self.start_errors = dict(start_errors or {})
        self._tables = None
        # Per-byte tables for the decoder's inner loop.
        self.length = tuple(self.lengths.get(byte, 0) for byte in range(256))
        self.low, self.high = zip(*(self.second_ranges.get(byte, (0x80, 0xBF))
                                    for byte in range(256)))
        self.second_error = tuple(self.second_errors.get(byte) for byte in range(256))
        self.start_error = tuple(
            None if self.length[byte] else
            self.start_errors.get(byte, ErrorKind.UNEXPECTED_CONTINUATION
                                  if 0x80 <= byte <= 0xBF else None)
            for byte in range(256))
        for byte in range(256):
            if not self.length[byte] and self.start_error[byte] is None:
                raise ValueError(f"grammar {name}: byte {byte:02X} has neither a length nor "
                                 f"a start error")
            if (self.length[byte] > 1 and (self.low[byte], self.high[byte]) != (0x80, 0xBF)
                    and self.second_error[byte] is None):
                raise ValueError(f"grammar {name}: lead {byte:02X} narrows its second byte "
                                 f"but names no error kind")

    def well_formed_spans(self, data, min_length=1):
        """The spans ``(start, stop)`` of ``data`` (of ``min_length`` bytes or more) that are
        runs of whole well-formed sequences, in order, found with a few operations on all bytes
        at once (each byte a lane of 8 bits of one integer) rather than a loop per byte.

        A byte is *ill-formed* if it breaks the table given the 3 bytes before it: it starts no
        sequence and is no continuation byte; it is a continuation byte that no lead byte asks
        for, or outside the second-byte range of the lead before it; it is not a continuation
        byte where a lead byte asks for one. Between two ill-formed bytes, a span runs from the
        first byte that starts a sequence and after which no lead before it asks for a byte, to
        the lead of a sequence the later one cuts short (or to the later one itself); a
        sequence cut short by the end of ``data`` is left out too. Each span is whole sequences
        of the per-byte cut (:class:`ByteDecoder`) of ``data``. (Lengths up to 4 and up to 4
        narrowed second-byte ranges.)"""
        size = len(data)
        if data.isascii():
            return [(0, size)] if size >= min_length else []
        flags, second = self._span_tables()
        every = functools.partial(_repeated, size=size)
        lanes, seconds = _integer(data.translate(flags)), _integer(data.translate(second))
        # Bit 0 of byte i: a lead 1, 2 or 3 bytes before asks for a continuation byte at i.
        wanted = ((lanes & every(b"\x02")) << 7 | (lanes & every(b"\x04")) << 14
                  | (lanes & every(b"\x08")) << 21)
        bad = (wanted ^ lanes & every(b"\x01") | lanes >> 4 & every(b"\x01")
               | (seconds & every(b"\x0f")) << 12 & seconds)
        marks = bad.to_bytes(size + 3, "little")[:size].translate(_NONZERO_TO_ONE)
        spans, previous = [], -1   # the ill-formed byte before, if any
        while True:
            position = marks.find(1, previous + 1)
            end = size if position < 0 else position
            if end - previous > min_length:
                # The span starts at a byte that starts a sequence, past every byte that a lead
                # before it asks for.
                start = max(previous, 0)
                while start < end and (not self.length[data[start]] or
                                       self._reached(data, start)):
                    start += 1
                stop = self._cut(data, end)
                if stop - start >= min_length:
                    spans.append((start, stop))
            if position < 0:
                return spans
            previous = position

    def _cut(self, data, position):
        """The lead byte (1..3 bytes before ``position``) of the earliest sequence that would
        reach ``position``, or ``position`` if none does."""
        for back in (3, 2, 1):
            if back <= position and self.length[data[position - back]] > back:
                return position - back
        return position

    def _reached(self, data, position):
        """Whether a lead byte before ``position`` asks for a byte after it."""
        return any(back <= position and self.length[data[position - back]] > back + 1
                   for back in (1, 2))

    def _span_tables(self):
        """The ``translate`` tables of :meth:`well_formed_spans`: per byte, bit 0 continuation
        byte, bits 1..3 a lead of 2+, 3+, 4 bytes, bit 4 starts nothing and continues nothing;
        and bit r (0..3): a lead whose second byte has the r-th narrowed range, bit 4 + r: a
        byte outside that range."""
        if self._tables is None:
            narrowed = sorted({(self.low[byte], self.high[byte]) for byte in range(256)
                               if self.length[byte] > 1} - {(0x80, 0xBF)})
            if len(narrowed) > 4 or max(self.length) > 4:
                raise ValueError(f"grammar {self.name}: too many second-byte ranges or too "
                                 f"long sequences for well_formed_spans")
            continuation = [0x80 <= byte <= 0xBF for byte in range(256)]
            flags = bytes(continuation[byte] | (self.length[byte] >= 2) << 1
                          | (self.length[byte] >= 3) << 2 | (self.length[byte] >= 4) << 3
                          | (not self.length[byte] and not continuation[byte]) << 4
                          for byte in range(256))
            second = bytes(
                sum(1 << index for index, pair in enumerate(narrowed)
                    if self.length[byte] > 1 and (self.low[byte], self.high[byte]) == pair)
                | sum(0x10 << index for index, (low, high) in enumerate(narrowed)
                      if not low <= byte <= high)
                for byte in range(256))
            self._tables = flags, second
        return self._tables

    def derive(self, name, lengths=(), second_ranges=(), second_errors=(), start_errors=()):
        """A grammar equal to this one except for the entries given (``lengths`` with 0: the
        byte no longer starts a sequence, and ``start_errors`` must give its kind)."""
        return Grammar(name, {**self.lengths, **dict(lengths)},
                       {**self.second_ranges, **dict(second_ranges)},
                       {**self.second_errors, **dict(second_errors)},
                       {**self.start_errors, **dict(start_errors)})

    def __repr__(self):
        return f"<Grammar {self.name}>"


#: The UTF-8 byte grammar: Table 3-7 and the error kinds above.
UTF8 = Grammar(
    "utf-8",
    lengths={byte: sequence_length(byte) for byte in range(256)},
    second_ranges={lead: second_byte_range(lead) for lead in _SECOND_BYTE_ERROR},
    second_errors=_SECOND_BYTE_ERROR,
    start_errors={byte: _start_error(byte) for byte in range(256)
                  if _start_error(byte) is not None})


class Piece(NamedTuple):
    """A stretch of the input as a decoder classified it.

    A well-formed sequence: ``kind`` is ``NONE`` and ``value`` its value. An ill-formed one (a
    maximal subpart): ``kind`` says why, and ``value`` is ``None``, or a code point that the
    ``surrogatepass`` policy passes through instead (a lone surrogate). ``data``: its bytes;
    ``start``: the offset of its first byte in the stream.
    """
    value: int | None
    kind: ErrorKind
    data: bytes
    start: int


_SINGLE_BYTES = tuple(bytes([byte]) for byte in range(256))


class ByteDecoder:
    """Cuts a byte stream into :class:`Piece` s following a :class:`Grammar`.

    It keeps a *pending prefix*: a lead byte and the continuation bytes it has accepted so far.
    Each byte either extends the prefix (a well-formed sequence when it is full) or, if it is not
    an allowed next byte, ends the prefix's maximal subpart (one ill-formed piece) and is then
    examined again as a new start: a sequence by itself, a lead (a new prefix) or an ill-formed
    piece of its own. :meth:`finish` ends the stream: a pending prefix is one ``TRUNCATED``
    piece; the next byte fed starts a new stream at offset 0.
    """
    def __init__(self, grammar):
        self.grammar = grammar
        self._pending = bytearray()
        self._start = 0    # offset of the pending prefix's lead byte
        self._offset = 0   # offset of the next byte

    @property
    def pending(self):
        """The well-formed prefix that still waits for continuation bytes."""
        return bytes(self._pending)

    def feed(self, data):
        """Classify the bytes ``data``; returns the pieces they complete, in order."""
        pending, out = self._pending, []
        length, low, high = self.grammar.length, self.grammar.low, self.grammar.high
        start_error, second_error = self.grammar.start_error, self.grammar.second_error
        none, truncated = ErrorKind.NONE, ErrorKind.TRUNCATED
        data = bytes(data)
        for offset, byte in enumerate(data, self._offset):
            if pending:
                lead = pending[0]
                if (low[lead] <= byte <= high[lead] if len(pending) == 1 else
                        0x80 <= byte <= 0xBF):
                    pending.append(byte)
                    if len(pending) == length[lead]:
                        out.append(Piece(_scalar(pending), none, bytes(pending), self._start))
                        pending.clear()
                    continue
                # `byte` ends the maximal subpart held in `pending`.
                if len(pending) == 1 and 0x80 <= byte <= 0xBF:
                    kind = second_error[lead]
                else:
                    kind = truncated
                out.append(Piece(None, kind, bytes(pending), self._start))
                pending.clear()
            # `byte` is examined as the start of a new sequence.
            if length[byte] == 1:
                out.append(Piece(byte, none, _SINGLE_BYTES[byte], offset))
            elif length[byte]:
                pending.append(byte)
                self._start = offset
            else:
                out.append(Piece(None, start_error[byte], _SINGLE_BYTES[byte], offset))
        self._offset += len(data)
        return out

    def skip(self, count):
        """Count ``count`` bytes of well-formed sequences that the caller decoded itself (no
        prefix may be pending): the offsets of later pieces include them."""
        if self._pending:
            raise ValueError("cannot skip bytes while a prefix is pending")
        self._offset += count

    def finish(self):
        """End the stream: returns the ``TRUNCATED`` piece of a pending prefix, if any."""
        out = []
        if self._pending:
            out.append(Piece(None, ErrorKind.TRUNCATED, bytes(self._pending), self._start))
            self._pending.clear()
        self._offset = 0
        return out


def _payload(byte):
    """The payload bits of ``byte`` in the bit distribution (Table 3-6): the bits after its
    leading ones and the zero that ends them."""
    ones = 0
    while ones < 8 and byte & (0x80 >> ones):
        ones += 1
    return byte & (0x7F >> ones)


# Per byte: its payload bits; 0xFF for a continuation byte 10xxxxxx.
_PAYLOAD = bytes(_payload(byte) for byte in range(256))
_CONTINUATION = bytes(0xFF if 0x80 <= byte <= 0xBF else 0 for byte in range(256))
_HIGH_BYTES = bytes(range(0x80, 0x100))
_NONZERO_TO_ONE = bytes([0]) + bytes([1]) * 255
_ASCII_BYTES = bytes(range(0x80))
_LONG_ASCII = re.compile(rb"[\x00-\x7f]{256,}")
_SHIFT_RIGHT_2 = bytes(byte >> 2 for byte in range(256))
_repeats = {}


def _repeated(pattern, size):
    """The integer whose bytes (little-endian) are ``pattern`` repeated over ``size`` bytes or
    more (cached, grown as needed)."""
    known = _repeats.get(pattern)
    if known is None or known[0] < size:
        count = max(size, 1 << 16) // len(pattern) + 1
        known = _repeats[pattern] = (count * len(pattern),
                                     int.from_bytes(pattern * count, "little"))
    return known[1]


def _integer(data):
    """The bytes ``data`` as one little-endian integer (byte i: bits 8i..8i+7)."""
    return int.from_bytes(data, "little")


def decode_well_formed(data):
    """The scalar values of ``data``, a run of well-formed UTF-8 sequences (as
    :meth:`Grammar.well_formed_spans` finds them), as UTF-32LE bytes: the bulk form of
    :func:`_scalar`, with a few operations on the whole run (``bytes.translate`` and the bitwise
    operations of Python's integers) instead of a loop per byte.

    Each byte is a lane of 8 bits in one integer (byte ``i`` is bits ``8i..8i+7``). The lane of
    a sequence's last byte gathers the payload bits of the 0..3 bytes before it that are in the
    same sequence (those after which only continuation bytes follow), as three 7-bit digits of
    the value; every other lane gets bit 7 set and is deleted by ``translate``. The digits
    left, one per scalar value, are packed into 32-bit units. In mostly ASCII text, long ASCII
    stretches are widened to units as they are (their bytes are their values), and only the
    rest goes through these operations."""
    if data.isascii():
        return _widen(data)
    if len(data.translate(None, _ASCII_BYTES)) * 16 < len(data):
        parts, position = [], 0
        for match in _LONG_ASCII.finditer(data):
            start, stop = match.span()
            parts += [_decode_bits(data[position:start]), _widen(data[start:stop])]
            position = stop
        return b"".join(parts) + _decode_bits(data[position:])
    return _decode_bits(data)


def _widen(ascii_bytes):
    units = bytearray(4 * len(ascii_bytes))
    units[0::4] = ascii_bytes
    return bytes(units)


def _decode_bits(data):
    """:func:`decode_well_formed` with the operations on all bytes at once."""
    if data.isascii():
        return _widen(data)
    size = len(data)
    payload = _integer(data.translate(_PAYLOAD))
    # Lanes of 0xFF where byte i (cont1), bytes i-1..i (cont2), i-2..i (cont3) are continuation
    # bytes: where bytes i-1, i-2, i-3 belong to the sequence that byte i is in.
    cont1 = _integer(data.translate(_CONTINUATION))
    cont2 = cont1 & (cont1 << 8)
    cont3 = cont2 & (cont1 << 16)
    # The payloads of the bytes 1, 2, 3 before, where in the same sequence.
    back1, back2, back3 = (payload << 8) & cont1, (payload << 16) & cont2, (payload << 24) & cont3
    # value = back3 << 18 | back2 << 12 | back1 << 6 | payload, as digits of 7 bits.
    digit0 = payload | (back1 & _repeated(b"\x01", size)) << 6
    digit1 = (back1 >> 1) & _repeated(b"\x1f", size) | (back2 & _repeated(b"\x03", size)) << 5
    digit2 = (back2 >> 2) & _repeated(b"\x0f", size) | back3 << 4
    # A byte followed by a continuation byte is not the last of its sequence: deleted.
    drop = (cont1 >> 8) & _repeated(b"\x80", size)
    digits = [(digit | drop).to_bytes(size, "little").translate(None, _HIGH_BYTES)
              for digit in (digit0, digit1, digit2)]
    count = len(digits[0])
    low, middle = _integer(digits[0]), _integer(digits[1])
    high = _integer(digits[2])
    units = bytearray(4 * count)
    units[0::4] = (low | (middle & _repeated(b"\x01", count)) << 7).to_bytes(count, "little")
    units[1::4] = ((middle >> 1) & _repeated(b"\x3f", count)
                   | (high & _repeated(b"\x03", count)) << 6).to_bytes(count, "little")
    units[2::4] = digits[2].translate(_SHIFT_RIGHT_2)
    return bytes(units)


class DecodeError(ValueError):
    """Ill-formed input under a policy that stops at it (``strict``; with ``surrogatepass``,
    anything but a lone surrogate).

    ``position``: the offset of the first byte of the first maximal subpart (from the start of
    the stream); ``end``: one past its last byte; ``kind``: its :class:`ErrorKind`; ``decoded``:
    the outputs before it that the same call produced.
    """
    def __init__(self, encoding, piece, decoded):
        self.encoding = encoding
        self.position = piece.start
        self.end = piece.start + len(piece.data)
        self.kind = piece.kind
        self.decoded = decoded
        super().__init__(f"cannot decode {encoding}: {piece.kind.label} at byte {piece.start} "
                         f"({piece.data.hex(' ')})")


def render(pieces, errors, encoding="utf-8"):
    """The outputs of ``pieces`` under the error policy ``errors``.

    A well-formed piece is its value. An ill-formed piece is one U+FFFD (``replace``), one
    escape U+DC00+b per byte b (``surrogateescape``), its ``value`` if it has one
    (``surrogatepass``: a lone surrogate passed through, still flagged with its kind), and
    otherwise raises :class:`DecodeError` (``strict``, and ``surrogatepass`` for anything but a
    lone surrogate). Every output of an ill-formed piece carries its kind.
    """
    out = []
    for piece in pieces:
        kind = piece.kind
        if kind is ErrorKind.NONE:
            out.append(Decoded(piece.value))
        elif errors == "replace":
            out.append(Decoded(REPLACEMENT_CHARACTER, kind))
        elif errors == "surrogateescape":
            out.extend(Decoded(_ESCAPE_BASE + byte, kind) for byte in piece.data)
        elif errors == "surrogatepass" and piece.value is not None:
            out.append(Decoded(piece.value, kind))
        else:
            raise DecodeError(encoding, piece, out)
    return out


class Decoder:
    """Incremental UTF-8 decoder.

    Feed chunks with :meth:`feed`; call :meth:`finish` at the end of the stream (a pending prefix
    becomes a ``TRUNCATED`` error). After :meth:`finish` the decoder can start a new stream.
    """
    def __init__(self, errors="replace"):
        check_policy(errors, DECODE_ERRORS)
        self.errors = errors
        self._bytes = ByteDecoder(UTF8)

    @property
    def pending(self):
        """The well-formed prefix that still waits for continuation bytes."""
        return self._bytes.pending

    def feed(self, data):
        """Decode the bytes ``data``; returns the outputs they complete, in order."""
        return render(self._bytes.feed(data), self.errors)

    def finish(self):
        """End the stream: returns the ``TRUNCATED`` error(s) of a pending prefix, if any."""
        return render(self._bytes.finish(), self.errors)


def decode(data, errors="replace"):
    """Decode the whole buffer ``data``; returns a list of :class:`Decoded`."""
    decoder = Decoder(errors)
    return decoder.feed(data) + decoder.finish()


def decode_to_str(data, errors="replace"):
    """Decode ``data`` to a :class:`str` (for comparison with ``bytes.decode``)."""
    return "".join(chr(output.codepoint) for output in decode(data, errors))


def count_errors(kinds):
    """Count error kinds: ``{label: count}`` for every kind but ``NONE`` (zeros included)."""
    counts = {kind.label: 0 for kind in ErrorKind if kind is not ErrorKind.NONE}
    for kind in kinds:
        if kind is not ErrorKind.NONE:
            counts[kind.label] += 1
    return counts


class Encoded(NamedTuple):
    """The result of :func:`encode`: the bytes, and ``(index, kind)`` for each invalid unit."""
    data: bytes
    errors: list


#: The code points of each UTF-8 length: a value below ``UTF8_LENGTH_LIMITS[n - 1]`` (and not
#: below the limit before) takes ``n`` bytes (the inverse of Table 3-7).
UTF8_LENGTH_LIMITS = (0x80, 0x800, 0x10000, 0x110000)


def utf8_length(value):
    """The length (1..4) of the UTF-8 form of a value below 0x110000 (a surrogate too, although
    it has no well-formed form: 3)."""
    for length, limit in enumerate(UTF8_LENGTH_LIMITS, start=1):
        if value < limit:
            return length
    raise ValueError(f"0x{value:X} has no UTF-8 form (values end at 0x10FFFF)")


def sequence_bytes(value, length):
    """The ``length``-byte sequence (1..6) of ``value`` in the UTF-8 bit distribution (Table
    3-6, which RFC 2279 extends to 5 and 6 bytes); ``value`` must fit in it."""
    if length == 1:
        return _SINGLE_BYTES[value]
    # The lead byte: `length` ones, a zero, the top bits; then 10 and six bits per byte.
    lead = (0xFF00 >> length) & 0xFF | value >> 6 * (length - 1)
    tail = [0x80 | value >> 6 * shift & 0x3F for shift in range(length - 2, -1, -1)]
    return bytes([lead, *tail])


def check_unit(unit):
    """Check that ``unit`` is a UTF-32 code unit (an integer in 0..0xFFFFFFFF); returns it."""
    if not isinstance(unit, int) or not 0 <= unit < 1 << 32:
        raise ValueError(f"a UTF-32 code unit is an integer in 0..0xFFFFFFFF, not {unit!r}")
    return unit


def encode_unit(unit, errors="replace"):
    """Encode one UTF-32 code unit; returns ``(bytes, ErrorKind)``."""
    check_policy(errors, ENCODE_ERRORS)
    check_unit(unit)
    if 0xD800 <= unit <= 0xDFFF:
        if errors == "surrogateescape" and 0xDC80 <= unit <= 0xDCFF:
            return bytes([unit - _ESCAPE_BASE]), ErrorKind.NONE
        kind = ErrorKind.SURROGATE
    elif unit >= 0x110000:
        kind = ErrorKind.TOO_LARGE
    else:
        return sequence_bytes(unit, utf8_length(unit)), ErrorKind.NONE
    return (b"" if errors == "strict" else _REPLACEMENT_BYTES), kind


# The bulk encoder (:func:`encode`) sorts the units (little-endian 32-bit) into classes by their
# bytes: each byte gives a few flag bits by a table (their OR is one byte per unit), and a table
# of those flags gives the class.
_SINGLE, _TWO, _THREE, _FOUR, _ESCAPE, _ESCAPE_FF, _SURROGATE, _TOO_LARGE = range(1, 9)
_FLAG_TABLES = (
    bytes(int(byte >= 0x80) | (byte == 0xFF) << 7 for byte in range(256)),      # bits 0, 7
    bytes((0 if byte == 0 else 1 if byte < 0x08 else 4 if byte == 0xDC         # bits 1..3
           else 3 if 0xD8 <= byte <= 0xDF else 2) << 1 for byte in range(256)),
    bytes((0 if byte == 0 else 1 if byte <= 0x10 else 2) << 4 for byte in range(256)),  # 4, 5
    bytes(int(byte != 0) << 6 for byte in range(256)))                          # bit 6


def _class_of_flags(flags):
    """The class of a unit: single byte (U+0000..U+007F), 2, 3 or 4 bytes (below U+0800,
    U+10000, U+110000: :data:`UTF8_LENGTH_LIMITS`), an escape U+DC80..U+DCFE, the escape
    U+DCFF, another surrogate, too large."""
    byte0_high, byte1, byte2, byte3 = flags & 1, flags >> 1 & 7, flags >> 4 & 3, flags >> 6 & 1
    if byte3 or byte2 == 2:
        return _TOO_LARGE
    if byte2:
        return _FOUR
    if byte1 == 0:
        return _TWO if byte0_high else _SINGLE
    if byte1 == 1:
        return _TWO
    if byte1 == 2:
        return _THREE
    if byte1 == 4 and byte0_high:
        return _ESCAPE_FF if flags & 0x80 else _ESCAPE
    return _SURROGATE


_CLASS_OF_FLAGS = bytes(map(_class_of_flags, range(256)))
_UNIT_CODE = "I" if array.array("I").itemsize == 4 else "L"


def _lane_tables(bytes_of):
    """Four ``translate`` tables that make a lane of 4 bytes per unit from its class: the bytes
    ``bytes_of[class]`` (all 0 for a class not listed)."""
    return tuple(bytes(bytes_of.get(cls, b"\0\0\0\0")[position] for cls in range(256))
                 for position in range(4))


@functools.cache
def _encoder_tables(errors):
    """The lane tables of :func:`_encode_bulk` under the policy ``errors``, and the error kind
    of each class that is an error under it."""
    kinds = {_SURROGATE: ErrorKind.SURROGATE, _ESCAPE: ErrorKind.SURROGATE,
             _ESCAPE_FF: ErrorKind.SURROGATE, _TOO_LARGE: ErrorKind.TOO_LARGE}
    singles = [_SINGLE]
    if errors == "surrogateescape":   # an escape is the byte it stands for: its unit's low byte
        del kinds[_ESCAPE], kinds[_ESCAPE_FF]
        singles.append(_ESCAPE)
    error_bytes = b"\xff\xff\xff\xff" if errors == "strict" else _REPLACEMENT_BYTES + b"\xff"
    # The marker bits of each class's bytes, 0xFF where it has no byte (UTF-8 has no 0xFF).
    markers = {_TWO: b"\xc0\x80\xff\xff", _THREE: b"\xe0\x80\x80\xff",
               _FOUR: b"\xf0\x80\x80\x80", **{cls: b"\x00\xff\xff\xff" for cls in singles},
               **{cls: error_bytes for cls in kinds}}
    return {
        "four": _lane_tables({_FOUR: b"\xff\xff\xff\xff"}),
        "three": _lane_tables({_THREE: b"\xff\xff\xff\x00"}),
        "two": _lane_tables({_TWO: b"\xff\xff\x00\x00"}),
        "single": _lane_tables({cls: b"\xff\x00\x00\x00" for cls in singles}),
        "markers": _lane_tables(markers),
        "kinds": kinds,
        "errors": re.compile(b"[" + re.escape(bytes(kinds)) + b"]"),
    }


def _lanes(classes, tables):
    """The integer of 32-bit lanes, one per class in ``classes``, made by ``tables``."""
    lanes = bytearray(4 * len(classes))
    for position, table in enumerate(tables):
        lanes[position::4] = classes.translate(table)
    return _integer(lanes)


def _encode_lanes(raw, classes, tables):
    """The UTF-8 bytes of the units ``raw`` (UTF-32LE) of ``classes`` (no U+DCFF escape:
    its byte is the 0xFF that marks unused bytes here): for each
    unit a lane of 4 bytes that holds its bytes (Table 3-6: the value's bits in groups of 6,
    the last group in the last byte, under the marker bits) and 0xFF in the bytes it does not
    use, deleted at the end."""
    value, size = _integer(raw), len(raw)
    # Byte k of a lane holds the value's group 3 - k of 6 bits (group 0: bits 0..5).
    groups = (value >> 18 & _repeated(b"\x07\0\0\0", size)
              | value >> 4 & _repeated(b"\0\x3f\0\0", size)
              | value << 10 & _repeated(b"\0\0\x3f\0", size)
              | value << 24 & _repeated(b"\0\0\0\x3f", size))
    # A sequence of n bytes takes the last n groups: lane bytes 4 - n..3, moved to bytes 0..n-1.
    lanes = (groups & _lanes(classes, tables["four"])
             | groups >> 8 & _lanes(classes, tables["three"])
             | groups >> 16 & _lanes(classes, tables["two"])
             | value & _lanes(classes, tables["single"])
             | _lanes(classes, tables["markers"]))
    return lanes.to_bytes(size, "little").translate(None, b"\xff")


_ESCAPES_FF = re.compile(bytes([_ESCAPE_FF]) + b"+")


def _classes(units):
    """The units of an ``array`` as UTF-32LE bytes, and their classes (a byte each)."""
    if sys.byteorder != "little":
        units = array.array(units.typecode, units)
        units.byteswap()
    raw = units.tobytes()
    flags = 0
    for position, table in enumerate(_FLAG_TABLES):
        flags |= _integer(raw[position::4].translate(table))
    return raw, flags.to_bytes(len(units), "little").translate(_CLASS_OF_FLAGS)


def _class_errors(classes, tables):
    return [(match.start(), tables["kinds"][classes[match.start()]])
            for match in tables["errors"].finditer(classes)]


def _encode_bulk(units, errors):
    """:func:`encode` of an ``array`` of units, with operations on all of them at once: their
    classes, then their bytes (:func:`_encode_lanes`); under ``surrogateescape`` the escapes
    U+DCFF between them are bytes FF."""
    tables = _encoder_tables(errors)
    raw, classes = _classes(units)
    if errors == "surrogateescape":
        parts, done = [], 0
        for match in _ESCAPES_FF.finditer(classes):
            start, stop = match.span()
            parts.append(_encode_lanes(raw[4 * done:4 * start], classes[done:start], tables))
            parts.append(b"\xff" * (stop - start))
            done = stop
        parts.append(_encode_lanes(raw[4 * done:], classes[done:], tables))
        data = b"".join(parts)
    else:
        data = _encode_lanes(raw, classes, tables)
    return Encoded(data, _class_errors(classes, tables))


def unit_array(units):
    """``units`` (a sequence of UTF-32 code units) as an ``array`` of 32-bit units; raises
    ``ValueError`` (:func:`check_unit`) for anything else."""
    if isinstance(units, array.array) and units.typecode == _UNIT_CODE:
        return units
    try:
        return array.array(_UNIT_CODE, units)
    except (OverflowError, TypeError):
        pass
    for unit in units:
        check_unit(unit)
    raise ValueError("UTF-32 code units are integers in 0..0xFFFFFFFF")


def encode_errors(units, errors="replace"):
    """``(index, ErrorKind)`` of each invalid unit of ``units`` under ``errors``, in order: the
    ``errors`` of :func:`encode`, without encoding."""
    check_policy(errors, ENCODE_ERRORS)
    return _class_errors(_classes(unit_array(units))[1], _encoder_tables(errors))


def encode(units: Sequence[int], errors="replace"):
    """Encode a sequence of UTF-32 code units; returns :class:`Encoded`. (In bulk, see
    :func:`_encode_bulk`; it equals :func:`encode_unit` unit by unit.)"""
    check_policy(errors, ENCODE_ERRORS)
    return _encode_bulk(unit_array(units), errors)
