"""cocotb testbench of the exported cores: AXI4-Stream traffic checked against the reference
model (run under Verilator by ``tests/test_export_cocotb.py``; not a pytest module).

The top level (``exported.top_module``) instantiates every exported core with its ports
prefixed by an instance name (``decoder_replace_s_axis_tdata``, ``decoder_replace_aclk``, ...)
and shares ``aresetn``. Plusargs:

``+dut=NAME``
    the instance to drive; ``+core=`` and ``+errors=`` say what it is (and for the transcoder
    ``+source_encoding=`` and ``+target_encoding=``, for the UTF-16 byte stages
    ``+byteorder=``, for the text decoder and encoder and the CESU-8 expander ``+encoding=``).
``+items=N``, ``+items_before_reset=M``, ``+seed=S``
    (``random_stream``) N items (bytes or code units) in random messages, the reset after the
    first M of them; the random generator's seed.
``+trace=FILE``, ``+trace_cycles=N``
    (``random_stream``) record the first N cycles of every port of the instance into FILE
    (JSON: ``{"ports": [names], "cycles": [[values] per cycle]}``, sampled before the rising
    edge that acts on them) for the Amaranth simulation to replay.

Each test drives the input with cocotbext-axi's :class:`AxiStreamSource` and takes the output
with :class:`AxiStreamSink`, both paused at random (phases of 0 %, 20 %, 50 % and 90 % pauses;
lighter for the corpora),
checks every output beat (``tdata``, ``tkeep``, ``tuser``) and message boundary (``tlast``)
against :mod:`utf8_gateware.sim.reference`, and that the top level's checker of the output
stream rules (once ``m_axis_tvalid`` is high it and the payload hold until the transfer) saw
no breach.
"""

import json
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge, Timer, with_timeout
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

import corpora
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim import encodings, engines, reference
from utf8_gateware.sim.encodings.surrogates import StripByteOrderMark
from utf8_gateware.sim.encodings.utf16 import CodeUnits, encoded_beats


CLOCK_NS = 10
#: Probabilities of a pause in a cycle, one of them per phase and side: for the random streams,
#: and lighter for the corpora (their point is the content; it halves their cycles).
PAUSES = (0.0, 0.2, 0.5, 0.9)
LIGHT_PAUSES = (0.0, 0.0, 0.1, 0.5)
#: The byte order marks of UTF-16, big- and little-endian.
MARKS = (b"\xfe\xff", b"\xff\xfe")
#: U+FEFF, the mark as a code unit.
MARK_UNIT = 0xFEFF
#: Cycles an output may take at most after the previous one before the test fails (generous:
#: 90 % pauses on both sides).
STALL_CYCLES = 5000


# -------------------------------------------------------------------------------------------------
# What the cores must produce

def expected_beats(core, errors, message, source=None, target=None, byteorder=None,
                   encoding=None):
    """The output beats ``[(tdata, tuser)]`` of ``core`` for one message (bytes for the decoder,
    the sanitizer, the transcoder from ``source`` to ``target``, the text decoder of
    ``encoding`` and the UTF-16 cores that take bytes or code units, code points for the
    encoders, ``(code point, policy)`` pairs for the UTF-16 byte stage: see
    :func:`code_unit_items`)."""
    if core in ("utf8_bom_writer", "cesu8_expander"):
        return byte_stage_beats(core, message, encoding)
    if core == "transcoder":
        return written_beats(target, errors, [(decoded.codepoint, decoded.error) for decoded
                                              in encodings.decode(message, source, errors)])
    if core == "text_decoder":
        return [(out.codepoint, out.error.value)
                for out in encodings.decode(message, encoding, errors)]
    if core == "text_encoder":
        return written_beats(encoding, errors, [(unit, ErrorKind.NONE) for unit in message])
    if core.startswith("utf16_"):
        return utf16_beats(core, errors, message, byteorder)
    if core == "validator":
        verdict = engines.validate(message, "reference")
        return [((verdict.first_error_offset or 0) | verdict.errors << 32,
                 (verdict.first_error_kind or ErrorKind.NONE).value | verdict.valid << 3)]
    if core == "decoder":
        return [(out.codepoint, out.error.value) for out in reference.decode(message, errors)]
    if core == "encoder":
        units = [(unit, ErrorKind.NONE) for unit in message]
    elif core == "sanitizer":
        units = [(out.codepoint, out.error) for out in reference.decode(message, errors)]
    else:
        raise ValueError(f"unknown core {core!r}")
    beats = []
    for unit, carried in units:
        data, kind = reference.encode_unit(unit, errors)
        kind = kind if kind is not ErrorKind.NONE else carried
        # A unit that yields no byte (strict) yields one marker beat: data 0, its error kind.
        for index, byte in enumerate(data or b"\0"):
            beats.append((byte, kind.value if index == 0 else 0))
    return beats


