"""UTF-16 byte order stage: bytes in, UTF-16 code units out."""

from amaranth.hdl import Cat, Module, Mux

from .component import StreamStage
from .error_kind import ErrorKind
from .layouts import ByteLayout, CodeUnitLayout
from .pipeline import Pipeline, keep


__all__ = ["BYTE_ORDERS", "SCHEMES", "UTF16_SCHEMES", "check_byteorder", "ByteOrderStage", "Utf16Units"]


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
    One byte is taken every cycle (``i.ready`` falls only while the sink stalls); a code unit is
    valid on ``o`` :attr:`LATENCY` = 1 cycle after the transfer of its second byte (the output
    slot; the first byte waits in a register). ``i.ready`` is one LUT of two flip-flops,
    ``o.valid`` and ``o.payload`` one LUT (output slot or skid register) of flip-flops. LUT
    depth: one level (each output bit is a function of the held byte, the new byte and two
    flags).
    """

    #: Cycles from the transfer of a unit's second byte to the unit being valid on ``o``.
    LATENCY = 1

    #: Payload layouts of ``i`` and ``o``.
    LAYOUTS = (ByteLayout, CodeUnitLayout)

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, flush_steps=1)
        m.d.comb += self.i.ready.eq(pipe.adv & ~pipe.flushing)
        x = self.i.p
        take = self.i.valid & ~pipe.flushing

        # The first byte of a unit, while the second is awaited.
        have = pipe.register("have")
        first = pipe.register("first", 8)
        with m.If(pipe.enable(9)):
            m.d.sync += [
                have.eq(Mux(take, ~have & ~x.last, have) & ~pipe.flushing),
                first.eq(keep(~have, x.data, first)),
            ]

        unit = Cat(first, x.data) if self._byteorder == "little" else Cat(x.data, first)
        s_valid = pipe.fact("s_valid", take & (have | x.last), pipe.flushing)
        s_p = Cat(pipe.data("s_unit", unit & have.replicate(16), 16),
                  pipe.data("s_error", Mux(have, ErrorKind.NONE, ErrorKind.TRUNCATED), 3),
                  pipe.data("s_last", x.last))
        pipe.drive_output(self.o, s_valid, s_p)
        return m
