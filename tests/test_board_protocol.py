"""The board protocol: the host codec, and the gateware framer in Amaranth's simulator.

The framer tests run the whole :class:`BoardCore` (UART, frame receiver and transmitter,
buffers, credits, datapath) with a 4-cycle bit time and 1 KiB buffers, a host bit-banging its
``rx`` pin and sampling ``tx``. The datapath gets a tiny stand-in decoder (ASCII passes, any
other byte becomes U+FFFD ``invalid_byte``): these tests are about framing; the cores are
tested on their own and end to end on the virtual board.
"""

import struct
import time
from types import SimpleNamespace

import pytest
from amaranth.sim import Simulator

from utf8_gateware.sim.testbench import run_simulation
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.boards.board import BoardCore
from utf8_gateware.boards import host
from utf8_gateware.boards.host import USB_ROUND_TRIP_S, Link, inflight_for
from utf8_gateware.boards.protocol import (
    SYNC, OVERHEAD, REWIND, ASK, BoardFrame, ErrorCode, FrameParser, Hello, HostFrame, Mode, Status,
    crc16,
    data_frame, encode_frame, end_frame, start_frame, stream_position, window_frame,
    HELLO_FORMAT, HOST_LENGTHS, MAX_WINDOW, OFFSET_MASK, STATUS_FIELDS, STATUS_FORMAT, VERSION)

from standins import AsciiDecoder


# -- host codec ----------------------------------------------------------------------------------

def test_crc_matches_amaranth_catalog():
    from amaranth.lib.crc import catalog
    data = b"123456789"
    assert crc16(data) == 0x29B1 == catalog.CRC16_CCITT_FALSE(data_width=8).compute(data)


def test_frame_round_trip():
    frames = [(BoardFrame.CREDIT, bytes(range(8))), (BoardFrame.DATA, bytes(range(256))),
              (BoardFrame.ERROR, bytes(10))]
    stream_ = b"".join(encode_frame(kind, payload) for kind, payload in frames)
    parser = FrameParser()
    got = []
    for index in range(0, len(stream_), 7):       # arbitrary chunking
        got += parser.feed(stream_[index:index + 7])
    assert got == [(int(kind), payload) for kind, payload in frames]


def test_parser_resynchronises():
    good = encode_frame(BoardFrame.CREDIT, b"\x10\x00\x00\x00\x00\x00\x00\x00")
    bad = bytearray(encode_frame(BoardFrame.DATA, b"hello"))
    bad[5] ^= 1
    got = FrameParser().feed(b"\x00\x01" + bytes(bad) + good)
    kinds = [kind for kind, _ in got]
    assert kinds[-1] == BoardFrame.CREDIT and got[-1][1] == b"\x10" + bytes(7)
    assert None in kinds                               # the bad CRC and stray bytes reported
    # A frame whose header was intact says which type of frame was lost; stray bytes do not.
    reasons = [reason for kind, reason in got if kind is None]
    assert [reason.kind for reason in reasons] == [None, BoardFrame.DATA, None]
    assert reasons[1] == "bad CRC in a frame of type 0x83"      # (then its bytes are stray)
    long = encode_frame(BoardFrame.DATA, bytes(300))
    assert FrameParser({BoardFrame.DATA: (5, 260)}).feed(long)[0][1].kind == BoardFrame.DATA


def test_inflight_covers_a_real_round_trip_and_no_more():
    """The input in flight is twice (the host asks for the count every half) what the line
    carries in a real USB-UART's round trip plus a board frame ahead of the answer: the line
    never waits for a count, and go-back-N sends no more again than that. At least four
    frames."""
    for baud in (1_000_000, 3_000_000, 12_000_000):
        for frame in (64, 256, 1024, 4096):
            inflight = inflight_for(baud, frame)
            trip = USB_ROUND_TRIP_S * baud / 10 + frame + 10 + 14     # DATA, CREDIT
            assert inflight % frame == 0
            assert inflight == 4 * frame or trip <= inflight / 2 < trip + frame / 2
    assert inflight_for(3_000_000, 256) == 1792 and inflight_for(12_000_000, 256) == 5376


@pytest.mark.parametrize("window", [0, MAX_WINDOW + 1, 1 << 32, 2.5, True])
def test_host_window_is_bounded(window):
    """The board takes its room (acked + window - sent) modulo 2**32: the host refuses a
    window past MAX_WINDOW (one line) instead of a message whose output never comes."""
    with pytest.raises(ValueError, match=r"^the receive window must be 1\.\.1073741824 bytes"):
        Link(ScriptedBoard(lambda kind, payload: b""), window=window)
    Link(ScriptedBoard(lambda kind, payload: b""), window=MAX_WINDOW)


# -- the host's recovery, against a scripted board -----------------------------------------------

