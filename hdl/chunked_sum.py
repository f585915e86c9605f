"""A wide running sum whose carry chains are cut into short chunks."""

from amaranth.hdl import Cat, Signal, Value


__all__ = ["ChunkedSum"]


class ChunkedSum:
    """The registers of a ``width``-bit running sum kept as chunks of at most ``chunk`` bits,
    each with the carry into it still *pending* (a flip-flop), and a sticky overflow flag.

    Its value is ``sum(c_j << o_j) + sum(p_j << o_j)`` (chunk ``j`` at bit ``o_j``; ``p_j`` the
    carry pending into it), or "at least ``2**width``" once ``over`` is set. :meth:`step` gives the
    next state: ``inc`` added into chunk 0, and every chunk adds its pending carry, whose own
    carry-out becomes the next chunk's pending carry (the top chunk's sets ``over``). So no carry
    chain is longer than a chunk (on the iCE40 UP5K a carry chain costs about 0.28 ns a bit), and
    a state with pending carries is *resolved* (all ``p_j`` zero) by ``len(chunks) - 1`` steps
    with ``inc`` = 0: a carry moves one chunk a step.

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
    def steps(self):
        """Steps that resolve any state: one per chunk boundary."""
        return len(self.chunks) - 1

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

    def saturated(self, state):
        """The value of a resolved ``state`` (values in the order of :attr:`registers`), all
        ones if it overflowed."""
        value = Cat(*state[:len(self.chunks)])
        return value | Value.cast(state[-1]).replicate(self.width)

    def load(self, pipe, values):
        """Load the registers with ``values`` when ``pipe`` advances."""
        for reg, value in zip(self.registers, values):
            with pipe.m.If(pipe.enable(len(reg))):
                pipe.m.d.sync += reg.eq(value)

    def like(self, name):
        """A new set of registers of the same shape."""
        return ChunkedSum(name, self.width, self.chunk)
