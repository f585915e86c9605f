"""The board's components, each on its own in Amaranth's simulator (the whole board is tested in
test_board_protocol.py and, compiled, in test_board_virtual.py)."""

import random
import struct

import pytest
from amaranth.sim import Simulator

from utf8_gateware.sim.testbench import run_simulation, run_stream, stream_get, stream_put
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.layouts import ByteLayout
from utf8_gateware.boards.control import MessageControl
from utf8_gateware.boards.credit import OUT_SLACK, CreditWindow
from utf8_gateware.boards.datapath import Datapath
from utf8_gateware.boards.feeder import MessageFeeder
from utf8_gateware.boards.frame_rx import FrameReceiver
from utf8_gateware.boards.frame_tx import FrameTransmitter
from utf8_gateware.boards.host import expected_output
from utf8_gateware.boards.leds import LEDStretcher
from utf8_gateware.boards.protocol import (
    BoardFrame, CREDIT_SHIFT, EXPANSION, ErrorCode, FrameParser, HostFrame, Mode, STATUS_FIELDS,
    STAMP_FIELDS, STATUS_LAYOUT, STATUS_SIZE, SYNC, Status, REWIND, MAX_WINDOW,
    decode_word, host_lengths, data_frame, start_frame)
from utf8_gateware.boards import buffer, replay_buffer
from utf8_gateware.boards.buffer import RingBuffer
from utf8_gateware.boards.replay_buffer import ReplayBuffer
from utf8_gateware.boards.replies import ReplyFields
from utf8_gateware.boards.stamps import MessageStamps
from utf8_gateware.boards.stream_fifo import StreamFIFO

from standins import AsciiDecoder, ClobberingRAM


def simulate(dut, *testbenches, name, background=()):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    for testbench in testbenches:
        sim.add_testbench(testbench)
    for testbench in background:
        sim.add_testbench(testbench, background=True)
    run_simulation(sim, name)


# -- frame receiver ------------------------------------------------------------------------------

MAX_PAYLOAD = 64


def receiver(**kwargs):
    options = dict(max_payload=MAX_PAYLOAD, frame_timeout=400, starve_time=100)
    options.update(kwargs)
    return FrameReceiver(**options)


class ReceiverLog:
    """Collects a receiver's outputs cycle by cycle."""
    def __init__(self, dut):
        self.dut = dut
        self.errors = []
        self.done = []
        self.payload = bytearray()
        self.data_begin = 0
        self.offsets = 0
        self.cycle = 0

    async def watch(self, ctx):
        dut = self.dut
        ctx.set(dut.o.ready, 1)
        frames = dut.frames
        async for _, _, error, done, frame, valid, byte, begin, offset in ctx.tick().sample(
                frames.error, frames.done, frames.frame, dut.o.valid, dut.o.payload,
                dut.data_begin, frames.offset):
            self.offsets += offset
            if error.valid:
                self.errors.append(ErrorCode(error.code))
            if done:
                self.done.append((HostFrame(frame.kind), frame.length, frame.fields))
            if valid:
                self.payload.append(byte)
            self.data_begin += begin
            self.cycle += 1


async def send_bytes(ctx, dut, data, gap=3):
    for byte in data:
        ctx.set(dut.i.valid, 1)
        ctx.set(dut.i.payload, byte)
        await ctx.tick()
        ctx.set(dut.i.valid, 0)
        await ctx.tick().repeat(gap)


def test_receiver_length_table_read_back():
    """The lengths the gateware accepts per frame type are exactly :func:`host_lengths`: every
    known type probed at 0..8, 0xFFFF and each boundary of the table +-1; each of the other
    types at three lengths."""
    table = host_lengths(MAX_PAYLOAD)
    bounds = {value + delta for low, high in table.values() for value in (low, high)
              for delta in (-1, 0, 1)}
    probes = sorted({length for length in bounds | set(range(9)) | {0xFFFF}
                     if 0 <= length <= 0xFFFF})
    dut = receiver()
    seen = {}

    async def bench(ctx):
        ctx.set(dut.accept_data, 1)
        ctx.set(dut.data_room, 1 << 20)
        for kind in range(256):
            for length in (probes if kind in table else (0, 5, 0xFFFF)):
                errors = []
                await send_bytes(ctx, dut, [SYNC, kind, length & 0xFF, length >> 8], gap=1)
                for _ in range(5):
                    _, _, error = await ctx.tick().sample(dut.frames.error)
                    if error.valid:
                        errors.append(ErrorCode(error.code))
                if not errors:
                    # Accepted: end the frame with a framing error.
                    ctx.set(dut.framing_error, 1)
                    await ctx.tick()
                    ctx.set(dut.framing_error, 0)
                    await ctx.tick().repeat(2)
                seen[kind, length] = errors

    simulate(dut, bench, name="receiver-lengths")
    for (kind, length), errors in seen.items():
        if kind not in table:
            assert errors == [ErrorCode.UNKNOWN_TYPE], (kind, length)
        else:
            low, high = table[kind]
            want = [] if low <= length <= high else [ErrorCode.BAD_LENGTH]
            assert errors == want, (HostFrame(kind), length)


