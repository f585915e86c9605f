"""Streaming encoder of original UTF-8 (RFC 2279): 32-bit values in, their 1 to 6 bytes out."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from utf8_gateware.sim.encodings import ENCODE_POLICIES
from utf8_gateware.sim.encodings.rfc2279 import RFC2279_LENGTH_LIMITS
from .component import CheckedComponent
from .decoder_lane import kind_of
from .error_kind import ErrorKind, check_policy
from .layouts import EncodedByteLayout, UnitLayout
from .pipeline import Pipeline, any_of, lut


__all__ = ["RFC2279_ENCODE_ERRORS", "Rfc2279Encoder"]


#: The error policies of :class:`Rfc2279Encoder` (the reference model's).
RFC2279_ENCODE_ERRORS = ENCODE_POLICIES["utf-8-rfc2279"]

#: The bit at which each length's values end: a value below 2**bit takes n bytes (n = 1..6).
_BOUNDS = tuple(limit.bit_length() - 1 for limit in RFC2279_LENGTH_LIMITS)
_LENGTHS = len(_BOUNDS)

#: The value's fields between length bounds: ``(low bit, high bit + 1)``; the last is bit 31.
_FIELDS = tuple(zip(_BOUNDS, (*_BOUNDS[1:], 32)))


def _lead(length, value_bits):
    """The lead byte of a ``length``-byte form, as a list of 8 bits (ints or Values):
    ``length`` - 1 ones (none for one byte), a zero, then the value's top bits."""
    payload = 7 if length == 1 else 7 - length
    ones = 0 if length == 1 else length
    bits = [value_bits[6 * (length - 1) + bit] for bit in range(payload)]
    return bits + [0] + [1] * ones if length > 1 else bits + [0]