def code_units(data, byteorder):
    """``[(code unit, ErrorKind)]`` of the model's UTF-16 byte stage for ``data`` (an odd
    trailing byte is a marker item, unit 0, ``TRUNCATED``)."""
    stage = CodeUnits(byteorder)
    return [(piece.value or 0, piece.kind) for piece in stage.feed(data) + stage.finish()]


def code_unit_items(core, message):
    """``[(code unit, ErrorKind)]``: what the stage before writes for one message of the UTF-16
    decoder (bytes, through the model's UTF-16LE byte stage: an odd trailing byte is a marker
    item, unit 0, ``TRUNCATED``) or of the UTF-16 byte stage and the mark's writer (``(code
    point, policy)`` pairs, through the model's UTF-16 encoder: a substitute U+FFFD carries its
    kind, a code point that ``strict`` leaves out is a marker item, unit 0 and its kind)."""
    if core == "utf16_decoder":
        return code_units(message, "little")
    return [item for codepoint, policy in message for item in encoded_beats(codepoint, policy)]


def utf16_beats(core, errors, message, byteorder):
    """The beats of a UTF-16 code-unit core (``utf16_encoder``, ``utf16_decoder``,
    ``utf16_units``, ``utf16_bytes``, ``utf16_bom_units``, ``utf16_bom_writer``) for one
    message, from the model's UTF-16 stages."""
    if core == "utf16_units":
        return [(unit, kind.value) for unit, kind in code_units(message, byteorder)]
    if core == "utf16_bom_units":      # the order from a leading mark (big without), it dropped
        units, strip = CodeUnits(None), StripByteOrderMark()
        return [(piece.value or 0, piece.kind.value)
                for piece in strip.feed(units.feed(message) + units.finish())]
    if core == "utf16_bom_writer":     # U+FEFF, then the message's units as they are
        return [(MARK_UNIT, ErrorKind.NONE.value),
                *((unit, kind.value) for unit, kind in code_unit_items(core, message))]
    if core == "utf16_bom_bytes":      # FE FF, then the units as utf16_bytes("big") writes them
        return [(byte, ErrorKind.NONE.value) for byte in MARKS[0]] + utf16_beats(
            "utf16_bytes", errors, message, "big")
    if core == "utf16_decoder":
        return [(out.codepoint, out.error.value)
                for out in encodings.decode(message, "utf-16-le", errors)]
    if core == "utf16_encoder":      # code units, each 16 bits, the kind on the first
        pieces = [(codepoint, errors, "little", 2) for codepoint in message]
    else:                            # utf16_bytes: bytes in the stage's byte order
        pieces = [(codepoint, policy, byteorder, 1) for codepoint, policy in message]
    return [(value, kind.value) for piece in pieces for value, kind in encoded_beats(*piece)]


def sanitized_beats(message):
    """``[(byte, ErrorKind)]``: what the sanitiser writes for one message of the byte stages
    after it (``utf8_bom_writer``, ``cesu8_expander``), ``[(code point, ErrorKind)]`` as the
    model decodes it: an item's UTF-8 bytes, its kind on the first (a U+FFFD that stands for an
    error), or an escaped byte (U+DC80..U+DCFF with a kind: ``surrogateescape``) as it was."""
    beats = []
    for codepoint, kind in message:
        if kind != ErrorKind.NONE and 0xDC80 <= codepoint <= 0xDCFF:
            beats.append((codepoint - 0xDC00, kind))
        else:
            beats += [(byte, kind if index == 0 else ErrorKind.NONE)
                      for index, byte in enumerate(chr(codepoint).encode())]
    return beats


