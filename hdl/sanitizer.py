"""Streaming UTF-8 sanitiser: bytes in, well-formed UTF-8 (or the same bytes) out."""

from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Signal, Value

from .component import PolicyStage, ready_source
from .decoder_lane import stage_a, stage_align, stage_b, stage_c
from .error_kind import DECODE_ERRORS, ErrorKind
from .layouts import ByteLayout, EncodedByteLayout
from .pipeline import Pipeline, keep
from .validator import stage_errors, stage_own
from .validator_lanes import BURST_KINDS, decode

#: Steps after a reset in which the stale contents drain unseen, by policy: from the input to
#: the line's output slot (A, B, C, V1, V1b, M1, M2, three slots and the output slot), with
#: ``replace`` also the slot ``X`` and its BF and BD. (No more: the input is taken from the
#: second step on, and its first byte must not be hidden.)
FLUSH_STEPS = {"surrogateescape": 10, "replace": 12}

#: The most flip-flops one copy of the front's enable drives (at one copy per 15, replace
#: 111.2/112.5/105.6 MHz, surrogateescape 147.8/151.9/147.8; at 40, 116.7/121.3/116.7 and
#: 162.7/162.7/177.7; one copy, 121.3/111.0/135.5 and 160.7/151.2/163.4).
SANITIZER_CE_FANOUT = 40


__all__ = ["SANITIZE_ERRORS", "Utf8Sanitizer"]


#: Error policies of :class:`Utf8Sanitizer`: the decoder's.
SANITIZE_ERRORS = DECODE_ERRORS