class Rfc2279Encoder(CheckedComponent):
    """Streaming encoder of RFC 2279's UTF-8. ``Utf8Encoder(encoding="utf-8-rfc2279")`` is this
    core.

    Accepts 32-bit code units (the model's input: UTF-32 of any value) and writes each value
    below 0x80000000 as its shortest form of 1 to 6 bytes, surrogates included. The output
    equals ``utf8_gateware.sim.encodings.encode(units, "utf-8-rfc2279", errors)``.

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.UnitLayout` stream (``codepoint: 32``, ``last``).
    ``o``: :data:`~utf8_gateware.hdl.layouts.EncodedByteLayout` stream (``data: 8``,
    ``error``, ``last``): ``error`` on the first beat of an invalid unit, ``last`` on the final
    beat of a unit with ``last``.

    Error policy
    ------------
    A value of 0x80000000 or more (bit 31 set) is ``TOO_LARGE``. ``"replace"``: EF BF BD, the
    error on the EF beat. ``"strict"``: one *marker beat* (``data`` 0, ``error`` set) that is
    not an output byte.

    Latency and throughput
    ----------------------
    The first byte of a unit is valid on ``o`` :attr:`LATENCY` = 4 cycles after the unit's
    transfer (input register, length register, byte register, output slot) when the byte
    register is free. An n-byte form takes n cycles on ``o`` with no idle cycle between units:
    one byte per cycle whenever input is available and the sink is ready. ``i.ready`` is one
    LUT of flip-flops; after the sink refuses a byte the pipeline pauses for one cycle (the
    byte waits in the skid register).

    Structure
    ---------
    Elastic stages, each loading when it is empty or the stage after it loads, so a gap in the
    input never costs an output cycle later:

    ``R``
        The unit and six zero flags: bits 7..10, 11..15, 16..20, 21..25, 26..30 and 31 (the
        value's fields between length bounds).
    ``L``
        The value's bits 0..30 and its length, one-hot (``n1``..``n6``, or too large), each
        an AND of the zero flags.
    ``B``
        The byte register: the lead byte (an AND-OR of the one-hot length and the value's
        bits), the five continuation payloads, the error and a one-hot count of the bytes
        left. It takes the next unit when its current byte is its last.
    ``O``
        The output slot (the lead byte, or 10 and the payload the count picks) and its skid
        register (:meth:`~utf8_gateware.hdl.pipeline.Pipeline.drive_output`).

    LUT depth: two levels between flip-flops.
    """

    #: Cycles from the transfer of a unit to its first byte being valid (byte register free).
    LATENCY = 4

    @classmethod
    def check_parameters(cls, errors="replace"):
        check_policy(errors, RFC2279_ENCODE_ERRORS)

    def __init__(self, errors="replace"):
        self._errors = errors
        super().__init__({
            "i": In(stream.Signature(UnitLayout)),
            "o": Out(stream.Signature(EncodedByteLayout)),
        })

    @property
    def errors(self):
        return self._errors

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, flush_steps=1)
        r, el, b = _Stage("r"), _Stage("l"), _Stage("b")
        b.rem = Signal(_LENGTHS, name="b_rem", init=1)     # one-hot: bytes left (bit 0: one)
        b_takes = (lambda adv: adv & b.rem[0])
        l_loads = (lambda adv: ~el.valid | b_takes(adv))
        r_loads = (lambda adv: ~r.valid | l_loads(adv))
        m.d.comb += self.i.ready.eq(r_loads(pipe.adv))
        self._stage_r(pipe, r, r_loads)
        self._stage_l(pipe, r, el, l_loads)
        self._stage_b(pipe, el, b, b_takes)
        self._stage_o(pipe, b)
        return m

    def _stage_r(self, pipe, r, loads):
        u = self.i.p.codepoint
        r.zero = [Signal(name=f"r_z{lo}") for lo, _ in _FIELDS]
        r.u = Signal(31, name="r_u")
        pipe.load([(r.valid, self.i.valid), (r.last, self.i.p.last), (r.u, u[:31]),
                   *((zero, u[lo:hi] == 0) for zero, (lo, hi) in zip(r.zero, _FIELDS))], loads)

    def _stage_l(self, pipe, r, el, loads):
        # An n-byte form: the fields from its bound up are zero, the one below it is not.
        el.n = [Signal(name=f"l_n{n}") for n in range(1, _LENGTHS + 1)]
        el.large = Signal(name="l_large")
        el.u = Signal(31, name="l_u")
        pipe.load([(el.valid, r.valid), (el.last, r.last), (el.u, r.u),
                   (el.large, ~r.zero[-1]),
                   *((flag, _all(r.zero[n - 1:]) & (~r.zero[n - 2] if n > 1 else 1))
                     for n, flag in enumerate(el.n, start=1))], loads)

    def _stage_b(self, pipe, el, b, takes):
        marker = self._errors == "strict"
        error_lead = [0] * 8 if marker else [(0xEF >> bit) & 1 for bit in range(8)]
        u = [el.u[bit] for bit in range(31)]
        leads = [(flag, _lead(n, u)) for n, flag in enumerate(el.n, start=1)]
        leads.append((el.large, error_lead))
        lead = Cat(*(any_of(flag & bits[bit] if not isinstance(bits[bit], int)
                            else (flag if bits[bit] else 0) for flag, bits in leads)
                     for bit in range(8)))
        b.lead = Signal(8, name="b_lead")
        b.cont = [Signal(6, name=f"b_c{j}") for j in range(_LENGTHS - 1)]
        b.error = Signal(ErrorKind, name="b_error")
        conts = []
        for j, reg in enumerate(b.cont):
            value = el.u[6 * j:6 * j + 6]
            if not marker and j < 2:           # EF BF BD: payloads 3F, 3D
                value = Mux(el.large, (0x3F, 0x3D)[1 - j], value)
            conts.append((reg, value))
        pipe.load([(b.valid, el.valid), (b.last, el.last), (b.lead, lead), *conts,
                   (b.error, kind_of((el.large, ErrorKind.TOO_LARGE)))], takes)
        # The count of bytes left: the unit's length when it is taken, else one less.
        lengths = [~el.valid | el.n[0] | (el.large if marker else 0), *el.n[1:]]
        if not marker:
            lengths[2] = lengths[2] | el.large
        b.first = Signal(name="b_first")
        pipe.load([(b.rem, Mux(b.rem[0], Cat(*lengths), b.rem >> 1)), (b.first, b.rem[0])],
                  lambda adv: adv)

    def _stage_o(self, pipe, b):
        m = pipe.m
        low = []
        for bit in range(6):
            # The payload of the current continuation byte: c[j] with rem[j] (j + 1 bytes left).
            near = lut(m, f"o_d{bit}_a", Mux(b.first, b.lead[bit], b.rem[0] & b.cont[0][bit]))
            mid = lut(m, f"o_d{bit}_b", (b.rem[1] & b.cont[1][bit]) | (b.rem[2] & b.cont[2][bit]))
            far = lut(m, f"o_d{bit}_c", (b.rem[3] & b.cont[3][bit]) | (b.rem[4] & b.cont[4][bit]))
            low.append(Mux(b.first, near, near | mid | far))
        out = Signal(EncodedByteLayout)
        m.d.comb += [
            out.data.eq(pipe.data("o_data", Cat(*low, Mux(b.first, b.lead[6:8], 0b10)), 8)),
            out.error.eq(pipe.data("o_error", Mux(b.first, b.error, ErrorKind.NONE),
                                   ErrorKind)),
            out.last.eq(pipe.data("o_last", b.last & b.rem[0])),
        ]
        pipe.drive_output(self.o, pipe.data("o_v", b.valid), out)


class _Stage:
    """The registers of one elastic stage: ``valid`` (0 at reset: empty), ``last``, and what
    the stage's builder adds."""
    def __init__(self, name):
        self.valid = Signal(name=f"{name}_valid")
        self.last = Signal(name=f"{name}_last")


def _all(flags):
    """The AND of ``flags``."""
    return ~any_of(~flag for flag in flags)