def test_receiver_frames_payload_and_errors():
    """DATA frames: their data goes to ``o`` (not their offset, which ends up in ``fields``),
    the length reported is the data's; a bad CRC, a frame beyond the room (received whole, so
    that the next frame is found) and a stalled frame are refused."""
    dut = receiver()
    log = ReceiverLog(dut)
    start = start_frame(Mode.DECODE, 1234, 99)
    data = data_frame(b"hello", 0x123456, 0x78)
    bad = bytearray(data_frame(b"world", 5))
    bad[6] ^= 0x20
    too_long = data_frame(b"x" * 20, 10)

    async def bench(ctx):
        ctx.set(dut.accept_data, 1)
        ctx.set(dut.place, 1)
        ctx.set(dut.data_room, 16)
        await send_bytes(ctx, dut, start + data)
        await ctx.tick().repeat(5)
        await send_bytes(ctx, dut, bytes(bad))
        await ctx.tick().repeat(5)
        await send_bytes(ctx, dut, too_long + data)   # 24 > 16: refused at its end
        await ctx.tick().repeat(5)
        await send_bytes(ctx, dut, data[:6])          # stalls: times out
        await ctx.tick().repeat(450)

    simulate(dut, bench, name="receiver-frames", background=[log.watch])
    # (a DATA frame's offset, its first four bytes, is in the top four bytes of the fields)
    assert [(kind, length, fields >> 24 if kind == HostFrame.DATA else fields)
            for kind, length, fields in log.done] == [
        (HostFrame.START, 7, Mode.DECODE | 1234 << 8 | 99 << 40),
        (HostFrame.DATA, 5, 0x78123456), (HostFrame.DATA, 5, 0x78123456)]
    assert log.errors == [ErrorCode.CRC, ErrorCode.OVERRUN, ErrorCode.TIMEOUT]
    assert log.offsets == 4                     # each DATA frame's offset arrived
    # Data bytes go out before the CRC is known (the user rolls them back on an error).
    assert bytes(log.payload) == b"hello" + bytes(bad[8:13]) + b"hello"
    assert log.data_begin == 4


@pytest.mark.parametrize("accept, place", [(0, 1), (1, 0)])
def test_receiver_keeps_payload_when_not_accepting(accept, place):
    """Without a message, or with the user's verdict on the offset against the frame (it
    would write over data held past a gap, say), the data go nowhere."""
    dut = receiver()
    log = ReceiverLog(dut)

    async def bench(ctx):
        ctx.set(dut.accept_data, accept)
        ctx.set(dut.place, place)
        ctx.set(dut.data_room, 16)
        await send_bytes(ctx, dut, data_frame(b"abc", 0))
        await ctx.tick().repeat(5)

    simulate(dut, bench, name="receiver-not-accepting", background=[log.watch])
    assert [kind for kind, *_ in log.done] == [HostFrame.DATA]
    assert log.payload == b"" and log.data_begin == accept


def test_receiver_line_idle_and_framing_outside_a_frame():
    dut = receiver(starve_time=50)
    idle = []
    log = ReceiverLog(dut)

    async def bench(ctx):
        await ctx.tick().repeat(60)
        idle.append(ctx.get(dut.frames.line_idle))
        await send_bytes(ctx, dut, [0x00])
        idle.append(ctx.get(dut.frames.line_idle))
        ctx.set(dut.framing_error, 1)
        await ctx.tick()
        ctx.set(dut.framing_error, 0)
        await ctx.tick().repeat(3)

    simulate(dut, bench, name="receiver-idle", background=[log.watch])
    assert idle == [1, 0]
    assert log.errors == [ErrorCode.FRAMING]


def test_receiver_parameter_checks():
    with pytest.raises(ValueError, match="max_payload"):
        receiver(max_payload=0)
    with pytest.raises(ValueError, match="frame_timeout"):
        receiver(frame_timeout=1.5)


# -- frame transmitter and reply fields ----------------------------------------------------------

def transmit(headers, data=b"", abort_at=None):
    """Send ``headers`` [(kind, length)] through a FrameTransmitter into a sink that takes a
    byte every 10 cycles (like a UART); fields are ``index ^ 0x5A`` through three registers,
    DATA payload from ``data``; ``abort`` pulses when ``abort_at`` bytes are out. Returns the
    bytes sent and the count of ``sent`` pulses."""
    dut = FrameTransmitter()
    out = bytearray()
    sent = []

    async def fields(ctx):
        pipe = [0, 0, 0]
        async for _, _, index in ctx.tick().sample(dut.fields.index):
            pipe = [(index ^ 0x5A) & 0xFF] + pipe[:2]
            ctx.set(dut.fields.byte, pipe[2])

    async def source(ctx):
        for byte in data:
            await stream_put(ctx, dut.data, byte)

    async def sink(ctx):
        while True:
            out.append(await stream_get(ctx, dut.o))
            await ctx.tick().repeat(9)

    async def bench(ctx):
        requests = dut.requests
        for kind, length in headers:
            ctx.set(requests.request, 1)
            ctx.set(requests.header, {"kind": kind, "length": length})
            while True:
                _, _, accept = await ctx.tick().sample(requests.accept)
                if accept:
                    break
            ctx.set(requests.request, 0)
            while True:
                _, _, idle, pulse = await ctx.tick().sample(requests.idle, dut.sent)
                sent.append(pulse)
                ctx.set(dut.abort, len(out) == abort_at)
                if idle:
                    break
        await ctx.tick().repeat(40)

    simulate(dut, bench, name="transmitter", background=[fields, source, sink])
    return bytes(out), sum(sent)


