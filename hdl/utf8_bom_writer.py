"""The ``utf-8-sig`` mark at the level of bytes: EF BB BF written before every message."""

from amaranth.hdl import Module, Mux, Signal

from .component import StreamStage, drive_ready, ready_source
from .layouts import EncodedByteLayout
from .pipeline import keep
from .utf8_shift_encoder import EnableCopies, shift_stage, stage_signals


__all__ = ["UTF8_BYTE_ORDER_MARK", "Utf8BomWriter"]


#: U+FEFF, the byte order mark, in UTF-8.
UTF8_BYTE_ORDER_MARK = b"\xef\xbb\xbf"


class Utf8BomWriter(StreamStage):
    """Writes EF BB BF (U+FEFF, the ``utf-8-sig`` mark) before the first byte of every message,
    at the level of bytes: after :class:`~utf8_gateware.hdl.sanitizer.Utf8Sanitizer` it makes a
    ``utf-8`` to ``utf-8-sig`` transcoder
    (:class:`~utf8_gateware.hdl.transcoder.Transcoder`) that forms no code point.

    A message is the beats up to one with ``last``; every message gets its mark, whatever its
    bytes (a U+FEFF of its own at its start stays: the reference model's and CPython's
    ``utf-8-sig`` encoder writes a mark before any text). An empty message has no beat on a
    stream, so it cannot be given a mark here (docs/cores.md, "Any encoding by name, and the
    transcoder": "Empty messages, and messages of only a mark").

    Ports
    -----
    ``i``, ``o``: :data:`~utf8_gateware.hdl.layouts.EncodedByteLayout` streams (``data: 8``,
    ``error``, ``last``). The mark's three beats have ``error`` ``NONE`` and ``last`` clear; the
    input's beats pass unchanged.

    Latency and throughput
    ----------------------
    Stages: A0, the input beat as it is (each input bit goes to one flip-flop and nothing else,
    so after another core's output multiplexer the join is one LUT level), and ``opens``: the
    latest valid beat before it ended a message (its beat opens one); Q, the beat B took last
    from A0; B, the output slot: EF for a beat that opens a message, else A0's beat; R1, the
    byte B takes next while the mark goes out (BB, then BF, then Q's beat), with the flags R2
    and R3 (``valid``: two and three more such bytes after B's); K, the skid register. A0,
    ``opens`` and Q load when ``take`` (flip-flop copies, and ``i.ready``) is set; B, R1 and K
    when ``adv`` is. ``take`` is low for the cycle after the sink refused a beat, and while B
    takes R1 (three cycles per message: the input waits for the mark). A beat is valid on
    ``o`` 2 cycles after its transfer (3 if A0 was empty then and opened a message: after a
    message's end and a gap, or after power-up); a
    message's first beat a mark earlier (its EF) and itself 3 cycles later; a beat taken as B
    took its message's EF waits for the mark too: :attr:`LATENCY` = 5 cycles from a beat's
    transfer to its first output byte, at most. One byte per cycle with no idle cycle while
    the source has a beat and the sink is ready, the mark's three cycles per message included;
    a refusal costs one idle cycle more (and so does a cycle without a beat after a message's
    end).

    LUT depth: one. Every register bit is one LUT of at most four flip-flops; ``o`` is a 2:1
    multiplexer of slot and skid register; every clock enable is a flip-flop (``adv``,
    ``take``), and so is the one synchronous reset (``take``'s, by R2's flag: R1 will still
    have a byte for B). Nothing depends on ``o.ready`` in the same cycle but the
    next states of ``adv`` and ``take``; ``o.valid`` never does (with K empty ``adv`` rises
    without ``o.ready``, so a sink may wait for ``o.valid``).
    """

    #: Cycles from the transfer of a beat to its being valid on ``o``, at most (a message's
    #: first beat: to its mark's first byte; the beat behind it waits for the mark).
    LATENCY = 5

    LAYOUTS = (EncodedByteLayout, EncodedByteLayout)

    #: Copies of ``i.ready`` driven, of ``o.ready`` read
    #: (:func:`~utf8_gateware.hdl.component.share_ready`).
    DRIVES_READIES = USES_READIES = True

    def elaborate(self, platform):
        m = Module()
        o = self.o
        ef, bb, bf = UTF8_BYTE_ORDER_MARK
        b = stage_signals("b", "valid", "last", data=8, error=3)
        r1 = stage_signals("r1", "valid", "last", data=8, error=3)
        r2_valid, r3_valid = Signal(name="r2_valid"), Signal(name="r3_valid")
        k = stage_signals("k", "valid", "last", data=8, error=3)
        opens = Signal(name="a0_opens", init=1)
        ready = ready_source(self)
        adv = EnableCopies(m, "adv", lambda own: ready() | ~Mux(own, b.valid, k.valid))
        # Low for the cycle after a refusal (`adv` falls), after B took a message's first beat
        # (its EF: `opens`), and while R2 is set (B takes R1 in the next cycle too, not A0).
        take = EnableCopies(m, "take", lambda own: (ready() | ~b.valid) & ~(own & opens),
                             clear=r2_valid, enable=adv.first)
        drive_ready(m, self, take)
        x = self.i.p
        a0 = shift_stage(take, "a0", {"valid": self.i.valid, "last": x.last, "data": x.data,
                                      "error": x.error.as_value()})
        take.load([(opens, keep(a0.valid, a0.last, opens))])
        q = shift_stage(take, "q", {"last": a0.last, "data": a0.data, "error": a0.error})
        t = [take.new() for _ in range(3)]
        mark = opens & a0.valid
        adv.load([
            (b.valid, keep(t[0], a0.valid, r1.valid)),
            # (`keep`, not `Mux`: a constant under a condition would be a set/reset)
            (b.data, keep(r1.valid, r1.data, keep(opens, ef, a0.data))),
            (b.error, keep(r1.valid, r1.error, a0.error & ~opens.replicate(3))),
            (b.last, keep(r1.valid, r1.last, a0.last & ~opens)),
            # R1: BB after EF, then BF (R3 still full), then Q.
            (r1.valid, keep(t[0], mark, r2_valid)),
            (r1.data, keep(t[1], bb, keep(r3_valid, bf, q.data))),
            (r1.error, q.error & ~(t[1] | r3_valid).replicate(3)),
            (r1.last, q.last & ~(t[1] | r3_valid)),
            (r2_valid, keep(t[2], mark, r3_valid)),
            (r3_valid, t[2] & mark),
        ])
        adv.drive([(o.valid, b.valid, k.valid), (o.p.data, b.data, k.data),
                   (o.p.error, b.error, k.error), (o.p.last, b.last, k.last)])
        return m
