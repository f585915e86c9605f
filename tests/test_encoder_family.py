# amaranth: UnusedElaboratable=no
"""The encoder's other encodings (:class:`utf8_gateware.hdl.encoder.Utf8Encoder` with
``encoding=``) and their stages, in Amaranth's Python simulator, beat by beat against the
reference model (:mod:`utf8_gateware.sim.encodings`), with CPython's and the ``mutf8`` package's
codecs as oracles where they have the encoding.
"""

import json
import random

import corpora
import mutf8
import numpy as np
import pytest

from utf8_gateware.hdl import synth
from utf8_gateware.hdl.encoder import ENCODER_ENCODINGS, Utf8Encoder
from utf8_gateware.hdl.error_kind import ENCODE_ERRORS, ErrorKind
from utf8_gateware.hdl.layouts import EncodedByteLayout
from utf8_gateware.hdl.text_encoder import CARRYING
from utf8_gateware.sim.encodings import (
    ENCODE_POLICIES, codepoints_from_utf16, encode, lookup, utf16_units)
from utf8_gateware.sim.testbench import run_stream

from test_decoder_family import second_lut_levels
from test_encoder import BOUNDARIES, random_unit as encoder_random_unit


#: Every (encoding, policy) pair of the gateware but those of tests/test_encoder.py.
CASES = [(encoding, errors) for encoding in ENCODER_ENCODINGS
         for errors in ENCODE_POLICIES[encoding]
         if not (encoding == "utf-8" and errors in ENCODE_ERRORS)]

#: Lead, trail and escape surrogates, NUL, and units around them; too large values whose
#: u[20:16] is a plane (which the split encodings take twice, the second time as a bubble).
SPECIALS = [0x0, 0xD800, 0xDBFF, 0xDC00, 0xDC7F, 0xDC80, 0xDCFF, 0xDD00, 0xDFFF, 0xFEFF,
            0x10000, 0x10FFFF, 0x110000, 0xFFFFFFFF, 0x210000, 0xFFF0FFFF]


def random_unit(rng):
    """A code unit of tests/test_encoder.py's classes, or a lead, a trail, NUL, a special."""
    return rng.choice([
        lambda: encoder_random_unit(rng),
        lambda: rng.randrange(0xD800, 0xDC00),
        lambda: rng.randrange(0xDC00, 0xE000),
        lambda: rng.choice(SPECIALS),
        lambda: 0,
    ])()


def random_message(rng, length):
    """``length`` or more units, with surrogate pairs (a lead directly before a trail)."""
    units = []
    while len(units) < length:
        if rng.random() < 0.2:
            units += [rng.randrange(0xD800, 0xDC00), rng.randrange(0xDC00, 0xE000)]
        else:
            units.append(random_unit(rng))
    return units


def expected_beats(messages, encoding, errors):
    """The beats ``(data, error, last)`` the encoder must produce for ``messages`` (lists of
    units), from the reference model's rules for one unit (``Encoding.encode_unit``, the
    prefix, pairs joined as the model's encoder joins them)."""
    model = lookup(encoding)
    beats = []
    for units in messages:
        message = [(byte, ErrorKind.NONE) for byte in model.prefix]
        for unit in codepoints_from_utf16(units) if model.join_pairs else units:
            data, kind = model.encode_unit(unit, errors)
            if kind is not ErrorKind.NONE and not data:
                message.append((0, kind))                        # the marker beat
            else:
                message += [(byte, kind if index == 0 else ErrorKind.NONE)
                            for index, byte in enumerate(data)]
        beats += [(byte, kind, int(index == len(message) - 1))
                  for index, (byte, kind) in enumerate(message)]
    return beats


def encoded_messages(beats):
    """Per message: the bytes (marker beats left out) and the error kinds, in order."""
    out, data, kinds = [], bytearray(), []
    for byte, kind, last in beats:
        if kind is ErrorKind.NONE or byte:              # not a marker beat
            data.append(byte)
        if kind is not ErrorKind.NONE:
            kinds.append(kind)
        if last:
            out.append((bytes(data), kinds))
            data, kinds = bytearray(), []
    return out


