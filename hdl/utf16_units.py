"""UTF-16 byte order stage: bytes in, UTF-16 code units out."""

from amaranth.hdl import Cat, Module, Mux, Signal

from .component import StreamStage, drive_ready, ready_source
from .error_kind import ErrorKind
from .layouts import ByteLayout, CodeUnitLayout
from .pipeline import keep
from .utf8_shift_encoder import EnableCopies, stage_signals, shift_stage


__all__ = ["BYTE_ORDERS", "SCHEMES", "UTF16_SCHEMES", "check_byteorder", "ByteOrderStage",
           "Utf16Units"]


#: Byte orders of the UTF-16 byte stages (``int.from_bytes``'s names).
BYTE_ORDERS = ("little", "big")

#: The UTF-16 encoding schemes without a byte order mark, and their byte orders.
SCHEMES = {"utf-16-le": "little", "utf-16-be": "big"}

#: Every UTF-16 encoding scheme: those of :data:`SCHEMES`, and ``utf-16``, whose byte order a
#: byte order mark gives (big-endian without one; written FE FF and big-endian).
UTF16_SCHEMES = (*SCHEMES, "utf-16")


def check_byteorder(byteorder):
    """Raise a one-line :class:`ValueError` unless ``byteorder`` is one of :data:`BYTE_ORDERS`."""
    if byteorder not in BYTE_ORDERS:
        raise ValueError(f"byteorder must be one of {', '.join(map(repr, BYTE_ORDERS))}, "
                         f"not {byteorder!r}")


class ByteOrderStage(StreamStage):
    """Base class of the UTF-16 byte stages (:class:`Utf16Units`,
    :class:`~utf8_gateware.hdl.utf16_bytes.Utf16Bytes`): the ``byteorder`` parameter (one of
    :data:`BYTE_ORDERS`, checked before construction) and stream ports ``i`` and ``o`` whose
    payload layouts the subclass gives in ``LAYOUTS``."""

    @classmethod
    def check_parameters(cls, byteorder="little"):
        check_byteorder(byteorder)

    def __init__(self, byteorder="little"):
        self._byteorder = byteorder
        super().__init__()

    @property
    def byteorder(self):
        """``"little"`` or ``"big"``."""
        return self._byteorder


class Utf16Units(ByteOrderStage):
    """The byte stage of UTF-16LE / UTF-16BE decoding: every two bytes of a message are one code
    unit in ``byteorder`` (The Unicode Standard 3.10, D96/D97); an odd trailing byte is an
    error, as CPython's codecs and the reference model's ``CodeUnits`` stage have it.

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.ByteLayout` stream (``data: 8``, ``last``).
    ``o``: :data:`~utf8_gateware.hdl.layouts.CodeUnitLayout` stream: one code unit per two bytes
    (``error`` ``NONE``, ``last`` with the message's last byte); a message of odd length ends
    with a *marker beat* (``unit`` 0, ``error`` ``TRUNCATED``, ``last``), which
    :class:`~utf8_gateware.hdl.utf16_decoder.Utf16Decoder` turns into U+FFFD (one maximal
    subpart with a lead surrogate just before it).

    Latency and throughput
    ----------------------
    One byte is taken every cycle (``i.ready`` is ``adv``, a flip-flop, low for the cycle after
    the sink refused a unit); a code unit is valid on ``o`` :attr:`LATENCY` = 1 cycle after the
    transfer of its second byte (the output slot; the first byte waits in a register). LUT
    depth: one (every register bit is one LUT of at most four flip-flops: each output bit a
    function of the held byte, the new byte and whether a byte is held; every clock enable is
    a copy of ``adv``; ``o`` is a 2:1 multiplexer of slot and skid register; nothing depends on
    ``o.ready`` in the same cycle but ``adv``).
    """

    #: Cycles from the transfer of a unit's second byte to the unit being valid on ``o``.
    LATENCY = 1

    #: Payload layouts of ``i`` and ``o``.
    LAYOUTS = (ByteLayout, CodeUnitLayout)

    #: Copies of ``i.ready`` driven, of ``o.ready`` read
    #: (:func:`~utf8_gateware.hdl.component.share_ready`).
    DRIVES_READIES = USES_READIES = True

    def elaborate(self, platform):
        m = Module()
        s, k = (stage_signals(stage, "valid", "last", unit=16, error=3) for stage in "sk")
        have = Signal(name="have")              # the first byte of a unit waits in `first`
        first = Signal(8, name="first")
        ready = ready_source(self)
        adv = EnableCopies(m, "adv", lambda own: ready() | ~Mux(own, s.valid, k.valid))
        drive_ready(m, self, adv)
        x = self.i.p
        unit = Cat(first, x.data) if self._byteorder == "little" else Cat(x.data, first)
        adv.load([
            (have, keep(self.i.valid, ~have & ~x.last, have)),
            (first, keep(have, first, x.data)),
            *unit_slot(s, self.i.valid, have, unit, x.last),
        ])
        drive_units(self.o, adv, s, k)
        return m


def unit_slot(s, valid, have, unit, last):
    """The loads of the output slot ``s`` of a byte stage: a unit (``have``: a byte was held,
    ``unit`` the held and the new byte) or the marker beat of an odd trailing byte, each bit
    one LUT of at most four bits."""
    return [
        (s.valid, valid & (have | last)),
        (s.unit, unit & have.replicate(16)),
        (s.error, Mux(have, ErrorKind.NONE, ErrorKind.TRUNCATED)),
        (s.last, last),
    ]


def drive_units(o, adv, s, k):
    """The code unit stream ``o`` from the output slot ``s`` and the skid register ``k``."""
    adv.drive([(o.valid, s.valid, k.valid), (o.p.unit, s.unit, k.unit),
               (o.p.error, s.error, k.error), (o.p.last, s.last, k.last)])


def unit_register(copies, stage, port):
    """The first stage of a core whose input is a code unit stream ``port``: its beat as it is
    (``valid``, ``last``, ``unit``, ``error``), loaded when ``copies``
    (:class:`~utf8_gateware.hdl.utf8_shift_encoder.EnableCopies`). Each input bit goes to one
    flip-flop and nothing else, so that after another core's output multiplexer (slot or skid
    register) the join is still one LUT level."""
    return shift_stage(copies, stage, {"valid": port.valid, "last": port.p.last,
                                       "unit": port.p.unit, "error": port.p.error.as_value()})


def slot_controls(m, ready, b_valid, k_valid, two):
    """``adv`` and ``take`` (:class:`~utf8_gateware.hdl.utf8_shift_encoder.EnableCopies`) of a
    core whose output slot B takes a beat of the stage before it, which gives one output, or
    two (``two``, a flip-flop of that stage: the second follows from B's own register), as in
    :class:`~utf8_gateware.hdl.utf16_encoder.Utf16Encoder`. ``adv`` falls for the cycle after
    the sink on ``o`` refused a valid slot (and rises while the skid register, whose ``valid``
    is ``k_valid``, is empty: the sink may wait for ``valid``); ``take`` (the stages' clock
    enable, and ``i.ready``) is low for that cycle too, and for the cycle after B took a beat
    of two outputs. ``ready``: a function that gives the signal to read as ``o.ready``
    (:func:`~utf8_gateware.hdl.component.ready_source`)."""
    adv = EnableCopies(m, "adv", lambda own: ready() | ~Mux(own, b_valid, k_valid))
    take = EnableCopies(m, "take", lambda own: (ready() | ~b_valid) & ~(own & two),
                        enable=adv.first)
    return adv, take
