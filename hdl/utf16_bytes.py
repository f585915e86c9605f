"""UTF-16 byte order stage, encoding side: UTF-16 code units in, UTF-16LE/BE bytes out."""

from amaranth.hdl import Cat, Const, Module, Signal

from .error_kind import ErrorKind
from .layouts import CodeUnitLayout, EncodedByteLayout
from .pipeline import keep
from .component import StreamStage, drive_ready, ready_source
from .utf16_units import ByteOrderStage, slot_controls, unit_register
from .utf8_shift_encoder import (SHIFT_CE_FANOUT, drive_output, output_enables,
                                 stage_signals, shift_stage)


__all__ = ["Utf16Bytes", "Utf16BomBytes"]


def _check_markers(markers):
    if not isinstance(markers, bool):
        raise TypeError(f"markers must be a bool, not {markers!r}")


class _MarkerOption:
    """``markers``, shared by the two byte stages: ``False`` when the input holds no marker beat
    (unit 0 with an error), so that stages A1 and A2, which handle them, are left out."""

    def _set_markers(self, markers):
        self._markers = markers
        if not markers:
            self.LATENCY = self.latency(markers)

    @property
    def markers(self):
        """Whether the input may hold marker beats (else A1 and A2 are left out)."""
        return self._markers

    @classmethod
    def latency(cls, markers=True):
        """:attr:`LATENCY` of a stage with these parameters, without building one."""
        return cls.LATENCY if markers else cls.LATENCY - 2