def byte_stage_beats(core, message, encoding):
    """The beats of a byte stage after the sanitiser for one message (:func:`sanitized_beats`):
    the ``utf-8-sig`` mark's writer (EF BB BF, then the bytes as they are) or the expander into
    ``encoding`` (each item as the model encodes it, its kind on the first byte; an escaped
    byte as it is)."""
    if core == "utf8_bom_writer":
        return [(byte, 0) for byte in "\ufeff".encode()] + [
            (byte, kind.value) for byte, kind in sanitized_beats(message)]
    beats = []
    for codepoint, kind in message:
        if kind != ErrorKind.NONE and 0xDC80 <= codepoint <= 0xDCFF:
            beats.append((codepoint - 0xDC00, kind.value))
        else:
            data = encodings.encode([codepoint], encoding, "replace").data
            beats += [(byte, kind.value if index == 0 else 0) for index, byte in enumerate(data)]
    return beats


def written_beats(target, errors, items):
    """The beats of an encoder of ``target`` (the text encoder's, the transcoder's) for
    ``items`` (``[(code point, the error kind it carries)]``): a mark in front if the target
    writes one, then per item its bytes, the first flagged with the encoder's error kind or
    the carried one (one marker beat, data 0, for an item the policy leaves out)."""
    mark = encodings.encode([], target, errors).data
    beats = [(byte, 0) for byte in mark]
    for codepoint, carried in items:
        encoded = encodings.encode([codepoint], target, errors)
        kind = encoded.errors[0][1] if encoded.errors else carried
        for index, byte in enumerate(encoded.data[len(mark):] or b"\0"):
            beats.append((byte, kind.value if index == 0 else 0))
    return beats


# -------------------------------------------------------------------------------------------------
# Stimulus

def random_bytes(rng, length):
    """UTF-8-like text: well-formed characters of every length, ill-formed bytes, truncated
    and overlong sequences, surrogates and values beyond U+10FFFF."""
    out = bytearray()
    while len(out) < length:
        pick = rng.random()
        if pick < 0.55:
            low, high = rng.choice(((0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF),
                                    (0x10000, 0x10FFFF)))
            char = chr(rng.randint(low, high)).encode("utf-8", "surrogatepass")
            if rng.random() < 0.15 and len(char) > 1:
                char = char[:rng.randint(1, len(char) - 1)]          # truncated
            out += char
        elif pick < 0.7:
            out.append(rng.randint(0x80, 0xFF))                      # any non-ASCII byte
        else:
            out += rng.choice((b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xe0\x9f\xbf",
                               b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf0\x80\x80\x80",
                               b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80",
                               b"\xfe", b"\xff", b"\xef\xbf\xbd", b"\xf4\x8f\xbf\xbf"))
    return bytes(out[:length])


def random_units(rng, length):
    """UTF-32 code units of every class: 1- to 4-byte scalars, surrogates (and the escapes
    U+DC80..U+DCFF), values from 0x110000 up to 0xFFFFFFFF, and the boundaries between."""
    edges = (0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xD800, 0xDBFF, 0xDC00, 0xDC7F, 0xDC80, 0xDCFF,
             0xDD00, 0xDFFF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF, 0x110000, 0x1FFFFF, 0x200000,
             0xFFFFFFFF)
    ranges = ((0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, 0x10FFFF), (0xD800, 0xDFFF),
              (0xDC80, 0xDCFF), (0x110000, 0x1FFFFF), (0x200000, 0xFFFFFFFF))
    return [rng.choice(edges) if rng.random() < 0.2 else rng.randint(*rng.choice(ranges))
            for _ in range(length)]


def random_utf16(rng, length):
    """UTF-16LE bytes: BMP units, lead and trail surrogates (in pairs and alone), and
    sometimes an odd trailing byte."""
    out = bytearray()
    while len(out) < length:
        unit = rng.choice((rng.randrange(0xD800), rng.randrange(0xD800, 0xDC00),
                           rng.randrange(0xDC00, 0xE000), rng.randrange(0xE000, 0x10000)))
        out += unit.to_bytes(2, "little")
    return bytes(out[:length])


