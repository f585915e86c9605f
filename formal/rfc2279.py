"""Formal property of the RFC 2279 cores, built from :mod:`.checks`' building blocks.

:class:`Rfc2279RoundTrip`: ``Utf8Decoder(encoding="utf-8-rfc2279")`` after
``Utf8Encoder(encoding="utf-8-rfc2279")`` is the identity on every value below 0x80000000
(surrogate values included): the same values in order, the same ``last``, no error, both output
streams keeping the stream rules, under any input and backpressure, with bounded liveness. A
bounded model check (:data:`PROOFS`), with covers for the 5- and 6-byte forms.
"""

from amaranth.hdl import Cover, Elaboratable, Module

from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.encoder import Utf8Encoder
from .checks import Proof, check_scalar_round_trip


__all__ = ["Rfc2279RoundTrip", "PROOFS"]


ENCODING = "utf-8-rfc2279"


class Rfc2279RoundTrip(Elaboratable):
    """RFC 2279 encoder (``replace``) then decoder is the identity on values below
    0x80000000; everything is out ``drain`` cycles after the last input with the sink ready."""
    def __init__(self, drain=24):
        self.drain = drain

    def elaborate(self, platform):
        m = Module()
        m.submodules.encoder = encoder = Utf8Encoder("replace", encoding=ENCODING)
        m.submodules.decoder = decoder = Utf8Decoder(encoding=ENCODING)
        o_xfer, out = check_scalar_round_trip(m, encoder, decoder, drain=self.drain,
                                              name="decode(encode(values))",
                                              values=lambda value: value < 0x80000000,
                                              width=31)
        m.d.comb += [
            Cover(o_xfer & (out.codepoint >= 0x4000000) & out.last),
            Cover(o_xfer & (out.codepoint >= 0x200000) & (out.codepoint < 0x4000000)),
        ]
        return m


#: The RFC 2279 cores' proof (run by ``tests/test_rfc2279.py``). Depth 19 follows a 6-byte value
#: through both cores: the covers reach a 5-byte value's output in step 17 and a 6-byte one's in
#: step 18. It was 21 until stop 27, whose stream rule 3 fix lets the encoder's stages take the
#: first value two cycles earlier (they started with ``take`` low); at 21 the proof then checked
#: two more cycles of input and took 323 s (34 s before the fix) on the shared 2-core machine; at
#: 19 proof and cover take about 60 s there.
PROOFS = [
    Proof("rfc2279-roundtrip",
          "Utf8Decoder(utf-8-rfc2279) after Utf8Encoder(utf-8-rfc2279, replace) is the identity "
          "on values below 0x80000000 (no error, same `last`), output stream rules, bounded "
          "liveness", "bmc", 19, 19, lambda: Rfc2279RoundTrip(), cost=15),
]
