# amaranth: UnusedElaboratable=no
"""The UTF-8 sanitiser (:class:`utf8_gateware.hdl.sanitizer.Utf8Sanitizer`, byte-level) in
Amaranth's Python simulator, against the reference model and CPython's codec."""

import codecs
import random

import pytest
from amaranth.sim import Simulator

from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.sanitizer import SANITIZE_ERRORS, Utf8Sanitizer
from utf8_gateware.sim import reference
from utf8_gateware.sim.testbench import run_simulation, run_stream


def expected_beats(messages, errors, decode=reference.decode):
    """The beats ``(data, error, last)`` the sanitiser must produce for ``messages``."""
    beats = []
    for message in messages:
        start = len(beats)
        for codepoint, kind in decode(message, errors):
            data, _ = reference.encode_unit(codepoint, errors)
            beats += [(byte, kind if index == 0 else ErrorKind.NONE, 0)
                      for index, byte in enumerate(data)]
        assert len(beats) > start
        beats[-1] = (*beats[-1][:2], 1)
    return beats


def sanitize(messages, errors, **kwargs):
    """Run ``messages`` (a list of non-empty byte strings) through the sanitiser."""
    items = [{"data": byte, "last": int(index == len(message) - 1)}
             for message in messages for index, byte in enumerate(message)]
    run = run_stream(Utf8Sanitizer(errors), items, **kwargs)
    return [(int(p.data), ErrorKind(p.error), int(p.last)) for p in run.outputs], run


def random_message(rng, size):
    """Bytes mixing well-formed characters with every kind of ill-formed sequence."""
    pieces = []
    while sum(map(len, pieces)) < size:
        pieces.append(rng.choice([
            lambda: chr(rng.randrange(0x80)).encode(),
            lambda: chr(rng.randrange(0x80, 0x800)).encode(),
            lambda: chr(rng.choice([rng.randrange(0x800, 0xD800),
                                    rng.randrange(0xE000, 0x10000)])).encode(),
            lambda: chr(rng.randrange(0x10000, 0x110000)).encode(),
            lambda: bytes([rng.randrange(0x80, 0x100)]),                  # any non-ASCII byte
            lambda: chr(rng.choice([rng.randrange(0x800, 0xD800),           # truncated
                                    rng.randrange(0xE000, 0x110000)])).encode()[:-1],
            lambda: rng.choice([b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf",
                                b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf4\x90\x80\x80",
                                b"\xf5\x80", b"\xfe", b"\xff", b"\x80", b"\xbf\xbf"]),
        ])())
    return b"".join(pieces)


# -------------------------------------------------------------------------------------------------
# Every short input

#: The bytes at the edges of the byte classes of Table 3-7 (ASCII, continuation ranges, leads).
EDGES = bytes([0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
               0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF])


@pytest.mark.parametrize("errors", SANITIZE_ERRORS)
def test_every_short_input(errors):
    """Every one-byte message, every two-byte message of class-edge bytes, every three-byte
    message of the bytes that matter to the second and third byte, random three- and four-byte
    messages, each a message of its own, one after the other, with gaps and sink stalls: every
    beat as the reference gives it (a wrong mark, kind, ``last`` or dropped byte fails)."""
    rng = random.Random(f"short-{errors}")
    third = bytes([0x41, 0x80, 0x9F, 0xA0, 0xBF, 0xC2, 0xE0, 0xED, 0xF0, 0xF4, 0xFF])
    messages = [bytes([a]) for a in range(256)]
    messages += [bytes([a, b]) for a in EDGES for b in EDGES]
    messages += [bytes([a, b, c]) for a in EDGES if a >= 0xC0 for b in third for c in third]
    messages += [bytes(rng.choice(EDGES) for _ in range(rng.choice([3, 4]))) for _ in range(300)]
    rng.shuffle(messages)
    got, _ = sanitize(messages, errors, gap=0.2, stall=0.3, seed=5)
    assert got == expected_beats(messages, errors)


