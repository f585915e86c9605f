"""Board time: a message's cycle counter and the moments the host needs to measure the line."""

from amaranth.hdl import Cat, ClockSignal, Const, Instance, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .protocol import STAMP_FIELDS, BoardFrame


__all__ = ["MessageStamps"]


class MessageStamps(wiring.Component):
    """A 64-bit cycle counter from the start of a message (it wraps after 12,000 years at
    48 MHz), and its value at four events (the STATUS fields ``rx_first``, ``rx_last``,
    ``tx_first``, ``tx_status``), kept in block RAM and read one at a time.

    Ports
    -----
    ``restart``: In(1)
        A message begins: the counter starts from 0, the stamps read as 0 until taken again.
    ``time``: Out(64)
        The counter. Two 32-bit halves: the carry into the upper half is known a cycle ahead
        (registered), so no 64-bit carry chain sits in one cycle.
    ``data_begin``: In(1)
        An input DATA frame's header was checked; the first sets ``rx_first``.
    ``end``: In(1)
        The message's END frame: ``rx_last``.
    ``tx_started``: In(1), ``tx_kind``: In(BoardFrame)
        A frame's sync byte went out: the first DATA frame sets ``tx_first``, a STATUS frame
        ``tx_status``.
    ``read``: In(2)
        A stamp's number (its place in :data:`~.protocol.STAMP_FIELDS`) ...
    ``stamp``: Out(64)
        ... and its value, a cycle later (0 if it was not taken since the last ``restart``).

    Every event input goes through a register first (they come from decisions elsewhere): all
    of them act a cycle late, so the differences between stamps are exact. The stamps are two
    memories of two 64-bit words (the input's and the output's events may fall in one cycle),
    four block RAMs each: as 256 flip-flops and the STATUS multiplexer's inputs they took about
    300 of the iCEBreaker's LCs.
    """
    def __init__(self):
        super().__init__({
            "restart": In(1),
            "time": Out(64),
            "data_begin": In(1),
            "end": In(1),
            "tx_started": In(1),
            "tx_kind": In(BoardFrame, init=BoardFrame.HELLO_ACK),
            "read": In(2),
            "stamp": Out(64),
        })

    def elaborate(self, platform):
        m = Module()
        restart, data_begin, end, tx_started_now = (Signal(name=name) for name in
                                                    ("restart", "data_begin", "end", "tx_now"))
        is_data = Signal()
        is_status = Signal()
        m.d.sync += [restart.eq(self.restart), data_begin.eq(self.data_begin), end.eq(self.end),
                     tx_started_now.eq(self.tx_started),
                     is_data.eq(self.tx_kind == BoardFrame.DATA),
                     is_status.eq(self.tx_kind == BoardFrame.STATUS)]
        low, high = self.time[:32], self.time[32:]
        carry = Signal()            # the lower half wraps at the next tick
        m.d.sync += [low.eq(low + 1), carry.eq(low == 0xFFFF_FFFE)]
        with m.If(carry):
            m.d.sync += high.eq(high + 1)

        # Which stamps were taken since the restart (STAMP_FIELDS order): the first DATA
        # frame's header and the first output DATA frame are taken once.
        taken = Signal(len(STAMP_FIELDS))
        rx_first, rx_last, tx_first, tx_status = (
            data_begin & ~taken[0], end, tx_started_now & is_data & ~taken[2],
            tx_started_now & is_status)
        memories = []
        for name, (first, last) in (("rx", (rx_first, rx_last)), ("tx", (tx_first, tx_status))):
            write, number = Signal(name=f"{name}_write"), Signal(name=f"{name}_number")
            data = Signal(64, name=f"{name}_stamp")
            m.d.comb += [write.eq(first | last), number.eq(last)]
            self._memory(m, platform, name, write, number, data)
            memories.append(data)
        m.d.sync += taken.eq(taken | Cat(rx_first, rx_last, tx_first, tx_status))
        with m.If(restart):
            m.d.sync += [self.time.eq(0), carry.eq(0), taken.eq(0)]
        # The read's register: which memory, and whether the stamp was taken.
        output, valid = Signal(), Signal()
        m.d.sync += [output.eq(self.read[1]), valid.eq(taken.bit_select(self.read, 1))]
        m.d.comb += self.stamp.eq(Mux(valid, Mux(output, memories[1], memories[0]), 0))
        return m

    def _memory(self, m, platform, name, write, number, data):
        """Two 64-bit words: ``time`` written at ``number`` on ``write``, the word at
        ``read[0]`` in ``data`` a cycle later. On the iCE40 four ``SB_RAM40_4K`` (256 x 16):
        a :class:`~amaranth.lib.memory.Memory` there, mapped to them, came with Yosys' logic for
        a read in the cycle of a write to the same word (about 130 LUTs and 64 flip-flops), which
        never happens here (a stamp is read in a STATUS frame's payload, after the frame's sync
        byte took ``tx_status``)."""
        if getattr(platform, "device", "").startswith("iCE40"):
            for index in range(4):
                word = slice(16 * index, 16 * (index + 1))
                m.submodules[f"{name}_ram{index}"] = Instance(
                    "SB_RAM40_4K", p_READ_MODE=0, p_WRITE_MODE=0,
                    i_WCLK=ClockSignal(), i_WCLKE=write, i_WE=write,
                    i_WADDR=Cat(number, Const(0, 10)), i_MASK=Const(0, 16),
                    i_WDATA=self.time[word], i_RCLK=ClockSignal(), i_RCLKE=1, i_RE=1,
                    i_RADDR=Cat(self.read[0], Const(0, 10)), o_RDATA=data[word])
        else:
            m.submodules[f"{name}_stamps"] = memory = Memory(shape=64, depth=2, init=[])
            write_port = memory.write_port()
            read_port = memory.read_port()
            m.d.comb += [write_port.en.eq(write), write_port.addr.eq(number),
                         write_port.data.eq(self.time), read_port.addr.eq(self.read[0]),
                         data.eq(read_port.data)]