class Utf8Sanitizer(PolicyStage):
    """Streaming UTF-8 sanitiser, at the level of bytes: no code point is ever formed.

    ``errors="replace"``
        The output is the input made well-formed: every maximal subpart of an ill-formed
        sequence becomes EF BF BD (U+FFFD), everything else passes unchanged. The output equals
        ``data.decode("utf-8", "replace").encode("utf-8")``.
    ``errors="surrogateescape"``
        The output bytes are exactly the input bytes; the core only marks where the input is
        ill-formed (as the decoder's escapes U+DC80..U+DCFF, encoded back, would).

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.ByteLayout` stream (``data: 8``, ``last``).
    ``o``: :data:`~utf8_gateware.hdl.layouts.EncodedByteLayout` stream (``data: 8``,
    ``error: ErrorKind``, ``last``). ``error`` is the
    :class:`~utf8_gateware.hdl.error_kind.ErrorKind` of an ill-formed subpart (the decoder's
    and the reference model's): with ``"replace"`` on the EF of its EF BF BD, with
    ``"surrogateescape"`` on every byte of the subpart. Every other byte has ``error``
    ``NONE``. ``last`` is set on the final byte of each message (with ``"replace"`` on the BD of
    a subpart that ends it): every message of at least one byte yields at least one byte with
    ``last``.

    How
    ---
    The decoder's lane stages ``A`` .. ``C`` and the validator's ``V1`` and ``V1b``
    (:func:`~utf8_gateware.hdl.validator.stage_errors`,
    :func:`~utf8_gateware.hdl.validator.stage_own`, one lane) say for each byte which maximal
    subparts end at it and how far back they begin:
    the pending prefix before it (``burst``, 1..3 bytes back, its kind) and the byte's own
    error (an error byte, a continuation no lead covers, or a prefix that ``last`` cuts, which
    begins 0..2 bytes back). ``M1`` and ``M2`` turn that into marks per distance (0..3 bytes
    back): the byte is ill-formed (with its subpart's kind), it begins a subpart, the message
    ends there. The bytes then go through a line of three slots (the bytes 1..3 back), each
    slot ORing in the marks of the byte in ``M2`` for its distance, and an output slot: a byte
    is final three bytes later, when it leaves the line, or as soon as no pending prefix holds
    it. The line moves with every byte; in a step without one each slot moves unless it holds a
    byte of the pending prefix (``pending1`` .. ``pending3``: the prefix's length, so its bytes
    are always the line's latest, slots 1 up to its length), and the slot after such a slot
    takes a bubble. So the bytes before a pending prefix (which no later byte can mark) drain in
    a gap of the input, and a message's end drains out with no byte behind it. With
    ``"surrogateescape"`` the output slot goes to ``o`` through the pipeline's skid register
    (:meth:`~utf8_gateware.hdl.pipeline.Pipeline.drive_output`). With ``"replace"`` a subpart's
    later bytes leave the line as bubbles, and a last slot ``X`` takes the line's byte, or EF
    for a subpart's first byte and then BF and BD in two steps in which everything before it
    waits (its enable ``fadv`` is a flip-flop computed a cycle ahead: ``o.ready`` and no BF or
    BD to come; it is computed in the cycle after the sink refused a beat too, so a refusal
    costs no idle output cycle, unless ``X`` took BF or BD then or was empty).

    Why bytes: a decoder's code points joined to a squeezing encoder capped the sanitiser near
    127 MHz (docs/cores.md, "Sanitizer": stops 25 and 26 tried every join) and cost 449 LCs
    (replace); here every register is one LUT of flip-flops, and nothing forms a code point.

    Latency and throughput
    ----------------------
    A byte's first output byte is on ``o`` :attr:`LATENCY` cycles after its transfer (11 with
    ``"surrogateescape"``, 12 with ``"replace"``; the sink ready), unless the byte belongs to a
    prefix that is pending in a gap of the input: such bytes wait for the byte that decides
    them, or for ``last``; the bytes before them do not (until stop 28 the whole line waited,
    so a message's end waited for the next message's second byte when that began with a lead).
    ``"surrogateescape"``: one byte per cycle on any input, no
    stall at all. ``"replace"``: well-formed text at one byte per cycle whatever its characters'
    lengths; each U+FFFD takes three output cycles and holds the input for two (worst case,
    one-byte subparts: a third of an input byte per cycle).

    Ready and LUT depth
    -------------------
    ``i.ready`` is one LUT of two flip-flops (the front's enable and the flush flag). ``o.valid``
    and ``o.payload`` are one LUT of flip-flops (slot or skid register); ``o.valid`` never
    depends on ``o.ready``, which only the enables' next states read. Every register bit is one
    LUT of at most four flip-flops, or a flip-flop; no clock enable, synchronous set or reset
    is a LUT (a flip-flop that starts at 1, ``masked``, is one only through an inverting LUT:
    the front's enables are set by a copy a cycle later that starts at 0). With ``X`` and the
    skid register empty the front moves without ``o.ready`` (a cycle after an idle one), so a
    sink may wait for ``o.valid`` before it raises ``o.ready``.
    """

    POLICIES = SANITIZE_ERRORS
    LAYOUTS = (ByteLayout, EncodedByteLayout)

    #: With ``"replace"`` the enables read copies of ``o.ready`` where the next stage drives
    #: them (:func:`~utf8_gateware.hdl.component.share_ready`: the CESU-8 expander).
    USES_READIES = True

    @staticmethod
    def latency(errors):
        """:attr:`LATENCY` of a sanitiser with ``errors``, without building one."""
        return 11 if errors == "surrogateescape" else 12

    @property
    def LATENCY(self):
        """Cycles from a byte's transfer to its first output byte on ``o`` (see above)."""
        return self.latency(self._errors)

    def elaborate(self, platform):
        m = Module()
        escape = self._errors == "surrogateescape"
        pipe = Pipeline(m, flush_steps=FLUSH_STEPS[self._errors], ce_fanout=SANITIZER_CE_FANOUT)
        m.d.comb += self.i.ready.eq(pipe.adv & ~pipe.flushing)

        # A .. C (the decoder's lane stages), V1 and V1b (the validator's): per byte where the
        # maximal subparts that end at it begin. The byte itself rides along.
        aligned, data = stage_align(pipe, self.i.payload, self.i.valid, 1)
        c = stage_c(pipe, stage_b(pipe, stage_a(pipe, aligned, data)), False)
        u = stage_own(pipe, stage_errors(pipe, c))
        byte = data[0]
        for name in ["a", "b", "c", "v", "u"]:
            byte = pipe.data(f"{name}_byte", byte, 8)
        # The length of the prefix pending after the byte: at least 1, 2, 3.
        lane = c.lanes[0]
        pnd = [pipe.data(f"u_pnd{k}", pipe.data(f"v_pnd{k}", value))
               for k, value in enumerate([lane.pend0 | lane.sc, lane.anyc, lane.sc], start=1)]
        m1 = _stage_reach(pipe, u.lanes[0], u.beat_vl, byte, pnd)
        m2, sh = _stage_marks(pipe, m1, escape)
        out = _line(m, pipe, m2, sh, escape)

        if escape:
            payload = Signal(EncodedByteLayout)
            m.d.comb += [payload.data.eq(out.data), payload.last.eq(out.lastn),
                         payload.error.eq(out.kind)]
            pipe.drive_output(self.o, out.v, payload)
            return m
        _expand(m, pipe, out, self.o, ready_source(self))
        return m


