"""The joining stages of the WTF-8 encoder (:func:`join_pairs`): a lead surrogate directly
followed by a trail surrogate becomes the pair's supplementary code point; every other code unit
passes unchanged. They are the front of
:class:`~utf8_gateware.hdl.utf8_shift_encoder.Utf8ShiftEncoder` with ``encoding="wtf-8"``, moved
by its unit stages' clock enables, one LUT level between flip-flops. (The decoders' joiner, of
CESU-8 and Modified UTF-8 bytes, is :class:`~utf8_gateware.hdl.surrogate_joiner.SurrogateJoiner`.)
"""

from amaranth.hdl import Cat, Const

from .pipeline import keep
from .utf8_shift_encoder import stage_signals


__all__ = ["JOIN_LATENCY", "join_pairs"]


#: The stages :func:`join_pairs` adds in front of the shift encoder's A1: cycles of latency.
JOIN_LATENCY = 5


def join_pairs(move, valid, last, u, carried=None):
    """The WTF-8 specification's "Encoding" (the reference model's ``StreamEncoder`` with
    ``join_pairs``) as five stages loaded by ``move`` (the shift encoder's unit-stage enables:
    an object with ``load(pairs)``), from the input unit ``u`` (32 bits; ``valid``, ``last``,
    ``carried``: the error kind of ``carry_error`` or ``None``).

    A unit D800..DBFF that is not the last of its message, directly followed by a unit
    DC00..DFFF, becomes one unit: the pair's code point (The Unicode Standard 3.9, D91), with the
    lead's carried kind. Every other unit passes unchanged (lone surrogates, values of 0x110000
    or more: the shift encoder writes every surrogate it sees, all lone, and flags too large
    values). Returns ``(valid, last, u, carried)`` for A1, all flip-flops of S (``u``: 21 bits,
    and u[31:21] as copies of one flip-flop, set if the unit's u[31:21] is not zero).

    Stages (every register one LUT of at most four flip-flops)::

        P  the unit u[20:0] and pieces of it, each a function of four input bits: u[31:28],
           u[27:24], u[23:21], u[23:20], u[19:16] zero, u[15:12] == 1101, ``tt`` (valid,
           u[11:10] == 11), ``ll`` (valid, u[11:10] == 10, not ``last``)
        Q  ``large`` (u[31:21] not zero), ``hz`` (u[31:16] zero), ``t`` (valid and with ``hz``
           a trail), ``l`` (valid, not last, and with ``hz`` a lead), ``w1``: u[9:6] + 1 (the
           pair's plane, if the unit is its lead)
        H  the held unit: it takes Q's unless it is a lead that waits (``wait``) and Q holds a
           bubble; ``used``: H holds the trail of a pair whose lead is in G
        G  H's unit when H moves on (else a bubble; a used trail is none)
        S  G's unit, or with ``used`` the pair: the trail's u[9:0] (in H), the lead's u[5:0]
           and ``w1`` (in G); so the pair's bubble comes after it (the shift encoder squeezes
           it out while it writes the pair's four bytes)

    A unit is in A1 :data:`JOIN_LATENCY` = 5 moves after it was taken (a pair: 4 after its
    trail); while a lead waits in H, the stages behind it go on moving (bubbles).
    """
    err = {} if carried is None else {"err": len(carried)}
    p = stage_signals("p", "valid", "last", "zh", "zm", "zt", "z20", "p16", "s12", "tt", "ll",
                      u=21, **err)
    move.load([
        (p.valid, valid), (p.last, last), (p.u, u[:21]),
        (p.zh, u[28:32] == 0), (p.zm, u[24:28] == 0), (p.zt, u[21:24] == 0),
        (p.z20, u[20:24] == 0), (p.p16, u[16:20] == 0), (p.s12, u[12:16] == 0b1101),
        (p.tt, valid & u[11] & u[10]), (p.ll, valid & u[11] & ~u[10] & ~last),
        *_err(p, carried),
    ])
    q = stage_signals("q", "valid", "last", "large", "hz", "t", "l", u=21, w1=5, **err)
    move.load([
        (q.valid, p.valid), (q.last, p.last), (q.u, p.u),
        (q.large, ~(p.zh & p.zm & p.zt)), (q.hz, p.zh & p.zm & p.z20 & p.p16),
        (q.t, p.s12 & p.tt), (q.l, p.s12 & p.ll), (q.w1, _plus_one(p.u[6:10])),
        *_err(q, getattr(p, "err", None)),
    ])
    h = stage_signals("h", "valid", "wait", "used", "last", "large", u=21, w1=5, **err)
    shift = ~h.wait | q.valid            # H moves on, but while a lead waits for a unit
    moved = ("valid", "last", "u", "large", "w1", *err)
    move.load([
        *((getattr(h, name), keep(shift, getattr(q, name), getattr(h, name))) for name in moved),
        (h.wait, keep(shift, q.hz & q.l, h.wait)),
        (h.used, h.wait & q.hz & q.t),                  # Q's trail completes H's lead's pair
    ])
    g = stage_signals("g", "valid", "last", "large", u=21, w1=5, **err)
    move.load([
        (g.valid, h.valid & shift & ~h.used), *((getattr(g, name), getattr(h, name))
                                                for name in ("last", "u", "large", "w1", *err)),
    ])
    s = stage_signals("s", "valid", "last", "large", u=21, **err)
    move.load([
        (s.valid, g.valid), (s.large, g.large), (s.last, keep(h.used, h.last, g.last)),
        (s.u, Cat(keep(h.used, h.u[:10], g.u[:10]), keep(h.used, g.u[:6], g.u[10:16]),
                  keep(h.used, g.w1, g.u[16:]))),
        *_err(s, getattr(g, "err", None)),                      # a pair's: its lead's
    ])
    return s.valid, s.last, Cat(s.u, s.large.replicate(11)), getattr(s, "err", None)


def _plus_one(bits):
    """``bits + 1`` (one bit wider), each bit a LUT of the bits up to it (an adder would be a
    carry chain: a longer path than one LUT)."""
    carries = [Const(1, 1)]
    for bit in bits:
        carries.append(carries[-1] & bit)
    return Cat(*(bit ^ carry for bit, carry in zip(bits, carries)), carries[-1])


def _err(stage, value):
    """The carried error kind's register of ``stage`` taking ``value`` (none without it)."""
    return [] if value is None else [(stage.err, value)]
