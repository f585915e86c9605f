"""The byte stage of ``utf-16`` decoding: the byte order read from each message's mark."""

from amaranth.hdl import Cat, Module, Mux

from .component import StreamStage
from .error_kind import ErrorKind
from .layouts import ByteLayout, CodeUnitLayout
from .pipeline import Pipeline, keep


__all__ = ["Utf16BomUnits"]


class Utf16BomUnits(StreamStage):
    """The byte stage of the ``utf-16`` encoding scheme (The Unicode Standard 3.10, D98): per
    message, a leading FE FF reads the message big-endian and FF FE little-endian, and those two
    bytes are dropped; a message without either is read big-endian (D98: "in the absence of a
    higher-level protocol"; the reference model's ``utf-16``). Every two bytes are one code
    unit; an odd trailing byte is an error, as in
    :class:`~utf8_gateware.hdl.utf16_units.Utf16Units`, whose ports and marker beat it shares.

    Why bytes and not the first code unit: the order must be known before the second unit is
    assembled, and the mark is the first two bytes, so the stage that pairs bytes into units is
    where it is read, with two 8-bit comparisons instead of a 16-bit one and a byte swap on a
    stage of its own. Only the first unit of a message can be a mark: FE FF or FF FE later is
    U+FEFF or U+FFFE (kept, as in CPython). A message of exactly FE FF or FF FE gives no output,
    ``last`` with it: a stream has no empty item (the reference model gives it no output either;
    the engines do not simulate it).

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.ByteLayout` stream (``data: 8``, ``last``).
    ``o``: :data:`~utf8_gateware.hdl.layouts.CodeUnitLayout` stream: one code unit per two bytes
    but the mark (``error`` ``NONE``, ``last`` with the message's last byte); a message of odd
    length ends with a *marker beat* (``unit`` 0, ``error`` ``TRUNCATED``, ``last``).

    Latency and throughput
    ----------------------
    One byte is taken every cycle (``i.ready`` falls only while the sink stalls); a code unit is
    valid on ``o`` :attr:`LATENCY` = 2 cycles after the transfer of its second byte (the input
    register, with the byte's FE and FF tests; the output slot). ``i.ready`` is one LUT of two
    flip-flops, ``o.valid`` and ``o.payload`` one LUT (output slot or skid register) of
    flip-flops. LUT depth: two levels from the port into the input register (the byte tests),
    one into each unit bit of the output slot (the held byte, the new byte, the order, whether a
    byte is held), two into its ``valid`` (the mark test).
    """

    #: Cycles from the transfer of a unit's second byte to the unit being valid on ``o``.
    LATENCY = 2

    LAYOUTS = (ByteLayout, CodeUnitLayout)

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, flush_steps=2)
        m.d.comb += self.i.ready.eq(pipe.adv & ~pipe.flushing)
        p = self.i.p

        # -- the input register: the byte, and whether it is FE or FF ---------------------------
        a_valid = pipe.fact("a_valid", self.i.valid, pipe.flushing)
        a_d = pipe.data("a_d", p.data, 8)
        a_last = pipe.data("a_last", p.last)
        a_fe, a_ff = (pipe.data(f"a_{n:x}", p.data == n) for n in (0xFE, 0xFF))

        # -- the state: the first byte of a unit while the second is awaited; whether the next
        # unit is its message's first; the message's order; the mark the second byte would end.
        have, first = pipe.register("have"), pipe.register("first", 8)
        start, little = pipe.register("start"), pipe.register("little")
        want_fe, want_ff = pipe.register("want_fe"), pipe.register("want_ff")
        ends = a_valid & (have | a_last)            # a unit or an odd trailing byte goes out
        mark = (want_fe & a_fe) | (want_ff & a_ff)  # FF FE or FE FF, the message's first unit
        opens = ~have & ~a_last & start            # the first byte of a message's first unit
        with m.If(pipe.enable(13)):
            m.d.sync += [
                have.eq(keep(a_valid, ~have & ~a_last, have) & ~pipe.flushing),
                first.eq(keep(~have, a_d, first)),
                start.eq(keep(ends, a_last, start) | pipe.flushing),
                little.eq(keep(ends, ~a_last & Mux(start, want_fe & a_fe, little), little) &
                          ~pipe.flushing),
                want_fe.eq(keep(a_valid, opens & a_ff, want_fe)),
                want_ff.eq(keep(a_valid, opens & a_fe, want_ff)),
            ]

        unit = Mux(little, Cat(first, a_d), Cat(a_d, first))
        s_valid = pipe.fact("s_valid", ends & ~(have & mark), pipe.flushing)
        s_p = Cat(pipe.data("s_unit", unit & have.replicate(16), 16),
                  pipe.data("s_error", Mux(have, ErrorKind.NONE, ErrorKind.TRUNCATED), 3),
                  pipe.data("s_last", a_last))
        pipe.drive_output(self.o, s_valid, s_p)
        return m
