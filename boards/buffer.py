"""Byte ring buffer in a single-port RAM, with optional commit/rollback of writes.

One RAM port serves both sides, so a 32 KiB buffer can live in one of the iCE40 UP5K's single-port
``SB_SPRAM256KA`` (16 Ki x 16 bits): :class:`ByteRAM` instantiates them when the platform is an
iCE40 UltraPlus and the depth is a multiple of 32768 (Yosys does not infer SPRAM from a memory with
initial contents, which Amaranth memories always have), and is a plain
:class:`~amaranth.lib.memory.Memory` otherwise (simulation, block RAM).
"""

from amaranth.hdl import Array, Cat, ClockSignal, Instance, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from utf8_gateware.hdl.component import CheckedComponent


__all__ = ["ByteRAM", "RingBuffer", "share_port"]


SPRAM_BYTES = 32768


class ByteRAM(wiring.Component):
    """A single-port RAM of ``depth`` bytes: a request either writes ``wdata`` at ``addr``
    (``we``) or reads ``addr`` (``re``); ``we`` and ``re`` must not both be high. Requests are
    registered before they reach the RAM (the SPRAMs sit in the corners of the die, far from
    the logic), so a write lands a cycle later and ``rdata`` is valid two cycles after ``re``,
    for that one cycle (the SPRAM's output is not documented to hold through a later write:
    take it then, as :func:`share_port` does)."""
    def __init__(self, depth):
        self.depth = depth
        super().__init__({
            "addr": In(range(depth)),
            "we": In(1), "wdata": In(8),
            "re": In(1), "rdata": Out(8),
        })

    def elaborate(self, platform):
        m = Module()
        addr = Signal.like(self.addr)
        we = Signal()
        wdata = Signal(8)
        re = Signal()
        m.d.sync += [addr.eq(self.addr), we.eq(self.we), wdata.eq(self.wdata), re.eq(self.re)]
        device = getattr(platform, "device", "")
        if device.startswith("iCE40UP") and self.depth % SPRAM_BYTES == 0:
            # Each SB_SPRAM256KA is 16 Ki x 16: address bit 0 picks the byte lane (nibble write
            # mask), bits 1..14 the word, the bits above the bank.
            banks = self.depth // SPRAM_BYTES
            lane = Signal()
            bank = Signal(range(banks))
            outputs = []
            for index in range(banks):
                dataout = Signal(16, name=f"dataout{index}")
                selected = (addr[15:] == index) if banks > 1 else 1
                m.submodules[f"spram{index}"] = Instance("SB_SPRAM256KA",
                    i_ADDRESS=addr[1:15], i_DATAIN=Cat(wdata, wdata),
                    i_MASKWREN=Mux(addr[0], 0b1100, 0b0011), i_WREN=we,
                    i_CHIPSELECT=(we | re) & selected, i_CLOCK=ClockSignal(),
                    i_STANDBY=0, i_SLEEP=0, i_POWEROFF=1,
                    o_DATAOUT=dataout)
                outputs.append(dataout)
            with m.If(re):
                m.d.sync += lane.eq(addr[0])
                if banks > 1:
                    m.d.sync += bank.eq(addr[15:])
            word = Signal(16)
            m.d.comb += word.eq(Array(outputs)[bank] if banks > 1 else outputs[0])
            m.d.comb += self.rdata.eq(Mux(lane, word[8:], word[:8]))
        else:
            m.submodules.mem = mem = Memory(shape=8, depth=self.depth, init=[])
            wport = mem.write_port()
            rport = mem.read_port(transparent_for=())
            m.d.comb += [
                wport.addr.eq(addr), wport.data.eq(wdata), wport.en.eq(we),
                rport.addr.eq(addr), rport.en.eq(re), self.rdata.eq(rport.data),
            ]
        return m