class ScriptedBoard:
    """A serial port whose far end answers the host's frames with ``reply(kind, payload)``
    (bytes; HELLO and START are answered here). ``seen``: the host's frames, in order.
    ``version``: the protocol version its HELLO_ACK says."""
    def __init__(self, reply, version=1):
        self.reply, self.seen, self.version = reply, [], version
        self.parser = FrameParser(HOST_LENGTHS)
        self.pending = bytearray()

    @property
    def in_waiting(self):
        return len(self.pending)

    def write(self, data):
        for kind, payload in self.parser.feed(data):
            self.seen.append((kind, payload))
            self.pending += self.answer(kind, payload)

    def answer(self, kind, payload):
        if kind == HostFrame.HELLO:
            return encode_frame(BoardFrame.HELLO_ACK, struct.pack(
                HELLO_FORMAT, self.version, 0, 256, 48_000_000, 3_000_000, 1 << 15, 1 << 16))
        if kind == HostFrame.START:
            return encode_frame(BoardFrame.CREDIT, struct.pack("<II", 1 << 15, 0))
        return self.reply(kind, payload)

    def read(self, size):
        if not self.pending:
            time.sleep(0.001)
        chunk = bytes(self.pending[:size])
        del self.pending[:size]
        return chunk

    def reset_input_buffer(self):
        self.pending.clear()

    def close(self):
        pass


def board_data(output, offset, epoch=0, damaged=False):
    frame = bytearray(encode_frame(BoardFrame.DATA, struct.pack(
        "<I", stream_position(offset, epoch)) + output[offset:]))
    if damaged:
        frame[-4] ^= 0x20           # a bit of the data: the header stays intact
    return bytes(frame)


def board_status(data, output):
    values = dict.fromkeys(STATUS_FIELDS, 0)
    values.update(mode=Mode.TRANSCODE, bytes_in=len(data), bytes_out=len(output),
                  codepoints=len(data))
    return encode_frame(BoardFrame.STATUS, struct.pack(STATUS_FORMAT, *values.values()))


def scripted_run(reply, data):
    """Transcode ``data`` through a :class:`ScriptedBoard` whose host gives up after 3 s without
    progress and probes after 10 s only (a recovery that needs a timeout fails)."""
    port = ScriptedBoard(reply)
    link = Link(port, timeout=3.0, retransmit_after=10.0)
    result = link.run(Mode.TRANSCODE, data)
    assert result.output == data and result.counts["timeouts"] == 0
    return result, port.seen


def test_damaged_output_frame_is_asked_for_at_once():
    """A board DATA frame with a bad CRC (its header intact) makes the host ask for the output
    again (REWIND) at once: no later frame shows the gap, and no timeout is needed."""
    data = b"hello, scripted board"

    def reply(kind, payload):
        if kind == HostFrame.END:
            return board_data(data, 0, damaged=True)
        if kind == HostFrame.WINDOW and payload[4] & REWIND:
            return board_data(data, 0, epoch=payload[5]) + board_status(data, data)
        return b""
    result, seen = scripted_run(reply, data)
    assert result.counts["rewinds"] == 1 and result.counts["bad_frames"] >= 1


def test_damaged_status_is_asked_for_at_once():
    """A STATUS with a bad CRC makes the host send END again (which asks for the STATUS)."""
    data = b"the status, again"
    ends = []

    def reply(kind, payload):
        if kind == HostFrame.END:
            ends.append(payload)
            return board_status(data, data) if len(ends) > 1 else \
                board_data(data, 0) + board_status(data, data)[:-1] + b"\x00"
        return b""
    scripted_run(reply, data)
    assert len(ends) == 2


def test_time_the_host_did_not_look_is_no_timeout():
    """A host that did not run for longer than its timeout (preempted on a loaded machine; a
    virtual board stands still meanwhile, so its answers come only later) does not take that
    time for the board's silence: no probe, which used to send a whole frame again."""
    data = b"the host was away"

    class Away(ScriptedBoard):
        step = 0

        def write(self, frame):
            super().write(frame)
            if self.seen[-1][0] == HostFrame.END and self.step == 0:
                time.sleep(0.5)                 # longer than the host's timeout, 0.2 s
                self.step = 1

        def read(self, size):
            if self.step == 1:                  # the host's first look after it finds nothing
                self.step = 2
                return b""
            if self.step == 2:
                self.pending += board_data(data, 0) + board_status(data, data)
                self.step = 3
            return super().read(size)

    port = Away(lambda kind, payload: b"")
    result = Link(port, timeout=3.0, retransmit_after=0.2).run(Mode.TRANSCODE, data)
    assert result.output == data and result.counts["timeouts"] == 0
    assert [kind for kind, _ in port.seen].count(HostFrame.END) == 1


