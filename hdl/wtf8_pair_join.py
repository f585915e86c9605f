"""The joining stage of the WTF-8 encoder (:class:`Wtf8PairJoiner`): a lead surrogate directly
followed by a trail surrogate becomes the pair's supplementary code point; every other code unit
passes unchanged. (The decoders' joiner, of CESU-8 and Modified UTF-8 bytes, is
:class:`~utf8_gateware.hdl.surrogate_joiner.SurrogateJoiner`.)"""

from amaranth.hdl import Cat, Module, Value
from amaranth.lib import data

from .component import StreamStage
from .error_kind import ErrorKind
from .layouts import CarriedUnitLayout, UnitLayout
from .pipeline import Pipeline, keep


__all__ = ["JoinedUnitLayout", "CarriedJoinedUnitLayout", "Wtf8PairJoiner"]


#: Output layout of :class:`Wtf8PairJoiner`, the input of the WTF-8 shift encoder behind it: a
#: code unit's low 21 bits, ``large`` for a unit with u[31:21] != 0 (so that neither the stage
#: nor the encoder carries the 11 bits that only say "too large"), and ``last``.
JoinedUnitLayout = data.StructLayout({
    "codepoint": 21,
    "large":     1,
    "last":      1,
})

#: :data:`JoinedUnitLayout` with the carried ``error`` of
#: :data:`~utf8_gateware.hdl.layouts.CarriedUnitLayout` (``carry_error``).
CarriedJoinedUnitLayout = data.StructLayout({
    "codepoint": 21,
    "large":     1,
    "error":     ErrorKind,
    "last":      1,
})


class Wtf8PairJoiner(StreamStage):
    """Joins surrogate pairs of code units into supplementary code points (the WTF-8
    specification, "Encoding"; the reference model's ``StreamEncoder`` with ``join_pairs``).

    A unit D800..DBFF that is not the last of its message, directly followed by a unit
    DC00..DFFF, becomes one output: the pair's code point (The Unicode Standard 3.9, D91). Every
    other unit passes unchanged: lone surrogates, values of 0x110000 or more. It has no error
    policy: the encoder after it
    (:class:`~utf8_gateware.hdl.utf8_shift_encoder.Utf8ShiftEncoder` with ``encoding="wtf-8"``)
    writes every surrogate it sees (they are all lone) and reports too large values. The
    boundary lies at code units, not bytes: the encoder needs no look-back (a joined pair is
    its 4-byte class), and :class:`~utf8_gateware.hdl.utf16_decoder.
    Utf16Decoder` is not reused because its units are 16 bits wide and it flags lone
    surrogates; this stage takes any 32-bit value (and passes its low 21 bits and ``large``).

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.UnitLayout` stream (``codepoint: 32``, ``last``).
    ``o``: :data:`JoinedUnitLayout` stream (``codepoint``: the unit's low 21 bits, ``large``:
    u[31:21] != 0); ``last`` on the output that holds a unit with ``last``.
    With ``carry_error``, :data:`~utf8_gateware.hdl.layouts.CarriedUnitLayout` and
    :data:`CarriedJoinedUnitLayout`: each unit's ``error`` passes with it (a pair's is its
    lead's).

    Latency and throughput
    ----------------------
    One unit is taken every cycle (``i.ready`` falls only while the sink stalls); at most one
    output per cycle, with no idle cycle but where a pair gives one output for two units. A unit
    is held in one register until the next unit shows whether it ends a pair; a unit that cannot
    begin one (not a lead surrogate, or the last of its message) goes out at once. The output
    for a unit is valid on ``o`` :attr:`LATENCY` = 3 cycles after its transfer (the input
    register, the held register, the output slot), a pair's 2 cycles after its trail's; a lead
    surrogate that is not the last of its message waits for the next unit. ``i.ready`` is one LUT
    of flip-flops; ``o.valid`` and ``o.payload`` one LUT (output slot or skid register) of
    flip-flops; nothing depends on ``o.ready`` in the same cycle but the pipeline's advance
    flip-flops. LUT depth: two levels (the pair test, then the output multiplexer).
    """

    @classmethod
    def check_parameters(cls, *, carry_error=False):
        if not isinstance(carry_error, bool):
            raise TypeError(f"carry_error must be a bool, not {carry_error!r}")

    def __init__(self, *, carry_error=False):
        self._carry_error = carry_error
        self.LAYOUTS = ((CarriedUnitLayout, CarriedJoinedUnitLayout) if carry_error
                        else (UnitLayout, JoinedUnitLayout))
        super().__init__()

    #: Cycles from the transfer of the unit that completes an output to the output being valid.
    LATENCY = 3

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, flush_steps=3)
        m.d.comb += self.i.ready.eq(pipe.adv & ~pipe.flushing)

        # -- the input register: the unit and its flags -------------------------------------------
        u = self.i.p.codepoint
        surrogate = u[11:32] == 0b11011
        x_valid = pipe.fact("x_valid", self.i.valid, pipe.flushing)
        x_unit  = pipe.data("x_unit", u[:21], 21)
        x_large = pipe.data("x_large", u[21:32] != 0)
        x_last  = pipe.data("x_last", self.i.p.last)
        x_trail = pipe.data("x_trail", surrogate & u[10])
        x_waits = pipe.data("x_waits", surrogate & ~u[10] & ~self.i.p.last)   # may begin a pair
        carried = [("error", ErrorKind)] if self._carry_error else []
        x_carried = [pipe.data(f"x_{name}", self.i.p[name], shape) for name, shape in carried]

        # -- the held unit: shifted in every step, but while a lead waits for the next unit -------
        h_valid, h_wait = pipe.register("h_valid"), pipe.register("h_wait")
        h_unit, h_last = pipe.register("h_unit", 21), pipe.register("h_last")
        h_large = pipe.register("h_large")
        h_carried = [pipe.register(f"h_{name}", shape) for name, shape in carried]
        shift = ~h_wait | x_valid
        pair = h_wait & x_valid & x_trail          # x completes the held lead's pair
        with m.If(pipe.enable(2 + 21 + 1 + 1)):
            m.d.sync += [
                h_valid.eq(keep(shift, x_valid & ~pair, h_valid) & ~pipe.flushing),
                h_wait.eq(keep(shift, x_valid & x_waits & ~pair, h_wait) & ~pipe.flushing),
                h_unit.eq(keep(shift, x_unit, h_unit)),
                h_last.eq(keep(shift, x_last, h_last)),
                h_large.eq(keep(shift, x_large, h_large)),
            ]
        for h, x in zip(h_carried, x_carried):
            with m.If(pipe.enable(len(Value.cast(h)))):
                m.d.sync += h.eq(keep(shift, x, h))

        # -- the output slot: the held unit alone, or joined with x ---------------------------------
        joined = Cat(x_unit[:10], h_unit[:6], h_unit[6:10] + 1)
        s_valid = pipe.fact("s_valid", h_valid & shift, pipe.flushing)
        s_unit  = pipe.data("s_unit", keep(pair, joined, h_unit), 21)
        s_large = pipe.data("s_large", h_large)          # (a lead that pairs is not large)
        s_last  = pipe.data("s_last", keep(pair, x_last, h_last))
        s_carried = [pipe.data(f"s_{name}", h, shape)            # (a pair's: its lead's)
                     for (name, shape), h in zip(carried, h_carried)]
        pipe.drive_output(self.o, s_valid, Cat(s_unit, s_large, *s_carried, s_last))
        return m
