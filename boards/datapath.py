"""The board's datapath: the cores, wired per message mode, with counters.

``transcode``: bytes -> :class:`~utf8_gateware.hdl.decoder.Utf8Decoder` (replace) ->
:class:`~utf8_gateware.hdl.encoder.Utf8Encoder` (replace) -> bytes.
``decode``: bytes -> decoder -> 4 bytes per output (u32 LE, laid out as
:data:`~utf8_gateware.boards.protocol.DECODE_WORD`).
``encode``: bytes -> 4-byte unit assembler -> encoder -> bytes.
``validate``: bytes -> decoder -> counters only.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.layouts import ByteLayout, CodepointLayout
from .protocol import DECODE_WORD, Mode
from .stream_fifo import StreamFIFO


__all__ = ["Datapath"]


N_ERRORS = len(ErrorKind) - 1      # every kind but NONE


def _default_decoder():
    from utf8_gateware.hdl.decoder import Utf8Decoder
    return Utf8Decoder(errors="replace")


def _default_encoder():
    from utf8_gateware.hdl.encoder import Utf8Encoder
    return Utf8Encoder(errors="replace")


class Datapath(wiring.Component):
    """The cores between the input and output buffers.

    Ports
    -----
    ``mode``: In(2)
        A :class:`~utf8_gateware.boards.protocol.Mode`; must be stable during a message (the
        board resets the datapath between messages).
    ``i``: In(stream.Signature(ByteLayout))
        Message bytes (``last`` on the final byte).
    ``o``: Out(stream.Signature(8))
        Output bytes.
    ``done``: Out(1)
        Pulses when the final output byte of the message has been taken from ``o``; in
        ``validate`` mode when the decoder's ``last`` output is counted.
    ``codepoints``: Out(32)
        Decoder outputs (``encode``: code units taken by the encoder).
    ``errors``: Out(ArrayLayout(32, 6))
        Errors per :class:`ErrorKind` (index ``kind - 1``): the decoder's in the UTF-8 modes, the
        encoder's plus trailing partial units (``truncated``) in ``encode``.

    Throughput: one input byte per cycle (``decode``: the 4 bytes of a code point in 5 cycles:
    the packer takes the next word when the last byte has gone, so that the decoder's ready does
    not hang off the sink's), limited by the cores and the sink. Both ports go through 2-entry FIFOs, so
    ``i.ready`` and ``o.valid`` come from registers (no combinational path through the cores
    to the neighbours).
    """
    def __init__(self, *, decoder=None, encoder=None):
        self._decoder = decoder or _default_decoder
        self._encoder = encoder or _default_encoder
        super().__init__({
            "mode": In(2),
            "i": In(stream.Signature(ByteLayout)),
            "o": Out(stream.Signature(8)),
            "done": Out(1),
            "codepoints": Out(32),
            "errors": Out(data.ArrayLayout(32, N_ERRORS)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.decoder = dec = self._decoder()
        m.submodules.encoder = enc = self._encoder()
        mode = self.mode

        # 2-entry FIFOs at both ports: registered ready/valid towards the buffers. Inside,
        # `src` is the input stream, `dst` the output stream (with `last`).
        m.submodules.in_fifo = src_fifo = StreamFIFO(ByteLayout, 2)
        m.submodules.out_fifo = dst_fifo = StreamFIFO(ByteLayout, 2)
        wiring.connect(m, wiring.flipped(self.i), src_fifo.i)
        src, dst = src_fifo.o, dst_fifo.i
        m.d.comb += [
            self.o.payload.eq(dst_fifo.o.payload.data),
            self.o.valid.eq(dst_fifo.o.valid),
            dst_fifo.o.ready.eq(self.o.ready),
        ]
        out_done = self.o.valid & self.o.ready & dst_fifo.o.payload.last

        # Mode flags (registers: the mode is static during a message).
        is_transcode = Signal()
        is_decode = Signal()
        is_encode = Signal()
        is_validate = Signal()
        m.d.sync += [
            is_transcode.eq(mode == Mode.TRANSCODE), is_decode.eq(mode == Mode.DECODE),
            is_encode.eq(mode == Mode.ENCODE), is_validate.eq(mode == Mode.VALIDATE),
        ]
        uses_encoder = Signal()
        m.d.sync += uses_encoder.eq((mode == Mode.TRANSCODE) | (mode == Mode.ENCODE))

        # The decoder's output goes through a 2-entry FIFO too (its ready is a register, so
        # the decoder's pipeline enable does not depend on the encoder's or the packer's).
        m.submodules.mid_fifo = mid_fifo = StreamFIFO(CodepointLayout, 2)
        wiring.connect(m, dec.o, mid_fifo.i)
        mid = mid_fifo.o

        # -- encode mode: 4 bytes -> one UTF-32LE unit; a trailing partial unit -> U+FFFD.
        unit = Signal(32)
        unit_count = Signal(2)
        unit_valid = Signal()
        unit_last = Signal()
        partial = Signal()           # pulse: a partial unit was replaced
        asm_ready = ~unit_valid
        with m.If(enc.i.ready & is_encode):
            m.d.sync += unit_valid.eq(0)
        m.d.sync += partial.eq(0)
        with m.If(src.valid & asm_ready & is_encode):
            m.d.sync += unit_count.eq(unit_count + 1)
            m.d.sync += unit.eq(Cat(unit[8:], src.payload.data))
            with m.If(unit_count == 3):
                m.d.sync += [unit_valid.eq(1), unit_last.eq(src.payload.last)]
            with m.Elif(src.payload.last):
                m.d.sync += [unit.eq(0xFFFD), unit_valid.eq(1), unit_last.eq(1),
                             unit_count.eq(0), partial.eq(1)]

        # -- decode mode: one decoder output -> 4 bytes.
        word = Signal(DECODE_WORD)
        word_index = Signal(2)
        word_valid = Signal()
        word_last = Signal()
        pack_ready = ~word_valid    # (not on dst.ready: a bubble per word, off the ready path)
        # (A word is only loaded in decode mode, so `word_valid` implies it.)
        with m.If(mid.valid & pack_ready & is_decode):
            m.d.sync += [
                word.as_value().eq(0),
                word.codepoint.eq(mid.payload.codepoint), word.error.eq(mid.payload.error),
                word_valid.eq(1), word_index.eq(0), word_last.eq(mid.payload.last),
            ]
        with m.Elif(word_valid & dst.ready):
            # The byte going out is the word's low byte: shift the next one down.
            m.d.sync += [word_index.eq(word_index + 1),
                         word.as_value().eq(word.as_value() >> 8),
                         word_valid.eq(word_index != 3)]

        # -- routing
        with m.If(is_encode):
            m.d.comb += [
                src.ready.eq(asm_ready),
                enc.i.valid.eq(unit_valid),
                enc.i.payload.codepoint.eq(unit),
                enc.i.payload.last.eq(unit_last),
            ]
        with m.Else():
            m.d.comb += [
                dec.i.valid.eq(src.valid),
                src.ready.eq(dec.i.ready),
            ]
        m.d.comb += dec.i.payload.eq(src.payload)     # (whatever the mode: no gate before it)
        with m.If(is_transcode):
            m.d.comb += [
                enc.i.valid.eq(mid.valid),
                enc.i.payload.codepoint.eq(mid.payload.codepoint),
                enc.i.payload.last.eq(mid.payload.last),
                mid.ready.eq(enc.i.ready),
            ]
        with m.Elif(is_decode):
            m.d.comb += mid.ready.eq(pack_ready)
        with m.Elif(is_validate):
            m.d.comb += mid.ready.eq(1)
        with m.If(uses_encoder):
            m.d.comb += [
                dst.valid.eq(enc.o.valid),
                dst.payload.data.eq(enc.o.payload.data),
                enc.o.ready.eq(dst.ready),
                dst.payload.last.eq(enc.o.payload.last),
                self.done.eq(out_done),
            ]
        with m.Elif(is_decode):
            m.d.comb += [
                dst.valid.eq(word_valid),
                dst.payload.data.eq(word.as_value()[:8]),
                dst.payload.last.eq((word_index == 3) & word_last),
                self.done.eq(out_done),
            ]
        with m.Elif(is_validate):
            m.d.comb += self.done.eq(dec.o.valid & dec.o.ready & dec.o.payload.last)

        # -- counters (one cycle behind the transfers they count: registered events, so that
        # the counters' enables do not hang off the cores' ready paths)
        event = Signal()              # count one code point / code unit
        event_kind = Signal(ErrorKind)
        event_partial = Signal()
        with m.If(is_encode):
            m.d.sync += [
                event.eq(enc.i.valid & enc.i.ready),
                event_kind.eq(Mux(enc.o.valid & enc.o.ready, enc.o.payload.error,
                                  ErrorKind.NONE)),
                event_partial.eq(partial),
            ]
        with m.Else():
            transfer = dec.o.valid & dec.o.ready
            m.d.sync += [
                event.eq(transfer),
                event_kind.eq(Mux(transfer, dec.o.payload.error, ErrorKind.NONE)),
                event_partial.eq(0),
            ]
        with m.If(event):
            m.d.sync += self.codepoints.eq(self.codepoints + 1)
        for kind in ErrorKind:
            if kind is ErrorKind.NONE:
                continue
            index = kind.value - 1
            hit = event_kind == kind
            if kind is ErrorKind.TRUNCATED:
                hit = hit | event_partial
            with m.If(hit):
                m.d.sync += self.errors[index].eq(self.errors[index] + 1)
        return m
