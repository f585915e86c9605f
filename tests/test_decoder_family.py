# amaranth: UnusedElaboratable=no
"""``Utf8Decoder(encoding=...)`` for the UTF-8 family (utf-8-sig, CESU-8, Modified UTF-8,
WTF-8, RFC 2279) in Amaranth's simulator, against the reference model
``utf8_gateware.sim.encodings``, and the byte grammars it is generated from against the
model's."""

import json
import random

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module, ResetInserter, Signal
from amaranth.sim import Simulator

import corpora
from utf8_gateware.hdl import synth
from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.decoder_family import DECODER_ENCODINGS, decoder_policies
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.hdl.pipeline import Pipeline
from utf8_gateware.hdl.utf8_grammar import GRAMMARS
from utf8_gateware.sim import encodings, reference
from utf8_gateware.sim.encodings import cesu8, utf8
from utf8_gateware.sim.testbench import (put_and_collect, run_full_rate, run_simulation,
                                         run_stream)


FAMILY = [encoding for encoding in DECODER_ENCODINGS if encoding != "utf-8"]
CASES = [(encoding, errors) for encoding in FAMILY for errors in decoder_policies(encoding)]

BOM = b"\xef\xbb\xbf"

#: Pieces the random messages are made of: lone and paired surrogate sequences, the 4-byte
#: forms, C0 80 and other C0/C1 forms, 00, byte order marks, and cut or broken sequences.
PIECES = [bytes.fromhex(h) for h in (
    "41", "00", "7f", "c0", "c080", "c081", "c1bf", "c3a9", "e282ac", "e08080", "e0a080",
    "ed9fbf", "eda080", "edafbf", "edb080", "edbfbf", "eda0bdedb2a9", "edb080eda080", "eda080",
    "eda0", "ed", "edb0", "f0", "f09f9880", "f4", "f48fbfbf", "f0908080", "f5", "ff", "80", "bf",
    "efbbbf", "efbbbf", "efbb", "ef", "efbfbd",
    # RFC 2279's 5- and 6-byte forms, their overlong and cut forms.
    "f888808080", "fbbfbfbfbf", "fc8480808080", "fdbfbfbfbfbf", "f887bfbfbf", "fc83bfbfbfbf",
    "fdbfbfbf", "f8", "fc84")]


def model(messages, encoding, errors):
    """The reference outputs ``(codepoint, ErrorKind, last)`` of ``messages``, in order."""
    out = []
    for message in messages:
        decoded = encodings.decode(message, encoding, errors)
        out += [(d.codepoint, d.error, int(k == len(decoded) - 1))
                for k, d in enumerate(decoded)]
    return out


def as_tuple(payload):
    return (int(payload.codepoint), ErrorKind(payload.error), int(payload.last))


def describe(outputs):
    return " ".join(f"U+{c:04X}" + ("" if k is ErrorKind.NONE else f"!{k.label}") +
                    ("$" if last else "") for c, k, last in outputs)


def items(messages):
    return [{"data": byte, "last": int(k == len(message) - 1)}
            for message in messages for k, byte in enumerate(message)]


def full_rate(dut, messages):
    """``messages`` back to back at full rate into ``dut``, the sink always ready:
    ``(outputs, in_cycles, out_cycles, ready_low)``."""
    run = run_full_rate(dut, items(messages), idle=4 * dut.LATENCY,
                        name=f"decoder-family-{dut.encoding}-{dut.errors}")
    return [as_tuple(p) for p in run.outputs], run.in_cycles, run.out_cycles, run.ready_low


def check(encoding, errors, messages, got):
    want = model(messages, encoding, errors)
    if got != want:
        for k, (g, w) in enumerate(zip(got, want)):
            assert g == w, (f"output {k}: got {describe(got[k:k + 6])}, "
                            f"want {describe(want[k:k + 6])}")
        assert got == want, f"{len(got)} outputs, {len(want)} expected"


# --- parameters ----------------------------------------------------------------------------------