def run_encoder(messages, encoding, errors, **kwargs):
    """Run ``messages`` through ``Utf8Encoder(errors, encoding=encoding)``; returns the beats
    and the :class:`StreamRun`."""
    items = [{"codepoint": unit, "last": int(index == len(units) - 1)}
             for units in messages for index, unit in enumerate(units)]
    total = sum(len(units) for units in messages)
    run = run_stream(Utf8Encoder(errors, encoding=encoding), items,
                     max_cycles=200 + 40 * total, **kwargs)
    beats = [(int(p.data), ErrorKind(p.error), int(p.last)) for p in run.outputs]
    return beats, run


def check_against_model(messages, encoding, errors, **kwargs):
    beats, run = run_encoder(messages, encoding, errors, **kwargs)
    assert beats == expected_beats(messages, encoding, errors)
    # The same through the model's entry point: the bytes and the kinds of its errors.
    for units, (data, kinds) in zip(messages, encoded_messages(beats), strict=True):
        model = encode(units, encoding, errors)
        assert data == model.data
        assert kinds == [kind for _, kind in model.errors]
    return beats, run


# -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("encoding, errors", CASES)
def test_boundaries(encoding, errors):
    """Every range boundary, each surrogate kind alone, in pairs and swapped, NUL; the messages
    end on a lead surrogate, on a trail, on an invalid unit."""
    messages = [BOUNDARIES, SPECIALS, [0xD800, 0xDC00, 0xDBFF, 0xDFFF, 0xDC00, 0xD800],
                [0x41, 0xD83D], [0xDE00], [0xD83D, 0xDE00], [0], [0xFFFFFFFF], [0xD800, 0],
                [0xD800, 0x110000], [0xD800, 0xD800, 0xDC00]]
    check_against_model(messages, encoding, errors)


@pytest.mark.parametrize("encoding, errors", CASES)
def test_random_streams(encoding, errors):
    """Random units (lone surrogates, pairs, NUL, too large values) in random messages, with
    source gaps and sink stalls."""
    rng = random.Random(f"family-{encoding}-{errors}")
    messages = [random_message(rng, rng.choice([1, 1, 2, 3, 5, 8, 13]))
                for _ in range(60)]
    gap, stall = rng.choice([(0.3, 0.3), (0.1, 0.6), (0.6, 0.1)])
    check_against_model(messages, encoding, errors, gap=gap, stall=stall, seed=len(messages))


def test_no_carry_error_for_rfc2279():
    assert "utf-8-rfc2279" not in CARRYING
    with pytest.raises(ValueError, match="^carry_error is not offered for utf-8-rfc2279 "
                                         r"\(its core does not carry error kinds\)$"):
        Utf8Encoder(encoding="utf-8-rfc2279", carry_error=True)


@pytest.mark.parametrize("encoding, errors", [
    (encoding, errors) for encoding in ENCODER_ENCODINGS
    if encoding in CARRYING for errors in ("replace", "strict")])
def test_carry_error(encoding, errors):
    """With ``carry_error`` each unit's carried kind is on the first beat of its own bytes
    (unless the unit is invalid itself), never on a mark or the trail half of a pair; a pair
    that WTF-8 joins carries its lead's."""
    rng = random.Random(f"carry-{encoding}-{errors}")
    messages = [[(unit, rng.choice(list(ErrorKind)))
                 for unit in random_message(rng, rng.randrange(1, 6))] for _ in range(30)]
    items = [{"codepoint": unit, "error": kind, "last": int(index == len(units) - 1)}
             for units in messages for index, (unit, kind) in enumerate(units)]
    run = run_stream(Utf8Encoder(errors, encoding=encoding, carry_error=True), items,
                     gap=0.3, stall=0.3, seed=6)
    byte_encoding = "utf-8" if encoding == "utf-8-sig" else encoding
    expected = []
    for units in messages:
        beats = ([(byte, ErrorKind.NONE) for byte in b"\xef\xbb\xbf"]
                 if encoding == "utf-8-sig" else [])
        for unit, carried in joined(units) if encoding == "wtf-8" else units:
            encoded = encode([unit], byte_encoding, errors)    # lone surrogates: no joining
            kind = encoded.errors[0][1] if encoded.errors else carried
            beats += [(byte, kind if index == 0 else ErrorKind.NONE)
                      for index, byte in enumerate(encoded.data or b"\0")]
        expected += [(*beat, int(index == len(beats) - 1)) for index, beat in enumerate(beats)]
    assert [(int(p.data), ErrorKind(p.error), int(p.last)) for p in run.outputs] == expected


