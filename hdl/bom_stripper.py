"""The ``utf-8-sig`` decoding stage: one leading byte order mark dropped per message."""

from amaranth.hdl import Cat, Const, Module, Mux
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from .component import CheckedComponent
from .layouts import ByteLayout
from .pipeline import Pipeline, keep


__all__ = ["ByteOrderMarkStripper"]


class ByteOrderMarkStripper(CheckedComponent):
    """Drops the bytes EF BB BF at the start of each message, in front of a UTF-8 byte decoder:
    CPython's ``utf-8-sig`` decoder, the reference's ``StripByteOrderMark`` (The Unicode
    Standard D95).

    Why bytes and not the decoded U+FEFF: EF BB BF is a complete well-formed sequence, so a
    message that starts with it decodes to U+FEFF followed by what the rest decodes to alone
    (a maximal subpart never reaches back across a complete sequence), and a message that
    does not start with it never decodes to a well-formed U+FEFF first (an error output, a
    U+FFFD or an escape, is not a mark). Dropping the bytes is therefore exactly dropping a
    leading well-formed U+FEFF, and it costs three byte comparisons instead of a 21-bit one.
    A message of exactly EF BB BF disappears, ``last`` with it (the reference gives it no
    output either).

    Ports
    -----
    ``i``, ``o``: :data:`~utf8_gateware.hdl.layouts.ByteLayout` streams (``data: 8``,
    ``last``).

    Latency and throughput
    ----------------------
    A byte is output :attr:`LATENCY` = 4 cycles after its transfer (the input register and
    three output slots) while the sink is ready; one byte is taken every cycle, whatever the
    bytes. A leading EF, or EF BB, is held back (its slot stays empty) until the next byte
    shows whether a mark follows; if not, the held bytes are written into the two slots just
    before that byte's own, which are always empty (they belong to the held bytes or to
    bubbles), as the decoder writes its error bursts: no queue, no stall. ``i.ready`` is a
    flip-flop; ``o.valid`` and ``o.payload`` one LUT of flip-flops. LUT depth: the input
    register holds 4-input nibble tests; the slots' next state is two LUT levels of them and
    the three state flip-flops.
    """

    #: Cycles from a byte's transfer to its output being valid.
    LATENCY = 4

    i: In(stream.Signature(ByteLayout))
    o: Out(stream.Signature(ByteLayout))

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, flush_steps=4)
        m.d.comb += self.i.ready.eq(pipe.adv & ~pipe.flushing)
        p = self.i.payload

        # -- the input register: the byte and its nibble tests ----------------------------------
        a_nv = pipe.control("a_nv", ~self.i.valid)
        a_d = pipe.data("a_d", p.data, 8)
        a_last = pipe.data("a_last", p.last)
        hi_e, hi_b = (pipe.data(f"a_hi{n:x}", p.data[4:8] == n) for n in (0xE, 0xB))
        lo_f, lo_b = (pipe.data(f"a_lo{n:x}", p.data[0:4] == n) for n in (0xF, 0xB))

        # -- the state: at a message's start; EF held; EF BB held (one-hot or none) -------------
        first, held1, held2 = (pipe.register(name) for name in ("first", "held1", "held2"))
        ef, bb, bf = hi_e & lo_f, hi_b & lo_b, hi_b & lo_f
        hold1 = first & ef & ~a_last          # EF at the start: wait for BB
        hold2 = held1 & bb & ~a_last          # EF BB: wait for BF
        mark = held2 & bf                     # EF BB BF: drop all three
        mismatch1 = held1 & ~hold2            # EF then not BB: EF goes out first
        mismatch2 = held2 & ~bf               # EF BB then not BF: EF BB go out first
        valid = ~a_nv
        with m.If(pipe.enable(3)):
            m.d.sync += [
                first.eq(keep(valid, a_last, first) | pipe.flushing),
                held1.eq(keep(valid, hold1, held1) & ~pipe.flushing),
                held2.eq(keep(valid, hold2, held2) & ~pipe.flushing),
            ]

        # -- the output slots: the byte's own (S1), and the held bytes written into the two slots
        # before it as they move on (S2, S3) -----------------------------------------------------
        s1_v = pipe.fact("s1_v", valid & ~hold1 & ~hold2 & ~mark, pipe.flushing)
        s1_d = pipe.data("s1_d", a_d, 8)
        s1_last = pipe.data("s1_last", a_last)
        write2 = valid & (mismatch1 | mismatch2)      # into the slot before: EF, or BB
        s2_v = pipe.fact("s2_v", s1_v | write2, pipe.flushing)
        s2_d = pipe.data("s2_d", keep(write2, Mux(mismatch2, 0xBB, 0xEF), s1_d), 8)
        s2_last = pipe.data("s2_last", s1_last & ~write2)
        write3 = valid & mismatch2                    # two slots before: EF
        s3_v = pipe.fact("s3_v", s2_v | write3, pipe.flushing)
        s3_d = pipe.data("s3_d", keep(write3, Const(0xEF, 8), s2_d), 8)
        s3_last = pipe.data("s3_last", s2_last & ~write3)
        pipe.drive_output(self.o, s3_v, Cat(s3_d, s3_last))
        return m