def random_marked_utf16(rng, length):
    """UTF-16 bytes for the stage that reads the mark: a mark of either order or none in
    front, sometimes one later too (U+FEFF / U+FFFE there), ``length`` bytes in all; never a
    message of only a mark (it has no output to end it)."""
    data = rng.choice((*MARKS, b"")) + random_utf16(rng, length)
    if rng.random() < 0.2:
        cut = rng.randrange(0, len(data) + 1, 2)
        data = data[:cut] + rng.choice(MARKS) + data[cut:]
    data = data[:length]
    return data + b"A" if data in MARKS else data


def random_sanitized(rng, length):
    """``[(code point, ErrorKind)]``: :func:`random_bytes` with a fifth of its ASCII bytes
    made 00 (MUTF-8's C0 80) as the model decodes it under ``replace`` or ``surrogateescape``
    (one of them per message), for the byte stages after the sanitiser
    (:func:`sanitized_beats`)."""
    policy = rng.choice(("replace", "surrogateescape"))
    data = bytes(0 if byte < 0x80 and rng.random() < 0.2 else byte
                 for byte in random_bytes(rng, length))
    return [(item.codepoint, item.error) for item in encodings.decode(data, "utf-8", policy)]


def random_unit_policies(rng, length):
    """``(code point, policy)`` pairs for the UTF-16 byte stage (:func:`code_unit_items`)."""
    return [(unit, rng.choice(("replace", "strict", "surrogatepass")))
            for unit in random_units(rng, length)]


def random_message(core, rng, length):
    """One message of ``length`` items for ``core``."""
    make = {"encoder": random_units, "utf16_encoder": random_units, "utf16_decoder": random_utf16,
            "utf16_bytes": random_unit_policies, "utf16_bom_writer": random_unit_policies,
            "utf16_bom_bytes": random_unit_policies, "utf8_bom_writer": random_sanitized,
            "cesu8_expander": random_sanitized,
            "utf16_bom_units": random_marked_utf16, "text_encoder": random_units,
            "text_decoder": random_marked_utf16}.get(core, random_bytes)
    return make(rng, length)


def random_messages(core, rng, items):
    """Messages of 1 to 200 items (mostly short), ``items`` in all."""
    messages, total = [], 0
    while total < items:
        length = rng.choice((1, 2, 3, 4, rng.randint(1, 16), rng.randint(1, 200)))
        messages.append(random_message(core, rng, length))
        total += length
    return messages


async def pause_both(clock, rng, source, sink, probabilities):
    """Pause ``source`` and ``sink`` at random: phases of 1..200 cycles, in each of which
    each side pauses in a cycle with one of the ``probabilities`` (one coroutine for both
    sides: the simulation's time goes into Python's work per cycle)."""
    edge = RisingEdge(clock)
    while True:
        source_p, sink_p = rng.choice(probabilities), rng.choice(probabilities)
        cycles = rng.randint(1, 200)
        if source_p == sink_p == 0:
            source.pause = sink.pause = False
            await ClockCycles(clock, cycles)
            continue
        for _ in range(cycles):
            source.pause = rng.random() < source_p
            sink.pause = rng.random() < sink_p
            await edge


# -------------------------------------------------------------------------------------------------
# The bench

#: Every port a trace may record, inputs first (a core has ``tkeep`` with lanes only, an input
#: ``tuser`` for code units only).
PORTS = ("aresetn", "s_axis_tvalid", "s_axis_tdata", "s_axis_tkeep", "s_axis_tlast",
         "s_axis_tuser", "m_axis_tready", "s_axis_tready", "m_axis_tvalid", "m_axis_tdata",
         "m_axis_tkeep", "m_axis_tuser", "m_axis_tlast")
#: The ports of :data:`PORTS` that are the core's outputs.
OUTPUTS = frozenset({"s_axis_tready", "m_axis_tvalid", "m_axis_tdata", "m_axis_tkeep",
                     "m_axis_tuser", "m_axis_tlast"})
#: Bits of one error kind on ``m_axis_tuser``.
KIND_BITS = 3


