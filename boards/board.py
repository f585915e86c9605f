"""The board's logic between the UART pins: protocol engine, buffers, datapath, LEDs.

:class:`BoardCore` is everything but the clock: the iCEBreaker top
(:mod:`~utf8_gateware.boards.icebreaker`) adds the PLL and the pins, the virtual board
(:mod:`~utf8_gateware.boards.virtual`) drives ``clk`` and the UART pins from C++.

Structure::

    rx pin -> UARTReceiver -> frame receiver --DATA--> input RingBuffer (commit on good CRC)
                                  |                          |
                               control                  Datapath (cores)
                                  |                          |
    tx pin <- UARTTransmitter <- frame transmitter <-- output RingBuffer

The protocol (frame format, credits, windows, modes) is described in
:mod:`~utf8_gateware.boards.protocol`.

Timing: the iCE40 UP5K is slow (a LUT plus its routing is ~2.5 ns), so everything wide is
registered: 32-bit counters are compared a cycle before the decision that needs them, the
frame receiver decides in two steps (CHECK registers flags, ACT acts), errors take effect a
cycle later, the datapath's ports and the decoder's output go through 2-entry FIFOs, and the
transmitter's payload bytes come out of a 3-stage pipeline that the UART's 10 bit times per
byte hide. At 36 MHz the whole board (with the cores) places and routes at about 38-39 MHz in
about 3600 logic cells, no block RAM and 3 SPRAMs (32 KiB in, 64 KiB out).
"""

import struct

from amaranth.hdl import Array, Cat, Const, Module, Mux, ResetInserter, Signal
from amaranth.lib import crc
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.component import CheckedComponent
from .buffer import RingBuffer
from .datapath import Datapath, N_ERRORS
from .protocol import (SYNC, VERSION, MAX_PAYLOAD, CREDIT_STEP, FRAME_TIMEOUT_S, HELLO_FORMAT,
                       HostFrame, BoardFrame, Mode, ErrorCode, STATUS_FIELDS)
from .uart import UARTReceiver, UARTTransmitter, uart_divisor


__all__ = ["BoardCore"]


#: Output bytes the datapath may still produce for input it has already taken (a decoder's
#: pending sequence and pipeline registers, at 4 output bytes each); kept free in the output
#: buffer on top of the worst case of the granted input.
OUT_SLACK = 64


