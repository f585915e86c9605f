"""The framed, credit-based protocol between a host and the board's UART (constants + host codec).

Frames (both directions)
------------------------
::

    A5 | type | len (u16 LE) | payload (len bytes) | CRC-16 (big-endian)

``A5`` is the sync byte; the CRC is CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no
reflection, no final XOR; ``binascii.crc_hqx(..., 0xFFFF)``) over ``type``, ``len`` and the
payload. Overhead: :data:`OVERHEAD` = 6 bytes per frame. All multi-byte fields are little-endian
except the CRC (big-endian, so that the receiver's CRC over a whole frame has a fixed residue).

A receiver that meets a bad CRC, an unknown type, a length not allowed for the type, a UART
framing error or a frame left incomplete for :data:`FRAME_TIMEOUT_S` discards the frame, reports
it (the board sends an ``ERROR`` frame) and hunts for the next sync byte (it resynchronises at the
byte after the bad frame's sync byte).

Host -> board
-------------
``HELLO`` (0x01, empty)
    Abort whatever is going on (resets the board's datapath) and reply ``HELLO_ACK``.
``START`` (0x02, ``mode`` u8, ``window`` u32, ``frame`` u16)
    Begin a message in ``mode`` (:class:`Mode`); ``window``: the host accepts output payload bytes
    up to ``window`` (at most :data:`MAX_WINDOW`) beyond what it acknowledged; ``frame``: the
    largest DATA frame payload the board sends it (0 or more than ``max_payload``: ``max_payload``).
    Reply: ``CREDIT``. Refused (``BUSY``) while a message is in progress; a finished message (its
    STATUS sent) is replaced.
``DATA`` (0x03, ``offset`` u24, ``epoch`` u8, ``data`` (1..``max_payload`` bytes))
    Message input: ``data`` are the input bytes from ``offset`` (modulo 2**24) on. The board
    takes them if ``offset`` is the count it has received (the frame is the next one in
    order), and keeps them past a gap if they start its held range or extend it (selective
    repeat, below); else it rejects the frame (``SEQUENCE``). ``epoch``: bits 0..6 the host's
    count of its retransmission rounds (modulo 128), echoed in the board's ``ERROR``; bit 7
    (:data:`ASK`, version 2 on): a frame the board takes in order owes a ``CREDIT``, as if a
    ``WINDOW`` followed it (the host's request for the count, 12 bytes fewer on its line; the
    host asks so when it has no output to acknowledge). The host never sends past the last
    ``CREDIT`` it received. The offset comes *first*: the board's receiver knows where the data
    go in its input buffer before they arrive.
``END`` (0x04, ``total`` u24, ``epoch`` u8)
    End of the message's input, ``total`` bytes in all (modulo 2**24); refused (``SEQUENCE``) unless
    all of them have arrived. When all output is out, the board sends ``STATUS``. An END after that
    asks for the STATUS again.
``WINDOW`` (0x05, ``acked`` u32, ``flags`` u8, ``epoch`` u8)
    The host has every output payload byte below ``acked`` (cumulative): the board frees them and
    may send up to ``acked + window``; it answers with a ``CREDIT``. ``flags`` bit 0
    (:data:`REWIND`): send again from ``acked`` (the host missed a frame), with ``epoch`` in the
    DATA frames from then on.

Board -> host
-------------
``HELLO_ACK`` (0x81): ``version`` u8, 0 u8, ``max_payload`` u16, ``clock_hz`` u32,
    ``baud`` u32, ``in_capacity`` u32, ``out_capacity`` u32.
``CREDIT`` (0x82): ``credit`` u32 (cumulative: the host may send input payload bytes up to this
    count), ``received`` u32 (the input bytes the board has: the acknowledgement).
``DATA`` (0x83): ``offset`` u24 (modulo 2**24), ``epoch`` u8 (of the last ``REWIND``), then
    output payload bytes from ``offset`` on (in order).
``STATUS`` (0x84): the counters and 64-bit stamps of :data:`STATUS_LAYOUT`.
``ERROR`` (0x85): ``code`` u8 (:class:`ErrorCode`), ``epoch`` u8 (of the rejected DATA or END
    frame), ``received`` u32 (as in ``CREDIT``), ``have_from`` u16, ``have_to`` u16 (modulo
    2**16, within the input buffer of ``received``: the input bytes the board holds past the
    gap at ``received``; equal: none).

Flow control (overrun is impossible in both directions)
-------------------------------------------------------
*Host -> board.* The board grants cumulative input credit. With ``consumed`` input bytes taken
by the datapath, ``pending`` output bytes in the output buffer (sent or not, until the host
acknowledges them) and the mode's worst-case expansion ``k`` output bytes per input byte
(:data:`EXPANSION`), the credit is at most::

    min(consumed + in_capacity,  consumed + (out_capacity - pending - slack) // k)

so every byte the host may send fits in the input buffer *and* its worst-case output fits in
the output buffer (``slack`` covers what the cores still hold). The credit never decreases; the
board announces it after ``START``, in answer to a ``WINDOW``, and until the message's ``END``
has arrived also whenever it has grown by :data:`CREDIT_STEP` bytes and when
the line from the host has been silent for 32 byte times (the host may be waiting for it). After
``END`` a credit is no news: announcing it would only take line time from the output. With
32 KiB of input buffer and 64 KiB of output buffer (SPRAM) the host is granted 16..32 KiB ahead,
several frames, so it never waits for a round trip: the busier direction of the line carries
payload more than 99 % of the time (``DATA`` frames of 4 KiB cost 0.24 %, ``CREDIT`` frames
about 14 bytes per 8 KiB of input: the answers to the host's requests for the count, which
make most announcements needless). A DATA frame's length with its offset (``data`` + 4) must fit in
the credit left.

*Board -> host.* The host grants a receive window (``START``) beyond its acknowledgement
(``WINDOW``); the board never sends output beyond it.

Faults and retransmission (selective repeat to the board, go-back-N from it)
---------------------------------------------------------------------------
Every DATA frame carries the stream offset of its first byte, so a lost, duplicated, corrupted or
truncated frame is a gap its receiver sees. A frame the board rejects (bad CRC, length or type, a
framing error, a frame left incomplete for :data:`FRAME_TIMEOUT_S`, a DATA frame out of order) gets
an ``ERROR`` with the count of input bytes it has (a negative acknowledgement) and the range it
holds past it; the payload of a rejected frame is forgotten and the message goes on. The board
writes a DATA frame at its offset in the input buffer: the frames after a gap are kept as one range
(``have_from`` .. ``have_to``: the first such frame starts it, each frame at its end extends it; a
frame elsewhere past the gap is refused), each answered by an ``ERROR`` (``SEQUENCE``) with the
count and the range, and when the frame that fills the gap arrives the range joins the count. The
host then sends again only the gap (from the count up to ``have_from``), in a new epoch (the ERRORs
of the frames it has kept carry the old epoch, so the host ignores them), and goes on from where it
was (selective repeat). A frame that would write over the range, or whose end is past the credit, is
refused and never written. A repeat (a DATA frame whose offset is below the count) is dropped
quietly and answered with a CREDIT, not an ERROR: its count would look like a gap, and the go-back
it caused would send more repeats. The epochs of the output (``REWIND``) serve alike: a gap in a
frame sent before the board saw the last ``REWIND`` is no news. In the other direction the host
drops a DATA frame it cannot use and asks for the output again from what it has (``WINDOW`` with
:data:`REWIND`); the board keeps every output byte until it is acknowledged. Frames lost without a
trace (a sync byte dropped) are found by the host's timeout: without progress it probes with
``END``, or with its last input byte as a DATA frame of its own (a gap the board answers with an
``ERROR`` and its count; a needless probe costs 15 bytes, not a frame), and a ``WINDOW`` with
``REWIND`` (the board has no timer: output, or a request for it, lost on the line is sent again
here; with all output received a rewind sends nothing but the STATUS). The STATUS is sent when all
output has been sent; a host that misses output or the STATUS asks again (``REWIND``, ``END``), once
per gap and round trip: a gap it sees after a timeout (the answer to its probe) is news, however
long the backed-off timeout. A board that lost the message (it was reset) answers ``NO_MESSAGE``:
the host starts the message over. The host's ``WINDOW`` (``REWIND``) waits behind its input in
flight on the line (and go-back-N, before selective repeat, sent all of it again after a loss), so
the host keeps that small (a few frames, however large its credit; the range the board holds past a
gap is not in flight, so the line stays busy while the gap's frame waits) and asks for the board's
count every half of it (a ``WINDOW`` is answered by a ``CREDIT``; the first after half of it too,
not after the first frame); those round trips size its timeout. The host gives up after a number of
timeouts without progress or of restarts (see :class:`~utf8_gateware.boards.host.Link`).

Modes
-----
``transcode`` (0): UTF-8 in, sanitised UTF-8 out (decoder -> encoder, ``errors="replace"``).
``decode`` (1): UTF-8 in, one u32 LE per decoder output, laid out as :data:`DECODE_WORD` (bits
    0..20 the code point, bits 24..26 the :class:`~utf8_gateware.hdl.error_kind.ErrorKind`).
``encode`` (2): UTF-32LE in, UTF-8 out (``errors="replace"``). A trailing partial unit (1..3
    bytes) becomes one U+FFFD and counts as one ``truncated`` error.
``validate`` (3): UTF-8 in, no output; only the ``STATUS`` counters.
``to-utf16`` (4): UTF-8 in, UTF-16LE out (decoder -> UTF-16 encoder, ``errors="replace"``: each
    maximal subpart becomes FD FF), as ``data.decode("utf-8", "replace").encode("utf-16-le")``.
``from-utf16`` (5): UTF-16LE in, UTF-8 out (UTF-16 decoder -> encoder, ``errors="replace"``), as
    ``data.decode("utf-16-le", "replace").encode("utf-8")``: a lone surrogate counts as
    ``surrogate``, an odd trailing byte as ``truncated`` (one U+FFFD with a lead surrogate just
    before it, as CPython).

The ``STATUS`` counts the outputs of the mode's decoder (``encode``: the units the encoder took)
as ``codepoints`` and its errors per kind.

Tables
------
The constants are :mod:`amaranth.lib.enum` types, used by the gateware and the host alike. The
board's gateware is generated from the tables here: the length check of its frame receiver from
:func:`host_lengths`, its credit from :data:`CREDIT_SHIFT` (:data:`EXPANSION` as a shift), its
STATUS payload from :data:`STATUS_LAYOUT`, the ``decode`` output from :data:`DECODE_WORD`.
"""

