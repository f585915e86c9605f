"""A wide running sum whose carry chains are cut into short chunks."""

from amaranth.hdl import Cat, Mux, Signal, Value


__all__ = ["ChunkedSum"]


class ChunkedSum:
    """The registers of a ``width``-bit running sum kept as chunks of at most ``chunk`` bits,
    each with the carry into it still *pending* (a flip-flop), and a sticky overflow flag.

    Its value is ``sum(c_j << o_j) + sum(p_j << o_j)`` (chunk ``j`` at bit ``o_j``; ``p_j`` the
    carry pending into it; the top chunk's carry-out is pending into ``over``, at bit ``width``),
    or "at least ``2**width``" once ``over`` is set. :meth:`step` gives the next state: ``inc``
    added into chunk 0, and every chunk adds its pending carry, whose own carry-out becomes the
    next chunk's pending carry. So no carry chain is longer than a chunk (on the iCE40 UP5K a carry
    chain costs about 0.28 ns a bit), and none ends in a LUT.

    A copy of a state (:meth:`copy`) is read out (:meth:`resolved`) without waiting for its
    pending carries to ripple through. A carry pending into chunk ``j`` means that chunk ``j-1``
    has just wrapped, so it is not all ones: the carry into chunk ``j`` is ``p_j``, or the carry
    into chunk ``j-1`` if that one is all ones. The copy registers whether each chunk is all ones
    (known from the registers of the state before the step), so that the read-out is a
    lookahead of one-bit flags and one incrementer a chunk.

    ``inc`` must be less than ``2**chunk``.
    """
    def __init__(self, name, width, chunk):
        self.name, self.width, self.chunk = name, width, chunk
        self.chunks = [Signal(min(chunk, width - lo), name=f"{name}_c{j}", reset_less=True)
                       for j, lo in enumerate(range(0, width, chunk))]
        self.pending = [Signal(name=f"{name}_p{j}", reset_less=True)
                        for j in range(1, len(self.chunks) + 1)]
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
        return [*chunks, *carries, self.over | self.pending[-1]]

    def resolved(self):
        """The value of a copy (:meth:`copy`): ``(value, over)``, the sum modulo ``2**width``
        (one incrementer a chunk, whose carry-in is a lookahead of one-bit flags) and whether it
        overflowed (then its value is "at least ``2**width``")."""
        chunks = [self.chunks[0]]
        for j, chunk in enumerate(self.chunks[1:], start=1):
            chunks.append((chunk + self.carry_in(j))[:len(chunk)])
        return Cat(*chunks), self.over | self.carry_in(len(self.chunks))

    def carry_in(self, j):
        """The carry into chunk ``j`` of a copy when its pending carries are resolved
        (``j`` = the number of chunks: the carry out of the top chunk)."""
        carry = 0
        for i in range(1, j + 1):
            carry = self.pending[i - 1] | (self.ones[i - 2] & carry if i > 1 else 0)
        return carry

    def load(self, pipe, values):
        """Load the registers with ``values`` when ``pipe`` advances."""
        for reg, value in zip(self.registers, values):
            with pipe.m.If(pipe.enable(len(reg))):
                pipe.m.d.sync += reg.eq(value)

    def like(self, name):
        """A new set of registers of the same shape."""
        return ChunkedSum(name, self.width, self.chunk)

    def copy(self, pipe, name, state, keep=1):
        """A new set of registers of the same shape (named ``name``), loaded with ``state`` (the
        values of :meth:`step`) when ``pipe`` advances, with ``ones``: for chunks 1.. whether
        the chunk is all ones in ``state``, known from this state's registers (a chunk above 0
        only adds its pending carry: it is all ones after the step if it is now, or if it is one
        less and takes a carry). Where ``keep`` is 0 the copy is loaded with zero (its value 0).
        Read the copy's value with :meth:`resolved`."""
        regs = self.like(name)
        regs.load(pipe, [Mux(keep, value, 0) for value in state])
        regs.ones = [pipe.data(f"{name}_ones{i}", keep & Mux(carry, chunk == (1 << len(chunk)) - 2,
                                                            chunk == (1 << len(chunk)) - 1))
                     for i, (chunk, carry) in enumerate(zip(self.chunks[1:], self.pending),
                                                        start=1)]
        return regs
