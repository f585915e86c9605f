"""The host side of the board protocol: send a message, collect the output, check it.

:class:`Link` talks to a board (or the virtual board) over a pyserial port;
:func:`expected_output` computes what the board must answer with the reference model
(:mod:`utf8_gateware.sim.encodings`); :func:`stream` runs one file through the board and returns
the report that ``utf8-gateware stream`` prints.

Every failure is a :class:`BoardError` with a one-line message; every wait has a timeout.
"""

import dataclasses
import math
import os
import struct
import time

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim import encodings, reference
from .protocol import (HEADER, OVERHEAD, OFFSET_SIZE, MAX_WINDOW, STATUS_SIZE, HELLO_SIZE,
                       EPOCH_MASK, BOARD_LENGTHS, HostFrame, BoardFrame, Mode, ErrorCode,
                       FrameParser, Hello, Status, decode_word, encode_frame, board_position,
                       data_frame, end_frame, start_frame, window_frame)


__all__ = ["BoardError", "Link", "MessageResult", "LINK_COUNTS", "USB_ROUND_TRIP_S",
           "inflight_for", "fault_frame",
           "expected_output",
           "utilisation", "stream"]


class BoardError(Exception):
    """A problem talking to the board (one line). ``status``: the exit status to use."""
    def __init__(self, message, status=2):
        super().__init__(message)
        self.status = status


@dataclasses.dataclass
class MessageResult:
    """What one message produced: ``output`` (bytes), ``status`` (:class:`Status`),
    ``wire_in``/``wire_out`` (bytes on the line in each direction during the message, frames
    included), ``elapsed`` (wall-clock seconds), ``counts`` (the link's recovery counters,
    :data:`LINK_COUNTS`)."""
    output: bytes
    status: Status
    wire_in: int
    wire_out: int
    elapsed: float
    counts: dict


#: The recovery counters of a message (``stream --json`` reports them under ``link``):
#: ``frames_resent``/``bytes_resent`` (input DATA frames and their bytes sent more than once),
#: ``go_backs`` (the host sent again from the board's count after an ``ERROR``),
#: ``rewinds`` (the host asked for output again: a gap, a bad frame, a STATUS ahead of the
#: output), ``timeouts`` (no progress for ``retransmit_after``: everything unacknowledged sent
#: again), ``restarts`` (the board had lost the message: it started over), ``board_errors``
#: (``ERROR`` frames received), ``bad_frames`` (corrupted or stray bytes from the board),
#: ``duplicates`` (output frames already received).
LINK_COUNTS = ("frames_resent", "bytes_resent", "go_backs", "rewinds", "timeouts", "restarts",
               "board_errors", "bad_frames", "duplicates")


#: A real USB-UART's round trip (seconds), the line's bytes aside: the host's write waits for the
#: next USB frame (1 ms) and the board's answer for the FT2232H's latency timer (1 ms, Linux's
#: low-latency default for FTDI chips). :func:`inflight_for` adds the board's frame ahead of the
#: answer.
USB_ROUND_TRIP_S = 0.002


def inflight_for(baud, frame):
    """The default bound on input bytes in flight (:class:`Link`'s ``inflight``) for DATA frames
    of ``frame`` bytes at ``baud``: what keeps the line to the board busy over a real USB-UART,
    no more (the host's own frames queue behind it; go-back-N sent it all again after a loss,
    selective repeat sends the frame lost). The host asks for the board's count every
    half of it, so it is twice what the line carries in a round trip: :data:`USB_ROUND_TRIP_S`
    plus the DATA frame the board may be sending when the request arrives and the CREDIT that
    answers it. A whole number of frames, at least four. (3 Mbaud, 256-byte frames: 2.9 ms,
    880 bytes, so 1792 bytes; 12 Mbaud: 5376 bytes.)"""
    answer = OVERHEAD + BOARD_LENGTHS[BoardFrame.CREDIT][0]
    round_trip = USB_ROUND_TRIP_S + (frame + OVERHEAD + OFFSET_SIZE + answer) * 10 / baud
    return max(4, math.ceil(2 * round_trip * baud / 10 / frame)) * frame