def test_policies_come_from_the_model():
    for encoding in DECODER_ENCODINGS:
        assert set(decoder_policies(encoding)) <= set(encodings.DECODE_POLICIES[encoding])
    assert decoder_policies("utf-8-sig") == ("replace", "surrogateescape")
    assert decoder_policies("mutf-8") == decoder_policies("wtf-8") == ("replace",)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"encoding": "utf-16-le"}, ValueError, r"not decoded by Utf8Decoder; one of utf-8, "),
    ({"encoding": "latin-1"}, ValueError, r"unknown encoding 'latin-1'"),
    ({"encoding": 8}, TypeError, r"encoding must be a string"),
    ({"encoding": "utf-8-rfc2279", "lanes": 2}, ValueError, r"one lane at a time \(lanes=1\)"),
    ({"encoding": "utf-8-rfc2279", "errors": "surrogateescape"}, ValueError,
     r"utf-8-rfc2279 decodes in gateware with errors 'replace', not 'surrogateescape' \(surr"),
    ({"encoding": "mutf-8", "errors": "surrogateescape"}, ValueError,
     r"mutf-8 decodes in gateware with errors 'replace', not 'surrogateescape' \(lone "),
    ({"encoding": "wtf-8", "lanes": 4}, ValueError, r"one lane at a time \(lanes=1\), not 4"),
    ({"encoding": "utf-8-sig", "errors": "strict"}, ValueError, r"errors must be one of"),
])
def test_bad_parameters(kwargs, error, match):
    with pytest.raises(error, match=match) as info:
        Utf8Decoder(**kwargs)
    assert "\n" not in str(info.value)


def test_latency_adds_the_stage():
    # The byte order mark and WTF-8's pair are marks of the lane (no latency); the joiner is
    # one pipeline step; with surrogateescape its three escape stages three more, and CESU-8
    # (no four-byte prefix, so no burst of three items) has no slot stage S3: one less.
    assert Utf8Decoder(encoding="utf-8").LATENCY == Utf8Decoder().LATENCY == 6
    assert Utf8Decoder(encoding="wtf-8").LATENCY == Utf8Decoder().LATENCY
    assert Utf8Decoder(encoding="cesu-8").LATENCY == Utf8Decoder().LATENCY + 1
    assert Utf8Decoder(encoding="mutf-8").LATENCY == Utf8Decoder().LATENCY + 1
    assert Utf8Decoder("surrogateescape", encoding="utf-8-sig").LATENCY == \
        Utf8Decoder("surrogateescape").LATENCY == 8
    assert Utf8Decoder("surrogateescape", encoding="cesu-8").LATENCY == \
        Utf8Decoder("surrogateescape").LATENCY - 1 + 1 + 3 == 11


# --- the byte grammars ---------------------------------------------------------------------------

MODEL_GRAMMARS = {"utf-8": reference.UTF8, "wtf-8": utf8.GENERALIZED,
                  "cesu-8": cesu8.CESU8_GRAMMAR, "mutf-8": cesu8.MUTF8_GRAMMAR}


@pytest.mark.parametrize("encoding", MODEL_GRAMMARS)
def test_grammar_equals_the_model(encoding):
    # The gateware's grammar data against the reference model's (written on its own), byte by
    # byte: what each byte starts, its second-byte range and range error, its start error.
    ours, theirs = GRAMMARS[encoding], MODEL_GRAMMARS[encoding]
    for byte in range(256):
        lead = [lead for lead in ours.leads if byte in lead.bytes]
        length = 1 if byte in ours.single else lead[0].length if lead else 0
        assert length == theirs.length[byte], f"{byte:02X}"
        if lead:
            second = lead[0].second
            assert (second.start, second.stop - 1) == (theirs.low[byte], theirs.high[byte])
            if second != range(0x80, 0xC0):
                assert lead[0].range_error is theirs.second_error[byte], f"{byte:02X}"
        elif length == 0:
            assert ours.start_error(byte) is theirs.start_error[byte], f"{byte:02X}"


# --- against the model ---------------------------------------------------------------------------

def random_messages(rng, count, encoding):
    messages = []
    while len(messages) < count:
        if rng.random() < 0.15:
            message = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 7)))
        else:
            message = b"".join(rng.choice(PIECES) for _ in range(rng.randrange(1, 7)))
        if encoding == "utf-8-sig" and message == BOM:
            continue        # no output at all: see test_bom_only_message
        messages.append(message)
    return messages


@pytest.mark.parametrize("encoding, errors", CASES)
@pytest.mark.parametrize("seed", range(2))
def test_random_streams(encoding, errors, seed):
    # Messages rich in surrogate sequences, 4-byte forms, C0 80, 00 and byte order marks, with
    # source gaps and sink stalls; the stream rules are checked every cycle.
    rng = random.Random(f"{encoding}{errors}{seed}")
    messages = random_messages(rng, 40, encoding)
    gap, stall = [(0.3, 0.3), (0.6, 0.6)][seed]
    dut = Utf8Decoder(errors, encoding=encoding)
    run = run_stream(dut, items(messages), gap=gap, stall=stall, seed=seed,
                     name=f"decoder-{encoding}-{errors}-random{seed}")
    check(encoding, errors, messages, [as_tuple(p) for p in run.outputs])