@pytest.mark.slow
@pytest.mark.parametrize("errors", SANITIZE_ERRORS)
def test_every_two_byte_input(errors):
    """All 65,536 two-byte messages, with sink stalls."""
    messages = [bytes([a, b]) for a in range(256) for b in range(256)]
    got, _ = sanitize(messages, errors, stall=0.2, seed=3)
    assert got == expected_beats(messages, errors)


def test_surrogateescape_never_stalls():
    """With ``surrogateescape`` any input flows at one byte per cycle: after the first input
    byte, ``i.ready`` never falls and no output cycle is idle (sink always ready)."""
    rng = random.Random("no-stall")
    messages = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9))) for _ in range(40)]
    messages += [random_message(rng, 50) for _ in range(4)]
    got, run = sanitize(messages, "surrogateescape")
    assert got == expected_beats(messages, "surrogateescape")
    count = sum(map(len, messages))
    assert run.in_cycles == list(range(run.in_cycles[0], run.in_cycles[0] + count))
    assert run.out_cycles == list(range(run.out_cycles[0], run.out_cycles[0] + count))


def test_replace_worst_case():
    """One-byte subparts (here FF and lone continuations) become three bytes each: the input
    waits two cycles per U+FFFD (a third of a byte per cycle), the output has no idle cycle."""
    text = bytes([0xFF, 0x80, 0xC0, 0xBF] * 10)
    got, run = sanitize([text], "replace")
    assert got == expected_beats([text], "replace")
    assert run.out_cycles == list(range(run.out_cycles[0], run.out_cycles[0] + 3 * len(text)))
    # (The pipeline fills at a byte per cycle before the first U+FFFD reaches the end.)
    later = [cycle for cycle in run.in_cycles if cycle > run.out_cycles[0]]
    assert len(later) > 20
    assert {b - a for a, b in zip(later, later[1:])} == {3}


@pytest.mark.parametrize("errors", SANITIZE_ERRORS)
def test_sink_refuses_after_reset(errors):
    """A sink that refuses for the first 30 cycles after a reset (with ``replace`` the front's
    enables' set, ``front_set``, is 0 in the first cycle and then set by the flush or, when
    idle, one cycle in two) then gets every beat, none lost."""
    dut = Utf8Sanitizer(errors)
    text = b"A\xff\xe2\x82\xacB\xc3"
    items = [(byte, int(index == len(text) - 1)) for index, byte in enumerate(text)]
    got = []

    async def bench(ctx):
        for cycle in range(200):
            ctx.set(dut.o.ready, cycle >= 30)
            if items:
                ctx.set(dut.i.payload.data, items[0][0])
                ctx.set(dut.i.payload.last, items[0][1])
            ctx.set(dut.i.valid, bool(items))
            await ctx.delay(1e-8)
            if ctx.get(dut.o.valid) and ctx.get(dut.o.ready):
                p = ctx.get(dut.o.payload)
                got.append((p.data, ErrorKind(p.error), p.last))
            if items and ctx.get(dut.i.ready):
                items.pop(0)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    run_simulation(sim, f"sanitizer-refuses-{errors}")
    assert got == expected_beats([text], errors)


def collector(dut, got, sink, cycles):
    """A testbench that collects ``dut.o``'s beats into ``got`` for ``cycles`` cycles, its
    ``ready`` always high (``"ready"``), raised when it sees ``o.valid`` (``"waits"``), or a
    cycle after it saw ``o.valid`` without a transfer (``"registered"``)."""
    async def collect(ctx):
        seen = False
        for _ in range(cycles):
            await ctx.delay(2e-8)
            valid = ctx.get(dut.o.valid)
            ready = {"ready": True, "waits": valid, "registered": seen}[sink]
            ctx.set(dut.o.ready, ready)
            await ctx.delay(1e-8)
            if valid and ready:
                p = ctx.get(dut.o.payload)
                got.append((p.data, ErrorKind(p.error), p.last))
            seen = valid and not ready
            await ctx.tick()
    return collect


