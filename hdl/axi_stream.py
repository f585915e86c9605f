"""AXI4-Stream ports for a core: the wiring behind ``utf8-gateware export``.

:class:`AxiStreamAdapter` wraps a core with one input and one output
:class:`amaranth.lib.stream` port and gives it the port names and bit layout of AXI4-Stream
(ARM IHI 0051), so that the exported Verilog can be instantiated like any AXI4-Stream IP. The
core itself stays an Amaranth component with struct payloads; the adapter only renames and
re-packs bits.

The payload fields map by name (:func:`axis_map`):

==============================  ==============================================================
core payload field              AXI4-Stream
==============================  ==============================================================
``data`` (8 x k bits)           ``tdata`` (lane 0, the first byte, in bits 7..0)
``codepoint``                   ``tdata``: 32 bits per code point, zero-extended
``unit`` (a UTF-16 code unit)   ``tdata``: 16 bits, the unit's value (bits 7..0 its low byte)
``error`` (``ErrorKind``)       ``tuser``: 3 bits, the :class:`ErrorKind` value
``last``                        ``tlast``
``count`` (with ``data``)       ``tkeep``: one bit per byte lane; ``count`` is the number of
                                bytes (``tkeep`` must be contiguous from bit 0 and non-zero)
``lanes`` (array of structs     per lane: its ``codepoint``/``data`` in the lane's ``tdata``
of ``codepoint``/``data``,      slot, its ``error`` in the lane's ``tuser`` slot, its
``error``, ``valid``)           ``valid`` on every ``tkeep`` bit of the lane's slot
a verdict (``valid``,           ``tdata``: ``offset`` then ``errors``, each in whole bytes;
``offset``, ``error``,          ``tuser``: ``error`` (3 bits) then ``valid`` (bit 3); one beat,
``errors``: the validator's)    with ``tlast``, per message
==============================  ==============================================================
"""

from dataclasses import dataclass

from amaranth.hdl import Cat, ClockDomain, Const, Module, Shape, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .component import CheckedComponent
from .error_kind import ErrorKind


__all__ = ["CODEPOINT_BITS", "UNIT_BITS", "VERDICT_FIELDS", "AxisMap", "axis_map", "field_width",
           "stream_ports", "AxiStreamAdapter"]


#: Width of a code point on ``tdata`` (a UTF-32 code unit).
CODEPOINT_BITS = 32
#: Width of a UTF-16 code unit on ``tdata``.
UNIT_BITS = 16