def fields_of(length):
    return bytes(index ^ 0x5A for index in range(length))


def test_transmitter_frames():
    """Other frames' payload comes from the fields; a DATA frame's offset (its first 4 bytes)
    from the fields too, then its data from the ``data`` stream."""
    out, sent = transmit([(BoardFrame.CREDIT, 8), (BoardFrame.DATA, 10), (BoardFrame.ERROR, 10)],
                         data=b"abcdef")
    frames = FrameParser().feed(out)
    assert frames == [(BoardFrame.CREDIT, fields_of(8)),
                      (BoardFrame.DATA, fields_of(4) + b"abcdef"),
                      (BoardFrame.ERROR, fields_of(10))]
    assert sent == 6


def test_transmitter_abort_spoils_a_data_frame():
    """A DATA frame cut short (its source has 3 of 6 bytes) is finished with zeros and a bad
    CRC."""
    out, sent = transmit([(BoardFrame.DATA, 10)], data=b"abc", abort_at=11)
    assert out[4:8] == fields_of(4) and out[8:11] == b"abc" and out[11:14] == bytes(3)
    assert len(out) == 16
    frames = FrameParser().feed(out)
    assert frames[0] == (None, "bad CRC in a frame of type 0x83") and all(
        kind is None for kind, _ in frames)
    assert sent == 3


def test_reply_fields():
    """Every frame type's payload; the STATUS stamps read through ``stamp_read`` from a stand-in
    for the stamps' block RAM (the value a cycle after the number)."""
    hello = bytes(range(100, 120))
    dut = ReplyFields(hello)
    status = {name: 0x0102030405060708 * (index + 1) & (1 << STATUS_LAYOUT.members[name].width) - 1
              for index, name in enumerate(STATUS_FIELDS)}
    got = {}

    async def stamp_ram(ctx):
        async for _, _, number in ctx.tick().sample(dut.stamp_read):
            ctx.set(dut.stamp, status[STAMP_FIELDS[number]])

    async def bench(ctx):
        ctx.set(dut.values.credit, 0xA1B2C3D4)
        ctx.set(dut.values.received, 0x11223344)
        ctx.set(dut.values.error_code, ErrorCode.TIMEOUT)
        ctx.set(dut.values.error_epoch, 0x99)
        ctx.set(dut.values.have_from, 0xABCD)
        ctx.set(dut.values.have_to, 0x1234)
        ctx.set(dut.offset, 0x55667788)
        for name, value in status.items():
            if name not in STAMP_FIELDS:
                ctx.set(dut.status[name], value)
        for kind, length in ((BoardFrame.HELLO_ACK, len(hello)), (BoardFrame.CREDIT, 8),
                             (BoardFrame.ERROR, 10), (BoardFrame.DATA, 4),
                             (BoardFrame.STATUS, STATUS_SIZE)):
            ctx.set(dut.fields.kind, kind)
            payload = bytearray()
            for index in range(length):
                ctx.set(dut.fields.index, index)
                await ctx.tick().repeat(3)
                payload.append(ctx.get(dut.fields.byte))
            got[kind] = bytes(payload)

    simulate(dut, bench, name="reply-fields", background=[stamp_ram])
    assert got[BoardFrame.HELLO_ACK] == hello
    assert got[BoardFrame.CREDIT] == struct.pack("<II", 0xA1B2C3D4, 0x11223344)
    assert got[BoardFrame.ERROR] == struct.pack("<BBI", ErrorCode.TIMEOUT, 0x99, 0x11223344) + \
        bytes.fromhex("cdab3412")
    assert got[BoardFrame.DATA] == struct.pack("<I", 0x55667788)
    assert Status(got[BoardFrame.STATUS]).__dict__ == status       # u32 counters, u64 stamps


# -- credit and window ---------------------------------------------------------------------------

def credit_window(**kwargs):
    options = dict(in_depth=4096, out_depth=1024, max_payload=64, credit_step=64)
    options.update(kwargs)
    return CreditWindow(**options)