import binascii
import struct

from amaranth.hdl import unsigned
from amaranth.lib import data, enum

from utf8_gateware.hdl.error_kind import ErrorKind, Labelled


__all__ = [
    "SYNC", "OVERHEAD", "OFFSET_SIZE", "REWIND", "ASK", "EPOCH_MASK", "VERSION", "MAX_WINDOW",
    "MAX_PAYLOAD", "CREDIT_STEP", "FRAME_TIMEOUT_S",
    "HostFrame", "BoardFrame", "Mode", "UTF16_MODES", "ErrorCode", "EXPANSION", "CREDIT_SHIFT",
    "STATUS_FIELDS", "STATUS_LAYOUT", "ERROR_FIELDS", "DECODE_WORD", "decode_word",
    "host_lengths", "HOST_LENGTHS", "BOARD_LENGTHS",
    "crc16", "encode_frame", "BadFrame", "FrameParser", "Hello", "Status",
    "start_frame", "data_frame", "end_frame", "window_frame", "stream_position",
    "board_position", "OFFSET_MASK",
]


SYNC = 0xA5
HEADER = 4
OVERHEAD = 6
#: The stream offset every DATA frame carries (u32), on top of :data:`OVERHEAD`.
OFFSET_SIZE = 4
#: ``WINDOW`` flag: send the output again from ``acked``.
REWIND = 0x01
#: DATA ``epoch`` bit (protocol version 2 on): a frame taken in order owes a ``CREDIT``.
ASK = 0x80
#: The epochs of the input (DATA, END) count modulo 128 (below :data:`ASK`).
EPOCH_MASK = 0x7F
#: Offsets in DATA frames (and an END's total) are modulo 2**24; the top byte is an epoch.
OFFSET_MASK = 0xFF_FFFF
#: 2: a DATA frame's epoch bit 7 (:data:`ASK`) asks for a CREDIT (version 1 ignores it).
VERSION = 2
#: The largest receive window a host may grant in ``START`` (1 GiB: far beyond any buffer).
#: The board computes its room, ``acked + window - sent``, modulo 2**32 and takes it as
#: negative from 2**31 on; ``acked`` may pass ``sent`` by up to the output buffer (the host had
#: frames sent before a rewind), so a window near 2**31 would stop all output.
MAX_WINDOW = 1 << 30
#: Largest payload of a DATA frame (either direction): 6 bytes of framing per 4 KiB is 0.15 %.
MAX_PAYLOAD = 4096
#: The board announces a new credit when it has grown by this much (unasked). Twice a DATA
#: frame: the host asks for the board's count every half of its input in flight (at least two
#: frames, see :func:`~utf8_gateware.boards.host.inflight_for`) and the answers carry the
#: credit, so on the board's line (the busier one in ``transcode``) announcements between them
#: would only cost time (``transcode`` at 12 Mbaud: 98.7 % line utilisation with 4 KiB, 99.4 %
#: with 8 KiB).
CREDIT_STEP = 8192
#: A frame left incomplete for this long is discarded (the board's inter-byte timeout).
FRAME_TIMEOUT_S = 0.005


