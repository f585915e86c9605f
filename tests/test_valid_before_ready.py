# amaranth: UnusedElaboratable=no
"""Stream rule 3 of ``amaranth.lib.stream`` ("the producer must not wait for ``ready`` to be
asserted before asserting ``valid``"), checked against a sink that rule 4 allows and AXI4-Stream
too: one that raises ``ready`` only after it has seen ``valid``. The input comes after the core
has been idle for a while (and right after reset), a few beats apart, so that nothing the core
took while its sink happened to be ready can hide a wait for ``ready``.

Until stop 27 the shift encoder (and so the cores built on it) waited for ``o.ready`` before a
character entered its output slot (``take``'s next state is ``o.ready & ...``); its ``idle`` flag
now sets ``take`` while the slot and the skid register are empty; the byte-level sanitiser's
front, likewise, moves without ``o.ready`` while its slot and skid are empty."""

import pytest
from amaranth.sim import Simulator

from utf8_gateware.hdl.cesu8_expander import Cesu8Expander
from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.encoder import Utf8Encoder
from utf8_gateware.hdl.sanitizer import Utf8Sanitizer
from utf8_gateware.hdl.transcoder import Transcoder
from utf8_gateware.hdl.utf16_decoder import Utf16Decoder
from utf8_gateware.hdl.utf16_encoder import Utf16Encoder
from utf8_gateware.hdl.utf8_bom_writer import Utf8BomWriter
from utf8_gateware.hdl.utf16_to_utf8 import Utf16ToUtf8
from utf8_gateware.hdl.validator import Utf8Validator


def first_field(dut):
    """The input payload's value field (``data``, ``codepoint`` or ``unit``)."""
    names = [name for name, *_ in dut.i.p.shape()]
    return next(name for name in ("data", "codepoint", "unit") if name in names)


def outputs_with_a_waiting_sink(dut, values, *, wait_first=40, spacing=20, cycles=600):
    """Offer ``values`` (the last with ``last``) ``spacing`` cycles apart after ``wait_first``
    idle cycles, to a sink that raises ``ready`` only in the cycle after it saw ``valid``;
    return how many inputs were taken and how many outputs came out."""
    field = first_field(dut)
    taken, outputs = [], []

    async def source(ctx):
        await ctx.tick().repeat(wait_first)
        for index, value in enumerate(values):
            await ctx.tick().repeat(spacing)
            ctx.set(getattr(dut.i.p, field), value)
            ctx.set(dut.i.p.last, int(index == len(values) - 1))
            ctx.set(dut.i.valid, 1)
            for _ in range(100):
                ready = ctx.get(dut.i.ready)
                await ctx.tick()
                if ready:
                    taken.append(value)
                    break
            ctx.set(dut.i.valid, 0)
            if len(taken) <= index:
                return

    async def sink(ctx):
        for _ in range(cycles):
            if ctx.get(dut.o.valid):
                ctx.set(dut.o.ready, 1)
                await ctx.tick()
                outputs.append(1)
                ctx.set(dut.o.ready, 0)
            else:
                await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(source)
    sim.add_testbench(sink)
    sim.run()
    return len(taken), len(outputs)



CASES = [
    pytest.param(lambda: Utf8Decoder("replace"), id="decoder-replace"),
    pytest.param(lambda: Utf8Decoder("surrogateescape"), id="decoder-surrogateescape"),
    pytest.param(lambda: Utf8Validator(), id="validator"),
    pytest.param(lambda: Utf8Sanitizer("surrogateescape"), id="sanitizer-surrogateescape"),
    pytest.param(lambda: Utf8Sanitizer("replace"), id="sanitizer-replace"),
    pytest.param(lambda: Utf8Encoder("replace"), id="encoder-replace"),
    pytest.param(lambda: Utf8Encoder("strict"), id="encoder-strict"),
    pytest.param(lambda: Utf8Encoder("replace", encoding="cesu-8"), id="encoder-cesu-8"),
    pytest.param(lambda: Utf8Encoder("replace", encoding="utf-8-rfc2279"), id="encoder-rfc2279"),
    pytest.param(lambda: Utf8Decoder("surrogateescape", encoding="cesu-8"),
                 id="decoder-cesu-8-surrogateescape"),
    pytest.param(lambda: Transcoder("utf-8", "utf-16-le"), id="transcoder-utf-16-le"),
    pytest.param(lambda: Transcoder("utf-16-le", "utf-8"), id="transcoder-from-utf-16-le"),
    pytest.param(lambda: Transcoder("utf-8", "utf-8-sig"), id="transcoder-utf-8-sig"),
    pytest.param(lambda: Utf8BomWriter(), id="utf8_bom_writer"),
    pytest.param(lambda: Transcoder("utf-8", "cesu-8"), id="transcoder-cesu-8"),
    pytest.param(lambda: Transcoder("utf-8", "mutf-8"), id="transcoder-mutf-8"),
    pytest.param(lambda: Cesu8Expander("mutf-8"), id="cesu8_expander"),
    pytest.param(lambda: Utf16Encoder(), id="utf16_encoder"),
    pytest.param(lambda: Utf16Decoder(), id="utf16_decoder"),
    pytest.param(lambda: Utf16Decoder(units=True), id="utf16_decoder-units"),
    pytest.param(lambda: Transcoder("utf-16-le", "utf-16-be"), id="transcoder-utf-16-units"),
    pytest.param(lambda: Transcoder("utf-16-le", "utf-16"), id="transcoder-utf-16-marked"),
    pytest.param(lambda: Utf16ToUtf8(), id="utf16_to_utf8"),
]


@pytest.mark.parametrize("make", CASES)
def test_valid_does_not_wait_for_ready(make):
    dut = make()
    taken, outputs = outputs_with_a_waiting_sink(dut, [0x61, 0x62, 0x63])
    assert taken == 3, "the core stopped taking input while its output was empty"
    assert outputs >= 1
