"""The payload bytes of the board's own frames (HELLO_ACK, CREDIT, STATUS, ERROR) and the offset
that starts a DATA frame."""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .frame_tx import PayloadFields
from .protocol import STAMP_FIELDS, STATUS_FIELDS, STATUS_SIZE, BoardFrame, ErrorCode


__all__ = ["ReplyValues", "StatusCounters", "ReplyFields"]


#: The values the message control puts into CREDIT and ERROR frames (its side).
ReplyValues = wiring.Signature({
    "credit": Out(32),
    "received": Out(32),
    "error_code": Out(ErrorCode, init=ErrorCode.CRC),
    "error_epoch": Out(8),
    "have_from": Out(16),
    "have_to": Out(16),
})

#: The STATUS fields before the stamps: the u32 counters (the stamps are read from
#: :class:`~.stamps.MessageStamps`' block RAM, one at a time).
StatusCounters = data.StructLayout({name: 32 for name in STATUS_FIELDS
                                    if name not in STAMP_FIELDS})
#: The STATUS payload's first stamp byte.
STAMPS_AT = StatusCounters.size // 8


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
        ``error_epoch``, ``received``, ``have_from``, ``have_to``).
    ``offset``: In(32)
        The first four payload bytes of a DATA frame: its offset (modulo 2**24) and epoch.
    ``status``: In(:data:`StatusCounters`)
        The STATUS payload's counters (little-endian) ...
    ``stamp_read``: Out(2), ``stamp``: In(64)
        ... and its stamps: the number of the stamp at ``fields.index`` (in
        :data:`~.protocol.STAMP_FIELDS`), its value a cycle later (from
        :class:`~.stamps.MessageStamps`).

    The bytes are selected in three registered stages (the position and the type, copied next
    to the multiplexers; each type's byte, and the STATUS byte of each group of four words; the
    byte), so no wide multiplexer sits between two registers and the transmitter's index does
    not fan out across the die into them.
    """
    def __init__(self, hello):
        self.hello = bytes(hello)
        super().__init__({
            "fields": In(PayloadFields),
            "values": In(ReplyValues),
            "offset": In(32),
            "status": In(StatusCounters),
            "stamp_read": Out(range(len(STAMP_FIELDS))),
            "stamp": In(64),
        })

    def elaborate(self, platform):
        m = Module()
        # Stage 1: the position and the type, registered here (the transmitter's index fans
        # out to every multiplexer below: this copy sits among them).
        status = self.status.as_value()
        n_groups = -(-len(status) // 128)
        index = Signal(max(5, (STATUS_SIZE - 1).bit_length(),
                           (len(self.hello) - 1).bit_length()), name="index")
        is_kind = {frame: Signal(name=f"is_{frame.name.lower()}") for frame in BoardFrame}
        m.d.sync += index.eq(self.fields.index)
        # (the block RAM's address register stands beside `index`)
        m.d.comb += self.stamp_read.eq((self.fields.index[3:] - STAMPS_AT // 8)[:2])
        m.d.sync += [flag.eq(self.fields.kind == frame) for frame, flag in is_kind.items()]
        # Stage 2: each frame type's byte at ``index`` (the STATUS as one byte per group of
        # four words), the type flags and the group number again.
        candidates = {
            BoardFrame.HELLO_ACK: Array(Const(value, 8) for value in self.hello)[
                index[:max(1, (len(self.hello) - 1).bit_length())]],
            BoardFrame.CREDIT: Cat(self.values.credit, self.values.received)
                .word_select(index[:3], 8),
            BoardFrame.ERROR: Cat(self.values.error_code, Const(0, 4), self.values.error_epoch,
                                  self.values.received, self.values.have_from,
                                  self.values.have_to).word_select(index[:4], 8),
            BoardFrame.DATA: self.offset.word_select(index[:2], 8),
        }
        stamp_byte = Signal(8)
        in_stamps = Signal()
        m.d.sync += [stamp_byte.eq(self.stamp.word_select(index[:3], 8)),
                     in_stamps.eq(index >= STAMPS_AT)]
        stage2 = {frame: Signal(8, name=f"{frame.name.lower()}_byte") for frame in candidates}
        m.d.sync += [stage2[frame].eq(value) for frame, value in candidates.items()]
        groups = []
        for number in range(n_groups):
            group = Signal(8, name=f"status_group{number}")
            words = status[number * 128:(number + 1) * 128]
            m.d.sync += group.eq(Cat(words, Const(0, 128 - len(words)))
                                 .word_select(index[:4], 8))
            groups.append(group)
        group_number = Signal(max(1, (n_groups - 1).bit_length()))
        is_kind2 = {frame: Signal(name=f"is_{frame.name.lower()}2") for frame in BoardFrame}
        m.d.sync += [group_number.eq(index[4:]),
                     *(is_kind2[frame].eq(flag) for frame, flag in is_kind.items())]
        # Stage 3: the byte (an AND-OR of the types' bytes: one flag is set).
        byte = Const(0, 8)
        for frame, value in stage2.items():
            byte = byte | Mux(is_kind2[frame], value, 0)
        byte = byte | Mux(is_kind2[BoardFrame.STATUS],
                          Mux(in_stamps, stamp_byte, Array(groups)[group_number]), 0)
        m.d.sync += self.fields.byte.eq(byte)
        return m
