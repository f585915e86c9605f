"""Streaming decoder of original UTF-8 (RFC 2279): bytes in, values 0..0x7FFFFFFF out.

Why a core of its own rather than :mod:`.decoder_lane`'s tables: the lane pipeline's outputs are
a pure function of a byte and the three before it, which holds because no UTF-8 sequence is
longer than four bytes. RFC 2279 has 5- and 6-byte forms, so a window would have to reach five
bytes back (two more stages of look-back, and an assembly multiplexer of six byte positions per
bit). Here the pending prefix is *state* instead, a handful of flip-flops updated once per byte
in two LUT levels, and the value is a shift register of the bytes' payloads that the completed
length masks. The byte tables come from the reference model's grammar
(:data:`~utf8_gateware.sim.encodings.rfc2279.RFC2279_GRAMMAR`), never written again here.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from utf8_gateware.sim.encodings.rfc2279 import RFC2279_GRAMMAR
from .component import CheckedComponent
from .decoder_lane import ByteClassifier, kind_of
from .error_kind import ErrorKind, check_policy
from .layouts import ByteLayout, WideCodepointLayout
from .pipeline import Pipeline, any_of, keep, lut


__all__ = ["RFC2279_DECODE_ERRORS", "Rfc2279Tables", "Rfc2279Decoder"]


#: The error policies of :class:`Rfc2279Decoder`.
RFC2279_DECODE_ERRORS = ("replace",)

_REPLACEMENT = 0xFFFD
_CONTINUATION = range(0x80, 0xC0)


class Rfc2279Tables:
    """The byte sets the decoder needs, from a grammar of the reference model
    (:class:`~utf8_gateware.sim.reference.Grammar`: per byte a ``length``, a second-byte range
    ``low``..``high``, the ``second_error`` of a lone lead, the ``start_error`` of a byte that
    starts nothing).

    ``narrowed``: ``(low, kind)`` of each class of leads whose second byte must be ``low`` or
    more (its range error ``kind``); ``start_kinds``: the kinds of the bytes other than
    continuation bytes that start nothing; ``width``: bits of a value (5 per byte of the
    longest form, and one).
    """

    def __init__(self, grammar):
        length = grammar.length
        leads = [byte for byte in range(256) if length[byte] > 1]
        for byte in leads:
            assert grammar.high[byte] == 0xBF and grammar.low[byte] in _CONTINUATION, \
                "a lead's second byte is cut from below only"
        for byte in _CONTINUATION:
            assert not length[byte], "continuation bytes start nothing"
        self.continuation_kind = grammar.start_error[0x80]
        assert {grammar.start_error[byte] for byte in _CONTINUATION} == {self.continuation_kind}
        self.max_length = max(length)
        self.width = 5 * self.max_length + 1
        self.narrowed = sorted({(grammar.low[byte], grammar.second_error[byte])
                                for byte in leads if grammar.low[byte] != 0x80})
        sets = {
            "single": {byte for byte in range(256) if length[byte] == 1},
            "cont": set(_CONTINUATION),
            "plain": {byte for byte in leads if grammar.low[byte] == 0x80},
            **{f"len{n}": {byte for byte in leads if length[byte] >= n}
               for n in range(2, self.max_length + 1)},
        }
        for c, (low, kind) in enumerate(self.narrowed):
            sets[f"ok{c}"] = set(range(low, 0xC0))
            sets[f"lead{c}"] = {byte for byte in leads
                                if (grammar.low[byte], grammar.second_error[byte]) == (low, kind)}
        self.start_kinds = sorted({grammar.start_error[byte] for byte in range(256)
                                   if not length[byte] and byte not in _CONTINUATION},
                                  key=lambda kind: kind.value)
        for kind in self.start_kinds:
            sets[f"start_{kind.label}"] = {byte for byte in range(256) if not length[byte]
                                           and byte not in _CONTINUATION
                                           and grammar.start_error[byte] is kind}
        self.classifier = ByteClassifier(sets)

    def value_mask_length(self, bit):
        """The shortest multi-byte form whose value has bit ``bit``: an n-byte form holds
        5n + 1 bits (the lead's 7 - n and six per continuation byte)."""
        return max(2, (bit - 1) // 5 + 1)


class Rfc2279Decoder(CheckedComponent):
    """Streaming decoder of RFC 2279's UTF-8: values 0..0x7FFFFFFF in 1 to 6 bytes, shortest
    form only, one byte per cycle. ``Utf8Decoder(encoding="utf-8-rfc2279")`` is this core.

    Every byte sequence decodes exactly like ``utf8_gateware.sim.encodings.decode(data,
    "utf-8-rfc2279", "replace")``.

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.ByteLayout` stream (``data: 8``, ``last``: ends a
    message; a prefix still pending after it is an error, nothing carries over).
    ``o``: :data:`~utf8_gateware.hdl.layouts.WideCodepointLayout` stream (``codepoint: 31``,
    ``error``, ``last``): a decoded value with ``error`` ``NONE``, or U+FFFD with the error's
    kind; exactly one ``last`` output per message, its final one.

    Error policy
    ------------
    ``"replace"`` only: one U+FFFD per maximal subpart, as in UTF-8. C0, C1 and a lead E0, F0,
    F8 or FC ended by a continuation byte below its second-byte range are ``OVERLONG``; FE, FF
    ``INVALID_BYTE``; a stray continuation byte ``UNEXPECTED_CONTINUATION``; a prefix cut short
    (by a byte or by ``last``) ``TRUNCATED``. There is no ``surrogateescape``: surrogate values
    are well-formed in RFC 2279, so an escape could not be told from one.

    Latency and throughput
    ----------------------
    One byte every cycle on any input while ``o.ready`` is high (``i.ready`` is
    ``adv & ~flushing``, flip-flops only). An output is valid :attr:`LATENCY` = 5 cycles after
    the transfer of the byte that determines it (the error output of a prefix that a byte ends,
    one cycle earlier), even if no byte follows. Under back-pressure nothing is lost,
    duplicated or reordered; ``i.ready`` falls one cycle after the sink first refuses an output.
    After a reset, ``i.ready`` rises in the third cycle.

    Architecture
    ------------
    A rigid pipeline (:class:`~utf8_gateware.hdl.pipeline.Pipeline`) with a skid register:

    ``A``
        The input register: the byte's nibble predicates
        (:class:`~utf8_gateware.hdl.decoder_lane.ByteClassifier`), its low seven bits.
    ``B``
        The byte's classes: single, continuation, lead of length >= n (n = 2..6), lead of
        a narrowed class (its second byte must be 84/88/90/A0 or more) or not, continuation at
        or above each class's bound, a start error and its kind.
    ``C``
        The state: ``m1``..``m5`` (a thermometer of the continuation bytes still due), ``len3``
        .. ``len6`` (of the pending sequence's length), ``pl`` (the next byte is any
        continuation byte) and one flag per narrowed class (the next byte is the second byte of
        such a lead). The byte *extends* the prefix if it is an allowed next byte; else it ends
        the prefix (a *burst*: one U+FFFD) and is examined as a start. Every next state is
        ``extend ? x : y`` in two LUT levels: ``extend`` is an OR of five ANDs (state flag and
        byte class), three of its terms first-level LUTs and the fifth folded into a LUT that
        picks between ``x`` and ``y``. The state takes a byte's update only for a byte (a
        bubble keeps it), and clears at the end of a message. ``C`` also registers what the byte
        completes (``cmp2``..``cmp6``: a form of n or more bytes), its own error, the burst,
        and the payload shift register (six bits per byte).
    ``D``
        The byte's own output: the shift register masked by the completed length (bits 0..6
        for a single byte), or U+FFFD.
    ``E``
        The output slot: ``D``'s output, or the burst of the byte now in ``D``. A burst lands in
        the slot just before the own output of the byte that ends the prefix, which belongs to
        a prefix byte or a bubble and is always silent, so a byte that yields two outputs never
        stops the input.
    ``K``
        The skid register (:meth:`~utf8_gateware.hdl.pipeline.Pipeline.drive_output`).

    LUT depth: two levels between flip-flops (one for ``A``'s predicates and most of ``D``
    and ``E``), plus the clock enable of the state flip-flops (a copy of ``adv`` and ``B``'s
    byte flag).
    """

    #: Cycles from the transfer of a determining byte to its output being valid.
    LATENCY = 5

    #: The payload layout of ``o``.
    OUTPUT_LAYOUT = WideCodepointLayout

    @classmethod
    def check_parameters(cls, errors="replace"):
        check_policy(errors, RFC2279_DECODE_ERRORS)

    def __init__(self, errors="replace"):
        self._errors = errors
        super().__init__({
            "i": In(stream.Signature(ByteLayout)),
            "o": Out(stream.Signature(self.OUTPUT_LAYOUT)),
        })

    @property
    def errors(self):
        return self._errors

    def elaborate(self, platform):
        m = Module()
        tables = _TABLES
        pipe = Pipeline(m, flush_steps=4)
        m.d.comb += self.i.ready.eq(pipe.adv & ~pipe.flushing)
        a = self._stage_a(pipe, tables)
        b = self._stage_b(pipe, tables, a)
        c = self._stage_c(m, pipe, tables, b)
        d = self._stage_d(m, pipe, tables, c)
        e_valid, out = self._stage_e(pipe, tables, c, d)
        pipe.drive_output(self.o, e_valid, out)
        return m

    def _stage_a(self, pipe, tables):
        i = self.i
        return _Regs(
            bub=pipe.control("a_bub", ~i.valid),
            end=pipe.control("a_end", i.valid & i.p.last),
            last=pipe.data("a_last", i.p.last),
            pay=pipe.data("a_pay", i.p.data[:7], 7),
            pred=tables.classifier.registers(pipe, "a", i.p.data))

    def _stage_b(self, pipe, tables, a):
        def member(name):
            return tables.classifier.member(a.pred, name)

        def flag(name):
            return pipe.fact(f"b_{name}", member(name), a.bub)
        n = tables.max_length
        starts = [(member(f"start_{kind.label}"), kind) for kind in tables.start_kinds]
        return _Regs(
            bub=pipe.control("b_bub", a.bub),
            end=pipe.control("b_end", a.end),
            go=pipe.control("b_go", ~a.bub | a.end),     # the state takes this step
            last=pipe.fact("b_last", a.last, a.bub),
            pay=pipe.data("b_pay", a.pay, 7),
            single=flag("single"), cont=flag("cont"), plain=flag("plain"),
            length={k: flag(f"len{k}") for k in range(2, n + 1)},
            ok=[flag(f"ok{c}") for c in range(len(tables.narrowed))],
            lead=[flag(f"lead{c}") for c in range(len(tables.narrowed))],
            serr=pipe.fact("b_serr", any_of(f for f, _ in starts), a.bub),
            skind=pipe.fact("b_skind", kind_of(*starts), a.bub, ErrorKind))

    def _stage_c(self, m, pipe, tables, b):
        n = tables.max_length
        # The state (cleared at the end of a message, kept across bubbles).
        due = {k: Signal(name=f"c_m{k}") for k in range(1, n)}        # continuations due >= k
        length = {k: Signal(name=f"c_len{k}") for k in range(3, n + 1)}
        plain = Signal(name="c_pl")
        second = [Signal(name=f"c_s{c}") for c in range(len(tables.narrowed))]

        # extend = OR of (state flag & byte class); all pairs but the last in first-level LUTs
        # of two pairs each, the last folded into `pick`.
        pairs = [(plain, b.cont), *zip(second, b.ok)]
        *front, (s_last, ok_last) = pairs
        terms = [lut(m, f"c_t{g}", any_of(s & ok for s, ok in front[2 * g:2 * g + 2]))
                 for g in range((len(front) + 1) // 2)]
        assert len(terms) <= 2, "extend is two LUT levels"

        def pick(name, if_extend, otherwise):
            """``extend ? if_extend : otherwise`` (``if_extend`` one signal or constant)."""
            inner = lut(m, f"c_u_{name}", Mux(s_last & ok_last, if_extend, otherwise))
            return Mux(any_of(terms), if_extend, inner)

        def due_at(k):
            return due[k] if k in due else 0

        nxt = [(due[k], pick(f"m{k}", due_at(k + 1), b.length[k + 1])) for k in due]
        pending = nxt[0][1]                   # a prefix is pending after the byte
        nxt += [(length[k], pick(f"len{k}", length[k], b.length[k])) for k in length]
        nxt += [(plain, pick("pl", due_at(2), b.plain))]
        nxt += [(s, pick(f"s{c}", 0, lead)) for c, (s, lead) in enumerate(zip(second, b.lead))]
        with m.If(pipe.enable(len(nxt)) & b.go):
            with m.If(b.end):
                m.d.sync += [reg.eq(0) for reg, _ in nxt]
            with m.Else():
                m.d.sync += [reg.eq(value) for reg, value in nxt]

        # What the byte completes: cmp[k], a form of k or more bytes.
        done = {k: lut(m, f"c_x{k}", ~due_at(2) & (length[k] if k > 2 else 1))
                for k in range(2, n + 1)}
        cmp = {k: pipe.fact(f"c_cmp{k}", pick(f"cmp{k}", done[k], 0), b.bub)
               for k in range(2, n + 1)}
        # The payload shift register: six bits per byte (bits 0..5 the latest byte's).
        acc = pipe.register("c_acc", tables.width)
        with m.If(pipe.enable(tables.width)):
            m.d.sync += acc.eq(keep(~b.bub, Cat(b.pay[:6], acc[:-6]), acc))
        # The range error of a lone lead of each kind.
        kinds = sorted({kind for _, kind in tables.narrowed}, key=lambda kind: kind.value)
        ranged = [(pipe.fact(f"c_r_{kind.label}",
                             any_of(s & b.cont for s, (_, k) in zip(second, tables.narrowed)
                                    if k is kind), b.bub), kind) for kind in kinds]
        return _Regs(
            bub=pipe.control("c_bub", b.bub),
            last=pipe.fact("c_last", b.last, b.bub),
            cmp=cmp, acc=acc,
            b6=pipe.data("c_b6", b.pay[6]),
            single=pipe.fact("c_single", b.single, b.bub),
            serr=pipe.fact("c_serr", b.serr, b.bub),
            skind=pipe.fact("c_skind", b.skind, b.bub, ErrorKind),
            stray=pipe.fact("c_stray", pick("stray", 0, b.cont), b.bub),
            pending=pipe.fact("c_pend", pending, b.bub),
            burst=pipe.fact("c_burst", pick("burst", 0, due[1]), b.bub),
            ranged=ranged)

    def _stage_d(self, m, pipe, tables, c):
        cut = lut(m, "d_cut", c.last & c.pending)       # a prefix cut short by `last`
        error = lut(m, "d_err", c.serr | c.stray | cut)
        bits = []
        for bit in range(tables.width):
            if bit < 6:
                value = c.acc[bit] & (c.cmp[2] | c.single)
            elif bit == 6:
                value = (c.acc[bit] & c.cmp[2]) | (c.b6 & c.single)
            else:
                value = c.acc[bit] & c.cmp[tables.value_mask_length(bit)]
            if _REPLACEMENT >> bit & 1:
                value = value | error
            bits.append(value)
        kind = c.skind.as_value() | kind_of((c.stray, tables.continuation_kind),
                                            (cut, ErrorKind.TRUNCATED))
        return _Regs(
            cp=pipe.data("d_cp", Cat(*bits), tables.width),
            kind=pipe.data("d_kind", kind, ErrorKind),
            valid=pipe.data("d_v", c.cmp[2] | c.single | error),
            last=pipe.data("d_last", c.last))

    def _stage_e(self, pipe, tables, c, d):
        ranged = any_of(flag for flag, _ in c.ranged)
        burst_kind = kind_of(*c.ranged, (~ranged, ErrorKind.TRUNCATED))
        out = Signal(WideCodepointLayout)
        pipe.m.d.comb += [
            out.codepoint.eq(pipe.data("e_cp", d.cp | Mux(c.burst, _REPLACEMENT, 0),
                                       tables.width)),
            out.error.eq(pipe.data("e_kind", d.kind.as_value() |
                                   Mux(c.burst, burst_kind, ErrorKind.NONE), ErrorKind)),
            out.last.eq(pipe.data("e_last", d.last)),
        ]
        return pipe.data("e_v", d.valid | c.burst), out


class _Regs:
    """The registers of one stage, by name."""
    def __init__(self, **regs):
        self.__dict__.update(regs)


_TABLES = Rfc2279Tables(RFC2279_GRAMMAR)
