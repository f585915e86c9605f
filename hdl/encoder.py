"""Streaming UTF-8 encoders: UTF-32 code units in, bytes of the UTF-8 family out.

:class:`Utf8Encoder` is the public core: for every encoding but ``utf-8-rfc2279`` (a core of its
own, :class:`~utf8_gateware.hdl.rfc2279_encoder.Rfc2279Encoder`) it is
:class:`~utf8_gateware.hdl.utf8_shift_encoder.Utf8ShiftEncoder` (one LUT level between
flip-flops; the mark of ``utf-8-sig`` and the surrogate pairs of ``cesu-8`` and ``mutf-8`` are
states of its stages; ``wtf-8``'s pairs are written by
:func:`~utf8_gateware.hdl.wtf8_pair_stages.pair_stages`, two stages between A2 and A3).
"""

from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from utf8_gateware.sim.encodings import ENCODE_POLICIES, check as check_encoding
from .component import CheckedComponent, in_a_row
from .error_kind import ENCODE_ERRORS, check_policy
from .layouts import CarriedUnitLayout, EncodedByteLayout, UnitLayout
from .rfc2279_encoder import Rfc2279Encoder
from .utf8_shift_encoder import Utf8ShiftEncoder
from .wtf8_pair_stages import PAIR_LATENCY


__all__ = ["ENCODE_ERRORS", "ENCODER_ENCODINGS", "CarriedUnitLayout", "Utf8Encoder"]

#: The encodings :class:`Utf8Encoder` writes with a core of their own instead of the shift
#: encoder: ``{encoding: class}``.
OWN_CORES = {"utf-8-rfc2279": Rfc2279Encoder}

#: The encodings :class:`Utf8Encoder` offers in gateware (UTF-16 is
#: :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder` and
#: :class:`~utf8_gateware.hdl.utf16_bytes.Utf16Bytes`).
ENCODER_ENCODINGS = ("utf-8", "utf-8-sig", "cesu-8", "mutf-8", "wtf-8", *OWN_CORES)


