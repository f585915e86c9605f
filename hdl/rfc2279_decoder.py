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
            sets[f"lead{c}"] = {byte for byte in leads
                                if (grammar.low[byte], grammar.second_error[byte]) == (low, kind)}
        sets["narrowed"] = {byte for byte in leads if grammar.low[byte] != 0x80}
        assert all(length[byte] >= 3 for byte in sets["narrowed"]), \
            "a narrowed lead's second byte never completes a form"
        #: The range errors of the narrowed leads.
        self.range_kinds = sorted({kind for _, kind in self.narrowed}, key=lambda k: k.value)
        for kind in self.range_kinds:
            sets[f"lead_{kind.label}"] = {byte for byte in sets["narrowed"]
                                          if grammar.second_error[byte] is kind}
        #: The continuation bytes at or above each narrowed class's bound (from the raw byte).
        self.bounds = ByteClassifier({f"ok{c}": set(range(low, 0xC0))
                                      for c, (low, _) in enumerate(self.narrowed)})
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
        and the payload shift register (six bits per byte, 37 bits).
    ``D``
        The byte's facts one step later (what it completes, its own error and kind).
    ``E``
        The output slot: the own output of the byte in ``D`` (``C``'s shift register as it was
        one byte ago, masked by the completed length; bits 0..6 for a single byte; or U+FFFD),
        or the burst of the byte in ``C``. A burst lands in the slot just before the own output
        of the byte that ends the prefix, which belongs to a prefix byte or a bubble and is
        always silent, so a byte that yields two outputs never stops the input.
    ``K``
        The skid register (:meth:`~utf8_gateware.hdl.pipeline.Pipeline.drive_output`).

    LUT depth: two levels between flip-flops (one for ``A``'s predicates and ``D``), plus the clock enable of the state flip-flops (a copy of ``adv`` and ``B``'s
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
        state = _State(tables)
        a = self._stage_a(pipe, tables)
        b = self._stage_b(pipe, tables, a, state)
        c = self._stage_c(m, pipe, tables, b, state)
        d = self._stage_d(m, pipe, tables, c)
        e_valid, out = self._stage_e(m, pipe, tables, c, d)
        pipe.drive_output(self.o, e_valid, out)
        return m

    def _stage_a(self, pipe, tables):
        i = self.i
        bounds = tables.bounds.values(i.p.data)
        return _Regs(
            bub=pipe.control("a_bub", ~i.valid),
            end=pipe.control("a_end", i.valid & i.p.last),
            last=pipe.data("a_last", i.p.last),
            pay=pipe.data("a_pay", i.p.data[:7], 7),
            pred=tables.classifier.registers(pipe, "a", i.p.data),
            ok=[pipe.data(f"a_ok{c}", tables.bounds.member(bounds, f"ok{c}"))
                for c in range(len(tables.narrowed))])

    def _stage_b(self, pipe, tables, a, state):
        m = pipe.m
        classifier = tables.classifier

        def member(name):
            return classifier.member(a.pred, name)

        def flag(name):
            return pipe.fact(f"b_{name}", member(name), a.bub)
        n = tables.max_length
        starts = [(member(f"start_{kind.label}"), kind) for kind in tables.start_kinds]
        # The class of the latest valid byte (a narrowed lead's, or none), for the byte after
        # it: whether that one is an allowed second byte is checked here, a stage ahead of the
        # state's loop.
        history = [pipe.held(f"b_h{c}", member(f"lead{c}"), ~a.bub)
                   for c in range(len(tables.narrowed))]
        ranges = [lut(m, f"b_sok{g}", any_of(h & ok for h, ok in
                                             list(zip(history, a.ok))[2 * g:2 * g + 2]))
                  for g in range((len(history) + 1) // 2)]

        def with_second(name, members):
            """``second_ok | members`` (``members``: a set of non-continuation bytes)."""
            terms = classifier.terms(a.pred, members) if members else []
            return pipe.fact(f"b_w_{name}", any_of(ranges + _pairs(m, f"b_w_{name}", terms)),
                             a.bub)
        return _Regs(
            bub=pipe.control("b_bub", a.bub),
            end=pipe.control("b_end", a.end),
            go=pipe.control("b_go", ~a.bub | a.end),     # the state takes this step
            last=pipe.fact("b_last", a.last, a.bub),
            pay=pipe.data("b_pay", a.pay, 7),
            single=flag("single"), cont=flag("cont"), narrowed=flag("narrowed"),
            length={k: flag(f"len{k}") for k in range(3, n + 1)},
            second_ok=with_second("sok", None),
            due={k: with_second(f"len{k + 1}", f"len{k + 1}") for k in range(1, n)},
            plain=with_second("plain", "plain"),
            kinds={kind: flag(f"lead_{kind.label}") for kind in tables.range_kinds},
            serr=pipe.fact("b_serr", any_of(f for f, _ in starts), a.bub),
            skind=pipe.fact("b_skind", kind_of(*starts), a.bub, ErrorKind))

    def _stage_c(self, m, pipe, tables, b, state):
        n = tables.max_length
        due, length, plain, narrowed = state.due, state.length, state.plain, state.narrowed
        cont = b.cont
        # The byte extends the pending prefix if it is a continuation byte and the prefix
        # wants any (``plain``) or it is an allowed second byte (``narrowed``). A byte that is
        # not a continuation byte starts afresh: the B flags ``b.due`` etc. are then its own
        # (``second_ok`` is 0); for a continuation byte they are ``second_ok``. So each next
        # state is one LUT of four flip-flops.
        allowed = ~narrowed | b.second_ok

        def due_at(k):
            return due[k] if k in due else 0
        nxt = [(due[k], Mux(cont, due_at(k + 1) & (~narrowed | b.due[k]), b.due[k]))
               for k in due]
        pending = nxt[0][1]                   # a prefix is pending after the byte
        nxt += [(length[k], Mux(cont, length[k], b.length[k])) for k in length]
        nxt += [(plain, Mux(cont, due_at(2) & (~narrowed | b.plain), b.plain)),
                (narrowed, b.narrowed)]
        nxt += [(state.kinds[kind], b.kinds[kind]) for kind in tables.range_kinds]
        with m.If(pipe.enable(len(nxt)) & b.go):
            with m.If(b.end):
                m.d.sync += [reg.eq(0) for reg, _ in nxt]
            with m.Else():
                m.d.sync += [reg.eq(value) for reg, value in nxt]

        # What the byte completes: cmp[k], a form of k or more bytes (a narrowed lead's second
        # byte never completes one: they are 3 bytes or more).
        completes = cont & due[1] & ~due_at(2)
        cmp = {k: pipe.fact(f"c_cmp{k}", completes & (length[k] if k > 2 else 1), b.bub)
               for k in range(2, n + 1)}
        # The payload shift register: six bits per byte (bits 0..5 the latest byte's), six more
        # than a value so that stage E can look one byte back.
        acc = pipe.register("c_acc", tables.width + 6)
        with m.If(pipe.enable(len(acc))):
            m.d.sync += acc.eq(keep(~b.bub, Cat(b.pay[:6], acc[:-6]), acc))
        extend = cont & due[1] & allowed
        return _Regs(
            bub=pipe.control("c_bub", b.bub),
            last=pipe.fact("c_last", b.last, b.bub),
            cmp=cmp, acc=acc,
            b6=pipe.data("c_b6", b.pay[6]),
            single=pipe.fact("c_single", b.single, b.bub),
            serr=pipe.fact("c_serr", b.serr, b.bub),
            skind=pipe.fact("c_skind", b.skind, b.bub, ErrorKind),
            stray=pipe.fact("c_stray", cont & ~extend, b.bub),
            pending=pipe.fact("c_pend", pending, b.bub),
            burst=pipe.fact("c_burst", due[1] & ~extend, b.bub),
            # The range error of a lone lead of each kind.
            ranged=[(pipe.fact(f"c_r_{kind.label}", state.kinds[kind] & cont, b.bub), kind)
                    for kind in tables.range_kinds])

    def _stage_d(self, m, pipe, tables, c):
        """The facts of the byte in ``C`` one step later (``E`` assembles its value)."""
        cut = lut(m, "d_cut", c.last & c.pending)       # a prefix cut short by `last`
        error = lut(m, "d_err", c.serr | c.stray | cut)
        kind = c.skind.as_value() | kind_of((c.stray, tables.continuation_kind),
                                            (cut, ErrorKind.TRUNCATED))
        return _Regs(
            cmp={k: pipe.data(f"d_cmp{k}", flag) for k, flag in c.cmp.items()},
            single=pipe.data("d_single", c.single),
            b6=pipe.data("d_b6", c.b6),
            error=pipe.data("d_err", error),
            kind=pipe.data("d_kind", kind, ErrorKind),
            valid=pipe.data("d_v", c.cmp[2] | c.single | error),
            last=pipe.data("d_last", c.last))

    def _stage_e(self, m, pipe, tables, c, d):
        """The output slot: the own output of the byte in ``D``, or the burst of the byte in
        ``C``. The value of the byte in ``D`` is ``C``'s shift register as it was one byte ago:
        shifted back by six bits unless ``C`` holds a bubble."""
        replaced = lut(m, "e_fffd", d.error | c.burst)
        bits = []
        for bit in range(tables.width):
            then = lut(m, f"e_acc{bit}", Mux(c.bub, c.acc[bit], c.acc[bit + 6]))
            if bit < 6:
                value = then & (d.cmp[2] | d.single)
            elif bit == 6:
                value = lut(m, "e_acc6_cmp", then & d.cmp[2]) | (d.b6 & d.single)
            else:
                value = then & d.cmp[tables.value_mask_length(bit)]
            if _REPLACEMENT >> bit & 1:
                value = value | replaced
            bits.append(value)
        ranged = any_of(flag for flag, _ in c.ranged)
        burst_kind = kind_of(*c.ranged, (~ranged, ErrorKind.TRUNCATED))
        out = Signal(WideCodepointLayout)
        m.d.comb += [
            out.codepoint.eq(pipe.data("e_cp", Cat(*bits), tables.width)),
            out.error.eq(pipe.data("e_kind", d.kind.as_value() |
                                   Mux(c.burst, burst_kind, ErrorKind.NONE), ErrorKind)),
            out.last.eq(pipe.data("e_last", d.last)),
        ]
        return pipe.data("e_v", d.valid | c.burst), out


def _pairs(m, name, terms):
    """``terms`` (ANDs of at most two predicates each) ORed in pairs, one LUT per pair."""
    return [lut(m, f"{name}_{index}", any_of(terms[index:index + 2]))
            for index in range(0, len(terms), 2)]


class _State:
    """The decoder's state (stage ``C``; cleared at the end of a message, kept across
    bubbles): ``due[k]``, k or more continuation bytes are due (a thermometer, ``due[1]``: a
    prefix is pending); ``length[k]``, the pending sequence has k or more bytes (k >= 3);
    ``plain``, the next byte may be any continuation byte; ``narrowed``, it is the second byte
    of a lead of a narrowed class; ``kinds[kind]``, of a lead whose range error is ``kind``."""
    def __init__(self, tables):
        n = tables.max_length
        self.due = {k: Signal(name=f"c_m{k}") for k in range(1, n)}
        self.length = {k: Signal(name=f"c_len{k}") for k in range(3, n + 1)}
        self.plain = Signal(name="c_pl")
        self.narrowed = Signal(name="c_sn")
        self.kinds = {kind: Signal(name=f"c_s_{kind.label}") for kind in tables.range_kinds}


class _Regs:
    """The registers of one stage, by name."""
    def __init__(self, **regs):
        self.__dict__.update(regs)


_TABLES = Rfc2279Tables(RFC2279_GRAMMAR)
