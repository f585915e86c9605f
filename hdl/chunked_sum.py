"""A wide running sum whose carry chains are cut into short chunks."""

from amaranth.hdl import Cat, Mux, Signal, Value


__all__ = ["ChunkedSum"]


class ChunkedSum:
    """A ``width``-bit running sum of one message at a time, kept as chunks of at most ``chunk``
    bits, each with the carry into it still *pending* (a flip-flop), and a sticky overflow flag;
    built by :meth:`accumulate`, read by :meth:`resolved`.

    Its value is ``sum(c_j << o_j) + sum(p_j << o_j)`` (chunk ``j`` at bit ``o_j``; ``p_j`` the
    carry pending into it; the top chunk's carry-out is pending into ``over``, at bit ``width``),
    or "at least ``2**width``" once ``over`` is set. Each step adds ``inc`` into chunk 0, and every
    chunk adds its pending carry, whose own carry-out becomes the next chunk's pending carry. So no
    carry chain is longer than a chunk (on the iCE40 UP5K a carry chain costs about 0.28 ns a
    bit), and none ends in a LUT.

    The value is read out without waiting for the pending carries to ripple through. A carry
    pending into chunk ``j`` means that chunk ``j-1`` has just wrapped, so it is not all ones:
    the carry into chunk ``j`` is ``p_j``, or the carry into chunk ``j-1`` if that one is all
    ones. A flag per chunk (``ones``) says whether it is all ones, known a step ahead (a chunk
    above 0 only adds its pending carry: it is all ones after the step if it is now, or if it is
    one less and takes a carry); so the read-out is a lookahead of one-bit flags and one
    incrementer a chunk.

    ``inc`` must be less than ``2**chunk``.
    """
    def __init__(self, name, width, chunk):
        self.name, self.width, self.chunk = name, width, chunk
        self.chunks = [Signal(min(chunk, width - lo), name=f"{name}_c{j}", reset_less=True)
                       for j, lo in enumerate(range(0, width, chunk))]
        self.pending = [Signal(name=f"{name}_p{j}", reset_less=True)
                        for j in range(1, len(self.chunks) + 1)]
        self.ones = [Signal(name=f"{name}_ones{j}", reset_less=True)
                     for j in range(1, len(self.chunks))]
        self.over = Signal(name=f"{name}_over", reset_less=True)
        #: Chunk 0 as the next step adds to it: zero after a message's last step.
        self.base = Signal(len(self.chunks[0]), name=f"{name}_base", reset_less=True)

    def accumulate(self, pipe, inc, ends, fresh):
        """Add ``inc`` when ``pipe`` advances. ``ends``: this step is a message's last (after it
        the registers hold the message's sum, to be read in the next step); ``fresh``: a
        flip-flop, set in the step after a message's last (the registers hold its sum, and the
        next message starts from zero).

        Only chunk 0 takes ``inc``, so only chunk 0 has a copy (``base``) that is zeroed at the
        end of a message; the other registers are zeroed when ``fresh`` (a synchronous reset):
        no logic in front of a carry chain."""
        total = self.base + inc
        k = len(self.chunks[0])
        values = [(self.chunks[0], total[:k]), (self.base, Mux(ends, 0, total[:k])),
                  (self.pending[0], total[k])]
        for j, (chunk, carry) in enumerate(zip(self.chunks[1:], self.pending), start=1):
            total = chunk + carry
            values += [(chunk, Mux(fresh, 0, total[:len(chunk)])),
                       (self.pending[j], Mux(fresh, 0, total[len(chunk)])),
                       (self.ones[j - 1], ~fresh & Mux(carry, chunk == (1 << len(chunk)) - 2,
                                                       chunk == (1 << len(chunk)) - 1))]
        values.append((self.over, Mux(fresh, 0, self.over | self.pending[-1])))
        for reg, value in values:
            with pipe.m.If(pipe.enable(len(reg))):
                pipe.m.d.sync += reg.eq(value)

    def resolved(self, keep=1):
        """``(value, over)``: the sum modulo ``2**width`` (one incrementer a chunk, whose
        carry-in is a lookahead of one-bit flags) and whether it overflowed (then its value is
        "at least ``2**width``"); both zero where ``keep`` is 0 (its AND is in front of the
        carry chains, beside the lookahead)."""
        chunks = [self.chunks[0] & Value.cast(keep).replicate(len(self.chunks[0]))]
        for j, chunk in enumerate(self.chunks[1:], start=1):
            masked = chunk & Value.cast(keep).replicate(len(chunk))
            chunks.append((masked + (keep & self.carry_in(j)))[:len(chunk)])
        return Cat(*chunks), keep & (self.over | self.carry_in(len(self.chunks)))

    def carry_in(self, j):
        """The carry into chunk ``j`` when the pending carries are resolved (``j`` = the number
        of chunks: the carry out of the top chunk)."""
        carry = 0
        for i in range(1, j + 1):
            carry = self.pending[i - 1] | (self.ones[i - 2] & carry if i > 1 else 0)
        return carry
