"""The surrogate-joining stage of CESU-8 and Modified UTF-8 decoding."""

from types import SimpleNamespace

from amaranth.hdl import Cat, Signal, Value

from .error_kind import ErrorKind
from .lane_marks import surrogate_sequences
from .pipeline import CE_FANOUT, keep


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

    Two stages: ``H`` holds one item; it is loaded in every step but while it holds a waiting
    lead and ``X`` is a bubble (its clock enable: one LUT of three flip-flops, one copy per 15
    flip-flops). ``J``, the output slot, takes ``H``'s item alone, or the pair of ``H``'s lead
    and ``X``'s trail (``X``'s trail is then not loaded into ``H``). ``H`` keeps the item with
    its lone value and kind already chosen, and the lead's bits 0..5 and bits 6..9 plus one,
    which the pair needs: every bit of ``J`` is a 2:1 multiplexer of them selected by two
    flip-flops, one LUT4. Latency: :attr:`LATENCY` = 2 steps after ``X``; throughput: one item
    in every step (a pair leaves a bubble).
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
        byte's ``last``: registers of stage ``E``, then one per slot stage (``slots``)."""
        flags = {"lead": marked.lead & ~last, "trail": marked.trail,
                 "surrogate": marked.lead | marked.trail}
        for stage in range(slots + 1):
            flags = {name: pipe.data(f"join_{stage}_{name}", value)
                     for name, value in flags.items()}
        return SimpleNamespace(**flags)

    def build(self, pipe, x, flags):
        """``H`` and ``J`` after the slot ``x`` (registers ``valid``, ``codepoint``, ``error``,
        ``last``) with its ``flags``; returns ``(valid, payload)`` of ``J``."""
        m = pipe.m
        h_valid, h_wait, h_last = (pipe.register(f"join_h_{name}")
                                   for name in ("valid", "wait", "last"))
        h_cp = pipe.register("join_h_cp", 21)
        h_low, h_high = pipe.register("join_h_low", 6), pipe.register("join_h_high", 5)
        h_error = pipe.register("join_h_error", ErrorKind)
        shift = ~h_wait | x.valid
        consumed = h_wait & flags.trail        # (a trail flag is only set on a valid item)
        lone = flags.surrogate
        loads = [
            (h_valid, x.valid & ~consumed & ~pipe.flushing),
            (h_wait, flags.lead & ~pipe.flushing),
            (h_last, x.last),
            (h_cp, keep(lone, _REPLACEMENT, x.codepoint) if self._substitute
             else x.codepoint),
            (h_low, x.codepoint[0:6]),
            (h_high, x.codepoint[6:10] + 1),
            (h_error, keep(lone, self._lone_kind, x.error) if self._lone_kind is not None
             else x.error),
        ]
        bits = [(Value.cast(reg)[k], Value.cast(value)[k]) for reg, value in loads
                for k in range(len(Value.cast(reg)))]
        for start in range(0, len(bits), CE_FANOUT):
            group = bits[start:start + CE_FANOUT]
            enable = Signal(name=f"join_h_ce{start // CE_FANOUT}")
            m.d.comb += enable.eq(pipe.enable(CE_FANOUT) & (shift | pipe.flushing))
            with m.If(enable):
                m.d.sync += [reg.eq(value) for reg, value in group]

        pair = h_wait & flags.trail
        j_valid = pipe.fact("join_j_valid", h_valid & shift, pipe.flushing)
        j_cp = pipe.data("join_j_cp", keep(pair, Cat(x.codepoint[0:10], h_low, h_high), h_cp),
                         21)
        j_error = pipe.data("join_j_error", keep(pair, ErrorKind.NONE, h_error), ErrorKind)
        j_last = pipe.data("join_j_last", keep(pair, x.last, h_last))
        return j_valid, Cat(j_cp, j_error, j_last)