def joined(units):
    """``(unit, carried)`` pairs of a message with each lead surrogate that directly precedes a
    trail joined with it (WTF-8), carrying the lead's kind."""
    out = []
    for unit, carried in units:
        if out and 0xD800 <= out[-1][0] < 0xDC00 and 0xDC00 <= unit < 0xE000:
            out[-1] = (codepoints_from_utf16([out[-1][0], unit])[0], out[-1][1])
        else:
            out.append((unit, carried))
    return out


@pytest.mark.parametrize("gap, stall", [(0.0, 0.0), (0.7, 0.0), (0.5, 0.5)])
def test_wtf8_pairs_across_gaps(gap, stall):
    """WTF-8: a lead that is not last waits in W for the next unit, however late it comes
    (source gaps), and is then its pair's first three bytes or a lone lead; the trail of a pair
    is its last byte. Pairs back to back, leads before leads, a lead at a message's end."""
    lead, trail = 0xD83D, 0xDE00
    messages = [[lead, trail] * 3, [lead, lead, trail, trail], [lead], [trail, lead],
                [0xDBFF, 0xDFFF, 0x41, 0xD800], [0xDC00, 0xD800, 0x10FFFF, 0xDBFF, 0xDC00],
                [lead, 0, trail, lead, 0x110000, lead, trail]]
    check_against_model(messages, "wtf-8", "replace", gap=gap, stall=stall, seed=9)


@pytest.mark.parametrize("encoding", ENCODER_ENCODINGS)
def test_pace(encoding):
    """With input always available and the sink always ready, the bytes of a message come out
    one per cycle with no idle cycle (the stages add latency, not bubbles)."""
    rng = random.Random(f"pace-{encoding}")
    units = [rng.choice([rng.randrange(0x80), rng.randrange(0x80, 0x800),
                         rng.randrange(0x800, 0xD800), rng.randrange(0x10000, 0x110000)])
             for _ in range(100)]
    if encoding == "wtf-8":
        units = utf16_units(units)                   # pairs, to be joined
    beats, run = check_against_model([units], encoding, "replace")
    start = run.out_cycles[0]
    assert run.out_cycles == list(range(start, start + len(beats)))
    encoder = Utf8Encoder(encoding=encoding)
    assert start - run.in_cycles[0] == encoder.LATENCY    # utf-8-sig: to the mark's first byte


def test_cpython_and_mutf8_oracles():
    """Scalar values and surrogates against CPython (``utf-8-sig``; ``surrogatepass``, which
    writes surrogates as WTF-8 and Modified UTF-8 do) and the ``mutf8`` package (CESU-8 and
    Modified UTF-8 of a Java string)."""
    rng = random.Random("oracles")
    scalars = [u for u in BOUNDARIES + [rng.randrange(0x110000) for _ in range(40)]
               if u < 0x110000 and not 0xD800 <= u <= 0xDFFF]
    lone = [0xDC00, 0xDFFF, 0xDC80, 0xD800, 0x41, 0xDBFF]      # no lead directly before a trail
    text, java = "".join(map(chr, scalars)), "".join(map(chr, scalars + lone))

    def data(messages, encoding, errors="replace"):
        return [message for message, _ in encoded_messages(
            run_encoder(messages, encoding, errors)[0])]

    assert data([scalars], "utf-8-sig") == [text.encode("utf-8-sig")]
    assert data([scalars + lone], "utf-8", "surrogatepass") == \
        [java.encode("utf-8", "surrogatepass")]
    assert data([utf16_units(scalars) + lone], "wtf-8") == [java.encode("utf-8", "surrogatepass")]
    assert data([scalars + lone], "mutf-8") == [mutf8.encode_modified_utf8(java)]
    # CESU-8 is Modified UTF-8 but for U+0000.
    nonzero = [u for u in scalars if u]
    assert data([nonzero], "cesu-8") == [mutf8.encode_modified_utf8("".join(map(chr, nonzero)))]