class Bench:
    """The drivers of one instance of the top level. Frames are bytes on both sides (the
    encoder's code units as 4 little-endian bytes each); :meth:`beats` turns an output frame
    back into items."""

    def __init__(self, dut, seed):
        args = cocotb.plusargs
        self.dut = dut
        self.name = args["dut"]
        self.core = args["core"]
        self.errors = args["errors"]
        self.encodings = (args.get("source_encoding"), args.get("target_encoding"))
        self.byteorder = args.get("byteorder")
        self.encoding = args.get("encoding")
        self.rng = random.Random(seed)
        self.ports = [name for name in PORTS
                      if name == "aresetn" or hasattr(dut, f"{self.name}_{name}")]
        self.clock = self.port("aclk")
        self.source = AxiStreamSource(
            AxiStreamBus.from_prefix(dut, f"{self.name}_s_axis"), self.clock, dut.aresetn,
            reset_active_level=False)
        self.sink = AxiStreamSink(
            AxiStreamBus.from_prefix(dut, f"{self.name}_m_axis"), self.clock, dut.aresetn,
            reset_active_level=False)
        self.trace = []

    def port(self, name):
        """A port of the instance (``aresetn`` is shared)."""
        return self.dut.aresetn if name == "aresetn" else getattr(self.dut, f"{self.name}_{name}")

    async def start(self, trace_cycles=0, pauses=PAUSES):
        """Start the clock, the random pauses (``pauses``: the probabilities of
        :func:`pause_both`, ``None`` for none) and the recording of the first
        ``trace_cycles`` cycles; hold reset for the first ``+reset_cycles`` rising edges
        (default 4)."""
        cycles = int(cocotb.plusargs.get("reset_cycles", 4))
        self.dut.aresetn.value = 0 if cycles else 1
        self.dut.rule_probe.value = 0
        Clock(self.clock, CLOCK_NS, unit="ns").start(start_high=False)
        if pauses:
            cocotb.start_soon(pause_both(self.clock, self.rng, self.source, self.sink, pauses))
        if trace_cycles:
            cocotb.start_soon(self._record(trace_cycles))
        if cycles:
            await ClockCycles(self.clock, cycles)
            self.dut.aresetn.value = 1

    async def _record(self, cycles):
        """Record every port in the first ``cycles`` cycles, before the rising edge."""
        handles = [self.port(name) for name in self.ports]
        falling = FallingEdge(self.clock)
        await Timer(1, "ns")
        while len(self.trace) < cycles:
            self.trace.append([int(handle.value) for handle in handles])
            await falling

    def frame(self, message):
        """The input frame of a message."""
        if self.core in ("encoder", "utf16_encoder", "text_encoder"):
            return AxiStreamFrame(b"".join(unit.to_bytes(4, "little") for unit in message))
        if self.core in ("utf8_bom_writer", "cesu8_expander"):      # bytes and their kinds
            beats = sanitized_beats(message)
            return AxiStreamFrame(bytes(byte for byte, _ in beats),
                                  tuser=[kind.value for _, kind in beats])
        if self.core in ("utf16_decoder", "utf16_bytes", "utf16_bom_writer",
                         "utf16_bom_bytes"):                          # units, kinds
            items = code_unit_items(self.core, message)
            return AxiStreamFrame(b"".join(unit.to_bytes(2, "little") for unit, _ in items),
                                  tuser=[kind.value for _, kind in items for _ in range(2)])
        return AxiStreamFrame(bytes(message))

    def beats(self, frame):
        """``[(item, error kind)]`` of an output frame (taken with ``compact=False``): each
        beat holds one item per ``KIND_BITS`` of ``tuser``; a lane whose ``tkeep`` bits are
        clear holds none."""
        beat_bytes = len(self.port("m_axis_tdata")) // 8
        if self.core == "validator":   # a verdict: offset and count on tdata, kind and valid
            return [(int.from_bytes(frame.tdata[start:start + beat_bytes], "little"),
                     frame.tuser[start]) for start in range(0, len(frame.tdata), beat_bytes)]
        lanes = len(self.port("m_axis_tuser")) // KIND_BITS
        lane_bytes = beat_bytes // lanes
        items = []
        for start in range(0, len(frame.tdata), beat_bytes):
            user = frame.tuser[start]
            for lane in range(lanes):
                first = start + lane * lane_bytes
                keep = set(frame.tkeep[first:first + lane_bytes]) if frame.tkeep else {1}
                if len(keep) != 1:
                    raise AssertionError(f"tkeep of lane {lane} is partly set: {frame.tkeep}")
                if keep == {1}:
                    items.append((int.from_bytes(frame.tdata[first:first + lane_bytes],
                                                 "little"),
                                  user >> KIND_BITS * lane & (1 << KIND_BITS) - 1))
        return items

    async def check(self, messages, label):
        """Send ``messages`` (one frame each) and check every output frame."""
        for message in messages:
            self.source.send_nowait(self.frame(message))
        for index, message in enumerate(messages):
            frame = await with_timeout(self.sink.recv(compact=False),
                                       STALL_CYCLES * CLOCK_NS * max(1, len(message)), "ns")
            got = self.beats(frame)
            want = expected_beats(self.core, self.errors, message, *self.encodings,
                                  byteorder=self.byteorder, encoding=self.encoding)
            if got != want:
                raise AssertionError(describe(label, index, message, want, got))
        await ClockCycles(self.clock, 32)
        assert not self.port("rule_error").value, "m_axis broke the stream rules (see the log)"
        assert self.sink.empty() and not self.sink.active, "output beyond the last message"