@pytest.mark.parametrize("registered", [False, True])
@pytest.mark.parametrize("errors", SANITIZE_ERRORS)
def test_sink_waits_for_valid(errors, registered):
    """Stream rule 3: a sink that raises ``o.ready`` only once it sees ``o.valid`` (in the same
    cycle, or a cycle later and only for that beat) gets every beat, for input given right after
    a reset and input given long after the core went idle. (``replace`` deadlocked when its
    front waited for ``o.ready`` with ``X`` empty: nothing taken, nothing out.)"""
    dut = Utf8Sanitizer(errors)
    texts = [b"A\xff\xe2\x82\xacB\xc3", b"\xe2\x82x\xf0\x9f\x98\x80\xed\xa0\x80z"]
    got, finished = [], []

    async def source(ctx):
        for gap, text in zip((1, 80), texts):
            await ctx.tick().repeat(gap)
            for index, byte in enumerate(text):
                ctx.set(dut.i.payload.data, byte)
                ctx.set(dut.i.payload.last, int(index == len(text) - 1))
                ctx.set(dut.i.valid, 1)
                for _ in range(100):
                    await ctx.delay(1e-8)
                    taken = ctx.get(dut.i.ready)
                    await ctx.tick()
                    if taken:
                        break
                else:
                    ctx.set(dut.i.valid, 0)
                    return
            ctx.set(dut.i.valid, 0)
        finished.append(True)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(source)
    sim.add_testbench(collector(dut, got, "registered" if registered else "waits", 600))
    run_simulation(sim, f"sanitizer-waits-for-valid-{errors}-{registered}")
    assert finished and got == expected_beats(texts, errors)


#: (finished messages, the next message's first bytes, its remaining bytes, how many of its first
#: bytes are final before the pause): the input pauses after the first bytes.
GAP_CASES = [([first], head, b"Z", 0)
             for first in [b"A", b"\xe6", b"A\xe2\x82\xac", b"\xff", b"xyz", b"\xf0\x90\x80"]
             for head in [b"\xc8", b"\xe6", b"\xf0", b"\xed", b"\xe6\x80", b"\xf0\x90",
                          b"\xf0\x90\x80", b"\xc2\xc8"]]
GAP_CASES += [([], b"xyz" + head, tail, 3) for head, tail in
              [(b"\xc8", b"\x80Z"), (b"\xe2\x82", b"\xacZ"), (b"\xf0\x9f\x98", b"\x80Z"),
               (b"\xed", b"\xa0Z"), (b"\xe6\x80", b"Z")]]
GAP_CASES += [([], b"ab\xffc\xe6", b"\x80\x80", 4), ([], b"\x80\xe6", b"\x80\x80", 1)]


def run_with_pauses(errors, sink, items, gap=100, deadline=80):
    """Feed ``items`` (``(data, last, need)``) to a sanitiser; after each item whose ``need`` is
    not None the input pauses ``gap`` cycles, and ``deadline`` cycles into the pause the count
    of beats out so far is taken: ``(beats, [(need, count), ...])``. The sink is always ready
    (``"ready"``), raises ``o.ready`` when it sees ``o.valid`` (``"waits"``), or a cycle after
    (``"registered"``)."""
    dut = Utf8Sanitizer(errors)
    checks, got = [], []

    async def source(ctx):
        for data, last, need in items:
            ctx.set(dut.i.payload.data, data)
            ctx.set(dut.i.payload.last, last)
            ctx.set(dut.i.valid, 1)
            await ctx.delay(1e-8)
            while not ctx.get(dut.i.ready):
                await ctx.tick()
                await ctx.delay(1e-8)
            await ctx.tick()
            if need is not None:
                ctx.set(dut.i.valid, 0)
                await ctx.tick().repeat(deadline)
                checks.append((need, len(got)))
                await ctx.tick().repeat(gap - deadline)
        ctx.set(dut.i.valid, 0)

    pauses = sum(need is not None for _, _, need in items)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(source)
    sim.add_testbench(collector(dut, got, sink, len(items) * 4 + pauses * gap + 200))
    run_simulation(sim, f"sanitizer-pauses-{errors}-{sink}")
    return got, checks


