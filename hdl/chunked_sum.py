"""A wide running sum with one short carry chain, readable at any step by one LUT level."""

from amaranth.hdl import Cat, Signal, Value


__all__ = ["SplitSum"]


class SplitSum:
    """A ``width``-bit running sum of one message at a time: a *low part* of ``chunk`` bits that
    adds the increment (the only carry chain), a *high part* that the low part's carry-out
    increments one step later (``pending``), and a sticky overflow flag; built by
    :meth:`accumulate`, read by :meth:`resolved`.

    Its value is ``(high + pending) << chunk | low``, or "at least ``2**width``" once ``over`` is
    set. Each step adds ``inc`` (at most ``most``) to the low part (``base + inc``: the low part
    ``low`` and its copy ``base``, which a message's last step zeroes, so that no logic sits in
    front of the chain) and registers the carry-out as ``pending``; the high part adds
    ``pending`` without a carry chain. Its bits come in pairs, and bit ``i`` toggles when
    ``pending`` is set and all bits below it are ones: for pair ``g``, the flag ``below[g]``
    (all bits below the pair are ones) and, for the pair's upper bit, its lower bit; so every
    bit is a LUT of at most four flip-flops. ``resolved`` is the same LUT: the sum is read in
    the step after a message's last, in one LUT level, while the sum restarts from zero.

    The flags ``below`` are registered and free-running (no clock enable), pair ``g``'s from pair
    ``g - 1``'s: they are exact ``g + 1`` cycles after the high part last changed. The high part
    only changes in a step in which ``pending`` is set, and such steps are at least
    :meth:`spacing` steps apart (the low part must wrap again), so the chunk is chosen wide
    enough (:meth:`chunk_for`) that the flags are always exact when they are used.
    """
    def __init__(self, name, width, most, chunk=None):
        self.name, self.width, self.most = name, width, most
        self.chunk = self.chunk_for(width, most) if chunk is None else chunk
        if not self.settles(width, most, self.chunk):
            raise ValueError(f"{name}: a {self.chunk}-bit low part wraps too often for a "
                             f"{width}-bit sum of increments up to {most}")
        k = self.chunk
        self.low = Signal(k, name=f"{name}_low", reset_less=True)
        self.base = Signal(k, name=f"{name}_base", reset_less=True)
        self.pending = Signal(name=f"{name}_pending", reset_less=True)
        self.high = Signal(width - k, name=f"{name}_high", reset_less=True)
        pairs = (width - k + 1) // 2
        # below[g]: the high part's bits below pair g are all ones (below[0] is always true);
        # below[pairs]: all of them are (the sum overflows with the next carry).
        self.below = [Value.cast(1)] + [Signal(name=f"{name}_below{g}", reset_less=True)
                                        for g in range(1, pairs + 1)]
        self.over = Signal(name=f"{name}_over", reset_less=True)

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

    def _toggles(self, carry):
        """Each high bit's next value when ``carry`` is added (a LUT of at most 4 inputs)."""
        bits = []
        for i in range(len(self.high)):
            flag = carry & self.below[i // 2]
            if i % 2:
                flag = flag & self.high[i - 1]
            bits.append(self.high[i] ^ flag)
        return Cat(*bits)

    def accumulate(self, pipe, inc, ends, fresh):
        """Add ``inc`` when ``pipe`` advances. ``ends``: this step is a message's last (after it
        the registers hold the message's sum, to be read in the next step, :meth:`resolved`);
        ``fresh``: a flip-flop, set in the step after a message's last (the next message starts
        from zero: the high part and the overflow flag take a synchronous reset)."""
        m, k = pipe.m, self.chunk
        total = self.base + inc
        updates = [(self.low, total[:k]), (self.base, total[:k], ends),
                   (self.pending, total[k]), (self.high, self._toggles(self.pending), fresh),
                   (self.over, self.over | (self.pending & self.below[-1]), fresh)]
        # (The low part and the carry-out share one copy of the clock enable, so that the
        # carry-out's flip-flop can sit at the end of the chain.)
        shared = pipe.enable(k + 1)
        for reg, value, *clear in updates:
            with m.If(shared if reg is self.low or reg is self.pending
                      else pipe.enable(len(reg))):
                if clear:
                    with m.If(clear[0]):
                        m.d.sync += reg.eq(0)
                    with m.Else():
                        m.d.sync += reg.eq(value)
                else:
                    m.d.sync += reg.eq(value)
        # The flags, free-running: pair g's from pair g - 1's and that pair's bits.
        for g in range(1, len(self.below)):
            m.d.sync += self.below[g].eq(self.below[g - 1] &
                                         self.high[2 * g - 2:min(2 * g, len(self.high))].all())

    def resolved(self):
        """``(value, over)`` in the step after a message's last: the sum modulo ``2**width``
        (each bit one LUT of flip-flops) and whether it overflowed (then its value is "at least
        ``2**width``")."""
        return (Cat(self.low, self._toggles(self.pending)),
                self.over | (self.pending & self.below[-1]))