class HostFrame(enum.IntEnum, shape=8):
    HELLO  = 0x01
    START  = 0x02
    DATA   = 0x03
    END    = 0x04
    WINDOW = 0x05


class BoardFrame(enum.IntEnum, shape=8):
    HELLO_ACK = 0x81
    CREDIT    = 0x82
    DATA      = 0x83
    STATUS    = 0x84
    ERROR     = 0x85


class Mode(Labelled, enum.IntEnum, shape=3):
    """A message's mode (see the module's documentation); :attr:`label` is its command-line name
    (``"to-utf16"``), :meth:`from_label` the inverse."""
    TRANSCODE  = 0
    DECODE     = 1
    ENCODE     = 2
    VALIDATE   = 3
    TO_UTF16   = 4
    FROM_UTF16 = 5

    @property
    def label(self):
        return self.name.lower().replace("_", "-")

    @classmethod
    def from_label(cls, label):
        """The mode whose :attr:`label` is ``label``; one-line :class:`ValueError` if none."""
        for mode in cls:
            if mode.label == label:
                return mode
        raise ValueError(f"unknown mode {label!r}; one of {', '.join(m.label for m in cls)}")


#: The modes a board built without the UTF-16 stages (``BoardCore(utf16=False)``) refuses
#: (``BAD_MODE``): they are the last ones, so the board checks ``mode <= VALIDATE``.
UTF16_MODES = (Mode.TO_UTF16, Mode.FROM_UTF16)


