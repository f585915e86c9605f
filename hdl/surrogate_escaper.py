"""CESU-8's ``surrogateescape`` stage: a lone surrogate becomes the escapes of its three bytes."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from .component import CheckedComponent
from .error_kind import ErrorKind
from .layouts import CodepointLayout


__all__ = ["SurrogateEscaper"]


_ESCAPE = 0xDC00


class SurrogateEscaper(CheckedComponent):
    """Turns each lone surrogate (an output of kind ``SURROGATE``, U+D800..U+DFFF, as
    :class:`~.surrogate_joiner.SurrogateJoiner` with ``surrogatepass`` passes it) into the escapes
    U+DC00+b of the three bytes b of its generalized-UTF-8 sequence (ED, 80 | bits 6..11,
    80 | bits 0..5), each of kind ``SURROGATE``; every other item passes unchanged. This is
    PEP 383's ``surrogateescape`` for a lone surrogate of CESU-8, which the reference renders
    byte by byte (``reference.render``).

    The joining stage before it can only tell that a lead surrogate is lone when the next item
    arrives, up to three bytes later, so the escapes cannot go into the silent output slots of
    the surrogate's own bytes, as the byte decoder's bursts do. A queue of :data:`QUEUE` items in
    front absorbs the delay instead: a lone lead's escapes are at most three slots late (they
    fit the silent slots between its bytes and the next output), so with the sink ready the
    queue never fills and the stage keeps one byte per cycle. Eight items cover those slots,
    the queue's own latency and the joining stage; six stall on adversarial
    streams (``tests/test_decoder_family.py`` runs such streams and checks that ``i.ready``
    never falls). The byte grammar in front must not make ``SURROGATE`` errors of its own
    (CESU-8's does not: ED takes any continuation byte), or their escapes would be taken for
    lone surrogates.

    Ports: ``i``, ``o``: :data:`~utf8_gateware.hdl.layouts.CodepointLayout` streams; ``last``
    goes with the last escape. Latency: an item's first output is valid 3 cycles after its
    transfer while the queue is empty and the sink ready; behind a lone lead's late escapes it
    waits up to four cycles more (:attr:`LATENCY` = 7, the bound the decoder states; measured
    on the adversarial streams, not proven). ``i.ready`` is the queue's
    (from its level register); ``o.valid`` and ``o.payload`` are flip-flops.
    """

    #: Items the queue holds.
    QUEUE = 8

    #: Cycles from an input's transfer to its first output being valid, with the sink ready.
    LATENCY = 7

    i: In(stream.Signature(CodepointLayout))
    o: Out(stream.Signature(CodepointLayout))

    def elaborate(self, platform):
        m = Module()
        width = CodepointLayout.size
        m.submodules.queue = queue = SyncFIFOBuffered(width=width, depth=self.QUEUE)
        m.d.comb += [
            queue.w_data.eq(self.i.payload),
            queue.w_en.eq(self.i.valid),
            self.i.ready.eq(queue.w_rdy),
        ]
        head = CodepointLayout(queue.r_data)
        # (Only a lone surrogate has the kind SURROGATE: the byte grammar makes no such error.)
        lone = head.error == ErrorKind.SURROGATE
        step = Signal(2)                 # the escape of a lone surrogate going out next
        final = ~lone | (step == 2)      # the head's last output
        # The output register: loaded whenever it is empty or being taken.
        load = ~self.o.valid | self.o.ready
        byte = Mux(step == 0, 0xED,
                   Mux(step == 1, Cat(head.codepoint[6:12], Const(0b10, 2)),
                       Cat(head.codepoint[0:6], Const(0b10, 2))))
        m.d.comb += queue.r_en.eq(load & final)
        with m.If(load):
            m.d.sync += self.o.valid.eq(queue.r_rdy)
            with m.If(queue.r_rdy):
                m.d.sync += [
                    self.o.payload.codepoint.eq(Mux(lone, _ESCAPE | byte, head.codepoint)),
                    self.o.payload.error.eq(head.error),
                    self.o.payload.last.eq(head.last & final),
                    step.eq(Mux(final, 0, step + 1)),
                ]
        return m
