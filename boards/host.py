"""The host side of the board protocol: send a message, collect the output, check it.

:class:`Link` talks to a board (or the virtual board) over a pyserial port;
:func:`expected_output` computes what the board must answer with the reference model
(:mod:`utf8_gateware.sim.reference`); :func:`stream` runs one file through the board and returns
the report that ``utf8-gateware stream`` prints.

Every failure is a :class:`BoardError` with a one-line message; every wait has a timeout.
"""

import os
import struct
import time

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim import reference
from .protocol import (OVERHEAD, STATUS_SIZE, HELLO_SIZE, HostFrame, BoardFrame, Mode, ErrorCode,
                       FrameParser, Hello, Status, decode_word, encode_frame)


__all__ = ["BoardError", "Link", "MessageResult", "expected_output", "utilisation", "stream"]


class BoardError(Exception):
    """A problem talking to the board (one line). ``status``: the exit status to use."""
    def __init__(self, message, status=2):
        super().__init__(message)
        self.status = status


class MessageResult:
    """What one message produced: ``output`` (bytes), ``status`` (:class:`Status`),
    ``wire_in``/``wire_out`` (bytes on the line in each direction during the message, frames
    included), ``elapsed`` (wall-clock seconds)."""
    def __init__(self, output, status, wire_in, wire_out, elapsed):
        self.output = output
        self.status = status
        self.wire_in = wire_in
        self.wire_out = wire_out
        self.elapsed = elapsed


