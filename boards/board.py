"""The board's logic between the UART pins: protocol engine, buffers, datapath, LEDs.

:class:`BoardCore` is everything but the clock: the iCEBreaker top
(:mod:`~utf8_gateware.boards.icebreaker`) adds the PLL and the pins, the virtual board
(:mod:`~utf8_gateware.boards.virtual`) drives ``clk`` and the UART pins from C++.

Structure (each box a component with its own ports and tests)::

    rx pin -> UARTReceiver -> FrameReceiver --DATA payload--> input RingBuffer (commit/rollback)
                                   |                                |
                            MessageControl <-> CreditWindow    MessageFeeder -> Datapath (cores)
                                   |            MessageStamps                      |
    tx pin <- UARTTransmitter <- FrameTransmitter <--DATA payload-- output ReplayBuffer (ack/rewind)
                                   ^
                              ReplyFields (HELLO_ACK, CREDIT, STATUS, ERROR payloads)

    LEDStretcher: activity and errors on the LEDs.

The protocol (frame format, credits, windows, modes) is described in
:mod:`~utf8_gateware.boards.protocol`.

Timing: the iCE40 UP5K is slow (a LUT plus its routing is 2.5-6 ns), so every decision that
fans out is registered: 32-bit counters are compared a cycle before the decision that needs
them (minimums in two steps: compare, select), the frame receiver checks a header in three steps
and its ``done``/``error`` come from registers, the message control decides a frame's actions a
cycle before ``done`` and acts on the transmitter's ``accept`` a cycle later, the events that
count or stamp are registered before they do, the datapath's ports and the decoder's output go
through 1-entry FIFOs, the buffers' RAM port serves writer and reader in alternate cycles, and
the transmitter's payload bytes come out of a 3-stage pipeline that the UART's 10 bit times per
byte hide. At 48 MHz the whole board (with the cores, the UTF-16 modes and selective repeat)
places and routes at 49.0-49.8 MHz (seeds 1-3) in 4,464 logic cells, 8 block RAMs (the STATUS
stamps) and 3 SPRAMs (32 KiB in, 64 KiB out).
"""

import struct

from amaranth.hdl import Cat, Module, ResetInserter, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.component import CheckedComponent
from utf8_gateware.hdl.error_kind import ErrorKind
from .buffer import RingBuffer
from .replay_buffer import ReplayBuffer
from .control import MessageControl
from .credit import CreditWindow
from .datapath import Datapath
from .feeder import MessageFeeder
from .frame_rx import FrameReceiver
from .frame_tx import FrameTransmitter
from .leds import LEDStretcher
from .protocol import VERSION, MAX_PAYLOAD, CREDIT_STEP, FRAME_TIMEOUT_S, HELLO_FORMAT, Mode
from .replies import ReplyFields
from .stamps import MessageStamps
from .uart import UARTReceiver, UARTTransmitter, uart_divisor


__all__ = ["BoardCore"]