class RingBuffer(CheckedComponent):
    """A FIFO of bytes, ``depth`` (a power of 2) deep, in one single-port RAM.

    Ports
    -----
    ``w``: In(stream.Signature(8))
        Bytes in. ``ready`` is low when the buffer is full (counting uncommitted bytes) or the
        RAM port is given to the read side this cycle; it depends on registers only.
    ``o``: Out(stream.Signature(8))
        Bytes out, in order; only committed bytes are read.
    ``commit``: In(1)
        (``transactional`` only) make every byte written so far (including one written in the
        same cycle) readable, a cycle later.
    ``rollback``: In(1)
        (``transactional`` only) forget the bytes written since the last commit.
    ``seek``: In(1), ``seek_to``: In(range(2 * depth))
        (``addressed`` only) write from ``seek_to`` on (a stream offset modulo ``2 * depth``:
        the writer places its bytes anywhere past the committed ones; ``rollback`` is then
        moot, the next writes seek first).
    ``commit_length``: In(16)
        (``addressed`` only) ``commit`` makes the next ``commit_length`` bytes after the
        committed ones readable (written in any order), a cycle later (hold it for that
        cycle).
    ``level``: Out(range(depth + 1))
        Committed bytes not yet read from the RAM, one cycle late (for status and tests).

    Throughput: the port serves the sides in alternate cycles; a read is issued only when the
    output register is empty and no read is under way, so ``o`` delivers at most one byte every
    four cycles, and ``w`` accepts one byte every two cycles while there is space. Latency: a
    committed byte is offered four to six cycles after it was written or committed, from a
    register (the RAM's data output is captured the cycle it is valid, see
    :func:`share_port`). ``w.ready`` comes from a registered "at least two free" flag (so the
    buffer holds at most ``depth - 1`` bytes) and the port's turn.
    """
    @classmethod
    def check_parameters(cls, depth, *, transactional=False, addressed=False):
        if isinstance(depth, bool) or not isinstance(depth, int):
            raise TypeError(f"depth must be an integer, not {depth!r}")
        if depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of 2 of at least 2, not {depth}")

    def __init__(self, depth, *, transactional=False, addressed=False):
        self.depth = depth
        self.transactional = bool(transactional) or bool(addressed)
        self.addressed = bool(addressed)
        extra = {"seek": In(1), "seek_to": In(range(2 * depth)),
                 "commit_length": In(16)} if addressed else {}
        super().__init__({
            **extra,
            "w": In(stream.Signature(8)),
            "o": Out(stream.Signature(8)),
            "commit": In(1),
            "rollback": In(1),
            "level": Out(range(depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        bits = (self.depth - 1).bit_length()
        m.submodules.ram = ram = ByteRAM(self.depth)

        wptr = Signal(bits + 1)      # next write (tentative)
        cptr = Signal(bits + 1)      # end of committed data
        rptr = Signal(bits + 1)      # next read
        do_write = share_port(m, ram, self.w, self.o, wptr=wptr, rptr=rptr, readable=cptr,
                              oldest=rptr, depth=self.depth)
        # `do_write` enables the pointer (the increment comes from the register alone). A
        # commit takes effect a cycle later, from `wptr`, which by then counts a byte written
        # in the commit's cycle.
        commit = Signal()
        m.d.sync += commit.eq(self.commit & ~self.rollback)
        if self.addressed:
            # (`commit_length` holds for the cycle after `commit`)
            with m.If(commit):
                m.d.sync += cptr.eq(cptr + self.commit_length)
            with m.If(self.seek):
                m.d.sync += wptr.eq(self.seek_to)
            with m.Elif(do_write):
                m.d.sync += wptr.eq(wptr + 1)
        elif self.transactional:
            with m.If(commit):
                m.d.sync += cptr.eq(wptr)
            with m.If(self.rollback):
                with m.If(~commit):     # (else the bytes up to `wptr` are being committed)
                    m.d.sync += wptr.eq(cptr)
            with m.Elif(do_write):
                m.d.sync += wptr.eq(wptr + 1)
        else:
            with m.If(do_write):
                m.d.sync += [wptr.eq(wptr + 1), cptr.eq(wptr + 1)]
        m.d.sync += self.level.eq(cptr - rptr)
        return m


def share_port(m, ram, w, o, *, wptr, rptr, readable, oldest, depth, flush=0):
    """Serve the stream ``w`` (writes at ``wptr``) and the stream ``o`` (reads at ``rptr``, which
    it advances, up to ``readable``) from the single port of ``ram`` (a :class:`ByteRAM` of
    ``depth`` bytes), with ``oldest`` the pointer below which space is free. The port serves
    the sides in alternate cycles (so ``w.ready`` is one LUT of two flip-flops: no arbitration
    in the writer's path); a read is issued only when ``o`` is empty and no read is under way.
    ``flush``: drop the byte on offer and any read under way. Returns ``do_write``: a byte is
    written this cycle (advance ``wptr``).

    The byte read is captured in ``o.payload`` (a register) in the one cycle in which the RAM
    offers it, so nothing relies on the RAM's data output holding through later writes: Lattice
    documents ``SB_SPRAM256KA``'s ``DATAOUT`` only as "the contents of the memory location
    addressed by the address input" (TN1314, iCE40 SPRAM Usage Guide, table 2.1), which after a
    write is the written word or undefined (Yosys' ``cells_sim.v`` makes it ``x``)."""
    bits = (depth - 1).bit_length()
    turn = Signal()              # the port's turn, alternating: 0 the write side, 1 the read side
    issued = Signal()            # a read was issued last cycle (the RAM reads it now)
    landing = Signal()           # the byte read is on ram.rdata this cycle (captured into o)
    # `avail` is one cycle late; that is exact when it matters: right after the last byte
    # is read, a read is under way, which blocks the next read for that cycle.
    avail = Signal()
    m.d.sync += [avail.eq(readable != rptr), turn.eq(~turn)]
    read = turn & avail & ~o.valid & ~issued & ~landing
    # At most one write every two cycles: two free entries one cycle ago is one free entry now.
    space = Signal()
    m.d.sync += space.eq((wptr - oldest)[:bits + 1] < depth - 1)
    # (`ready` is one LUT of two flip-flops: nothing of the read side is in the writer's path.)
    m.d.comb += [
        w.ready.eq(space & ~turn),
        ram.wdata.eq(w.payload),
    ]
    do_write = w.valid & w.ready
    m.d.sync += [issued.eq(read), landing.eq(issued)]
    with m.If(landing):
        m.d.sync += [o.valid.eq(1), o.payload.eq(ram.rdata)]
    with m.Elif(o.valid & o.ready):
        m.d.sync += o.valid.eq(0)
    with m.If(flush):
        m.d.sync += [o.valid.eq(0), issued.eq(0), landing.eq(0)]
    with m.If(read):
        m.d.comb += [ram.addr.eq(rptr[:bits]), ram.re.eq(1)]
        m.d.sync += rptr.eq(rptr + 1)
    with m.Else():
        m.d.comb += [ram.addr.eq(wptr[:bits]), ram.we.eq(do_write)]
    return do_write
