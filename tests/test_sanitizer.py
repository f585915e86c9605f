# amaranth: UnusedElaboratable=no
"""The UTF-8 sanitiser (:class:`utf8_gateware.hdl.sanitizer.Utf8Sanitizer`: decoder, adapter,
encoder) in Amaranth's Python simulator.

The plumbing test runs with a stand-in decoder (ASCII passes, every other byte is an error of its
own); the others with the real :class:`~utf8_gateware.hdl.decoder.Utf8Decoder`, against the
reference model and CPython's codec.
"""

import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl import sanitizer as sanitizer_module
from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.encoder import Utf8Encoder
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.layouts import ByteLayout, CodepointLayout
from utf8_gateware.hdl.pipeline import SKID_LATENCY
from utf8_gateware.hdl.sanitizer import SANITIZE_ERRORS, Utf8Sanitizer
from utf8_gateware.sim import reference
from utf8_gateware.sim.testbench import run_stream


def expected_beats(messages, errors, decode=reference.decode):
    """The beats ``(data, error, last)`` the sanitiser must produce for ``messages``."""
    beats = []
    for message in messages:
        start = len(beats)
        for codepoint, kind in decode(message, errors):
            data, _ = reference.encode_unit(codepoint, errors)
            beats += [(byte, kind if index == 0 else ErrorKind.NONE, 0)
                      for index, byte in enumerate(data)]
        assert len(beats) > start
        beats[-1] = (*beats[-1][:2], 1)
    return beats


def sanitize(messages, errors, **kwargs):
    """Run ``messages`` (a list of non-empty byte strings) through the sanitiser."""
    items = [{"data": byte, "last": int(index == len(message) - 1)}
             for message in messages for index, byte in enumerate(message)]
    run = run_stream(Utf8Sanitizer(errors), items, **kwargs)
    return [(int(p.data), ErrorKind(p.error), int(p.last)) for p in run.outputs], run


def random_message(rng, size):
    """Bytes mixing well-formed characters with every kind of ill-formed sequence."""
    pieces = []
    while sum(map(len, pieces)) < size:
        pieces.append(rng.choice([
            lambda: chr(rng.randrange(0x80)).encode(),
            lambda: chr(rng.randrange(0x80, 0x800)).encode(),
            lambda: chr(rng.choice([rng.randrange(0x800, 0xD800),
                                    rng.randrange(0xE000, 0x10000)])).encode(),
            lambda: chr(rng.randrange(0x10000, 0x110000)).encode(),
            lambda: bytes([rng.randrange(0x80, 0x100)]),                  # any non-ASCII byte
            lambda: chr(rng.choice([rng.randrange(0x800, 0xD800),           # truncated
                                    rng.randrange(0xE000, 0x110000)])).encode()[:-1],
            lambda: rng.choice([b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf",
                                b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf4\x90\x80\x80",
                                b"\xf5\x80", b"\xfe", b"\xff", b"\x80", b"\xbf\xbf"]),
        ])())
    return b"".join(pieces)


# -------------------------------------------------------------------------------------------------
# Plumbing, with a stand-in decoder

class AsciiDecoder(wiring.Component):
    """Stand-in decoder: ASCII bytes are code points, any other byte is an ``INVALID_BYTE``
    subpart of its own (U+FFFD, or the escape U+DC00 + byte). One output register."""
    i: In(stream.Signature(ByteLayout))
    o: Out(stream.Signature(CodepointLayout))

    def __init__(self, errors):
        self.errors = errors
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.i.ready.eq(~self.o.valid | self.o.ready)
        with m.If(self.i.ready):
            m.d.sync += [
                self.o.valid.eq(self.i.valid),
                self.o.p.last.eq(self.i.p.last),
            ]
            with m.If(self.i.p.data[7]):
                m.d.sync += [
                    self.o.p.codepoint.eq(0xDC00 | self.i.p.data
                                          if self.errors == "surrogateescape" else 0xFFFD),
                    self.o.p.error.eq(ErrorKind.INVALID_BYTE),
                ]
            with m.Else():
                m.d.sync += [
                    self.o.p.codepoint.eq(self.i.p.data),
                    self.o.p.error.eq(ErrorKind.NONE),
                ]
        return m


def ascii_decode(data, errors):
    return [reference.Decoded(byte) if byte < 0x80 else
            reference.Decoded(0xDC00 + byte if errors == "surrogateescape" else 0xFFFD,
                              ErrorKind.INVALID_BYTE)
            for byte in data]


@pytest.mark.parametrize("errors", SANITIZE_ERRORS)
def test_plumbing_with_stand_in_decoder(errors, monkeypatch):
    monkeypatch.setattr(sanitizer_module, "Utf8Decoder", AsciiDecoder)
    rng = random.Random(f"plumbing-{errors}")
    messages = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))) for _ in range(8)]
    want = expected_beats(messages, errors, decode=ascii_decode)
    got, _ = sanitize(messages, errors)
    assert got == want
    got, _ = sanitize(messages, errors, gap=0.3, stall=0.4, seed=2)
    assert got == want
    if errors == "surrogateescape":
        assert bytes(byte for byte, _, _ in got) == b"".join(messages)


# -------------------------------------------------------------------------------------------------
# With the real decoder

