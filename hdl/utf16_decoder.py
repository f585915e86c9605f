"""Streaming UTF-16 decoder: code units in, code points out (the surrogate-joining stage)."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal

from .component import PolicyStage, drive_ready, ready_source
from .error_kind import ErrorKind
from .layouts import CodeUnitLayout, CodepointLayout
from .pipeline import keep
from .utf16_units import unit_register
from .utf8_shift_encoder import EnableCopies, stage_signals, shift_stage


__all__ = ["UTF16_DECODE_ERRORS", "Utf16Decoder"]


#: Error policies of :class:`Utf16Decoder`.
UTF16_DECODE_ERRORS = ("replace", "surrogatepass")

_REPLACEMENT = 0xFFFD


class Utf16Decoder(PolicyStage):
    """Streaming UTF-16 decoder: code units in, code points out.

    A lead surrogate unit (D800..DBFF) directly followed by a trail surrogate unit (DC00..DFFF)
    of the same message is one supplementary code point; a surrogate unit anywhere else is
    *lone*: an error (``SURROGATE``, one maximal subpart). Every other unit is its own code point.
    The output equals the reference model's ``JoinSurrogates`` stage followed by its error
    policy (``utf8_gateware.sim.encodings.surrogates``, ``reference.render``). (CESU-8 and
    Modified UTF-8 decoding join pairs by the same rule inside the byte decoder's pipeline:
    :class:`~utf8_gateware.hdl.surrogate_joiner.SurrogateJoiner`.)

    Parameters
    ----------
    errors : ``"replace"`` or ``"surrogatepass"``
        A lone surrogate becomes U+FFFD (``"replace"``) or is passed through as its own value
        (``"surrogatepass"``), flagged ``SURROGATE`` either way.
    units : bool
        Code units out instead of code points: a pair as its two units (its kind, ``NONE``, on
        the lead), anything else as above in one unit. The output equals the code points above
        written by :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder` with ``carry_error``,
        without joining and splitting: a transcoder from UTF-16 to UTF-16 is this and the byte
        stages (:class:`~utf8_gateware.hdl.transcoder.Transcoder`). No output is a *marker
        beat* (``unit`` 0 with an error).

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.CodeUnitLayout` stream (``unit: 16``, ``error``,
    ``last``). A beat with ``error`` set stands for an ill-formed piece of the byte stage (an odd
    trailing byte: ``TRUNCATED``): it becomes U+FFFD with its kind; with ``"replace"`` a lead
    surrogate directly before it is part of the same maximal subpart (one U+FFFD, ``TRUNCATED``,
    as CPython). (The reference raises on it with ``"surrogatepass"``; the core reports it.)
    ``o``: :data:`~utf8_gateware.hdl.layouts.CodepointLayout` stream (``codepoint: 21``,
    ``error``, ``last``); ``last`` on the final output of each message. With ``units``:
    :data:`~utf8_gateware.hdl.layouts.CodeUnitLayout` (``unit: 16``, ``error``, ``last``).

    Latency and throughput
    ----------------------
    Stages, all loaded when ``adv`` (a flip-flop, and ``i.ready``; low for the cycle after the
    sink refused an output) is set, each under a clock enable that is a copy of it::

        W  the input unit as it is (each input bit goes to one flip-flop and nothing else:
           after another core's output multiplexer, one LUT level still)
        X  the unit, and pieces of it and its error (functions of four bits)
        Y  the unit's flags (a valid trail, lead or ending beat) and its output alone
        H  the held unit: shifted in every step, but while a lead waits for the next unit
        S  the output slot: H's unit alone, or joined with Y's; K the skid register

    One unit is taken every cycle (``i.ready`` falls only after the sink refused an output); at
    most one code point comes out per cycle, with no idle cycle but where a pair gives one
    output for two units. A unit that cannot begin a pair (not a lead surrogate, or the last of
    its message) goes out at once: the output for a unit is valid on ``o`` at most
    :attr:`LATENCY` = 5 cycles after its transfer, a pair's 4 cycles after its trail's. With
    ``units`` H holds every unit (``lone``: a surrogate that is neither a lead that waits nor
    the trail of one) and S writes H's: one unit out per unit in, every cycle, pairs included
    (a lead goes out once Y has the next unit, 5 cycles after its own transfer at full rate;
    with ``replace`` a lead before a ``TRUNCATED`` beat has no output). LUT depth: one (every
    register bit is one LUT of at most four flip-flops; ``o`` is a 2:1 multiplexer of slot and
    skid register; nothing depends on ``o.ready`` in the same cycle but ``adv``).
    """

    #: Cycles from the transfer of the unit that completes an output to the output being valid.
    LATENCY = 5

    POLICIES = UTF16_DECODE_ERRORS
    LAYOUTS = (CodeUnitLayout, CodepointLayout)

    #: Copies of ``i.ready`` driven, of ``o.ready`` read
    #: (:func:`~utf8_gateware.hdl.component.share_ready`).
    DRIVES_READIES = USES_READIES = True

    @classmethod
    def check_parameters(cls, errors="replace", *, units=False):
        super().check_parameters(errors)
        if not isinstance(units, bool):
            raise TypeError(f"units must be a bool, not {units!r}")

    def __init__(self, errors="replace", *, units=False):
        self._units = units
        if units:
            self.LAYOUTS = (CodeUnitLayout, CodeUnitLayout)
        super().__init__(errors)

    @property
    def units(self):
        """Whether the output is code units (a pair as its two units) instead of code points."""
        return self._units

    def elaborate(self, platform):
        if self._units:
            return self._elaborate_units()
        m = Module()
        o = self.o
        s = stage_signals("s", "valid", "last", cp=21, error=3)
        k = stage_signals("k", "valid", "last", cp=21, error=3)
        # `adv` (a flip-flop, and `i.ready`) falls for the cycle after the sink refused a valid
        # slot; it rises while the skid register is empty (the sink may wait for `valid`).
        ready = ready_source(self)
        adv = EnableCopies(m, "adv", lambda own: ready() | ~Mux(own, s.valid, k.valid))
        drive_ready(m, self, adv)
        w = unit_register(adv, "w", self.i)
        x = shift_stage(adv, "x", self._pieces(w))
        y = shift_stage(adv, "y", self._flags(x))
        h = stage_signals("h", "valid", "wait", "last", alone=16, lead=11, kind=3)
        # H shifts but while it holds a lead that waits and Y is a bubble; Y ends a held lead's
        # output (`y.vends`: a trail, or with replace a TRUNCATED beat) and is consumed.
        shift = ~h.wait | y.valid
        adv.load([
            (h.valid, keep(shift, y.valid & ~(h.wait & y.vends), h.valid)),
            (h.wait, y.vwaits | (h.wait & ~y.valid)),
            *((getattr(h, name), keep(shift, value, getattr(h, name))) for name, value in
              (("last", y.last), ("alone", y.alone), ("lead", Cat(y.lo10[:6], y.plus1)),
               ("kind", y.kind))),
        ])
        # A copy of `h.wait` for S (59 loads on one net were a long route; computed from its
        # own value, so that synthesis keeps both).
        wait = Signal(name="h_wait_s")
        adv.load([(wait, y.vwaits | (wait & ~y.valid))])
        pair = wait & y.vtrail
        merged = wait & y.vends & ~y.vtrail             # a lead and a TRUNCATED beat (replace)
        adv.load([
            (s.valid, h.valid & shift),
            (s.cp, keep(pair, Cat(y.lo10, h.lead), Cat(h.alone, Const(0, 5)))),
            (s.error, keep(pair, Const(ErrorKind.NONE, 3),
                           keep(merged, Const(ErrorKind.TRUNCATED, 3), h.kind))),
            (s.last, keep(wait & y.vends, y.last, h.last)),
        ])
        adv.drive([(o.valid, s.valid, k.valid), (o.p.codepoint, s.cp, k.cp),
                   (o.p.error, s.error, k.error), (o.p.last, s.last, k.last)])
        return m

    @staticmethod
    def _pieces(w):
        """X, from W (the input unit): the unit, and pieces of it and its error, each a
        function of at most four bits (``hi4``: unit[15:12] == 1101; ``bt``, ``bl``: a valid
        beat with unit[11:10] 11 (trail), 10 (lead, not last); ``ok``: no error; ``vtrunc``: a
        valid TRUNCATED beat)."""
        u = w.unit
        return {
            "valid": w.valid, "unit": u, "last": w.last, "error": w.error,
            "hi4": u[12:16] == 0b1101, "bt": w.valid & u[11] & u[10],
            "bl": w.valid & u[11] & ~u[10] & ~w.last,
            "ok": w.error == ErrorKind.NONE,
            "vtrunc": w.valid & (w.error == ErrorKind.TRUNCATED),
        }

    def _elaborate_units(self):
        """``units``: W, X and Y as for code points; H holds every unit (a lead that may join
        waits there for the next one) and S writes it: a surrogate that is part of a pair as it
        is, a lone one as U+FFFD (``replace``) or as it is (``surrogatepass``), flagged
        ``SURROGATE``. With ``replace`` a lead directly before a ``TRUNCATED`` beat is left out
        (that beat's U+FFFD is the one maximal subpart)."""
        m = Module()
        o = self.o
        s, k = (stage_signals(stage, "valid", "last", unit=16, error=3) for stage in "sk")
        ready = ready_source(self)
        adv = EnableCopies(m, "adv", lambda own: ready() | ~Mux(own, s.valid, k.valid))
        drive_ready(m, self, adv)
        w = unit_register(adv, "w", self.i)
        x = shift_stage(adv, "x", {**self._pieces(w),
                                   "blast": w.valid & w.unit[11] & ~w.unit[10] & w.last})
        replace = self._errors == "replace"
        y = shift_stage(adv, "y", {
            "valid": x.valid, "last": x.last, "kind": x.error,
            "vtrail": x.hi4 & x.bt & x.ok, "vwaits": x.hi4 & x.bl & x.ok,
            "llead": x.hi4 & x.blast & x.ok,        # a lead that is its message's last unit
            **({"vtrunc": x.vtrunc} if replace else {}),
            # (`keep`, not `Mux`: a constant under a condition would be a set/reset)
            "alone": keep(~x.ok, Const(_REPLACEMENT, 16), x.unit),
        })
        # H: every unit; it holds while a lead waits and Y is a bubble. `lone`: a surrogate that
        # is not a waiting lead nor the trail of one (while H holds, Y is a bubble: 0, as held).
        h = stage_signals("h", "valid", "wait", "last", "lone", alone=16, kind=3)
        shift = ~h.wait | y.valid
        adv.load([
            (h.valid, keep(shift, y.valid, h.valid)),
            (h.wait, y.vwaits | (h.wait & ~y.valid)),
            (h.lone, y.llead | (y.vtrail & ~h.wait)),
            *((getattr(h, name), keep(shift, getattr(y, name), getattr(h, name)))
              for name in ("last", "alone", "kind")),
        ])
        wait = Signal(name="h_wait_s")          # a copy of `h.wait` for S
        adv.load([(wait, y.vwaits | (wait & ~y.valid))])
        # H's unit goes out once Y has the next (a waiting lead) or at once; a waiting lead is
        # lone unless Y is a trail; with replace one before a TRUNCATED beat is left out.
        sub = Mux(wait, ~y.vtrail, h.lone)
        goes = y.valid & ~y.vtrunc if replace else y.valid
        adv.load([
            (s.valid, h.valid & (~wait | goes)),
            (s.unit, keep(sub, Const(_REPLACEMENT, 16), h.alone) if replace else h.alone),
            (s.error, keep(sub, Const(ErrorKind.SURROGATE, 3), h.kind)),
            (s.last, h.last),
        ])
        adv.drive([(o.valid, s.valid, k.valid), (o.p.unit, s.unit, k.unit),
                   (o.p.error, s.error, k.error), (o.p.last, s.last, k.last)])
        return m

    def _flags(self, x):
        """Y, from X: ``vtrail`` (a valid trail surrogate), ``vends`` (it ends a held lead's
        output: a trail, or with replace a TRUNCATED beat), ``vwaits`` (a lead that may join),
        the unit's output alone (``alone``, ``kind``), its low ten bits and ``plus1`` (unit[9:6]
        + 1: a lead's plane)."""
        replace = self._errors == "replace"
        surrogate = x.ok & x.hi4 & x.unit[11]
        vtrail = x.hi4 & x.bt & x.ok
        sub = ~x.ok | ((x.hi4 & x.unit[11]) if replace else 0)    # alone: U+FFFD
        return {
            "valid": x.valid, "last": x.last, "vtrail": vtrail,
            "vends": vtrail | (x.vtrunc if replace else 0),
            "vwaits": x.hi4 & x.bl & x.ok,
            # (`keep`, not `Mux`: a constant under a condition would be a set/reset)
            "alone": keep(sub, Const(_REPLACEMENT, 16), x.unit),
            "kind": keep(surrogate, Const(ErrorKind.SURROGATE, 3), x.error),
            # unit[9:6] + 1 bit by bit (no carry chain)
            "lo10": x.unit[:10], "plus1": Cat(*(x.unit[6 + n] ^ x.unit[6:6 + n].all()
                                                for n in range(4)), x.unit[6:10].all()),
        }