@pytest.mark.parametrize("sink", ["ready", "waits", "registered"])
@pytest.mark.parametrize("errors", SANITIZE_ERRORS)
def test_finished_bytes_do_not_wait(errors, sink):
    """A byte before a pending prefix is final: in a pause of the input after a prefix, the bytes
    before it come out (a finished message's `last` included) without the byte that decides the
    prefix. (Until stop 28 the whole line waited: message 1's 41 with `last`, then message 2's
    C8 and a pause, and 41 never came out; a request/response user deadlocked.) The sink is
    always ready, raises ``o.ready`` when it sees ``o.valid``, or a cycle after."""
    items, messages = [], []
    for finished, head, tail, final in GAP_CASES:
        messages += finished
        need = len(expected_beats(messages + [head[:final]] if final else messages, errors))
        messages.append(head + tail)
        items += [(byte, index == len(message) - 1, None) for message in finished
                  for index, byte in enumerate(message)]
        items += [(byte, False, None) for byte in head[:-1]] + [(head[-1], False, need)]
        items += [(byte, index == len(tail) - 1, None) for index, byte in enumerate(tail)]
    got, checks = run_with_pauses(errors, sink, items)
    assert got == expected_beats(messages, errors)
    assert len(checks) == len(GAP_CASES)
    assert [(case, need, out) for case, (need, out) in zip(GAP_CASES, checks) if out < need] == []


@pytest.mark.parametrize("errors", SANITIZE_ERRORS)
def test_pauses_anywhere(errors):
    """Random messages paused after random bytes (the sink raises ``o.ready`` when it sees
    ``o.valid``): in every pause, every byte but those of the prefix still pending (what
    CPython's incremental decoder keeps) is out, as the whole message's beats after its end."""
    rng = random.Random(f"pauses-{errors}")
    messages = [random_message(rng, rng.randrange(1, 12)) for _ in range(80)]
    items, done = [], []
    for message in messages:
        for index, byte in enumerate(message):
            last = index == len(message) - 1
            need = None
            if rng.random() < 0.25:
                if last:
                    need = len(expected_beats(done + [message], errors))
                else:
                    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
                    decoder.decode(message[:index + 1], False)
                    final = message[:index + 1 - len(decoder.getstate()[0])]
                    need = len(expected_beats(done + [final] if final else done, errors))
            items.append((byte, last, need))
        done.append(message)
    got, checks = run_with_pauses(errors, "waits", items)
    assert got == expected_beats(messages, errors)
    assert len(checks) > 80
    assert [(need, out) for need, out in checks if out < need] == []


# -------------------------------------------------------------------------------------------------
# Random text

@pytest.mark.parametrize("seed", [1, 2, 3])
def test_surrogateescape_gives_back_the_input(seed):
    """decode(surrogateescape) then encode(surrogateescape) reproduces any byte string."""
    rng = random.Random(f"escape-{seed}")
    messages = [random_message(rng, rng.randrange(1, 60)) for _ in range(6)]
    gap, stall = [(0.0, 0.0), (0.3, 0.3), (0.1, 0.6)][seed - 1]
    got, _ = sanitize(messages, "surrogateescape", gap=gap, stall=stall, seed=seed)
    assert bytes(byte for byte, _, _ in got) == b"".join(messages)
    assert got == expected_beats(messages, "surrogateescape")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_replace_gives_well_formed_utf8(seed):
    """With replace the output is CPython's ``decode("utf-8", "replace").encode("utf-8")``."""
    rng = random.Random(f"replace-{seed}")
    messages = [random_message(rng, rng.randrange(1, 60)) for _ in range(6)]
    gap, stall = [(0.0, 0.0), (0.3, 0.3), (0.1, 0.6)][seed - 1]
    got, _ = sanitize(messages, "replace", gap=gap, stall=stall, seed=seed)
    want = b"".join(message.decode("utf-8", "replace").encode("utf-8") for message in messages)
    assert bytes(byte for byte, _, _ in got) == want
    assert got == expected_beats(messages, "replace")


