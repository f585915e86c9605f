"""The board's flow control: the input credit it grants, the output the host lets it send."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.component import CheckedComponent
from .protocol import Mode, CREDIT_SHIFT


__all__ = ["OUT_SLACK", "FlowControl", "CreditWindow"]


#: Output bytes the datapath may still produce for input it has already taken (a decoder's
#: pending sequence and pipeline registers, at 4 output bytes each); kept free in the output
#: buffer on top of the worst case of the granted input.
OUT_SLACK = 64


#: The link between the flow control (this side) and the message control: see
#: :class:`CreditWindow`.
FlowControl = wiring.Signature({
    "mode": In(Mode),
    "enable": In(1),
    "commit": In(1),
    "commit_length": In(16),
    "announce": In(1),
    "acked": In(32),
    "window": In(32),
    "frame": In(16),
    "rewind": In(1),
    "epoch": In(8),
    "credit": Out(32),
    "credit_new": Out(1),
    "credit_due": Out(1),
    "in_total": Out(32),
    "data_len": Out(16),
    "data_due": Out(1),
    "all_sent": Out(1),
})


class CreditWindow(CheckedComponent):
    """Counts a message's bytes and computes both directions' flow control.

    *Input credit* (cumulative input bytes the host may send): it grows to
    ``consumed + min(in_depth, (out_depth - OUT_SLACK - pending) >> shift)`` and never shrinks,
    where ``shift`` is the mode's worst-case expansion from
    :data:`~utf8_gateware.boards.protocol.CREDIT_SHIFT` (``validate``: ``in_depth``), so every
    granted byte fits in the input buffer and its worst-case output in the output buffer.
    *Output*: the length of the next DATA frame, at most the host's ``frame`` size, the bytes
    waiting to be sent and the host's window. Output bytes occupy the output buffer until the
    host acknowledges them (``acked``), so that they can be sent again (``rewind``).

    Parameters: ``in_depth``, ``out_depth`` (the buffers, bytes), ``max_payload``,
    ``credit_step`` (the credit is due for announcement when it has grown by this much).
    Reset it (``ResetInserter``) at the start of each message.

    Ports
    -----
    ``flow``: Out(:data:`FlowControl`)
        From the message control: ``mode``; ``enable`` (the credit may grow: a message is in
        progress); ``commit`` with ``commit_length`` (a DATA frame was received); ``announce`` (a
        CREDIT frame with the current ``credit`` is being sent); ``acked`` (output bytes the host
        acknowledged), ``window`` (it accepts output up to ``acked + window``), ``frame``
        (1..``max_payload``: the largest DATA frame it takes); ``rewind`` (the output is sent again
        from ``acked``: ``bytes_out`` goes back to it); ``epoch`` (of the last rewind: the board's
        DATA frames carry it). To it: ``credit``; ``credit_new``/``credit_due`` (it has grown since
        it was last announced; by ``credit_step`` or more); ``in_total`` (input bytes received);
        ``data_len`` (the data length of the next DATA frame, registered; 0: nothing may be sent);
        ``data_due`` (registered, two cycles behind ``data_len``: a DATA frame of ``data_len``
        bytes should go now: it is full, i.e. ``frame`` bytes or all the host's window allows, or
        no output has arrived for 64 cycles); ``all_sent`` (every output byte written was sent;
        registered).
    ``take``: In(1), ``write``: In(1), ``send``: In(1)
        Pulses: the datapath took an input byte; an output byte went into the output buffer;
        an output payload byte went to the host (registered: counted a cycle later).
    ``credit_left``: Out(32)
        ``credit - in_total`` (one cycle late; it only changes at the end of a frame).
    ``bytes_out``: Out(32)
        Output bytes sent (in order: a rewind takes it back to ``acked``). The offset of the
        next DATA frame.

    Timing: every wide comparison has a register of its own. The credit grows in four steps
    (snapshot, headroom, compare, update), so it lags the counts by up to eight cycles.
    """
    @classmethod
    def check_parameters(cls, *, in_depth, out_depth, max_payload, credit_step):
        for name, value in (("in_depth", in_depth), ("out_depth", out_depth)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1024 or \
                    value & (value - 1):
                raise ValueError(f"{name} must be a power of 2 of at least 1024, not {value!r}")
        if not 1 <= max_payload <= min(in_depth, out_depth) // 4:
            raise ValueError(f"max_payload must be 1..{min(in_depth, out_depth) // 4} (a quarter "
                             f"of the smaller buffer), not {max_payload!r}")
        if not 1 <= credit_step <= in_depth // 2:
            raise ValueError(f"credit_step must be 1..{in_depth // 2}, not {credit_step!r}")

    def __init__(self, *, in_depth, out_depth, max_payload, credit_step):
        self.in_depth = in_depth
        self.out_depth = out_depth
        self.max_payload = max_payload
        self.credit_step = credit_step
        super().__init__({
            "flow": Out(FlowControl),
            "take": In(1),
            "write": In(1),
            "send": In(1),
            "credit_left": Out(32),
            "bytes_out": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        flow = self.flow
        consumed = Signal(32)
        written = Signal(32)
        sent = self.bytes_out
        # The pulses come from the streams' handshakes: registered before they count.
        take, write, send = Signal(), Signal(), Signal()
        m.d.sync += [take.eq(self.take), write.eq(self.write), send.eq(self.send)]
        with m.If(flow.commit):
            m.d.sync += flow.in_total.eq(flow.in_total + flow.commit_length)
        with m.If(take):
            m.d.sync += consumed.eq(consumed + 1)
        with m.If(write):
            m.d.sync += written.eq(written + 1)
        with m.If(flow.rewind):
            m.d.sync += sent.eq(flow.acked)
        with m.Elif(send):
            m.d.sync += sent.eq(sent + 1)
        pending = Signal(range(self.out_depth + 1))     # output bytes in the buffer
        m.d.sync += [self.credit_left.eq(flow.credit - flow.in_total),
                     pending.eq(written - flow.acked), flow.all_sent.eq(written == sent)]
        self._grow_credit(m, consumed, pending)

        # Announcements.
        credit_sent = Signal(32)
        ahead = Signal(18)          # credit - credit_sent: at most the window, below 2**17
        # (The credit never falls and credit_sent follows it: new is ahead != 0.)
        m.d.sync += [ahead.eq((flow.credit - credit_sent)[:18]),
                     flow.credit_new.eq(ahead != 0),
                     flow.credit_due.eq(ahead >= self.credit_step)]
        with m.If(flow.announce):
            m.d.sync += credit_sent.eq(flow.credit)

        # The next DATA frame: min(unsent, frame, acked + window - sent), registered in steps;
        # it is due when full or when the output has been quiet for 64 cycles.
        # Each value lags the counts by a few cycles; the transmitter is idle for longer than
        # that after a frame or a rewind, and a stale value is never too large (the room and the
        # bytes unsent only grow while it is idle).
        host_limit = Signal(32)
        room_host = Signal(32)
        room_clip = Signal(range(self.out_depth + 1))   # room_host in 0..out_depth
        room_neg, room_big = Signal(), Signal()
        room_low = Signal.like(room_clip)
        unsent = Signal(range(self.out_depth + 1))
        len_is_room = Signal()
        quiet = Signal(range(65))
        # room_host = host_limit - sent in two 16-bit halves, from one snapshot of both (one
        # cycle more of lag): one 32-bit chain behind the chain of `written - sent` was the
        # board's critical path (46.8 MHz on seeds 1-3 at stop 25, 48 MHz needed).
        low = Signal(17)                # the low half and its borrow
        limit_high, sent_high = Signal(16), Signal(16)
        m.d.sync += [
            host_limit.eq(flow.acked + flow.window),
            low.eq(host_limit[:16] - sent[:16]),
            limit_high.eq(host_limit[16:]),
            sent_high.eq(sent[16:]),
            room_host.eq(Cat(low[:16], (limit_high - sent_high - low[16])[:16])),
            room_neg.eq(room_host[31]),
            room_big.eq(room_host > self.out_depth),
            room_low.eq(room_host),
            room_clip.eq(Mux(room_neg, 0, Mux(room_big, self.out_depth, room_low))),
            unsent.eq(written - sent),
        ]
        limit = _smaller(m, unsent, flow.frame, "limit")
        m.d.comb += flow.data_len.eq(_smaller(m, room_clip, limit, "data_len"))
        m.d.sync += len_is_room.eq(flow.data_len == room_clip)
        with m.If(write):
            m.d.sync += quiet.eq(0)
        with m.Elif(quiet != 64):
            m.d.sync += quiet.eq(quiet + 1)
        # (data_len == frame in registered 4-bit parts: as one 16-bit compare before the OR it
        # was a chain of 7 LUTs, the board's critical path on seeds 1 and 3 at stop 30.)
        width = max(len(flow.data_len), len(flow.frame))
        data_len, frame = Signal(width), Signal(width)
        m.d.comb += [data_len.eq(flow.data_len), frame.eq(flow.frame)]
        full = Signal(len(range(0, width, 4)))
        m.d.sync += full.eq(Cat(data_len[i:i + 4] == frame[i:i + 4] for i in range(0, width, 4)))
        m.d.sync += flow.data_due.eq(full.all() | len_is_room | (quiet == 64))
        return m

    def _grow_credit(self, m, consumed, pending):
        """credit := max(credit, consumed + window), window = min(in_depth, free >> shift), in
        four steps so that no 32-bit comparison sits in one cycle: snapshot, headroom = credit -
        consumed (below 2**17), compare, update."""
        flow = self.flow
        room = Signal(range(self.out_depth + 1))
        window = Signal(range(max(self.in_depth, self.out_depth) + 1))
        m.d.sync += room.eq(Mux(pending > self.out_depth - OUT_SLACK, 0,
                                self.out_depth - OUT_SLACK - pending))
        shifted = Signal.like(window)
        with m.Switch(flow.mode):
            for mode, shift in CREDIT_SHIFT.items():
                with m.Case(mode):
                    m.d.comb += shifted.eq(self.in_depth if shift is None else room >> shift)
        m.d.sync += window.eq(Mux(shifted < self.in_depth, shifted, self.in_depth))

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
                m.d.sync += headroom.eq((flow.credit - snap_consumed)[:18])
            with m.Case(2):
                # (the borrow of a subtraction: a carry chain, not a LUT tree of 6 levels)
                m.d.sync += [grow_ok.eq((headroom - snap_window)[-1]),
                             grow_to.eq(snap_consumed + snap_window)]
            with m.Case(3):
                with m.If(flow.enable & grow_ok):
                    m.d.sync += flow.credit.eq(grow_to)


def _smaller(m, a, b, name):
    """The smaller of ``a`` and ``b``, in two registered steps (compare, then select): a
    register, two cycles behind them."""
    width = max(len(a), len(b))
    a_q, b_q = Signal(width, name=f"{name}_a"), Signal(width, name=f"{name}_b")
    a_less = Signal(name=f"{name}_a_less")
    result = Signal(width, name=name)
    m.d.sync += [a_q.eq(a), b_q.eq(b), a_less.eq(a < b), result.eq(Mux(a_less, a_q, b_q))]
    return result
