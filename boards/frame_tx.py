"""The board's frame transmitter: frames into the UART, one byte at a time.

See :mod:`~utf8_gateware.boards.protocol` for the frame format.
"""

from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import crc, data, stream, wiring
from amaranth.lib.wiring import In, Out

from .protocol import SYNC, OFFSET_SIZE, BoardFrame


__all__ = ["FrameHeader", "FrameRequests", "PayloadFields", "FrameTransmitter"]


#: A frame to send: its type and payload length.
FrameHeader = data.StructLayout({
    "kind": BoardFrame,
    "length": unsigned(16),
})

#: Frames asked of the transmitter (the requester's side): see :class:`FrameTransmitter`.
FrameRequests = wiring.Signature({
    "request": Out(1),
    "header": Out(FrameHeader),
    "accept": In(1),
    "settled": In(1),
    "idle": In(1),
    "kind": In(BoardFrame, init=BoardFrame.HELLO_ACK),
})

#: The payload bytes of frames other than DATA (the transmitter's side): see
#: :class:`FrameTransmitter`.
PayloadFields = wiring.Signature({
    "kind": Out(BoardFrame, init=BoardFrame.HELLO_ACK),
    "index": Out(16),
    "byte": In(8),
})


class FrameTransmitter(wiring.Component):
    """Sends board frames: sync byte, type, length, payload, CRC-16.

    Ports
    -----
    ``requests``: In(:data:`FrameRequests`)
        ``request``, ``header`` (:data:`FrameHeader`): the next frame to send, if any (sampled
        in every cycle: the choice may change until it is taken, so this is not a stream).
        ``accept``: the request is taken (pulse): no frame was in progress, the transmitter had
        been idle for a few cycles (``settled``) and there was no ``abort``.
        ``settled``: idle for 7 cycles since the last frame ended or ``abort`` (pipelined values
        that depend on the frame just sent are current again).
        ``idle``: no frame in progress. ``kind``: the type of the frame in progress (or of the
        last one).
    ``data``: In(stream.Signature(8))
        The data of DATA frames (the output buffer), after their offset (from ``fields``). A byte is
        taken (``ready``) in the cycle after the UART took it, so the source's ``valid`` may depend
        on nothing else.
    ``fields``: Out(:data:`PayloadFields`)
        The payload of other frames and the offset of DATA frames (their first
        :data:`~.protocol.OFFSET_SIZE` bytes): ``byte`` is the byte at position ``index`` of a frame
        of type ``kind``, any function of them through up to three registers (a byte is offered only
        when ``index`` has held for four cycles).
    ``abort``: In(1)
        The message was cleared: a DATA or STATUS frame in progress is finished with zeros and
        an inverted CRC (the host discards it); other frames go out as they are.
    ``o``: Out(stream.Signature(8))
        Bytes to the UART, from registers.
    ``started``: Out(1)
        Pulses when the UART takes a frame's sync byte.
    ``sent``: Out(1)
        Pulses when the UART takes a data byte of a DATA frame (not its offset).

    Throughput: back to back on the line (the UART is busy for 10 bit times per byte, longer
    than the 4-cycle pipeline behind each byte).
    """
    def __init__(self):
        super().__init__({
            "requests": In(FrameRequests),
            "data": In(stream.Signature(8)),
            "fields": Out(PayloadFields),
            "abort": In(1),
            "o": Out(stream.Signature(8)),
            "started": Out(1),
            "sent": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        requests, fields = self.requests, self.fields
        kind = Signal(BoardFrame, init=BoardFrame.HELLO_ACK)
        idle = Signal()
        m.d.comb += [requests.kind.eq(kind), fields.kind.eq(kind), requests.idle.eq(idle)]
        m.submodules.crc = tx_crc = crc.catalog.CRC16_CCITT_FALSE(data_width=8).create()
        length = Signal(16)
        left = Signal(16)           # payload bytes still to send, counting the current one
        last = Signal()             # one payload byte left (registered: no compare in the path)
        past_offset = Signal()      # index >= OFFSET_SIZE (registered)
        poison = Signal()           # the frame was cut short by `abort`: pad it, spoil its CRC
        index = fields.index

        # A few cycles for the pipelined lengths after a frame or an abort.
        settle = Signal(3)
        settled = Signal()          # settle == 7, registered
        with m.If(self.abort):
            m.d.sync += [settle.eq(0), settled.eq(0)]
        with m.Elif(idle & (settle != 7)):
            m.d.sync += [settle.eq(settle + 1), settled.eq(settle == 6)]
        m.d.comb += [requests.settled.eq(settled),
                     requests.accept.eq(requests.request & idle & settled & ~self.abort)]

        # The framer's byte (valid/byte, combinational) reaches the UART and the CRC through a
        # register, and the payload fields are up to three more stages behind: a byte is
        # offered only when `valid` has held for 4 cycles since the last byte was taken (so
        # every stage is current). The UART is busy for 10 bit times after each byte, so this
        # costs no line time.
        valid = Signal()
        byte = Signal(8)
        byte_q = Signal(8)
        age = Signal(3)
        take = self.o.valid & self.o.ready
        release = Signal()          # take the byte just sent from the `data` source
        m.d.sync += [release.eq(0), byte_q.eq(byte)]
        m.d.comb += self.data.ready.eq(release)
        with m.If(take | ~valid):
            m.d.sync += age.eq(0)
        with m.Elif(age != 4):
            m.d.sync += age.eq(age + 1)
        # (`valid` only drops after a byte is taken, or when an abort cuts a DATA frame short,
        # which then goes out poisoned anyway.)
        m.d.comb += [self.o.valid.eq(age == 4), self.o.payload.eq(byte_q),
                     tx_crc.data.eq(byte_q)]

        def send(value, next_state, crc_valid=True):
            m.d.comb += [valid.eq(1), byte.eq(value)]
            if crc_valid:
                m.d.comb += tx_crc.valid.eq(take)
            with m.If(take):
                m.next = next_state

        is_data = Signal()
        m.d.sync += is_data.eq(kind == BoardFrame.DATA)
        with m.FSM(name="tx_fsm") as fsm:
            with m.State("IDLE"):
                with m.If(requests.accept):
                    header = requests.header
                    m.d.sync += [kind.eq(header.kind), length.eq(header.length), index.eq(0),
                                 left.eq(header.length), past_offset.eq(0),
                                 poison.eq(0), last.eq(header.length == 1), settle.eq(0),
                                 settled.eq(0)]
                    m.next = "SYNC"
            with m.State("SYNC"):
                send(SYNC, "TYPE", crc_valid=False)
                m.d.comb += self.started.eq(take)
            with m.State("TYPE"):
                send(kind, "LEN0")
                m.d.comb += tx_crc.start.eq(take)
            with m.State("LEN0"):
                send(length[:8], "LEN1")
            with m.State("LEN1"):
                send(length[8:], "PAYLOAD")
            with m.State("PAYLOAD"):
                from_data = is_data & ~poison & past_offset
                with m.If(from_data):
                    m.d.comb += [valid.eq(self.data.valid), byte.eq(self.data.payload)]
                with m.Elif(poison):
                    m.d.comb += [valid.eq(1), byte.eq(0)]
                with m.Else():
                    m.d.comb += [valid.eq(1), byte.eq(fields.byte)]
                m.d.comb += tx_crc.valid.eq(take)
                with m.If(take):
                    m.d.sync += [index.eq(index + 1), left.eq(left - 1), last.eq(left == 2),
                                 past_offset.eq(past_offset | (index == OFFSET_SIZE - 1))]
                    with m.If(from_data):
                        # The byte is in byte_q: release it from the source next cycle.
                        m.d.sync += release.eq(1)
                        m.d.comb += self.sent.eq(1)
                    with m.If(last):
                        m.next = "CRC0"
            with m.State("CRC0"):
                send(tx_crc.crc[8:] ^ Mux(poison, 0xFF, 0), "CRC1", crc_valid=False)
            with m.State("CRC1"):
                send(tx_crc.crc[:8] ^ Mux(poison, 0xFF, 0), "IDLE", crc_valid=False)

        m.d.comb += idle.eq(fsm.ongoing("IDLE"))
        with m.If(self.abort & ~idle &
                  ((kind == BoardFrame.DATA) | (kind == BoardFrame.STATUS))):
            m.d.sync += poison.eq(1)
        return m
