"""cocotb test of ``utf8_clean.v`` (the exported decoder and encoder back to back): random
messages with ill-formed sequences, through cocotbext-axi's AXI4-Stream source and sink with
random pauses on both sides; each output message must be CPython's
``data.decode("utf-8", "replace").encode("utf-8")`` and ``error_count`` must count the U+FFFDs
that stand for ill-formed sequences.

Run by ``tests/test_examples.py``, or by hand with cocotb's runner (see ``README.md`` beside this
file).
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource


#: Bytes that make every kind of ill-formed sequence, and well-formed text around them.
PIECES = [b"a", b" ", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\x80", b"\xbf",
          b"\xc0\x80", b"\xe0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xff", b"\xe2\x82",
          b"\xf0\x9f\x98"]


def replacements(data):
    """How many U+FFFD CPython's replace handler writes for ``data`` (one per maximal subpart)."""
    return len(data.decode("utf-8", "replace")) - len(data.decode("utf-8", "ignore"))


def pauses(seed):
    """An endless pause pattern: phases of 0 %, 30 % and 80 % pauses."""
    rng = random.Random(seed)
    while True:
        chance = rng.choice((0.0, 0.3, 0.8))
        for _ in range(rng.randint(20, 200)):
            yield rng.random() < chance


@cocotb.test()
async def random_messages(dut):
    cocotb.start_soon(Clock(dut.aclk, 10, unit="ns").start())
    dut.aresetn.value = 0
    await ClockCycles(dut.aclk, 2)
    dut.aresetn.value = 1
    source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.aclk, dut.aresetn,
                             reset_active_level=False)
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.aclk, dut.aresetn,
                         reset_active_level=False)
    source.set_pause_generator(pauses(1))
    sink.set_pause_generator(pauses(2))

    rng = random.Random(int(cocotb.plusargs.get("seed", 1)))
    messages = [b"".join(rng.choice(PIECES) for _ in range(rng.randint(1, 40)))
                for _ in range(int(cocotb.plusargs.get("messages", 60)))]
    for message in messages:
        await source.send(AxiStreamFrame(message))
    errors = 0
    for index, message in enumerate(messages):
        frame = await sink.recv()
        want = message.decode("utf-8", "replace").encode("utf-8")
        assert bytes(frame.tdata) == want, \
            f"message {index} {message.hex(' ')}: got {bytes(frame.tdata).hex(' ')}, " \
            f"want {want.hex(' ')}"
        errors += replacements(message)
    await RisingEdge(dut.aclk)
    assert int(dut.error_count.value) == errors, \
        f"error_count {int(dut.error_count.value)}, want {errors}"