class BoardCore(CheckedComponent):
    """The protocol engine and datapath of the board (see the module docstring).

    Parameters: ``clk_freq`` and ``baud`` (the UART divisor is checked by
    :func:`~utf8_gateware.boards.uart.uart_divisor`), ``in_depth`` and ``out_depth`` (bytes of
    the input and output buffers, powers of 2; 32 KiB each maps onto one UP5K SPRAM),
    ``max_payload`` (largest DATA frame), ``credit_step``, ``decoder``/``encoder`` (factories,
    for tests).

    Ports: ``rx`` In(1), ``tx`` Out(1) (the UART lines, idle high), ``led_activity`` and
    ``led_error`` Out(1) (active high; stretched so that a person can see them).
    """
    @classmethod
    def check_parameters(cls, *, clk_freq, baud=3_000_000, in_depth=32768, out_depth=65536,
                         max_payload=MAX_PAYLOAD, credit_step=CREDIT_STEP,
                         frame_timeout=FRAME_TIMEOUT_S, decoder=None, encoder=None):
        uart_divisor(clk_freq, baud)
        for name, value in (("in_depth", in_depth), ("out_depth", out_depth)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1024 or \
                    value & (value - 1):
                raise ValueError(f"{name} must be a power of 2 of at least 1024, not {value!r}")
        if not 1 <= max_payload <= min(in_depth, out_depth) // 4:
            raise ValueError(f"max_payload must be 1..{min(in_depth, out_depth) // 4} (a quarter "
                             f"of the smaller buffer), not {max_payload!r}")
        if not 1 <= credit_step <= in_depth // 2:
            raise ValueError(f"credit_step must be 1..{in_depth // 2}, not {credit_step!r}")

    def __init__(self, *, clk_freq, baud=3_000_000, in_depth=32768, out_depth=65536,
                 max_payload=MAX_PAYLOAD, credit_step=CREDIT_STEP, frame_timeout=FRAME_TIMEOUT_S,
                 decoder=None, encoder=None):
        self.clk_freq = clk_freq
        self.baud = baud
        self.divisor = uart_divisor(clk_freq, baud)
        self.in_depth = in_depth
        self.out_depth = out_depth
        self.max_payload = max_payload
        self.credit_step = credit_step
        self.frame_timeout = max(1, round(frame_timeout * clk_freq))
        self._decoder = decoder
        self._encoder = encoder
        super().__init__({
            "rx": In(1, init=1),
            "tx": Out(1, init=1),
            "led_activity": Out(1),
            "led_error": Out(1),
        })

    @property
    def hello_payload(self):
        return struct.pack(HELLO_FORMAT, VERSION, 0, self.max_payload, round(self.clk_freq),
                           round(self.clk_freq / self.divisor), self.in_depth, self.out_depth)

    def elaborate(self, platform):
        m = Module()
        byte_time = 10 * self.divisor

        clear_req = Signal()      # reset datapath and buffers (HELLO, START, abort) ...
        clear = Signal()          # ... one cycle later (registered: it has a large fan-out)
        m.d.sync += clear.eq(clear_req)
        m.submodules.rx_uart = rx_uart = UARTReceiver(self.divisor)
        m.submodules.tx_uart = tx_uart = UARTTransmitter(self.divisor)
        m.submodules.inbuf = inbuf = ResetInserter(clear)(
            RingBuffer(self.in_depth, transactional=True))
        m.submodules.outbuf = outbuf = ResetInserter(clear)(RingBuffer(self.out_depth))
        m.submodules.datapath = dp = ResetInserter(clear)(
            Datapath(decoder=self._decoder, encoder=self._encoder))
        m.submodules.rx_crc = rx_crc = crc.catalog.CRC16_CCITT_FALSE(data_width=8).create()
        m.submodules.tx_crc = tx_crc = crc.catalog.CRC16_CCITT_FALSE(data_width=8).create()
        m.d.comb += [rx_uart.rx.eq(self.rx), self.tx.eq(tx_uart.tx)]

        # ---- message state ------------------------------------------------------------------
        active    = Signal()
        status_busy = Signal()    # the STATUS frame is being sent (its fields must hold)
        mode      = Signal(2)
        end_seen  = Signal()
        dp_done   = Signal()
        in_total  = Signal(32)    # committed input payload bytes
        consumed  = Signal(32)    # input bytes taken by the datapath
        written   = Signal(32)    # output bytes written to the output buffer
        sent      = Signal(32)    # output payload bytes sent
        credit    = Signal(32)
        credit_sent = Signal(32)
        credit_force = Signal()
        host_limit = Signal(32)
        cycle     = Signal(32)
        rx_first  = Signal(32)
        rx_last   = Signal(32)
        tx_first  = Signal(32)
        tx_status = Signal(32)
        rx_started = Signal()
        tx_started = Signal()
        m.d.comb += dp.mode.eq(mode)
        m.d.sync += cycle.eq(cycle + 1)

        # ---- error reporting ----------------------------------------------------------------
        err_pending = Signal()
        err_code    = Signal(4)
        err_aborted = Signal()
        raise_error = Signal()
        raise_code  = Signal(4)
        raise_abort = Signal()    # the error ends the message in progress
        hello_pending = Signal()

        # ---- frame receiver -----------------------------------------------------------------
        ftype  = Signal(8)
        flen   = Signal(16)
        fleft  = Signal(16)       # payload bytes still to come
        type_ok = Signal()        # the type is known
        crc_good = Signal()       # CHECK -> ACT: registered decisions
        is_hello = Signal()
        is_start = Signal()
        is_data = Signal()
        is_end = Signal()
        is_window = Signal()
        start_busy = Signal()
        mode_ok = Signal()
        window_ahead = Signal()
        len_ok = Signal()         # the length suits the type
        credit_ok = Signal()      # a DATA frame fits in the credit
        fsmall = Signal(40)       # payload of START / WINDOW
        to_buffer = Signal()      # the payload goes to the input buffer
        sync_stamp = Signal(32)
        idle_max = max(self.frame_timeout, 32 * byte_time)
        idle   = Signal(range(idle_max + 1))
        in_frame = Signal()       # the receiver is inside a frame
        abort_frame = Signal()    # ... and something went wrong there
        rollback = Signal()
        credit_left = Signal(32)  # registered: in_total changes only at the end of a frame
        m.d.sync += credit_left.eq(credit - in_total)
        rx_byte = rx_uart.o.payload
        # Payload bytes for the input buffer go through a register (no combinational path from
        # the buffer's arbitration back to the UART); bytes are 10 bit times apart.
        wbyte = Signal(8)
        wbyte_valid = Signal()
        m.d.comb += [inbuf.w.valid.eq(wbyte_valid), inbuf.w.payload.eq(wbyte)]
        with m.If(inbuf.w.ready):
            m.d.sync += wbyte_valid.eq(0)
        rx_take = Signal()
        m.d.comb += [inbuf.rollback.eq(rollback)]

        idle_timeout = Signal()   # idle >= frame_timeout
        idle_starve = Signal()    # idle >= 32 byte times
        with m.If(rx_uart.o.valid & rx_uart.o.ready):
            m.d.sync += [idle.eq(0), idle_timeout.eq(0), idle_starve.eq(0)]
        with m.Elif(idle != idle_max):
            m.d.sync += idle.eq(idle + 1)
            with m.If(idle == self.frame_timeout - 1):
                m.d.sync += idle_timeout.eq(1)
            with m.If(idle == 32 * byte_time - 1):
                m.d.sync += idle_starve.eq(1)
        # The receiver always takes a byte: bytes are 10 bit times apart, and the states that do
        # not expect one (LENX, LENC, CHECK) last a cycle each.
        m.d.comb += [rx_uart.o.ready.eq(1), rx_take.eq(rx_uart.o.valid)]
        m.d.comb += [rx_crc.data.eq(rx_byte)]

        def fail(code, abort=True):
            m.d.comb += [raise_error.eq(1), raise_code.eq(code), raise_abort.eq(abort)]

        with m.FSM(name="rx_fsm") as rx_fsm:
            with m.State("HUNT"):
                with m.If(rx_take & (rx_byte == SYNC)):
                    m.d.comb += rx_crc.start.eq(1)
                    m.d.sync += sync_stamp.eq(cycle)
                    m.next = "TYPE"
            with m.State("TYPE"):
                m.d.comb += rx_crc.valid.eq(rx_take)
                with m.If(rx_take):
                    m.d.sync += ftype.eq(rx_byte)
                    m.next = "LEN0"
                with m.If(abort_frame):
                    m.next = "HUNT"
            with m.State("LEN0"):
                m.d.comb += rx_crc.valid.eq(rx_take)
                with m.If(rx_take):
                    m.d.sync += flen[:8].eq(rx_byte)
                    m.next = "LEN1"
                with m.If(abort_frame):
                    m.next = "HUNT"
            with m.State("LEN1"):
                m.d.comb += rx_crc.valid.eq(rx_take)
                with m.If(rx_take):
                    m.d.sync += flen[8:].eq(rx_byte)
                    m.next = "LENX"
                with m.If(abort_frame):
                    m.next = "HUNT"
            with m.State("LENX"):
                # Check the length (from registers; the next byte is many cycles away).
                ok = Signal()
                known = Signal()
                data_frame = ftype == HostFrame.DATA
                with m.Switch(ftype):
                    with m.Case(HostFrame.HELLO, HostFrame.END):
                        m.d.comb += [known.eq(1), ok.eq(flen == 0)]
                    with m.Case(HostFrame.START):
                        m.d.comb += [known.eq(1), ok.eq(flen == 5)]
                    with m.Case(HostFrame.WINDOW):
                        m.d.comb += [known.eq(1), ok.eq(flen == 4)]
                    with m.Case(HostFrame.DATA):
                        m.d.comb += [known.eq(1),
                                     ok.eq((flen != 0) & (flen <= self.max_payload))]
                m.d.sync += [fleft.eq(flen), to_buffer.eq(data_frame & active), len_ok.eq(ok),
                             type_ok.eq(known),
                             credit_ok.eq(~(data_frame & active) | (credit_left >= flen))]
                m.next = "LENC"
                with m.If(abort_frame):
                    m.next = "HUNT"
            with m.State("LENC"):
                with m.If(~type_ok):
                    fail(ErrorCode.UNKNOWN_TYPE)
                    m.next = "HUNT"
                with m.Elif(~len_ok):
                    fail(ErrorCode.BAD_LENGTH)
                    m.next = "HUNT"
                with m.Elif(~credit_ok):
                    fail(ErrorCode.OVERRUN)
                    m.next = "HUNT"
                with m.Else():
                    with m.If(to_buffer & ~rx_started):
                        m.d.sync += [rx_first.eq(sync_stamp), rx_started.eq(1)]
                    with m.If(flen == 0):
                        m.next = "CRC0"
                    with m.Else():
                        m.next = "PAYLOAD"
                with m.If(abort_frame):
                    m.next = "HUNT"
            with m.State("PAYLOAD"):
                m.d.comb += rx_crc.valid.eq(rx_take)
                with m.If(rx_take):
                    m.d.sync += [fleft.eq(fleft - 1), fsmall.eq(Cat(fsmall[8:], rx_byte))]
                    with m.If(to_buffer):
                        with m.If(wbyte_valid):
                            fail(ErrorCode.OVERRUN)     # cannot happen: bytes are far apart
                            m.next = "HUNT"
                        m.d.sync += [wbyte.eq(rx_byte), wbyte_valid.eq(1)]
                    with m.If(fleft == 1):
                        m.next = "CRC0"
                with m.If(abort_frame):
                    m.next = "HUNT"
            with m.State("CRC0"):
                m.d.comb += rx_crc.valid.eq(rx_take)
                with m.If(rx_take):
                    m.next = "CRC1"
                with m.If(abort_frame):
                    m.next = "HUNT"
            with m.State("CRC1"):
                m.d.comb += rx_crc.valid.eq(rx_take)
                with m.If(rx_take):
                    m.next = "CHECK"
                with m.If(abort_frame):
                    m.next = "HUNT"
            with m.State("CHECK"):
                # Decide in two steps (registered flags first: the actions fan out widely).
                m.d.sync += [
                    crc_good.eq(rx_crc.match_detected),
                    is_hello.eq(ftype == HostFrame.HELLO),
                    is_start.eq(ftype == HostFrame.START),
                    is_data.eq(ftype == HostFrame.DATA),
                    is_end.eq(ftype == HostFrame.END),
                    is_window.eq(ftype == HostFrame.WINDOW),
                    start_busy.eq(active | status_busy),
                    mode_ok.eq(fsmall[:8] <= Mode.VALIDATE),
                    window_ahead.eq(~(fsmall[8:] - host_limit)[31]),
                ]
                m.next = "ACT"
            with m.State("ACT"):
                start_mode = fsmall[:8]     # START: mode, then the window (u32)
                with m.If(~crc_good):
                    fail(ErrorCode.CRC)
                with m.Elif(is_hello):
                    m.d.comb += clear_req.eq(1)
                    m.d.sync += [active.eq(0), hello_pending.eq(1), err_pending.eq(0)]
                with m.Elif(is_start):
                    with m.If(start_busy):
                        fail(ErrorCode.BUSY, abort=False)
                    with m.Elif(~mode_ok):
                        fail(ErrorCode.BAD_MODE, abort=False)
                    with m.Else():
                        m.d.comb += clear_req.eq(1)
                        m.d.sync += [
                            active.eq(1), mode.eq(start_mode), end_seen.eq(0),
                            dp_done.eq(0), host_limit.eq(fsmall[8:]),
                            in_total.eq(0), consumed.eq(0), written.eq(0), sent.eq(0),
                            credit.eq(0), credit_sent.eq(0), credit_force.eq(1),
                            cycle.eq(0), rx_first.eq(0), rx_last.eq(0), tx_first.eq(0),
                            tx_status.eq(0), rx_started.eq(0), tx_started.eq(0),
                        ]
                with m.Elif(is_data):
                    with m.If(~active):
                        fail(ErrorCode.NO_MESSAGE, abort=False)
                    with m.Else():
                        m.d.comb += inbuf.commit.eq(1)
                        m.d.sync += in_total.eq(in_total + flen)
                with m.Elif(is_end):
                    with m.If(~active):
                        fail(ErrorCode.NO_MESSAGE, abort=False)
                    with m.Elif(~end_seen):
                        m.d.sync += [end_seen.eq(1), rx_last.eq(cycle)]
                with m.Elif(is_window):
                    with m.If(active & window_ahead):
                        m.d.sync += host_limit.eq(fsmall[8:])
                m.next = "HUNT"

        # Anything going wrong inside a frame ends it.
        m.d.comb += in_frame.eq(~rx_fsm.ongoing("HUNT") & ~rx_fsm.ongoing("CHECK") &
                                  ~rx_fsm.ongoing("ACT"))
        with m.If(rx_uart.framing_error):
            fail(ErrorCode.FRAMING, abort=in_frame)
            m.d.comb += abort_frame.eq(in_frame)
        with m.If(rx_uart.overrun):
            fail(ErrorCode.OVERRUN)
            m.d.comb += abort_frame.eq(in_frame)
        with m.If(in_frame & idle_timeout):
            fail(ErrorCode.TIMEOUT)
            m.d.comb += abort_frame.eq(1)

        with m.If(rollback | clear):
            m.d.sync += wbyte_valid.eq(0)
        # The effects of an error take one more cycle (registered: the conditions are deep).
        error_q = Signal()
        error_code_q = Signal(4)
        error_abort_q = Signal()
        m.d.sync += [error_q.eq(raise_error), error_code_q.eq(raise_code),
                     error_abort_q.eq(raise_abort)]
        # Forget the bytes of a failed frame (a cycle later; the next frame is bytes away).
        m.d.comb += rollback.eq(error_q)
        with m.If(error_q):
            m.d.sync += [err_pending.eq(1), err_code.eq(error_code_q),
                         err_aborted.eq(error_abort_q & active)]
            with m.If(error_abort_q & active):
                m.d.comb += clear_req.eq(1)
                m.d.sync += active.eq(0)

        # ---- feeder: input buffer -> datapath, holding back the last byte until END --------
        # backlog: committed input bytes not yet taken by the datapath, as a register computed
        # from two counters. It is one cycle late, which is exact when it matters: the input
        # buffer offers at most one byte every two cycles, so after a take there is a cycle
        # without a byte on offer; a late commit only delays a byte.
        commits = Signal(16)
        takes = Signal(16)
        backlog = Signal(16)
        take = dp.i.valid & dp.i.ready
        with m.If(inbuf.commit):
            m.d.sync += commits.eq(commits + flen)
        with m.If(take):
            m.d.sync += takes.eq(takes + 1)
        m.d.sync += backlog.eq(commits - takes)
        with m.If(clear):
            m.d.sync += [commits.eq(0), takes.eq(0), backlog.eq(0)]
        backlog_ge2 = backlog[1:].any()
        backlog_eq1 = backlog == 1
        allow = backlog_ge2 | end_seen
        m.d.comb += [
            dp.i.valid.eq(inbuf.o.valid & allow & active),
            dp.i.payload.data.eq(inbuf.o.payload),
            dp.i.payload.last.eq(end_seen & backlog_eq1),
            inbuf.o.ready.eq(dp.i.ready & allow & active),
        ]
        with m.If(dp.i.valid & dp.i.ready):
            m.d.sync += consumed.eq(consumed + 1)
        # dp_done rises 3 cycles after the last byte went to the output buffer: by then the
        # registered counts (pending, all_sent, data_len) include it.
        done_delay = Signal(3)
        m.d.sync += done_delay.eq(Cat(dp.done, done_delay[:2]))
        with m.If(done_delay[2]):
            m.d.sync += dp_done.eq(1)
        with m.If(clear):
            m.d.sync += done_delay.eq(0)
        no_input = Signal()
        m.d.sync += no_input.eq(in_total == 0)
        finished = end_seen & (dp_done | no_input)

        # datapath -> output buffer
        out_idle = Signal(range(65))
        m.d.comb += [
            outbuf.w.valid.eq(dp.o.valid),
            outbuf.w.payload.eq(dp.o.payload),
            dp.o.ready.eq(outbuf.w.ready),
        ]
        with m.If(outbuf.w.valid & outbuf.w.ready):
            m.d.sync += [written.eq(written + 1), out_idle.eq(0)]
        with m.Elif(out_idle != 64):
            m.d.sync += out_idle.eq(out_idle + 1)

        # ---- credit -------------------------------------------------------------------------
        # window = min(in_depth, (out_depth - slack - pending) >> log2(k)); credit only grows.
        pending = Signal(range(self.out_depth + 1))
        room = Signal(range(self.out_depth + 1))
        window = Signal(range(max(self.in_depth, self.out_depth) + 1))
        m.d.sync += pending.eq(written - sent)
        m.d.sync += room.eq(Mux(pending > self.out_depth - OUT_SLACK, 0,
                                self.out_depth - OUT_SLACK - pending))
        shifted = Signal.like(window)
        with m.Switch(mode):
            with m.Case(Mode.TRANSCODE, Mode.DECODE):
                m.d.comb += shifted.eq(room >> 2)
            with m.Case(Mode.ENCODE):
                m.d.comb += shifted.eq(room)
            with m.Case(Mode.VALIDATE):
                m.d.comb += shifted.eq(self.in_depth)
        m.d.sync += window.eq(Mux(shifted < self.in_depth, shifted, self.in_depth))
        with m.If(clear):
            # The pipelined values above belong to the previous message.
            m.d.sync += [pending.eq(0), room.eq(0), window.eq(0)]
        # The credit grows to consumed + window when that is more, in four steps (so that no
        # 32-bit comparison sits in one cycle): snapshot, headroom = credit - consumed (it is
        # below 2**17), compare, update. `credit` only changes in the last step.
        step = Signal(2)
        snap_consumed = Signal(32)
        snap_window = Signal.like(window)
        headroom = Signal(18)
        grow_ok = Signal()
        grow_to = Signal(32)
        m.d.sync += step.eq(step + 1)
        with m.Switch(step):
            with m.Case(0):
                m.d.sync += [snap_consumed.eq(consumed), snap_window.eq(window)]
            with m.Case(1):
                m.d.sync += headroom.eq((credit - snap_consumed)[:18])
            with m.Case(2):
                m.d.sync += [grow_ok.eq(snap_window > headroom),
                             grow_to.eq(snap_consumed + snap_window)]
            with m.Case(3):
                with m.If(active & ~clear & grow_ok):
                    m.d.sync += credit.eq(grow_to)
        with m.If(clear):
            m.d.sync += [grow_ok.eq(0), snap_window.eq(0)]

        # ---- frame transmitter --------------------------------------------------------------
        hello = self.hello_payload
        tkind  = Signal(8)
        tlen   = Signal(16)
        tcount = Signal(16)
        tleft1 = Signal()         # one payload byte left (registered: no compare in the path)
        poison = Signal()         # the frame was cut short by a reset: pad it, spoil its CRC
        credit_value = Signal(32)
        room_host = Signal(32)
        data_len = Signal(16)     # length of the next DATA frame
        m.d.sync += room_host.eq((host_limit - sent)[:32])
        avail = pending
        lim = Signal(range(self.out_depth + 1))     # registered: one compare per stage
        m.d.sync += lim.eq(Mux(avail < self.max_payload, avail, self.max_payload))
        m.d.sync += data_len.eq(Mux(room_host[31], 0, Mux(room_host < lim, room_host, lim)))
        tx_fsm_idle = Signal()
        m.d.sync += status_busy.eq(~tx_fsm_idle & (tkind == BoardFrame.STATUS))
        settle = Signal(3)        # a few cycles for the pipelined lengths after a frame/reset
        with m.If(clear):
            m.d.sync += settle.eq(0)
        with m.Elif(tx_fsm_idle & (settle != 7)):
            m.d.sync += settle.eq(settle + 1)
        credit_ahead = Signal(18)     # credit - credit_sent: at most the window, below 2**17
        credit_new = Signal()     # credit != credit_sent (registered)
        credit_step = Signal()    # credit - credit_sent >= credit_step (registered)
        len_is_room = Signal()    # data_len == room_host (registered)
        all_sent = Signal()       # written == sent (registered)
        m.d.comb += credit_ahead.eq((credit - credit_sent)[:18])
        m.d.sync += [credit_new.eq(credit != credit_sent),
                     credit_step.eq(credit_ahead >= self.credit_step),
                     len_is_room.eq(data_len == room_host), all_sent.eq(written == sent)]
        ready_to_send = active & ~clear & (settle == 7)
        with m.If(clear):
            m.d.sync += [room_host.eq(0), data_len.eq(0), lim.eq(0)]
        want_credit = ready_to_send & credit_new & (credit_force | credit_step | idle_starve)
        want_data = ready_to_send & (data_len != 0) & (
            (data_len == self.max_payload) | len_is_room | finished |
            (out_idle == 64))
        want_status = ready_to_send & finished & (pending == 0) & all_sent

        status_words = [
            mode, in_total, sent, dp.codepoints,
            *[dp.errors[index] for index in range(N_ERRORS)],
            rx_first, rx_last, tx_first, tx_status,
        ]
        assert len(status_words) == len(STATUS_FIELDS)
        # Payload bytes of the frames built here, in three pipeline stages (tcount -> four
        # registered 4:1 groups of the 14 status words -> word -> byte); the age counter below
        # makes sure the pipeline has caught up before a byte goes.
        padded = status_words + [Const(0, 32)] * (16 - len(status_words))
        groups = [Signal(32, name=f"status_group{index}") for index in range(4)]
        for index, group in enumerate(groups):
            m.d.sync += group.eq(Array(padded[4 * index:4 * index + 4])[tcount[2:4]])
        word = Signal(32)
        m.d.sync += word.eq(Array(groups)[tcount[4:6]])
        field_next = Signal(8)
        field = Signal(8)
        m.d.sync += field.eq(field_next)
        with m.Switch(tkind):
            with m.Case(BoardFrame.HELLO_ACK):
                with m.Switch(tcount):
                    for index, value in enumerate(hello):
                        with m.Case(index):
                            m.d.comb += field_next.eq(value)
            with m.Case(BoardFrame.CREDIT):
                m.d.comb += field_next.eq(credit_value.word_select(tcount[:2], 8))
            with m.Case(BoardFrame.ERROR):
                m.d.comb += field_next.eq(Mux(tcount[0], err_aborted, err_code))
            with m.Case(BoardFrame.STATUS):
                m.d.comb += field_next.eq(word.word_select(tcount[:2], 8))

        # The framer's byte (tx_valid/tx_data, combinational) reaches the UART and the CRC
        # through a register, and the payload fields above are three more stages behind: a byte
        # is offered only when tx_valid has held for 4 cycles since the last byte was taken (so
        # every stage is current). The UART is busy for 10 bit times after each byte, so this
        # costs no line time.
        tx_valid = Signal()
        tx_data = Signal(8)
        tx_data_q = Signal(8)
        tx_age = Signal(3)
        tx_take = tx_uart.i.valid & tx_uart.i.ready
        release = Signal()        # take the byte just sent from the output buffer
        m.d.sync += release.eq(0)
        m.d.comb += outbuf.o.ready.eq(release)
        m.d.sync += tx_data_q.eq(tx_data)
        with m.If(tx_take | ~tx_valid):
            m.d.sync += tx_age.eq(0)
        with m.Elif(tx_age != 4):
            m.d.sync += tx_age.eq(tx_age + 1)
        # (tx_valid only drops after a byte is taken, or when a reset cuts a DATA frame short,
        # which then goes out poisoned anyway.)
        m.d.comb += [tx_uart.i.valid.eq(tx_age == 4),
                     tx_uart.i.payload.eq(tx_data_q), tx_crc.data.eq(tx_data_q)]

        def begin(kind, length):
            m.d.sync += [tkind.eq(kind), tlen.eq(length), tcount.eq(0), poison.eq(0),
                         tleft1.eq(length == 1),
                         settle.eq(0)]
            m.next = "SYNC"

        # The next frame is chosen a cycle ahead (a register), from conditions that only stay
        # true or are reset together with `settle`, which gates the start of a frame.
        choice = Signal(3)        # 0: none, 1: ERROR, 2: HELLO_ACK, 3: CREDIT, 4: DATA, 5: STATUS
        with m.If(err_pending):
            m.d.sync += choice.eq(1)
        with m.Elif(hello_pending):
            m.d.sync += choice.eq(2)
        with m.Elif(want_credit):
            m.d.sync += choice.eq(3)
        with m.Elif(want_data):
            m.d.sync += choice.eq(4)
        with m.Elif(want_status):
            m.d.sync += choice.eq(5)
        with m.Else():
            m.d.sync += choice.eq(0)
        with m.FSM(name="tx_fsm") as tx_fsm:
            with m.State("IDLE"):
                with m.If((settle == 7) & ~clear):
                    with m.Switch(choice):
                        with m.Case(1):
                            m.d.sync += err_pending.eq(0)
                            begin(BoardFrame.ERROR, 2)
                        with m.Case(2):
                            m.d.sync += hello_pending.eq(0)
                            begin(BoardFrame.HELLO_ACK, len(hello))
                        with m.Case(3):
                            m.d.sync += [credit_value.eq(credit), credit_sent.eq(credit),
                                         credit_force.eq(0)]
                            begin(BoardFrame.CREDIT, 4)
                        with m.Case(4):
                            begin(BoardFrame.DATA, data_len)
                        with m.Case(5):
                            # The message ends here: frames that arrive from now on are not
                            # part of it (the STATUS fields stay as they are).
                            m.d.sync += active.eq(0)
                            begin(BoardFrame.STATUS, 4 * len(STATUS_FIELDS))
            with m.State("SYNC"):
                m.d.comb += [tx_valid.eq(1), tx_data.eq(SYNC)]
                with m.If(tx_take):
                    with m.If((tkind == BoardFrame.DATA) & ~tx_started):
                        m.d.sync += [tx_first.eq(cycle), tx_started.eq(1)]
                    with m.If(tkind == BoardFrame.STATUS):
                        m.d.sync += tx_status.eq(cycle)
                    m.next = "TYPE"
            with m.State("TYPE"):
                m.d.comb += [tx_valid.eq(1), tx_data.eq(tkind), tx_crc.start.eq(tx_take),
                             tx_crc.valid.eq(tx_take)]
                with m.If(tx_take):
                    m.next = "LEN0"
            with m.State("LEN0"):
                m.d.comb += [tx_valid.eq(1), tx_data.eq(tlen[:8]), tx_crc.valid.eq(tx_take)]
                with m.If(tx_take):
                    m.next = "LEN1"
            with m.State("LEN1"):
                m.d.comb += [tx_valid.eq(1), tx_data.eq(tlen[8:]), tx_crc.valid.eq(tx_take)]
                with m.If(tx_take):
                    m.next = "PAYLOAD"
            with m.State("PAYLOAD"):
                from_buffer = (tkind == BoardFrame.DATA) & ~poison
                with m.If(from_buffer):
                    m.d.comb += [tx_valid.eq(outbuf.o.valid), tx_data.eq(outbuf.o.payload)]
                with m.Elif(poison):
                    m.d.comb += [tx_valid.eq(1), tx_data.eq(0)]
                with m.Else():
                    m.d.comb += [tx_valid.eq(1), tx_data.eq(field)]
                m.d.comb += tx_crc.valid.eq(tx_take)
                with m.If(tx_take):
                    m.d.sync += [tcount.eq(tcount + 1), tleft1.eq(tcount + 2 == tlen)]
                    with m.If(from_buffer):
                        # The byte is in tx_data_q: release it from the buffer next cycle.
                        m.d.sync += [sent.eq(sent + 1), release.eq(1)]
                    with m.If(tleft1):
                        m.next = "CRC0"
            with m.State("CRC0"):
                m.d.comb += [tx_valid.eq(1),
                             tx_data.eq(tx_crc.crc[8:] ^ Mux(poison, 0xFF, 0))]
                with m.If(tx_take):
                    m.next = "CRC1"
            with m.State("CRC1"):
                m.d.comb += [tx_valid.eq(1),
                             tx_data.eq(tx_crc.crc[:8] ^ Mux(poison, 0xFF, 0))]
                with m.If(tx_take):
                    m.next = "IDLE"

        m.d.comb += tx_fsm_idle.eq(tx_fsm.ongoing("IDLE"))
        with m.If(clear & ~tx_fsm.ongoing("IDLE") &
                  ((tkind == BoardFrame.DATA) | (tkind == BoardFrame.STATUS))):
            m.d.sync += poison.eq(1)

        # ---- LEDs ---------------------------------------------------------------------------
        # A millisecond tick, then short timers: 50 ms of activity, 500 ms of error.
        ms_max = int(self.clk_freq // 1000) - 1
        ms_count = Signal(range(ms_max + 1))
        ms_tick = Signal()
        m.d.sync += ms_tick.eq(ms_count == ms_max)
        with m.If(ms_count == ms_max):
            m.d.sync += ms_count.eq(0)
        with m.Else():
            m.d.sync += ms_count.eq(ms_count + 1)
        act_timer = Signal(range(51))
        err_timer = Signal(range(501))
        with m.If(rx_take | tx_take):
            m.d.sync += act_timer.eq(50)
        with m.Elif(ms_tick & (act_timer != 0)):
            m.d.sync += act_timer.eq(act_timer - 1)
        with m.If(error_q):
            m.d.sync += err_timer.eq(500)
        with m.Elif(ms_tick & (err_timer != 0)):
            m.d.sync += err_timer.eq(err_timer - 1)
        m.d.comb += [self.led_activity.eq((act_timer != 0) | active),
                     self.led_error.eq(err_timer != 0)]
        return m