@pytest.mark.parametrize("errors", SANITIZE_ERRORS)
def test_short_messages(errors):
    """One-byte and truncated messages each end with exactly one `last` byte."""
    messages = [b"a", b"\xff", b"\xe2\x82", b"\xf0\x9f\x98", b"\xc3\xa9", b"\x80", b"\xed\xa0"]
    got, _ = sanitize(messages, errors, stall=0.3, seed=7)
    assert got == expected_beats(messages, errors)
    assert sum(last for _, _, last in got) == len(messages)


@pytest.mark.parametrize("errors", SANITIZE_ERRORS)
@pytest.mark.parametrize("low, high", [(0x20, 0x80), (0x400, 0x500), (0x4E00, 0xA000),
                                       (0x1F300, 0x1FA00)])
def test_pace(errors, low, high):
    """Text of characters of one length flows at one byte per cycle, each byte
    :attr:`~Utf8Sanitizer.LATENCY` cycles after its transfer."""
    rng = random.Random(f"pace-{errors}-{low}")
    text = "".join(chr(rng.randrange(low, high)) for _ in range(40)).encode()
    got, run = sanitize([text], errors)
    assert bytes(byte for byte, _, _ in got) == text
    assert all(kind is ErrorKind.NONE for _, kind, _ in got)
    assert run.out_cycles == list(range(run.out_cycles[0], run.out_cycles[0] + len(text)))
    # The documented latency, for every byte.
    latency = Utf8Sanitizer(errors).LATENCY
    assert [out - run.in_cycles[0] for out in run.out_cycles] == \
        [index + latency for index in range(len(text))]


def random_lengths(rng, count):
    """UTF-8 text of ``count`` characters whose lengths (1 to 4 bytes) are drawn uniformly."""
    return "".join(chr(rng.choice([rng.randrange(0x20, 0x80), rng.randrange(0x80, 0x800),
                                   rng.randrange(0x4E00, 0xA000),
                                   rng.randrange(0x10000, 0x110000)]))
                   for _ in range(count)).encode()


@pytest.mark.parametrize("errors", SANITIZE_ERRORS)
def test_pace_of_mixed_lengths(errors):
    """Random 1-4 byte characters, sink always ready: one byte per cycle from the first output
    byte to the last (the decoder and encoder before stop 27: 0.94 and 0.95)."""
    for seed in (1, 2):
        text = random_lengths(random.Random(seed), 300)
        got, run = sanitize([text], errors)
        assert bytes(byte for byte, _, _ in got) == text
        assert run.out_cycles == list(range(run.out_cycles[0], run.out_cycles[0] + len(text)))


@pytest.mark.slow
@pytest.mark.parametrize("errors", SANITIZE_ERRORS)
def test_one_lut_level(errors, tmp_path):
    """After synth_ice40 no LUT4 of the sanitiser reads another LUT4, and no LUT4 drives a
    clock enable (the enables are flip-flops: the front's copies of ``fadv``, computed a cycle
    ahead, and ``adv``) or a synchronous set or reset (with ``replace`` the front's set was the
    inverting LUT after ``masked``, and the last slot's data bits were set or reset by LUTs of
    ``e2``, ``e1`` and ``first``: 118.2 MHz median, 160.7 without)."""
    import json
    from utf8_gateware.hdl import synth
    from test_decoder_family import second_lut_levels
    report = synth.synth_target("sanitizer", errors=errors, build_dir=tmp_path)
    with open(report["files"]["netlist"]) as file:
        assert second_lut_levels(json.load(file), resets=True) == []


def test_parameters():
    assert Utf8Sanitizer().errors == "replace"
    assert Utf8Sanitizer("surrogateescape").errors == "surrogateescape"
    with pytest.raises(ValueError, match="errors must be one of"):
        Utf8Sanitizer("strict")
    with pytest.raises(TypeError, match="errors must be a string"):
        Utf8Sanitizer(0)
