"""The pairing stages of the WTF-8 encoder (:func:`pair_stages`): a lead surrogate directly
followed by a trail surrogate is written as the pair's 4-byte sequence, as two characters of the
shift encoder: the lead's first three bytes, then the trail's last byte. They sit between the
shift encoder's A2 and A3 (:class:`~utf8_gateware.hdl.utf8_shift_encoder.Utf8ShiftEncoder` with
``encoding="wtf-8"``), moved by its unit stages' clock enables, one LUT level between
flip-flops. (The decoders' joiner, of CESU-8 and Modified UTF-8 bytes, is
:class:`~utf8_gateware.hdl.surrogate_joiner.SurrogateJoiner`.)
"""

from amaranth.hdl import Cat, Const

from .pipeline import keep
from .utf8_shift_encoder import stage_signals


__all__ = ["PAIR_LATENCY", "pair_stages", "plus_one"]


#: The stages :func:`pair_stages` adds between the shift encoder's A2 and A3: cycles of latency.
PAIR_LATENCY = 2

#: ED's bits 0..3 (1101): a lone lead surrogate's lead byte, whose W took the pair's instead.
_ED_LOW = 0b1101


def pair_stages(move, a2):
    """The WTF-8 specification's "Encoding" (the reference model's ``StreamEncoder`` with
    ``join_pairs``) as two stages W and X loaded by ``move`` (the shift encoder's unit-stage
    enables: an object with ``load(pairs)``) behind A2's registers ``a2`` (its class flags and
    candidates, with ``encoding="wtf-8"`` also ``bmp`` (u[20:16] zero), ``sl`` (valid, not last,
    u[20:10] == 0000 0110110), ``st`` (valid, u[15:10] == 110111) and ``w`` (bits 4..2 of u[9:6]
    + 1, the pair's plane if the unit is its lead): a lead to wait for its trail is ``z21v &
    sl``, a trail ``z21v & bmp & st``). Returns X's registers, A2's with the pair written
    in, for
    :func:`~utf8_gateware.hdl.utf8_shift_encoder.character`.

    A lead D800..DBFF that is not the last of its message (``wait``) waits in W while A2 holds a
    bubble (X takes a bubble): it moves on with the next unit in A2, and then X knows whether
    that unit is a trail (``pl``). A pair is two characters, so there is no bubble to squeeze:
    the lead's (``pl``) is the first three bytes of the code point's 4-byte sequence, 11110
    w[4:2], 10 w[1:0] h[5:2], 10 h[1:0] l[9:6] (h, l: the lead's and trail's u[9:0]; l[9:6]
    from the trail, which is in W when the lead is in X), a C4-like lead byte with C3's count;
    the trail's (the unit after a ``pl``) is its last byte, 10 l[5:0], written as C1
    with bit 7 set. A lone lead (``ll``: it waited, no trail followed) is C3 (ED ...), as every
    other surrogate: the shift encoder writes them all. So every register of X is one LUT:

        W  A2's registers as they are but ``lo`` and ``big``, kept while it holds a waiting
           lead and A2 a bubble (one 4-input LUT each: ``wait``, A2's ``valid``, the two
           values), and ``wait``; ``z21v`` is ``z21v & ~big`` (no error: a held lead's is 1,
           so its LUT reads ``z21v`` and ``big`` instead of its own value)
        X  W's, with ``pl``, ``ll`` and, for a waiting lead, the pair's candidates in
           place of those a lone lead does not read (``hi``: w[4:2]; ``p0``: w[1:0] h[5:2],
           w[1:0] from h[7:6] in ``pa``), for a pair's trail C1's flags and payload (``x``,
           ``lw``, ``lo``: l[4:0], ``pa[0]`` 0; its carried kind none: a pair carries its
           lead's); ``lo`` is made here, C1's u[4:0] (``p0``) if ``lw`` or a trail, else
           C2's u[10:6] (``pa``): five flip-flops fewer in A2 and W (233 -> 223 LCs); no
           ``big`` (A3's ``bs``, ``big``: 0, W's ``z21v`` has it in)

    A3 then reads ``ll`` (ED's 1101 for a lone lead's bits 0..3), ``pl`` (the lead byte's bit
    4 is ``r4 | pl``: an error's lead byte is EF or 00 whatever it is; the pair's payloads),
    and a trail's ``pa[5]`` (its u[11], 1; a C1's is 0) for bit 7: :func:`pair_character`.
    (X held a flag ``pt``, the trail of a pair, for bit 7 before stop 29: 221 -> 220 LCs.)
    """
    # (``bs`` is ``big``: WTF-8 writes every surrogate; X makes ``lo``, so A2's is not read and
    # synthesis drops it: 223 -> 222 LCs with the same A2 and W, dropping it in A2 packs the
    # enables otherwise, ``strict`` 163.4 / 160.0 / 157.0 MHz against 162.1 / 162.7 / 149.5)
    moved = [name for name in vars(a2) if name not in ("bmp", "sl", "st", "bs", "lo", "big")]
    w = stage_signals("w", "wait", **{name: len(getattr(a2, name)) for name in moved})
    hold = w.wait & ~a2.valid
    # W's ``z21v`` is ``z21v & ~big`` (no error): a held lead's is 1, so its LUT needs not its
    # own value (``wait``, A2's ``valid``, ``z21v``, ``big``)
    move.load([
        *((getattr(w, name), hold | (a2.z21v & ~a2.big) if name == "z21v" else
           keep(hold, getattr(w, name), getattr(a2, name))) for name in moved),
        (w.wait, hold | (a2.z21v & a2.sl)),
    ])
    x = stage_signals("x", "pl", "ll", lo=len(a2.lo),
                      **{name: len(getattr(w, name)) for name in moved if name != "w"})
    trail = a2.z21v & a2.bmp & a2.st
    copied = [name for name in moved
              if name not in ("w", "valid", "x", "lw", "hi", "p0", "lo", "pa", "carried")]
    move.load([
        *((getattr(x, name), getattr(w, name)) for name in copied),
        (x.valid, w.valid & ~hold),
        (x.pl, w.wait & trail), (x.ll, w.wait & ~trail),
        (x.x, w.x | x.pl), (x.lw, w.lw | x.pl),
        (x.hi, keep(w.wait, Cat(w.w, 0), w.hi)),
        # w[1:0] = u[7:6] + 1, from the lead's u[7:6] (in ``pa``)
        (x.p0, keep(w.wait, Cat(w.p0[2:6], ~w.pa[0], w.pa[1] ^ w.pa[0]), w.p0)),
        (x.lo, keep(x.pl | w.lw, w.p0[:5], w.pa[:5])),
        (x.pa, Cat(w.pa[0] & ~x.pl, w.pa[1:])),
        *([(x.carried, w.carried & ~x.pl.replicate(len(w.carried)))]
          if hasattr(w, "carried") else []),
    ])
    x.bs = x.big = Const(0, 1)
    x.next_l = w.pa[:4]                    # the trail's l[9:6], for the pair's third byte
    return x


