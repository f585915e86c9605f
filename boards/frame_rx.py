"""The board's frame receiver: host frames out of the UART's bytes.

See :mod:`~utf8_gateware.boards.protocol` for the frame format.
"""

from amaranth.hdl import Cat, Module, Signal, unsigned
from amaranth.lib import crc, data, stream, wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.component import CheckedComponent
from .protocol import SYNC, OFFSET_SIZE, HostFrame, ErrorCode, host_lengths


__all__ = ["FrameInfo", "FrameError", "ReceivedFrames", "FrameReceiver"]


#: What the receiver knows of the frame it is receiving: type, payload length (DATA: of its data,
#: without the offset) and the last seven payload bytes (``fields``, little-endian: a START's
#: mode, window and frame size; a WINDOW's acknowledgement and flags; the total of an END in the
#: top four bytes), of a DATA frame the four before its data (its offset, in the top four bytes).
FrameInfo = data.StructLayout({
    "kind": HostFrame,
    "length": unsigned(16),
    "fields": unsigned(56),
})

#: A rejected frame: ``valid`` pulses with the :class:`ErrorCode`.
FrameError = data.StructLayout({
    "valid": unsigned(1),
    "code": ErrorCode,
})


#: What the frame receiver reports (its ``frames`` port): see :class:`FrameReceiver`.
ReceivedFrames = wiring.Signature({
    "frame": Out(FrameInfo),
    "check": Out(1),
    "done": Out(1),
    "offset": Out(1),
    "error": Out(FrameError),
    "line_idle": Out(1),
})