class Utf8Encoder(CheckedComponent):
    """Streaming UTF-8 encoder (and the rest of the UTF-8 family).

    Accepts a stream of UTF-32 code units (any 32-bit value) and produces their encoding as a
    stream of bytes, one byte per cycle. The output equals the reference model,
    :func:`utf8_gateware.sim.encodings.encode` with the same ``encoding`` and ``errors``, for
    every input (each message: the units up to one with ``last``).

    Parameters
    ----------
    errors : str
        What to do with an invalid unit (see below): one of the policies that the reference
        model offers for ``encoding`` (``ENCODE_POLICIES``); any other pair is a one-line
        :class:`ValueError` before construction.
    encoding : str
        One of :data:`ENCODER_ENCODINGS` (see *Encodings*).
    carry_error : bool
        If set, the input payload has an extra ``error`` field
        (:data:`CarriedUnitLayout`) which is reported on the first output beat of its unit
        (unless the unit is itself invalid). :class:`~utf8_gateware.hdl.sanitizer.Utf8Sanitizer`
        uses it to pass the decoder's errors on. With every encoding; a mark or the trail
        half of a pair carries none, a joined pair its lead's.

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.UnitLayout` stream (``codepoint: 32``, ``last``).
    ``o``: :data:`~utf8_gateware.hdl.layouts.EncodedByteLayout` stream (``data: 8``,
    ``error: ErrorKind``, ``last``). ``error`` is ``SURROGATE`` or ``TOO_LARGE`` on the *first*
    beat produced for an invalid unit and ``NONE`` on every other beat. ``last`` is set on the
    final beat produced for a unit with ``last``: exactly one ``last`` beat per message.

    Error policy
    ------------
    ``"replace"``
        A surrogate U+D800..U+DFFF (``SURROGATE``) or a value of 0x110000 or more
        (``TOO_LARGE``) becomes EF BF BD (U+FFFD); the error is flagged on the EF beat.
    ``"strict"``
        An invalid unit produces no bytes but one *marker beat*: ``error`` set, ``data`` 0. The
        marker beat is not an output byte (consumers drop it); it makes the error visible and
        carries ``last`` if the invalid unit ends its message.
    ``"surrogateescape"``
        U+DC80..U+DCFF become the single raw byte 0x80..0xFF (not an error: the inverse of the
        decoder's escapes); every other invalid unit as with ``"replace"``.
    ``"surrogatepass"``
        A surrogate is written as its 3-byte form, not flagged; a value of 0x110000 or more
        gives a marker beat as with ``"strict"``.

    Encodings
    ---------
    ``"utf-8"``
        Table 3-7 of The Unicode Standard.
    ``"utf-8-sig"``
        The first stage takes U+FEFF (EF BB BF) before the first unit of every message
        (three more cycles per message, no other logic in the paths).
    ``"cesu-8"``, ``"mutf-8"``
        A supplementary code point is written as its surrogate pair, two 3-byte halves, six
        bytes back to back; Modified UTF-8 also writes U+0000 as C0 80 and every lone surrogate
        as 3 bytes (a Java ``char``), CESU-8 flags a lone surrogate (``SURROGATE``) as UTF-8
        does.
    ``"wtf-8"``
        The shift encoder writing every surrogate, with
        :func:`~utf8_gateware.hdl.wtf8_pair_stages.pair_stages` (two stages between its A2 and
        A3, one LUT level): a lead surrogate directly followed by a trail surrogate (in one
        message) is written as the pair's 4-byte form (the lead's three bytes, the trail's
        one), a lone surrogate as 3 bytes. (A lead surrogate that is not the last unit of its
        message waits for the next unit.)
    ``"utf-8-rfc2279"``
        :class:`~utf8_gateware.hdl.rfc2279_encoder.Rfc2279Encoder`, a core of its own (values
        to 0x7FFFFFFF in 1 to 6 bytes; 0x80000000 and more ``TOO_LARGE``; ``"replace"`` or
        ``"strict"``; latency 4).

    Every invalid unit is one error on the first beat of its own output (a split or joined pair
    is never one), so error indices are those of the reference model.

    Latency and throughput
    ----------------------
    Every encoding but ``"utf-8-rfc2279"`` is
    :class:`~utf8_gateware.hdl.utf8_shift_encoder.Utf8ShiftEncoder` (``"wtf-8"``: with the pairing
    stages), one LUT level between flip-flops (three unit stages, an output shift register and a
    skid register; see its documentation for the stages and the timing). The first byte of a unit is
    valid on ``o`` :attr:`LATENCY` = 4 cycles after the cycle in which the unit was transferred on
    ``i`` (of the instance: 3 for ``"utf-8-sig"``, to the mark's first byte from the transfer of a
    message's first unit; 6 for ``"wtf-8"``, the pairing stages' 2 added). Once the source stops,
    everything the encoder holds is out after at most :attr:`DRAIN` cycles with the sink ready
    (``"utf-8"``; ``None`` for the other encodings: not proven). An n-byte character takes n cycles
    on ``o`` with no idle cycle between characters while the source has a unit and the sink is
    ready; a new unit is accepted every n cycles (every cycle for ASCII). After the sink refuses a
    byte, the encoder pauses for one cycle (the byte waits in a skid register); nothing is lost,
    duplicated or reordered. ``i.ready`` is one LUT of flip-flops; ``o.valid`` and ``o.payload`` are
    one LUT (a 2:1 multiplexer: the output slot, or the skid register) of flip-flops.
    """

    @classmethod
    def check_parameters(cls, errors="replace", *, encoding="utf-8", carry_error=False):
        if encoding not in ENCODER_ENCODINGS:
            check_encoding(encoding, "replace", "encode")      # an unknown name: its own message
            raise ValueError(f"encoding {encoding!r} is not offered in gateware yet; one of "
                             f"{', '.join(ENCODER_ENCODINGS)}")
        if encoding == "utf-8":
            check_policy(errors, ENCODE_POLICIES[encoding])
        else:
            check_encoding(encoding, errors, "encode")
        if not isinstance(carry_error, bool):
            raise TypeError(f"carry_error must be a bool, not {carry_error!r}")
        if carry_error and encoding in OWN_CORES:
            raise ValueError(f"carry_error is not offered for {encoding} (its core does not "
                             f"carry error kinds)")

    def __init__(self, errors="replace", *, encoding="utf-8", carry_error=False):
        self._errors = errors
        self._encoding = encoding
        self._carry_error = carry_error
        super().__init__({
            "i": In(stream.Signature(CarriedUnitLayout if carry_error else UnitLayout)),
            "o": Out(stream.Signature(EncodedByteLayout)),
        })
        if encoding != "utf-8":
            #: Of this instance: the mark comes first, the pairing stages add theirs.
            self.LATENCY = self.latency(encoding, errors, carry_error=carry_error)
            #: Stated (and proven) for ``"utf-8"`` only.
            self.DRAIN = None

    #: Cycles from the transfer of a unit to its first byte being valid on ``o`` (sink ready).
    LATENCY = Utf8ShiftEncoder.LATENCY

    #: Cycles with the sink ready and no input after which the encoder holds nothing.
    DRAIN = Utf8ShiftEncoder.DRAIN

    @property
    def errors(self):
        """The error policy."""
        return self._errors

    @property
    def encoding(self):
        """The encoding (see :data:`ENCODER_ENCODINGS`)."""
        return self._encoding

    @property
    def carry_error(self):
        """Whether the input carries an error kind for the first output beat of its unit."""
        return self._carry_error

    @staticmethod
    def latency(encoding="utf-8", errors=None, *, carry_error=False):
        """:attr:`LATENCY` of an encoder of ``encoding`` (``errors`` and ``carry_error`` do not
        change it), without building one."""
        if encoding in OWN_CORES:
            return OWN_CORES[encoding].LATENCY
        return Utf8ShiftEncoder.LATENCY + _EXTRA_LATENCY.get(encoding, 0)

    def elaborate(self, platform):
        if self._encoding in OWN_CORES:
            return in_a_row([OWN_CORES[self._encoding](self._errors)], self)
        return in_a_row([Utf8ShiftEncoder(self._errors, encoding=self._encoding,
                                          carry_error=self._carry_error)], self)


#: What each encoding adds to the shift encoder's latency: the pairing stages' (``wtf-8``); the mark
#: (``utf-8-sig``), which the first stage takes the cycle before a message's first unit.
_EXTRA_LATENCY = {
    "utf-8-sig": -1,
    "wtf-8":     PAIR_LATENCY,
}