def pair_character(x, lead, p1, p2):
    """A3's lead byte, ``p1`` and ``p2`` of WTF-8 from X's registers ``x``, given those of
    :func:`~utf8_gateware.hdl.utf8_shift_encoder.character` (whose LUTs have room for one more
    input): a lone lead's ED in place of the pair's w[4:2] (``ll``), the pair's bit 4 and its
    payloads (``pl``), bit 7 (``~(x & lw)``, or ``pa[5]``: a pair's trail, whose u[11] is 1,
    where a C1's ``x`` holds u[11] at 0; :func:`character`'s lead has seven bits, its bit 7
    being ``~n1`` in B, which a pair's one-byte trail would clear)."""
    ed = Const(_ED_LOW, 4)
    lead = Cat(keep(x.x, x.lo[:4], keep(x.ll, ed, x.hi)),
               keep(x.x, x.lo[4], x.r4 | x.pl), lead[5:7], ~(x.x & x.lw) | x.pa[5])
    p1 = keep(x.x | x.pl, x.p0, x.pa)
    p2 = keep(x.pl, Cat(x.next_l, x.p2[:2]), x.p2)
    return lead, p1, p2


def plus_one(bits):
    """``bits + 1`` (one bit wider), each bit a LUT of the bits up to it (an adder would be a
    carry chain: a longer path than one LUT)."""
    carries = [Const(1, 1)]
    for bit in bits:
        carries.append(carries[-1] & bit)
    return Cat(*(bit ^ carry for bit, carry in zip(bits, carries)), carries[-1])