#: Worst-case output payload bytes per input payload byte, a power of 2 (the credit divides by
#: it with a shift). ``transcode``: 3 (one byte, C2..F4, cut short -> EF BF BD), so 4.
#: ``decode``: 4 (a u32 per byte at most). ``encode``: 1 (4 bytes -> at most 4). ``validate``
#: has no output. ``to-utf16``: 2 (a byte -> at most one code unit; 4 bytes -> a pair).
#: ``from-utf16``: 1.5 (2 bytes -> at most 3), so 2. The end of a message can give 3 bytes for
#: fewer (``encode``: a partial unit; ``from-utf16``: an odd byte), a few bytes more than
#: granted, which :data:`~utf8_gateware.boards.credit.OUT_SLACK` covers.
EXPANSION = {Mode.TRANSCODE: 4, Mode.DECODE: 4, Mode.ENCODE: 1, Mode.VALIDATE: 0,
             Mode.TO_UTF16: 2, Mode.FROM_UTF16: 2}


def _shift(expansion):
    if expansion & (expansion - 1):
        raise ValueError(f"the worst-case expansion {expansion} is not a power of 2")
    return expansion.bit_length() - 1 if expansion else None


#: :data:`EXPANSION` as a right shift of the free output space (``None``: no output, the credit is
#: limited by the input buffer alone). The board's credit logic is generated from this table.
CREDIT_SHIFT = {mode: _shift(expansion) for mode, expansion in EXPANSION.items()}