def _bytes_of(width):
    return -(-width // 8) * 8


@dataclass(frozen=True)
class AxisMap:
    """Where the fields of a stream payload go on an AXI4-Stream interface.

    Each entry of ``tdata`` / ``tuser`` / ``tkeep`` is ``(path, width)``: the payload field at
    ``path`` (a tuple of field names and lane indices) and the bits it takes, in order from bit
    0 (``path`` ``None``: constant zero padding). ``tlast``: the path of ``last``. ``count``: the
    path of a byte count that ``tkeep`` (one bit per byte) stands for, or ``None``. ``lanes``:
    how many items a beat carries (1 without ``tkeep``). ``verdict``: the payload is a
    validator's verdict (:func:`~.validator.verdict_layout`), not items.
    """
    tdata: tuple
    tuser: tuple
    tkeep: tuple
    tlast: tuple
    count: tuple = None
    lanes: int = 1
    verdict: bool = False

    def width(self, name):
        """Width of the ``tdata``, ``tuser`` or ``tkeep`` port (0 if there is none)."""
        if name == "tkeep" and self.count is not None:
            return sum(width for _, width in self.tdata) // 8
        return sum(width for _, width in getattr(self, name))


def _item_fields(layout, prefix, lanes_of=None):
    """``(tdata, tuser, valid)`` entries of one item (a struct of ``data``/``codepoint``,
    ``error`` and, in a lane, ``valid``)."""
    tdata, tuser, valid = [], [], None
    for name, field in layout:
        shape = field.shape
        path = (*prefix, name)
        if name == "codepoint":
            if Shape.cast(shape).width > CODEPOINT_BITS:
                raise ValueError(f"field {'.'.join(map(str, path))} is wider than "
                                 f"{CODEPOINT_BITS} bits")
            tdata.append((path, CODEPOINT_BITS))
        elif name == "data":
            tdata.append((path, _bytes_of(Shape.cast(shape).width)))
        elif name == "unit":
            if Shape.cast(shape).width != UNIT_BITS:
                raise ValueError(f"field {'.'.join(map(str, path))} is not a {UNIT_BITS}-bit "
                                 f"code unit")
            tdata.append((path, UNIT_BITS))
        elif name == "error":
            if shape is not ErrorKind:
                raise ValueError(f"field {'.'.join(map(str, path))} is not an ErrorKind")
            tuser.append((path, Shape.cast(ErrorKind).width))
        elif name == "valid" and lanes_of is not None:
            valid = path
        elif name in ("last", "count", "lanes") and lanes_of is None:
            continue
        else:
            raise ValueError(f"payload field {'.'.join(map(str, path))} has no AXI4-Stream "
                             f"counterpart")
    if len(tdata) != 1:
        raise ValueError(f"a payload item needs exactly one 'data', 'codepoint' or 'unit' "
                         f"field, not {len(tdata)}")
    return tdata, tuser, valid


#: The fields of a validator's verdict (:func:`~.validator.verdict_layout`).
VERDICT_FIELDS = ("valid", "offset", "error", "errors", "last")


def _verdict_map(fields):
    """The :class:`AxisMap` of a verdict: ``offset`` and ``errors`` on ``tdata`` (whole bytes
    each, in that order), ``error`` and ``valid`` on ``tuser``."""
    if sorted(fields) != sorted(VERDICT_FIELDS) or fields["error"].shape is not ErrorKind:
        raise ValueError(f"a verdict payload has the fields {', '.join(VERDICT_FIELDS)} (error "
                         f"an ErrorKind), not {', '.join(fields)}")
    tdata = tuple(((name,), _bytes_of(Shape.cast(fields[name].shape).width))
                  for name in ("offset", "errors"))
    tuser = ((("error",), Shape.cast(ErrorKind).width), (("valid",), 1))
    return AxisMap(tdata, tuser, (), ("last",), verdict=True)


def axis_map(layout):
    """The :class:`AxisMap` of a stream payload ``layout`` (a
    :class:`~amaranth.lib.data.StructLayout`; see the module docstring for the fields it may
    have). Raises :class:`ValueError` for a field with no AXI4-Stream counterpart."""
    if not isinstance(layout, data.StructLayout):
        raise TypeError(f"a stream payload must be a StructLayout, not {layout!r}")
    fields = dict(layout)
    if "last" not in fields or Shape.cast(fields["last"].shape).width != 1:
        raise ValueError("a stream payload needs a 1-bit 'last' field")
    if "lanes" in fields:
        lanes = fields["lanes"].shape
        if not (isinstance(lanes, data.ArrayLayout) and
                isinstance(lanes.elem_shape, data.StructLayout)):
            raise ValueError("field 'lanes' must be an array of structs")
        tdata, tuser, tkeep = [], [], []
        for index in range(lanes.length):
            item_data, item_user, valid = _item_fields(lanes.elem_shape, ("lanes", index), True)
            if valid is None:
                raise ValueError("a lane of 'lanes' needs a 'valid' field")
            tdata += item_data
            tuser += item_user
            tkeep += [(valid, 1)] * (item_data[0][1] // 8)
        if "data" in fields or "codepoint" in fields:
            raise ValueError("a payload has either 'lanes' or a 'data'/'codepoint' field")
        return AxisMap(tuple(tdata), tuple(tuser), tuple(tkeep), ("last",), lanes=lanes.length)
    if "offset" in fields or "errors" in fields:
        return _verdict_map(fields)
    tdata, tuser, _ = _item_fields(layout, ())
    if "count" in fields:
        (path, width), = tdata
        if path != ("data",):
            raise ValueError("a 'count' field counts the bytes of a 'data' field")
        return AxisMap(tuple(tdata), tuple(tuser), (), ("last",), count=("count",),
                       lanes=width // 8)
    return AxisMap(tuple(tdata), tuple(tuser), (), ("last",))


def stream_ports(core):
    """``(input name, output name)``: the core's one input and one output stream port.
    Raises :class:`TypeError` unless ``core`` is a component with exactly one of each."""
    if not isinstance(core, wiring.Component):
        raise TypeError(f"core must be a wiring.Component, not {core!r}")
    ports = {In: [], Out: []}
    for name, member in core.signature.members.items():
        if member.is_signature and isinstance(member.signature, stream.Signature):
            ports[member.flow].append(name)
    if len(ports[In]) != 1 or len(ports[Out]) != 1:
        raise TypeError(f"core must have one input and one output stream port, not "
                        f"{ports[In]} and {ports[Out]}")
    return ports[In][0], ports[Out][0]


def _field(payload, path):
    for key in path:
        payload = payload[key]
    return payload


def field_width(layout, path):
    """The width of the field at ``path`` (as in :class:`AxisMap`) of the payload ``layout``."""
    for key in path:
        layout = layout.elem_shape if isinstance(key, int) else layout[key].shape
    return Shape.cast(layout).width


def _padded(value, width):
    """``value`` (a field of a payload) zero-extended to ``width`` bits."""
    value = Value.cast(value)
    return value if len(value) == width else Cat(value, Const(0, width - len(value)))


class AxiStreamAdapter(CheckedComponent):
    """A core with AXI4-Stream ports (see the module docstring for the bit layout).

    Parameters
    ----------
    core : :class:`~amaranth.lib.wiring.Component`
        A core with one input and one output :class:`~amaranth.lib.stream.Signature` port
        whose payload fields :func:`axis_map` can place. The adapter makes it a submodule.

    Ports
    -----
    ``aclk``, ``aresetn``: the clock and the active-low synchronous reset of the core's
    ``sync`` domain (``aresetn`` low at a rising edge of ``aclk`` resets the core).

    ``s_axis_tdata``, ``s_axis_tvalid``, ``s_axis_tready``, ``s_axis_tlast`` (and
    ``s_axis_tkeep`` for a byte count, ``s_axis_tuser`` for an input ``error``): the core's
    input stream. ``m_axis_tdata``, ``m_axis_tvalid``, ``m_axis_tready``, ``m_axis_tlast``,
    ``m_axis_tuser`` (if the output has ``error`` fields), ``m_axis_tkeep`` (for lanes): its
    output stream. ``tvalid``/``tready`` are the streams' ``valid``/``ready``; the core keeps
    the stream rules, which are AXI4-Stream's (a transfer on ``tvalid & tready``; once
    ``tvalid`` is high, it and the payload hold until the transfer; ``tvalid`` never depends
    on ``tready``).

    Logic
    -----
    Wiring only, plus the inverter of ``aresetn`` and, for a byte count, the conversion of the
    contiguous ``tkeep`` into the count (a function of ``tkeep`` alone). Nothing is registered:
    the core's latency, throughput and timing are the adapter's.
    """

    @classmethod
    def check_parameters(cls, core):
        i_name, o_name = stream_ports(core)
        for name in (i_name, o_name):
            axis_map(getattr(core, name).p.shape())

    def __init__(self, core):
        self._core = core
        self._i_name, self._o_name = stream_ports(core)
        self.s_layout = getattr(core, self._i_name).p.shape()
        self.m_layout = getattr(core, self._o_name).p.shape()
        self.s_map = axis_map(self.s_layout)
        self.m_map = axis_map(self.m_layout)
        members = {"aclk": In(1), "aresetn": In(1)}
        for prefix, amap, flow in (("s_axis", self.s_map, In), ("m_axis", self.m_map, Out)):
            back = Out if flow is In else In
            members[f"{prefix}_tdata"] = flow(amap.width("tdata"))
            if amap.width("tkeep"):
                members[f"{prefix}_tkeep"] = flow(amap.width("tkeep"))
            members[f"{prefix}_tvalid"] = flow(1)
            members[f"{prefix}_tready"] = back(1)
            members[f"{prefix}_tlast"] = flow(1)
            if amap.width("tuser"):
                members[f"{prefix}_tuser"] = flow(amap.width("tuser"))
        super().__init__(members)

    @property
    def core(self):
        """The wrapped core."""
        return self._core

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = sync = ClockDomain("sync")
        m.d.comb += [
            sync.clk.eq(self.aclk),
            sync.rst.eq(~self.aresetn),
        ]
        m.submodules.core = self._core
        i = getattr(self._core, self._i_name)
        o = getattr(self._core, self._o_name)

        # Input: AXI4-Stream -> the core's payload.
        m.d.comb += [
            i.valid.eq(self.s_axis_tvalid),
            self.s_axis_tready.eq(i.ready),
            _field(i.p, self.s_map.tlast).eq(self.s_axis_tlast),
        ]
        for port, entries in (("tdata", self.s_map.tdata), ("tuser", self.s_map.tuser)):
            offset = 0
            for path, width in entries:
                m.d.comb += Value.cast(_field(i.p, path)).eq(
                    getattr(self, f"s_axis_{port}")[offset:offset + width])
                offset += width
        if self.s_map.count is not None:
            # tkeep is a thermometer code (bits 0..count-1 set): the count is the index of the
            # highest set bit plus one.
            count = _field(i.p, self.s_map.count)
            for lane, bit in enumerate(self.s_axis_tkeep):
                with m.If(bit):
                    m.d.comb += count.eq(lane + 1)

        # Output: the core's payload -> AXI4-Stream (zero-extended fields).
        m.d.comb += [
            self.m_axis_tvalid.eq(o.valid),
            o.ready.eq(self.m_axis_tready),
            self.m_axis_tlast.eq(_field(o.p, self.m_map.tlast)),
        ]
        for port, entries in (("tdata", self.m_map.tdata), ("tuser", self.m_map.tuser),
                              ("tkeep", self.m_map.tkeep)):
            if entries:
                m.d.comb += getattr(self, f"m_axis_{port}").eq(
                    Cat(*(_padded(_field(o.p, path), width) for path, width in entries)))
        return m
