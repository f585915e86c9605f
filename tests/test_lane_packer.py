# amaranth: UnusedElaboratable=no
"""The lane packer: the valid lanes of each beat moved down to lanes 0..count-1."""

import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.lane_packer import LanePacker, packed_beat_layout
from utf8_gateware.hdl.layouts import CodepointLaneLayout, byte_beat_layout
from utf8_gateware.sim import reference
from utf8_gateware.sim.testbench import run_stream


ITEM = data.StructLayout({"value": 12, "valid": 1})


def test_parameters():
    assert LanePacker(ITEM, lanes=4).lanes == 4
    with pytest.raises(TypeError, match=r"^lane must be a data.StructLayout"):
        LanePacker(12, lanes=4)
    with pytest.raises(ValueError, match=r"^lane must have a 1-bit 'valid' field$"):
        LanePacker(data.StructLayout({"value": 12}), lanes=4)
    with pytest.raises(ValueError, match=r"^lanes must be 1 to 64, not 0$"):
        LanePacker(ITEM, lanes=0)
    with pytest.raises(TypeError, match=r"^lanes must be an integer, not '4'$"):
        LanePacker(ITEM, lanes="4")


def sparse_beats(rng, lanes, count):
    """Random beats: each lane valid with probability 1/2 (so some beats are empty), junk in
    the empty lanes, ``last`` on one beat in five."""
    beats = []
    for _ in range(count):
        beat = {"lanes": [{"value": rng.getrandbits(12), "valid": rng.getrandbits(1)}
                          for _ in range(lanes)],
                "last": int(rng.random() < 0.2)}
        beats.append(beat)
    beats[-1]["last"] = 1
    return beats


@pytest.mark.parametrize("lanes", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("gap, stall", [(0, 0), (0.3, 0.5)])
def test_random_beats(lanes, gap, stall):
    rng = random.Random(lanes)
    beats = sparse_beats(rng, lanes, 200)
    run = run_stream(LanePacker(ITEM, lanes=lanes), beats, gap=gap, stall=stall, seed=lanes,
                     name=f"packer{lanes}")
    # The same valid items in the same order, each beat packed, and a beat for every input beat
    # with a valid lane or with last (whose last it carries).
    want = [beat for beat in beats if any(lane["valid"] for lane in beat["lanes"]) or beat["last"]]
    assert len(run.outputs) == len(want)
    for got, beat in zip(run.outputs, want):
        items = [lane["value"] for lane in beat["lanes"] if lane["valid"]]
        assert got.count == len(items) and got.last == beat["last"]
        assert [got.lanes[k].value for k in range(got.count)] == items
        assert [got.lanes[k].valid for k in range(lanes)] == \
            [1] * len(items) + [0] * (lanes - len(items))
    # One beat every cycle with the sink always ready.
    if gap == stall == 0:
        first = run.in_cycles[0]
        assert run.in_cycles == list(range(first, first + len(beats)))


class PackedDecoder(wiring.Component):
    """``Utf8Decoder(lanes=N)`` followed by a :class:`LanePacker`, composed with
    ``wiring.connect`` as a user would."""

    def __init__(self, errors, lanes):
        self._decoder = Utf8Decoder(errors, lanes=lanes)
        self._packer = LanePacker(CodepointLaneLayout, lanes=lanes)
        super().__init__({"i": In(stream.Signature(byte_beat_layout(lanes))),
                          "o": Out(stream.Signature(
                              packed_beat_layout(CodepointLaneLayout, lanes)))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.decoder, m.submodules.packer = self._decoder, self._packer
        wiring.connect(m, wiring.flipped(self.i), self._decoder.i)
        wiring.connect(m, self._decoder.o, self._packer.i)
        wiring.connect(m, self._packer.o, wiring.flipped(self.o))
        return m


@pytest.mark.parametrize("lanes", [4, 16])
def test_after_the_decoder(lanes):
    # Packed, the decoder's outputs are the reference model's, lane after lane.
    rng = random.Random(lanes)
    alphabet = b"a\x80\xbf\xc2\xe0\xe1\xed\xf0\xf4\xff\x9f\xa0"
    message = bytes(rng.choice(alphabet) for _ in range(40 * lanes))
    inputs = []
    for position in range(0, len(message), lanes):
        chunk = message[position:position + lanes]
        inputs.append({"data": int.from_bytes(chunk.ljust(lanes, b"\0"), "little"),
                       "count": len(chunk), "last": int(position + lanes >= len(message))})
    run = run_stream(PackedDecoder("replace", lanes), inputs, stall=0.3, seed=1,
                     name=f"packed-decoder{lanes}")
    got = [(beat.lanes[k].codepoint, beat.lanes[k].error)
           for beat in run.outputs for k in range(beat.count)]
    assert got == [(d.codepoint, d.error) for d in reference.decode(message, "replace")]
    assert [beat.last for beat in run.outputs][-1] == 1
    assert all(beat.count for beat in run.outputs)