def _show(items, limit=24):
    text = " ".join(f"{item:02X}" if isinstance(item, int) else str(item)
                    for item in list(items)[:limit])
    return text + (" ..." if len(items) > limit else "")


def describe(label, index, message, want, got):
    """A one-screen account of a mismatch: the message and the first differing beat."""
    first = next((n for n, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want),
                                                                               len(got)))
    return (f"{label} message {index} ({len(message)} items): input {_show(message)}; "
            f"first difference at beat {first}: expected (tdata, tuser) "
            f"{want[first:first + 4]}, got {got[first:first + 4]} "
            f"({len(want)} beats expected, {len(got)} received)")


# -------------------------------------------------------------------------------------------------
# Tests

@cocotb.test()
async def corpora_stream(dut):
    """Every corpus case as one message (decoder, sanitizer: the decoding cases, Markus Kuhn's
    stress test and the flenniken file; encoder: the encoding cases), under light pauses."""
    bench = Bench(dut, seed=1)
    await bench.start(pauses=LIGHT_PAUSES)
    if bench.core == "encoder":
        messages = [case.units for case in corpora.encode_cases() if case.units]
    else:
        messages = [case.data for case in corpora.decode_cases() if case.data]
        messages += [corpora.kuhn(), corpora.flenniken_whole_file()[0]]
    await bench.check(messages, "corpus")


@cocotb.test()
async def random_stream(dut):
    """Random messages; a reset in the middle of a message; random messages again (nothing of
    the interrupted message may leak into them)."""
    args = cocotb.plusargs
    trace_cycles = int(args.get("trace_cycles", 0))
    bench = Bench(dut, seed=int(args.get("seed", 1)))
    await bench.start(trace_cycles)
    items, before = int(args.get("items", 4000)), int(args.get("items_before_reset", 100))
    await bench.check(random_messages(bench.core, bench.rng, before), "before reset")

    # A long message, interrupted by a reset while input and output are both under way.
    bench.source.send_nowait(bench.frame(random_message(bench.core, bench.rng, 100)))
    await ClockCycles(bench.clock, bench.rng.randint(20, 60))
    dut.aresetn.value = 0
    await ClockCycles(bench.clock, 2)
    dut.aresetn.value = 1
    await ClockCycles(bench.clock, 2)
    bench.sink.clear()
    await bench.check(random_messages(bench.core, bench.rng, items - before), "after reset")

    if trace_cycles:
        while len(bench.trace) < trace_cycles:
            await ClockCycles(bench.clock, 1)
        with open(args["trace"], "w") as file:
            json.dump({"ports": bench.ports, "cycles": bench.trace}, file)


@cocotb.test()
async def rule_checker(dut):
    """The stream-rule checker of the top level fires: ``rule_probe`` while an output is
    held counts as a breach."""
    bench = Bench(dut, seed=1)
    await bench.start(pauses=None)
    assert not bench.port("rule_error").value
    bench.sink.pause = True
    bench.source.send_nowait(bench.frame(random_message(bench.core, bench.rng, 8)))
    held = 0
    while held < 2:
        await RisingEdge(bench.clock)
        held = held + 1 if bench.port("m_axis_tvalid").value else 0
    dut.rule_probe.value = 1
    await RisingEdge(bench.clock)
    dut.rule_probe.value = 0
    await RisingEdge(bench.clock)
    assert bench.port("rule_error").value