class Utf16Bytes(_MarkerOption, ByteOrderStage):
    """The byte stage of UTF-16LE / UTF-16BE encoding: every code unit becomes two bytes in
    ``byteorder`` (The Unicode Standard 3.10, D96/D97), the inverse of
    :class:`~utf8_gateware.hdl.utf16_units.Utf16Units`.

    ``markers=False``: the input holds no marker beat (every valid beat is two bytes, as
    :class:`~utf8_gateware.hdl.utf16_decoder.Utf16Decoder` with ``units`` writes them), so
    A1 and A2, which tell a marker beat, are left out: A3 loads from A0, :attr:`LATENCY` 3.

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.CodeUnitLayout` stream, as
    :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder` writes it. A *marker beat*
    (``error`` set, ``unit`` 0: an invalid code point that ``strict`` leaves out) becomes one
    marker beat on ``o`` (``data`` 0, ``error``), as :class:`~utf8_gateware.hdl.encoder.Utf8Encoder`
    writes one; any other unit becomes two bytes, its ``error`` (a substitute U+FFFD) on the
    first, ``last`` on the second.
    ``o``: :data:`~utf8_gateware.hdl.layouts.EncodedByteLayout` stream.

    Latency and throughput
    ----------------------
    Stages, each loaded under a clock enable that is a flip-flop (as in
    :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder`)::

        A0  the input beat as it is (each input bit goes to one flip-flop and nothing else:
            after another core's output multiplexer, one LUT level still)
        A1  the unit, and pieces of it: ``vok`` (valid, no error), ``z0``..``z3`` (a nibble
            of the unit is zero)
        A2  the unit, ``y1`` and ``y2`` (two bytes: ``y1 | y2``), ``lz`` (``last`` unless
            ``y2``)
        A3  the first and the second byte in ``byteorder``, ``n2`` (two bytes: a valid beat
            that is not a marker beat), the first byte's ``last``
        B   the output slot and the second byte behind it; K the skid register

    A0..A3 and B's load move together when ``take`` (a flip-flop, and ``i.ready``) is set: low
    for the cycle after B took a unit of two bytes (its second byte moves up then) and after
    the sink refused a byte. The first byte of a unit is valid on ``o`` :attr:`LATENCY` = 5
    cycles after its transfer. One byte per cycle with no idle cycle while the source has a
    unit and the sink is ready: a unit is taken every second cycle, a marker beat in one; a
    refusal costs one idle cycle more, never a byte. LUT depth: one (every register bit is one
    LUT of at most four flip-flops; ``o`` is a 2:1 multiplexer of slot and skid register;
    nothing depends on ``o.ready`` in the same cycle but ``adv`` and ``take``).
    """

    #: Cycles from the transfer of a unit to its first byte being valid on ``o`` (3 without
    #: ``markers``).
    LATENCY = 5

    #: Payload layouts of ``i`` and ``o``.
    LAYOUTS = (CodeUnitLayout, EncodedByteLayout)

    #: Copies of ``i.ready`` driven, of ``o.ready`` read
    #: (:func:`~utf8_gateware.hdl.component.share_ready`).
    DRIVES_READIES = USES_READIES = True

    @classmethod
    def check_parameters(cls, byteorder="little", *, markers=True):
        super().check_parameters(byteorder)
        _check_markers(markers)

    def __init__(self, byteorder="little", *, markers=True):
        self._set_markers(markers)
        super().__init__(byteorder)

    def elaborate(self, platform):
        m = Module()
        o = self.o
        b = stage_signals("b", "valid", "n2", "last", "qlast", s=8, q=8, error=3)
        k = stage_signals("k", "valid", "last", data=8, error=3)
        a3_n2 = Signal(name="a3_n2")    # A3 holds a unit of two bytes
        adv, take = slot_controls(m, ready_source(self), b.valid, k.valid, a3_n2)
        drive_ready(m, self, take)
        a0 = unit_register(take, "a0", self.i)
        if self._markers:
            a1 = shift_stage(take, "a1", self._pieces(a0))
            a2 = shift_stage(take, "a2", self._flags(a1))
            a3 = {"valid": a2.valid, "last": a2.last, "error": a2.error, "n2": a2.y1 | a2.y2,
                  "last1": a2.lz & ~a2.y1, "unit": a2.unit}
        else:       # every valid beat is two bytes, the first never the last: A3 from A0
            a3 = {"valid": a0.valid, "last": a0.last, "error": a0.error, "n2": a0.valid,
                  "last1": Const(0), "unit": a0.unit}
        unit = a3.pop("unit")
        a3 = shift_stage(take, "a3", {
            **a3, **dict(zip(("first", "second"), (unit[:8], unit[8:])[::self._step()])),
        }, n2=a3_n2)
        t = [take.new() for _ in range(2)]
        adv.load([
            (b.valid, keep(t[0], a3.valid, b.n2)),
            (b.n2, t[0] & a3.n2),
            (b.last, keep(t[0], a3.last1, b.qlast)),
            (b.qlast, keep(t[0], a3.last, b.qlast)),
            (b.error, t[0].replicate(3) & a3.error),
            (b.s, keep(t[1], a3.first, b.q)),
            (b.q, keep(t[1], a3.second, b.q)),
        ])
        adv.drive([(o.valid, b.valid, k.valid), (o.p.data, b.s, k.data),
                   (o.p.error, b.error, k.error), (o.p.last, b.last, k.last)])
        return m

    @staticmethod
    def _pieces(a0):
        """A1, from A0: the unit, and ``vok`` (a valid beat without error: two bytes) and
        ``z0``..``z3`` (unit[4n + 3:4n] zero), each a function of at most four bits."""
        u = a0.unit
        return {
            "valid": a0.valid, "last": a0.last, "unit": u, "error": a0.error,
            "vok": a0.valid & (a0.error == ErrorKind.NONE),
            **{f"z{n}": u[4 * n:4 * n + 4] == 0 for n in range(4)},
        }

    def _step(self):
        """1 if the low byte goes first (``little``), else -1."""
        return 1 if self.byteorder == "little" else -1

    @staticmethod
    def _flags(a1):
        """A2, from A1: the unit, and ``y1 | y2``, a beat of two bytes (valid, and no error or
        a unit other than 0: not a marker beat), split in two functions of four bits; ``lz``,
        ``last`` unless ``y2`` (the first byte's ``last`` is ``lz & ~y1``)."""
        y2 = a1.valid & ~(a1.z2 & a1.z3)
        return {
            "valid": a1.valid, "last": a1.last, "unit": a1.unit, "error": a1.error,
            "y1": a1.vok | (a1.valid & ~(a1.z0 & a1.z1)), "y2": y2, "lz": a1.last & ~y2,
        }


