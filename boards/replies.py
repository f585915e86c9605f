"""The payload bytes of the board's own frames (HELLO_ACK, CREDIT, STATUS, ERROR) and the offset
that starts a DATA frame."""

from amaranth.hdl import Array, Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .frame_tx import PayloadFields
from .protocol import BoardFrame, ErrorCode, STATUS_LAYOUT


__all__ = ["ReplyValues", "ReplyFields"]


#: The values the message control puts into CREDIT and ERROR frames (its side).
ReplyValues = wiring.Signature({
    "credit": Out(32),
    "received": Out(32),
    "error_code": Out(ErrorCode, init=ErrorCode.CRC),
    "error_epoch": Out(8),
})


class ReplyFields(wiring.Component):
    """The payload bytes of the board's frames other than DATA (whose data comes from the output
    buffer, after the ``offset`` given here), three registers behind their inputs.

    Parameter: ``hello`` (bytes: the HELLO_ACK payload, a constant).

    Ports
    -----
    ``fields``: In(:data:`~.frame_tx.PayloadFields`)
        From the :class:`~.frame_tx.FrameTransmitter`: the frame type ``kind`` and the payload
        position ``index``; to it: ``byte``, valid three cycles after ``index`` or an input
        changed.
    ``values``: In(:data:`ReplyValues`)
        The CREDIT payload (``credit``, ``received``) and the ERROR payload (``error_code``,
        ``error_epoch``, ``received``).
    ``offset``: In(32)
        The first four payload bytes of a DATA frame: its offset (modulo 2**24) and epoch.
    ``status``: In(:data:`~utf8_gateware.boards.protocol.STATUS_LAYOUT`)
        The STATUS payload (little-endian).

    The STATUS words are selected in three stages (four registered 4:1 groups of words, the
    word, the byte), so no wide multiplexer sits between two registers.
    """
    def __init__(self, hello):
        self.hello = bytes(hello)
        super().__init__({
            "fields": In(PayloadFields),
            "values": In(ReplyValues),
            "offset": In(32),
            "status": In(STATUS_LAYOUT),
        })

    def elaborate(self, platform):
        m = Module()
        index = self.fields.index
        status = self.status.as_value()
        words = [status.word_select(number, 32) for number in range(len(status) // 32)]
        count = -(-len(words) // 4)
        words += [Const(0, 32)] * (4 * count - len(words))
        groups = [Signal(32, name=f"status_group{number}") for number in range(count)]
        for number, group in enumerate(groups):
            m.d.sync += group.eq(Array(words[4 * number:4 * number + 4])[index[2:4]])
        word = Signal(32)
        m.d.sync += word.eq(Array(groups)[index[4:4 + (count - 1).bit_length()]])

        byte = Signal(8)
        m.d.sync += self.fields.byte.eq(byte)
        with m.Switch(self.fields.kind):
            with m.Case(BoardFrame.HELLO_ACK):
                with m.Switch(index):
                    for position, value in enumerate(self.hello):
                        with m.Case(position):
                            m.d.comb += byte.eq(value)
            with m.Case(BoardFrame.CREDIT):
                m.d.comb += byte.eq(Cat(self.values.credit, self.values.received)
                                    .word_select(index[:3], 8))
            with m.Case(BoardFrame.ERROR):
                m.d.comb += byte.eq(Cat(self.values.error_code, Const(0, 4), self.values.error_epoch,
                                        self.values.received).word_select(index[:3], 8))
            with m.Case(BoardFrame.DATA):
                m.d.comb += byte.eq(self.offset.word_select(index[:2], 8))
            with m.Case(BoardFrame.STATUS):
                m.d.comb += byte.eq(word.word_select(index[:2], 8))
        return m