def _at_least(back, k):
    """``back >= k`` (a 2-bit ``back``, ``k`` 0..3) as logic, not a comparison (which synthesis
    would make a carry chain)."""
    return [1, back[0] | back[1], back[1], back[0] & back[1]][k]


def _stage_reach(pipe, lane, vl, byte, pnd):
    """Stage ``M1``: for each distance ``k`` (0: the byte itself, 1..3 bytes back) whether a
    maximal subpart that ends at the byte in ``V1b`` covers it (``bb``: the burst before the
    byte, ``ob``: the byte's own error) and begins there (``bf``, ``of``); the kinds; ``vl``
    (the byte ends its message)."""
    r = SimpleNamespace(bb=[0], bf=[0], ob=[], of=[])
    beat_vl, vl = vl, vl & lane.byte
    r.vl = pipe.data("m1_vl", vl)
    for k in range(4):
        if k:
            r.bf.append(pipe.data(f"m1_bf{k}", lane.burst & (lane.bback == k)))
            # (At 3 the same register: two of one LUT keep it from its flip-flop.)
            r.bb.append(r.bf[k] if k == 3 else
                        pipe.data(f"m1_bb{k}", lane.burst & _at_least(lane.bback, k)))
        if k < 3:
            r.ob.append(pipe.data(f"m1_ob{k}", lane.own & _at_least(lane.oback, k)))
            r.of.append(pipe.data(f"m1_of{k}", lane.own & (lane.oback == k)))
        else:
            r.ob.append(0)
            r.of.append(0)
    r.bkind = pipe.data("m1_bkind", decode(lane.bcode, BURST_KINDS), ErrorKind)
    r.okind = pipe.data("m1_okind", lane.okind, ErrorKind)
    r.byte = pipe.data("m1_byte", lane.byte)
    r.data = pipe.data("m1_data", byte, 8)
    # `keep[j]`: after the beat the line's pending prefix is of at least j + 1 bytes: after a
    # byte, if the byte's is; after a bubble, if it was before and the bubble does not end the
    # message. (`beat_vl`, not `vl`: a bubble that ends a message, the flush's, clears it too.)
    r.keep = [pipe.data(f"m1_keep{k}", ~beat_vl & (~lane.byte | value))
              for k, value in enumerate(pnd, start=1)]
    return r


def _stage_marks(pipe, r, escape):
    """Stage ``M2``: per distance ``k`` the marks ``bad``, ``first``, ``lastf``/``lastn`` (the
    message ends with the subpart that begins there / at the byte) and the kind (zero where not
    ``bad``); ``sh``: the line moves in the step that takes ``M2``."""
    marks = []
    # Where the message's end goes: on the byte itself, unless it ends a cut prefix; with
    # replace then on the prefix's first byte (k = 1, 2).
    if escape:
        lasts = [r.vl, 0, 0, 0]
    else:
        lasts = [r.vl & ~r.ob[1], r.vl & r.of[1], r.vl & r.of[2], 0]
    for k in range(4):
        bad = r.bb[k] | r.ob[k]
        first = r.bf[k] | r.of[k]
        kind = Value.cast(r.bkind) & Value.cast(r.bb[k]).replicate(3) | \
            Value.cast(r.okind) & Value.cast(r.ob[k]).replicate(3)
        marks.append(SimpleNamespace(
            bad=pipe.data(f"m2_bad{k}", bad), first=pipe.data(f"m2_first{k}", first),
            later=pipe.data(f"m2_later{k}", bad & ~first),
            kind=pipe.data(f"m2_kind{k}", kind, 3),
            lastf=pipe.data(f"m2_lastf{k}", lasts[k] & first) if not escape else 0,
            lastn=pipe.data(f"m2_lastn{k}", lasts[k] & (1 if escape else ~first))))
    byte = pipe.data("m2_byte", r.byte)
    data = pipe.data("m2_data", r.data, 8)
    # `pending[j]`: slot j + 1 holds a byte of the prefix pending after the line's latest byte
    # (the prefix's bytes are always the latest of the line, slots 1 .. its length). Slot j + 1
    # moves (`sh[j]`) with every byte, and in a bubble unless it holds such a byte: so the bytes
    # before a pending prefix drain in a gap, and those of the prefix wait for the byte that
    # decides them (or the message's end).
    sh = []
    for k, keep_ in enumerate(r.keep, start=1):
        pending = Signal(name=f"pending{k}")
        after = pipe.data(f"m2_keep{k}", keep_) & (byte | pending)
        with pipe.m.If(pipe.enable(2)):
            pipe.m.d.sync += pending.eq(after)
        sh.append(pipe.data(f"m2_sh{k}", r.byte | ~after))
    return SimpleNamespace(marks=marks, byte=byte, data=data), sh


