"""The round trips of the specification models, for all time: the third leg of the round trips
4a and 4b of the real cores.

The real cores are proven equal to their spec models for all time, under any input and
backpressure (``encoder-forever-*``: :class:`~utf8_gateware.hdl.encoder.Utf8Encoder` ==
:class:`~utf8_gateware.formal.spec_encoder.SpecEncoder`; ``decoder-spec-forever-*``:
:class:`~utf8_gateware.hdl.decoder.Utf8Decoder` ==
:class:`~utf8_gateware.formal.spec_decoder.SpecDecoder`): each core's output sequence is its
model's for the items it takes, nothing lost, duplicated or reordered, and it drains. So a
round trip through both cores outputs what the round trip through both models does, and these
harnesses prove that for every input, by k-induction:

* :class:`SpecUnitsRoundTrip` (4a): a scalar value through ``SpecEncoder`` (its 1..4 beats)
  then ``SpecDecoder`` (four lanes: the beats of one unit in one cycle) comes back as itself,
  without error, with its ``last``, and leaves no prefix pending;
* :class:`SpecBytesRoundTrip` (4b, ``surrogateescape``): each output of ``SpecDecoder`` through
  ``SpecEncoder`` (four copies: a byte's outputs in one cycle), re-encodes, without error, to
  exactly the bytes the decoder retires with it (its pending prefix, then the byte unless it
  starts a new prefix), ``last`` on the message's final byte; a byte that retires nothing joins
  the prefix. So the bytes out are the bytes in, in order.
"""

from amaranth.hdl import Array, Assert, Assume, Cover, Elaboratable, Module, Mux, Signal

from utf8_gateware.hdl.error_kind import ErrorKind
from .checks import drive_source
from .decoder_invariants import prefix_well_formed
from .spec_decoder import MAX_OUTPUTS_PER_BYTE, SpecDecoder
from .spec_encoder import SpecEncoder


__all__ = ["SpecUnitsRoundTrip", "SpecBytesRoundTrip"]


class SpecUnitsRoundTrip(Elaboratable):
    """4a on the spec models (``replace``): see the module documentation. ``encoder(errors)``
    makes the encoder model (a test passes a mutated one)."""
    def __init__(self, encoder=SpecEncoder):
        self.encoder = encoder

    def elaborate(self, platform):
        m = Module()
        m.submodules.encoder = encoder = self.encoder("replace")
        m.submodules.decoder = decoder = SpecDecoder("replace", lanes=4)
        drive_source(m, encoder.i, rules=False)
        unit, last, valid = encoder.i.payload.codepoint, encoder.i.payload.last, encoder.i.valid
        m.d.comb += Assume((unit < 0x110000) & ~((unit >= 0xD800) & (unit <= 0xDFFF)))
        beat, beats = decoder.i.payload, encoder.o
        m.d.comb += [decoder.i.valid.eq(valid), beat.count.eq(beats.count), beat.last.eq(last)]
        for lane, item in enumerate(beats.items):
            m.d.comb += beat.data[8 * lane:8 * lane + 8].eq(item.data)
        m.d.comb += Assert(decoder.k == 0, "spec round trip: a prefix left pending")
        for lane, out in enumerate(decoder.o):
            final = valid & (lane == beats.count - 1)
            m.d.comb += [
                Assert(~valid | (lane >= beats.count) | (beats.items[lane].error == ErrorKind.NONE),
                       "spec round trip: the encoder flagged an error for a scalar value"),
                Assert(final | (out.count == 0),
                       "spec round trip: an output before the unit's last byte"),
                Assert(~final | ((out.count == 1) & (out.items[0].codepoint == unit) &
                                 (out.items[0].error == ErrorKind.NONE) &
                                 (out.items[0].last == last)),
                       "spec round trip: the unit does not come back as itself"),
            ]
        m.d.comb += [Cover(valid & (beats.count == 4) & last), Cover(valid & (unit == 0xFFFD))]
        return m


class SpecBytesRoundTrip(Elaboratable):
    """4b on the spec models (``surrogateescape``): see the module documentation.
    ``encoder(errors)`` makes each encoder model (a test passes a mutated one)."""
    def __init__(self, encoder=SpecEncoder):
        self.encoder = encoder

    def elaborate(self, platform):
        m = Module()
        m.submodules.decoder = decoder = SpecDecoder("surrogateescape")
        drive_source(m, decoder.i, rules=False)
        b, last, valid = decoder.i.payload.data, decoder.i.payload.last, decoder.i.valid
        k, buf, outs = decoder.k, decoder.buf, decoder.o
        m.d.comb += Assert(prefix_well_formed(k, [buf[n] for n in range(3)]),
                           "spec round trip: the pending prefix is not well-formed")

        # The bytes retired with this byte's outputs: the prefix, then `b` unless it starts a
        # new one (next prefix of length 1 after a byte that retires something).
        starts = Signal()
        m.d.comb += starts.eq((b >= 0xC2) & (b < 0xF5) & ~last & (outs.count != 0))
        retired = Signal(range(5))
        m.d.comb += retired.eq(Mux(outs.count == 0, 0, k + ~starts))
        sources = Array([buf[0], buf[1], buf[2], b])

        position = 0         # the re-encoded bytes so far, across the outputs
        for index in range(MAX_OUTPUTS_PER_BYTE):
            m.submodules[f"encoder{index}"] = encoder = self.encoder("surrogateescape")
            item = outs.items[index]
            present = valid & (index < outs.count)
            m.d.comb += [encoder.i.valid.eq(present),
                         encoder.i.payload.codepoint.eq(item.codepoint),
                         encoder.i.payload.last.eq(item.last)]
            for n, beat in enumerate(encoder.o.items):
                here = present & (n < encoder.o.count)
                at = position + n
                source = sources[Mux(at < k, at, 3)[:2]]
                m.d.comb += [
                    Assert(~here | (beat.error == ErrorKind.NONE),
                           "spec round trip: the encoder flagged an error"),
                    Assert(~here | ((at < retired) & (beat.data == source)),
                           "spec round trip: a byte out is not the byte retired in its place"),
                    Assert(~here | (beat.last == (last & (at == retired - 1))),
                           "spec round trip: `last` is not on the message's final byte"),
                ]
            position = position + Mux(present, encoder.o.count, 0)
        # What is not retired is pending: a byte that retires nothing joins the prefix, one
        # that starts a new prefix is its first byte, any other leaves none.
        before = Signal(range(4))
        joined, started, emptied = Signal(), Signal(), Signal()
        first = Signal(8)
        m.d.sync += [before.eq(k), joined.eq(valid & (retired == 0)),
                     started.eq(valid & starts), emptied.eq(valid & (retired != 0) & ~starts),
                     first.eq(b)]
        m.d.comb += [
            Assert(~valid | (position == retired),
                   "spec round trip: the bytes out are not the bytes retired"),
            Assert(~joined | (k == before + 1), "spec round trip: a byte neither out nor pending"),
            Assert(~started | ((k == 1) & (buf[0] == first)),
                   "spec round trip: a byte starting a prefix is not pending"),
            Assert(~emptied | (k == 0), "spec round trip: a retired byte still pending"),
            Cover(valid & (retired == 4) & last),
            Cover(valid & (retired == 4) & (outs.count == 1)),
        ]
        return m