def fault_frame(rate, max_payload):
    """The DATA frame payload that loses least on a line with ``rate`` faults per byte: per byte,
    a frame of n bytes costs its overhead 10/n and about ``rate * n`` bytes sent again, least at
    n = sqrt(10 / rate) (a power of 2, 64..``max_payload``; ``None`` without faults)."""
    if not rate:
        return None
    return max(64, min(max_payload, 1 << round(math.log2(math.sqrt(10 / rate)))))


class _MessageLost(Exception):
    """The board no longer has the message (it was reset): start it over."""


class Link:
    """A connection to a board on ``port`` (a path or a ``serial.Serial``-like object).

    ``timeout``: seconds without any progress before giving up. ``window``: the host's receive
    window (bytes of output it lets the board send beyond what it acknowledged; 1 to
    :data:`~.protocol.MAX_WINDOW`, else a one-line :class:`ValueError`). ``frame``: the largest DATA
    payload in either direction (default: the board's ``max_payload``; smaller frames lose less to a
    fault on a noisy line). ``inflight``: the input bytes the host sends beyond the count the board
    last confirmed and the range it holds past a gap (its last ``ERROR``'s; default:
    :func:`inflight_for` the board's baud rate and the frame); the host's own frames (``WINDOW``,
    ``END``) queue behind them, so the smaller the sooner a fault is answered, as long as it covers
    the round trip (the host asks for the count every half of it). ``retransmit_after``: seconds
    without progress after which the host probes, until round trips have been measured (then their
    smoothed mean plus four times their variation, RFC 6298). ``max_restarts``: how many times a
    message is started over when the board lost it (it was reset) before giving up.
    """
    def __init__(self, port, *, baud=3_000_000, timeout=5.0, window=1 << 16, frame=None,
                 inflight=None, retransmit_after=0.5, max_restarts=4):
        if isinstance(window, bool) or not isinstance(window, int) or \
                not 1 <= window <= MAX_WINDOW:
            raise ValueError(f"the receive window must be 1..{MAX_WINDOW} bytes (the board's "
                             f"offsets are modulo 2**32), not {window!r}")
        self.timeout = timeout
        self.window = window
        self.frame = frame
        self.inflight = inflight
        self.retransmit_after = retransmit_after
        self.max_restarts = max_restarts
        self.hello = None
        self.parser = FrameParser()
        if isinstance(port, str):
            try:
                import serial
            except ImportError:
                raise BoardError("pyserial is not installed (pip install pyserial)") from None
            try:
                self.serial = serial.Serial(port, baud, timeout=0.02, write_timeout=timeout)
            except (serial.SerialException, OSError, ValueError) as error:
                code = getattr(error, "errno", None) or (error.args[0] if error.args and
                                                         isinstance(error.args[0], int) else None)
                detail = os.strerror(code) if isinstance(code, int) else str(error)
                raise BoardError(f"cannot open serial port {port!r}: {detail}") from None
        else:
            self.serial = port

    def close(self):
        try:
            self.serial.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    # -- raw I/O --------------------------------------------------------------------------------

    def _write(self, data):
        try:
            self.serial.write(data)
        except Exception as error:
            raise BoardError(f"cannot write to the board: {_describe(error)}") from None
        return len(data)

    def _read(self):
        try:
            waiting = self.serial.in_waiting
            return self.serial.read(max(1, min(waiting, 1 << 16)))
        except Exception as error:
            raise BoardError(f"cannot read from the board: {_describe(error)}") from None

    def send(self, kind, payload=b""):
        return self._write(encode_frame(kind, payload))

    # -- protocol -------------------------------------------------------------------------------

    def connect(self, interval=2.0):
        """HELLO (again every ``interval`` seconds) until HELLO_ACK, for up to ``timeout``
        seconds (stale frames are dropped); returns :class:`Hello`."""
        try:
            self.serial.reset_input_buffer()
        except Exception:
            pass
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            self.parser = FrameParser()
            self.send(HostFrame.HELLO)
            retry = min(deadline, time.monotonic() + interval)
            while time.monotonic() < retry:
                for kind, payload in self.parser.feed(self._read()):
                    if kind == BoardFrame.HELLO_ACK and len(payload) == HELLO_SIZE:
                        self.hello = Hello(payload)
                        return self.hello
        raise BoardError(f"no answer from a board on {_port_name(self.serial)} "
                         f"(is it programmed with utf8-gateware and the baud rate right?)")

    def run(self, mode, data, *, progress=None, corrupt_frame=None, drop_frame=None,
            stop_after=None):
        """Send ``data`` as one message in ``mode``; returns :class:`MessageResult`.

        Lost, corrupted, repeated or truncated frames in either direction are sent again (see
        :mod:`~utf8_gateware.boards.protocol`); a board that lost the message is given it again
        up to ``max_restarts`` times. ``progress(n)`` is called with the input bytes sent (the
        first time). Test hooks: ``corrupt_frame=k`` flips a bit of the k-th DATA frame
        (0-based), ``drop_frame=k`` leaves it out (as if the line lost it); ``stop_after=n``
        returns (``None``) after writing ``n`` bytes of frames, leaving the message unfinished.
        """
        if self.hello is None:
            self.connect()
        started = time.monotonic()
        counts = dict.fromkeys(LINK_COUNTS, 0)
        hooks = {"corrupt_frame": corrupt_frame, "drop_frame": drop_frame,
                 "stop_after": stop_after}
        for _ in range(self.max_restarts + 1):
            transfer = _Transfer(self, Mode(mode), memoryview(bytes(data)), progress, counts,
                                 hooks)
            try:
                result = transfer.run()
            except _MessageLost as lost:
                counts["restarts"] += 1
                reason = str(lost)
                continue
            if result is not None:
                result.elapsed = time.monotonic() - started
            return result
        raise BoardError(f"the board lost the message {counts['restarts']} times ({reason}); "
                         f"giving up", status=1)