def _line(m, pipe, m2, sh, escape):
    """The line: slots 1..3 hold the bytes 1..3 back from ``M2``'s (with the marks so far); slot
    4 is the line's output, slot 3 with the marks of ``M2``'s byte."""
    fields = [("v", 1), ("vf", 1), ("data", 8), ("bad", 1), ("first", 1), ("later", 1), ("kind", 3),
              ("lastf", 1), ("lastn", 1)]
    slots = [SimpleNamespace(v=m2.byte, vf=0, data=m2.data, bad=0, first=0, later=0, kind=0,
                             lastf=0, lastn=0)]
    for k in range(1, 5):
        src, mark = slots[-1], m2.marks[k - 1]
        # (The output slot takes slot 3's byte when slot 3 moves; a slot takes a bubble when the
        # slot before it holds.)
        move = sh[min(k, 3) - 1]
        dst = SimpleNamespace(**{name: Signal(width, name=f"l{k}_{name}") for name, width in
                                 fields})
        new = {name: getattr(src, name) | getattr(mark, name, 0) for name, _ in fields
               if name not in ("v", "vf", "data")}
        new["data"] = src.data
        if k == 4:
            new["v"] = move & src.v if escape else move & src.v & ~(src.later | mark.later)
            new["vf"] = move & src.v & (src.first | mark.first)
        else:
            new["v"] = src.v & sh[k - 2] if k > 1 else src.v
            new["vf"] = 0
        for name, width in fields:
            reg = getattr(dst, name)
            with m.If(pipe.enable(width)):
                if k == 4 and name in ("v", "vf"):
                    m.d.sync += reg.eq(new[name])
                else:
                    m.d.sync += reg.eq(keep(move, new[name], reg))
        slots.append(dst)
    return slots[-1]


def _choose(cond, new, old):
    """``cond ? new : old`` as ANDs and ORs (a multiplexer with a constant input would become a
    LUT-driven synchronous set or reset)."""
    return (cond & new) | (~cond & old)


