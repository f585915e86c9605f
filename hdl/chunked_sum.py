"""Wide running sums whose registers are each one LUT level deep, and so is their read-out."""

from amaranth.hdl import Cat, Signal, Value


__all__ = ["HighPart", "SplitSum", "LevelSum"]


#: Copies of :class:`LevelSum`'s carry into its high part.
CARRY_COPIES = 3

#: Copies of :class:`LevelSum`'s restart of its high part as it is read (about 26 loads a
#: sum, one net for both sums: a global buffer).
CLEAR_COPIES = 4

#: Steps from the read to the restart of a held high part (:meth:`LevelSum.build`): the
#: verdict leaves the output's big place within two steps after the read.
HOLD_STEPS = 4


def _load(pipe, reg, value, clear=None, in_data=None):
    """``reg`` takes ``value`` when ``pipe`` advances, or 0 if ``clear``: a synchronous reset or
    an AND in the data (:meth:`~utf8_gateware.hdl.pipeline.Pipeline.load_cleared`)."""
    enable = pipe.enable(len(reg))
    if clear is not None:
        return pipe.load_cleared(reg, value, clear, enable, in_data)
    with pipe.m.If(enable):
        pipe.m.d.sync += reg.eq(value)
    return reg


class HighPart:
    """The high bits of a sum, counting the carries into them with no carry chain, and a sticky
    overflow flag.

    The bits come in pairs; bit ``i`` toggles when a carry comes and all bits below it are ones:
    for pair ``g`` the flag ``below[g]`` (all bits below the pair are ones) and, for the pair's
    upper bit, its lower bit. So every bit is a LUT of at most four flip-flops (its own, the
    carry, the flag, the bit below), and so is every bit of the sum with a carry added
    (:meth:`read`). The flags are registered and free-running (no clock enable), pair ``g``'s
    from pair ``g - 1``'s: they are exact :attr:`settle` cycles after the bits last changed,
    and the owner makes sure that carries come no more often than that.
    """
    def __init__(self, name, width):
        self.bits = Signal(width, name=f"{name}_high", reset_less=True)
        pairs = (width + 1) // 2
        #: below[g]: the bits below pair g are all ones (below[0] always); below[pairs]: all are.
        self.below = [Value.cast(1)] + [Signal(name=f"{name}_below{g}", reset_less=True)
                                        for g in range(1, pairs + 1)]
        self.over = Signal(name=f"{name}_over", reset_less=True)

    @property
    def settle(self):
        """Cycles after a change of the bits until the flags are exact again."""
        return len(self.below)

    def read(self, carry):
        """``(bits + carry, overflow)``: the bits with ``carry`` added (modulo their width) and
        whether the sum has overflowed."""
        bits = []
        for i in range(len(self.bits)):
            flag = carry & self.below[i // 2]
            if i % 2:
                flag = flag & self.bits[i - 1]
            bits.append(self.bits[i] ^ flag)
        return Cat(*bits), self.over | (carry & self.below[-1])

    def count(self, pipe, carry, clear, *, whole=False, over_clear=None):
        """Add ``carry`` when ``pipe`` advances; zero when ``clear`` (a synchronous reset).
        ``carry`` and ``clear`` may be lists of copies, each for an equal share of the bits
        (and the overflow flag). Each bit is loaded on its own (its own share of the clock
        enable's copies), or with ``whole`` the bits together, as before stop 25 (the
        validator with 16 lanes keeps that netlist: see ``validator.PAIR_MAX_LANES``).
        ``over_clear``: the overflow flag's own synchronous reset (else ``clear``'s)."""
        if whole:
            bits, over = self.read(carry)
            _load(pipe, self.bits, bits, clear)
            _load(pipe, self.over, over, clear)
            carries = clears = regs = []
        else:
            carries = carry if isinstance(carry, list) else [carry]
            clears = clear if isinstance(clear, list) else [clear]
            regs = [*self.bits, self.over]
        for i, reg in enumerate(regs):
            bits, over = self.read(carries[i * len(carries) // len(regs)])
            _load(pipe, reg, over if reg is self.over else bits[i],
                  over_clear if reg is self.over and over_clear is not None else
                  clears[i * len(clears) // len(regs)])
        for g in range(1, len(self.below)):
            pipe.m.d.sync += self.below[g].eq(
                self.below[g - 1] & self.bits[2 * g - 2:min(2 * g, len(self.bits))].all())


class SplitSum:
    """A ``width``-bit running sum of one message at a time with one short carry chain: a *low
    part* of :attr:`chunk` bits adds the increment (at most ``most``), and its carries go to a
    :class:`HighPart` two steps later.

    The low part is ``base``, which a message's last step zeroes, with one bit more on top that
    toggles at each carry out of the low part (``base[chunk]``): a sum bit of the chain like the
    others, so that the chain ends in a LUT and its flip-flop (nextpnr brings a bare carry-out
    out through a LC of its own, and its flip-flop a route away). A copy of that bit a step older
    tells a step with a carry (``carry``), which the high part counts. No logic sits in front of
    the chain, and each of its LUTs loads only its own flip-flop.

    :meth:`build` returns the sum as read :attr:`read_stages` steps after the step after a
    message's last (``fresh``): the last step's base and increment are added again (registered
    operands, a chain of their own) for the low part and the last step's carry, and the high
    part (which restarts as it is read) takes that carry by its toggles (one LUT a bit). The high
    part only changes in a step with a carry, and such steps are at least :meth:`spacing` steps
    apart (the low part must wrap again), so the chunk is chosen wide enough
    (:meth:`chunk_for`) that its flags settle in between.
    """
    #: Steps from the ``fresh`` step to the one in which the sum is read.
    read_stages = 2

    def __init__(self, name, width, most, chunk=None, *, whole=False):
        self.name, self.width, self.most, self.whole = name, width, most, whole
        self.chunk = self.chunk_for(width, most) if chunk is None else chunk
        if not self.settles(width, most, self.chunk):
            raise ValueError(f"{name}: a {self.chunk}-bit low part wraps too often for a "
                             f"{width}-bit sum of increments up to {most}")
        k = self.chunk
        self.base = Signal(k + 1, name=f"{name}_base", reset_less=True)
        self.high = HighPart(name, width - k)

    @staticmethod
    def spacing(most, chunk):
        """The fewest steps between two steps with a carry pending: after a wrap the low part is
        below ``most``; it wraps again once it has gained ``2**chunk - most + 1`` or more."""
        return -(-((1 << chunk) - most + 1) // most)

    @classmethod
    def settles(cls, width, most, chunk):
        """Whether the flags of a ``width``-bit sum with a ``chunk``-bit low part settle between
        two carries (``most`` the largest increment)."""
        pairs = (width - chunk + 1) // 2
        return 0 < chunk <= width and most < (1 << chunk) and \
            cls.spacing(most, chunk) >= pairs + 1

    @classmethod
    def chunk_for(cls, width, most):
        """The narrowest low part (the shortest carry chain) whose flags settle."""
        return next(chunk for chunk in range(1, width + 1) if cls.settles(width, most, chunk))

    def build(self, pipe, inc, ends, fresh):
        """Add ``inc`` when ``pipe`` advances. ``ends``: this step is a message's last;
        ``fresh``: a flip-flop, set in the step after it. Returns ``(value, over)``: the sum
        modulo ``2**width`` and whether it overflowed, valid :attr:`read_stages` (2) steps after
        the ``fresh`` step."""
        k, name = self.chunk, self.name
        # (A synchronous reset even with `clear_in_data`: an AND would follow the carry chain.)
        _load(pipe, self.base, (self.base + inc)[:k + 1], ends, in_data=False)
        # `carry`: the step before last carried (the top bit toggled), two steps after it; not
        # in the `fresh` step, where the top bit was zeroed.
        toggle = pipe.data(f"{name}_toggle", self.base[k])
        carry = pipe.data(f"{name}_carry", (self.base[k] ^ toggle) & ~fresh)
        # The read: the last step's base and increment added again (`r0`), and whether that
        # step carried (`r1`).
        base = pipe.data(f"{name}_last_base", self.base, k + 1)
        step = pipe.data(f"{name}_last_inc", inc, len(Value.cast(inc)))
        r0 = pipe.data(f"{name}_r0_low", (base + step)[:k + 1], k + 1)
        r0_top = pipe.data(f"{name}_r0_top", base[k])
        low = pipe.data(f"{name}_r1_low", r0[:k], k)
        last = pipe.data(f"{name}_r1_carry", r0[k] ^ r0_top)
        # The high part is read and restarts two steps after the `fresh` step (`read`): the next
        # message's first steps never carry (its low part starts from zero), so no carry of it
        # is lost. The read takes `last`, a register of its own, so that its LUTs are not the
        # high part's next state (a LUT that fed both would need a route more to one of them).
        read = pipe.control(f"{name}_r1_fresh", pipe.control(f"{name}_r0_fresh", fresh))
        self.high.count(pipe, carry, read, whole=self.whole)
        high, over = self.high.read(last)
        return Cat(low, high), over


class LevelSum:
    """A ``width``-bit running sum (8 bits or more) of increments of 0..3 with no carry chain:
    every register is a LUT of at most four flip-flops, and so is every bit of the sum as it is
    read (so no LUT feeds two flip-flops: on the iCE40 one of them would need a route more).

    Bit 0 adds the increment's bit 0; bits 1-2 add the increment's bit 1 and bit 0's
    registered carry (``carries[0]``); :attr:`levels` of 2 bits each count the registered
    carries of the part below (``carries[j]``); a :class:`HighPart` counts the top level's.
    The first step of a message loads bits 0-2 with the increment and clears the rest (the
    reset is in the LUTs of bits 0 and 1, a synchronous reset elsewhere). Bits 1-2 carry at
    most every other step, level ``j`` at most every ``2 * 4**j`` steps; the number of levels
    is chosen so that the high part's flags settle between its carries (:meth:`levels_for`).

    :meth:`build` returns the sum as it is read :attr:`read_stages` steps after the ``fresh``
    step (the step after a message's last). In the ``fresh`` step the parts restart for the
    next message, and stage 0 copies them with the carry pending into bits 1-2 added; each
    later stage adds the carry into one more level (a part that has just wrapped holds at most
    1, so a carry pending into the next part and a carry out of it never both come); the last
    one's carry goes to the high part by its toggles as the sum is read, and the high part
    restarts. The next message's carries cannot reach the high part before that, and the top
    level's carry pending in the ``fresh`` step goes into the high part as usual. The flags are
    exact when the read uses them: a carry out of the top level means that it held 3, so the
    high part last changed at least ``6 * 4**(levels - 1)`` steps before.

    With ``held`` (:meth:`build`, two levels or more) the high part is not read out and does
    not restart as it is read: the carry into it in the read step is worked out a step ahead
    (``fc``, from flags "this level is all ones" registered in the ``fresh`` step) and taken by
    the top carries, so the high part holds the sum's high bits from the step after the read
    until it restarts :data:`HOLD_STEPS` steps later; a flag ``hit`` tells whether any carry came
    into it in the message (if none did, its bits may be an older message's, and the sum's are
    0). The validator with one lane (from 32 bits) keeps its verdict's high bits there (its output's
    big place holds a verdict for at most two steps after the read).
    """
    def __init__(self, name, width):
        self.name, self.width = name, width
        self.levels = self.levels_for(width)
        reg = lambda suffix, shape=1: Signal(shape, name=f"{name}_{suffix}", reset_less=True)
        self.bit0 = reg("bit0")
        self.bit1, self.bit2 = reg("bit1"), reg("bit2")
        self.counters = [reg(f"l{j}", 2) for j in range(1, self.levels + 1)]
        #: carries[0] into bit 1, carries[j] out of level j (into level j + 1, or the high part).
        self.carries = [reg(f"p{j}") for j in range(self.levels + 2)]
        self.high = HighPart(name, width - 3 - 2 * self.levels)

    @staticmethod
    def levels_for(width):
        """The fewest levels whose high part's flags settle between its carries and before a
        read uses them."""
        for levels in range(1, 8):
            pairs = (max(0, width - 3 - 2 * levels) + 1) // 2
            if 2 * 4 ** levels >= pairs + 1 and 6 * 4 ** (levels - 1) + levels + 1 >= pairs + 2:
                return levels

    @property
    def read_stages(self):
        """Steps from the ``fresh`` step to the one in which the sum is read."""
        return self.levels + 1

    @staticmethod
    def _step(level, carry):
        """A 2-bit level plus a carry: its next value and its carry-out."""
        return Cat(level[0] ^ carry, level[1] ^ (level[0] & carry)), carry & level.all()

    def build(self, pipe, inc, ends, fresh, *, held=False):
        """Add ``inc`` (0..3) when ``pipe`` advances. ``ends``: this step is a message's last;
        ``fresh``: a flip-flop, set in the step after it. Builds the read-out stages; returns
        ``(value, over)``: the sum modulo ``2**width`` and whether it overflowed, valid
        :attr:`read_stages` steps after the ``fresh`` step.

        ``held`` (two levels or more): the high part is not read out. In the read step it takes
        the last carry (the read-out works it out a step ahead, ``fc``) and then holds the sum's
        high bits until :data:`HOLD_STEPS` steps later, when it restarts (the next message's
        first carry into it comes at least ``2 * 4**levels / 3`` steps after its start); its
        overflow flag restarts in the read step. Returns ``(low, high, over, shown)``: the low
        bits as read, the high part's bits (the sum's from the step after the read until the
        restart), the overflow flag as read and ``shown``: whether any carry came into the high
        part in the message (if not, its high bits are 0 and the high part may hold an older
        message's: the caller masks them)."""
        if held and self.levels < 2:
            raise ValueError("a held high part needs two levels or more")
        inc = Value.cast(inc)
        bit0, bit1, bit2, c0 = self.bit0, self.bit1, self.bit2, self.carries[0]
        # Bits 1-2 add the increment's bit 1 and the carry out of bit 0 (`rise`: into bit 2).
        rise = (bit1 & c0) | (bit1 & inc[1]) | (c0 & inc[1])
        _load(pipe, bit0, inc[0] ^ (bit0 & ~fresh))
        _load(pipe, c0, bit0 & inc[0] & ~fresh)
        _load(pipe, bit1, inc[1] ^ (~fresh & (bit1 ^ c0)))
        _load(pipe, bit2, bit2 ^ rise, fresh)
        _load(pipe, self.carries[1], bit2 & rise, fresh)
        for j, level in enumerate(self.counters, start=1):
            value, out = self._step(level, self.carries[j])
            _load(pipe, level, value, fresh)
            if not held or j < self.levels:
                _load(pipe, self.carries[j + 1], out, fresh)
        # The top level's carry in copies for the high part's bits (26 loads on one net were a
        # long route); the copies also carry in the first steps after a reset (`flush[k]`),
        # while the high part is cleared, so that synthesis keeps them.
        tops = [self.carries[-1]] + [Signal(name=f"{self.name}_p{len(self.carries) - 1}_{k}",
                                            reset_less=True) for k in range(1, CARRY_COPIES)]
        value, out = self._step(self.counters[-1], self.carries[-2])
        if held:
            # The last carry a step ahead, one copy per copy of the top carry (each cleared by
            # its own flush flag, so that synthesis keeps them apart): the top carries take it
            # in the step before the read, so the high part counts it in the read step.
            fcs = [Signal(name=f"{self.name}_fc{k}", reset_less=True) for k in range(len(tops))]
            _load(pipe, self.carries[-1], out | fcs[0], fresh)
            for reg, fc in zip(tops[1:], fcs[1:]):
                _load(pipe, reg, out | fc, fresh)
        else:
            for k, reg in enumerate(tops[1:]):
                _load(pipe, reg, out | pipe.flush[k], fresh)

        # The read-out: stage s (0 in the fresh step's registers) holds bits 0..2 and levels
        # 1..s resolved, the carry into level s + 1, and the levels and carries above it.
        value, out = self._step(Cat(bit1, bit2), c0)
        resolved, carry = [bit0, value], self.carries[1] | out
        levels, pending, flag = self.counters, self.carries[2:-1], fresh
        # (held) Per level "all ones" in the fresh step (0 in any other), carried along; the top
        # level's in a copy per copy of the top carry, each also 0 in its own step of the
        # flush, so that synthesis keeps them and what they feed apart.
        alls = [level.all() & fresh for level in self.counters[:-1]]
        tops_all = [self.counters[-1].all() & fresh & (~pipe.flush[k] if len(tops) > 1 else 1)
                    for k in range(len(tops))]
        for s in range(self.read_stages):
            name = f"{self.name}_r{s}"
            resolved = [pipe.data(f"{name}_low{i}", part, len(part))
                        for i, part in enumerate(resolved)]
            carry = pipe.data(f"{name}_carry", carry)
            levels = [pipe.data(f"{name}_l{i}", level, 2) for i, level in enumerate(levels)]
            pending = [pipe.data(f"{name}_p{i}", p) for i, p in enumerate(pending)]
            if held and s + 2 < self.read_stages:
                alls = [pipe.data(f"{name}_all{i}", a)
                        for i, a in enumerate(alls[len(alls) - (len(levels) - 1):])]
                tops_all = [pipe.data(f"{name}_top_all{k}", a) for k, a in enumerate(tops_all)]
            if held and s + 3 == self.read_stages:
                # Two levels left: the carry out of the second (the last carry), a step ahead.
                for fc, top_all in zip(fcs, tops_all):
                    _load(pipe, fc, (pending[0] | (carry & alls[0])) & top_all)
            flag = (pipe.control(f"{name}_fresh", flag) if s + 1 < self.read_stages else
                    pipe.control_copies(f"{name}_fresh", flag, CLEAR_COPIES))
            if levels:
                value, out = self._step(levels[0], carry)
                resolved, carry = [*resolved, value], (pending[0] | out) if pending else out
                levels, pending = levels[1:], pending[1:]
        if not held:
            self.high.count(pipe, tops, flag)
            high, over = self.high.read(carry)
            return Cat(*resolved, high), over
        # The restart, HOLD_STEPS steps after the read step (the verdict has left by then).
        late = flag[0]
        for s in range(self.read_stages, self.read_stages + HOLD_STEPS):
            name = f"{self.name}_r{s}_fresh"
            late = (pipe.control(name, late) if s + 1 < self.read_stages + HOLD_STEPS else
                    pipe.control_copies(name, late, CLEAR_COPIES))
        self.high.count(pipe, tops, late, over_clear=flag[0])
        over = self.high.read(carry)[1]
        # `hit`: a carry came into the high part since the last read step.
        hit = Signal(name=f"{self.name}_hit", reset_less=True)
        _load(pipe, hit, hit | tops[0], flag[0])
        return Cat(*resolved), self.high.bits, over, hit | carry