def test_parameters():
    """Only the pairs the reference model offers; one-line errors before construction."""
    for encoding in ENCODER_ENCODINGS:
        for errors in ENCODE_POLICIES[encoding]:
            encoder = Utf8Encoder(errors, encoding=encoding)
            assert (encoder.errors, encoder.encoding) == (errors, encoding)
    with pytest.raises(ValueError, match=r"^mutf-8 encodes with errors 'replace', 'strict', "
                                         r"not 'surrogateescape' \(lone surrogates"):
        Utf8Encoder("surrogateescape", encoding="mutf-8")
    with pytest.raises(ValueError, match="^wtf-8 encodes with errors .* not 'surrogatepass'"):
        Utf8Encoder("surrogatepass", encoding="wtf-8")
    with pytest.raises(ValueError, match="^utf-8-rfc2279 encodes with errors 'replace', "
                                         "'strict', not 'surrogatepass'"):
        Utf8Encoder("surrogatepass", encoding="utf-8-rfc2279")
    with pytest.raises(ValueError, match="^encoding 'utf-16-le' is not offered in gateware"):
        Utf8Encoder(encoding="utf-16-le")
    with pytest.raises(ValueError, match="^unknown encoding 'latin-1'"):
        Utf8Encoder(encoding="latin-1")
    with pytest.raises(TypeError, match="^encoding must be a string"):
        Utf8Encoder(encoding=8)
    with pytest.raises(TypeError, match="^carry_error must be a bool, not 1$"):
        Utf8Encoder(encoding="wtf-8", carry_error=1)


@pytest.mark.parametrize("folder, encoding", [
    ("cesu8", "cesu-8"), ("mutf8", "mutf-8"), ("wtf8", "wtf-8"), ("bom", "utf-8-sig")])
def test_corpora(folder, encoding):
    """The family corpora's encoding cases (../shared/corpora: ICU, Rust std, the mutf8 crates,
    ...), one message each, in one stream: the bytes they expect (which the model gives, see
    tests/test_encodings_corpora.py). Cases with no input have no beat to send."""
    corpora.require()
    cases = [case for _, case in corpora.family_cases(folder)
             if case["op"] in ("encode", "roundtrip", "pair", "from_utf16", "pair_utf16")
             and case.get("encoding", "utf-8+addBOM") == "utf-8+addBOM"
             and "expected_hex" in case and case.get("input_utf16", case.get("input_codepoints"))]
    assert cases
    messages = [case.get("input_utf16", case.get("input_codepoints")) for case in cases]
    beats, _ = run_encoder(messages, encoding, "replace", stall=0.2, seed=7)
    assert [data for data, _ in encoded_messages(beats)] == \
        [corpora.hex_bytes(case["expected_hex"]) for case in cases]


# -- the stages on their own ----------------------------------------------------------------------

def _units_run(dut, messages, **kwargs):
    items = [{"codepoint": unit, "last": int(index == len(units) - 1)}
             for units in messages for index, unit in enumerate(units)]
    return run_stream(dut, items, **kwargs)


# -- every code point, compiled -------------------------------------------------------------------

@pytest.mark.exhaustive
@pytest.mark.parametrize("encoding, errors", [
    (encoding, ENCODE_POLICIES[encoding][0]) for encoding in ENCODER_ENCODINGS
    if encoding != "utf-8"] + [("utf-8", "surrogatepass")])
def test_every_code_point_compiled(encoding, errors):
    """Every value 0..0x10FFFF (surrogates too: for WTF-8, DBFF DC00 is the one pair) and the
    values around 2**k above, as one message, on the compiled engine against the model. (The
    other policies differ from these only in the shift encoder's error beats, which the random
    tests above cover.)"""
    from utf8_gateware.sim.compiled import build_stream_model    # needs a C++ compiler
    units = np.array(list(range(0x110000)) + [2**k + d for k in range(21, 32) for d in (-1, 0, 1)]
                     + [0xFFFFFFFF, 0x41], dtype="<u4")
    model = build_stream_model(Utf8Encoder(errors, encoding=encoding),
                               f"encoder-{encoding}-{errors}")
    beats = np.frombuffer(model.run(units.tobytes(), in_bytes=4).data, dtype="<u2")
    data, kind, last = (beats >> EncodedByteLayout[name].offset &
                        ((1 << EncodedByteLayout[name].width) - 1)
                        for name in ("data", "error", "last"))
    assert list(np.flatnonzero(last)) == [len(beats) - 1]
    want = encode(units.tolist(), encoding, errors)
    assert data[(kind == 0) | (data != 0)].astype("u1").tobytes() == want.data   # no markers
    assert [ErrorKind(k) for k in kind[kind != 0]] == [k for _, k in want.errors]