@pytest.mark.parametrize("encoding, errors", CASES)
def test_long_random_stream(encoding, errors):
    # One long run at full rate: every piece after every piece, in random messages.
    rng = random.Random(encoding)
    messages = random_messages(rng, 200, encoding)
    got, _, _, ready_low = full_rate(Utf8Decoder(errors, encoding=encoding), messages)
    check(encoding, errors, messages, got)
    assert ready_low == 0


CORPUS_FOLDERS = {"cesu-8": "cesu8", "mutf-8": "mutf8", "wtf-8": "wtf8", "utf-8-sig": "bom",
                  "utf-8-rfc2279": "rfc2279"}


def corpus_messages(folder, errors):
    """Every byte string of a family folder's cases: inputs and expected encodings (and the
    first 4 KB of the CESU-8 sample text with ``replace``)."""
    corpora.require()
    messages = []
    for _, case in corpora.family_cases(folder):
        for field in ("input_hex", "expected_hex"):
            if isinstance(case.get(field), str) and corpora.hex_bytes(case[field]):
                messages.append(corpora.hex_bytes(case[field]))
    if folder == "cesu8" and errors == "replace":
        messages.append(corpora.family_file("cesu8", "random.cesu8.txt")[:4096])
    return messages


@pytest.mark.parametrize("encoding, errors", CASES)
def test_corpora(encoding, errors):
    messages = corpus_messages(CORPUS_FOLDERS[encoding], errors)
    got, _, _, _ = full_rate(Utf8Decoder(errors, encoding=encoding), messages)
    check(encoding, errors, messages, got)


@pytest.mark.parametrize("errors", decoder_policies("utf-8-sig"))
def test_bom_only_message(errors):
    # A message of exactly EF BB BF has no output (nor `last`); the next starts clean, and a
    # mark that is not first, cut, or escaped stays.
    messages = [BOM, b"A", BOM + BOM, BOM, b"\xef\xbb", b"\xbb\xbf", BOM + b"\x80", b"\x80" + BOM]
    got, _, _, _ = full_rate(Utf8Decoder(errors, encoding="utf-8-sig"), messages)
    check("utf-8-sig", errors, messages, got)
    assert got[0] == (0x41, ErrorKind.NONE, 1)


# --- throughput ----------------------------------------------------------------------------------

WORST = {
    "lone-lead": "eda08041", "lone-trail": "edb080", "pair": "eda0bdedb2a9",
    "swapped": "edb080eda080", "leads": "eda080", "nul": "c08000", "four-byte": "f09f9880",
    "bom": "efbbbf41", "ascii": "41",
    # A lone lead's escapes are only known at the next output or lead: escapes written into
    # the silent slots before it, among dense outputs ...
    "leads-ascii": "eda080" * 4 + "41" * 8, "lead-invalid": "eda080f0f0f0",
    "lead-cut": "eda080e18041", "leads-continuations": "eda080eda080" + "80" * 4,
    # ... and decided by the escapes of a cut trail (the next output up to five slots back).
    "lead-trail-cut": "eda080edb041", "lead-ed-cut": "eda080ed41",
    # RFC 2279: the longest forms, and a byte that ends a prefix and has an output of its own.
    "six-byte": "fdbfbfbfbfbf", "five-cut": "f8888080" + "41", "overlong-six": "fc83bf",
}


@pytest.mark.parametrize("encoding, errors", CASES)
def test_throughput(encoding, errors):
    # One byte every cycle on every worst case (one message each, back to back), and the last
    # output within the latency of the last byte.
    dut = Utf8Decoder(errors, encoding=encoding)
    messages = [bytes.fromhex(h) * 16 for h in WORST.values()]
    got, in_cycles, out_cycles, ready_low = full_rate(dut, messages)
    check(encoding, errors, messages, got)
    assert ready_low == 0
    assert in_cycles == list(range(in_cycles[0], in_cycles[0] + len(in_cycles)))
    assert out_cycles[-1] - in_cycles[-1] <= dut.LATENCY