def test_host_sends_again_only_the_gap():
    """Selective repeat, the host's side: the third DATA frame is lost; the board keeps the
    frames after it and its ERRORs say the range it holds past its count: the host sends the
    lost frame again, no more (go-back-N sent the 4 frames after it again too), and no frame
    after it, and ignores the ERRORs of the frames it had sent before (their epoch)."""
    data = bytes(range(0x20, 0x7F)) * 16                            # 1520 bytes, 6 frames
    board = SimpleNamespace(count=0, held=None, frames=0)

    def error(epoch):
        held = board.held or (board.count, board.count)
        return encode_frame(BoardFrame.ERROR, struct.pack("<BBIHH", ErrorCode.SEQUENCE, epoch,
                            board.count, *held))

    def reply(kind, payload):
        if kind == HostFrame.DATA:
            position = struct.unpack("<I", payload[:4])[0]
            offset, epoch, size = position & OFFSET_MASK, position >> 24, len(payload) - 4
            board.frames += 1
            if board.frames == 3:
                return b""                                          # lost on the line
            if offset == board.count:
                board.count += size
                if board.held and board.count == board.held[0]:
                    board.count, board.held = board.held[1], None
            elif offset > board.count:
                assert board.held is None or offset == board.held[1]
                board.held = (board.held[0] if board.held else offset, offset + size)
                return error(epoch)
        elif kind == HostFrame.WINDOW:
            return encode_frame(BoardFrame.CREDIT, struct.pack("<II", 1 << 15, board.count))
        elif kind == HostFrame.END and board.count == len(data):
            return b"".join(board_data(data[:offset + 256], offset)
                            for offset in range(0, len(data), 256)) + board_status(data, data)
        return b""
    result, seen = scripted_run(reply, data)
    offsets = [struct.unpack("<I", payload[:4])[0] for kind, payload in seen
               if kind == HostFrame.DATA]
    assert offsets == [0, 256, 512, 768, 1024, 1280, 512 | 1 << 24]
    assert (result.counts["go_backs"], result.counts["bytes_resent"]) == (1, 256)


class ClockedBoard(ScriptedBoard):
    """A :class:`ScriptedBoard` on a simulated clock (``now``, seconds): a look at an empty line
    takes 1/128 s of it, nothing else does, so a run's timing is the same every time."""
    def __init__(self, reply):
        super().__init__(reply)
        self.now = 0.0

    def read(self, size):
        if not self.pending:
            self.now += 1 / 128
        return super().read(size) if self.pending else b""


def test_gap_seen_after_a_backed_off_timeout_is_asked_for(monkeypatch):
    """The liveness hole of a cold CI run (transcode, 1e-3 bit flips, seed 5: "no progress for
    60 s in spite of 8 retransmissions"): the host has sent everything, an output frame is
    damaged and so is the output the board sends again. The host asked for it (REWIND) once;
    its timeouts probed with END and a WINDOW, whose STATUS showed the gap, but the host took
    it for the gap it had asked for unless a *backed-off* timeout had passed since (its probes
    doubled the wait each time), so the board, all sent, and the host both waited: here it
    asks again every 16 s, each answer is damaged, and it gives up after 40 s ("no progress for
    40 s in spite of 10 retransmissions (sent 380 of 380 bytes, received 256)"). Now a timeout
    asks for the
    output again itself, and a gap is news after one round trip's timeout. (A simulated clock:
    the same every run; the scripted board damages the output it sends again three times.)"""
    data = bytes(range(0x20, 0x7F)) * 4                     # 380 bytes: two output frames
    rewinds = []

    def reply(kind, payload):
        if kind == HostFrame.END:
            return board_status(data, data) if port.seen[:-1].count(port.seen[-1]) else \
                board_data(data[:256], 0) + board_data(data, 256, damaged=True)
        if kind == HostFrame.WINDOW and payload[4] & REWIND:
            rewinds.append(payload)
            acked = struct.unpack("<I", payload[:4])[0]
            damaged = len(rewinds) <= 3                     # the output sent again is hit too
            return board_data(data, acked, payload[5], damaged=damaged) + \
                (b"" if damaged else board_status(data, data))
        return b""

    port = ClockedBoard(reply)
    monkeypatch.setattr(host, "time", SimpleNamespace(monotonic=lambda: port.now))
    result = Link(port, timeout=40.0, retransmit_after=0.125).run(Mode.TRANSCODE, data)
    assert result.output == data
    # (4 timeouts: the first after END probes without REWIND, since output may still flow.)
    assert result.counts["timeouts"] == 4 and port.now < 2.0