def test_credit_shift_read_back():
    """The credit the gateware grants in each mode with an empty output buffer gives back the
    shift of :data:`CREDIT_SHIFT` (``None``: the input buffer's size)."""
    dut = credit_window()
    credits = {}

    async def bench(ctx):
        # The credit never falls: the modes in the order of their credit (validate's, the
        # input buffer's, last).
        for mode in sorted(Mode, key=lambda mode: -(EXPANSION[mode] or 0.5)):
            ctx.set(dut.flow.mode, mode)
            ctx.set(dut.flow.enable, 1)
            await ctx.tick().repeat(20)
            credits[mode] = ctx.get(dut.flow.credit)
            ctx.set(dut.flow.enable, 0)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    run_simulation(sim, "credit-shift")
    free = 1024 - OUT_SLACK
    for mode, credit in credits.items():
        shift = None if credit == 4096 else (free // credit).bit_length() - 1
        assert free >> shift == credit if shift is not None else True
        assert shift == CREDIT_SHIFT[mode], mode


def test_credit_follows_consumption_and_output():
    dut = credit_window()
    seen = {}

    async def pulse(ctx, port, count):
        ctx.set(port, 1)
        await ctx.tick().repeat(count)
        ctx.set(port, 0)

    async def bench(ctx):
        flow = dut.flow
        ctx.set(flow.mode, Mode.TRANSCODE)
        ctx.set(flow.enable, 1)
        ctx.set(flow.window, 100)
        ctx.set(flow.frame, 64)
        await ctx.tick().repeat(20)
        seen["first"] = ctx.get(flow.credit)                # (1024 - 64) >> 2
        seen["new"] = ctx.get(flow.credit_new), ctx.get(flow.credit_due)
        ctx.set(flow.announce, 1)
        await ctx.tick()
        ctx.set(flow.announce, 0)
        await ctx.tick().repeat(2)
        seen["announced"] = ctx.get(flow.credit_new)
        await pulse(ctx, dut.write, 120)                    # 120 output bytes pending
        await ctx.tick().repeat(20)
        seen["kept"] = ctx.get(flow.credit)
        await pulse(ctx, dut.take, 40)                      # 40 bytes consumed
        await ctx.tick().repeat(20)
        seen["second"] = ctx.get(flow.credit)
        seen["data"] = ctx.get(flow.data_len), ctx.get(flow.data_due), ctx.get(flow.all_sent)
        await pulse(ctx, dut.send, 64)
        await ctx.tick().repeat(10)
        seen["after"] = ctx.get(flow.data_len), ctx.get(dut.bytes_out), ctx.get(flow.all_sent)
        await pulse(ctx, dut.send, 56)
        await ctx.tick().repeat(10)                         # the credit lags by up to 8
        seen["empty"] = ctx.get(flow.all_sent), ctx.get(flow.credit)
        ctx.set(flow.acked, 64)                             # the host has 64 of them:
        await pulse(ctx, flow.rewind, 1)                    # send again from there
        await ctx.tick().repeat(10)
        seen["rewound"] = (ctx.get(dut.bytes_out), ctx.get(flow.all_sent), ctx.get(flow.data_len),
                           ctx.get(flow.credit))
        await pulse(ctx, dut.send, 56)
        ctx.set(flow.acked, 120)
        await ctx.tick().repeat(20)
        ctx.set(flow.commit_length, 30)
        await pulse(ctx, flow.commit, 1)
        await ctx.tick().repeat(2)
        seen["left"] = ctx.get(flow.in_total), ctx.get(dut.credit_left), ctx.get(flow.credit)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    run_simulation(sim, "credit-flow")
    assert seen["first"] == 240
    assert seen["new"] == (1, 1) and seen["announced"] == 0
    # The window shrank to (960 - 120) / 4 = 210, the credit did not; it grows with consumption.
    assert seen["kept"] == 240
    assert seen["second"] == 40 + (960 - 120) // 4
    assert seen["data"] == (64, 1, 0)               # a full frame is due
    assert seen["after"] == (36, 64, 0)             # the host's window: 100 - 64
    # All sent, none acknowledged: the 120 bytes still take their room.
    assert seen["empty"] == (1, 40 + (960 - 120) // 4)
    # Back to 64: 56 bytes to send (again), 56 bytes take room.
    assert seen["rewound"] == (64, 0, 56, 40 + (960 - 56) // 4)
    # All acknowledged: the credit grew to 40 + 960 / 4.
    assert seen["left"] == (30, 40 + 960 // 4 - 30, 40 + 960 // 4)


@pytest.mark.parametrize("window, acked, room", [
    (1 << 30, 0, 64), (2048 + 5, 0, 64), (2048 + 5, 150, 64), (70, 0, 64), (70, 120, 64),
    (30, 0, 30), (30, 20, 50), (0, 0, 0), (MAX_WINDOW, 150, 64),
    ((1 << 31) - 1, 150, 0),    # (past the bound the host keeps to: no output at all)
])
def test_credit_room_of_any_window(window, acked, room):
    """The host's room (acked + window - bytes sent) on the counts' low bits: a huge window, one
    past twice the output buffer, an acknowledgement beyond the bytes sent (after a rewind):
    the next DATA frame's length is the same as with 32-bit arithmetic, up to the largest window
    a host may grant (MAX_WINDOW, with an acknowledgement past the bytes sent too)."""
    dut = credit_window()
    seen = {}

    async def bench(ctx):
        flow = dut.flow
        ctx.set(flow.mode, Mode.TRANSCODE)
        ctx.set(flow.enable, 1)
        ctx.set(flow.frame, 64)
        ctx.set(flow.window, window)
        ctx.set(flow.acked, acked)
        ctx.set(dut.write, 1)                           # 200 output bytes, none sent
        await ctx.tick().repeat(200)
        ctx.set(dut.write, 0)
        await ctx.tick().repeat(20)
        seen["len"] = ctx.get(flow.data_len)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    run_simulation(sim, "credit-room")
    assert seen["len"] == room


def test_credit_parameter_checks():
    with pytest.raises(ValueError, match="power of 2"):
        credit_window(in_depth=3000)
    with pytest.raises(ValueError, match="credit_step"):
        credit_window(credit_step=4096)


# -- feeder, FIFO, stamps, LEDs ------------------------------------------------------------------

def test_feeder_holds_the_last_byte_until_the_end():
    dut = MessageFeeder()
    out = []

    async def source(ctx):
        for byte in b"hello":                 # like the RingBuffer: a byte every 4+ cycles
            await stream_put(ctx, dut.i, byte)
            await ctx.tick().repeat(3)

    async def sink(ctx):
        while True:
            item = await stream_get(ctx, dut.o)
            out.append((item.data, item.last))

    async def bench(ctx):
        ctx.set(dut.enable, 1)
        ctx.set(dut.commit_length, 5)
        ctx.set(dut.commit, 1)
        await ctx.tick()
        ctx.set(dut.commit, 0)
        await ctx.tick().repeat(30)
        held = list(out)
        ctx.set(dut.end, 1)
        await ctx.tick().repeat(10)
        return held

    results = []

    async def main(ctx):
        results.append(await bench(ctx))

    simulate(dut, main, name="feeder", background=[source, sink])
    assert results[0] == [(byte, 0) for byte in b"hell"]
    assert out == [(byte, 0) for byte in b"hell"] + [(ord("o"), 1)]


def test_stream_fifo_keeps_order_under_backpressure():
    dut = StreamFIFO(ByteLayout, 2)
    data = bytes(random.Random(7).randrange(256) for _ in range(200))
    inputs = [{"data": byte, "last": index == len(data) - 1} for index, byte in enumerate(data)]
    run = run_stream(dut, inputs, gap=0.3, stall=0.3, seed=3, name="stream-fifo")
    assert bytes(item.data for item in run.outputs) == data
    fast = run_stream(StreamFIFO(ByteLayout, 2), inputs, name="stream-fifo-fast")
    assert fast.ready_low == 0 and fast.cycles <= len(data) + 2      # one item per cycle


def read_stamps(ctx, dut):
    """The four stamps through the read port (STAMP_FIELDS order), a cycle each."""
    async def read():
        got = {}
        for number, name in enumerate(STAMP_FIELDS):
            ctx.set(dut.read, number)
            await ctx.tick()
            got[name] = ctx.get(dut.stamp)
        return got
    return read()


def test_stamps():
    """The stamps at their events (a cycle late), the first DATA frames' once; read as 0 after
    a restart until taken again (the block RAM keeps the old words)."""
    dut = MessageStamps()
    got = {}

    async def pulse(ctx, port):
        ctx.set(port, 1)
        await ctx.tick()
        ctx.set(port, 0)

    async def bench(ctx):
        await ctx.tick().repeat(10)
        await pulse(ctx, dut.restart)                 # time 0 (every event acts a cycle late)
        await ctx.tick().repeat(3)
        await pulse(ctx, dut.data_begin)              # rx_first = 3
        await pulse(ctx, dut.data_begin)              # not the first: ignored
        ctx.set(dut.tx_kind, BoardFrame.DATA)
        await pulse(ctx, dut.tx_started)              # tx_first = 5
        await pulse(ctx, dut.tx_started)
        await pulse(ctx, dut.end)                     # rx_last = 7
        ctx.set(dut.tx_kind, BoardFrame.STATUS)
        await pulse(ctx, dut.tx_started)              # tx_status = 8
        await ctx.tick()
        got["time"] = ctx.get(dut.time)
        got.update(await read_stamps(ctx, dut))
        await pulse(ctx, dut.restart)
        await ctx.tick()
        await pulse(ctx, dut.end)                     # rx_last = 1 (the others not taken)
        await ctx.tick()
        got["again"] = await read_stamps(ctx, dut)

    simulate(dut, bench, name="stamps")
    assert got == {"time": 9, "rx_first": 3, "rx_last": 7, "tx_first": 5, "tx_status": 8,
                   "again": {"rx_first": 0, "rx_last": 1, "tx_first": 0, "tx_status": 0}}


def test_stamps_carry_into_the_upper_half():
    """The 64-bit counter's carry is registered a cycle ahead: it counts on through 2**32 without
    a step (the lower half is loaded near its end through the simulator)."""
    dut = MessageStamps()
    seen = []

    async def bench(ctx):
        await ctx.tick()
        ctx.set(dut.time, 0xFFFF_FFF0)
        for _ in range(40):
            await ctx.tick()
            seen.append(ctx.get(dut.time))

    simulate(dut, bench, name="stamps-carry")
    assert seen == list(range(seen[0], seen[0] + 40)) and seen[-1] > 1 << 32


def test_leds_stretch_events():
    dut = LEDStretcher(10_000, activity_ms=5, error_ms=20)     # 10 cycles per millisecond
    trace = []

    async def bench(ctx):
        ctx.set(dut.activity, 1)
        ctx.set(dut.error, 1)
        await ctx.tick()
        ctx.set(dut.activity, 0)
        ctx.set(dut.error, 0)
        for _ in range(250):
            _, _, activity, error = await ctx.tick().sample(dut.led_activity, dut.led_error)
            trace.append((activity, error))
        ctx.set(dut.busy, 1)
        await ctx.tick()
        trace.append((ctx.get(dut.led_activity), ctx.get(dut.led_error)))

    simulate(dut, bench, name="leds")
    lit_activity = sum(activity for activity, _ in trace[:-1])
    lit_error = sum(error for _, error in trace[:-1])
    assert 40 <= lit_activity <= 50 and 190 <= lit_error <= 200
    assert trace[-1] == (1, 0)                                   # busy lights it


# -- message control -----------------------------------------------------------------------------

def test_control_frames_and_replies():
    dut = MessageControl(hello_size=20, max_payload=64)
    log = []
    rewinds = []

    frames, tx, flow = dut.frames, dut.tx, dut.flow

    async def frame(ctx, kind, fields=0, length=0):
        ctx.set(frames.frame, {"kind": kind, "length": length, "fields": fields})
        if kind == HostFrame.DATA:              # its offset, then (bytes later) the frame
            ctx.set(frames.offset, 1)
            await ctx.tick()
            ctx.set(frames.offset, 0)
            await ctx.tick().repeat(6)
        ctx.set(frames.check, 1)
        await ctx.tick()
        ctx.set(frames.check, 0)
        await ctx.tick()                        # done comes two cycles after check
        ctx.set(frames.done, 1)
        await ctx.tick()
        ctx.set(frames.done, 0)

    async def transmitter(ctx):
        # A transmitter that takes a request when it has been idle for a cycle, then sends
        # for 10 cycles.
        busy = 0
        async for _, _, request, kind, length, rewind in ctx.tick().sample(
                tx.request, tx.header.kind, tx.header.length, dut.rewind):
            accept = request and not busy
            ctx.set(tx.accept, accept)
            ctx.set(tx.idle, not busy)
            ctx.set(tx.settled, not busy)
            if accept:
                log.append((BoardFrame(kind), length))
                busy = 10
            busy = max(0, busy - 1)
            if rewind:
                rewinds.append(ctx.get(flow.epoch))

    def position(offset, epoch=0):
        return (offset | epoch << 24) << 24        # the top four of the seven field bytes

    async def bench(ctx):
        ctx.set(flow.credit, 500)
        await frame(ctx, HostFrame.DATA, length=3)             # no message
        await ctx.tick().repeat(5)
        await frame(ctx, HostFrame.HELLO)
        await ctx.tick().repeat(5)
        await frame(ctx, HostFrame.START, fields=Mode.ENCODE | 4000 << 8 | 32 << 40, length=7)
        assert ctx.get(dut.active) and ctx.get(flow.mode) == Mode.ENCODE
        assert (ctx.get(flow.window), ctx.get(flow.frame)) == (4000, 32)
        ctx.set(flow.credit_new, 1)                    # until it is announced
        while not (await ctx.tick().sample(flow.announce))[2]:
            pass
        ctx.set(flow.credit_new, 0)
        await frame(ctx, HostFrame.START, fields=Mode.DECODE, length=7)    # busy
        await ctx.tick().repeat(5)
        await frame(ctx, HostFrame.DATA, fields=position(0, 7), length=3)  # in order: taken
        assert not ctx.get(dut.rollback)
        ctx.set(flow.in_total, 3)
        await frame(ctx, HostFrame.DATA, fields=position(9, 5), length=3)  # a gap: SEQUENCE
        await ctx.tick().repeat(12)
        assert ctx.get(dut.replies.error_code) == ErrorCode.SEQUENCE
        assert ctx.get(dut.replies.error_epoch) == 5
        await frame(ctx, HostFrame.END, fields=position(2), length=4)      # not all: SEQUENCE
        await ctx.tick().repeat(12)
        await frame(ctx, HostFrame.END, fields=position(3), length=4)
        assert ctx.get(dut.end_seen)
        ctx.set(flow.credit_new, 1)                    # after END: no news, no CREDIT
        ctx.set(flow.credit_due, 1)
        await ctx.tick().repeat(30)
        ctx.set(flow.credit_new, 0)
        ctx.set(flow.credit_due, 0)
        ctx.set(dut.dp_done, 1)                                # the datapath's last output
        await ctx.tick()
        ctx.set(dut.dp_done, 0)
        ctx.set(flow.all_sent, 1)
        await ctx.tick().repeat(30)
        assert ctx.get(dut.reported) and ctx.get(dut.active)   # STATUS sent
        assert ctx.get(dut.replies.credit) == 500 and ctx.get(dut.replies.received) == 3
        await frame(ctx, HostFrame.WINDOW, fields=(2 | REWIND << 32 | 9 << 40) << 8, length=6)
        await ctx.tick().repeat(30)                            # rewind, CREDIT, STATUS again
        assert ctx.get(flow.acked) == 2
        await frame(ctx, HostFrame.END, fields=position(3), length=4)      # STATUS again
        await ctx.tick().repeat(30)
        await frame(ctx, HostFrame.START, fields=max(Mode) + 1, length=7)  # no such mode
        await ctx.tick().repeat(12)
        assert ctx.get(dut.replies.error_code) == ErrorCode.BAD_MODE

    simulate(dut, bench, name="control", background=[transmitter])
    assert [kind for kind, _ in log] == [
        BoardFrame.ERROR, BoardFrame.HELLO_ACK, BoardFrame.CREDIT, BoardFrame.ERROR,
        BoardFrame.ERROR, BoardFrame.ERROR, BoardFrame.STATUS, BoardFrame.CREDIT,
        BoardFrame.STATUS, BoardFrame.STATUS, BoardFrame.ERROR]
    assert log[1][1] == 20 and log[2][1] == 8
    assert rewinds == [9]


# -- datapath ------------------------------------------------------------------------------------

def run_datapath(dut, mode, data, *, settle, ready_chance=1.0):
    """Send ``data`` (one message) through the :class:`Datapath` ``dut`` in ``mode``, the sink
    ready with probability ``ready_chance`` in each cycle, then wait ``settle`` cycles. Returns
    the output bytes, the output lengths at the ``done`` pulses, the code point count and the
    error counts by label."""
    out = bytearray()
    done = []
    counts = []

    async def sink(ctx):
        rng = random.Random(mode.value)
        ctx.set(dut.o.ready, 1)
        async for _, _, valid, ready, byte, pulse in ctx.tick().sample(
                dut.o.valid, dut.o.ready, dut.o.payload, dut.done):
            if valid and ready:
                out.append(byte)
            if pulse:
                done.append(len(out))
            ctx.set(dut.o.ready, rng.random() < ready_chance)

    async def bench(ctx):
        ctx.set(dut.mode, mode)
        await ctx.tick()
        for index, byte in enumerate(data):
            await stream_put(ctx, dut.i, {"data": byte, "last": index == len(data) - 1})
        await ctx.tick().repeat(settle)
        counts.append(ctx.get(dut.codepoints))
        counts.append({kind.label: ctx.get(dut.errors[kind.value - 1]) for kind in ErrorKind
                       if kind is not ErrorKind.NONE})

    simulate(dut, bench, name=f"datapath-{mode.label}", background=[sink])
    return out, done, *counts


@pytest.mark.parametrize("mode", [Mode.TRANSCODE, Mode.DECODE, Mode.ENCODE, Mode.VALIDATE],
                         ids=lambda mode: mode.label)
def test_datapath_modes(mode):
    """Each mode with a stand-in decoder (ASCII passes, anything else is U+FFFD invalid_byte)
    and the real encoder; ``decode`` words laid out as the host reads them (``decode_word``)."""
    dut = Datapath(decoder=AsciiDecoder)
    if mode is Mode.ENCODE:
        data = struct.pack("<3I", 0x41, 0xD800, 0x20AC) + b"\x42"
        want = b"A\xef\xbf\xbd\xe2\x82\xac\xef\xbf\xbd"
    else:
        data = b"ab\xffc"
        want = {Mode.TRANSCODE: b"ab\xef\xbf\xbdc", Mode.VALIDATE: b"",
                Mode.DECODE: struct.pack("<4I", ord("a"), ord("b"),
                                         decode_word(0xFFFD, ErrorKind.INVALID_BYTE),
                                         ord("c"))}[mode]
    out, done, codepoints, errors = run_datapath(dut, mode, data, settle=40)
    assert bytes(out) == want
    assert len(done) == 1
    nonzero = {label: count for label, count in errors.items() if count}
    if mode is Mode.ENCODE:
        assert (codepoints, nonzero) == (4, {"surrogate": 1, "truncated": 1})
    else:
        assert (codepoints, nonzero) == (4, {"invalid_byte": 1})


def test_datapath_without_utf16():
    """``utf16=False`` (the iCEBreaker bitstream) builds the other modes alone."""
    dut = Datapath(decoder=AsciiDecoder, utf16=False)
    out, done, codepoints, errors = run_datapath(dut, Mode.TRANSCODE, b"ab\xffc", settle=40)
    assert (bytes(out), done, codepoints) == (b"ab\xef\xbf\xbdc", [6], 4)


#: Messages for the UTF-16 modes: every length of UTF-8 and UTF-16 character, ill-formed
#: subparts (a lone surrogate each way, a truncated sequence, an odd trailing byte after a lead).
UTF16_MODE_MESSAGES = {
    Mode.TO_UTF16: "a\u00e9\u20ac\U0001F600z".encode() + b"\xff\xed\xa0\x80\xf0\x9f\x98b\xc3",
    Mode.FROM_UTF16: "a\u00e9\u20ac\U0001F600z".encode("utf-16-le") +
                     b"\x00\xdcb\x00\x00\xd8\x00\xd8\x3d\xd8\x00\xde\x00\xd8\x41",
}


@pytest.mark.parametrize("mode", UTF16_MODE_MESSAGES, ids=lambda mode: mode.label)
def test_datapath_utf16_modes(mode):
    """The real cores in the UTF-16 modes under random backpressure: output bytes, code points
    and errors per kind as the reference model has them (``expected_output``)."""
    dut = Datapath()
    data = UTF16_MODE_MESSAGES[mode]
    want, want_codepoints, want_errors = expected_output(mode, data)
    out, done, codepoints, errors = run_datapath(dut, mode, data, settle=80, ready_chance=0.6)
    assert bytes(out) == want
    assert done == [len(want)]
    assert (codepoints, errors) == (want_codepoints, want_errors)
    assert sum(want_errors.values()) >= 3



@pytest.mark.parametrize("ending", [b"\x00\xd8", b"\x00\xdc\x00\xd8\x41"],
                         ids=["lone-lead", "odd-byte"])
def test_datapath_joins_random_surrogates(ending):
    """``from-utf16`` on random code units drawn mostly from surrogates (leads and trails in
    every order, runs of leads, BMP units and U+0000 between them), the sink often refusing:
    the surrogate joiner's output as the reference model has it."""
    rng = random.Random(len(ending))
    alphabet = [0x0041, 0x0000, 0xFFFF, 0xD800, 0xDBFF, 0xD83D, 0xDC00, 0xDFFF, 0xDE00]
    units = [rng.choice(alphabet) for _ in range(80)]
    data = struct.pack(f"<{len(units)}H", *units) + ending
    want, want_codepoints, want_errors = expected_output(Mode.FROM_UTF16, data)
    out, done, codepoints, errors = run_datapath(Datapath(), Mode.FROM_UTF16, data, settle=200,
                                                 ready_chance=0.5)
    assert bytes(out) == want
    assert done == [len(want)]
    assert (codepoints, errors) == (want_codepoints, want_errors)
    assert want_errors["surrogate"] >= 20 and want_codepoints > len(units) // 2

# -- buffers on a RAM whose data output changes on a write ----------------------------------------

@pytest.mark.parametrize("kind", ["ring", "replay"])
def test_buffer_does_not_rely_on_ram_output_through_a_write(kind, monkeypatch):
    """The buffers on :class:`ClobberingRAM` (the RAM's data output changes after every write,
    as the SPRAM's may): every byte comes out in order and a byte on offer holds until it is
    taken, with random gaps on the writer and stalls on the reader (so that writes land while a
    byte waits). Offering the RAM's output itself breaks both."""
    module = buffer if kind == "ring" else replay_buffer
    monkeypatch.setattr(module, "ByteRAM", ClobberingRAM)
    dut = RingBuffer(16) if kind == "ring" else ReplayBuffer(16)
    rng, gaps = random.Random(5), random.Random(6)
    data = [rng.randrange(256) for _ in range(300)]
    got = []
    problems = []

    async def writer(ctx):
        for byte in data:
            for _ in range(gaps.choice([0, 0, 0, 1, 3])):
                await ctx.tick()
            await stream_put(ctx, dut.w, byte)

    async def reader(ctx):
        while len(got) < len(data):
            ready = rng.random() < 0.3
            ctx.set(dut.o.ready, ready)
            _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            if valid and ready:
                got.append(payload)
                if kind == "replay":
                    ctx.set(dut.ack, len(got))

    async def monitor(ctx):
        held = None
        async for _, _, valid, ready, payload in ctx.tick().sample(dut.o.valid, dut.o.ready,
                                                                  dut.o.payload):
            if held is not None and (not valid or payload != held):
                problems.append((len(got), held, payload if valid else None))
            held = payload if valid and not ready else None

    simulate(dut, reader, name=f"{kind}-buffer-clobbering-ram", background=[writer, monitor])
    assert problems == []
    assert got == data


# -- replay buffer -------------------------------------------------------------------------------

def test_replay_buffer_keeps_bytes_until_acknowledged():
    """Bytes read stay until acknowledged: the writer is held off when unacknowledged bytes
    fill the buffer, and a rewind reads again from the acknowledgement."""
    dut = ReplayBuffer(16)
    got = []
    ready_seen = []

    async def writer(ctx):
        for byte in range(40):
            await stream_put(ctx, dut.w, byte)

    async def bench(ctx):
        async def read(count, ack=False):
            for _ in range(count):
                got.append(await stream_get(ctx, dut.o))
                if ack:
                    ctx.set(dut.ack, got[-1] + 1)
        await read(10)
        await ctx.tick().repeat(30)
        ready_seen.append(ctx.get(dut.w.ready))        # 15 written, none acknowledged: full
        ctx.set(dut.ack, 4)
        await ctx.tick()
        ctx.set(dut.rewind, 1)
        await ctx.tick()
        ctx.set(dut.rewind, 0)
        await read(36, ack=True)                       # 4.. again, then on to 39

    simulate(dut, bench, name="replay-buffer", background=[writer])
    assert got == list(range(10)) + list(range(4, 40))
    assert ready_seen == [0]


def test_addressed_ring_buffer_writes_at_the_offset_given():
    """The input buffer of selective repeat: a frame after a gap is written at its offset
    (``seek``), the frame that fills the gap before it, and one commit of both lengths makes
    them readable in stream order; bytes past the committed ones are not read."""
    dut = RingBuffer(16, addressed=True)
    got = []

    async def write_at(ctx, offset, data):
        ctx.set(dut.seek_to, offset)
        ctx.set(dut.seek, 1)
        await ctx.tick()
        ctx.set(dut.seek, 0)
        for byte in data:
            await stream_put(ctx, dut.w, byte)

    async def commit(ctx, length):
        ctx.set(dut.commit_length, length)
        ctx.set(dut.commit, 1)
        await ctx.tick()
        ctx.set(dut.commit, 0)

    async def reader(ctx):
        while True:
            got.append(await stream_get(ctx, dut.o))

    async def bench(ctx):
        await write_at(ctx, 0, b"ab")
        await commit(ctx, 2)
        await write_at(ctx, 5, b"fgh")                 # past a gap: held
        await ctx.tick().repeat(20)
        assert bytes(got) == b"ab"
        await write_at(ctx, 2, b"cde")                 # the gap
        await commit(ctx, 6)
        await ctx.tick().repeat(40)
        await write_at(ctx, 8, b"ijklmnopqrst")       # round the ring (16 bytes)
        await commit(ctx, 12)
        await ctx.tick().repeat(80)

    simulate(dut, bench, name="addressed-ring", background=[reader])
    assert bytes(got) == b"abcdefghijklmnopqrst"


def test_replay_buffer_parameter_checks():
    with pytest.raises(ValueError, match="power of 2"):
        ReplayBuffer(12)
    with pytest.raises(TypeError, match="integer"):
        ReplayBuffer(16.0)