def surrogate_pair(scalar):
    """The six CESU-8 bytes of a supplementary ``scalar``."""
    lead, trail = divmod(scalar - 0x10000, 0x400)
    return "".join(bytes([0xED, 0xA0 | (unit >> 6), 0x80 | (unit & 0x3F)]).hex()
                   for unit in (lead, trail + 0x400))


@pytest.mark.parametrize("encoding, errors", [case for case in CASES if case[0] in ("cesu-8",
                                                                                 "mutf-8")])
@pytest.mark.parametrize("stall", [0, 0.5])
def test_pairs_back_to_back(encoding, errors, stall):
    # Pairs with other leads directly after each other (and a lone lead, a lone trail among
    # them): a pair's bits 16..20 come from the lead's bits (`high`) at the output, which must
    # still be the pair's own when the next lead is already in (three bytes behind).
    scalars = [0x10000, 0x10FFFF, 0x1F600, 0x2A6D6, 0x10400, 0xE0001, 0x103FF, 0x20000]
    message = bytes.fromhex("".join(surrogate_pair(s) for s in scalars) + "eda080" +
                            surrogate_pair(0x1D11E) + "edb080" + surrogate_pair(0x10C00))
    messages = [message] * 3
    dut = Utf8Decoder(errors, encoding=encoding)
    run = run_stream(dut, items(messages), gap=0, stall=stall, seed=1,
                     name=f"decoder-{encoding}-{errors}-pairs")
    check(encoding, errors, messages, [as_tuple(p) for p in run.outputs])


# --- message boundaries and reset ----------------------------------------------------------------

#: Sequences whose halves must not meet across a message boundary: pairs, marks, C0 80.
SPLIT = [bytes.fromhex(h) for h in ("eda0bdedb2a9", "efbbbf41", "c080", "eda080edb080",
                                    "f09f9880", "fdbfbfbfbfbf")]


@pytest.mark.parametrize("encoding, errors", CASES)
def test_nothing_crosses_a_message(encoding, errors):
    # Every sequence cut at every position into two messages, after other bytes or not: a
    # pair is not joined, a mark not dropped, a trail not rejected across `last`.
    messages = []
    for sequence in SPLIT:
        for cut in range(1, len(sequence)):
            for before in (b"", b"A", b"\xef\xbb", b"\xed\xa0\x80"):
                messages += [before + sequence[:cut], sequence[cut:]]
    messages = [m for m in messages if not (encoding == "utf-8-sig" and m == BOM)]
    got, _, _, _ = full_rate(Utf8Decoder(errors, encoding=encoding), messages)
    check(encoding, errors, messages, got)


@pytest.mark.parametrize("encoding, errors", CASES)
def test_reset_mid_stream(encoding, errors):
    # Reset (through ResetInserter) with a lead surrogate held, a mark's first bytes held, and
    # outputs queued behind a stalled sink; a fresh message then decodes as if nothing came
    # before.
    rst = Signal()
    dut = Utf8Decoder(errors, encoding=encoding)
    top = ResetInserter(rst)(dut)
    before = bytes.fromhex("eda080eda080edb0" "f0" "ed" "a0" "80")
    # (A held lead must not join or reject the trail that starts the fresh message; the mark
    # must be dropped there although the reset came mid-message.)
    fresh = bytes.fromhex("efbbbf41" if encoding == "utf-8-sig" else "edb08041eda080")
    outputs = []
    sim = Simulator(top)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        ctx.set(dut.o.ready, 0)
        for byte in before:              # as many as the stalled core takes
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, {"data": byte, "last": 0})
            await ctx.tick()
        ctx.set(dut.i.valid, 0)
        ctx.set(rst, 1)
        await ctx.tick()
        ctx.set(rst, 0)
        outputs.extend(as_tuple(payload) for payload in await put_and_collect(
            ctx, dut, items([fresh]), idle=3 * dut.LATENCY))

    sim.add_testbench(testbench)
    run_simulation(sim, f"decoder-family-reset-{encoding}-{errors}")
    assert outputs == model([fresh], encoding, errors), describe(outputs)