class LineBoard(ScriptedBoard):
    """A :class:`ScriptedBoard` behind a line, on a simulated clock (``now``, seconds): the
    host's frames reach the board one after the other, ``byte_s`` seconds a byte; each answer
    reaches the host ``latency`` seconds after the frame it answers, plus its own bytes'
    time. A look at an empty line waits for the next arrival (at most 100 us). ``idle``: the
    time the line to the board carried nothing between the first DATA frame and END."""
    def __init__(self, reply, byte_s, latency):
        super().__init__(reply)
        self.byte_s, self.latency = byte_s, latency
        self.now = self.line_free = self.idle = 0.0
        self.on_line, self.answers = [], []     # (arrival, frame), (arrival, bytes)
        self.counting = False

    def write(self, data):
        for kind, payload in self.parser.feed(data):
            if self.counting and self.now > self.line_free:
                self.idle += self.now - self.line_free
            if kind == HostFrame.DATA:
                self.counting = True
            if kind == HostFrame.END:
                self.counting = False
            self.line_free = max(self.now, self.line_free) + \
                (OVERHEAD + len(payload)) * self.byte_s
            self.on_line.append((self.line_free, kind, payload))

    def read(self, size):
        if not self.pending:
            events = [at for at, *_ in self.on_line] + [at for at, _ in self.answers]
            self.now = max(self.now, min([self.now + 1e-4, *events]))
        while self.on_line and self.on_line[0][0] <= self.now:
            at, kind, payload = self.on_line.pop(0)
            self.seen.append((kind, payload))
            answer = self.answer(kind, payload)
            if answer:
                self.answers.append((at + self.latency + len(answer) * self.byte_s, answer))
        while self.answers and self.answers[0][0] <= self.now:
            self.pending += self.answers.pop(0)[1]
        chunk = bytes(self.pending[:size])
        del self.pending[:size]
        return chunk


def selective_repeat_board(data, lose=()):
    """``reply`` of a board that keeps the frames past a gap, as the gateware does (the count,
    one range past it, an ERROR with both for each frame out of order), for a ``validate``
    message of ``data``; the DATA frames numbered in ``lose`` (0-based, in the order they
    arrive) are lost on the line."""
    board = SimpleNamespace(count=0, held=None, frames=0)

    def error(code, epoch):
        held = board.held or (board.count, board.count)
        return encode_frame(BoardFrame.ERROR, struct.pack("<BBIHH", code, epoch, board.count,
                                                          *(value & 0xFFFF for value in held)))

    def credit():
        return encode_frame(BoardFrame.CREDIT, struct.pack("<II", 1 << 15, board.count))

    def reply(kind, payload):
        if kind == HostFrame.DATA:
            position = struct.unpack("<I", payload[:4])[0]
            offset, epoch, size = position & OFFSET_MASK, position >> 24, len(payload) - 4
            board.frames += 1
            if board.frames - 1 in lose:
                return b""
            if offset < board.count:
                return credit()                                     # a repeat: dropped
            if offset == board.count:
                board.count += size
                if board.held and board.count >= board.held[0]:
                    board.count, board.held = max(board.count, board.held[1]), None
                return b""
            if board.held is None or offset == board.held[1]:
                board.held = (board.held[0] if board.held else offset, offset + size)
            return error(ErrorCode.SEQUENCE, epoch)
        if kind == HostFrame.WINDOW:
            return credit()
        if kind == HostFrame.END:
            if board.count == len(data):
                return board_status(data, b"")
            return error(ErrorCode.SEQUENCE, payload[3])
        return b""
    return reply, board


def line_run(monkeypatch, data, byte_s, latency, lose=()):
    reply, board = selective_repeat_board(data, lose)
    port = LineBoard(reply, byte_s, latency)
    monkeypatch.setattr(host, "time", SimpleNamespace(monotonic=lambda: port.now))
    result = Link(port, timeout=10.0, retransmit_after=1.0, frame=256).run(Mode.VALIDATE, data)
    assert result.output == b"" and board.count == len(data)
    return result, port


def test_line_to_the_board_stays_busy_while_a_gap_waits(monkeypatch):
    """Selective repeat keeps the line to the board busy after a loss: the frames the board
    holds past the gap (its ERRORs' range) are not in flight, so the host goes on sending while
    the gap's frame waits behind the frames in flight. (Counted in flight, they stopped the host
    until the count that joined the range came back: at 3 Mbaud with a USB-UART's 2 ms round
    trip, the line idle 1.16 ms for one loss in 16 KiB, 1.7 % of the message.)"""
    data = bytes(range(0x20, 0x7F)) * 172                   # 16340 bytes, 64 frames
    result, port = line_run(monkeypatch, data, 10 / 3e6, USB_ROUND_TRIP_S, lose={20})
    counts = result.counts
    assert (counts["go_backs"], counts["bytes_resent"], counts["timeouts"]) == (1, 256, 0)
    assert port.idle < 0.1e-3, port.idle


