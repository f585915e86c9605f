"""Example for Amaranth users: utf8-gateware's cores inside a design of your own.

``ControlPictures`` makes untrusted text safe to show on a terminal or a log viewer: it decodes
UTF-8 (every ill-formed sequence becomes U+FFFD, one per maximal subpart, as CPython's
``bytes.decode("utf-8", "replace")``), replaces each C0 control character other than TAB, LF and
CR, and DEL, by its visible symbol from the Control Pictures block (U+0000..U+001F ->
U+2400..U+241F, DEL -> U+2421), and encodes the result as UTF-8 again. It also counts the
ill-formed sequences and the control characters it replaced.

What it shows:

* the cores are ordinary :class:`amaranth.lib.wiring.Component` s with
  :mod:`amaranth.lib.stream` ports and :mod:`amaranth.lib.data` payloads: instantiate them as
  submodules and connect their streams;
* how to put your own logic between two streams whose payloads differ (the decoder's
  ``{codepoint, error, last}`` and the encoder's ``{codepoint, last}``): a register stage with a
  registered ``valid`` that obeys the stream rules (``valid`` and ``payload`` hold until the
  transfer; ``valid`` never depends on ``ready``);
* error kinds are :class:`~utf8_gateware.hdl.error_kind.ErrorKind` members, compared by name.

Ports: ``i`` (bytes: ``data: 8, last``), ``o`` (bytes: ``data: 8, error: ErrorKind, last``),
``errors`` and ``controls`` (16-bit saturating counts since reset). Throughput: one output byte
per cycle (the decoder takes one byte a cycle, the encoder writes one a cycle). Latency: the
decoder's ``LATENCY``, one cycle here, and the encoder's ``LATENCY``.

Run it (from a checkout or after ``pip install utf8-gateware``)::

    python examples/amaranth/control_pictures.py $'tab\\tbell\\a bad\\xff end'

(the shell's ``$'...'`` turns the escapes into bytes; with no argument a built-in sample is used).
"""

import sys

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.encoder import Utf8Encoder
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.layouts import ByteLayout, EncodedByteLayout


#: Control characters that stay as they are.
KEEP = (0x09, 0x0A, 0x0D)


def control_picture(codepoint):
    """The code point ``ControlPictures`` outputs for ``codepoint`` (the software model)."""
    if codepoint < 0x20 and codepoint not in KEEP:
        return 0x2400 + codepoint
    if codepoint == 0x7F:
        return 0x2421
    return codepoint


def expected(data):
    """What ``ControlPictures`` makes of the message ``data`` (bytes): ``(output bytes, ill-formed
    sequences, control characters replaced)``. Uses CPython's codec, which the project checks its
    cores against."""
    text = data.decode("utf-8", "replace")
    out = "".join(chr(control_picture(ord(char))) for char in text)
    controls = sum(control_picture(ord(char)) != ord(char) for char in text)
    errors = len(text) - len(data.decode("utf-8", "ignore"))
    return out.encode("utf-8"), errors, controls


class ControlPictures(wiring.Component):
    """UTF-8 in, UTF-8 with visible control characters out (see the module docstring)."""

    i: In(stream.Signature(ByteLayout))
    o: Out(stream.Signature(EncodedByteLayout))
    errors: Out(16)
    controls: Out(16)

    def elaborate(self, platform):
        m = Module()
        m.submodules.decoder = decoder = Utf8Decoder(errors="replace")
        m.submodules.encoder = encoder = Utf8Encoder(errors="replace")
        wiring.connect(m, wiring.flipped(self.i), decoder.i)
        wiring.connect(m, encoder.o, wiring.flipped(self.o))

        # One register stage between the decoder's output and the encoder's input: it takes a
        # decoded item whenever it is empty or the encoder takes the item it holds.
        valid = Signal()
        codepoint = Signal(21)
        last = Signal()
        take = decoder.o.valid & decoder.o.ready
        m.d.comb += decoder.o.ready.eq(~valid | encoder.i.ready)
        with m.If(decoder.o.ready):
            m.d.sync += valid.eq(decoder.o.valid)
        item = decoder.o.payload
        is_control = ((item.codepoint < 0x20) & (item.codepoint != 0x09) &
                      (item.codepoint != 0x0A) & (item.codepoint != 0x0D)) | \
                     (item.codepoint == 0x7F)
        with m.If(take):
            m.d.sync += [
                codepoint.eq(Mux(is_control,
                                 Mux(item.codepoint == 0x7F, 0x2421, 0x2400 | item.codepoint),
                                 item.codepoint)),
                last.eq(item.last),
            ]
            with m.If((item.error != ErrorKind.NONE) & (self.errors != 0xFFFF)):
                m.d.sync += self.errors.eq(self.errors + 1)
            with m.If(is_control & (self.controls != 0xFFFF)):
                m.d.sync += self.controls.eq(self.controls + 1)
        m.d.comb += [
            encoder.i.valid.eq(valid),
            encoder.i.payload.codepoint.eq(codepoint),
            encoder.i.payload.last.eq(last),
        ]
        return m


def simulate(data):
    """Run ``data`` (bytes, one message) through :class:`ControlPictures` in Amaranth's
    simulator; returns ``(output bytes, errors, controls)``."""
    from amaranth.sim import Simulator

    dut = ControlPictures()
    out = bytearray()
    counts = {}

    async def source(ctx):
        for index, byte in enumerate(data):
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, {"data": byte, "last": index == len(data) - 1})
            await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)

    async def sink(ctx):
        ctx.set(dut.o.ready, 1)
        while True:
            _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            if valid:
                out.append(payload.data)
                if payload.last:
                    break
        counts["errors"], counts["controls"] = ctx.get(dut.errors), ctx.get(dut.controls)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(source, background=True)
    sim.add_testbench(sink)
    sim.run()
    return bytes(out), counts["errors"], counts["controls"]


#: The message used when none is given: a tab, a bell, a lone continuation byte, DEL, a
#: truncated 3-byte sequence at the end.
SAMPLE = b"tab\tbell\x07 bad\x80 del\x7f \xe2\x82\xac ok \xe2\x82"


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    # Command-line arguments arrive as str; surrogateescape gives back the bytes the shell passed.
    data = args[0].encode("utf-8", "surrogateescape") if args else SAMPLE
    if not data:
        print("control_pictures: give a non-empty message", file=sys.stderr)
        return 2
    got, errors, controls = simulate(data)
    print(f"in:  {data!r}")
    print(f"out: {got.decode('utf-8')}   ({errors} ill-formed, {controls} control characters)")
    return 0 if (got, errors, controls) == expected(data) else 1


if __name__ == "__main__":
    sys.exit(main())