class ErrorCode(enum.IntEnum, shape=4):
    """Why the board rejected a frame (payload of ``ERROR``)."""
    CRC          = 1   # bad CRC (corrupted frame)
    UNKNOWN_TYPE = 2   # a type the board does not know
    BAD_LENGTH   = 3   # a length not allowed for the type
    FRAMING      = 4   # UART framing error (bad stop bit) inside a frame
    TIMEOUT      = 5   # frame left incomplete (the host stopped mid-frame)
    NO_MESSAGE   = 6   # DATA or END without START
    BUSY         = 7   # START while a message is in progress
    OVERRUN      = 8   # DATA beyond the granted credit, or a UART overrun
    BAD_MODE     = 9   # START with an unknown mode
    SEQUENCE     = 10  # DATA not the next in order (a gap or a repeat), END before all DATA

    @property
    def description(self):
        return {
            ErrorCode.CRC: "a frame arrived with a bad CRC (corrupted on the line)",
            ErrorCode.UNKNOWN_TYPE: "a frame of unknown type arrived",
            ErrorCode.BAD_LENGTH: "a frame arrived with a length not allowed for its type",
            ErrorCode.FRAMING: "UART framing error (wrong baud rate or a noisy line)",
            ErrorCode.TIMEOUT: "a frame stopped arriving midway (the host went away?)",
            ErrorCode.NO_MESSAGE: "data arrived outside a message",
            ErrorCode.BUSY: "a message was started while another was in progress",
            ErrorCode.OVERRUN: "data arrived beyond the granted credit (or a UART overrun)",
            ErrorCode.BAD_MODE: "a message was started with an unknown mode",
            ErrorCode.SEQUENCE: "a frame arrived out of order (one before it was lost)",
        }[self]


#: The STATUS counters of errors, one per :class:`~utf8_gateware.hdl.error_kind.ErrorKind` but NONE.
ERROR_FIELDS = tuple(kind.label for kind in ErrorKind if kind is not ErrorKind.NONE)
#: The board-time stamps of STATUS (u64 cycle counts from the message's START: they never wrap
#: in practice). ``rx_first``/``rx_last``: when the first DATA frame's header (its first four
#: bytes) and the accepted END frame were received; ``tx_first``, ``tx_status``: when the first
#: output DATA frame and the STATUS frame started to be sent.
STAMP_FIELDS = ("rx_first", "rx_last", "tx_first", "tx_status")
#: The fields of STATUS, in order: u32 counters, then the u64 stamps.
STATUS_FIELDS = ("mode", "bytes_in", "bytes_out", "codepoints", *ERROR_FIELDS, *STAMP_FIELDS)
#: The STATUS payload as a layout (the board's status words are assigned by these names).
STATUS_LAYOUT = data.StructLayout({name: unsigned(64 if name in STAMP_FIELDS else 32)
                                   for name in STATUS_FIELDS})