def test_first_round_trip_is_measured_behind_half_the_input_in_flight(monkeypatch):
    """The host's first request for the count goes behind half its input in flight, as every
    later one, not behind the first frame: that round trip was a fraction of the later ones, and
    the timeout sized from it (three times it) fired in 4 of 5 ``validate`` messages at 1e-4
    faults per byte on the virtual board (whose speed, against the host's clock, varies with
    the machine's load), each a needless probe and WINDOW. (A line 65 times slower than
    3 Mbaud, the virtual board's pace, without USB latency: the round trip is all line time.)"""
    data = bytes(range(0x20, 0x7F)) * 172
    result, port = line_run(monkeypatch, data, 65 * 10 / 3e6, 0.0)
    assert result.counts["timeouts"] == 0 and port.idle < 1e-3
    kinds = [kind for kind, _ in port.seen if kind in (HostFrame.DATA, HostFrame.WINDOW)]
    # 1792 bytes in flight (inflight_for 3 Mbaud and 256-byte frames): a request every 3 frames
    assert kinds[:8] == [HostFrame.DATA] * 3 + [HostFrame.WINDOW] + \
        [HostFrame.DATA] * 3 + [HostFrame.WINDOW]


def test_output_frames_are_not_acknowledged_one_by_one():
    """Output is acknowledged with the polls for the input's count and every eighth of the
    window, not after each (short) DATA frame: a WINDOW costs 12 bytes of the line to the
    board, which in ``encode`` carries the most."""
    data = bytes(range(0x20, 0x7F)) * 2

    def reply(kind, payload):
        if kind == HostFrame.END:
            return b"".join(board_data(data[:end], start)
                            for start, end in zip(range(0, 190, 19), range(19, 191, 19))) + \
                board_status(data, data)
        if kind == HostFrame.WINDOW:
            return encode_frame(BoardFrame.CREDIT, struct.pack("<II", 1 << 15, len(data)))
        return b""
    _, seen = scripted_run(reply, data)
    assert sum(kind == HostFrame.WINDOW for kind, _ in seen) <= 1


# -- gateware framer -----------------------------------------------------------------------------

DIVISOR = 4


def make_core(**kwargs):
    options = dict(clk_freq=4_000_000, baud=1_000_000, in_depth=1024, out_depth=1024,
                   max_payload=64, credit_step=64, frame_timeout=0.0005,
                   decoder=AsciiDecoder)
    options.update(kwargs)
    return BoardCore(**options)


def run_board(host_bytes, *, extra_cycles=3000, core=None, gap_after=None):
    """Bit-bang ``host_bytes`` into a BoardCore; returns the frames it sent back.

    ``gap_after``: {byte index: idle cycles} inserted after that byte."""
    dut = core or make_core()
    out = bytearray()
    gap_after = gap_after or {}

    async def host_tx(ctx):
        ctx.set(dut.rx, 1)
        await ctx.tick().repeat(20)
        for index, byte in enumerate(host_bytes):
            for bit in [0] + [(byte >> i) & 1 for i in range(8)] + [1]:
                ctx.set(dut.rx, bit)
                await ctx.tick().repeat(DIVISOR)
            if index in gap_after:
                await ctx.tick().repeat(gap_after[index])
        await ctx.tick().repeat(extra_cycles)

    async def host_rx(ctx):
        state, timer, bit, value = "idle", 0, 0, 0
        async for _, _, line in ctx.tick().sample(dut.tx):
            if state == "idle":
                if not line:
                    state, timer = "start", DIVISOR // 2
            else:
                timer -= 1
                if timer:
                    continue
                timer = DIVISOR
                if state == "start":
                    state, bit, value = "data", 0, 0
                elif state == "data":
                    value |= line << bit
                    bit += 1
                    if bit == 8:
                        state = "stop"
                else:
                    assert line, "framing error on the board's tx"
                    out.append(value)
                    state = "idle"

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(host_tx)
    sim.add_testbench(host_rx, background=True)
    run_simulation(sim, "board-protocol")
    frames = FrameParser().feed(bytes(out))
    assert all(kind is not None for kind, _ in frames), frames
    return frames


def start(mode, window=1 << 20, frame=0):
    return start_frame(mode, window, frame)


def message(mode, data, chunk=64):
    frames = [start(mode)]
    for index in range(0, len(data), chunk):
        frames.append(data_frame(data[index:index + chunk], index))
    frames.append(end_frame(len(data)))
    return b"".join(frames)


def errors_in(frames):
    return [(ErrorCode(payload[0]), struct.unpack("<I", payload[2:6])[0])
            for kind, payload in frames if kind == BoardFrame.ERROR]


def ranges_in(frames):
    """The ranges the ERRORs say the board holds past its count: (have_from, have_to)."""
    return [struct.unpack("<HH", payload[6:]) for kind, payload in frames
            if kind == BoardFrame.ERROR]


def output_of(frames):
    """The output bytes of the DATA frames (each at its offset: a frame sent again overwrites
    the same bytes)."""
    out = bytearray()
    for kind, payload in frames:
        if kind == BoardFrame.DATA:
            offset = struct.unpack("<I", payload[:4])[0] & OFFSET_MASK
            assert offset <= len(out)
            out[offset:offset + len(payload) - 4] = payload[4:]
    return bytes(out)