@pytest.mark.parametrize("seed", [1, 2, 3])
def test_surrogateescape_gives_back_the_input(seed):
    """decode(surrogateescape) then encode(surrogateescape) reproduces any byte string."""
    rng = random.Random(f"escape-{seed}")
    messages = [random_message(rng, rng.randrange(1, 60)) for _ in range(6)]
    gap, stall = [(0.0, 0.0), (0.3, 0.3), (0.1, 0.6)][seed - 1]
    got, _ = sanitize(messages, "surrogateescape", gap=gap, stall=stall, seed=seed)
    assert bytes(byte for byte, _, _ in got) == b"".join(messages)
    assert got == expected_beats(messages, "surrogateescape")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_replace_gives_well_formed_utf8(seed):
    """With replace the output is CPython's ``decode("utf-8", "replace").encode("utf-8")``."""
    rng = random.Random(f"replace-{seed}")
    messages = [random_message(rng, rng.randrange(1, 60)) for _ in range(6)]
    gap, stall = [(0.0, 0.0), (0.3, 0.3), (0.1, 0.6)][seed - 1]
    got, _ = sanitize(messages, "replace", gap=gap, stall=stall, seed=seed)
    want = b"".join(message.decode("utf-8", "replace").encode("utf-8") for message in messages)
    assert bytes(byte for byte, _, _ in got) == want
    assert got == expected_beats(messages, "replace")


@pytest.mark.parametrize("errors", SANITIZE_ERRORS)
def test_short_messages(errors):
    """One-byte and truncated messages each end with exactly one `last` byte."""
    messages = [b"a", b"\xff", b"\xe2\x82", b"\xf0\x9f\x98", b"\xc3\xa9", b"\x80", b"\xed\xa0"]
    got, _ = sanitize(messages, errors, stall=0.3, seed=7)
    assert got == expected_beats(messages, errors)
    assert sum(last for _, _, last in got) == len(messages)


@pytest.mark.parametrize("errors", SANITIZE_ERRORS)
@pytest.mark.parametrize("low, high", [(0x20, 0x80), (0x400, 0x500), (0x4E00, 0xA000),
                                       (0x1F300, 0x1FA00)])
def test_pace(errors, low, high):
    """Text of characters of one length flows at one byte per cycle: after the first byte, no
    idle output cycle. (Text that changes length from character to character loses some cycles
    when the decoder's outputs come faster than the encoder takes them.)"""
    rng = random.Random(f"pace-{errors}-{low}")
    text = "".join(chr(rng.randrange(low, high)) for _ in range(40)).encode()
    got, run = sanitize([text], errors)
    assert bytes(byte for byte, _, _ in got) == text
    assert all(kind is ErrorKind.NONE for _, kind, _ in got)
    assert run.out_cycles == list(range(run.out_cycles[0], run.out_cycles[0] + len(text)))
    if low < 0x80:
        # The documented latency: the decoder's, the buffer's and the encoder's.
        latency = Utf8Decoder.latency(errors) + SKID_LATENCY + \
            Utf8Encoder(errors, carry_error=True).LATENCY
        assert run.out_cycles[0] - run.in_cycles[0] <= latency


def random_lengths(rng, count):
    """UTF-8 text of ``count`` characters whose lengths (1 to 4 bytes) are drawn uniformly."""
    return "".join(chr(rng.choice([rng.randrange(0x20, 0x80), rng.randrange(0x80, 0x800),
                                   rng.randrange(0x4E00, 0xA000), rng.randrange(0x10000, 0x110000)]))
                   for _ in range(count)).encode()


@pytest.mark.parametrize("errors", SANITIZE_ERRORS)
def test_pace_of_mixed_lengths(errors):
    """Random 1-4 byte characters, sink always ready: at least 0.94 bytes per cycle from the
    first output byte to the last (the buffer between the cores holds three items: 0.94 and
    0.95 for these texts; with the one register before, 0.92 and 0.91)."""
    for seed in (1, 2):
        text = random_lengths(random.Random(seed), 300)
        got, run = sanitize([text], errors)
        assert bytes(byte for byte, _, _ in got) == text
        assert len(text) / (run.out_cycles[-1] - run.out_cycles[0] + 1) >= 0.94


@pytest.mark.slow
@pytest.mark.parametrize("errors", SANITIZE_ERRORS)
def test_one_lut_level(errors, tmp_path):
    """After synth_ice40 no LUT4 of the sanitiser reads another LUT4: the decoder's ``adv``
    reads the buffer's ``ready``, a flip-flop (before, ``~r_valid | i.ready`` of the register
    between was a LUT in front of it). (The buffer's output register has a LUT, ``go``, as
    clock enable: :func:`~utf8_gateware.hdl.pipeline.skid_buffer`.)"""
    import json
    from utf8_gateware.hdl import synth
    from test_decoder_family import second_lut_levels
    report = synth.synth_target("sanitizer", errors=errors, build_dir=tmp_path)
    with open(report["files"]["netlist"]) as file:
        assert second_lut_levels(json.load(file), enables=False) == []


def test_parameters():
    assert Utf8Sanitizer().errors == "replace"
    assert Utf8Sanitizer("surrogateescape").errors == "surrogateescape"
    with pytest.raises(ValueError, match="errors must be one of"):
        Utf8Sanitizer("strict")
    with pytest.raises(TypeError, match="errors must be a string"):
        Utf8Sanitizer(0)
