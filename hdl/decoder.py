"""Streaming UTF-8 decoder: bytes in, Unicode scalar values (or error outputs) out."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from .component import CheckedComponent
from .error_kind import DECODE_ERRORS, check_policy
from .layouts import ByteLayout, CodepointLayout


__all__ = ["DECODE_ERRORS", "Utf8Decoder"]


# The most flip-flops one copy of the pipeline's clock enable drives (nextpnr moves a clock enable
# net with more than 15 users onto a global buffer, which costs about 2.5 ns on the iCE40 UP5K).
CE_FANOUT = 15


class Utf8Decoder(CheckedComponent):
    """Streaming UTF-8 decoder.

    Takes a stream of bytes and produces a stream of Unicode scalar values, one byte per cycle in
    and at most one output per cycle out. Every byte sequence decodes exactly like CPython's
    ``bytes.decode("utf-8", errors)`` and :func:`utf8_gateware.sim.reference.decode`.

    Parameters
    ----------
    errors : ``"replace"`` or ``"surrogateescape"``
        What an ill-formed byte sequence becomes (see below).

    Ports
    -----
    ``i``: :data:`~utf8_gateware.hdl.layouts.ByteLayout` stream (``data: 8``, ``last``). ``last``
    ends a message: a prefix still pending after that byte is an error, and nothing carries over
    into the next message.

    ``o``: :data:`~utf8_gateware.hdl.layouts.CodepointLayout` stream (``codepoint: 21``,
    ``error: ErrorKind``, ``last``). ``error`` is ``NONE`` for a decoded scalar value and the
    error's kind for an error output. The final output of a message carries ``last``; a message
    of one byte or more always yields an output, so there is exactly one ``last`` output per
    message.

    ``i.ready`` is an AND of two flip-flops; ``o.valid`` and ``o.payload`` are one LUT (a 2:1
    multiplexer) of flip-flops. None of them depends on an input in the same cycle.

    Error policy
    ------------
    Each *maximal subpart* of an ill-formed sequence (The Unicode Standard, section 3.9; the
    WHATWG Encoding Standard) is one error:

    ``"replace"``
        One U+FFFD output per maximal subpart.
    ``"surrogateescape"``
        One U+DC00+b output per byte b of the maximal subpart (PEP 383; b is 80..FF).

    Every output of an error carries its kind (:class:`~utf8_gateware.hdl.error_kind.ErrorKind`):
    a lone E0 or F0 ended by a continuation byte outside its second-byte range is ``OVERLONG``, a
    lone ED so ended ``SURROGATE``, a lone F4 ``TOO_LARGE``; any other prefix cut short by a byte
    that cannot continue it, or by ``last``, is ``TRUNCATED``; C0 and C1 are ``OVERLONG``,
    F5..FD ``TOO_LARGE``, FE and FF ``INVALID_BYTE``, and a continuation byte that no lead byte
    covers is ``UNEXPECTED_CONTINUATION``.

    Throughput
    ----------
    While ``o.ready`` is high, ``i.ready`` is high: one byte is taken every cycle, whatever the
    bytes. Under back-pressure nothing is lost, duplicated or reordered; ``i.ready`` falls one
    cycle after the sink first refuses an output. After power-up or a reset, ``i.ready`` rises
    in the third cycle (the pipeline is flushed first).

    Latency
    -------
    Each output is valid at most :attr:`LATENCY` cycles after the transfer of the byte that
    determines it (an ASCII byte, the last byte of a well-formed sequence, the byte that ends a
    maximal subpart, a byte with ``last``), while the sink is ready, even if no byte ever follows:
    6 cycles with ``"replace"``, 8 with ``"surrogateescape"``. The core never waits for a byte
    that an output does not depend on.

    Architecture
    ------------
    The outputs due at byte *p* are a pure function of the bytes *p*-3..*p* and the message
    boundaries: a lead byte is never covered by an earlier sequence, and a continuation byte can
    only be covered by the nearest lead within the three bytes before it. So there is no decoding
    state machine (whose next-state logic would be several LUTs deep): the core is a pipeline in
    which each stage derives new facts about the byte it holds from its previous stage and from
    *history* flip-flops holding facts of the bytes before (kept across bubbles, cleared by a byte
    with ``last``). Every flip-flop is fed by one LUT4 of flip-flops, plus a clock enable and a
    synchronous reset that come straight from flip-flops, so the core runs close to the fabric's
    one-LUT-level ceiling. The pipeline is rigid: all stages advance together when ``adv`` (a
    flip-flop, in copies that each drive at most 15 clock enables) is high.

    ``A``
        The input register: the byte, and 4-input functions of it (nibble classes).
    ``B``
        The byte's class: continuation range (80..8F, 90..9F, A0..BF), lead length, error of its
        own; and whether it is an allowed second byte of the byte before (E0, ED, F0 and F4
        narrow the range).
    ``C``, ``D``
        The prefix pending after the byte (a lead; a lead and its second byte; a 4-byte lead and
        two continuation bytes). From the prefix pending before it, whether the byte completes a
        sequence, extends the prefix, or ends a maximal subpart, which makes a *burst* of error
        outputs (one U+FFFD, or one escape per byte of the prefix) due before the byte's own.
    ``E``
        The byte's own output: a scalar of 1..4 bytes, an error of its own, or none; and the
        data of the three bytes before it, to assemble scalars and escapes.
    ``S1`` (``S2``, ``S3`` with ``"surrogateescape"``)
        Output slots, one per pipeline step; ``S1`` assembles the byte's output. The burst due at
        byte *p* is written into the slots just ahead of *p*'s own slot: those are always silent
        (they hold bytes of the prefix that the burst covers, or bubbles), so a burst never needs
        a queue and never slows the input down: a burst of *m* outputs always follows *m*-1
        bytes that produced nothing.
    ``K``
        A skid register, since ``adv`` is registered: ``K`` keeps the output that the sink
        refused in the cycle it stopped, and is offered first.

    Extending the design: the byte classes and second-byte ranges (stages ``A``, ``B``) are
    small tables, so dialects change functions, not structure: CESU-8 and WTF-8 (surrogates
    after ED) and modified UTF-8 (C0 80) change ``B``; the legacy 5- and 6-byte forms add two
    pending-prefix levels to ``C``/``D`` and two burst slots. Several bytes per cycle would put
    several copies of the per-byte logic side by side, each taking its history from the lane
    before it, with one slot per lane.
    """

    i: In(stream.Signature(ByteLayout))
    o: Out(stream.Signature(CodepointLayout))

    @classmethod
    def check_parameters(cls, errors="replace"):
        check_policy(errors, DECODE_ERRORS)

    def __init__(self, errors="replace"):
        self._errors = errors
        super().__init__()

    @property
    def errors(self):
        return self._errors

    @property
    def LATENCY(self):
        """Cycles from the transfer of a determining byte to its output being valid."""
        return 6 if self._errors == "replace" else 8

    def elaborate(self, platform):
        m = Module()
        se = self._errors == "surrogateescape"

        # `adv`: the pipeline advances this cycle. It is a flip-flop: the skid register `K` makes
        # room for the one output the pipeline may push in the cycle the sink stops.
        #
        # Every flip-flop that drives a clock enable or a reset starts (and resets) at 0, the
        # iCE40's power-up state, so that it needs no inverter. A pipeline of all-zero bytes
        # decodes to nothing. After power-up or reset the stale contents of the pipeline are
        # flushed (see `fl` below).
        adv = Signal()      # for logic
        # Copies of `adv` for the clock enables, each driving at most `CE_FANOUT` flip-flops, so
        # that none is slowed down by a global buffer or a long net.
        ce_copies = []
        ce_count = [CE_FANOUT]

        def adv_ce(width=1):
            if ce_count[0] + width > CE_FANOUT:
                ce_copies.append(Signal(name=f"adv_ce{len(ce_copies)}"))
                ce_count[0] = 0
            ce_count[0] += width
            return ce_copies[-1]

        # `fl`: a thermometer of 1s (the power-up and reset state) that empties by one per
        # pipeline step. In the first step no byte is taken and every stage is marked as holding
        # a bubble with `last`, which clears the per-byte facts and the history registers; while
        # `mask` is set, the slots that may still hold stale values drain unseen.
        fl = [Signal(name=f"fl{n}", init=1) for n in range(5 if se else 3)]
        for n, reg in enumerate(fl):
            with m.If(adv):
                m.d.sync += reg.eq(fl[n - 1] if n else 0)
        mask = fl[-1]

        def ctl(name, value):
            """A control flip-flop: takes `value` when `adv` (and 1 in the first step)."""
            reg = Signal(name=name)
            with m.If(adv):
                m.d.sync += reg.eq(value | fl[0])
            return reg

        def feat(name, value, clear, width=1):
            """A per-byte fact: loaded when `adv`, zero when the byte is a bubble (`clear`)."""
            reg = Signal(width, name=name, reset_less=True)
            with m.If(adv_ce(width)):
                with m.If(clear):
                    m.d.sync += reg.eq(0)
                with m.Else():
                    m.d.sync += reg.eq(value)
            return reg

        # Most per-byte facts (`data`) are not cleared for bubbles: every consumer ignores them
        # then (a `feat` of the next stage is cleared, a `hist`/`held` register keeps its value).
        # Only the facts that go straight into the output slots (stage E's, and D's burst) are
        # `feat`s.

        def data(name, value, width=1):
            """Loaded when `adv`."""
            reg = Signal(width, name=name, reset_less=True)
            with m.If(adv_ce(width)):
                m.d.sync += reg.eq(value)
            return reg

        def keep(cond, new, reg):
            # `cond ? new : reg`, written so that synthesis keeps it in the LUT in front of the
            # flip-flop instead of deriving a clock enable from it (the enable is always `adv`).
            rep = cond.replicate(len(reg))
            return (new & rep) | (reg & ~rep)

        def held(name, value, valid, width=1):
            """Loaded when `adv` and a byte arrives (`valid`): the latest byte's `value`."""
            reg = Signal(width, name=name, reset_less=True)
            with m.If(adv_ce(width)):
                m.d.sync += reg.eq(keep(valid, value, reg))
            return reg

        def hist(name, value, valid, last):
            """A fact of the latest byte for the next one; cleared by a byte with `last`."""
            reg = Signal(name=name, reset_less=True)
            with m.If(adv_ce()):
                with m.If(last):
                    m.d.sync += reg.eq(0)
                with m.Else():
                    m.d.sync += reg.eq(keep(valid, value, reg))
            return reg

        m.d.comb += self.i.ready.eq(adv & ~fl[0])
        x, xl, xv = self.i.payload.data, self.i.payload.last, self.i.valid
        hi, lo = x[4:8], x[0:4]

        # ---- Stage A: input register and 4-input features of the byte ------------------------
        # Per stage: `nv`, a bubble (`v` = ~`nv`: a byte); `vl`, a byte with `last`. A stage's
        # history registers are cleared by `vl` and kept by `nv` of the stage before.
        a_nv = ctl("a_nv", ~xv)
        a_vl = ctl("a_vl", xv & xl)
        a_v  = ~a_nv
        a_d  = data("a_d", x[0:7], 7)
        a_asc = data("a_asc", ~x[7])
        a_q1  = data("a_q1", (hi == 0x9) | (hi == 0xA) | (hi == 0xB))   # 90..BF
        a_q0  = data("a_q0", (hi == 0x8) | (hi == 0xA) | (hi == 0xB))   # 80..8F, A0..BF
        a_l2a = data("a_l2a", x[5:8] == 0b110)                           # C0..DF
        a_z41 = data("a_z41", x[1:5] == 0)                               # with C: C0, C1
        a_he  = data("a_he", hi == 0xE)
        a_hf  = data("a_hf", hi == 0xF)
        a_l0d = data("a_l0d", (lo == 0x0) | (lo == 0xD))
        a_l0  = data("a_l0", lo == 0x0)
        a_l04 = data("a_l04", (lo == 0x0) | (lo == 0x4))
        a_l14 = data("a_l14", (lo >= 0x1) & (lo <= 0x4))

        # ---- Stage B: byte class; is it an allowed second byte of the previous byte? ---------
        b_nv = ctl("b_nv", a_nv)
        b_v  = ~b_nv
        b_vl = ctl("b_vl", a_vl)
        b_d  = data("b_d", a_d, 7)
        # The previous byte as a lead: L2 (C2..DF), E-code e (01 E1..EC/EE/EF, 10 E0, 11 ED),
        # F-code f (01 F1..F3, 10 F0, 11 F4). Continuation code q: 00 none, 01 80..8F,
        # 10 90..9F, 11 A0..BF.
        bh_l2 = hist("bh_l2", a_l2a & ~a_z41, a_v, a_vl)
        bh_e1 = hist("bh_e1", a_he & a_l0d,   a_v, a_vl)
        bh_e0 = hist("bh_e0", a_he & ~a_l0,   a_v, a_vl)
        bh_f1 = hist("bh_f1", a_hf & a_l04,   a_v, a_vl)
        bh_f0 = hist("bh_f0", a_hf & a_l14,   a_v, a_vl)
        e, f, q = Cat(bh_e0, bh_e1), Cat(bh_f0, bh_f1), Cat(a_q0, a_q1)
        b_asc   = data("b_asc",   a_asc)
        b_cont  = data("b_cont",  a_q1 | a_q0)
        b_ok2l2 = data("b_ok2l2", bh_l2 & (q != 0))
        b_ok2l3 = data("b_ok2l3", ((e == 0b01) & (q != 0)) | ((e == 0b10) & (q == 0b11)) |
                                  ((e == 0b11) & ((q == 0b01) | (q == 0b10))))
        b_ok2l4 = data("b_ok2l4", ((f == 0b01) & (q != 0)) | ((f == 0b10) & q[1]) |
                                  ((f == 0b11) & (q == 0b01)))
        # A continuation byte outside the range of E0/ED (b_fe; ED: b_fed) or F0/F4 (b_ff; F4:
        # b_ff4) ends the lone lead.
        b_fe    = data("b_fe",  ((e == 0b10) & ((q == 0b01) | (q == 0b10))) |
                                ((e == 0b11) & (q == 0b11)))
        b_fed   = data("b_fed", (e == 0b11) & (q == 0b11))
        b_ff    = data("b_ff",  ((f == 0b10) & (q == 0b01)) | ((f == 0b11) & q[1]))
        b_ff4   = data("b_ff4", (f == 0b11) & q[1])
        # A byte that is an error of its own: C0/C1 (b_erc), F5..FF (b_erf).
        b_erc   = data("b_erc", a_l2a & a_z41)
        b_erf   = data("b_erf", a_hf & ~a_l04 & ~a_l14)
        b_l2    = data("b_l2",  a_l2a & ~a_z41)
        b_l34   = data("b_l34", a_he | (a_hf & (a_l04 | a_l14)))

        # ---- Stage C: pending prefix after the byte ------------------------------------------
        c_nv = ctl("c_nv", b_nv)
        c_v  = ~c_nv
        c_vl = ctl("c_vl", b_vl)
        c_d  = data("c_d", b_d, 7)
        ch_sb4 = hist("ch_sb4", b_ok2l4, b_v, b_vl)       # previous byte: 2nd of a 4-byte prefix
        c_asc   = data("c_asc",   b_asc)
        c_cont  = data("c_cont",  b_cont)
        c_ok2l2 = data("c_ok2l2", b_ok2l2)
        c_ok2   = data("c_ok2",   b_ok2l2 | b_ok2l3 | b_ok2l4)
        c_sb3   = data("c_sb3",   b_ok2l3)           # prefix of 2 of 3 bytes
        c_sb    = data("c_sb",    b_ok2l3 | b_ok2l4) # prefix of 2 bytes
        c_sc    = data("c_sc",    ch_sb4 & b_cont)   # prefix of 3 of 4 bytes
        c_pend0 = data("c_pend0", b_l2 | b_l34 | b_ok2l3 | b_ok2l4)  # (c_sc: the rest)
        c_ns    = data("c_ns",    ~b_cont | b_fe | b_ff)  # ends a lone or longer prefix
        c_sp0   = data("c_sp0",   (b_fe & ~b_fed) | b_ff)  # OVERLONG, TOO_LARGE
        c_sp1   = data("c_sp1",   b_fed | b_ff4)           # SURROGATE, TOO_LARGE
        c_erc   = data("c_erc",   b_erc)
        c_erf   = data("c_erf",   b_erf)
        if se:
            # A byte with `last` that extends a prefix (to 2 bytes; to 3 of 4 bytes).
            c_extlb = data("c_extlb", b_vl & (b_ok2l3 | b_ok2l4))
            c_extlc = data("c_extlc", b_vl & b_cont & ch_sb4)

        # ---- Stage D: what the byte does to the prefix pending before it --------------------
        d_nv = ctl("d_nv", c_nv)
        d_v  = ~d_nv
        d_d  = held("d_d", c_d, c_v, 7)
        dh_pend  = hist("dh_pend",  c_pend0 | c_sc, c_v, c_vl)   # a prefix is pending
        dh_anyc  = hist("dh_anyc",  c_sb | c_sc,    c_v, c_vl)   # ... of 2 or 3 bytes
        dh_need1 = hist("dh_need1", c_sb3 | c_sc,   c_v, c_vl)   # ... that 1 byte completes
        dh_sc    = hist("dh_sc",    c_sc,           c_v, c_vl)   # ... of 3 bytes
        d_last  = data("d_last",  c_vl)
        d_showc = data("d_showc", c_asc | c_ok2l2 | (dh_need1 & c_cont))  # ... a scalar
        d_multi = feat("d_multi", c_ok2l2 | (dh_need1 & c_cont), c_nv)  # ... of 2..4 bytes
        d_len34 = data("d_len34", dh_need1 & c_cont)
        d_len4  = data("d_len4",  dh_sc & c_cont)
        d_unc   = data("d_unc",   c_cont & ~c_ok2 & ~dh_anyc)     # uncovered continuation
        d_trunc = data("d_trunc", c_vl & (c_pend0 | c_sc))        # prefix cut by `last`
        # Its kind: OVERLONG (C0, C1: 001), TOO_LARGE (F5..FD: 011), INVALID_BYTE (FE, FF: 100).
        feff = c_d[3] & c_d[2] & c_d[1]
        d_erb   = data("d_erb",   c_erc | c_erf)
        d_ek1   = data("d_ek1",   c_erf & ~feff)
        d_ek2   = data("d_ek2",   c_erf & feff)
        # The burst due at this byte, written into the slots ahead of its own: item 1 (the slot
        # just ahead: U+FFFD, or the escape of the previous byte), items 2 and 3 (escapes).
        if not se:
            d_i1  = feat("d_i1",  dh_pend & c_ns, c_nv)
            d_bk2 = feat("d_bk2", dh_pend & ~c_cont, c_nv)                  # TRUNCATED
        else:
            d_i1  = feat("d_i1",  (dh_pend & c_ns) | c_extlb | c_extlc, c_nv)
            d_bk2 = feat("d_bk2", (dh_pend & ~c_cont) | c_extlb | c_extlc, c_nv)
            d_i2  = feat("d_i2",  (dh_anyc & ~c_cont) | c_extlc, c_nv)
            d_i3  = feat("d_i3",  dh_sc & ~c_cont, c_nv)
        d_sp0 = feat("d_sp0", c_sp0, c_nv)
        d_sp1 = feat("d_sp1", c_sp1, c_nv)

        # ---- Stage E: the byte's own output, and the data of the bytes before it --------------
        wbits = 7 if se else 6
        e_d  = held("e_d", d_d, d_v, 7)
        w1   = held("w1", e_d[0:wbits], d_v, wbits)
        w2   = held("w2", w1, d_v, wbits)
        w3   = held("w3", w2[0:3], d_v, 3)
        e_showc = feat("e_showc", d_showc, d_nv)
        e_err   = feat("e_err",   d_erb | d_unc | d_trunc, d_nv)
        e_multi = feat("e_multi", d_multi, d_nv)
        e_len34 = feat("e_len34", d_len34, d_nv)
        e_len4  = feat("e_len4",  d_len4,  d_nv)
        e_last  = feat("e_last",  d_last,  d_nv)
        e_kd0   = feat("e_kd0",   (d_erb & ~d_ek2) | d_unc, d_nv)
        e_kd1   = feat("e_kd1",   d_ek1 | d_trunc, d_nv)
        e_kd2   = feat("e_kd2",   d_ek2 | d_unc | d_trunc, d_nv)
        # Bit 6 of the output: bit 0 of the previous byte for a multi-byte scalar, else bit 6.
        e_c6    = data("e_c6", Mux(d_multi, e_d[0], d_d[6]))

        # ---- Output slots -------------------------------------------------------------------
        const = 0xDC80 if se else 0xFFFD   # bits 7..15 of an error output (bits 0..6 for FFFD)
        bad = e_err | d_i1                 # slot carries an error output
        s1_v = data("s1_v", e_showc | e_err | d_i1)
        cp = []
        for k in range(21):
            if k < 6:
                if se:
                    bit = (e_showc | e_err | d_i1) & e_d[k]
                else:
                    bit = (e_showc & e_d[k]) | (bad if (const >> k) & 1 else 0)
            elif k == 6:
                bit = ((e_showc | e_err | d_i1) & e_c6) if se else ((e_showc & e_c6) | bad)
            elif k < 12:
                bit = (e_multi & w1[k - 6]) | (bad if (const >> k) & 1 else 0)
            elif k < 16:
                bit = (e_len34 & w2[k - 12]) | (bad if (const >> k) & 1 else 0)
            elif k < 18:
                bit = e_len4 & w2[k - 12]
            else:
                bit = e_len4 & w3[k - 18]
            cp.append(data(f"s1_cp{k}", bit))
        kind = [
            data("s1_k0", e_kd0 | d_sp0),
            data("s1_k1", e_kd1 | d_bk2 | d_sp1),
            data("s1_k2", e_kd2 | d_bk2),
        ]
        last = data("s1_last", e_last)
        slot_v = s1_v
        if se:
            # Items 2 and 3: escapes of the bytes two and three before, always TRUNCATED.
            for n, (item, byte) in enumerate([(d_i2, w1), (d_i3, w2)], start=2):
                slot_v = data(f"s{n}_v", slot_v | item)
                new_cp = []
                for k in range(21):
                    if k < 7:
                        bit = cp[k] | (item & byte[k])
                    elif k < 16 and (const >> k) & 1:
                        bit = cp[k] | item
                    else:
                        bit = cp[k]
                    new_cp.append(data(f"s{n}_cp{k}", bit))
                cp = new_cp
                kind = [data(f"s{n}_k0", kind[0]),
                        data(f"s{n}_k1", kind[1] | item),
                        data(f"s{n}_k2", kind[2] | item)]
                last = data(f"s{n}_last", last)

        # ---- Skid register and output ---------------------------------------------------------
        # `K` holds an output (the older one, offered first) exactly when `adv` is low; the
        # pipeline then waits. While `mask` is set, outputs are hidden and `K` counts as empty.
        slot = Cat(*cp, *kind, last)
        k_p = Signal(len(slot), reset_less=True)
        for n in range(0, len(slot), CE_FANOUT):
            with m.If(adv_ce(min(CE_FANOUT, len(slot) - n))):
                # Only kept (`adv` low) if the sink did not take it.
                m.d.sync += k_p[n:n + CE_FANOUT].eq(slot[n:n + CE_FANOUT])
        for reg in (adv, *ce_copies):
            # Each copy is computed from its own value (the same for all), which also keeps
            # synthesis from merging them.
            m.d.sync += reg.eq(self.o.ready | (reg & ~slot_v) | mask)
        m.d.comb += [
            self.o.valid.eq((~adv | slot_v) & ~mask),
            self.o.payload.eq(Mux(adv, slot, k_p)),
        ]
        return m