def test_hello():
    frames = run_board(encode_frame(HostFrame.HELLO), extra_cycles=1500)
    assert [kind for kind, _ in frames] == [BoardFrame.HELLO_ACK]
    hello = Hello(frames[0][1])
    assert (hello.version, hello.max_payload, hello.clock_hz, hello.baud, hello.in_capacity,
            hello.out_capacity) == (VERSION, 64, 4_000_000, 1_000_000, 1024, 1024)


def test_message_transcode_and_decode():
    data = b"Hello, board!\n\xffok" * 4
    first = encode_frame(HostFrame.HELLO) + message(Mode.TRANSCODE, data)
    host = first + message(Mode.DECODE, data[:20])
    # The next START waits for the first STATUS (a START during a message is refused).
    frames = run_board(host, extra_cycles=10000, gap_after={len(first) - 1: 12000})
    kinds = [kind for kind, _ in frames]
    assert kinds.count(BoardFrame.STATUS) == 2
    first = kinds.index(BoardFrame.STATUS)
    out1, out2 = output_of(frames[:first]), output_of(frames[first:])
    assert out1 == data.replace(b"\xff", b"\xef\xbf\xbd")
    assert out2 == b"".join(struct.pack("<I", 0xFFFD | ErrorKind.INVALID_BYTE.value << 24
                                        if b >= 0x80 else b) for b in data[:20])
    status = Status(frames[first][1])
    assert (status.mode, status.bytes_in, status.bytes_out, status.codepoints,
            status.invalid_byte) == (Mode.TRANSCODE, len(data), len(out1), len(data), 4)
    assert status.rx_first < status.rx_last and status.tx_first < status.tx_status
    # Credits: never more than the input buffer, nor a quarter of the output buffer (x4 modes);
    # the acknowledgement follows the data.
    credits = [struct.unpack("<II", p) for k, p in frames[:first] if k == BoardFrame.CREDIT]
    assert credits and credits[0] == ((1024 - 64) // 4, 0)
    assert all(received <= len(data) for _, received in credits)


def test_empty_message_and_encode():
    units = struct.pack("<4I", 0x41, 0xD800, 0x110000, 0x1F600) + b"\x42"
    first = message(Mode.VALIDATE, b"")
    host = first + message(Mode.ENCODE, units)
    frames = run_board(host, extra_cycles=6000, gap_after={len(first) - 1: 4000})
    statuses = [Status(p) for k, p in frames if k == BoardFrame.STATUS]
    assert len(statuses) == 2
    assert (statuses[0].bytes_in, statuses[0].codepoints) == (0, 0)
    assert output_of(frames) == b"A" + b"\xef\xbf\xbd" * 2 + "\U0001F600".encode() + b"\xef\xbf\xbd"
    s = statuses[1]
    assert (s.codepoints, s.surrogate, s.too_large, s.truncated) == (5, 1, 1, 1)


@pytest.mark.parametrize("ask", [False, True])
def test_data_frame_asks_for_the_count(ask):
    """A DATA frame taken in order with the ASK bit in its epoch owes a CREDIT with the count,
    as a WINDOW after it would (the host's request for the count, 12 bytes fewer on its line);
    without it, back-to-back frames get none (the board announces a grown credit every
    ``credit_step``, here more than the message). A frame kept past a gap gets its ERROR, not
    a CREDIT."""
    data = bytes(range(0x20, 0x60))                               # 64 ASCII bytes
    host = (start(Mode.VALIDATE) + data_frame(data[:16], 0, ask=ask) +
            data_frame(data[48:], 48, ask=ask) + data_frame(data[16:32], 16, ask=ask) +
            data_frame(data[32:48], 32))
    frames = run_board(host, core=make_core(credit_step=512), extra_cycles=600)
    counts = [struct.unpack("<II", payload)[1] for kind, payload in frames
              if kind == BoardFrame.CREDIT]
    assert errors_in(frames) == [(ErrorCode.SEQUENCE, 16)]
    assert counts == ([0, 16, 32] if ask else [0])                # the first: START's


def test_corrupted_frame_is_rejected_and_sent_again():
    """A corrupted frame gets an ERROR with the count received (0) and is forgotten, an END
    before all data is refused, and the message goes on when the frame comes again."""
    data = b"abcdefgh" * 4
    good = data_frame(data, 0)
    bad = bytearray(good)
    bad[10] ^= 0x04
    first = start(Mode.TRANSCODE) + bytes(bad) + end_frame(len(data)) + good + end_frame(len(data))
    host = first + encode_frame(HostFrame.HELLO) + message(Mode.TRANSCODE, b"again")
    frames = run_board(host, extra_cycles=5000, gap_after={len(first) - 1: 9000})
    assert errors_in(frames) == [(ErrorCode.CRC, 0), (ErrorCode.SEQUENCE, 0)]
    kinds = [kind for kind, _ in frames]
    statuses = [Status(p) for k, p in frames if k == BoardFrame.STATUS]
    assert [s.bytes_in for s in statuses] == [len(data), 5]
    assert BoardFrame.HELLO_ACK in kinds
    hello = kinds.index(BoardFrame.HELLO_ACK)
    assert output_of(frames[:hello]) == data and output_of(frames[hello:]) == b"again"


def test_frames_out_of_order_and_repeated():
    """DATA frames must come in order: a gap is refused (SEQUENCE with the count received), a
    repeat is dropped quietly (no ERROR, whose count the host would take for a gap), the input
    stays as it was."""
    data = bytes(range(0x20, 0x70))                               # 80 ASCII bytes
    host = (start(Mode.TRANSCODE) + data_frame(data[:40], 0) + data_frame(data[60:], 60) +
            data_frame(data[:40], 0) + data_frame(data[40:60], 40) + data_frame(data[60:], 60) +
            end_frame(len(data)))
    frames = run_board(host, extra_cycles=8000)
    assert errors_in(frames) == [(ErrorCode.SEQUENCE, 40)]
    assert output_of(frames) == data
    assert [Status(p).bytes_in for k, p in frames if k == BoardFrame.STATUS] == [80]


def test_frames_after_a_gap_are_kept():
    """Selective repeat: the frames after a gap are kept (one range, each frame at its end
    extends it; each answered by a SEQUENCE ERROR with the count and the range), and the frame
    that fills the gap joins them to the count: the END that follows it is taken without the
    frames after the gap sent again (go-back-N refused them: the END got a SEQUENCE ERROR and
    the output stopped at 40 bytes). A frame past the range (not at its end) is refused and
    not written; a frame that would run into the range is refused too."""
    data = bytes(range(0x20, 0x78))                               # 88 ASCII bytes
    sent = [start(Mode.TRANSCODE), data_frame(data[:40], 0), data_frame(data[60:70], 60),
            data_frame(b"!" * 8, 80),                             # not at the range's end
            data_frame(data[70:80], 70),
            data_frame(b"?" * 24, 40),                            # at the count, into the range
            data_frame(data[40:60], 40), data_frame(data[80:], 80), end_frame(len(data))]
    # (a pause after each frame: time for its ERROR, which would otherwise carry the next's)
    ends = [sum(map(len, sent[:n + 1])) - 1 for n in range(len(sent))]
    frames = run_board(b"".join(sent), extra_cycles=8000, gap_after=dict.fromkeys(ends, 800))
    assert errors_in(frames) == [(ErrorCode.SEQUENCE, 40)] * 4
    assert ranges_in(frames) == [(60, 70), (60, 70), (60, 80), (60, 80)]
    assert output_of(frames) == data
    assert [Status(p).bytes_in for k, p in frames if k == BoardFrame.STATUS] == [88]


def test_rewind_sends_the_output_again_and_end_asks_for_the_status_again():
    data = b"0123456789" * 5
    first = message(Mode.TRANSCODE, data)
    again = window_frame(20, rewind=True, epoch=3) + end_frame(len(data))
    frames = run_board(first + again, gap_after={len(first) - 1: 6000}, extra_cycles=8000)
    statuses = [index for index, (kind, _) in enumerate(frames) if kind == BoardFrame.STATUS]
    assert len(statuses) == 2
    resent = [struct.unpack("<I", payload[:4])[0] for kind, payload in frames[statuses[0]:]
              if kind == BoardFrame.DATA]
    assert resent and resent[0] == 20 | 3 << 24        # from the acknowledgement on, epoch 3
    assert output_of(frames) == output_of(frames[:statuses[0]]) == data


def test_protocol_errors():
    unknown = bytes([SYNC, 0x33, 0, 0]) + crc16(bytes([0x33, 0, 0])).to_bytes(2, "big")
    bad_length = bytes([SYNC, HostFrame.END, 3, 0, 1, 2, 3, 0, 0])
    host = (b"\x00\x17" + unknown + bad_length +
            data_frame(b"x", 0) +                                       # no message
            start(Mode.DECODE, window=0) + start(Mode.DECODE) +         # busy
            b"".join(data_frame(b"y" * 64, 64 * n) for n in range(4)))  # credit (1024 - 64) / 4
    # (a pause after the bad length: its ERROR (16 bytes) waits behind the first one)
    frames = run_board(host, extra_cycles=3000,
                       gap_after={2 + len(unknown) + len(bad_length) - 1: 400})
    codes = [code for code, _ in errors_in(frames)]
    assert codes[:5] == [ErrorCode.UNKNOWN_TYPE, ErrorCode.BAD_LENGTH, ErrorCode.NO_MESSAGE,
                         ErrorCode.BUSY, ErrorCode.OVERRUN]


def test_lengths_table_matches_the_gateware():
    # The host-side table documents what the gateware accepts.
    assert HOST_LENGTHS[HostFrame.START] == (7, 7)
    assert HOST_LENGTHS[HostFrame.WINDOW] == (6, 6)
    assert HOST_LENGTHS[HostFrame.DATA] == (5, 4100)


def test_incomplete_frame_times_out():
    frame = data_frame(b"z" * 40, 0)
    host = start(Mode.TRANSCODE) + frame[:20]
    frames = run_board(host, extra_cycles=4000)
    assert errors_in(frames) == [(ErrorCode.TIMEOUT, 0)]


def test_frame_paused_under_the_timeout_is_kept():
    """A frame whose bytes pause for a little less than the frame timeout (2000 cycles here) is
    taken whole: a stall of the line shorter than the board's timeout costs only its time (one
    longer is dropped: ``test_incomplete_frame_times_out``)."""
    data = b"p" * 8
    host = start(Mode.TRANSCODE) + data_frame(data, 0) + end_frame(len(data))
    frames = run_board(host, gap_after={len(start(Mode.TRANSCODE)) + 5: 1800},
                       extra_cycles=1500)
    assert errors_in(frames) == [] and output_of(frames) == data


def test_host_window_limits_output():
    data = b"w" * 100
    host = (start(Mode.TRANSCODE, window=30) + data_frame(data[:64], 0) +
            data_frame(data[64:], 64) + end_frame(len(data)))
    # The WINDOW frame comes late (after a pause): nothing beyond 30 bytes may come before it.
    window = window_frame(70)
    frames = run_board(host + window, gap_after={len(host) - 1: 2000}, extra_cycles=9000)
    out = [p for k, p in frames if k == BoardFrame.DATA]
    assert len(out[0]) - 4 <= 30 and output_of(frames) == data
    assert sum(1 for k, _ in frames if k == BoardFrame.STATUS) == 1


def test_parameter_checks():
    with pytest.raises(ValueError, match="power of 2"):
        make_core(in_depth=1000)
    with pytest.raises(ValueError, match="max_payload"):
        make_core(max_payload=4096)
    with pytest.raises(ValueError, match="off by"):
        make_core(baud=900_000)


def test_polls_for_the_count_go_between_the_frames_in_flight():
    """The host asks for the board's count every half of its input in flight, between the
    frames: the answer comes while the other half keeps the line busy (a poll after all of it
    would let the line run dry for a round trip each time)."""
    data = bytes(range(0x20, 0x60)) * 40                                # 2560 bytes
    received = [0]

    def reply(kind, payload):
        if kind == HostFrame.DATA:
            received[0] += len(payload) - 4
        elif kind == HostFrame.WINDOW:
            return encode_frame(BoardFrame.CREDIT, struct.pack("<II", 1 << 15, received[0]))
        elif kind == HostFrame.END:
            return b"".join(board_data(data[:offset + 256], offset)
                            for offset in range(0, len(data), 256)) + board_status(data, data)
        return b""
    port = ScriptedBoard(reply)
    result = Link(port, timeout=3.0, frame=256, inflight=1024).run(Mode.TRANSCODE, data)
    assert result.output == data
    runs = "".join("D" if kind == HostFrame.DATA else "W" if kind == HostFrame.WINDOW else " "
                   for kind, _ in port.seen).split("W")
    assert max(len(run.strip()) for run in runs) == 2, runs


def test_polls_for_the_count_ride_on_the_data_frames():
    """With a board of protocol version 2 and no output to acknowledge, the host's request for
    the count is the ASK bit of a DATA frame's epoch, not a WINDOW (12 bytes on the line to the
    board, 18 of them in a 16 KiB ``validate`` message in 256-byte frames): every second frame
    asks (half the input in flight), and no WINDOW goes out before END."""
    data = bytes(range(0x20, 0x60)) * 40                                # 2560 bytes
    received = [0]

    def reply(kind, payload):
        if kind == HostFrame.DATA:
            received[0] += len(payload) - 4
            if payload[3] & ASK:
                return encode_frame(BoardFrame.CREDIT, struct.pack("<II", 1 << 15, received[0]))
        elif kind == HostFrame.WINDOW:
            return encode_frame(BoardFrame.CREDIT, struct.pack("<II", 1 << 15, received[0]))
        elif kind == HostFrame.END:
            return b"".join(board_data(data[:offset + 256], offset)
                            for offset in range(0, len(data), 256)) + board_status(data, data)
        return b""
    port = ScriptedBoard(reply, version=2)
    result = Link(port, timeout=3.0, frame=256, inflight=1024).run(Mode.TRANSCODE, data)
    assert result.output == data
    kinds = [kind for kind, _ in port.seen]
    assert HostFrame.WINDOW not in kinds[:kinds.index(HostFrame.END)]
    asks = [bool(payload[3] & ASK) for kind, payload in port.seen if kind == HostFrame.DATA]
    assert asks == [False, True] * 5, asks