#: One output word of the ``decode`` mode (u32, sent little-endian).
DECODE_WORD = data.FlexibleLayout(32, {
    "codepoint": data.Field(unsigned(21), 0),
    "error": data.Field(ErrorKind, 24),
})


def decode_word(codepoint, error):
    """The :data:`DECODE_WORD` value of a decoder output (an integer)."""
    return codepoint << DECODE_WORD["codepoint"].offset | \
        ErrorKind(error).value << DECODE_WORD["error"].offset


HELLO_FORMAT = "<BBHIIII"
HELLO_SIZE = struct.calcsize(HELLO_FORMAT)
STATUS_SIZE = STATUS_LAYOUT.size // 8
STATUS_FORMAT = "<" + "".join("Q" if name in STAMP_FIELDS else "I" for name in STATUS_FIELDS)


def host_lengths(max_payload=MAX_PAYLOAD):
    """Allowed payload lengths of the host's frames, ``{type: (min, max)}``, for a board whose
    largest DATA frame is ``max_payload``. The board's frame receiver is generated from it."""
    return {
        HostFrame.HELLO: (0, 0), HostFrame.START: (7, 7),
        HostFrame.DATA: (1 + OFFSET_SIZE, max_payload + OFFSET_SIZE),
        HostFrame.END: (4, 4), HostFrame.WINDOW: (6, 6),
    }


#: Allowed payload lengths: (min, max) per type.
HOST_LENGTHS = host_lengths()
BOARD_LENGTHS = {
    BoardFrame.HELLO_ACK: (HELLO_SIZE, HELLO_SIZE), BoardFrame.CREDIT: (8, 8),
    BoardFrame.DATA: (1 + OFFSET_SIZE, MAX_PAYLOAD + OFFSET_SIZE),
    BoardFrame.STATUS: (STATUS_SIZE, STATUS_SIZE), BoardFrame.ERROR: (10, 10),
}


def crc16(data, crc=0xFFFF):
    """CRC-16/CCITT-FALSE of ``data``."""
    return binascii.crc_hqx(data, crc)


def encode_frame(kind, payload=b""):
    """The bytes of one frame of type ``kind`` with ``payload``."""
    payload = bytes(payload)
    if len(payload) > 0xFFFF:
        raise ValueError(f"payload of {len(payload)} bytes is too long for a frame")
    body = bytes([int(kind)]) + len(payload).to_bytes(2, "little") + payload
    return bytes([SYNC]) + body + crc16(body).to_bytes(2, "big")


class Hello:
    """Parameters the board announces in ``HELLO_ACK``."""
    def __init__(self, payload):
        (self.version, _, self.max_payload, self.clock_hz, self.baud, self.in_capacity,
         self.out_capacity) = struct.unpack(HELLO_FORMAT, payload)

    def __repr__(self):
        return (f"Hello(version={self.version}, max_payload={self.max_payload}, "
                f"clock_hz={self.clock_hz}, baud={self.baud}, in_capacity={self.in_capacity}, "
                f"out_capacity={self.out_capacity})")


class Status:
    """The counters of a ``STATUS`` frame (attributes named as in :data:`STATUS_FIELDS`)."""
    def __init__(self, payload):
        values = struct.unpack(STATUS_FORMAT, payload)
        for name, value in zip(STATUS_FIELDS, values):
            setattr(self, name, value)

    @property
    def errors(self):
        return {name: getattr(self, name) for name in ERROR_FIELDS}

    def __repr__(self):
        return "Status(" + ", ".join(f"{name}={getattr(self, name)}"
                                     for name in STATUS_FIELDS) + ")"