@pytest.mark.parametrize("encoding, errors", CASES)
def test_reset_with_a_lead_in_flight(encoding, errors):
    # Reset 0..LATENCY cycles after a lead surrogate and a character were taken, the sink
    # ready: the lead is then anywhere in the pipeline, and none of it may come out after the
    # flush (the formal round trip's counterexample: ED A0 88 C8 9D, a reset, then 18 18$ ...
    # gave a stale U+D808 before U+0018 with Modified UTF-8, and CESU-8 its U+FFFD).
    before = bytes.fromhex("eda088c89d")
    fresh = [bytes.fromhex("18"), bytes.fromhex("180841c08040")]
    rst = Signal()
    dut = Utf8Decoder(errors, encoding=encoding)
    top = ResetInserter(rst)(dut)
    outputs = {}
    sim = Simulator(top)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        for gap in range(dut.LATENCY + 1):
            ctx.set(dut.o.ready, 1)
            for byte in before:
                ctx.set(dut.i.valid, 1)
                ctx.set(dut.i.payload, {"data": byte, "last": 0})
                await ctx.tick().until(dut.i.ready)
            ctx.set(dut.i.valid, 0)
            for _ in range(gap):
                await ctx.tick()
            ctx.set(rst, 1)
            await ctx.tick()
            ctx.set(rst, 0)
            outputs[gap] = [as_tuple(payload) for payload in await put_and_collect(
                ctx, dut, items(fresh), idle=3 * dut.LATENCY)]

    sim.add_testbench(testbench)
    run_simulation(sim, f"decoder-family-reset-lead-{encoding}-{errors}")
    want = model(fresh, encoding, errors)
    for gap, got in outputs.items():
        assert got == want, f"reset {gap} cycles after the bytes: {describe(got)}"


def second_lut_levels(netlist, enables=True, resets=False):
    """The names of the LUT4 cells of the core in a ``synth_ice40`` JSON netlist (a dict) that
    read another LUT4's output (a second LUT level between flip-flops), and (``enables``) of the
    flip-flops whose clock enable is a LUT4's output (a LUT in front of a clock enable: the
    slowest path of the RFC 2279 decoder at 122 MHz), and (``resets``) whose synchronous
    reset or set is."""
    top = next(module for module in netlist["modules"].values()
               if module.get("attributes", {}).get("top"))
    driver = {bit: cell["type"] for cell in top["cells"].values()
              for port, bits in cell["connections"].items()
              if cell["port_directions"][port] == "output" for bit in bits}
    return sorted(name for name, cell in top["cells"].items()
                  if any(driver.get(bit) == "SB_LUT4"
                         for port in (("I0", "I1", "I2", "I3") if cell["type"] == "SB_LUT4" else
                                      ("E",) * enables + ("R", "S") * resets
                                      if cell["type"].startswith("SB_DFF") else ())
                         for bit in cell["connections"].get(port, [])))


@pytest.mark.parametrize("encoding, errors", [("cesu-8", "replace"), ("cesu-8", "surrogateescape"),
                                              ("mutf-8", "replace"), ("utf-8", "surrogateescape")])
def test_no_four_byte_registers(encoding, errors):
    # A grammar without four-byte leads (CESU-8, Modified UTF-8) has no registers for them: the
    # history of a second byte of a four-byte lead (`ch_sb4`) and of the third byte of such a
    # prefix (`dh_sc`), whose feedback kept synthesis from removing them (and with them the
    # slots' bits 16..20, the stage-E history's fourth byte, the bursts' third item: 16 LCs
    # with `replace`, 29 with surrogateescape). UTF-8 keeps them.
    text = rtlil.convert(Utf8Decoder(errors, encoding=encoding))
    names = {name for name in ("ch_sb4", "dh_sc") if f" \\{name}\n" in text}
    assert names == (set() if GRAMMARS[encoding].max_length < 4 else {"ch_sb4", "dh_sc"})


@pytest.mark.parametrize("encoding, errors", [("cesu-8", "replace"), ("cesu-8", "surrogateescape"),
                                              ("mutf-8", "replace")])
def test_joiner_carries_sixteen_bits(encoding, errors):
    # The joiner's stages carry bits 0..15 and a pair flag: a pair's bits 16..20 are set at the
    # output (4 LCs with `replace`, 16 with surrogateescape's three escape stages), and the
    # skid register keeps the flag instead of the bits (4 LCs more; with surrogateescape
    # `high` is a step later for it, from J: 319 -> 316).
    text = rtlil.convert(Utf8Decoder(errors, encoding=encoding))
    assert " \\join_j_pair\n" in text
    assert " \\skid_flag\n" in text
    # (With `replace` the byte decoder's slot makes no register for bits 16..20 either.)
    assert (" \\s1_0_cp16\n" in text) == (errors != "replace")
    assert [bit for bit in range(21) if f" \\join_j_cp{bit}\n" in text] == list(range(16))


