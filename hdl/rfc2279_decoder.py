"""Streaming decoder of original UTF-8 (RFC 2279): bytes in, values 0..0x7FFFFFFF out.

Why a core of its own rather than :mod:`.decoder_lane`'s tables: the lane pipeline's outputs are
a pure function of a byte and the three before it, which holds because no UTF-8 sequence is
longer than four bytes. RFC 2279 has 5- and 6-byte forms, so a window would have to reach five
bytes back (two more stages of look-back, and an assembly multiplexer of six byte positions per
bit). Here the pending prefix is *state* instead, nine flip-flops updated once per byte in one
LUT level, and the value is a shift register of the bytes' payloads that the completed
length masks. The byte tables come from the reference model's grammar
(:data:`~utf8_gateware.sim.encodings.rfc2279.RFC2279_GRAMMAR`), never written again here.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from utf8_gateware.sim.encodings.rfc2279 import RFC2279_GRAMMAR
from .component import CheckedComponent
from .decoder_lane import ByteClassifier, kind_of
from .error_kind import ErrorKind, check_policy
from .layouts import ByteLayout, WideCodepointLayout
from .pipeline import Pipeline, any_of, keep


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
        #: The range errors of the narrowed leads.
        self.range_kinds = sorted({kind for _, kind in self.narrowed}, key=lambda k: k.value)
        self.start_kinds = sorted({grammar.start_error[byte] for byte in range(256)
                                   if not length[byte] and byte not in _CONTINUATION},
                                  key=lambda kind: kind.value)
        starts = {kind: {byte for byte in range(256) if not length[byte]
                         and byte not in _CONTINUATION and grammar.start_error[byte] is kind}
                  for kind in self.start_kinds}
        #: The byte classes stage ``B`` registers (each an OR of at most four registers of
        #: ``A2``, which hold ORs of two nibble rectangles each).
        self.flags = {
            "single": {byte for byte in range(256) if length[byte] == 1},
            "cont": set(_CONTINUATION),
            **{f"len{n}": {byte for byte in leads if length[byte] >= n}
               for n in range(2, self.max_length + 1)},
            **{f"skind{bit}": set().union(*(members for kind, members in starts.items()
                                            if kind.value >> bit & 1))
               for bit in range(3)},
        }
        assert all(length[byte] >= 3 for byte in leads if grammar.low[byte] != 0x80), \
            "a narrowed lead's second byte never completes a form"
        sets = dict(self.flags)
        for c, (low, kind) in enumerate(self.narrowed):
            sets[f"lead{c}"] = {byte for byte in leads
                                if (grammar.low[byte], grammar.second_error[byte]) == (low, kind)}
            sets[f"below{c}"] = set(range(0x80, low))
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
    ``adv & ~flushing``, flip-flops only). An output is valid :attr:`LATENCY` = 6 cycles after
    the transfer of the byte that determines it (the error output of a prefix that a byte ends,
    one cycle earlier), even if no byte follows. Under back-pressure nothing is lost,
    duplicated or reordered; ``i.ready`` falls one cycle after the sink first refuses an output.
    After a reset, ``i.ready`` rises in the third cycle.

    Architecture
    ------------
    A rigid pipeline (:class:`~utf8_gateware.hdl.pipeline.Pipeline`) with a skid register, one
    LUT level between flip-flops (LUT depth 1; every clock enable is a copy of ``adv``, one
    per 40 flip-flops). UP5K: 235 LCs, 160.7 MHz (median of nextpnr seeds 1-3):

    ``A``
        The input register: the byte's nibble predicates
        (:class:`~utf8_gateware.hdl.decoder_lane.ByteClassifier`), its low seven bits.
    ``A2``
        ORs of two nibble rectangles of each byte class; a *history* of the latest byte's
        narrowed lead class (E0, F0, F8, FC: the second byte must be A0, 90, 88, 84 or more;
        cleared by ``last``), and whether the byte is a continuation byte *below* the bound of
        the class in the history.
    ``B``
        The byte's classes: single, continuation, lead of 2 bytes or more, the kind of a
        start error (any bit set: a start error); below a narrowed lead's bound (the range
        error, per kind). And the state's
        controls: ``hold`` (a bubble or a continuation byte) and ``own1``..``own5`` (a bubble,
        or a lead of more than n bytes), both 0 at the end of a message.
    ``C``
        The state: ``m1``..``m5`` (a thermometer of the continuation bytes still due) and
        ``len3``..``len6`` (of the pending sequence's length). A continuation byte *extends*
        the prefix (shifts ``m``) if one is pending and it is not below the bound; a bubble
        keeps the state; any other byte starts afresh (a lead: its own lengths). So each next
        state is ``hold ? (own ? m[n] : m[n+1]) : own``, one LUT of four flip-flops, and a
        byte below the bound clears ``m`` (the flip-flops' synchronous reset). A pending
        prefix that a byte does not extend is a *burst* (one U+FFFD). ``C`` also registers
        what the byte completes (``cmp2``..``cmp6``: a form of n or more bytes), its own
        error, the burst, and the payload shift register (six bits per byte).
    ``D``
        The byte's own output but its value: the completed-length flags that mask the shift
        register (bits 0..6 for a single byte), whether a byte followed into ``C`` (the
        register shifted since), bit 6, its error and kind.
    ``E``
        The output slot: ``D``'s output, its value bits read from the shift register (a bit,
        or the one six above it, masked: one LUT each, no 31-bit register in ``D``), or the
        burst of the byte in ``C``; U+FFFD is set at the output by a flag. A burst
        lands in the slot just before the own output of the byte that ends the prefix, which
        belongs to a prefix byte or a bubble and is always silent, so a byte that yields two
        outputs never stops the input.
    ``K``
        The skid register (:meth:`~utf8_gateware.hdl.pipeline.Pipeline.drive_output`).
    """

    #: Cycles from the transfer of a determining byte to its output being valid.
    LATENCY = 6

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
        # One enable copy per 40 flip-flops, as the one-lane decoder (fewer copies than 15).
        pipe = Pipeline(m, flush_steps=4, ce_fanout=40)
        m.d.comb += self.i.ready.eq(pipe.adv & ~pipe.flushing)
        a = self._stage_a(pipe, tables)
        a2 = self._stage_a2(pipe, tables, a)
        b = self._stage_b(pipe, tables, a2)
        c = self._stage_c(m, pipe, tables, b)
        d = self._stage_d(pipe, tables, b, c)
        e_valid, out, ones = self._stage_e(m, pipe, tables, c, d)
        pipe.drive_output(self.o, e_valid, out, ones)
        return m

    def _stage_a(self, pipe, tables):
        i = self.i
        return _Regs(
            bub=pipe.control("a_bub", ~i.valid),
            end=pipe.control("a_end", i.valid & i.p.last),
            pay=pipe.data("a_pay", i.p.data[:7], 7),
            pred=tables.classifier.registers(pipe, "a", i.p.data))

    def _stage_a2(self, pipe, tables, a):
        classifier = tables.classifier
        # The narrowed class of the latest byte (cleared at the end of a message), and for the
        # byte taken now whether it is a continuation byte below the class's bound after it.
        history = [pipe.history(f"a2_h{c}", [classifier.member(a.pred, f"lead{c}")], [~a.bub],
                                a.bub, a.end) for c in range(len(tables.narrowed))]
        below = [(pipe.fact(f"a2_below{c}", h & classifier.member(a.pred, f"below{c}"), a.bub),
                  kind) for c, (h, (_, kind)) in enumerate(zip(history, tables.narrowed))]
        pairs = {}
        for name in tables.flags:
            terms = classifier.terms(a.pred, name)
            pairs[name] = [pipe.fact(f"a2_{name}_{index // 2}", any_of(terms[index:index + 2]),
                                     a.bub) for index in range(0, len(terms), 2)]
            assert len(pairs[name]) <= 4, f"{name}: one LUT in stage B"
        return _Regs(
            bub=pipe.control("a2_bub", a.bub),
            end=pipe.control("a2_end", a.end),
            pay=pipe.data("a2_pay", a.pay, 7),
            below=below, pairs=pairs)

    def _stage_b(self, pipe, tables, a2):
        def flag(name):
            return pipe.fact(f"b_{name}", any_of(a2.pairs[name]), a2.bub)
        n = tables.max_length
        # The state's controls (stage C): `hold`, the state keeps or shifts (a bubble or a
        # continuation byte); `own[k]`, a bubble, or a lead of more than k bytes; both 0 at the
        # end of a message.
        hold = pipe.data("b_hold", (a2.bub | any_of(a2.pairs["cont"])) & ~a2.end)
        own = {k: pipe.data(f"b_own{k}", (a2.bub | any_of(a2.pairs[f"len{k + 1}"])) & ~a2.end)
               for k in range(1, n)}
        ranged = {kind: pipe.fact(f"b_r_{kind.label}",
                                  any_of(flag for flag, k in a2.below if k is kind), a2.bub)
                  for kind in tables.range_kinds}
        return _Regs(
            bub=pipe.control("b_bub", a2.bub),
            last=pipe.fact("b_last", a2.end, a2.bub),     # (`end` of a byte is its `last`)
            # A byte is in B: a flip-flop of its own for the shift register's 37 loads.
            byte=pipe.data("b_byte", ~a2.bub),
            pay=pipe.data("b_pay", a2.pay, 7),
            single=flag("single"), cont=flag("cont"),
            skind=Cat(*(flag(f"skind{bit}") for bit in range(3))),
            len2=flag("len2"), hold=hold, own=own, ranged=ranged,
            below=(next(iter(ranged.values())) if len(ranged) == 1 else
                   pipe.fact("b_below", any_of(flag for flag, _ in a2.below), a2.bub)))

    def _stage_c(self, m, pipe, tables, b):
        n = tables.max_length
        # The state: due[k], k or more continuation bytes are due (due[1]: a prefix is
        # pending); length[k], the pending sequence has k or more bytes. A continuation byte
        # extends the prefix (shifts `due`) if one is pending and the byte is not below a
        # narrowed lead's bound (else the state clears: `below` is the flip-flops' synchronous
        # reset); a bubble keeps the state; any other byte starts afresh with its own lengths.
        # Each next state is one LUT of four flip-flops (`hold`, `own` of stage B), and the
        # clock enable is a copy of `adv` (a LUT gating it was the slowest path).
        due = {k: Signal(name=f"c_m{k}") for k in range(1, n)}
        length = {k: Signal(name=f"c_len{k}") for k in range(3, n + 1)}
        cont, below, hold = b.cont, b.below, b.hold

        def due_at(k):
            return due[k] if k in due else 0
        with m.If(pipe.enable(len(due))):
            with m.If(below):
                m.d.sync += [due[k].eq(0) for k in due]
            with m.Else():
                # hold ? (own ? keep : shift) : own, as an AND-OR so that no enable is derived
                m.d.sync += [due[k].eq((hold & b.own[k] & due[k]) |
                                       (hold & ~b.own[k] & due_at(k + 1)) |
                                       (~hold & b.own[k])) for k in due]
        with m.If(pipe.enable(len(length))):
            m.d.sync += [length[k].eq(keep(hold, length[k], b.own[k - 1])) for k in length]
        # What the byte completes: cmp[k], a form of k or more bytes (a narrowed lead's
        # second byte never completes one: they are 3 bytes or more).
        cmp = {k: pipe.fact(f"c_cmp{k}", cont & due[1] & ~due_at(2) &
                            (length[k] if k > 2 else 1), b.bub) for k in range(2, n + 1)}
        # The payload shift register: six bits per byte (bits 0..5 the latest byte's), and six
        # more, so that a value is still whole after the next byte's shift (stage E).
        acc = pipe.register("c_acc", tables.width + 6)
        with m.If(pipe.enable(len(acc))):
            m.d.sync += acc.eq(keep(b.byte, Cat(b.pay[:6], acc[:-6]), acc))
        return _Regs(
            last=pipe.fact("c_last", b.last, b.bub),
            cmp=cmp, acc=acc,
            b6=pipe.data("c_b6", b.pay[6]),
            single=pipe.fact("c_single", b.single, b.bub),
            serr=pipe.fact("c_serr", b.skind.any(), b.bub),     # (every kind is nonzero)
            skind=pipe.fact("c_skind", b.skind, b.bub, 3),
            stray=pipe.fact("c_stray", cont & (~due[1] | below), b.bub),
            pending=pipe.fact("c_pend", ~below & Mux(cont, due_at(2), b.len2), b.bub),
            burst=pipe.fact("c_burst", due[1] & (~cont | below), b.bub),
            ranged=[(pipe.fact(f"c_r_{kind.label}", flag, b.bub), kind)
                    for kind, flag in b.ranged.items()])

    def _stage_d(self, pipe, tables, b, c):
        """The byte's own output but its value: which bits of the shift register are its value
        (per completed length), whether the register has shifted since (a byte followed it
        into ``C``), bit 6, its error and kind."""
        cut = c.last & c.pending                       # a prefix cut short by `last`
        kind = c.skind | kind_of((c.stray, tables.continuation_kind), (cut, ErrorKind.TRUNCATED))
        return _Regs(
            low=pipe.data("d_low", c.cmp[2] | c.single),            # bits 0..5
            cmp={k: pipe.data(f"d_cmp{k}", flag) for k, flag in c.cmp.items()},
            b6=pipe.data("d_b6", (c.acc[6] & c.cmp[2]) | (c.b6 & c.single)),
            shifted=pipe.data("d_sh", ~b.bub),
            error=pipe.data("d_err", c.serr | c.stray | cut),
            kind=pipe.data("d_kind", kind, ErrorKind),
            last=pipe.data("d_last", c.last))

    def _stage_e(self, m, pipe, tables, c, d):
        """The output slot: the own output of the byte in ``D``, or the burst of the byte in
        ``C`` (U+FFFD, set at the output by a flag: :meth:`Pipeline.drive_output`'s ``ones``).
        The value's bits come straight from the shift register (one LUT each: the bit or the
        bit six above it, masked)."""
        bits = []
        for bit in range(tables.width):
            if bit == 6:
                bits.append(d.b6)
                continue
            mask = d.low if bit < 6 else d.cmp[tables.value_mask_length(bit)]
            bits.append(keep(d.shifted, c.acc[bit + 6], c.acc[bit]) & mask)
        ranged = any_of(flag for flag, _ in c.ranged)
        burst_kind = kind_of(*c.ranged, (~ranged, ErrorKind.TRUNCATED))
        out = Signal(WideCodepointLayout)
        m.d.comb += [
            out.codepoint.eq(pipe.data("e_cp", Cat(*bits), tables.width)),
            out.error.eq(pipe.data("e_kind", d.kind.as_value() |
                                   Mux(c.burst, burst_kind, ErrorKind.NONE), ErrorKind)),
            out.last.eq(pipe.data("e_last", d.last)),
        ]
        # U+FFFD's bits, set by two copies of one flag (30 loads on one net were a long
        # route); the copies differ only without an output, so that synthesis keeps them.
        replaced = d.error | c.burst
        copies = [pipe.data(f"e_repl{n}", replaced | extra) for n, extra in
                  enumerate((0, ~d.low))]
        fffd = [bit for bit in range(tables.width) if _REPLACEMENT >> bit & 1]
        ones = Cat(*(copies[fffd.index(bit) * len(copies) // len(fffd)] if bit in fffd else 0
                     for bit in range(len(Value.cast(out)))))
        # (A byte's own output is a value, `low`, or an error.)
        return pipe.data("e_v", d.low | d.error | c.burst), out, ones


class _Regs:
    """The registers of one stage, by name."""
    def __init__(self, **regs):
        self.__dict__.update(regs)


_TABLES = Rfc2279Tables(RFC2279_GRAMMAR)
