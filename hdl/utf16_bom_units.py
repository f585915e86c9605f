"""The byte stage of ``utf-16`` decoding: the byte order read from each message's mark."""

from amaranth.hdl import Cat, Module, Mux, Signal

from .component import StreamStage, drive_ready, ready_source
from .layouts import ByteLayout, CodeUnitLayout
from .pipeline import keep
from .utf16_units import unit_slot
from .utf8_shift_encoder import EnableCopies, stage_signals, shift_stage


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
    Stages, all loaded when ``adv`` (a flip-flop, and ``i.ready``; low for the cycle after the
    sink refused a unit) is set, each under a clock enable that is a copy of it::

        A1  the byte, and pieces of it (``hf``: its high nibble is F; ``le``, ``lf``: its low
            nibble is E, F); the state before it: ``have`` (a unit's first byte is held),
            ``start`` (the next unit is its message's first)
        A2  the byte, whether it is a unit's second byte, and the mark tests: FE or FF as the
            first byte of a message's first unit, or as a valid second byte
        S   the output slot, from A2 and the held first byte, the order (``little``, set by
            FF FE and cleared at each message's end) and the mark awaited; K the skid register

    One byte is taken every cycle; a code unit is valid on ``o`` :attr:`LATENCY` = 3 cycles
    after the transfer of its second byte. A mark leaves the slot with ``mark`` set: ``o.valid``
    is low for it. LUT depth: one (every register bit is one LUT of at most four flip-flops;
    ``o`` is a 2:1 multiplexer of slot and skid register, ``o.valid`` also of the slot's mark;
    nothing depends on ``o.ready`` in the same cycle but ``adv``).
    """

    #: Cycles from the transfer of a unit's second byte to the unit being valid on ``o``.
    LATENCY = 3

    LAYOUTS = (ByteLayout, CodeUnitLayout)

    #: Copies of ``i.ready`` driven, of ``o.ready`` read
    #: (:func:`~utf8_gateware.hdl.component.share_ready`).
    DRIVES_READIES = USES_READIES = True

    def elaborate(self, platform):
        m = Module()
        s = stage_signals("s", "valid", "last", "mark", unit=16, error=3)
        k = stage_signals("k", "valid", "last", unit=16, error=3)
        # `adv` counts a slot that holds a mark as valid: a refusal then costs one idle cycle.
        ready = ready_source(self)
        adv = EnableCopies(m, "adv", lambda own: ready() | ~Mux(own, s.valid, k.valid))
        drive_ready(m, self, adv)
        p = self.i.p
        a1 = shift_stage(adv, "a1", {
            "valid": self.i.valid, "last": p.last, "d": p.data,
            "hf": p.data[4:] == 0xF, "le": p.data[:4] == 0xE, "lf": p.data[:4] == 0xF,
        })
        # the state before A1's byte
        have, start = Signal(name="a1_have"), Signal(name="a1_start", init=1)
        ends = a1.valid & (have | a1.last)      # a unit or an odd trailing byte goes to A2
        adv.load([(have, keep(a1.valid, ~have & ~a1.last, have)),
                  (start, keep(ends, a1.last, start))])
        first = ~have & start                   # A1's byte is its message's first
        a2 = shift_stage(adv, "a2", {
            "valid": a1.valid, "last": a1.last, "d": a1.d, "have": have,
            "vlast": a1.valid & a1.last,
            "fe1": first & a1.hf & a1.le, "ff1": first & a1.hf & a1.lf,
            "fe2": a1.valid & have & a1.hf & a1.le, "ff2": a1.valid & have & a1.hf & a1.lf,
        })
        # the held first byte, the mark its second byte would complete, the message's order
        held = Signal(8, name="held")
        want_fe, want_ff, little = Signal(name="want_fe"), Signal(name="want_ff"), \
            Signal(name="little")
        mark = (want_fe & a2.fe2) | (want_ff & a2.ff2)
        adv.load([
            (held, keep(a2.have, held, a2.d)),
            (want_fe, keep(a2.have, want_fe, a2.ff1)),
            (want_ff, keep(a2.have, want_ff, a2.fe1)),
            (little, ~a2.vlast & (little | (want_fe & a2.fe2))),
        ])
        unit = Cat(*(Mux(little, lo, hi) for lo, hi in zip(Cat(held, a2.d), Cat(a2.d, held))))
        adv.load([*unit_slot(s, a2.valid, a2.have, unit, a2.last), (s.mark, mark)])
        adv.drive([(self.o.valid, s.valid & ~s.mark, k.valid), (self.o.p.unit, s.unit, k.unit),
                   (self.o.p.error, s.error, k.error), (self.o.p.last, s.last, k.last)])
        return m
