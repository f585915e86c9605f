"""The surrogate-joining stage of CESU-8 and Modified UTF-8 decoding."""

from types import SimpleNamespace

from amaranth.hdl import Cat, Value

from .error_kind import ErrorKind
from .lane_marks import surrogate_sequences
from .pipeline import keep


__all__ = ["SurrogateJoiner"]


_REPLACEMENT = 0xFFFD


class SurrogateJoiner:
    """The joining of surrogate pairs after a UTF-8-family byte decoder that accepts surrogates
    (CESU-8, Modified UTF-8), built into the decoder's own pipeline: a lead surrogate directly
    followed by a trail surrogate (both well-formed outputs of the byte decoder) is one
    supplementary code point. The reference's ``JoinSurrogates`` without ``merge_truncated``
    (and the UTF-16 decoder's rule, :class:`~utf8_gateware.hdl.utf16_decoder.Utf16Decoder`):

    * An error item of the byte decoder (U+FFFD or an escape U+DC80..U+DCFF, with its kind)
      passes through as it is and never merges with a lead surrogate before it: the lead is
      lone, an error of its own (ED A0 80 ED B0 is U+FFFD ``SURROGATE``, U+FFFD ``TRUNCATED``).
    * A lone surrogate becomes U+FFFD ``SURROGATE`` (``errors="replace"``), passes as itself
      flagged ``SURROGATE`` (``"surrogatepass"``) or, with ``lone_is_error=False`` (Modified
      UTF-8, where every Java ``char`` sequence is well-formed), as itself with ``NONE``.

    Why a stage after the byte decoder: a pair spans six bytes, past the byte decoder's
    three-byte look-back, and a lead is lone or not by the next output, which may come any
    number of bubbles later. But it is part of the decoder's rigid pipeline
    (:mod:`~utf8_gateware.hdl.pipeline`; one clock enable, one skid register) and reads only
    flip-flops: the decoder's last output slot ``X`` and flags that the lane marks in stage
    ``D`` (:func:`~utf8_gateware.hdl.lane_marks.surrogate_sequences`) and that travel with the
    item to ``X``: a lead that is not the message's last, a trail, any surrogate.

    Two stages: ``H`` holds one item; it takes ``X``'s in every step but while it holds a
    waiting lead and ``X`` is a bubble (a keep multiplexer: each bit one LUT of ``H``'s wait
    flag, ``X``'s valid, ``X``'s bit and its own), and with a lead also the lead's bits 6..9
    plus one (written bit by bit, no carry chain). ``J``, the output slot, takes ``H``'s item
    alone (a lone surrogate's value and kind chosen on the way), or the pair of ``H``'s lead
    and ``X``'s trail (``X``'s trail is then not kept in ``H``). Whether it is a pair is a
    flip-flop of its own, computed a step ahead from the flags one level before ``X``, so
    every bit of ``J`` is one LUT4 too. Cost: 33 flip-flops in ``H``, 26 in ``J``, six of
    flags and a dozen of the marks'. Latency: :attr:`LATENCY` = 2 steps after ``X``;
    throughput: one item in every step (a pair leaves a bubble).
    """

    #: Steps from the decoder's last output slot to the joined output slot.
    LATENCY = 2

    def __init__(self, errors="replace", *, lone_is_error=True):
        self._substitute = lone_is_error and errors == "replace"
        self._lone_kind = ErrorKind.SURROGATE if lone_is_error else None

    def mark(self, marks):
        """The stage-``D`` marks: ``lead`` and ``trail`` (the byte completes a well-formed
        surrogate sequence), as registers of the lane's namespace."""
        seq = surrogate_sequences(marks)
        return SimpleNamespace(lead=marks.fact("lead", seq.lead),
                               trail=marks.fact("trail", seq.trail))

    def flags(self, pipe, marked, last, slots):
        """The flags of the item in each slot stage, from the stage-``D`` ``marked`` and the
        byte's ``last``: registers of stage ``E``, then one per slot stage (``slots``). Returns
        the flags of the last two levels (the last slot's, and those of the level before)."""
        flags = {"lead": marked.lead & ~last, "trail": marked.trail,
                 "surrogate": marked.lead | marked.trail}
        levels = []
        for stage in range(slots + 1):
            flags = {name: pipe.data(f"join_{stage}_{name}", value)
                     for name, value in flags.items()}
            levels.append(SimpleNamespace(**flags))
        return levels[-2:]

    def build(self, pipe, x, flags):
        """``H`` and ``J`` after the slot ``x`` (registers ``valid``, ``codepoint``, ``error``,
        ``last``) with ``flags`` (of the level before ``x`` and of ``x``, :meth:`flags`);
        returns ``(valid, payload)`` of ``J``."""
        m = pipe.m
        before, flags = flags
        h_valid, h_wait, h_last, h_surrogate = (
            pipe.register(f"join_h_{name}") for name in ("valid", "wait", "last", "surrogate"))
        h_cp, h_error = pipe.register("join_h_cp", 21), pipe.register("join_h_error", ErrorKind)
        # H moves on in every step but while it holds a waiting lead and x is a bubble.
        # H is emptied in every step of the flush (`masked`), not only the first: stale items
        # still reach x in its later steps, and a stale waiting lead kept in H would outlive
        # the flush and come out before the next message's first item.
        shift = ~h_wait | x.valid
        consumed = h_wait & flags.trail        # (a trail flag is only set on a valid item)
        loads = [
            (h_valid, keep(shift, x.valid & ~consumed, h_valid) & ~pipe.masked),
            (h_wait, keep(shift, flags.lead, h_wait) & ~pipe.masked),
            (h_last, keep(shift, x.last, h_last)),
            (h_surrogate, keep(shift, flags.surrogate, h_surrogate)),
            (h_cp, keep(shift, x.codepoint, h_cp)),
            (h_error, keep(shift, x.error, h_error)),
        ]
        for reg, value in loads:
            with m.If(pipe.enable(len(Value.cast(reg)))):
                m.d.sync += reg.eq(value)
        # A lead's bits 6..9 plus one, for the pair, loaded with each lead (a lead is valid, so
        # H moves on), each bit one LUT of at most four of x's bits (no carry chain).
        h_high = pipe.register("join_h_high", 5)
        bits = x.codepoint[6:10]
        with m.If(pipe.enable(5) & flags.lead):
            m.d.sync += h_high.eq(Cat(~bits[0], *(bits[k] ^ _all(bits[:k]) for k in (1, 2, 3)),
                                      _all(bits)))
        # Whether J takes the pair: H will hold a waiting lead and x a trail (one flip-flop,
        # from the flags one level before, so that J's bits are one LUT each).
        # (J's registers need no clearing after a reset: the flush hides them until H, which
        # it keeps empty, has reached them.)
        pair = pipe.data("join_pair", before.trail & keep(shift, flags.lead, h_wait))
        alone = keep(h_surrogate, _REPLACEMENT, h_cp) if self._substitute else h_cp
        kind = keep(h_surrogate, self._lone_kind, h_error) if self._lone_kind is not None \
            else h_error
        j_valid = pipe.data("join_j_valid", h_valid & shift)
        j_cp = pipe.data("join_j_cp", keep(pair, Cat(x.codepoint[0:10], h_cp[0:6], h_high),
                                           alone), 21)
        j_error = pipe.data("join_j_error", keep(pair, ErrorKind.NONE, kind), ErrorKind)
        j_last = pipe.data("join_j_last", keep(pair, x.last, h_last))
        return j_valid, Cat(j_cp, j_error, j_last)


def _all(bits):
    """The AND of ``bits`` (1 if there are none)."""
    result = 1
    for bit in bits:
        result = result & bit
    return result