class FrameReceiver(CheckedComponent):
    """Parses the host's frames from received bytes and checks them.

    Parameters: ``max_payload`` (the largest DATA frame; the length check is generated from
    :func:`~utf8_gateware.boards.protocol.host_lengths`), ``frame_timeout`` (clock cycles a
    frame may stall before it is dropped), ``starve_time`` (clock cycles of silence after which
    ``line_idle`` rises).

    Ports
    -----
    ``i``: In(stream.Signature(8))
        Bytes from the UART receiver; always ready (bytes are at least 10 bit times apart, and
        no state lasts longer than a few cycles without taking a byte).
    ``framing_error``, ``overrun``: In(1)
        The UART's error pulses: inside a frame they end it (``FRAMING``/``OVERRUN`` errors).
    ``accept_data``: In(1)
        The payload of DATA frames goes to ``o`` (a message is in progress); sampled when the
        length has arrived.
    ``data_room``: In(32)
        A DATA frame longer than this is refused with ``OVERRUN`` (the host's remaining credit).
    ``discard``: In(1)
        Forget a payload byte not yet passed on to ``o`` (the frame was rolled back).
    ``place``: In(1)
        The data of the DATA frame being received go to ``o`` (the user's verdict on its offset,
        ``frames.offset``; sampled with each data byte, which comes at least a byte time after
        the offset).
    ``o``: Out(stream.Signature(8))
        The data bytes of accepted DATA frames (their offset stays in ``fields``), from a
        register (no combinational path back to the UART). They are not yet checked: the user
        commits them on ``done`` and rolls them back on an error.
    ``data_begin``: Out(1)
        Pulses when a DATA frame whose payload goes to ``o`` has passed the header checks.
    ``frames``: Out(:data:`ReceivedFrames`)
        ``frame`` (:data:`FrameInfo`): the frame's type, length and fields; complete when ``check``
        pulses, and held until the next frame's type arrives. ``check``: pulses when the whole frame
        has arrived (the CRC not yet known). ``done``: pulses two cycles after ``check`` if the CRC
        is good (act upon the frame). ``offset``: pulses (registered) when a DATA frame's offset has
        arrived (in ``fields``). ``error`` (:data:`FrameError`): a frame rejected (a cycle after the
        receiver saw it): ``CRC``, ``UNKNOWN_TYPE``, ``BAD_LENGTH`` (not allowed by the table),
        ``OVERRUN`` (a DATA frame longer, offset included, than ``data_room``, or a UART overrun),
        ``FRAMING``, ``TIMEOUT``. ``line_idle``: no byte has arrived for ``starve_time`` cycles.

    After an error the receiver hunts for the next sync byte. The checks are made in registered
    steps (the header's comparisons in one cycle, their verdicts in the next, the action in a
    third; the CRC in ``check``, the verdict a cycle later), and ``done`` and ``error`` come from
    registers, so the decisions that fan out widely come from flip-flops.
    """
    @classmethod
    def check_parameters(cls, *, max_payload, frame_timeout, starve_time):
        for name, value in (("max_payload", max_payload), ("frame_timeout", frame_timeout),
                            ("starve_time", starve_time)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        if max_payload > 0xFFFF - OFFSET_SIZE:
            raise ValueError(f"max_payload must be at most {0xFFFF - OFFSET_SIZE}, "
                             f"not {max_payload}")

    def __init__(self, *, max_payload, frame_timeout, starve_time):
        self.lengths = host_lengths(max_payload)
        self.frame_timeout = frame_timeout
        self.starve_time = starve_time
        super().__init__({
            "i": In(stream.Signature(8)),
            "framing_error": In(1),
            "overrun": In(1),
            "accept_data": In(1),
            "data_room": In(32),
            "discard": In(1),
            "place": In(1),
            "o": Out(stream.Signature(8)),
            "data_begin": Out(1),
            "frames": Out(ReceivedFrames),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.crc = rx_crc = crc.catalog.CRC16_CCITT_FALSE(data_width=8).create()
        # The bytes go through a register with their sync flag: the decisions below start from
        # flip-flops (a byte is 10 bit times from the next, so the cycle costs nothing).
        take = Signal()
        byte = Signal(8)
        is_sync = Signal()
        m.d.comb += self.i.ready.eq(1)
        m.d.sync += [take.eq(self.i.valid), byte.eq(self.i.payload),
                     is_sync.eq(self.i.payload == SYNC)]
        m.d.comb += rx_crc.data.eq(byte)
        frames = self.frames
        kind, length, fields = frames.frame.kind, frames.frame.length, frames.frame.fields

        left = Signal(16)           # payload bytes still to come
        last = Signal()             # ... only one (registered: no compare in the decisions)
        empty = Signal()            # the frame has no payload
        known = Signal()            # LENX -> LENC: registered verdicts on the header
        length_ok = Signal()
        room_ok = Signal()
        to_buffer = Signal()        # the payload goes to `o`
        is_data = Signal()          # a DATA frame
        body = Signal()             # the next payload byte is data (not the offset)
        head = Signal(2)            # offset bytes taken (DATA; the other frames' fields too)
        crc_good = Signal()         # CHECK -> ACT
        kind_is = {frame_kind: Signal(name=f"kind_is_{frame_kind.name.lower()}")
                   for frame_kind in self.lengths}
        length_in = {frame_kind: Signal(name=f"length_in_{frame_kind.name.lower()}")
                     for frame_kind in self.lengths}
        accepting = Signal()        # accept_data, sampled in LENX
        # `left` changes only when a byte is taken (bytes are 10 bit times apart): its flags
        # for the next byte are registered in every cycle.
        left_is_2 = Signal()
        m.d.sync += left_is_2.eq(left == 2)
        room_ge = Signal()          # data_room >= length
        length_small = Signal()     # length < 2
        abort_frame = Signal()      # something went wrong inside the frame

        # The verdicts go out through registers (they fan out into the message control).
        error = Signal(FrameError)
        done = Signal()
        m.d.sync += [frames.error.eq(error), frames.done.eq(done), frames.offset.eq(0)]

        def fail(code):
            m.d.comb += [error.valid.eq(1), error.code.eq(code)]

        in_frame = Signal()         # the receiver is inside a frame
        timeout = self._idle_timer(m, take)

        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)

        def header_byte(state, next_state, target=None):
            with m.State(state):
                m.d.comb += rx_crc.valid.eq(take)
                with m.If(take):
                    if target is not None:
                        m.d.sync += target.eq(byte)
                    m.next = next_state
                with m.If(abort_frame):
                    m.next = "HUNT"

        with m.FSM(name="rx_fsm") as fsm:
            with m.State("HUNT"):
                with m.If(take & is_sync):
                    m.d.comb += rx_crc.start.eq(1)
                    m.next = "TYPE"
            header_byte("TYPE", "LEN0", kind)
            header_byte("LEN0", "LEN1", length[:8])
            header_byte("LEN1", "LENX", length[8:])
            with m.State("LENX"):
                # The header's comparisons, each into a register of its own (the next byte is
                # cycles away) ...
                for frame_kind, (low, high) in self.lengths.items():
                    m.d.sync += [kind_is[frame_kind].eq(kind == frame_kind),
                                 length_in[frame_kind].eq(_allowed(length, low, high))]
                m.d.sync += [left.eq(length), length_small.eq(length[1:] == 0),
                             accepting.eq(self.accept_data), room_ge.eq(self.data_room[16:].any() |
                                             (self.data_room[:16] >= length)),
                             body.eq(0), head.eq(0)]
                m.next = "LENV"
                with m.If(abort_frame):
                    m.next = "HUNT"
            with m.State("LENV"):
                # ... and their verdicts in the next cycle.
                data_frame = kind_is[HostFrame.DATA]
                m.d.sync += [last.eq(length_small & length[0]), empty.eq(length_small & ~length[0]),
                             known.eq(Cat(*kind_is.values()).any()),
                             length_ok.eq(Cat(*(kind_is[k] & length_in[k] for k in kind_is)).any()),
                             to_buffer.eq(data_frame & accepting), is_data.eq(data_frame),
                             room_ok.eq(~(data_frame & accepting) | room_ge)]
                m.next = "LENC"
                with m.If(abort_frame):
                    m.next = "HUNT"
            with m.State("LENC"):
                with m.If(~known):
                    fail(ErrorCode.UNKNOWN_TYPE)
                    m.next = "HUNT"
                with m.Elif(~length_ok):
                    fail(ErrorCode.BAD_LENGTH)
                    m.next = "HUNT"
                with m.Else():
                    # A frame beyond the credit (a repeat of one already taken, say) is received
                    # whole, so that the receiver stays in step with the frames, and refused
                    # at its end.
                    m.d.comb += self.data_begin.eq(to_buffer & room_ok)
                    with m.If(~room_ok):
                        m.d.sync += to_buffer.eq(0)
                    with m.If(is_data):
                        m.d.sync += length.eq(length - OFFSET_SIZE)
                    with m.If(empty):
                        m.next = "CRC0"
                    with m.Else():
                        m.next = "PAYLOAD"
                with m.If(abort_frame):
                    m.next = "HUNT"
            with m.State("PAYLOAD"):
                m.d.comb += rx_crc.valid.eq(take)
                with m.If(take):
                    m.d.sync += [left.eq(left - 1), last.eq(left_is_2)]
                    # The fields: every byte of the other frames, the offset of a DATA frame
                    # (its first four bytes); then its data.
                    with m.If(~body):
                        m.d.sync += [fields.eq(Cat(fields[8:], byte)), head.eq(head + 1)]
                        with m.If(is_data & (head == OFFSET_SIZE - 1)):
                            m.d.sync += [body.eq(1), frames.offset.eq(1)]
                    with m.If(to_buffer & body & self.place):
                        with m.If(self.o.valid):
                            fail(ErrorCode.OVERRUN)     # cannot happen: bytes are far apart
                            m.next = "HUNT"
                        m.d.sync += [self.o.payload.eq(byte), self.o.valid.eq(1)]
                    with m.If(last):
                        m.next = "CRC0"
                with m.If(abort_frame):
                    m.next = "HUNT"
            header_byte("CRC0", "CRC1")
            header_byte("CRC1", "CHECK")
            with m.State("CHECK"):
                m.d.comb += frames.check.eq(1)
                m.d.sync += crc_good.eq(rx_crc.match_detected)
                m.next = "ACT"
            with m.State("ACT"):
                with m.If(~crc_good):
                    fail(ErrorCode.CRC)
                with m.Elif(~room_ok):
                    fail(ErrorCode.OVERRUN)
                with m.Else():
                    m.d.comb += done.eq(1)
                m.next = "HUNT"

        # Anything going wrong inside a frame ends it.
        m.d.comb += in_frame.eq(~fsm.ongoing("HUNT") & ~fsm.ongoing("CHECK") &
                                ~fsm.ongoing("ACT"))
        # `abort_frame` is registered (the FSM's next state from flip-flops) and only looked at
        # in the states inside a frame, so it needs no state; a byte taken clears it (the
        # timeout it may carry is a cycle old).
        m.d.sync += abort_frame.eq((self.framing_error | self.overrun | timeout) & ~take)
        with m.If(self.framing_error):
            fail(ErrorCode.FRAMING)
        with m.If(self.overrun):
            fail(ErrorCode.OVERRUN)
        with m.If(in_frame & timeout & ~abort_frame):
            fail(ErrorCode.TIMEOUT)
        with m.If(self.discard):
            m.d.sync += self.o.valid.eq(0)
        return m

    def _idle_timer(self, m, take):
        """Silence on the line: ``line_idle`` after ``starve_time`` cycles; returns a flag that
        is set after ``frame_timeout`` cycles."""
        idle_max = max(self.frame_timeout, self.starve_time)
        idle = Signal(range(idle_max + 1))
        timeout = Signal()
        with m.If(take):
            m.d.sync += [idle.eq(0), timeout.eq(0), self.frames.line_idle.eq(0)]
        with m.Elif(idle != idle_max):
            m.d.sync += idle.eq(idle + 1)
            with m.If(idle == self.frame_timeout - 1):
                m.d.sync += timeout.eq(1)
            with m.If(idle == self.starve_time - 1):
                m.d.sync += self.frames.line_idle.eq(1)
        return timeout


def _allowed(value, low, high):
    """``low <= value <= high``, without comparisons that are always true."""
    if low == high:
        return value == low
    if low == 0:
        return value <= high
    if low == 1:
        return (value != 0) & (value <= high)
    return (value >= low) & (value <= high)
