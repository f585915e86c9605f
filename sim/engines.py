"""One call to decode or encode a whole message with any engine.

Engines:

``"reference"``
    The pure-Python reference model (:mod:`.reference`); no cycle count.
``"python"``
    The core in Amaranth's simulator (:func:`.testbench.run_stream`); slow, always available.
``"compiled"``
    The core compiled with CXXRTL (:mod:`.compiled`); needs a C++ compiler. Inputs and outputs
    travel through files, so inputs of many megabytes are fine.

The whole input is one message: ``last`` is set on its final item. An empty input gives an empty
output without simulating anything (``cycles`` is then 0; it is ``None`` for the reference).
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
With ``errors="strict"`` the marker beats are removed from ``data``.
"""

import array
import functools
import gc
import re
from typing import NamedTuple, Optional

from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.encoder import Utf8Encoder
from utf8_gateware.hdl.error_kind import DECODE_ERRORS, ENCODE_ERRORS, ErrorKind, check_policy
from utf8_gateware.hdl.layouts import CodepointLayout, EncodedByteLayout
from . import reference
from .reference import Decoded


__all__ = ["ENGINES", "CORES", "DecodeRun", "EncodeRun", "EngineError", "InterfaceError",
           "default_engine", "resolve_engine", "make_core", "compiled_model", "decode", "encode"]


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
CORES = {"decoder": Utf8Decoder, "encoder": Utf8Encoder}


def make_core(kind, errors):
    """A fresh core: ``kind`` is ``"decoder"`` or ``"encoder"``."""
    return CORES[kind](errors=errors)


_models = {}


def compiled_model(kind, errors):
    """The (cached) :class:`.compiled.StreamModel` of core ``kind`` with ``errors``."""
    key = (kind, errors)
    if key not in _models:
        from .compiled import build_stream_model, find_compiler, CompiledSimError
        find_compiler()  # without one, fail before elaborating anything
        try:
            _models[key] = build_stream_model(make_core(kind, errors), f"{kind}-{errors}")
        except CompiledSimError as error:
            raise EngineError(_one_line(error)) from error
    return _models[key]


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


def _parse_decoded(words):
    """Decoded outputs from raw output payloads (ints)."""
    outputs, lasts = [], []
    for index, word in enumerate(words):
        outputs.append(Decoded((word >> _CP_SHIFT) & _CP_MASK,
                               _kind((word >> _CE_SHIFT) & _CE_MASK)))
        if (word >> _CL_SHIFT) & 1:
            lasts.append(index)
    _check_lasts(lasts, len(outputs))
    return outputs


# The decoder's output payload is 25 bits: codepoint in bits 0..20, error in 21..23, last in 24.
# Then the outputs are parsed with byte-string operations and C-level maps.
_FAST_DECODED = (_CP_SHIFT, _CP_MASK, _CE_SHIFT, _CL_SHIFT) == (0, 0x1FFFFF, 21, 24)
_KIND_TABLE = bytes((byte >> 5) & 7 for byte in range(256))
_CP2_TABLE = bytes(byte & 0x1F for byte in range(256))


def _parse_decoded_raw(raw):
    """Like :func:`_parse_decoded`, from little-endian 32-bit outputs as bytes."""
    count = len(raw) // 4
    last_flags = raw[3::4]
    if last_flags.count(0) != count - 1 or last_flags[-1] != 1:
        _check_lasts([index for index, byte in enumerate(last_flags) if byte & 1], count)
    kinds = raw[2::4].translate(_KIND_TABLE)
    if 7 in kinds:
        _kind(7)
    cleaned = bytearray(raw)
    cleaned[2::4] = raw[2::4].translate(_CP2_TABLE)
    cleaned[3::4] = bytes(count)
    codepoints = _words(bytes(cleaned), 4)
    kind_list = [_KINDS.get(value) for value in range(8)]
    # Millions of new tuples would trigger many full garbage collections; none can be garbage.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return list(map(functools.partial(tuple.__new__, Decoded),
                        zip(codepoints, map(kind_list.__getitem__, kinds))))
    finally:
        if enabled:
            gc.enable()


def _beats(unit, errors):
    """Number of beats the encoder produces for ``unit``: its bytes, or one marker beat."""
    return len(reference.encode_unit(unit, errors)[0]) or 1


