"""Well-formed UTF-8 bytes in, CESU-8 or MUTF-8 bytes out, at the level of bytes."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal

from .component import StreamStage, drive_ready, ready_source
from .error_kind import check_encoding
from .layouts import EncodedByteLayout
from .pipeline import keep
from .utf8_shift_encoder import EnableCopies, shift_stage, stage_signals


__all__ = ["EXPANSIONS", "Cesu8Expander"]


#: The encodings :class:`Cesu8Expander` writes (``mutf-8`` also writes 00 as C0 80).
EXPANSIONS = ("cesu-8", "mutf-8")


class Cesu8Expander(StreamStage):
    """Rewrites the UTF-8 output of :class:`~utf8_gateware.hdl.sanitizer.Utf8Sanitizer` as
    ``encoding`` (``"cesu-8"`` or ``"mutf-8"``) byte by byte: a four-byte sequence F0..F4 b1 b2
    b3 becomes the two three-byte sequences of its surrogates, ED A0|w 80|x ED B0|y b3 (w: the
    plane less 1, from b0's low three bits and b1's bits 5, 4; x: b1's low four bits and b2's
    bits 5, 4; y: b2's low four bits); with ``"mutf-8"`` the byte 00 becomes C0 80. Every other
    byte passes unchanged. So an input byte gives one output byte, or more: b0 gives ED, b1
    A0|w, b2 three (80|x, ED, B0|y), b3 itself; 00 gives C0 and 80.

    The input must be what the sanitiser writes: a byte F0..F7 whose ``error`` is ``NONE`` is
    the lead of a well-formed four-byte sequence whose three continuation bytes follow (in the
    same message); with ``surrogateescape`` the sanitiser marks every byte of an ill-formed
    subpart, and such bytes pass unchanged (the model's escapes are written back as they were).

    Ports
    -----
    ``i``, ``o``: :data:`~utf8_gateware.hdl.layouts.EncodedByteLayout` streams (``data: 8``,
    ``error``, ``last``). A byte's ``error`` goes with its first output byte (the others have
    ``NONE``); ``last`` goes on its final output byte.

    Latency and throughput
    ----------------------
    Stages, each loaded under a clock enable that is a flip-flop copy of ``take``:

        A   the input beat as it is (each input bit to one flip-flop and nothing else: after
            the sanitiser's output multiplexer, one LUT level still)
        B   the byte and its flags: F0..FF, ``error`` ``NONE``, 00 (its halves), b1's borrow
        C   the byte's position after a lead (state ``s1``, ``s2``) and the low bits of the
            valid byte before it (state ``pn``, ``pm3``; these keep their values over a
            bubble), and the pieces of its first output byte
        D   the first output byte, b2's third, the counts ``two`` and ``three``
        X   the output slot (D's first byte, or the next from ``Q``); K the skid register

    A byte's first output byte is valid on ``o`` :attr:`LATENCY` = 5 cycles after its
    transfer (the sink ready), the others in the cycles after it. ``take`` (``i.ready``) is
    low for the cycle after X took a byte of two outputs, for the two cycles after one of
    three, and for the cycle after the sink refused a beat: the output is one byte per cycle
    with no idle cycle while the source has a byte and the sink is ready, and the input takes
    4 bytes in 6 cycles for a supplementary character (its two idle cycles in a row: a source
    that loses a cycle after each run of refusals loses one per character, not two; the
    ``replace`` sanitiser loses none since stop 29),
    1 in 2 for a MUTF-8 NUL, one byte per cycle otherwise. LUT depth: one (every register bit
    is one LUT of at most four flip-flops; ``take``'s synchronous reset is X's flip-flop
    ``n3``; ``o`` is a 2:1 multiplexer of slot and skid register; ``o.valid`` never depends on
    ``o.ready``).
    """

    #: Cycles from a byte's transfer to its first output byte on ``o`` (the sink ready).
    LATENCY = 5

    LAYOUTS = (EncodedByteLayout, EncodedByteLayout)

    #: Copies of ``i.ready`` driven, of ``o.ready`` read
    #: (:func:`~utf8_gateware.hdl.component.share_ready`).
    DRIVES_READIES = USES_READIES = True

    @classmethod
    def check_parameters(cls, encoding="cesu-8"):
        check_encoding(encoding, EXPANSIONS, "expands into")

    def __init__(self, encoding="cesu-8"):
        self._encoding = encoding
        super().__init__()

    @property
    def encoding(self):
        return self._encoding

    def elaborate(self, platform):
        m = Module()
        mutf = self._encoding == "mutf-8"
        x = stage_signals("x", "valid", "n2", "n3", "last", data=8, error=3)
        q = stage_signals("q", "last", data=8, third=4)
        k = stage_signals("k", "valid", "last", data=8, error=3)
        d_two = Signal(name="d_two")
        ready = ready_source(self)
        adv = EnableCopies(m, "adv", lambda own: ready() | ~Mux(own, x.valid, k.valid))
        # `take` low for the cycle after X took a byte of two or three outputs, and for the
        # next one too after three (`x.n3`, a synchronous reset by a flip-flop).
        take = EnableCopies(m, "take", lambda own: (ready() | ~x.valid) & ~(own & d_two),
                            enable=adv.first, clear=x.n3)
        drive_ready(m, self, take)

        i = self.i
        a = shift_stage(take, "a", {"valid": i.valid, "data": i.p.data,
                                    "error": i.p.error.as_value(), "last": i.p.last})
        top = a.data[4:8]
        b_values = {"valid": a.valid, "data": a.data, "error": a.error, "last": a.last,
                    "hi4": top.all(), "en": ~a.error.any(), "bor": ~a.data[4] & ~a.data[5]}
        if mutf:
            b_values.update(zl=~a.data[0:4].any(), zh=~top.any())
        b = shift_stage(take, "b", b_values)

        # The position of B's byte: after a lead (s1), after one continuation (s2); and the low
        # four bits of the valid byte before it (`pn`; `pm3`: (pn[1:0] - 1)[1], for w). They
        # load with B's beat, and keep their values over a bubble.
        s1, s2 = Signal(name="s1"), Signal(name="s2")
        pn = Signal(4, name="pn")
        pm3 = Signal(name="pm3")
        data, v = b.data, b.valid
        take.load([
            (s1, keep(v, b.hi4 & b.en, s1)), (s2, keep(v, s1, s2)),
            (pn, keep(v, data[0:4], pn)), (pm3, keep(v, data[1] ^ ~data[0], pm3)),
        ])
        c_values = {
            "valid": v, "data": data, "error": b.error, "last": b.last,
            "lead": b.hi4 & b.en, "busy": s1 | s2, "p2v": v & s2,
            # Pieces of the first output byte of b1 (s1) and b2 (s2): bits 5, 4 (`n5`, `n4`);
            # bits 3, 2 are b0's bits 1, 0 (b1: less b1's borrow `pb`, that is `pm3` and bit 0
            # flipped, in X) or b1's; bit 1 (`c1`); bit 0 (`n0`).
            "n5": ~s2 | pn[3], "n4": s2 & pn[2], "y3": pn[1], "ym3": pm3, "y2": pn[0],
            "pb": s1 & b.bor,
            "c1": Mux(s1, ~(data[5] ^ data[4]), data[5]), "n0": data[4] ^ s1,
        }
        if mutf:
            c_values.update(zero=b.zl & b.zh, zv=v & b.zl & b.zh)
        c = shift_stage(take, "c", c_values)

        zero = c.zero if mutf else 0
        two = c.p2v | c.zv if mutf else c.p2v
        cd = c.data
        first = Cat(
            Mux(c.busy, c.n0, cd[0] | c.lead),
            Mux(c.busy, c.c1, cd[1] & ~c.lead),
            Mux(c.busy, c.y2, cd[2] | c.lead),
            Mux(c.busy, c.y3, cd[3] | c.lead),
            Mux(c.busy, c.n4, cd[4] & ~c.lead),
            Mux(c.busy, c.n5, cd[5]),
            cd[6] | zero,
            cd[7] | zero)
        d = shift_stage(take, "d", {
            "valid": c.valid, "first": first, "two": two, "three": c.p2v,
            # b2's third byte: B0 | its own low four bits
            "third": cd[0:4],
            "flip2": c.pb, "flip3": c.pb & (c.ym3 ^ c.y3),
            "error": c.error, "lastf": c.last & ~two, "last": c.last}, two=d_two)

        t = [take.new() for _ in range(3)]
        # The second byte: ED after X2 (`three`), 80 after C0; the third, B0 | b2's low bits.
        second = Cat(Const(0xED, 8) & d.three.replicate(8) | Const(0x80, 8))
        adv.load([
            (x.valid, keep(t[0], d.valid, x.n2)),
            (x.n2, keep(t[0], d.two, x.n3)),
            (x.n3, t[0] & d.three),
            # (b1's bits 3, 2 of w: y3, y2 flipped where b1 borrows from b0's bits)
            (x.data, keep(t[1], d.first ^ Cat(Const(0, 2), d.flip2, d.flip3), q.data)),
            (x.error, d.error & t[0].replicate(3)),
            (x.last, keep(t[0], d.lastf, q.last)),
            (q.data, keep(t[2], second, Cat(q.third, Const(0xB, 4)))),
        ])
        take.load([(q.third, d.third), (q.last, d.last)])
        adv.drive([(self.o.valid, x.valid, k.valid), (self.o.p.data, x.data, k.data),
                   (self.o.p.error, x.error, k.error), (self.o.p.last, x.last, k.last)])
        return m
