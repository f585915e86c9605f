"""Streaming UTF-16 encoder: code points in, UTF-16 code units out."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal

from .component import PolicyStage
from .error_kind import ErrorKind
from .layouts import CarriedUnitLayout, CodeUnitLayout, UnitLayout
from .pipeline import Pipeline, keep


__all__ = ["UTF16_ENCODE_ERRORS", "Utf16Encoder", "plane_minus_one"]


#: Error policies of :class:`Utf16Encoder` (those of the reference model's ``utf-16`` encoders).
UTF16_ENCODE_ERRORS = ("replace", "strict", "surrogatepass")

#: The code unit of U+FFFD.
_REPLACEMENT = 0xFFFD


def plane_minus_one(u):
    """``(u - 0x10000) >> 16`` (4 bits) for a supplementary code point ``u``, written bit by bit
    (no carry chain): the plane bits of its lead surrogate's payload."""
    return Cat(*(u[16 + k] ^ (u[16:16 + k] == 0) for k in range(4)))


class Utf16Encoder(PolicyStage):
    """Streaming UTF-16 encoder: one code point (any 32-bit value) in, its UTF-16 code units out.

    The output equals the reference model's UTF-16 encoder (``utf_gateware.sim.encodings.utf16``,
    ``encode_unit``) read as code units: a value below 0x10000 is one code unit, a supplementary
    code point (0x10000..0x10FFFF) its surrogate pair, lead first (The Unicode Standard 3.9, D91).

    Parameters
    ----------
    errors : ``"replace"``, ``"strict"`` or ``"surrogatepass"``
        ``"replace"``: a surrogate code point U+D800..U+DFFF (``SURROGATE``) or a value of
        0x110000 or more (``TOO_LARGE``) becomes U+FFFD, flagged. ``"strict"``: an invalid value
        produces one *marker beat* (``unit`` 0, ``error`` set) instead of a code unit, as
        :class:`~utf8_gateware.hdl.encoder.Utf8Encoder` does. ``"surrogatepass"``: a surrogate
        code point is written as its own code unit, not flagged (potentially ill-formed UTF-16);
        a value of 0x110000 or more gives a marker beat.
    carry_error : bool
        If set, the input payload has an ``error`` field
        (:data:`~utf8_gateware.hdl.layouts.CarriedUnitLayout`), reported on the first code unit
        of its code point unless the code point is itself invalid (as
        :class:`~utf8_gateware.hdl.encoder.Utf8Encoder` does; a transcoder passes a decoder's
        errors on with it).

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.UnitLayout` stream (``codepoint: 32``, ``last``;
    and ``error`` with ``carry_error``).
    ``o``: :data:`~utf8_gateware.hdl.layouts.CodeUnitLayout` stream (``unit: 16``,
    ``error: ErrorKind``, ``last``): ``last`` on the final beat of a unit with ``last``.

    Latency and throughput
    ----------------------
    The first code unit of a code point is valid on ``o`` :attr:`LATENCY` = 2 cycles after its
    transfer on ``i`` (the unit register, then the output slot). One code unit per cycle with no
    idle cycle: a supplementary code point takes two cycles (its trail waits in a register while
    the next code point moves up), every other one cycle. ``i.ready`` is one LUT of flip-flops;
    ``o.valid`` and ``o.payload`` one LUT (output slot or skid register) of flip-flops; nothing
    depends on ``o.ready`` in the same cycle but the pipeline's advance flip-flops
    (:class:`~utf8_gateware.hdl.pipeline.Pipeline`). LUT depth: two levels (the unit register's
    classification flags, and its clock enable) where the UTF-8 encoder has one.
    """

    #: Cycles from the transfer of a code point to its first code unit being valid on ``o``.
    LATENCY = 2

    POLICIES = UTF16_ENCODE_ERRORS

    @classmethod
    def check_parameters(cls, errors="replace", *, carry_error=False):
        super().check_parameters(errors)
        if not isinstance(carry_error, bool):
            raise TypeError(f"carry_error must be a bool, not {carry_error!r}")

    def __init__(self, errors="replace", *, carry_error=False):
        self._carry_error = carry_error
        self.LAYOUTS = (CarriedUnitLayout if carry_error else UnitLayout, CodeUnitLayout)
        super().__init__(errors)

    @property
    def carry_error(self):
        """Whether the input carries an error kind for the first output unit of its code
        point."""
        return self._carry_error

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, flush_steps=2)
        u = self.i.p.codepoint

        # The slot holds a lead surrogate whose trail goes out next: the unit register waits.
        pending = Signal()
        take = ~pending & ~pipe.flushing
        m.d.comb += self.i.ready.eq(pipe.adv & take)

        # -- the unit register: the code point's low 16 bits and its class --------------------
        def unit_register(name, value, shape=1):
            # `keep` in the LUT rather than `take` in the clock enable: the enable stays a
            # flip-flop (a LUT in front of an enable costs a second route).
            return pipe.held(f"a_{name}", value, take, shape)

        a_valid = pipe.register("a_valid")
        with m.If(pipe.enable()):
            m.d.sync += a_valid.eq(keep(take, self.i.valid, a_valid) & ~pipe.flushing)
        a_last  = unit_register("last", self.i.p.last)
        a_low   = unit_register("low", u[:16], 16)
        # The lead surrogate's payload: (u - 0x10000) >> 10, four bits of plane (u[20:16] - 1,
        # written bit by bit: no carry chain) and six.
        a_plane = unit_register("plane", plane_minus_one(u), 4)
        # Flags of groups of at most four bits (one LUT each), combined below.
        a_g31   = unit_register("g31", u[28:32] == 0)
        a_g27   = unit_register("g27", u[24:28] == 0)
        a_z23   = unit_register("z23", u[21:24] == 0)                 # u[23:21] == 0
        a_g23   = unit_register("g23", u[20:24] == 0)                 # u[23:20] == 0
        a_nz19  = unit_register("nz19", u[16:20] != 0)
        a_hi1101 = unit_register("hi1101", u[12:16] == 0b1101)
        a_bmp   = a_g31 & a_g27 & a_g23 & ~a_nz19                     # u < 0x10000
        u20     = ~a_g23 & a_z23                                      # with u[23:21] == 0
        a_large = ~(a_g31 & a_g27 & a_z23) | (u20 & a_nz19)           # u >= 0x110000
        a_sur   = a_bmp & a_hi1101 & a_low[11]                        # U+D800..U+DFFF

        # -- the output slot ------------------------------------------------------------------------
        invalid = a_large | (a_sur if self._errors != "surrogatepass" else 0)
        supp = a_valid & ~a_bmp & ~a_large
        carried = unit_register("error", self.i.p.error.as_value(), 3) if self._carry_error else \
            ErrorKind.NONE
        kind = Mux(a_large, ErrorKind.TOO_LARGE,
                   Mux(a_sur & (self._errors != "surrogatepass"), ErrorKind.SURROGATE, carried))
        marker = 0 if self._errors == "replace" else \
            a_large | (a_sur if self._errors == "strict" else 0)
        first = Mux(invalid, Mux(marker, 0, _REPLACEMENT),
                    Mux(a_bmp, a_low, Cat(a_low[10:16], a_plane, Const(0b110110, 6))))

        trail = pipe.register("trail", 10)
        trail_last = pipe.register("trail_last")
        with m.If(pipe.enable(11) & ~pending):
            m.d.sync += [trail.eq(a_low[:10]), trail_last.eq(a_last)]
        with m.If(pipe.enable()):
            m.d.sync += pending.eq(~pending & supp & ~pipe.flushing)

        s_valid = pipe.fact("s_valid", pending | a_valid, pipe.flushing)
        s_unit  = pipe.data("s_unit", Mux(pending, Cat(trail, Const(0b110111, 6)), first), 16)
        s_error = pipe.data("s_error", Mux(pending, ErrorKind.NONE, kind), 3)
        s_last  = pipe.data("s_last", Mux(pending, trail_last, a_last & ~supp))
        pipe.drive_output(self.o, s_valid, Cat(s_unit, s_error, s_last))
        return m
