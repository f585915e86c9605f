"""Moving the valid lanes of each beat down to lanes 0..count-1."""

from amaranth.hdl import Module, Shape, Signal
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from .component import CheckedComponent
from .pipeline import any_of


__all__ = ["LanePacker", "packed_beat_layout", "sparse_beat_layout"]


def sparse_beat_layout(lane, lanes):
    """Input beat of the packer: ``lanes`` items of the ``lane`` layout (each with a ``valid``
    field; a beat may have empty lanes anywhere), and ``last``."""
    return data.StructLayout({"lanes": data.ArrayLayout(lane, lanes), "last": 1})


def packed_beat_layout(lane, lanes):
    """Output beat of the packer: the valid items in lanes 0..count-1 (their ``valid`` set, the
    other lanes' clear), ``count`` and ``last``."""
    return data.StructLayout({"lanes": data.ArrayLayout(lane, lanes),
                              "count": range(lanes + 1), "last": 1})


class LanePacker(CheckedComponent):
    """Packs the valid lanes of each beat into lanes ``0..count-1``, in order, for consumers that
    write items to memory (a multi-lane decoder's code points, for example: ``LanePacker(
    CodepointLaneLayout, lanes=N)`` after ``Utf8Decoder(lanes=N)``).

    Parameters
    ----------
    lane : :class:`amaranth.lib.data.Layout`
        The layout of one lane's item; it must be a struct with a 1-bit ``valid`` field. The
        other fields are carried through unchanged.
    lanes : int
        Lanes per beat, 1 to 64.

    Ports
    -----
    i : ``In(stream.Signature(sparse_beat_layout(lane, lanes)))``
        ``lanes`` items, any of them valid, and ``last``.
    o : ``Out(stream.Signature(packed_beat_layout(lane, lanes)))``
        The same items in the same order (lane order, then beat order), the valid ones in lanes
        ``0..count-1``; ``last`` as on the input.

    A beat with no valid lane and without ``last`` is dropped; one with ``last`` is kept (with
    ``count`` 0), so that a message's end is never lost.

    Latency and throughput
    ----------------------
    Two register stages: a beat is on ``o`` 2 cycles after its transfer if the sink is ready.
    One beat every cycle while the sink is ready; ``i.ready`` is ``~o.valid | o.ready``.

    Structure
    ---------
    Stage 1 registers the beat and each lane's destination, the number of valid lanes before it
    (a prefix count). Stage 2 forms output lane ``j`` as the OR of the input lanes ``i >= j``
    whose destination is ``j`` (at most one is): no priority chain, a ``lanes - j`` input
    AND-OR per bit.
    """

    @classmethod
    def check_parameters(cls, lane, *, lanes):
        if not isinstance(lane, data.StructLayout):
            raise TypeError(f"lane must be a data.StructLayout, not {lane!r}")
        if "valid" not in lane.members or Shape.cast(lane.members["valid"]).width != 1:
            raise ValueError("lane must have a 1-bit 'valid' field")
        if not isinstance(lanes, int) or isinstance(lanes, bool):
            raise TypeError(f"lanes must be an integer, not {lanes!r}")
        if not 1 <= lanes <= 64:
            raise ValueError(f"lanes must be 1 to 64, not {lanes!r}")

    def __init__(self, lane, *, lanes):
        self._lane, self._lanes = lane, lanes
        super().__init__({
            "i": In(stream.Signature(sparse_beat_layout(lane, lanes))),
            "o": Out(stream.Signature(packed_beat_layout(lane, lanes))),
        })

    #: Cycles from an input transfer to the beat on ``o`` (sink ready).
    LATENCY = 2

    @property
    def lanes(self):
        return self._lanes

    def elaborate(self, platform):
        m = Module()
        n = self._lanes
        adv = ~self.o.valid | self.o.ready
        m.d.comb += self.i.ready.eq(adv)

        # Stage 1: the beat and each lane's destination.
        beat = Signal(sparse_beat_layout(self._lane, n))
        beat_valid = Signal()
        dest = [Signal(range(n), name=f"dest{k}") for k in range(n)]
        count = Signal(range(n + 1))
        with m.If(adv):
            m.d.sync += [beat.eq(self.i.payload), beat_valid.eq(self.i.valid)]
            running = 0
            for k in range(n):
                m.d.sync += dest[k].eq(running)
                running = running + self.i.payload.lanes[k].valid
            m.d.sync += count.eq(running)

        # Stage 2: output lane j from the input lane that goes there.
        with m.If(adv):
            m.d.sync += [
                self.o.valid.eq(beat_valid & ((count != 0) | beat.last)),
                self.o.payload.count.eq(count),
                self.o.payload.last.eq(beat.last),
            ]
            width = self._lane.size
            for j in range(n):
                hits = [(beat.lanes[k].valid & (dest[k] == j)) for k in range(j, n)]
                m.d.sync += self.o.payload.lanes[j].as_value().eq(any_of(
                    beat.lanes[k].as_value() & hit.replicate(width)
                    for k, hit in zip(range(j, n), hits)))
        return m
