"""The payload bytes of the board's own frames (HELLO_ACK, CREDIT, STATUS, ERROR) and the offset
that starts a DATA frame."""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
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

    The bytes are selected in three registered stages (each type's byte, and the STATUS byte of
    each group of four words; the type's byte and the STATUS byte; the byte), so no wide
    multiplexer sits between two registers.
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
        index, kind = self.fields.index, self.fields.kind
        # Stage 1: each frame type's byte at ``index`` (the STATUS as one byte per group of
        # four words), and the type as flags.
        candidates = {
            BoardFrame.HELLO_ACK: Array(Const(value, 8) for value in self.hello)[
                index[:max(1, (len(self.hello) - 1).bit_length())]],
            BoardFrame.CREDIT: Cat(self.values.credit, self.values.received)
                .word_select(index[:3], 8),
            BoardFrame.ERROR: Cat(self.values.error_code, Const(0, 4), self.values.error_epoch,
                                  self.values.received).word_select(index[:3], 8),
            BoardFrame.DATA: self.offset.word_select(index[:2], 8),
        }
        stage1 = {frame: Signal(8, name=f"{frame.name.lower()}_byte") for frame in candidates}
        is_kind = {frame: Signal(name=f"is_{frame.name.lower()}") for frame in BoardFrame}
        m.d.sync += [stage1[frame].eq(value) for frame, value in candidates.items()]
        m.d.sync += [flag.eq(kind == frame) for frame, flag in is_kind.items()]
        status = self.status.as_value()
        groups = []
        for number in range(0, len(status), 128):
            group = Signal(8, name=f"status_group{number // 128}")
            words = status[number:number + 128]
            m.d.sync += group.eq(Cat(words, Const(0, 128 - len(words)))
                                 .word_select(index[:4], 8))
            groups.append(group)
        # Stage 2: the STATUS byte, the byte of the other types.
        status_byte = Signal(8)
        other_byte = Signal(8)
        is_status = Signal()
        m.d.sync += [status_byte.eq(Array(groups)[index[4:4 + (len(groups) - 1).bit_length()]]),
                     is_status.eq(is_kind[BoardFrame.STATUS])]
        m.d.sync += other_byte.eq(0)
        for frame, byte in stage1.items():
            with m.If(is_kind[frame]):
                m.d.sync += other_byte.eq(byte)
        # Stage 3: the byte.
        m.d.sync += self.fields.byte.eq(Mux(is_status, status_byte, other_byte))
        return m