def _expand(m, pipe, out, o, ready):
    """``replace``: the output slot ``X`` after the line takes the line's byte, or EF for a
    subpart's first byte and then BF and BD in the next two steps, in which the stages before it
    (the *front*) wait; ``K``, the skid register, keeps the slot's beat that the sink refused.

    ``adv`` (in copies, flip-flops) moves ``X`` and ``K``: low for the cycle after one in which
    the sink refused a beat (as :meth:`~utf8_gateware.hdl.pipeline.Pipeline.drive_output`). The
    front moves when ``fadv`` (in copies, the front's enables): ``o.ready`` in the cycle before,
    and no BF or BD to come (``e2``: BF next; one step ahead, ``fadv & vf``: the front's output
    is a subpart's first byte and ``X`` takes it now), and set while the front's stale contents
    drain and a cycle after an idle one. The copies of ``fadv`` load under their own enables
    ``fce`` (flip-flops: low only in a cycle after the sink refused a beat while ``X`` was to
    take BF or BD, or while ``X`` and ``K`` were both waiting on an empty ``X``), so they also
    load in the cycle in which ``K`` holds the refused beat: the front then moves in the step
    after it, and a refusal costs no idle output cycle unless ``X`` took BF or BD in it or was
    empty (until stop 29 the copies loaded only when ``adv``, so every run of refusals cost
    one: 6 output bytes in 7 cycles for a supplementary character into CESU-8). So the front
    waits two steps per U+FFFD, and ``X`` takes a bubble in a step after the sink refused a
    beat into an empty slot. ``ready()``:
    the signal to read as ``o.ready`` (a copy, in turn:
    :func:`~utf8_gateware.hdl.component.ready_source`)."""
    e2, e1, c, s2, s1 = (Signal(name=name) for name in ("e2", "e1", "c", "s2", "s1"))
    x = SimpleNamespace(v=Signal(name="x_v"), data=Signal(8, name="x_data"),
                        error=Signal(ErrorKind, name="x_error"), last=Signal(name="x_last"))
    skid = SimpleNamespace(data=Signal(8, name="k_data"), error=Signal(ErrorKind, name="k_error"),
                           last=Signal(name="k_last"))
    masked = pipe.masked

    def adv_copy(k):
        reg = Signal(name=f"adv{k}")
        m.d.sync += reg.eq(ready() | (reg & ~x.v) | masked)
        return reg

    # The fronts' set: `masked` a cycle later, 0 in the first cycle (`masked` starts at 1, which
    # an iCE40 flip-flop cannot: synthesis keeps it inverted, with a LUT after it that was a long
    # route into the fronts' sets); so `flush_set` is `flush[-2]` but starting at 0 (it follows
    # from the first step; `flush[-2]` itself would reach the set through an inverting LUT).
    # Also set one cycle after an idle one (no `fadv`, no `o.ready`, not set, `X` empty): `X`
    # and the skid register are then empty, or `fce` is low (the skid register waits), so the
    # front may move as if `o.ready` (stream rule 3: `o.valid` must not wait for `o.ready`).
    fronts = (pipe.adv, *pipe._copies)
    adv = adv_copy(0)
    front_set, flush_set = Signal(name="front_set"), Signal(name="flush_set")
    with m.If(pipe.adv):
        m.d.sync += flush_set.eq(pipe.flush[-3])
    with m.If(flush_set):
        m.d.sync += front_set.eq(1)
    with m.Else():
        m.d.sync += front_set.eq(~fronts[-1] & ~ready() & ~front_set & ~x.v)
    for k, reg in enumerate(fronts):
        # `fce`: low after the sink refused a beat while `X` was to take BF or BD (`c`: the
        # front is low and must stay so), or refused the skid register's beat with `X` empty
        # (there `front_set` may fire, and `adv` will not). Each of its own copy: one LUT.
        fce = Signal(name=f"fce{k}")
        m.d.sync += fce.eq(ready() | ~(c | (~adv & ~x.v)))
        with m.If(fce):
            with m.If(front_set):
                m.d.sync += reg.eq(1)
            with m.Else():
                m.d.sync += reg.eq(ready() & ~e2 & ~(reg & out.vf))
    fadv = fronts[0]
    with m.If(adv):
        m.d.sync += [
            x.v.eq(c | (fadv & out.v)),
            e2.eq(fadv & out.vf), e1.eq(e2), c.eq((fadv & out.vf) | e2),
            # (`s1`: the message's end after the subpart whose EF `X` took two steps before.)
            s2.eq(out.lastf), s1.eq(s2),
        ]
    with m.If(adv_copy(len(fronts) + 1)):
        m.d.sync += [
            # (`c` is `e2 | e1`; ANDs and ORs, not multiplexers with constants, which became
            # LUT-driven synchronous sets and resets.)
            x.data.eq(Cat(_choose(c, Mux(e2, 0xBF >> i & 1, 0xBD >> i & 1),
                                  _choose(out.first, 0xEF >> i & 1, out.data[i]))
                          for i in range(8))),
            x.error.eq(Mux(c, 0, out.kind)),
            x.last.eq((e1 & s1) | (~c & out.lastn)),
        ]
    with m.If(adv_copy(len(fronts) + 2)):
        m.d.sync += [skid.data.eq(x.data), skid.error.eq(x.error), skid.last.eq(x.last)]
    m.d.comb += [
        o.valid.eq((~adv | x.v) & ~masked),
        o.p.data.eq(Mux(adv, x.data, skid.data)),
        o.p.error.eq(Mux(adv, x.error, skid.error)),
        o.p.last.eq(Mux(adv, x.last, skid.last)),
    ]