class BoardCore(CheckedComponent):
    """The protocol engine and datapath of the board (see the module docstring).

    Parameters: ``clk_freq`` and ``baud`` (the UART divisor is checked by
    :func:`~utf8_gateware.boards.uart.uart_divisor`), ``in_depth`` and ``out_depth`` (bytes of
    the input and output buffers, powers of 2; 32 KiB each maps onto one UP5K SPRAM),
    ``max_payload`` (largest DATA frame), ``credit_step``, ``decoder``/``encoder`` (factories,
    for tests), ``utf16`` (``False``: without the ``to-utf16`` and ``from-utf16`` modes, which
    the board then refuses with ``BAD_MODE``).

    Ports: ``rx`` In(1), ``tx`` Out(1) (the UART lines, idle high), ``led_activity`` and
    ``led_error`` Out(1) (active high; stretched so that a person can see them).
    """
    @classmethod
    def check_parameters(cls, *, clk_freq, baud=3_000_000, in_depth=32768, out_depth=65536,
                         max_payload=MAX_PAYLOAD, credit_step=CREDIT_STEP,
                         frame_timeout=FRAME_TIMEOUT_S, decoder=None, encoder=None, utf16=True):
        uart_divisor(clk_freq, baud)
        CreditWindow.check_parameters(in_depth=in_depth, out_depth=out_depth,
                                      max_payload=max_payload, credit_step=credit_step)

    def __init__(self, *, clk_freq, baud=3_000_000, in_depth=32768, out_depth=65536,
                 max_payload=MAX_PAYLOAD, credit_step=CREDIT_STEP, frame_timeout=FRAME_TIMEOUT_S,
                 decoder=None, encoder=None, utf16=True):
        self.clk_freq = clk_freq
        self.utf16 = utf16
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
        m.submodules.control = control = MessageControl(
            hello_size=len(self.hello_payload), max_payload=self.max_payload,
            max_mode=max(Mode) if self.utf16 else Mode.VALIDATE)
        clear = control.clear
        m.submodules.rx_uart = rx_uart = UARTReceiver(self.divisor)
        m.submodules.tx_uart = tx_uart = UARTTransmitter(self.divisor)
        m.submodules.receiver = receiver = FrameReceiver(
            max_payload=self.max_payload, frame_timeout=self.frame_timeout,
            starve_time=32 * byte_time)
        m.submodules.transmitter = transmitter = FrameTransmitter()
        m.submodules.replies = replies = ReplyFields(self.hello_payload)
        m.submodules.stamps = stamps = MessageStamps()
        m.submodules.credit = credit = ResetInserter(clear)(CreditWindow(
            in_depth=self.in_depth, out_depth=self.out_depth, max_payload=self.max_payload,
            credit_step=self.credit_step))
        m.submodules.inbuf = inbuf = ResetInserter(clear)(
            RingBuffer(self.in_depth, addressed=True))
        m.submodules.outbuf = outbuf = ResetInserter(clear)(ReplayBuffer(self.out_depth))
        m.submodules.feeder = feeder = ResetInserter(clear)(MessageFeeder())
        m.submodules.datapath = dp = ResetInserter(clear)(
            Datapath(decoder=self._decoder, encoder=self._encoder, utf16=self.utf16))
        m.submodules.leds = leds = LEDStretcher(self.clk_freq)

        # Bytes: rx pin -> frames -> input buffer -> datapath -> output buffer -> frames -> tx pin
        m.d.comb += [rx_uart.rx.eq(self.rx), self.tx.eq(tx_uart.tx)]
        for source, sink in [
            (rx_uart.o, receiver.i), (receiver.o, inbuf.w), (inbuf.o, feeder.i),
            (feeder.o, dp.i), (dp.o, outbuf.w), (outbuf.o, transmitter.data),
            (transmitter.o, tx_uart.i),
            # ... and the protocol engine around them
            (receiver.frames, control.frames), (control.tx, transmitter.requests),
            (control.flow, credit.flow), (control.replies, replies.values),
            (transmitter.fields, replies.fields),
        ]:
            wiring.connect(m, source, sink)

        commit = control.flow.commit
        # The output count as the replies read it: a copy, so that their multiplexers do not
        # pull the credit's register (the start of its 32-bit subtractions) across the die.
        # (It is stable for much longer than the copy lags: it counts the data bytes of DATA
        # frames, and a frame's offset and a STATUS are read while no data byte is sent.)
        bytes_out = Signal(32)
        m.d.sync += bytes_out.eq(credit.bytes_out)
        m.d.comb += [
            receiver.framing_error.eq(rx_uart.framing_error),
            receiver.overrun.eq(rx_uart.overrun),
            receiver.accept_data.eq(control.active),
            receiver.data_room.eq(credit.credit_left),
            receiver.discard.eq(control.rollback | clear),
            inbuf.commit.eq(commit),
            inbuf.commit_length.eq(control.flow.commit_length),
            inbuf.rollback.eq(control.rollback),
            # (a DATA frame's data are written from its offset, in the fields when it pulses)
            inbuf.seek.eq(receiver.frames.offset),
            inbuf.seek_to.eq(receiver.frames.frame.fields[-32:-16]),
            receiver.place.eq(control.place),
            control.credit_left.eq(credit.credit_left),
            outbuf.ack.eq(control.flow.acked),
            outbuf.rewind.eq(control.rewind),
            replies.offset.eq(Cat(bytes_out[:24], control.flow.epoch)),
            feeder.commit.eq(commit),
            feeder.commit_length.eq(control.flow.commit_length),
            feeder.end.eq(control.end_seen),
            feeder.enable.eq(control.active),
            dp.mode.eq(control.flow.mode),
            control.dp_done.eq(dp.done),
            credit.take.eq(dp.i.valid & dp.i.ready),
            credit.write.eq(dp.o.valid & dp.o.ready),
            credit.send.eq(transmitter.sent),
            transmitter.abort.eq(clear | control.rewind),
        ]
        m.d.comb += [
            stamps.restart.eq(control.started),
            stamps.data_begin.eq(receiver.data_begin),
            stamps.end.eq(control.ended),
            stamps.tx_started.eq(transmitter.started),
            stamps.tx_kind.eq(transmitter.requests.kind),
        ]
        status = replies.status
        m.d.comb += [
            status.mode.eq(control.flow.mode),
            status.bytes_in.eq(control.flow.in_total),
            status.bytes_out.eq(bytes_out),
            status.codepoints.eq(dp.codepoints),
            *[status[kind.label].eq(dp.errors[kind.value - 1])
              for kind in ErrorKind if kind is not ErrorKind.NONE],
            stamps.read.eq(replies.stamp_read),
            replies.stamp.eq(stamps.stamp),
        ]
        m.d.comb += [
            leds.activity.eq(rx_uart.o.valid | (tx_uart.i.valid & tx_uart.i.ready)),
            leds.error.eq(control.error),
            leds.busy.eq(control.active & ~control.reported),
            self.led_activity.eq(leds.led_activity),
            self.led_error.eq(leds.led_error),
        ]
        return m