class BadFrame(str):
    """Why the parser discarded bytes (a one-line reason); ``kind``: the frame type its header
    gave when only the length or the CRC was bad (a frame of that type was lost, most likely),
    else ``None``."""
    def __new__(cls, reason, kind=None):
        self = super().__new__(cls, reason)
        self.kind = kind
        return self


class FrameParser:
    """Incremental parser of a byte stream into frames (the host's receiver).

    :meth:`feed` returns a list of ``(type, payload)`` for good frames and ``(None, reason)`` for
    discarded ones (bad CRC, bad length, unknown type, stray bytes between frames; ``reason`` is
    a :class:`BadFrame`).
    """
    def __init__(self, lengths=BOARD_LENGTHS):
        self.lengths = {int(kind): limits for kind, limits in lengths.items()}
        self.buffer = bytearray()
        self.stray = 0

    def feed(self, data):
        self.buffer += data
        out = []
        buf = self.buffer
        while buf:
            if buf[0] != SYNC:
                start = buf.find(SYNC)
                skipped = len(buf) if start < 0 else start
                del buf[:skipped]
                self.stray += skipped
                out.append((None, BadFrame(f"{skipped} stray byte(s) between frames")))
                continue
            if len(buf) < HEADER:
                break
            kind, length = buf[1], buf[2] | buf[3] << 8
            limits = self.lengths.get(kind)
            if limits is None:
                del buf[:1]
                out.append((None, BadFrame(f"unknown frame type 0x{kind:02x}")))
                continue
            if not limits[0] <= length <= limits[1]:
                del buf[:1]
                out.append((None, BadFrame(f"bad length {length} for frame type 0x{kind:02x}",
                                           kind)))
                continue
            if len(buf) < HEADER + length + 2:
                break
            body = bytes(buf[1:HEADER + length])
            crc = buf[HEADER + length] << 8 | buf[HEADER + length + 1]
            if crc16(body) != crc:
                del buf[:1]
                out.append((None, BadFrame(f"bad CRC in a frame of type 0x{kind:02x}", kind)))
                continue
            del buf[:HEADER + length + 2]
            out.append((kind, body[3:]))
        return out


# -- the host's frames ---------------------------------------------------------------------------

def start_frame(mode, window, frame=0):
    """``START`` of a message in ``mode``: output up to ``window`` bytes beyond the acknowledged,
    DATA frames of at most ``frame`` payload bytes (0: the board's largest)."""
    return encode_frame(HostFrame.START, struct.pack("<BIH", mode, window, frame))


def stream_position(offset, epoch=0):
    """The u32 of a DATA frame's ``offset`` and ``epoch`` (an END's ``total``)."""
    return offset & OFFSET_MASK | (epoch & 0xFF) << 24


def data_frame(data, offset, epoch=0, ask=False):
    """``DATA``: the input bytes ``data`` from stream ``offset`` on; ``ask``: with
    :data:`ASK` (the board answers with a ``CREDIT`` once it took the frame in order)."""
    epoch = epoch & EPOCH_MASK | (ASK if ask else 0)
    return encode_frame(HostFrame.DATA,
                        struct.pack("<I", stream_position(offset, epoch)) + bytes(data))


def end_frame(total, epoch=0):
    """``END`` of a message of ``total`` input bytes."""
    return encode_frame(HostFrame.END, struct.pack("<I", stream_position(total, epoch)))


def window_frame(acked, rewind=False, epoch=0):
    """``WINDOW``: every output byte below ``acked`` arrived; ``rewind``: send again from there
    (in ``epoch``)."""
    return encode_frame(HostFrame.WINDOW,
                        struct.pack("<IBB", acked, REWIND if rewind else 0, epoch & 0xFF))


def board_position(value, have):
    """``(offset, epoch)`` of a board DATA frame's first u32, the offset made whole again next
    to ``have`` (the output bytes received: frames are within 2**23 of it)."""
    delta = (value - have) & OFFSET_MASK
    return have + delta - (delta >> 23 << 24), value >> 24