#: The most core LCs (UP5K, seed 1) of the encoders whose cells issue #10 bounds, as measured:
#: ``utf-8`` was 163 / 162 before its enable copies took 25 flip-flops, B's ``take`` inputs,
#: ``i.ready`` and ``adv``'s first copy became enable copies and A3 lost ``n2``, ``n3``,
#: ``errq`` and A2 two lead bits, 152 / 152 before A3 lost ``lead[7]`` (B's ``~n1``) and ``n4``
#: (B's ``~n12 & lead[4]``); ``utf-8-rfc2279`` 292 / 291 before its fields were moved up by 1,
#: 2, 1 (a barrel) instead of being picked per length, 260 / 260 before A4 lost ``r2`` (B's
#: ``r12 & ~r1``) and ``lead[7]`` (B's ``~r1``) and A3 ``g2``, ``g3`` (A4's ``~n1``, ``~n1 &
#: ~n2``); ``wtf-8`` 316 with five joining stages in front of A1 and squeezing enables, 246
#: with its pairing stages W and X (a pair written as two characters) before ``w[1:0]`` came
#: from ``pa``, the lead byte's bit 4 from ``r4 | pl`` and ``bs`` from ``big``, 233 before X
#: made ``lo`` (from ``p0``, ``pa``) and ``take``, ``adv`` drove 32 enables a copy, 222 before
#: W's ``z21v`` took ``~big`` in (W and X hold no ``big``), 220 before A2's ``bmp`` stood for
#: ``hz`` (A1 holds no ``z20``); ``utf-8-rfc2279`` ``strict`` 256 before its ``i.ready``
#: was ``take``'s first copy (``idle``'s) instead of a copy of its own (stop 28).
MOST_LCS = {("utf-8", "replace"): 149, ("utf-8", "strict"): 149,
            ("wtf-8", "replace"): 221, ("wtf-8", "strict"): 221,
            ("utf-8-rfc2279", "replace"): 257, ("utf-8-rfc2279", "strict"): 255}


@pytest.mark.slow
@pytest.mark.parametrize("encoding, errors", [("utf-8-rfc2279", "replace"),
                                              ("utf-8-rfc2279", "strict"), ("wtf-8", "strict"),
                                              ("wtf-8", "replace"),
                                              ("utf-8", "replace"), ("utf-8", "strict")])
def test_one_lut_level(encoding, errors, tmp_path):
    """After synth_ice40 no LUT4 of the core reads another LUT4 and no clock enable is a LUT4's
    output: the shift encoder's and the RFC 2279 core's stages and WTF-8's pairing stages are
    one LUT level between flip-flops (a lead that waits for the next unit is kept by a LUT of
    its own bit, not by a clock enable). The cores of :data:`MOST_LCS` take no more LCs than
    measured."""
    report = synth.synth_target("encoder", errors=errors, encoding=encoding, build_dir=tmp_path)
    with open(report["files"]["netlist"]) as file:
        netlist = json.load(file)
    assert second_lut_levels(netlist) == []
    assert report["core_lc"] <= MOST_LCS.get((encoding, errors), report["core_lc"])
    if encoding == "utf-8":
        # B's payload select is `take`'s first copy, a flip-flop that drives no clock enable
        # (PLAIN_CE_FANOUT); before, that copy had no load and synthesis removed it.
        loads = net_loads(netlist, "core.stage0.take")
        assert "E" not in loads and loads.count("I") >= 13, loads   # and its own next state


def net_loads(netlist, name):
    """The input ports (``"E"``, ``"I"`` for a LUT4's ``I0``..``I3``, ...) that read the
    one-bit net ``name`` of a ``synth_ice40`` JSON netlist's top module, one per load (none
    if synthesis removed the net)."""
    top = next(module for module in netlist["modules"].values()
               if module.get("attributes", {}).get("top"))
    if name not in top["netnames"]:
        return []
    bit, = top["netnames"][name]["bits"]
    return sorted(port.rstrip("0123") for cell in top["cells"].values()
                  for port, bits in cell["connections"].items()
                  if cell["port_directions"][port] == "input" and bit in bits)
