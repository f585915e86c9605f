"""What describes one encoding of the family, and the incremental decoder and encoder that run
any of them.

Decoding is a pipeline of stages over :class:`~utf8_gateware.sim.reference.Piece` s: a byte
stage (a :class:`~utf8_gateware.sim.reference.ByteDecoder` over the encoding's byte grammar, or
UTF-16's :class:`~.utf16.CodeUnits`) cuts the bytes into well-formed sequences and maximal
subparts; later stages act on the values (join surrogate pairs, reject what the encoding forbids
between sequences, drop a byte order mark); :func:`~utf8_gateware.sim.reference.render` applies
the error policy. Encoding turns each input code unit into bytes on its own (after joining a
lead surrogate with the trail surrogate that follows it, for WTF-8), after a prefix written at
the start of every message (a byte order mark).
"""

from dataclasses import dataclass, field
from typing import Callable, Mapping

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim.reference import Encoded, check_unit, render
from .surrogates import is_lead, is_trail, join_pair


__all__ = ["Encoding", "StreamDecoder", "StreamEncoder", "substitute"]


@dataclass(frozen=True)
class Encoding:
    """One encoding of the family.

    ``decoder_stages(errors)`` makes the decoding pipeline (a byte stage first);
    ``encode_unit(unit, errors)`` returns ``(bytes, ErrorKind)`` for one code unit (an error
    kind other than ``NONE`` reports the unit; its bytes are then the substitute or nothing);
    ``prefix`` is written at the start of every encoded message; ``join_pairs``: a lead surrogate
    directly followed by a trail surrogate in the encoder's input is encoded as the pair's
    supplementary code point; ``refused`` says why a policy that is not offered makes no sense.
    """
    name: str
    decode_errors: tuple
    encode_errors: tuple
    decoder_stages: Callable
    encode_unit: Callable
    prefix: bytes = b""
    join_pairs: bool = False
    refused: Mapping[str, str] = field(default_factory=dict)

    def check(self, errors, direction):
        """Check ``errors`` for ``direction`` (``"decode"`` or ``"encode"``); returns it.

        Raises :class:`TypeError` if it is not a string, and :class:`ValueError` (one line,
        naming the choices and why the policy makes no sense here) if it is not offered.
        """
        allowed = self.decode_errors if direction == "decode" else self.encode_errors
        if not isinstance(errors, str):
            raise TypeError(f"errors must be a string, not {errors!r}")
        if errors not in allowed:
            reason = self.refused.get(errors)
            choices = ", ".join(map(repr, allowed))
            raise ValueError(f"{self.name} {direction}s with errors {choices}, not {errors!r}"
                             + (f" ({reason})" if reason else ""))
        return errors


def substitute(errors, replacement):
    """The bytes that stand for an invalid code unit: nothing when the policy reports it and
    goes on (``strict``; ``surrogatepass`` for what is not a surrogate), else ``replacement``
    (the encoding's U+FFFD)."""
    return b"" if errors in ("strict", "surrogatepass") else replacement


class StreamDecoder:
    """Incremental decoder of ``encoding`` (an :class:`Encoding`) with the policy ``errors``.

    :meth:`feed` returns the outputs (:class:`~utf8_gateware.sim.reference.Decoded`) that the
    bytes complete; :meth:`finish` ends the stream (its pending bytes become errors) and readies
    the decoder for a new one. With ``strict`` (and ``surrogatepass``, for anything but a lone
    surrogate) the first ill-formed input raises
    :class:`~utf8_gateware.sim.reference.DecodeError` (its ``position`` counts from the start of
    the stream, its ``decoded`` holds the outputs of the same call before it); the decoder is
    not to be used after that.
    """
    def __init__(self, encoding, errors):
        self.encoding = encoding
        self.errors = encoding.check(errors, "decode")
        self._stages = encoding.decoder_stages(errors)

    def feed(self, data):
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"{self.encoding.name} decodes bytes, not {type(data).__name__}")
        pieces = data
        for stage in self._stages:
            pieces = stage.feed(pieces)
        return render(pieces, self.errors, self.encoding.name)

    def finish(self):
        pieces = b""
        for stage in self._stages:
            pieces = stage.feed(pieces) + stage.finish()
        return render(pieces, self.errors, self.encoding.name)


class StreamEncoder:
    """Incremental encoder of ``encoding`` (an :class:`Encoding`) with the policy ``errors``.

    :meth:`feed` takes code units (integers 0..0xFFFFFFFF) and returns
    :class:`~utf8_gateware.sim.reference.Encoded`: the bytes, and ``(index, kind)`` of each
    invalid unit, indices counted from the start of the message. :meth:`finish` ends the message
    (writes a lead surrogate held back to see whether a trail follows) and readies the encoder
    for a new one. The prefix (a byte order mark) starts every message, an empty one too.
    """
    def __init__(self, encoding, errors):
        self.encoding = encoding
        self.errors = encoding.check(errors, "encode")
        self._index = 0       # the index of the next input unit
        self._started = False
        self._lead = None     # (index, unit) of a lead surrogate held back (join_pairs)

    def _start(self, chunks):
        if not self._started:
            self._started = True
            chunks.append(self.encoding.prefix)

    def _put(self, index, unit, chunks, errs):
        data, kind = self.encoding.encode_unit(unit, self.errors)
        chunks.append(data)
        if kind is not ErrorKind.NONE:
            errs.append((index, kind))

    def feed(self, units):
        chunks, errs = [], []
        self._start(chunks)
        for unit in units:
            check_unit(unit)
            index, self._index = self._index, self._index + 1
            if self.encoding.join_pairs:
                if self._lead is not None:
                    (lead_index, lead), self._lead = self._lead, None
                    if is_trail(unit):
                        self._put(lead_index, join_pair(lead, unit), chunks, errs)
                        continue
                    self._put(lead_index, lead, chunks, errs)
                if is_lead(unit):
                    self._lead = (index, unit)
                    continue
            self._put(index, unit, chunks, errs)
        return Encoded(b"".join(chunks), errs)

    def finish(self):
        chunks, errs = [], []
        self._start(chunks)
        if self._lead is not None:
            (index, lead), self._lead = self._lead, None
            self._put(index, lead, chunks, errs)
        self._index, self._started = 0, False
        return Encoded(b"".join(chunks), errs)
