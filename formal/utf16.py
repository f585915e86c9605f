"""Formal properties of the UTF-16 cores, built from :mod:`.checks`' building blocks.

* :class:`Utf16RoundTrip`: :class:`~utf8_gateware.hdl.utf16_decoder.Utf16Decoder` after
  :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder` is the identity on scalar values (the
  same values in order, the same ``last``, no error), under any input and backpressure, with
  bounded liveness.
* :class:`JoiningProperties`: on any sequence of code units, the decoder never emits a
  surrogate as a scalar (a surrogate value is always flagged ``SURROGATE``) and never emits a
  lead surrogate directly followed, in the same message, by a trail surrogate (a pair is always
  joined).

Both are bounded model checks (:data:`PROOFS`) with covers that show they are not vacuous.
"""

from amaranth.hdl import Assert, Cover, Elaboratable, Module, Signal

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.utf16_decoder import UTF16_DECODE_ERRORS, Utf16Decoder
from utf8_gateware.hdl.utf16_encoder import Utf16Encoder
from .checks import Proof, assert_stream_rules, check_scalar_round_trip, drive_sink, drive_source


__all__ = ["Utf16RoundTrip", "JoiningProperties", "PROOFS"]


def _surrogate(value, first=0xD800, last=0xDFFF):
    return (value >= first) & (value <= last)


class Utf16RoundTrip(Elaboratable):
    """UTF-16 encoder (``replace``) then decoder (``replace``) is the identity on scalar values;
    the encoder flags no error; everything is out ``drain`` cycles after the last input with the
    sink ready."""
    def __init__(self, drain=Utf16Encoder.LATENCY + Utf16Decoder.LATENCY):
        self.drain = drain

    def elaborate(self, platform):
        m = Module()
        m.submodules.encoder = encoder = Utf16Encoder("replace")
        m.submodules.decoder = decoder = Utf16Decoder("replace")
        o_xfer, out = check_scalar_round_trip(m, encoder, decoder, drain=self.drain,
                                              name="decode(encode(values))")
        m.d.comb += [
            Cover(o_xfer & (out.codepoint >= 0x10000) & out.last),
            Cover(o_xfer & (out.codepoint < 0x10000) & ~out.last),
        ]
        return m


class JoiningProperties(Elaboratable):
    """The decoder (``errors``) on free code units: a surrogate value on ``o`` is flagged
    ``SURROGATE`` (never a scalar); no output carrying a lead surrogate is directly followed, in
    the same message, by one carrying a trail surrogate (a pair is never emitted as two).
    ``factory(errors)`` makes the design under test (a mutant, in the tests)."""
    def __init__(self, errors, factory=Utf16Decoder):
        self.errors, self.factory = errors, factory

    def elaborate(self, platform):
        m = Module()
        m.submodules.decoder = decoder = self.factory(self.errors)
        drive_source(m, decoder.i)
        o_xfer = drive_sink(m, decoder.o)
        assert_stream_rules(m, decoder.o, "decoder.o")
        out = decoder.o.payload
        after_lead = Signal()      # the previous output of this message carried a lead
        with m.If(o_xfer):
            m.d.sync += after_lead.eq(_surrogate(out.codepoint, 0xD800, 0xDBFF) & ~out.last)
        m.d.comb += [
            Assert(~decoder.o.valid | ~_surrogate(out.codepoint) |
                   (out.error == ErrorKind.SURROGATE),
                   "a surrogate came out as a scalar"),
            Assert(~decoder.o.valid | ~after_lead | ~_surrogate(out.codepoint, 0xDC00, 0xDFFF),
                   "a surrogate pair came out as two outputs"),
            Cover(o_xfer & (out.codepoint >= 0x10000) & (out.error == ErrorKind.NONE)),
            # A lone lead passed through, then an output of the same message (surrogatepass:
            # the pair property's premise is reachable); with replace a lone surrogate's U+FFFD.
            Cover(o_xfer & (out.error == ErrorKind.SURROGATE) &
                  (after_lead if self.errors == "surrogatepass" else 1)),
            Cover(o_xfer & (out.error == ErrorKind.TRUNCATED)),
        ]
        return m


#: The UTF-16 cores' proofs (run by ``tests/test_formal_utf16.py``).
PROOFS = [
    Proof("utf16-roundtrip",
          "Utf16Decoder(replace) after Utf16Encoder(replace) is the identity on scalar values "
          "(no error, same `last`), output stream rules, bounded liveness",
          "bmc", 12, 12, lambda: Utf16RoundTrip(), cost=5),
    *(Proof(f"utf16-joining-{errors}",
            f"Utf16Decoder({errors}): a surrogate never comes out as a scalar, a pair never as "
            f"two outputs; output stream rules",
            "bmc", 12, 12, lambda errors=errors: JoiningProperties(errors), cost=4)
      for errors in UTF16_DECODE_ERRORS),
]
