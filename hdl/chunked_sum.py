"""A wide running sum whose carry chains are cut into short chunks."""

from amaranth.hdl import Cat, Mux, Signal, Value


__all__ = ["ChunkedSum"]


class ChunkedSum:
    """The registers of a ``width``-bit running sum kept as chunks of at most ``chunk`` bits,
    each with the carry into it still *pending* (a flip-flop), and a sticky overflow flag.

    Its value is ``sum(c_j << o_j) + sum(p_j << o_j)`` (chunk ``j`` at bit ``o_j``; ``p_j`` the
    carry pending into it), or "at least ``2**width``" once ``over`` is set. :meth:`step` gives the
    next state: ``inc`` added into chunk 0, and every chunk adds its pending carry, whose own
    carry-out becomes the next chunk's pending carry (the top chunk's sets ``over``). So no carry
    chain is longer than a chunk (on the iCE40 UP5K a carry chain costs about 0.28 ns a bit).

    A state is read out (:meth:`resolved`) without waiting for its pending carries to ripple
    through: a carry pending into chunk ``j`` means that chunk ``j-1`` has just wrapped, so it is
    not all ones, and the carry into each chunk is ``p_j | (a_{j-1} & g_{j-1})`` (``a_j``: chunk
    ``j`` is all ones), a small lookahead of one-bit flags. The flags of the state after a step
    are known before the step (:meth:`ones_after_step`), so a copy of the state can register them
    (:meth:`copy`) and resolve in one stage: the lookahead and one chunk's incrementer.

    ``inc`` must be less than ``2**chunk``.
    """
    def __init__(self, name, width, chunk):
        self.name, self.width, self.chunk = name, width, chunk
        self.chunks = [Signal(min(chunk, width - lo), name=f"{name}_c{j}", reset_less=True)
                       for j, lo in enumerate(range(0, width, chunk))]
        self.pending = [Signal(name=f"{name}_p{j}", reset_less=True)
                        for j in range(1, len(self.chunks))]
        self.over = Signal(name=f"{name}_over", reset_less=True)

    @property
    def registers(self):
        return [*self.chunks, *self.pending, self.over]

    def step(self, inc=0):
        """The next state's values (in the order of :attr:`registers`) after adding ``inc``."""
        chunks, carries = [], []
        for chunk, carry_in in zip(self.chunks, [inc, *self.pending]):
            total = chunk + carry_in
            chunks.append(total[:len(chunk)])
            carries.append(total[len(chunk)])
        return [*chunks, *carries[:-1], self.over | carries[-1]]

    def ones_after_step(self):
        """For chunks 1 .. (one flag each): whether the chunk is all ones after :meth:`step`
        (it adds its pending carry only, so this is a comparison of the registers)."""
        return [Mux(carry, chunk == (1 << len(chunk)) - 2, chunk == (1 << len(chunk)) - 1)
                for chunk, carry in zip(self.chunks[1:], self.pending)]

    def saturated(self, state):
        """The value of a ``state`` without pending carries (values in the order of
        :attr:`registers`), all ones if it overflowed."""
        value = Cat(*state[:len(self.chunks)])
        return value | Value.cast(state[-1]).replicate(self.width)

    def resolved(self, ones):
        """This state's value, all ones if it overflowed, from its registers and ``ones`` (the
        all-ones flags of chunks 1 .. , see :meth:`ones_after_step`): the carry into each chunk
        by lookahead, then one incrementer a chunk."""
        carry, chunks = 0, []
        for j, chunk in enumerate(self.chunks):
            if j:
                carry = self.pending[j - 1] | (ones[j - 2] & carry if j > 1 else 0)
            chunks.append((chunk + carry)[:len(chunk)])
        over = self.over | (ones[-1] & carry if ones else 0)
        return Cat(*chunks) | Value.cast(over).replicate(self.width)

    def load(self, pipe, values):
        """Load the registers with ``values`` when ``pipe`` advances."""
        for reg, value in zip(self.registers, values):
            with pipe.m.If(pipe.enable(len(reg))):
                pipe.m.d.sync += reg.eq(value)

    def like(self, name):
        """A new set of registers of the same shape."""
        return ChunkedSum(name, self.width, self.chunk)

    def copy(self, pipe, name, state):
        """A new set of registers of the same shape (named ``name``), loaded with ``state`` (the
        values of :meth:`step`) when ``pipe`` advances, and the all-ones flags of ``state``
        (:meth:`ones_after_step`). Returns ``(registers, flags)``: the value of the copy is
        ``registers.resolved(flags)``."""
        regs = self.like(name)
        regs.load(pipe, state)
        flags = [pipe.data(f"{name}_a{j}", flag)
                 for j, flag in enumerate(self.ones_after_step(), start=1)]
        return regs, flags
