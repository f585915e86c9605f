"""Streaming UTF-16 encoder: code points in, UTF-16 code units out."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal

from .component import PolicyStage, drive_ready, ready_source
from .error_kind import ErrorKind
from .layouts import CarriedUnitLayout, CodeUnitLayout, UnitLayout
from .pipeline import keep
from .utf8_shift_encoder import EnableCopies, stage_signals, shift_stage


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
    Stages, each loaded under a clock enable that is a flip-flop (as in
    :class:`~utf8_gateware.hdl.utf8_shift_encoder.Utf8ShiftEncoder`)::

        A0  with ``carry_error`` only: the input as it is (each input bit goes to one
            flip-flop and nothing else: after a decoder's output multiplexer in a transcoder,
            the join stays one LUT)
        A1  the code point's low 16 bits, the lead's plane bits, flags of four-bit groups
        A2  the class flags and the first unit of a scalar (BMP unit or lead surrogate)
        A3  the first unit after the error policy, the error kind, ``n2`` (a pair)
        B   the output slot and the trail behind it; K the skid register

    A1..A3 and B's load move together when ``take`` (a flip-flop, and ``i.ready``) is set: low for
    the cycle after B took a surrogate pair (its trail moves up then) and after the sink refused a
    unit. The first code unit of a code point is valid on ``o`` :attr:`LATENCY` = 4 cycles after its
    transfer on ``i`` (5 with ``carry_error``: :meth:`latency`). One code unit per cycle with no
    idle cycle while the source has a code point and the sink is ready: a supplementary code point
    takes two cycles, every other one cycle; a refusal costs one idle cycle more, never a unit. LUT
    depth: one (every register bit is one LUT of at most four flip-flops; ``o`` is a 2:1 multiplexer
    of slot and skid register; nothing depends on ``o.ready`` in the same cycle).
    """

    #: Cycles from the transfer of a code point to its first code unit being valid on ``o``.
    LATENCY = 4

    POLICIES = UTF16_ENCODE_ERRORS

    #: Copies of ``i.ready`` driven, of ``o.ready`` read
    #: (:func:`~utf8_gateware.hdl.component.share_ready`).
    DRIVES_READIES = USES_READIES = True

    @classmethod
    def check_parameters(cls, errors="replace", *, carry_error=False):
        super().check_parameters(errors)
        if not isinstance(carry_error, bool):
            raise TypeError(f"carry_error must be a bool, not {carry_error!r}")

    def __init__(self, errors="replace", *, carry_error=False):
        self._carry_error = carry_error
        self.LATENCY = self.latency(carry_error)
        self.LAYOUTS = (CarriedUnitLayout if carry_error else UnitLayout, CodeUnitLayout)
        super().__init__(errors)

    @staticmethod
    def latency(carry_error=False):
        """:attr:`LATENCY` of an encoder with ``carry_error``, without building one."""
        return Utf16Encoder.LATENCY + carry_error

    @property
    def carry_error(self):
        """Whether the input carries an error kind for the first output unit of its code
        point."""
        return self._carry_error

    def elaborate(self, platform):
        m = Module()
        o = self.o
        b = stage_signals("b", "valid", "n2", "last", "qlast", s=16, q=10, error=3)
        a3_n2 = Signal(name="a3_n2")    # A3 holds a supplementary code point (two units)
        k = stage_signals("k", "valid", "last", unit=16, error=3)
        # `adv` falls for the cycle after the sink refused a valid slot (and rises while the
        # skid register is empty: at the start, the sink may wait for `valid`); `take` is low
        # for the cycle after B took a supplementary code point (its trail goes out next).
        ready = ready_source(self)
        adv = EnableCopies(m, "adv", lambda own: ready() | ~Mux(own, b.valid, k.valid))
        take = EnableCopies(m, "take", lambda own: (ready() | ~b.valid) & ~(own & a3_n2),
                            enable=adv.first)
        drive_ready(m, self, take)
        a1 = shift_stage(take, "a1", self._pieces(self._input(take)))
        a2 = shift_stage(take, "a2", self._flags(a1))
        a3 = shift_stage(take, "a3", self._character(a2), n2=a3_n2)
        t = [take.new() for _ in range(3)]
        adv.load([
            (b.valid, keep(t[0], a3.valid, b.n2)),
            (b.n2, t[0] & a3.n2),
            (b.last, keep(t[0], a3.last & ~a3.n2, b.qlast)),
            (b.qlast, keep(t[0], a3.last, b.qlast)),
            (b.error, t[0].replicate(3) & a3.kind),
            (b.s[:10], keep(t[1], a3.first[:10], b.q)),
            (b.s[10:], keep(t[1], a3.first[10:], Const(0b110111, 6))),   # a trail's top bits
            (b.q, keep(t[2], a3.trail, b.q)),
        ])
        adv.drive([(o.valid, b.valid, k.valid), (o.p.unit, b.s, k.unit),
                   (o.p.error, b.error, k.error), (o.p.last, b.last, k.last)])
        return m

    def _input(self, take):
        """The input beat (``valid``, ``codepoint``, ``last``, ``error``): the port's, or with
        ``carry_error`` A0's registers (the port's beat as it is, loaded when ``take``)."""
        i = self.i
        values = {"valid": i.valid, "codepoint": i.p.codepoint, "last": i.p.last}
        if not self._carry_error:
            return values
        return vars(shift_stage(take, "a0", {**values, "error": i.p.error.as_value()}))

    def _pieces(self, beat):
        """A1, the input code point ``u`` of ``beat``: its low 16 bits, the lead surrogate's
        plane bits, and flags of groups of at most four bits of ``u`` (``u20`` and ``nz19``
        also as complements, ``nu20`` and ``z19``, for half of their loads)."""
        u = beat["codepoint"]
        values = {
            "valid": beat["valid"], "last": beat["last"], "low": u[:16],
            # (u - 0x10000) >> 16, bit by bit (no carry chain)
            "plane": plane_minus_one(u),
            "g31": u[28:32] == 0, "g27": u[24:28] == 0, "z23": u[21:24] == 0, "u20": u[20],
            "nz19": u[16:20] != 0, "hi1101": u[12:16] == 0b1101,
            # complements of `u20` and `nz19` for the upper half of A2's `cand` (each had 19
            # loads; a complement is a function of its own, so synthesis keeps both)
            "nu20": ~u[20], "z19": u[16:20] == 0,
        }
        if self._carry_error:
            values["error"] = beat["error"]
        return values

    def _flags(self, a1):
        """A2, from A1: the class flags (``zhi``: u[31:21] zero; ``big``: u[20:16] above 16;
        ``bmp5``: u[20:16] zero; ``sur``: a surrogate if ``zhi``), the trail's payload and
        ``cand``, the first unit of a scalar (the unit of a BMP one, else the lead
        surrogate); ``zhi``, ``big`` and ``sur`` also as complements (``nzhi``, ``nbig``,
        ``nsur``) for the upper half of A3's ``first``."""
        bmp5, bmp5c = ~a1.u20 & ~a1.nz19, a1.nu20 & a1.z19
        lead = Cat(a1.low[10:16], a1.plane, Const(0b110110, 6))
        values = {
            "valid": a1.valid, "last": a1.last, "trail": a1.low[:10],
            "cand": Cat(keep(bmp5, a1.low[:8], lead[:8]), keep(bmp5c, a1.low[8:], lead[8:])),
            "zhi": a1.g31 & a1.g27 & a1.z23, "big": a1.u20 & a1.nz19, "bmp5": bmp5,
            "sur": bmp5 & a1.hi1101 & a1.low[11],
            # complements of `zhi`, `big` and `sur` for the upper half of A3's `first`
            "nzhi": ~(a1.g31 & a1.g27 & a1.z23), "nbig": a1.nu20 | a1.z19,
            "nsur": ~(bmp5c & a1.hi1101 & a1.low[11]),
        }
        if self._carry_error:
            values["error"] = a1.error
        return values

    def _character(self, a2):
        """A3, from A2: the first unit after the error policy, the error kind, ``n2`` (a
        surrogate pair) and the trail's payload."""
        large = ~a2.zhi | a2.big                                # u >= 0x110000
        sur = a2.sur if self._errors != "surrogatepass" else Const(0)
        bad = large | sur
        bad_c = a2.nzhi | ~a2.nbig | (~a2.nsur if self._errors != "surrogatepass" else 0)
        sub = Const(_REPLACEMENT if self._errors == "replace" else 0, 16)
        carried = a2.error if self._carry_error else Const(ErrorKind.NONE, 3)
        return {
            "valid": a2.valid, "last": a2.last, "trail": a2.trail,
            # U+FFFD, or a marker beat's 0 (strict; a value too large with surrogatepass)
            # (`keep`, not `Mux`: a constant under a condition would become a synchronous
            # set or reset, a LUT in front of 16 set/reset pins)
            # (the upper half from the complements: each flag had 20 loads)
            "first": Cat(keep(bad, sub[:8], a2.cand[:8]), keep(bad_c, sub[8:], a2.cand[8:])),
            "kind": keep(large, Const(ErrorKind.TOO_LARGE, 3),
                         keep(sur, Const(ErrorKind.SURROGATE, 3), carried)),
            "n2": a2.valid & a2.zhi & ~a2.big & ~a2.bmp5,
        }