def _parse_encoded(beats, units, errors):
    """``(data, errors)`` from the encoder's output beats (each a raw payload int)."""
    raw = array.array("H", beats).tobytes() if _FAST_BEATS else None
    if raw is not None:
        return _parse_encoded_raw(raw, units, errors)
    data, error_beats, lasts = bytearray(), [], []
    for index, word in enumerate(beats):
        kind = (word >> _BE_SHIFT) & _BE_MASK
        if kind:
            error_beats.append((index, _kind(kind)))
            if errors == "strict":
                if (word >> _BD_SHIFT) & _BD_MASK:
                    raise InterfaceError(f"strict marker beat {index} carries data")
            else:
                data.append((word >> _BD_SHIFT) & _BD_MASK)
        else:
            data.append((word >> _BD_SHIFT) & _BD_MASK)
        if (word >> _BL_SHIFT) & 1:
            lasts.append(index)
    _check_lasts(lasts, len(beats))
    return bytes(data), _map_error_beats(error_beats, units, errors)


# The encoder's output payload is 12 bits: data in the low byte, error and last in the high
# byte. Then the beats are parsed with byte-string operations instead of a loop per beat.
_FAST_BEATS = (_BD_SHIFT, _BD_MASK, _BE_SHIFT, _BL_SHIFT) == (0, 0xFF, 8, 11)
_ERROR_TABLE = bytes(((byte >> (_BE_SHIFT - 8)) & _BE_MASK) if _FAST_BEATS else 0
                     for byte in range(256))
_LAST_TABLE = bytes(((byte >> (_BL_SHIFT - 8)) & 1) if _FAST_BEATS else 0
                    for byte in range(256))


def _parse_encoded_raw(raw, units, errors):
    """Like :func:`_parse_encoded`, from little-endian 16-bit beats as bytes."""
    low, high = raw[0::2], raw[1::2]
    last_flags = high.translate(_LAST_TABLE)
    if last_flags.count(1) != 1 or last_flags[-1] != 1:
        lasts = [match.start() for match in re.finditer(b"\x01", last_flags)]
        _check_lasts(lasts, len(low))
    error_flags = high.translate(_ERROR_TABLE)
    error_beats = [(match.start(), _kind(error_flags[match.start()]))
                   for match in re.finditer(b"[^\x00]", error_flags)]
    if errors == "strict" and error_beats:
        pieces, start = [], 0
        for beat, _ in error_beats:
            if low[beat]:
                raise InterfaceError(f"strict marker beat {beat} carries data")
            pieces.append(low[start:beat])
            start = beat + 1
        pieces.append(low[start:])
        data = b"".join(pieces)
    else:
        data = low
    return data, _map_error_beats(error_beats, units, errors)


def _map_error_beats(error_beats, units, errors):
    result = []
    if not error_beats:
        return result
    position = 0   # beat index where unit `index` starts
    it = iter(enumerate(units))
    index, unit = next(it)
    for beat, kind in error_beats:
        try:
            while position + _beats(unit, errors) <= beat:
                position += _beats(unit, errors)
                index, unit = next(it)
        except StopIteration:
            raise InterfaceError(f"error beat {beat} lies beyond the beats of the input") from None
        if position != beat:
            raise InterfaceError(f"error flagged on beat {beat - position} (not the first) of "
                                 f"unit {index} (0x{unit:X})")
        result.append((index, kind))
    return result


def _words(data, size):
    code = {2: "H", 4: "I" if array.array("I").itemsize == 4 else "L"}[size]
    words = array.array(code)
    words.frombytes(data)
    return words


def _to_units(units):
    code = "I" if array.array("I").itemsize == 4 else "L"
    if isinstance(units, array.array) and units.typecode == code:
        return units
    try:
        return array.array(code, units)
    except (OverflowError, TypeError):
        for unit in units:
            if not isinstance(unit, int) or not 0 <= unit < 1 << 32:
                raise ValueError(
                    f"a UTF-32 code unit is an integer in 0..0xFFFFFFFF, not {unit!r}") from None
        raise


# -------------------------------------------------------------------------------------------------
# Engines

_CHUNK = 1 << 16


def _run_python(kind, errors, inputs, gaps, stalls, seed):
    from .testbench import run_stream
    try:
        run = run_stream(make_core(kind, errors), inputs, gap=gaps, stall=stalls, seed=seed,
                         name=f"{kind}-{errors}")
    except AssertionError as error:
        raise EngineError(_one_line(error)) from error
    return [payload.as_value().value for payload in run.outputs], run.cycles