class _Transfer:
    """One attempt at a message: HELLO, START, then the input (selective repeat) and the
    output (go-back-N) until the STATUS."""
    def __init__(self, link, mode, data, progress, counts, hooks):
        self.link, self.mode, self.data = link, mode, data
        self.progress, self.counts, self.hooks = progress, counts, hooks
        hello = link.hello
        self.frame = min(link.frame or hello.max_payload, hello.max_payload)
        self.min_frame = min(256, self.frame)
        self.inflight = max(link.inflight or inflight_for(hello.baud, self.frame),
                            4 * self.frame)
        # Ask for the board's count when `sent` passes `poll_at`, every half of the input in
        # flight (whole frames): the answer comes while the other half still keeps the line busy.
        self.poll_every = max(self.frame, self.inflight // 2 // self.frame * self.frame)
        # (Not after the first frame: the round trip of a request behind one frame is a fraction
        # of one behind half the input in flight, and a timeout sized from it fired needlessly
        # in most messages, on the virtual board where no USB latency pads the round trip.)
        self.poll_at = self.poll_every
        self.poll_time = None       # when the outstanding request for the count was sent
        self.poll_mark = 0          # ... and the input bytes sent before it
        # (Protocol version 2: a request with nothing to acknowledge rides on a DATA frame, the
        # ASK bit of its epoch, not a WINDOW: 12 bytes fewer on the line to the board.)
        self.can_ask = hello.version >= 2
        self.srtt = self.rttvar = None
        self.backoff = 1            # doubles with each timeout, until a round trip is measured
        self.silent = 0             # timeouts since the last progress
        self.phase = "hello"
        self.credit = self.sent = self.max_sent = self.acked_in = 0
        self.hole_end = None        # selective repeat: the gap being sent again ends here
        self.held = None            # ... and the range the board holds past its count
        self.end_sent = False
        self.in_epoch = self.out_epoch = 0  # the retransmission rounds in each direction
        self.output = bytearray()
        self.acked_out = 0
        self.status = None
        self.wire_in = self.wire_out = 0
        self.frames_sent = 0
        now = time.monotonic()
        self.last_progress = self.last_action = self.last_look = now
        self.back_mark = self.ask_mark = (None, now)

    def write(self, frame):
        self.wire_in += self.link._write(frame)

    def run(self):
        link = self.link
        # The board's DATA frames are at most `frame` long: a header whose length was hit by a
        # fault is dropped at once, not after waiting for up to the largest frame's bytes.
        link.parser = FrameParser({**BOARD_LENGTHS,
                                   BoardFrame.DATA: (1 + OFFSET_SIZE, self.frame + OFFSET_SIZE)})
        self.write(encode_frame(HostFrame.HELLO))
        while self.status is None:
            if self.phase == "run" and not self._send_data():
                return None
            chunk = link._read()
            self.wire_out += len(chunk)
            now = self._looked(time.monotonic())
            for kind, payload in link.parser.feed(chunk):
                self._on_frame(kind, payload, now)
            self._on_time(now)
        return MessageResult(bytes(self.output), self.status, self.wire_in, self.wire_out, 0.0,
                             self.counts)

    # -- sending --------------------------------------------------------------------------------

    def _send_data(self):
        """DATA frames as far as the credit allows (no tiny frames unless that is all that is
        left), END after the last; False if the ``stop_after`` hook ended the message."""
        data, total = self.data, len(self.data)
        while self.sent < total:
            allowed = min(self.credit - OFFSET_SIZE - self.sent, self.frame, total - self.sent,
                          self.acked_in + self._held() + self.inflight - self.sent,
                          (self.hole_end or total) - self.sent)
            if allowed <= 0 or (allowed < self.min_frame and
                                allowed < (self.hole_end or total) - self.sent):
                break
            # The request for the count on this frame (it reaches the next poll) if there is
            # no output to acknowledge; else a WINDOW after it (_poll).
            ask = (self.can_ask and self.sent + allowed >= self.poll_at and
                   len(self.output) == self.acked_out)
            frame = bytearray(data_frame(data[self.sent:self.sent + allowed], self.sent,
                                         self.in_epoch, ask))
            if self.frames_sent == self.hooks["corrupt_frame"]:
                frame[len(frame) // 2] ^= 0x10
            stop_after = self.hooks["stop_after"]
            if stop_after is not None and self.wire_in + len(frame) >= stop_after:
                self.write(bytes(frame[:max(0, stop_after - self.wire_in)]))
                return False
            if self.frames_sent != self.hooks["drop_frame"]:
                self.write(bytes(frame))
            self.frames_sent += 1
            if self.sent < self.max_sent:
                self.counts["frames_resent"] += 1
                self.counts["bytes_resent"] += min(allowed, self.max_sent - self.sent)
            elif self.progress is not None:
                self.progress(allowed)
            self.sent += allowed
            self.max_sent = max(self.max_sent, self.sent)
            self._past_gap()
            if self.sent >= self.poll_at:
                self._poll(asked=ask)
        if self.sent == total and not self.end_sent:
            self.write(end_frame(total, self.in_epoch))
            self.end_sent = True
        if self.sent >= self.poll_at and self.sent > self.acked_in:
            self._poll()
        elif len(self.output) - self.acked_out >= self.link.window // 8:
            self._ack()
        return True

    def _poll(self, asked=False):
        """Ask for the board's count: a WINDOW, which the board answers with a CREDIT (the count
        received) once the frames before it have arrived, or (``asked``) the DATA frame just
        sent had the ASK bit, which the board answers alike. Sent between the frames every
        ``poll_every`` bytes, not after all that may be in flight: the answer then comes while
        half of it is still on the line. The answer times the round trip."""
        if not asked:
            self._ack()
        self.poll_at = self.sent + self.poll_every
        if self.poll_time is None:
            self.poll_time, self.poll_mark = time.monotonic(), self.sent

    def _ack(self, rewind=False):
        if rewind:
            self.out_epoch = (self.out_epoch + 1) & 0xFF
        self.write(window_frame(len(self.output), rewind, self.out_epoch))
        self.acked_out = len(self.output)

    def _go_back(self, received, now, in_order=False, held=None, bad=False):
        """Send again from the board's count ``received``, in a new epoch (the ERRORs of the
        frames that followed a bad one carry the old epoch). ``in_order``: the ERROR is of a
        frame of the current epoch; other ERRORs (a bad frame: what it was is unknown) count once
        per count and round trip (:meth:`_fresh`). Selective repeat: only the gap is sent
        again, up to the range the board holds past it (``held``: its first and last offset),
        or, after a bad frame (``bad``) and no range, the one frame at the count; then the host
        goes on from where it was (a frame it sent after the gap that was lost too is a gap the
        board reports later)."""
        if (self.sent > received or self.end_sent) and (in_order or
                                                        self._fresh(self.back_mark, received, now)):
            self.sent = max(received, self.acked_in)
            self.hole_end = None
            if held is not None and held[1] > held[0] > self.sent:
                self.hole_end = held[0]
            elif bad:
                self.hole_end = min(self.sent + self.frame, self.max_sent)
            if self.hole_end is not None and self.hole_end >= self.max_sent:
                self.hole_end = None
            self.poll_at = min(self.poll_at, self.sent + self.poll_every)
            self.end_sent = False
            self.in_epoch = (self.in_epoch + 1) & EPOCH_MASK
            self.back_mark = (received, now)
            self.poll_time = None   # its answer would time the retransmission too (Karn)
            self.counts["go_backs"] += 1

    def _ask_again(self, now):
        """Ask for the output again from what arrived (once per gap and round trip, see
        :meth:`_fresh`)."""
        have = len(self.output)
        if self._fresh(self.ask_mark, have, now):
            self._ack(rewind=True)
            self.ask_mark = (have, now)
            self.counts["rewinds"] += 1

    def _fresh(self, mark, count, now):
        """Whether a sign of a gap at ``count`` is news after the request ``mark`` (count, time)
        made for the last one: another count, or a round trip's timeout (not backed off: the
        backoff times the probes of a silent line; a gap seen after a backed-off wait is the
        answer to a probe, and ignoring it left both sides waiting until the host gave up)."""
        return mark[0] != count or now - mark[1] > self._rto(backoff=False)

    # -- receiving ------------------------------------------------------------------------------

    def _looked(self, now):
        """``now``, after a look at the line; a long time since the last look (the host did not
        run: a loaded machine, or a virtual board that stands still while the host runs) is not
        the board's silence: the timeouts start again from here. (A look takes at most the
        port's read timeout, 20 ms.)"""
        if now - self.last_look > self.LATE_S:
            late = now - self.last_look
            self.last_action += late
            self.last_progress += late
        self.last_look = now
        return now

    #: A gap between two looks at the line longer than this is the host's (not the board's).
    LATE_S = 0.2

    def _moved(self, now):
        self.last_progress = self.last_action = now
        self.silent = 0

    def _round_trip(self, now, received):
        """A CREDIT arrived: if it counts every byte sent before the outstanding request for the
        count, it is its answer (the board answers a WINDOW after the frames before it): a
        sample of the round trip, RFC 6298's smoothing. (Other CREDITs, sent when the credit
        grew or the line was idle, would make the round trip look shorter than the input in
        flight takes to drain, and the timeout fire while a REWIND still waits behind it.)"""
        if self.poll_time is None or received < self.poll_mark:
            return
        sample, self.poll_time = now - self.poll_time, None
        # (RFC 6298 5.7: a backed-off timeout stays until a new sample, not just until some
        # progress: else a timeout that was too short fires again on every round trip, and
        # Karn's rule drops every answer that would correct it.)
        self.backoff = 1
        if self.srtt is None:
            self.srtt, self.rttvar = sample, sample / 2
        else:
            self.rttvar += (abs(self.srtt - sample) - self.rttvar) / 4
            self.srtt += (sample - self.srtt) / 8

    def _on_frame(self, kind, payload, now):
        if kind is None:
            self.counts["bad_frames"] += 1
            if self.phase == "run" and payload.kind == BoardFrame.DATA:
                # An output frame was lost: ask for it now, not after the next frame shows
                # the gap (a frame time later; the REWIND then queues behind the input).
                self._ask_again(now)
            elif self.phase == "run" and payload.kind == BoardFrame.STATUS and self.end_sent:
                self.write(end_frame(len(self.data), self.in_epoch))   # the STATUS again
        elif kind == BoardFrame.HELLO_ACK:
            if self.phase == "hello":
                self.phase = "start"
                self.write(start_frame(self.mode, self.link.window, self.frame))
                self._moved(now)
        elif kind == BoardFrame.CREDIT:
            credit, received = struct.unpack("<II", payload)
            if self.phase == "start":
                self.phase = "run"
                self._moved(now)
            if self.phase == "run":
                self._round_trip(now, received)
                if credit > self.credit:
                    self.credit = credit
                    self._moved(now)
                self._acknowledged(received, now)
        elif kind == BoardFrame.ERROR:
            received, *held = struct.unpack("<IHH", payload[2:])
            # (the range modulo 2**16, within the input buffer of the count)
            held = [received + ((value - received + 0x8000) & 0xFFFF) - 0x8000
                    for value in held]
            self._on_error(payload[0], payload[1], received, now, held)
        elif self.phase != "run":
            pass                # frames of an earlier message
        elif kind == BoardFrame.DATA:
            offset, epoch = board_position(struct.unpack("<I", payload[:OFFSET_SIZE])[0],
                                           len(self.output))
            self._on_data(offset, epoch, payload[OFFSET_SIZE:], now)
        elif kind == BoardFrame.STATUS:
            status = Status(payload)
            if status.bytes_out == len(self.output):
                self.status = status
            else:
                self._ask_again(now)        # output missing at the end

    def _acknowledged(self, received, now):
        if received > self.acked_in:
            self.acked_in = received
            self.sent = max(self.sent, received)    # after a needless go-back: skip what it has
            self._past_gap()
            self._moved(now)

    def _held(self):
        """Input bytes the board holds past the gap at its count (its last ERROR's range): they
        arrived, so they are not in flight. The host goes on sending while the gap's frame waits
        behind the frames in flight (else the line ran dry once it had carried them, until the
        count that joined the range came back)."""
        if self.held is None or self.held[0] <= self.acked_in:
            self.held = None
            return 0
        return self.held[1] - self.held[0]

    def _past_gap(self):
        """The gap sent again (selective repeat): go on from where the host was."""
        if self.hole_end is not None and self.sent >= self.hole_end:
            self.sent, self.hole_end = self.max_sent, None

    def _on_error(self, code, epoch, received, now, held=None):
        self.counts["board_errors"] += 1
        if code == ErrorCode.BAD_MODE:
            raise BoardError(f"the board does not offer mode {self.mode.label} (its bitstream "
                             f"was built without it)")
        if self.phase != "run":
            return
        if code in (ErrorCode.NO_MESSAGE, ErrorCode.BUSY):
            raise _MessageLost(ErrorCode(code).description)
        self._acknowledged(received, now)
        if held is not None and held[1] > held[0] > received:
            self.held = tuple(held)
        if code in (ErrorCode.SEQUENCE, ErrorCode.OVERRUN):
            if epoch & EPOCH_MASK == self.in_epoch:
                self._go_back(received, now, in_order=True, held=held)
        else:
            self._go_back(received, now, held=held, bad=True)

    def _on_data(self, offset, epoch, body, now):
        have = len(self.output)
        if offset <= have < offset + len(body):
            self.output += body[have - offset:]
            self._moved(now)
        elif offset > have:
            if epoch == self.out_epoch:
                self._ask_again(now)    # a frame was lost (since the last rewind)
        else:
            self.counts["duplicates"] += 1

    def _rto(self, backoff=True):
        """The retransmission timeout, sized from the link: ``retransmit_after`` until a round
        trip was measured, then the smoothed round trip plus four times its variation (RFC
        6298; a simulated board is much slower than a real one), at least twice the round trip
        and 20 ms; doubled for each timeout since the last round trip measured (``backoff``),
        at most a third of ``timeout``."""
        if self.srtt is None:
            rto = self.link.retransmit_after
        else:
            rto = max(self.srtt + 4 * self.rttvar, 2 * self.srtt, 0.02)
        return min(rto * (self.backoff if backoff else 1), self.link.timeout / 3)

    def _on_time(self, now):
        """Without progress for the timeout, probe: END again if it was sent (the STATUS again,
        or an ERROR with the board's count), else the last byte sent as a DATA frame of its own
        (the board drops it quietly if it has it, or answers with ERROR and its count: a gap to
        go back to), and a WINDOW (the board answers with a CREDIT), after END and a first
        probe without progress with ``REWIND`` (the board also sends its output again from what
        the host has, then the STATUS: the board has no timer of its own, so output or a
        request for it lost on the line is found here; a needless rewind costs nothing when all
        output has arrived, but not before END or at the first timeout: that may be the host's
        or the board's stall while output flows). Give up after ``timeout`` without
        progress."""
        if now - self.last_action < self._rto():
            return
        if now - self.last_progress > self.link.timeout:
            raise BoardError(f"no progress for {self.link.timeout:g} s in spite of "
                             f"{self.counts['timeouts']} retransmissions (sent "
                             f"{self.max_sent} of {len(self.data)} bytes, received "
                             f"{len(self.output)})")
        self.counts["timeouts"] += 1
        self.silent += 1
        self.last_action = now
        self.backoff = min(2 * self.backoff, 64)
        self.poll_time = None       # its answer, if late, is no round trip (Karn)
        if self.phase == "run":
            if self.end_sent:
                self.write(end_frame(len(self.data), self.in_epoch))
            elif self.sent > self.acked_in:
                # The last byte sent again, in a frame of its own (15 bytes, not a whole frame:
                # a timeout may be needless): the board drops it quietly if it has it, else its
                # ERROR says what it lacks (frames lost without a trace: a gap to go back to).
                offset = self.sent - 1
                self.write(data_frame(self.data[offset:self.sent], offset, self.in_epoch))
                self.counts["frames_resent"] += 1
                self.counts["bytes_resent"] += 1
            if self.end_sent and self.silent > 1:
                # all input is in, and the last probe brought nothing: what the board still
                # owes is output (counted as a timeout, not a rewind). A first timeout may be
                # the host's own stall, or the board's on a loaded machine, while output flows
                # (before END as after it: cold CI, decode at 0.9005 and 0.8230 of the line,
                # one timeout each), and a rewind would resend all of it in flight.
                self._ack(rewind=True)
                self.ask_mark = (len(self.output), now)
            else:
                self._ack()
        else:
            self.phase = "hello"
            self.write(encode_frame(HostFrame.HELLO))


def _describe(error):
    return getattr(error, "strerror", None) or str(error) or type(error).__name__


def _port_name(port):
    return getattr(port, "port", None) or repr(port)


# -- reference ----------------------------------------------------------------------------------

#: The encodings (in, out) of the transcoding modes that are not UTF-8 to UTF-8.
_MODE_ENCODINGS = {Mode.TO_UTF16: ("utf-8", "utf-16-le"), Mode.FROM_UTF16: ("utf-16-le", "utf-8")}


def expected_output(mode, data):
    """``(output bytes, codepoints, {error label: count})`` the board must produce for ``data``
    in ``mode``, from the reference model."""
    mode = Mode(mode)
    if mode is Mode.ENCODE:
        whole = len(data) - len(data) % 4
        units = struct.unpack(f"<{whole // 4}I", data[:whole])
        encoded = reference.encode(units, "replace")
        errors = reference.count_errors(kind for _, kind in encoded.errors)
        output, codepoints = encoded.data, len(units)
        if whole != len(data):
            output += b"\xef\xbf\xbd"
            codepoints += 1
            errors[ErrorKind.TRUNCATED.label] += 1
        return output, codepoints, errors
    source, target = _MODE_ENCODINGS.get(mode, ("utf-8", "utf-8"))
    decoded = encodings.decode(bytes(data), source, "replace")
    errors = reference.count_errors(item.error for item in decoded)
    if mode in _MODE_ENCODINGS or mode is Mode.TRANSCODE:
        output = encodings.encode([item.codepoint for item in decoded], target, "replace").data
    elif mode is Mode.DECODE:
        output = b"".join(struct.pack("<I", decode_word(item.codepoint, item.error))
                          for item in decoded)
    else:
        output = b""
    return output, len(decoded), errors


def utilisation(status, hello):
    """Line utilisation of each direction from the board's cycle stamps (simulated time on the
    virtual board): payload bytes moved / bytes the line could carry from the first DATA frame to
    the end of the message in that direction. Returns ``(to_board, from_board)``. (The 64-bit
    stamps do not wrap; ``rx_first`` is taken after the first DATA frame's 4 header bytes.)"""
    divisor = hello.clock_hz / hello.baud
    byte_cycles = 10 * divisor
    to_board = from_board = 0.0
    if status.bytes_in:
        window = status.rx_last - status.rx_first + (HEADER + 1) * byte_cycles
        to_board = status.bytes_in * byte_cycles / window
    if status.bytes_out:
        window = status.tx_status - status.tx_first + (OVERHEAD + STATUS_SIZE) * byte_cycles
        from_board = status.bytes_out * byte_cycles / window
    return to_board, from_board


def first_mismatch(got, want):
    """Offset of the first differing byte (or of the end of the shorter), or ``None``."""
    for index, (a, b) in enumerate(zip(got, want)):
        if a != b:
            return index
    if len(got) != len(want):
        return min(len(got), len(want))
    return None


def stream(link, mode, data, *, progress=None, **hooks):
    """Run ``data`` through the board in ``mode`` and check it; returns ``(report, output)``:
    the report (a JSON-ready dict) and the board's output bytes."""
    mode = Mode(mode)
    result = link.run(mode, data, progress=progress, **hooks)
    if result is None:
        return None, None
    want, codepoints, errors = expected_output(mode, data)
    status = result.status
    board_errors = status.errors
    mismatch = first_mismatch(result.output, want)
    problems = []
    if mismatch is not None:
        problems.append(f"output differs from the reference model at byte {mismatch} "
                        f"(board: {result.output[mismatch:mismatch + 8].hex(' ') or 'end'}, "
                        f"reference: {want[mismatch:mismatch + 8].hex(' ') or 'end'})")
    if status.bytes_in != len(data):
        problems.append(f"the board counted {status.bytes_in} input bytes, not {len(data)}")
    if status.bytes_out != len(result.output):
        problems.append(f"the board counted {status.bytes_out} output bytes but sent "
                        f"{len(result.output)}")
    if status.codepoints != codepoints:
        problems.append(f"the board counted {status.codepoints} code points, the reference "
                        f"{codepoints}")
    if board_errors != errors:
        problems.append(f"error counts differ: board {board_errors}, reference {errors}")
    clock = link.hello.clock_hz
    busier = "to_board" if status.bytes_in >= status.bytes_out else "from_board"
    # The board's 64-bit cycle stamps (board time: simulated time on the virtual board).
    to_board, from_board = utilisation(status, link.hello)
    board_time = (status.tx_status + (OVERHEAD + STATUS_SIZE) * 10 * clock /
                  link.hello.baud) / clock
    counts = result.counts
    return {
        "mode": mode.label,
        "match": not problems,
        "problems": problems,
        "first_mismatch": mismatch,
        "bytes_in": len(data),
        "bytes_out": len(result.output),
        "codepoints": status.codepoints,
        "errors": board_errors,
        "baud": link.hello.baud,
        "clock_hz": clock,
        "line_utilisation": to_board if busier == "to_board" else from_board,
        "utilisation_measured_by": "board cycles",
        "busier_direction": busier,
        "utilisation_to_board": to_board,
        "utilisation_from_board": from_board,
        "wire_bytes_to_board": result.wire_in,
        "wire_bytes_from_board": result.wire_out,
        "board_seconds": board_time,
        "wall_seconds": result.elapsed,
        "throughput_bytes_per_s": len(data) / board_time if board_time else 0.0,
        "retransmissions": sum(counts[name] for name in
                               ("go_backs", "rewinds", "timeouts", "restarts")),
        "link": counts,
    }, result.output
