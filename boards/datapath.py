"""The board's datapath: the cores, wired per message mode, with counters.

``transcode``: bytes -> :class:`~utf8_gateware.hdl.decoder.Utf8Decoder` (replace) ->
:class:`~utf8_gateware.hdl.encoder.Utf8Encoder` (replace) -> bytes.
``decode``: bytes -> decoder -> 4 bytes per output (u32 LE, laid out as
:data:`~utf8_gateware.boards.protocol.DECODE_WORD`).
``encode``: bytes -> unit assembler (4 bytes a unit) -> encoder -> bytes.
``validate``: bytes -> decoder -> counters only.
``to-utf16``: bytes -> decoder -> 2 or 4 bytes per output (its UTF-16LE code units).
``from-utf16``: bytes -> unit assembler (2 bytes a code unit) -> surrogate joiner -> encoder
-> bytes.

The UTF-8 decoder and encoder are shared by the modes. ``to-utf16`` writes the decoder's outputs
with the ``decode`` packer, not with :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder` and
:class:`~utf8_gateware.hdl.utf16_bytes.Utf16Bytes` (304 LCs together on the UP5K): the decoder's
``replace`` output is always a scalar value (an error is U+FFFD), so the encoder's classification,
error policies and output slots have nothing to do, and the packer only loads a second word layout
(the surrogate pair of :func:`~utf8_gateware.hdl.utf16_encoder.plane_minus_one`). Likewise
``from-utf16`` takes code units from the ``encode`` unit assembler rather than from
:class:`~utf8_gateware.hdl.utf16_units.Utf16Units` (52 LCs), and joins surrogate pairs on the
assembler's register (a held lead is shifted down beside the next unit) with the rules of
:class:`~utf8_gateware.hdl.utf16_decoder.Utf16Decoder` (``replace``) rather than with that core (184
LCs, most of them flip-flops of its one-unit-per-cycle pipeline, which the board does not need: its
input buffer offers at most one byte every four cycles, a code unit every eight). With the four
UTF-16 stages the UP5K was 94 % full and did not place; with
:class:`~utf8_gateware.hdl.utf16_decoder.Utf16Decoder` alone (89 %) nextpnr missed 48 MHz or found
no placement.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.layouts import ByteLayout, CodepointLayout
from utf8_gateware.hdl.utf16_encoder import plane_minus_one
from .protocol import DECODE_WORD, UTF16_MODES, Mode
from .stream_fifo import StreamFIFO


__all__ = ["Datapath"]


N_ERRORS = len(ErrorKind) - 1      # every kind but NONE

#: What the unit assembler knows of a UTF-16 code unit from its high byte.
UnitClass = data.StructLayout({"surrogate": 1, "pairs": 1})


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
    ``mode``: In(:class:`~utf8_gateware.boards.protocol.Mode`)
        Must be stable during a message (the board resets the datapath between messages).
    ``i``: In(stream.Signature(ByteLayout))
        Message bytes (``last`` on the final byte).
    ``o``: Out(stream.Signature(8))
        Output bytes.
    ``done``: Out(1)
        Pulses when the final output byte of the message has been taken from ``o``; in
        ``validate`` mode when the decoder's ``last`` output is counted.
    ``codepoints``: Out(32)
        Outputs of the mode's decoder (UTF-8's, or UTF-16's in ``from-utf16``; ``encode``: code
        units taken by the encoder).
    ``errors``: Out(ArrayLayout(32, 6))
        Errors per :class:`ErrorKind` (index ``kind - 1``): the mode's decoder's (``from-utf16``:
        ``surrogate`` for a lone surrogate, ``truncated`` for an odd trailing byte), the
        encoder's plus trailing partial units (``truncated``) in ``encode``.

    Parameter ``utf16``: with ``False`` the ``to-utf16`` and ``from-utf16`` modes are left out
    (their logic, 122 LCs on the UP5K, is not built; the board refuses them).

    Throughput: at most one item every two cycles through each of the three 1-entry FIFOs (the
    ports and the decoded items), so one input byte and one output byte every two cycles at
    best (``decode``: a code point's 4 bytes in 9 cycles; ``to-utf16`` alike with a cycle to
    form the code units; ``from-utf16``: a code unit every 4 cycles, a held lead surrogate that
    is not followed by a trail costs a cycle more), limited by the cores and the sink. That is
    ample: the input buffer offers a byte every four cycles at most and the UART takes a byte
    every 10 bit times (40 cycles at 12 Mbaud); 2-entry FIFOs for full rate cost 60 LCs more.
    ``i.ready`` and ``o.valid`` come from registers (no combinational path through the cores
    to the neighbours).
    """
    def __init__(self, *, decoder=None, encoder=None, utf16=True):
        self._decoder = decoder or _default_decoder
        self._encoder = encoder or _default_encoder
        self._utf16 = utf16
        super().__init__({
            "mode": In(Mode),
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

        # 2-entry FIFOs at both ports: registered ready/valid towards the buffers. Inside,
        # `src` is the input stream, `dst` the output stream (with `last`).
        m.submodules.in_fifo = src_fifo = StreamFIFO(ByteLayout, 1)
        m.submodules.out_fifo = dst_fifo = StreamFIFO(ByteLayout, 1)
        wiring.connect(m, wiring.flipped(self.i), src_fifo.i)
        src, dst = src_fifo.o, dst_fifo.i
        m.d.comb += [
            self.o.payload.eq(dst_fifo.o.payload.data),
            self.o.valid.eq(dst_fifo.o.valid),
            dst_fifo.o.ready.eq(self.o.ready),
        ]
        out_done = self.o.valid & self.o.ready & dst_fifo.o.payload.last

        # Mode flags (registers: the mode is static during a message).
        # (Without the UTF-16 stages their modes' flags stay low: the logic for them goes.)
        modes = [mode for mode in Mode if self._utf16 or mode not in UTF16_MODES]
        flag = {mode: Signal(name=f"is_{mode.name.lower()}") for mode in Mode}
        m.d.sync += [flag[mode].eq(self.mode == mode) for mode in modes]

        def any_of(*chosen):
            return Cat(self.mode == mode for mode in chosen if mode in modes).any()

        to_encoder = Signal()      # the mid stream goes into the UTF-8 encoder
        packs = Signal()           # the mid stream goes into the packer
        assembles = Signal()       # the input goes into the unit assembler
        uses_encoder = Signal()    # the output comes from the UTF-8 encoder
        m.d.sync += [
            to_encoder.eq(any_of(Mode.TRANSCODE, Mode.FROM_UTF16)),
            packs.eq(any_of(Mode.DECODE, Mode.TO_UTF16)),
            assembles.eq(any_of(Mode.ENCODE, Mode.FROM_UTF16)),
            uses_encoder.eq(any_of(Mode.TRANSCODE, Mode.ENCODE, Mode.FROM_UTF16)),
        ]

        # The decoded items (the UTF-8 decoder's, or the surrogate joiner's in `from-utf16`) go
        # through a 1-entry FIFO too (its ready is a register, so the decoder's pipeline enable
        # does not depend on the encoder's or the packer's).
        m.submodules.mid_fifo = mid_fifo = StreamFIFO(CodepointLayout, 1)
        decoded = mid_fifo.i
        mid = mid_fifo.o

        unit_taken = Signal()
        unit, unit_valid, unit_last, unit_short, unit_class, asm_ready, partial = \
            self._unit_assembler(m, src, assembles, flag[Mode.FROM_UTF16], unit_taken)
        if self._utf16:
            joined, joined_valid, joined_taken = self._surrogate_joiner(
                m, unit, unit_valid, unit_last, unit_short, unit_class, decoded.ready)
        else:                   # (the mode is refused: nothing to join)
            joined, joined_valid, joined_taken = Signal(CodepointLayout), Const(0), Const(0)
        with m.If(flag[Mode.FROM_UTF16]):
            m.d.comb += [decoded.valid.eq(joined_valid), decoded.payload.eq(joined)]
        with m.Else():
            m.d.comb += [
                decoded.valid.eq(dec.o.valid),
                decoded.payload.eq(dec.o.payload),
                dec.o.ready.eq(decoded.ready),
            ]
        word, word_valid, word_last, pack_ready = self._word_packer(
            m, mid, dst, packs, flag[Mode.TO_UTF16])

        # -- routing: the input to one of the unit assembler and the decoders ...
        with m.If(flag[Mode.ENCODE]):
            m.d.comb += [
                src.ready.eq(asm_ready),
                enc.i.valid.eq(unit_valid),
                enc.i.payload.codepoint.eq(unit),
                enc.i.payload.last.eq(unit_last),
            ]
            m.d.comb += unit_taken.eq(enc.i.ready)
        with m.Elif(flag[Mode.FROM_UTF16]):
            m.d.comb += [src.ready.eq(asm_ready), unit_taken.eq(joined_taken)]
        with m.Else():
            m.d.comb += [dec.i.valid.eq(src.valid), src.ready.eq(dec.i.ready)]
        # (whatever the mode: no gate before it)
        m.d.comb += dec.i.payload.eq(src.payload)
        # ... the decoded items to one of the encoders, the packer and the counters ...
        with m.If(to_encoder):
            m.d.comb += [
                enc.i.valid.eq(mid.valid),
                enc.i.payload.codepoint.eq(mid.payload.codepoint),
                enc.i.payload.last.eq(mid.payload.last),
                mid.ready.eq(enc.i.ready),
            ]
        with m.Elif(packs):
            m.d.comb += mid.ready.eq(pack_ready)
        with m.Elif(flag[Mode.VALIDATE]):
            m.d.comb += mid.ready.eq(1)
        # ... and one of the encoders' and the packer's bytes to the output.
        with m.If(uses_encoder):
            m.d.comb += [
                dst.valid.eq(enc.o.valid),
                dst.payload.data.eq(enc.o.payload.data),
                enc.o.ready.eq(dst.ready),
                dst.payload.last.eq(enc.o.payload.last),
                self.done.eq(out_done),
            ]
        with m.Elif(packs):
            m.d.comb += [
                dst.valid.eq(word_valid),
                dst.payload.data.eq(word.as_value()[:8]),
                dst.payload.last.eq(word_last),
                self.done.eq(out_done),
            ]
        with m.Elif(flag[Mode.VALIDATE]):
            m.d.comb += self.done.eq(mid.valid & mid.payload.last)

        self._counters(m, flag[Mode.ENCODE], enc, mid, partial)
        return m

    @staticmethod
    def _unit_assembler(m, src, enable, utf16, taken):
        """Bytes of ``src`` -> units, in ``encode`` mode (``enable``) one UTF-32LE unit per 4
        bytes, a trailing partial unit -> U+FFFD; in ``from-utf16`` (``enable`` and ``utf16``)
        one UTF-16LE code unit per 2 bytes, an odd trailing byte -> a marker beat (``unit`` 0,
        ``short``) that the UTF-16 decoder turns into U+FFFD (``truncated``). ``taken``: the
        unit was taken. Returns the unit's registers ``(unit, valid, last, short)`` (a UTF-16
        code unit in ``unit[16:]``), whether it takes a byte (``ready``: a bubble per unit) and
        a pulse: a partial UTF-32 unit was replaced. ``unit_class`` (registers, from the
        unit's high byte): ``surrogate`` (a UTF-16 code unit D800..DFFF), ``pairs`` (a lead
        surrogate that is not its message's last unit)."""
        # (Data registers without reset: each is loaded before it is read, and a clear that
        # must reach a register whatever its enable would otherwise take LUTs in its path.)
        unit = Signal(32, name="unit", reset_less=True)
        count = Signal(2, name="unit_count")
        valid = Signal(name="unit_valid")
        last = Signal(name="unit_last")
        short = Signal(name="unit_short")
        partial = Signal(name="unit_partial")
        unit_class = Signal(UnitClass, name="unit_class")
        ready = ~valid
        with m.If(taken):
            m.d.sync += valid.eq(0)
        m.d.sync += partial.eq(0)
        with m.If(src.valid & ready & enable):
            m.d.sync += count.eq(count + 1)
            high = src.payload.data[2:]     # of a UTF-16 unit: D8..DB lead, DC..DF trail
            m.d.sync += [unit.eq(Cat(unit[8:], src.payload.data)),
                         unit_class.surrogate.eq(high[1:] == 0b11011),
                         unit_class.pairs.eq((high == 0b110110) & ~src.payload.last)]
            with m.If(Mux(utf16, count[0], count == 3)):
                m.d.sync += [valid.eq(1), last.eq(src.payload.last), short.eq(0)]
            with m.Elif(src.payload.last):
                m.d.sync += [unit.eq(Mux(utf16, 0, 0xFFFD)), valid.eq(1), last.eq(1),
                             count.eq(0), short.eq(1), partial.eq(~utf16), unit_class.eq(0)]
        return unit, valid, last, short, unit_class, ready, partial

    @staticmethod
    def _surrogate_joiner(m, unit, valid, last, short, unit_class, ready):
        """``from-utf16``: the unit assembler's code units (``unit[16:]``, ``valid``, ``last``,
        ``short``: the odd trailing byte's marker, ``unit_class``: whether the unit is a
        surrogate, a lead to pair) -> code points, as
        :class:`~utf8_gateware.hdl.utf16_decoder.Utf16Decoder` with ``replace`` gives them: a
        lead surrogate directly followed by a trail is one supplementary code point; any other
        surrogate is lone (U+FFFD, ``surrogate``); the marker is U+FFFD (``truncated``), with a
        lead directly before it (one maximal subpart, as CPython).

        A lead that is not its message's last unit is held in the assembler's register itself:
        the next two bytes shift it into ``unit[:16]``, beside the next unit. A held lead that
        is not followed by a trail goes out as U+FFFD first, and the unit is looked at again
        in the next cycle. ``ready``: the sink takes an item. Returns the item
        (:data:`CodepointLayout`, from registers through the selection), its ``valid`` and
        whether the unit is taken (a pulse); every decision is a function of registers (the
        unit's class is registered with its bytes)."""
        held = Signal(name="lead_held")     # unit[:16] holds a lead surrogate
        code = unit[16:]
        trail = unit_class.surrogate & code[10]
        hold = ~held & unit_class.pairs     # a lead to hold: nothing goes out yet
        item = Signal(CodepointLayout, name="joined")
        m.d.comb += item.last.eq(last)
        with m.If(short):
            m.d.comb += [item.codepoint.eq(0xFFFD), item.error.eq(ErrorKind.TRUNCATED)]
        with m.Elif(held & trail):
            # 0x10000 + (lead - 0xD800) * 0x400 + (trail - 0xDC00)
            m.d.comb += item.codepoint.eq(Cat(code[:10], unit[:6], unit[6:10] + 1))
        with m.Elif(held | unit_class.surrogate):
            m.d.comb += [item.codepoint.eq(0xFFFD), item.error.eq(ErrorKind.SURROGATE)]
            with m.If(held):        # (the unit after it comes next)
                m.d.comb += item.last.eq(0)
        with m.Else():
            m.d.comb += item.codepoint.eq(code)
        with m.If(valid & hold):
            m.d.sync += held.eq(1)
        with m.Elif(valid & ready):
            m.d.sync += held.eq(0)
        # (a held lead that goes out alone leaves the unit to be looked at again)
        taken = valid & Mux(held, ready & (short | trail), hold | ready)
        return item, valid & ~hold, taken

    @staticmethod
    def _word_packer(m, mid, dst, enable, utf16):
        """``decode`` mode: one decoded item of ``mid`` -> the 4 bytes of its
        :data:`DECODE_WORD`; ``to-utf16`` (``utf16``): its UTF-16LE code units, 2 or 4 bytes (a
        scalar value: the decoder replaces every error by U+FFFD). Low byte first, to ``dst``.
        Returns the word register (its low byte goes out), ``valid``, ``last`` (of the byte
        going out) and whether it takes an item (``ready``).

        A code point for UTF-16 is loaded as it is and formed in the next cycle from the
        register (a supplementary one becomes its surrogate pair): the FIFO's read multiplexer,
        the plane test and the pair's arithmetic in one cycle missed 48 MHz (40.6 MHz)."""
        word = Signal(DECODE_WORD, name="pack_word", reset_less=True)  # (see `unit`)
        w = word.as_value()
        index = Signal(2, name="pack_index")
        end = Signal(2, name="pack_end")     # the index of the word's last byte
        busy = Signal(name="pack_busy")      # a word is held (being formed or sent)
        form = Signal(name="pack_form")      # it holds a code point to be formed into UTF-16
        last = Signal(name="pack_last")
        bmp = w[16:21] == 0
        pair = Cat(w[10:16], plane_minus_one(w), Const(0b110110, 6),     # lead surrogate
                   w[:10], Const(0b110111, 6))                           # trail surrogate
        # (`busy`, not on dst.ready: a bubble per word, off the ready path. A word is only
        # loaded in the packing modes, so `busy` implies them.)
        with m.If(mid.valid & ~busy & enable):
            m.d.sync += [busy.eq(1), index.eq(0), last.eq(mid.payload.last), end.eq(3)]
            with m.If(utf16):
                m.d.sync += [w.eq(mid.payload.codepoint), form.eq(1)]
            with m.Else():
                m.d.sync += [
                    w.eq(0), word.codepoint.eq(mid.payload.codepoint),
                    word.error.eq(mid.payload.error),
                ]
        with m.Elif(form):
            # (A BMP code point is its own code unit, already in place.)
            m.d.sync += [form.eq(0), end.eq(Mux(bmp, 1, 3))]
            with m.If(~bmp):
                m.d.sync += w.eq(pair)
        with m.Elif(busy & dst.ready):
            # The byte going out is the word's low byte: shift the next one down.
            m.d.sync += [index.eq(index + 1), w.eq(w >> 8), busy.eq(index != end)]
        return word, busy & ~form, (index == end) & last, ~busy

    def _counters(self, m, is_encode, enc, decoded, partial):
        """Code points and errors per kind: the units ``enc`` takes and its errors (and the
        ``partial`` units) in ``encode`` mode, else the ``decoded`` items (as they leave the
        FIFO: kinds from its register) and their kinds. They count one cycle behind the
        transfers: registered events, so that the counters' enables do not hang off the cores'
        ready paths or the surrogate joiner's decisions."""
        event = Signal()              # count one code point / code unit
        kinds = [kind for kind in ErrorKind if kind is not ErrorKind.NONE]
        # One registered flag per kind (not a registered kind compared afterwards), so that each
        # counter's enable is a flip-flop.
        hits = Signal(len(kinds))
        encoded = enc.o.valid & enc.o.ready
        transfer = decoded.valid & decoded.ready
        with m.If(is_encode):
            m.d.sync += event.eq(enc.i.valid & enc.i.ready)
            for index, kind in enumerate(kinds):
                hit = encoded & (enc.o.payload.error == kind)
                if kind is ErrorKind.TRUNCATED:
                    hit = hit | partial
                m.d.sync += hits[index].eq(hit)
        with m.Else():
            m.d.sync += event.eq(transfer)
            for index, kind in enumerate(kinds):
                m.d.sync += hits[index].eq(transfer & (decoded.payload.error == kind))
        with m.If(event):
            m.d.sync += self.codepoints.eq(self.codepoints + 1)
        for index, kind in enumerate(kinds):
            assert index == kind.value - 1
            with m.If(hits[index]):
                m.d.sync += self.errors[index].eq(self.errors[index] + 1)