def _run_compiled(kind, errors, items, in_bytes, gaps, stalls, seed, progress):
    from .compiled import CompiledSimError
    model = compiled_model(kind, errors)
    try:
        result = model.run(items, in_bytes=in_bytes, auto_last=True, gaps=gaps, stalls=stalls,
                           seed=seed, progress=None if progress is None else
                           (lambda count: progress(count * in_bytes)))
    except CompiledSimError as error:
        raise EngineError(_one_line(error)) from error
    return model, result


def decode(data, errors="replace", engine=None, *, gaps=0.0, stalls=0.0, seed=1,
           progress=None):
    """Decode the message ``data`` (bytes) with ``engine`` (``None``: :func:`default_engine`).

    ``gaps`` / ``stalls`` (simulated engines only) are the probabilities of a source gap / a sink
    stall per cycle, seeded by ``seed``. ``progress(n)``, if given, is called as input bytes are
    processed (``n`` new bytes each time; the calls add up to ``len(data)``). Returns
    :class:`DecodeRun`. Raises :class:`EngineError` if the engine fails and
    :class:`~.compiled.CompilerNotFoundError` for ``"compiled"`` without a C++ compiler.
    """
    check_policy(errors, DECODE_ERRORS)
    engine = default_engine() if engine is None else engine
    _check_engine(engine)
    data = bytes(data)
    if engine == "reference":
        decoder, outputs = reference.Decoder(errors), []
        for start in range(0, len(data), _CHUNK):
            outputs += decoder.feed(data[start:start + _CHUNK])
            if progress is not None:
                progress(len(data[start:start + _CHUNK]))
        return DecodeRun(outputs + decoder.finish(), None)
    if not data:
        return DecodeRun([], 0)
    if engine == "python":
        inputs = [{"data": byte, "last": 0} for byte in data]
        inputs[-1]["last"] = 1
        words, cycles = _run_python("decoder", errors, inputs, gaps, stalls, seed)
        if progress is not None:
            progress(len(data))
        return DecodeRun(_parse_decoded(words), cycles)
    model, result = _run_compiled("decoder", errors, data, 1, gaps, stalls, seed, progress)
    if _FAST_DECODED and model.out_bytes == 4:
        return DecodeRun(_parse_decoded_raw(result.data), result.cycles)
    return DecodeRun(_parse_decoded(_words(result.data, model.out_bytes)), result.cycles)


def encode(units, errors="replace", engine=None, *, gaps=0.0, stalls=0.0, seed=1,
           progress=None):
    """Encode the message ``units`` (UTF-32 code units, ints in 0..0xFFFFFFFF) with ``engine``.

    Returns :class:`EncodeRun`; ``errors`` lists ``(index, ErrorKind)`` of every invalid unit.
    ``progress(n)`` is called with input bytes processed (4 per unit). Other arguments and
    exceptions as for :func:`decode`.
    """
    check_policy(errors, ENCODE_ERRORS)
    engine = default_engine() if engine is None else engine
    _check_engine(engine)
    units = _to_units(units)
    if engine == "reference":
        chunks, errs = [], []
        for start in range(0, len(units), _CHUNK):
            encoded = reference.encode(units[start:start + _CHUNK], errors)
            chunks.append(encoded.data)
            errs += [(start + index, kind) for index, kind in encoded.errors]
            if progress is not None:
                progress(4 * len(units[start:start + _CHUNK]))
        return EncodeRun(b"".join(chunks), errs, None)
    if not units:
        return EncodeRun(b"", [], 0)
    if engine == "python":
        inputs = [{"codepoint": unit, "last": 0} for unit in units]
        inputs[-1]["last"] = 1
        beats, cycles = _run_python("encoder", errors, inputs, gaps, stalls, seed)
        if progress is not None:
            progress(4 * len(units))
        data, errs = _parse_encoded(beats, units, errors)
        return EncodeRun(data, errs, cycles)
    model, result = _run_compiled("encoder", errors, units.tobytes(), 4, gaps, stalls, seed,
                                  progress)
    if _FAST_BEATS and model.out_bytes == 2:
        data, errs = _parse_encoded_raw(result.data, units, errors)
    else:
        data, errs = _parse_encoded(_words(result.data, model.out_bytes), units, errors)
    return EncodeRun(data, errs, result.cycles)