class Utf16BomBytes(_MarkerOption, StreamStage):
    """The byte stage of ``utf-16`` encoding (The Unicode Standard 3.10, D98): FE FF, the byte
    order mark U+FEFF, before the first unit of every message, and every code unit as two
    bytes, big-endian (as the reference model writes ``utf-16``); otherwise
    :class:`Utf16Bytes` ``("big")``, whose ports, marker beat and first stages it shares.

    The mark rides with the message's first beat (``mk``, from ``a0_opens``: the beat before
    it ended a message) and goes out with it: B writes up to four bytes of a beat (FE FF and
    the unit, or FE FF and a marker beat), so no stage waits for it but B, whose count
    decides ``take`` a cycle ahead (as in
    :class:`~utf8_gateware.hdl.utf8_shift_encoder.Utf8ShiftEncoder`, whose output stage
    controls it uses). A message is the beats up to one with ``last``; a message of only a
    ``strict`` marker beat gets its mark too. (An empty message has no beat on a stream, so it
    gets no mark here; the reference model writes FE FF for it, and so do the engines, without
    simulating.)

    ``markers=False``: the input holds no marker beat (every valid beat is two bytes, as
    :class:`~utf8_gateware.hdl.utf16_decoder.Utf16Decoder` with ``units`` writes them), so
    A1 and A2, which tell a marker beat, are left out: A3 loads from A0, :attr:`LATENCY` 3.

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.CodeUnitLayout` stream (``unit: 16``, ``error``,
    ``last``), as :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder` writes it.
    ``o``: :data:`~utf8_gateware.hdl.layouts.EncodedByteLayout` stream: a unit's ``error`` on
    its first byte (never on the mark's), ``last`` on a message's last byte.

    Latency and throughput
    ----------------------
    Stages, each loaded under a clock enable that is a flip-flop::

        A0  the input beat as it is (each input bit goes to one flip-flop and nothing else),
            and ``opens``: the latest valid beat before it ended a message
        A1  as in :class:`Utf16Bytes`, and ``mk`` (A0's beat opens a message)
        A2  as in :class:`Utf16Bytes`, and ``mk``
        A3  the first and the second byte (big-endian), ``n2`` (two bytes: not a marker
            beat), ``n1`` (one byte, or a bubble), ``mk``
        B   the output shift register: the current byte ``b_s`` (the output slot) and
            ``b_q1``..``b_q3`` behind it (FF, the unit's bytes behind FE), the error kind in
            ``b_e0``..``b_e2`` (it goes out with the unit's first byte), ``b_rem`` (one-hot)
            the bytes left, the current one included; K the skid register

    A0..A3 and B's load move together when ``take`` (a flip-flop, and ``i.ready``) is set: for
    the cycle in which B's current byte is its last (or B is empty), computed a cycle ahead
    from B's count and A3's ``n1``; ``adv`` is low for the cycle after the sink refused a
    byte (:func:`~utf8_gateware.hdl.utf8_shift_encoder.output_enables`, with its ``idle``
    set: ``o.valid`` never waits for ``o.ready``; while the sink is not ready and B is empty,
    the stages move every second cycle, as the shift encoder's). With the stages empty and the
    sink ready, a message's mark is valid on ``o`` :attr:`LATENCY` = 5 cycles after the
    transfer of its first unit (that unit's first byte 2 cycles later), any other unit's first
    byte 5 cycles after its transfer. One byte per cycle with no idle cycle while the source
    has a unit and the sink is ready: B takes a unit every second cycle, a marker beat in one,
    a message's first beat in two cycles more (its mark); a refusal costs one idle cycle more,
    never a byte. LUT depth: one (every
    register bit is one LUT of at most four flip-flops; ``o`` is a 2:1 multiplexer of slot
    and skid register, ``last`` one LUT of four flip-flops).
    """

    #: Cycles from the transfer of a message's first unit to its mark's first byte being valid
    #: on ``o`` (and from the transfer of any other unit to its first byte); 3 without
    #: ``markers``.
    LATENCY = 5

    #: Payload layouts of ``i`` and ``o``.
    LAYOUTS = (CodeUnitLayout, EncodedByteLayout)

    #: Copies of ``i.ready`` driven (:func:`~utf8_gateware.hdl.component.share_ready`).
    DRIVES_READIES = True

    @classmethod
    def check_parameters(cls, *, markers=True):
        _check_markers(markers)

    def __init__(self, *, markers=True):
        self._set_markers(markers)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        b_valid = Signal(name="b_valid")
        a3_n1 = Signal(init=1, name="a3_n1")    # A3 holds a bubble or a beat of one byte
        b_r01 = Signal(init=1, name="b_r01")    # B's current byte or the next is the last
        adv, take, _, k_valid = output_enables(m, self.o, b_valid, a3_n1, b_r01,
                                               SHIFT_CE_FANOUT, SHIFT_CE_FANOUT)
        drive_ready(m, self, take)
        a0 = unit_register(take, "a0", self.i)
        opens = Signal(name="a0_opens", init=1)
        take.load([(opens, keep(a0.valid, a0.last, opens))])
        if self._markers:
            a1 = shift_stage(take, "a1", {**Utf16Bytes._pieces(a0), "mk": opens & a0.valid})
            flags = {name: value for name, value in Utf16Bytes._flags(a1).items()
                     if name != "lz"}
            a2 = shift_stage(take, "a2", {**flags, "mk": a1.mk})
            n2 = a2.y1 | a2.y2
            a3 = shift_stage(take, "a3", {
                "valid": a2.valid, "last": a2.last, "error": a2.error, "mk": a2.mk, "n2": n2,
                "n1": ~n2 & ~a2.mk, "first": a2.unit[8:], "second": a2.unit[:8],
            }, n1=a3_n1)
        else:       # every valid beat is two bytes: A3 from A0
            a3 = shift_stage(take, "a3", {
                "valid": a0.valid, "last": a0.last, "error": a0.error,
                "mk": opens & a0.valid, "n2": a0.valid, "n1": ~a0.valid,
                "first": a0.unit[8:], "second": a0.unit[:8],
            }, n1=a3_n1)
        b = stage_signals("b", "last", s=8, q1=8, q2=8, q3=8, e0=3, e1=3, e2=3)
        b.rem = Signal(4, init=1, name="b_rem")
        t0, t1, t2 = (take.new() for _ in range(3))
        mk, err = a3.mk, a3.error
        mk3 = mk.replicate(3)
        counts = Cat(a3.n1, a3.n2 & ~mk, mk & ~a3.n2, mk & a3.n2)
        adv.load([
            (b.rem, keep(t0, counts, Cat(b.rem[0] | b.rem[1], b.rem[2:], 0))),
            (b_r01, keep(t0, ~mk, b_r01 | b.rem[2])),
            (b_valid, keep(t0, a3.valid, b_valid & ~b.rem[0])),
            (b.last, keep(t0, a3.last, b.last)),
            # the unit's error kind, on its first byte: the third behind a mark
            (b.e0, keep(t0, err & ~mk3, b.e1)),
            (b.e1, ~t0.replicate(3) & b.e2),
            (b.e2, t0.replicate(3) & mk3 & err),
            # (`keep`, not `Mux`: a constant under a condition would be a set/reset)
            (b.s, keep(t1, keep(mk, Const(0xFE, 8), a3.first), b.q1)),
            (b.q1, keep(t1, keep(mk, Const(0xFF, 8), a3.second), b.q2)),
            (b.q2, keep(t2, a3.first, b.q3)),
            (b.q3, a3.second),      # (A3 holds until the next take: read on the next shift)
        ])
        drive_output(adv, self.o, b_valid, b.s, b.e0, b.rem[0] & b.last, k_valid)
        return m
