"""The board's message control: what a received frame does, and which frame goes out next."""

from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.component import CheckedComponent
from .credit import FlowControl
from .frame_rx import FrameError, ReceivedFrames
from .frame_tx import FrameRequests
from .protocol import HostFrame, BoardFrame, Mode, ErrorCode, OFFSET_SIZE, REWIND, BOARD_LENGTHS
from .replies import ReplyValues


__all__ = ["MessageControl"]


class MessageControl(CheckedComponent):
    """The protocol engine's state: the message in progress and the frames owed to the host.

    Parameters: ``hello_size`` (the HELLO_ACK payload length), ``max_payload``.

    Received frames (from :class:`~.frame_rx.FrameReceiver`): ``HELLO`` clears everything and owes a
    ``HELLO_ACK``; ``START`` (refused while a message is in progress, unless its STATUS has been
    sent, or with an unknown mode) clears the buffers and the datapath and begins a message;
    ``DATA`` commits its payload if its offset is the count received so far (and with it the range
    held past the gap, if the frame ends where it begins), drops it quietly if the offset is below
    (a repeat: it owes a ``CREDIT``, which carries the count), keeps it past a gap if it starts the
    held range (none yet) or extends it (at its end), answered with a ``SEQUENCE`` ERROR that says
    the count and the range (selective repeat), and is refused otherwise (``SEQUENCE``); ``END``
    marks the input complete if its total is that count (else ``SEQUENCE``), and asks for the STATUS
    again; ``WINDOW`` moves the host's acknowledgement, owes a ``CREDIT`` and, with the ``REWIND``
    flag, sends the output again from it (``rewind``, as soon as the transmitter is idle) and the
    STATUS after it. A rejected frame owes an ``ERROR`` (with the count received: the host sends
    again from there) and is rolled back; the message goes on.

    Frames sent (to :class:`~.frame_tx.FrameTransmitter`), in this order of priority: ``ERROR``,
    ``HELLO_ACK``, ``CREDIT`` (after ``START``, a ``WINDOW`` and a DATA frame taken in order with
    the ``ASK`` bit in its epoch; until ``END``, also when it has grown by ``credit_step`` and when
    the line from the host is idle), ``DATA`` (when due, or when the input is finished),
    ``STATUS`` (when the input is finished and all output sent; once, unless asked again).

    Ports
    -----
    ``frames``: In(:data:`~.frame_rx.ReceivedFrames`)
        From the frame receiver: the frames, their verdicts, the line's silence.
    ``tx``: Out(:data:`~.frame_tx.FrameRequests`)
        To the frame transmitter: the next frame to send (from a register; re-chosen every
        cycle until the transmitter accepts it).
    ``flow``: In(:data:`~.credit.FlowControl`)
        To the flow control: the mode, the host's window, acknowledgement and frame size,
        committed frames, announcements, rewinds; from it: the credit, the next DATA frame,
        whether all output is sent.
    ``replies``: Out(:data:`~.replies.ReplyValues`)
        The payloads of CREDIT and ERROR frames (registered when the frame is accepted).
    ``credit_left``: In(32)
        The input credit not yet used (from the flow control).
    ``place``: Out(1)
        The verdict on a DATA frame's offset (``frames.offset``), a few cycles after it: its data
        go into the input buffer (at their offset; a level until the next DATA frame's offset):
        a frame at the count that ends at or before the held range, or one that starts the
        range or extends it, within the credit.
    ``dp_done``: In(1)
        The datapath's final output was written (pulse).
    ``rewind``: Out(1)
        Send the output again from the host's acknowledgement (pulse; the transmitter is idle:
        hold it off).
    ``clear``: Out(1)
        Reset the buffers, the datapath and the counters (registered; a message begins or
        ends abnormally).
    ``rollback``: Out(1)
        Forget the payload of the frame just received (after an error; ``flow.commit`` keeps
        it).
    ``active``, ``end_seen``, ``reported``: Out(1)
        The message: in progress (from its START to the next START or HELLO), input complete,
        STATUS sent.
    ``started``, ``ended``: Out(1)
        Pulses: a message began (START accepted); its END arrived.
    ``error``: Out(1)
        Pulses for each rejected frame.
    """
    @classmethod
    def check_parameters(cls, *, hello_size, max_payload, max_mode=max(Mode)):
        for name, value in (("hello_size", hello_size), ("max_payload", max_payload)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        if max_mode not in list(Mode):
            raise ValueError(f"max_mode must be a Mode, not {max_mode!r}")

    def __init__(self, *, hello_size, max_payload, max_mode=max(Mode)):
        self.hello_size = hello_size
        self.max_payload = max_payload
        self.max_mode = Mode(max_mode)
        super().__init__({
            "frames": In(ReceivedFrames),
            "tx": Out(FrameRequests),
            "flow": In(FlowControl),
            "replies": Out(ReplyValues),
            "credit_left": In(32),
            "place": Out(1),
            "dp_done": In(1),
            "rewind": Out(1),
            "clear": Out(1),
            "rollback": Out(1),
            "active": Out(1),
            "end_seen": Out(1),
            "reported": Out(1),
            "started": Out(1),
            "ended": Out(1),
            "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        state = SimpleNamespace(
            clear_req=Signal(),     # clear one cycle later (registered: a large fan-out)
            raised=Signal(FrameError),
            hello_pending=Signal(),
            err_pending=Signal(),
            credit_force=Signal(),  # announce the credit (a message began)
            dp_finished=Signal(),   # the datapath's final output is counted
            # (send the output again from the acknowledgement; reset-less: only a frame sets it,
            # and the reset path into `rewind`'s fan-out was the critical path at stop 30)
            rewind_pending=Signal(reset_less=True),
            dropped=Signal(),       # a DATA frame the board has already: roll it back quietly
            asked=Signal(),         # a DATA frame with the ASK bit was taken in order
        )
        m.d.sync += self.clear.eq(state.clear_req)
        m.d.comb += self.flow.enable.eq(self.active)
        self._place(m, state)
        self._receive(m, state)
        self._errors(m, state)
        self._schedule(m, state)
        return m

    def _place(self, m, state):
        """Where a DATA frame's data go (selective repeat): the verdict on its offset, in
        registered steps after ``frames.offset`` (its data come a byte time later at the
        earliest), from the count received, the range held past a gap and the credit left.
        Positions modulo 2**16 (twice the input buffer): the verdict on the frame
        (:meth:`_receive`) checks the offset against the count exactly."""
        frames, flow = self.frames, self.flow
        offset = frames.frame.fields[-32:-16]
        length = frames.frame.length
        state.end_at = Signal(16)       # the frame's end
        state.ranged = Signal()         # a range past the gap is held ...
        state.have_from = Signal(16)    # ... from here (equal to `have_to` when none)
        state.have_to = Signal(16)
        state.in_order = Signal()       # the verdicts: at the count, before the range
        state.hold = Signal()           # past the gap: starts or extends the range
        state.merges = Signal()         # at the count, ends where the range begins
        steps = Signal(3)
        m.d.sync += steps.eq(Cat(frames.offset, steps[:2]))
        delta = Signal(16)              # offset - count
        at_end = Signal()               # offset == have_to
        held = Signal(16)               # the range's length
        m.d.sync += held.eq(state.have_to - state.have_from)
        with m.If(frames.offset):
            m.d.sync += [state.end_at.eq(offset + length), delta.eq(offset - flow.in_total[:16]),
                         at_end.eq(offset == state.have_to), self.place.eq(0)]
        at_total, before_from = Signal(), Signal()
        end_rel = Signal(17)            # end - count
        with m.If(steps[0]):
            m.d.sync += [at_total.eq(delta == 0), end_rel.eq(delta + length),
                         state.merges.eq(state.ranged & (state.end_at == state.have_from)),
                         before_from.eq(~state.ranged |
                                        ~(state.have_from - state.end_at)[15])]
        fits = Signal()                 # the frame ends within the credit
        with m.If(steps[1]):
            m.d.sync += [
                # (a borrow: a carry chain; a frame behind the count is 2**15 or more ahead)
                fits.eq(~(self.credit_left[:17] - end_rel)[-1]),
                state.in_order.eq(at_total & before_from),
                state.hold.eq(~at_total & (~state.ranged | at_end)),
                flow.commit_length.eq(length + Mux(state.merges, held, 0)),
            ]
        with m.If(steps[2]):
            m.d.sync += [state.hold.eq(state.hold & fits),
                         self.place.eq(state.in_order | state.hold & fits)]

    def _receive(self, m, state):
        """The received frames' effects, decided in three steps: flags registered on ``check``,
        the verdict and the actions a cycle later, their effects on ``done`` (a cycle after
        that, as the :class:`~.frame_rx.FrameReceiver` gives it)."""
        kind, fields = self.frames.frame.kind, self.frames.frame.fields
        new_mode, new_window, new_frame = fields[:8], fields[8:40], fields[40:]     # START
        new_acked, new_flags, new_epoch = fields[8:40], fields[40:48], fields[48:]  # WINDOW
        offset = fields[-32:-8]     # DATA: the offset of its data; END: the total (mod 2**24)
        self._epoch = fields[-8:]   # ... and their epoch
        # (The flags and the verdict below matter only on ``done``, which comes from a reset
        # register: they are reset-less, so the reset is not in the verdict's deep logic.)
        is_kind = {frame: Signal(name=f"is_{frame.name.lower()}", reset_less=True)
                   for frame in HostFrame}
        start_busy = Signal(reset_less=True)
        mode_ok = Signal(reset_less=True)
        window_ahead = Signal(reset_less=True)
        at_total = Signal(reset_less=True)  # DATA, END: the offset (total) is the count received
        behind = Signal(reset_less=True)    # DATA: the offset is below the count (a repeat)
        frame_limit = Signal(16)    # START: the largest DATA frame, clamped
        status_busy = Signal()      # the STATUS frame is going out (its fields must hold)
        m.d.sync += status_busy.eq(~self.tx.idle & (self.tx.kind == BoardFrame.STATUS))
        with m.If(self.frames.check):
            m.d.sync += [flag.eq(kind == frame) for frame, flag in is_kind.items()]
            m.d.sync += [start_busy.eq((self.active & ~self.reported) | status_busy),
                         mode_ok.eq(new_mode <= self.max_mode),
                         window_ahead.eq(~(new_acked - self.flow.acked)[31]),
                         at_total.eq(offset == self.flow.in_total[:24]),
                         behind.eq(~(self.flow.in_total[:24] - offset)[23]),
                         frame_limit.eq(Mux((new_frame == 0) | (new_frame > self.max_payload),
                                            self.max_payload, new_frame))]

        # The verdict on the frame, registered a cycle before ``done`` (the flags above are
        # registered on ``check``, two cycles before it): ``done`` only gates registers.
        verdict = Signal(FrameError, reset_less=True)
        act = SimpleNamespace(**{name: Signal(name=f"act_{name}", reset_less=True) for name in (
            "hello", "start", "drop", "commit", "hold", "end", "credit", "ack", "rewind")})
        decided = SimpleNamespace(verdict=Signal(FrameError), **{
            name: Signal(name=f"decide_{name}") for name in vars(act)})
        m.d.sync += [verdict.eq(decided.verdict),
                     *(getattr(act, name).eq(getattr(decided, name)) for name in vars(act))]

        def fail(code):
            m.d.comb += [decided.verdict.valid.eq(1), decided.verdict.code.eq(code)]

        # (The kind flags are one-hot: no priority among them, fewer terms in each decision.)
        with m.If(is_kind[HostFrame.HELLO]):
            m.d.comb += decided.hello.eq(1)
        with m.If(is_kind[HostFrame.START]):
            with m.If(start_busy):
                fail(ErrorCode.BUSY)
            with m.Elif(~mode_ok):
                fail(ErrorCode.BAD_MODE)
            with m.Else():
                m.d.comb += decided.start.eq(1)
        with m.If(is_kind[HostFrame.DATA]):
            with m.If(~self.active):
                fail(ErrorCode.NO_MESSAGE)
            with m.Elif(state.in_order & at_total & ~self.end_seen):
                m.d.comb += decided.commit.eq(1)
            with m.Elif(state.hold & ~behind & ~self.end_seen):
                # Kept past the gap (its data are in the buffer at their offset); the ERROR
                # says the count and the range: the host sends the gap again, no more.
                m.d.comb += decided.hold.eq(1)
                fail(ErrorCode.SEQUENCE)
            with m.Elif(behind & ~at_total):
                # A repeat (the host went back needlessly, or probes): no news, so no ERROR
                # (whose count the host would take for a gap); a CREDIT says the count.
                m.d.comb += decided.drop.eq(1)
            with m.Else():
                fail(ErrorCode.SEQUENCE)
        with m.If(is_kind[HostFrame.END]):
            with m.If(~self.active):
                fail(ErrorCode.NO_MESSAGE)
            with m.Elif(~at_total):
                fail(ErrorCode.SEQUENCE)
            with m.Else():
                m.d.comb += decided.end.eq(1)
        with m.If(is_kind[HostFrame.WINDOW]):
            # (A WINDOW also asks for a CREDIT: the host's probe after a timeout.)
            m.d.comb += [decided.credit.eq(self.active),
                         decided.ack.eq(self.active & window_ahead),
                         decided.rewind.eq(self.active & window_ahead & (new_flags & REWIND).any())]

        m.d.sync += state.asked.eq(0)
        with m.If(self.frames.done):
            with m.If(verdict.valid):
                m.d.comb += state.raised.eq(verdict)
            with m.If(act.hello):
                m.d.comb += state.clear_req.eq(1)
                m.d.sync += [self.active.eq(0), state.hello_pending.eq(1),
                             state.err_pending.eq(0)]
            with m.If(act.start):
                m.d.comb += [state.clear_req.eq(1), self.started.eq(1)]
                m.d.sync += [self.active.eq(1), self.flow.mode.eq(new_mode),
                             self.end_seen.eq(0), self.reported.eq(0),
                             state.dp_finished.eq(0), state.rewind_pending.eq(0),
                             self.flow.acked.eq(0), self.flow.window.eq(new_window),
                             self.flow.epoch.eq(0), state.ranged.eq(0),
                             state.have_from.eq(0), state.have_to.eq(0),
                             self.flow.frame.eq(frame_limit), state.credit_force.eq(1)]
            with m.If(act.drop):
                m.d.comb += state.dropped.eq(1)
            with m.If(act.drop | act.credit):
                m.d.sync += state.credit_force.eq(1)
            with m.If(act.commit):
                m.d.comb += self.flow.commit.eq(1)
                # The epoch's ASK bit: the host's request for the count rides on the frame (a
                # CREDIT owed, a cycle later: not in the verdict's logic, which is deep).
                m.d.sync += state.asked.eq(self._epoch[7])
                with m.If(state.merges):
                    m.d.sync += [state.ranged.eq(0), state.have_from.eq(state.have_to)]
            with m.If(act.hold):
                m.d.sync += [state.ranged.eq(1), state.have_to.eq(state.end_at)]
                with m.If(~state.ranged):
                    m.d.sync += state.have_from.eq(offset)
            with m.If(act.end):
                m.d.comb += self.ended.eq(~self.end_seen)
                m.d.sync += [self.end_seen.eq(1), self.reported.eq(0)]
            with m.If(act.ack):
                m.d.sync += self.flow.acked.eq(new_acked)
            with m.If(act.rewind):
                m.d.sync += [state.rewind_pending.eq(1), self.reported.eq(0),
                             self.flow.epoch.eq(new_epoch)]

    def _errors(self, m, state):
        """A rejected frame (the receiver's verdicts take precedence) owes an ERROR frame. The
        effects come a cycle later (registered: the conditions are deep), and so does the
        rollback of the frame's payload."""
        with m.If(self.frames.error.valid):
            m.d.comb += state.raised.eq(self.frames.error)
        error_q = Signal(FrameError)
        dropped_q = Signal()
        m.d.sync += [error_q.eq(state.raised), dropped_q.eq(state.dropped & ~state.raised.valid)]
        m.d.comb += [self.rollback.eq(error_q.valid | dropped_q), self.error.eq(error_q.valid)]
        with m.If(error_q.valid):
            m.d.sync += [state.err_pending.eq(1), self.replies.error_code.eq(error_q.code),
                         self.replies.error_epoch.eq(self._epoch)]

    def _schedule(self, m, state):
        """The next frame to send, chosen two cycles ahead from conditions that only stay true or
        are reset together with the transmitter's ``settled``."""
        # The datapath's final output: 3 cycles later the registered counts include it.
        done_delay = Signal(3)
        m.d.sync += done_delay.eq(Cat(self.dp_done, done_delay[:2]))
        with m.If(done_delay[2]):
            m.d.sync += state.dp_finished.eq(1)
        with m.If(self.clear):
            m.d.sync += done_delay.eq(0)
        no_input = Signal()
        m.d.sync += no_input.eq(self.flow.in_total == 0)
        finished = self.end_seen & (state.dp_finished | no_input)

        # Two registered stages: the wants, then the choice among them. The transmitter only
        # accepts a frame after it has been idle for `settled` (7 cycles, also after a clear),
        # by which time both stages reflect the current state.
        ready = self.active & self.tx.settled
        data_frame = Signal(16)
        m.d.sync += data_frame.eq(self.flow.data_len + OFFSET_SIZE)
        # A rewind waits for the transmitter to be idle (it holds it off for `settled` too).
        m.d.comb += [self.rewind.eq(state.rewind_pending & self.tx.idle),
                     self.flow.rewind.eq(self.rewind)]
        with m.If(self.rewind):
            m.d.sync += state.rewind_pending.eq(0)
        wants = [
            (BoardFrame.ERROR, state.err_pending, BOARD_LENGTHS[BoardFrame.ERROR][0]),
            (BoardFrame.HELLO_ACK, state.hello_pending, self.hello_size),
            # (After END a grown credit is no news: only answers, no announcements.)
            (BoardFrame.CREDIT, ready & (state.credit_force | self.flow.credit_new &
                ~self.end_seen & (self.flow.credit_due | self.frames.line_idle)),
                BOARD_LENGTHS[BoardFrame.CREDIT][0]),
            (BoardFrame.DATA, ready & (self.flow.data_len != 0) & (self.flow.data_due | finished),
                data_frame),
            (BoardFrame.STATUS, ready & finished & self.flow.all_sent & ~self.reported &
                ~state.rewind_pending, BOARD_LENGTHS[BoardFrame.STATUS][0]),
        ]
        wanted = Signal(len(wants))
        m.d.sync += wanted.eq(Cat(want for _, want, _ in wants))
        m.d.sync += self.tx.request.eq(wanted.any())
        for index, (kind, _, length) in reversed(list(enumerate(wants))):  # the first first
            with m.If(wanted[index]):
                m.d.sync += [self.tx.header.kind.eq(kind), self.tx.header.length.eq(length)]

        # A frame taken by the transmitter: its effects a cycle later, from registers (the
        # transmitter is busy with it for many cycles).
        took = {kind: Signal(name=f"took_{kind.name.lower()}") for kind in BoardFrame}
        m.d.sync += [flag.eq(self.tx.accept & (self.tx.header.kind == kind))
                     for kind, flag in took.items()]
        with m.If(Cat(*took.values()).any()):
            m.d.sync += [self.replies.received.eq(self.flow.in_total),
                         self.replies.have_from.eq(state.have_from),
                         self.replies.have_to.eq(state.have_to)]
        with m.If(took[BoardFrame.ERROR]):
            m.d.sync += state.err_pending.eq(0)
        with m.If(took[BoardFrame.HELLO_ACK]):
            m.d.sync += state.hello_pending.eq(0)
        with m.If(took[BoardFrame.CREDIT]):
            m.d.comb += self.flow.announce.eq(1)
            m.d.sync += [self.replies.credit.eq(self.flow.credit), state.credit_force.eq(0)]
        # (After the clear above: a request that comes as a CREDIT goes out is answered again.)
        with m.If(state.asked):
            m.d.sync += state.credit_force.eq(1)
        with m.If(took[BoardFrame.STATUS]):
            # The message is complete (its STATUS fields stay as they are until the next
            # START); the host may still ask for its output or STATUS again.
            m.d.sync += self.reported.eq(1)