class Link:
    """A connection to a board on ``port`` (a path or a ``serial.Serial``-like object).

    ``timeout``: seconds without any answer from the board before giving up.
    ``window``: the host's receive window (bytes of output it lets the board send ahead).
    """
    def __init__(self, port, *, baud=3_000_000, timeout=5.0, window=1 << 16):
        self.timeout = timeout
        self.window = window
        self.hello = None
        self.parser = FrameParser()
        self.errors_seen = []
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

    def _read(self):
        try:
            waiting = self.serial.in_waiting
            return self.serial.read(max(1, min(waiting, 1 << 16)))
        except Exception as error:
            raise BoardError(f"cannot read from the board: {_describe(error)}") from None

    def send(self, kind, payload=b""):
        frame = encode_frame(kind, payload)
        self._write(frame)
        return len(frame)

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

    def run(self, mode, data, *, progress=None, corrupt_frame=None, stop_after=None):
        """Send ``data`` as one message in ``mode``; returns :class:`MessageResult`.

        ``progress(n)`` is called with the input bytes sent. Test hooks: ``corrupt_frame=k``
        flips a bit of the k-th DATA frame (0-based); ``stop_after=n`` returns (``None``) after
        writing ``n`` bytes of frames, leaving the message unfinished.
        """
        if self.hello is None:
            self.connect()
        hello = self.hello
        mode = Mode(mode)
        data = memoryview(bytes(data))
        started = time.monotonic()
        granted_window = self.window
        wire_in = self.send(HostFrame.START, bytes([mode]) + struct.pack("<I", granted_window))
        credit = 0
        sent = 0
        frames = 0
        end_sent = False
        output = bytearray()
        wire_out = 0
        status = None
        last_heard = time.monotonic()
        min_frame = min(256, hello.max_payload)
        while status is None:
            # Send what the credit allows (no tiny frames unless that is all that is left).
            while sent < len(data):
                allowed = min(credit - sent, hello.max_payload, len(data) - sent)
                if allowed <= 0 or (allowed < min_frame and allowed < len(data) - sent):
                    break
                payload = bytes(data[sent:sent + allowed])
                frame = bytearray(encode_frame(HostFrame.DATA, payload))
                if corrupt_frame is not None and frames == corrupt_frame:
                    frame[len(frame) // 2] ^= 0x10
                if stop_after is not None and wire_in + len(frame) >= stop_after:
                    self._write(bytes(frame[:max(0, stop_after - wire_in)]))
                    return None
                self._write(bytes(frame))
                wire_in += len(frame)
                frames += 1
                sent += allowed
                if progress is not None:
                    progress(allowed)
            if sent == len(data) and not end_sent:
                wire_in += self.send(HostFrame.END)
                end_sent = True
            # Keep the board's output window open.
            if len(output) + self.window - granted_window >= self.window // 4:
                granted_window = len(output) + self.window
                wire_in += self.send(HostFrame.WINDOW, struct.pack("<I", granted_window))
            chunk = self._read()
            if chunk:
                last_heard = time.monotonic()
                wire_out += len(chunk)
            elif time.monotonic() - last_heard > self.timeout:
                raise BoardError(f"the board stopped answering for {self.timeout:g} s "
                                 f"(sent {sent} of {len(data)} bytes, received {len(output)})")
            for kind, payload in self.parser.feed(chunk):
                if kind == BoardFrame.CREDIT:
                    value = struct.unpack("<I", payload)[0]
                    if (value - credit) & 0xFFFFFFFF < 1 << 31:
                        credit = value
                elif kind == BoardFrame.DATA:
                    output += payload
                elif kind == BoardFrame.STATUS:
                    status = Status(payload)
                elif kind == BoardFrame.ERROR:
                    code, aborted = payload[0], payload[1]
                    try:
                        text = ErrorCode(code).description
                    except ValueError:
                        text = f"error code {code}"
                    raise BoardError(f"the board rejected a frame: {text}" +
                                     ("; the message was aborted" if aborted else ""), status=1)
                elif kind is None:
                    raise BoardError(f"corrupted frame from the board ({payload})", status=1)
        return MessageResult(bytes(output), status, wire_in, wire_out,
                             time.monotonic() - started)


def _describe(error):
    return getattr(error, "strerror", None) or str(error) or type(error).__name__


def _port_name(port):
    return getattr(port, "port", None) or repr(port)


# -- reference ----------------------------------------------------------------------------------

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
    decoded = reference.decode(bytes(data), "replace")
    errors = reference.count_errors(item.error for item in decoded)
    if mode is Mode.TRANSCODE:
        output = reference.encode([item.codepoint for item in decoded], "replace").data
    elif mode is Mode.DECODE:
        output = b"".join(struct.pack("<I", decode_word(item.codepoint, item.error))
                          for item in decoded)
    else:
        output = b""
    return output, len(decoded), errors


def utilisation(status, hello):
    """Line utilisation of each direction from the board's cycle stamps (simulated time on the
    virtual board): payload bytes moved / bytes the line could carry from the first DATA frame to
    the end of the message in that direction. Returns ``(to_board, from_board)``."""
    divisor = hello.clock_hz / hello.baud
    byte_cycles = 10 * divisor
    to_board = from_board = 0.0
    if status.bytes_in:
        window = (status.rx_last - status.rx_first) % (1 << 32) + byte_cycles
        to_board = status.bytes_in * byte_cycles / window
    if status.bytes_out:
        window = ((status.tx_status - status.tx_first) % (1 << 32) +
                  (OVERHEAD + STATUS_SIZE) * byte_cycles)
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
    if result.elapsed < 0.9 * (1 << 32) / clock:
        # The board's 32-bit cycle stamps (board time: simulated time on the virtual board).
        source = "board cycles"
        to_board, from_board = utilisation(status, link.hello)
        board_time = ((status.tx_status + (OVERHEAD + STATUS_SIZE) * 10 * clock /
                       link.hello.baud) / clock)
    else:
        # The stamps wrap after 2**32 cycles (two minutes at 36 MHz): use the wall clock.
        source = "wall clock"
        board_time = result.elapsed
        capacity = link.hello.baud / 10 * board_time
        to_board, from_board = len(data) / capacity, len(result.output) / capacity
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
        "utilisation_measured_by": source,
        "busier_direction": busier,
        "utilisation_to_board": to_board,
        "utilisation_from_board": from_board,
        "wire_bytes_to_board": result.wire_in,
        "wire_bytes_from_board": result.wire_out,
        "board_seconds": board_time,
        "wall_seconds": result.elapsed,
        "throughput_bytes_per_s": len(data) / board_time if board_time else 0.0,
    }, result.output