@pytest.mark.parametrize("encoding", ["cesu-8", "utf-8"])
def test_escape_kind_in_codepoint_bits(encoding):
    # With CESU-8's surrogateescape an escape's kind travels in its code point bits 8..10 (0 in
    # U+DC80..U+DCFF) from the byte decoder's last slot on: no kind register there, in J or in
    # the escape stages (15 flip-flops; 366 -> 351 LCs). The plain decoder keeps its own.
    # CESU-8's last slot is S2 (no burst of three items: no S3; 351 -> 325 LCs with the
    # joiner's look-ahead a step earlier), so it has none at all.
    text = rtlil.convert(Utf8Decoder("surrogateescape", encoding=encoding))
    kinds = [name for name in ("s2_0_kind", "s3_0_kind", "join_j_error", "join_k1_error",
                               "join_k2_error", "join_k3_error") if f" \\{name}\n" in text]
    assert kinds == ([] if encoding == "cesu-8" else ["s2_0_kind", "s3_0_kind"])
    assert (" \\s3_0_v\n" in text) == (encoding == "utf-8")


@pytest.mark.parametrize("steps", range(1, 11))
def test_flush_counter_is_the_thermometer(steps):
    # `flush_count`: the flush's first and last flip-flops and a counter between them, where
    # that is fewer flip-flops than the thermometer (from 6 steps on): `flushing` and `masked`
    # are the thermometer's in every step, with and without `adv`, and after a reset.
    m = Module()
    go, rst = Signal(), Signal()
    pipes = [Pipeline(m, flush_steps=steps), Pipeline(m, flush_steps=steps, flush_count=True)]
    for pipe in pipes:
        m.d.comb += pipe.adv.eq(go)
    assert (pipes[1].flush is None) == (steps >= 6)
    dut = ResetInserter(rst)(m)
    rng = random.Random(steps)

    async def bench(ctx):
        for _ in range(4 * steps + 20):
            ctx.set(go, rng.random() < 0.7)
            ctx.set(rst, rng.random() < 0.05)
            flags = [(ctx.get(pipe.flushing), ctx.get(pipe.masked)) for pipe in pipes]
            assert flags[0] == flags[1]
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    run_simulation(sim, f"flush-{steps}")


def test_decoder_flush_counter():
    # The decoder asks for the counter: CESU-8's surrogateescape pipeline flushes in 8 steps
    # (5 flip-flops instead of 8: 313 -> 311 LCs with the three lone copies); the others in 6
    # at most, and keep the thermometer (their netlists unchanged).
    for errors, encoding, counter in [("surrogateescape", "cesu-8", True),
                                      ("surrogateescape", "utf-8", False),
                                      ("replace", "cesu-8", False)]:
        text = rtlil.convert(Utf8Decoder(errors, encoding=encoding))
        assert (" \\fl_count\n" in text) == counter
        assert (" \\fl1\n" in text) != counter


#: The most LCs a decoder's core takes (UP5K, ``synth decoder``): CESU-8 with surrogateescape
#: 310 (issue #10's bar: 311, 1.2 x ``utf-8``'s 259), Modified UTF-8 235.
MOST_LCS = {("cesu-8", "surrogateescape"): 310, ("mutf-8", "replace"): 235}


@pytest.mark.slow
@pytest.mark.parametrize("encoding, errors", [("utf-8", "replace"), ("utf-8", "surrogateescape"),
                                              ("mutf-8", "replace"), ("utf-8-rfc2279", "replace"),
                                              ("cesu-8", "surrogateescape")])
def test_one_lut_level(encoding, errors, tmp_path):
    # Every flip-flop is one LUT4 of flip-flops after synth_ice40, its enable a flip-flop: a
    # single function of five flip-flops anywhere lets ABC deepen one-LUT functions elsewhere
    # (117 and 120 MHz before), and a LUT gating the RFC 2279 decoder's state held it at 122.
    # The cores of MOST_LCS take no more LCs than measured.
    report = synth.synth_target("decoder", errors=errors, encoding=encoding, build_dir=tmp_path)
    with open(report["files"]["netlist"]) as file:
        assert second_lut_levels(json.load(file)) == []
    assert report["core_lc"] <= MOST_LCS.get((encoding, errors), report["core_lc"])
