"""Building blocks of the cores' rigid pipelines, written once.

A *rigid* pipeline advances all its stages together, in the cycles in which ``adv`` is high, and
keeps up with its source without bubbles: a stage holds a beat or a *bubble* (nothing), and
bubbles flow like beats. ``adv`` is itself a flip-flop (so no enable depends on the sink's
``ready`` in the same cycle); a skid register keeps the one output that the pipeline pushes in the
cycle the sink stops (:meth:`Pipeline.drive_output`).

What :class:`Pipeline` makes, each register fed by one LUT level where the caller's logic allows:

* **Clock-enable fan-out copies** (:meth:`Pipeline.enable`). ``adv`` drives the clock enable of
  every pipeline register. A net with many loads is slow (nextpnr moves an iCE40 clock enable with
  more than 40 loads onto a global buffer, about 2.5 ns: nextpnr-ice40 0.11.1 promoted enables of
  41 loads and more, not of 40, stop 27), so each copy of ``adv`` drives at most
  :data:`CE_FANOUT` flip-flops. The copies are computed from their own values, which keeps
  synthesis from merging them.
* **Flush after reset** (:attr:`Pipeline.flushing`). Registers that drive clock enables or resets
  start at 0, the iCE40's power-up state, so the pipeline's contents after power-up or a reset are
  stale. A thermometer of ones (the reset state) empties by one per step: in the first step no
  input is taken and every stage is marked as a bubble that ends a message (:meth:`control`
  registers take 1), which clears the per-beat facts and the histories; while the last stage of
  the thermometer is set, outputs are hidden. (With ``flush_count``, where it is fewer
  flip-flops, the thermometer's first and last and a down counter of the steps between them.)
* **Register kinds**: :meth:`control` (per-stage control: bubble, end of message; set while
  flushing), :meth:`data` (a fact loaded every step), :meth:`fact` (a fact cleared for a bubble),
  :meth:`held` (the latest valid beat's value), :meth:`history` (the latest *valid lane's* value
  of a lane-parallel stage, kept across bubbles and cleared at the end of a message).
* **Registered ready and the skid register** (:meth:`drive_output`), or, for outputs of which the
  later of two in consecutive steps is small, two places of which one is small
  (:class:`OutputPair`, the validator's).
"""

from amaranth.hdl import Cat, Const, Mux, Signal, Value


__all__ = ["CE_FANOUT", "Pipeline", "OutputPair", "keep", "select", "any_of", "lut",
           "skid_buffer", "SKID_LATENCY"]


#: The most flip-flops one copy of the pipeline's clock enable drives.
CE_FANOUT = 15

#: Cycles from a beat's transfer into :func:`skid_buffer` to its being valid at the output.
SKID_LATENCY = 2


def keep(cond, new, reg):
    """``cond ? new : reg``, written so that synthesis keeps it in the LUT in front of the
    flip-flop instead of deriving a clock enable from it (the enable is always ``adv``)."""
    new, reg = Value.cast(new), Value.cast(reg)
    rep = Value.cast(cond).replicate(len(reg))
    return (new & rep) | (reg & ~rep)


def select(values, flags, bubble, kept):
    """The value of ``values`` whose flag in ``flags`` is set (at most one is), or ``kept`` if
    ``bubble``; with one value and flag, a 2:1 multiplexer (:func:`keep`)."""
    if len(values) == 1:
        return keep(flags[0], values[0], kept)
    width = len(Value.cast(kept))
    return any_of(Value.cast(value)[:width] & Value.cast(flag).replicate(width)
                  for value, flag in zip(values, flags)) | \
        (Value.cast(kept) & Value.cast(bubble).replicate(width))


def lut(m, name, value):
    """``value`` (a function of at most four bits) as a signal of ``m`` marked ``keep``, so that
    synthesis maps it to one LUT and does not restructure the logic across it: the first level
    of a two-level function whose split the caller chose."""
    sig = Signal(name=name, attrs={"keep": 1})
    m.d.comb += sig.eq(value)
    return sig


def any_of(values):
    """The OR of ``values`` (0 if there are none)."""
    result = 0
    for value in values:
        result = result | value
    return result


class Pipeline:
    """A rigid pipeline being built in the module ``m``.

    ``flush_steps``: the pipeline's depth in steps from the input register to the output slot
    (the steps after a reset during which stale contents drain unseen). ``ce_fanout``: the most
    flip-flops a copy of the clock enable drives, or ``None`` for one copy that drives them all
    (nextpnr puts an iCE40 enable net with many loads on a global buffer). ``flush_count``: a
    counter instead of the thermometer where that is fewer flip-flops (from 6 steps on; then
    :attr:`flush` is ``None``, and :meth:`control_copies` and :class:`OutputPair` need the
    thermometer).

    ``adv`` is the advance flip-flop for logic (0 at power-up: the pipeline starts stopped and
    is started by :meth:`drive_output`'s next-state logic). ``controls_on_copies``: the
    :meth:`control` flip-flops take their clock enable from the copies (:meth:`enable`) like
    the data, instead of from ``adv`` itself, which then enables only the flush thermometer and
    is left to the output's multiplexers. ``clear_in_data``: the synchronous resets under the
    clock enable (:meth:`fact`, :meth:`history`, :meth:`load_cleared`, ``OutputPair.load_s``)
    are ANDs in the data instead (for the ECP5, whose flip-flops' resets are not under their
    enables: a reset under one is a LUT in front of the reset pin).
    """

    def __init__(self, m, *, flush_steps, ce_fanout=CE_FANOUT, flush_count=False,
                 controls_on_copies=False, clear_in_data=False):
        if not isinstance(flush_steps, int) or flush_steps < 1:
            raise ValueError(f"flush_steps must be a positive integer, not {flush_steps!r}")
        self.m = m
        self.clear_in_data = clear_in_data
        self.ce_fanout = ce_fanout
        self.controls_on_copies = controls_on_copies
        self.adv = Signal()
        self._copies = []
        self._room = 0
        width = (flush_steps - 1).bit_length()
        if flush_count and 2 + width < flush_steps:
            # ``flush_count``, where it takes fewer flip-flops: the thermometer's first and
            # last flip-flops, and between them a down counter of the steps (saturating at 0:
            # each bit one LUT of the counter's, `masked` a step after it is 1).
            #: The flush thermometer (see the module documentation), or ``None`` for a counter.
            self.flush = None
            self._flushing = Signal(name="fl0", init=1)
            self._masked = Signal(name=f"fl{flush_steps - 1}", init=1)
            count = Signal(width, name="fl_count", init=flush_steps - 1)
            with m.If(self.adv):
                m.d.sync += [self._flushing.eq(0), self._masked.eq(count.any())]
                # (A table, not a subtraction: that would be a carry chain.)
                with m.Switch(count):
                    for value in range(1 << width):
                        with m.Case(value):
                            m.d.sync += count.eq(max(value - 1, 0))
            return
        self.flush = [Signal(name=f"fl{n}", init=1) for n in range(flush_steps)]
        for n, reg in enumerate(self.flush):
            with m.If(self.adv):
                m.d.sync += reg.eq(self.flush[n - 1] if n else 0)
        self._flushing, self._masked = self.flush[0], self.flush[-1]

    @property
    def flushing(self):
        """High in the first step after power-up or reset: nothing is taken, every stage is
        marked as a bubble that ends a message."""
        return self._flushing

    @property
    def masked(self):
        """High while stale contents drain: outputs are hidden."""
        return self._masked

    def enable(self, width=1):
        """A copy of ``adv`` for the clock enables of ``width`` more flip-flops."""
        if not self._copies or self._room < width:
            self._copies.append(Signal(name=f"adv_ce{len(self._copies)}"))
            self._room = self.ce_fanout if self.ce_fanout is not None else float("inf")
        self._room -= width
        return self._copies[-1]

    def register(self, name, shape=1):
        """A register the caller loads (no reset: its first values are flushed)."""
        return Signal(shape, name=name, reset_less=True)

    def control(self, name, value):
        """A control flip-flop: takes ``value`` when ``adv``, and 1 while flushing."""
        reg = Signal(name=name)
        with self.m.If(self.enable(1) if self.controls_on_copies else self.adv):
            self.m.d.sync += reg.eq(value | self.flushing)
        return reg

    def control_copies(self, name, value, copies):
        """``copies`` control flip-flops of ``value`` (:meth:`control`) for a flag with many
        loads: copy ``k`` is also set in the first ``k`` steps after the flush (while
        ``flush[k]`` is), so that synthesis keeps the copies apart. Only for loads further
        than ``copies`` steps from the input, where no beat has come yet in those steps."""
        if not 1 <= copies <= len(self.flush):
            raise ValueError(f"copies must be 1 to {len(self.flush)}, not {copies!r}")
        regs = [Signal(name=f"{name}{k}" if k else name) for k in range(copies)]
        for k, reg in enumerate(regs):
            with self.m.If(self.adv):
                self.m.d.sync += reg.eq(value | self.flush[k])
        return regs

    def data(self, name, value, shape=1):
        """Loaded when ``adv``."""
        reg = self.register(name, shape)
        with self.m.If(self.enable(len(Value.cast(reg)))):
            self.m.d.sync += reg.eq(value)
        return reg

    def fact(self, name, value, clear, shape=1):
        """Loaded when ``adv``; zero when ``clear`` (the beat is a bubble)."""
        return self._load_or_clear(self.register(name, shape), value, clear)

    def _load_or_clear(self, reg, value, clear):
        """``reg`` loaded with ``value`` when ``adv``, or with 0 if ``clear``."""
        return self.load_cleared(reg, value, clear, self.enable(len(Value.cast(reg))))

    def load_cleared(self, reg, value, clear, enable, in_data=None):
        """``reg`` takes ``value`` when ``enable``, or 0 if ``clear``: a synchronous reset
        under the enable, or with :attr:`clear_in_data` (or ``in_data``, if not ``None``) an
        AND in the data (an ECP5 flip-flop's synchronous reset is not under its clock enable,
        so a reset under an enable is a LUT of both in front of it)."""
        with self.m.If(enable):
            if self.clear_in_data if in_data is None else in_data:
                width = len(Value.cast(reg))
                self.m.d.sync += reg.eq(Value.cast(value) & ~Value.cast(clear).replicate(width))
            else:
                with self.m.If(clear):
                    self.m.d.sync += reg.eq(0)
                with self.m.Else():
                    self.m.d.sync += reg.eq(value)
        return reg

    def load(self, pairs, cond):
        """For each ``(register, value)`` of ``pairs``: ``register`` takes ``value`` in the
        cycles in which ``cond(copy)`` is high, ``copy`` being a copy of ``adv``
        (:meth:`enable`) per :attr:`ce_fanout` flip-flops (an elastic stage that loads when it
        is empty or the stage after it loads)."""
        for register, value in pairs:
            register, value = Value.cast(register), Value.cast(value)
            step = self.ce_fanout or len(register)
            for start in range(0, len(register), step):
                stop = min(len(register), start + step)
                with self.m.If(cond(self.enable(stop - start))):
                    self.m.d.sync += register[start:stop].eq(value[start:stop])

    def held(self, name, value, valid, shape=1):
        """Loaded when ``adv`` and ``valid``: the latest valid beat's ``value``."""
        reg = self.register(name, shape)
        with self.m.If(self.enable(len(Value.cast(reg)))):
            self.m.d.sync += reg.eq(keep(valid, value, reg))
        return reg

    def history(self, name, values, last, bubble, clear, shape=1):
        """The value of the latest valid lane, for the first lane of the next beat.

        ``values``: one value per lane; ``last``: one flag per lane, set for the beat's latest
        valid lane; ``bubble``: the beat has no valid lane (the history keeps its value);
        ``clear``: the beat ends a message (the history becomes 0). With one lane this is a 2:1
        keep in front of a flip-flop with a synchronous reset; with N lanes an AND-OR of N + 1
        pairs (see :func:`select`).
        """
        if all(isinstance(value, int) and value == 0 for value in values):
            return Const(0, shape)      # (a grammar without the fact: no register)
        reg = self.register(name, shape)
        return self._load_or_clear(reg, select(values, last, bubble, reg), clear)

    def drive_output(self, port, slot_valid, slot_payload, ones=None, gated=None):
        """Drive the output stream ``port`` from the last stage (``slot_valid``,
        ``slot_payload``, registers loaded when ``adv``) through a skid register, and make
        ``adv``.

        ``adv`` falls for the cycle after one in which the sink refused an output; in that
        cycle the skid register holds the refused output (the older one) and offers it, and the
        pipeline waits. While :attr:`masked`, outputs are hidden and the skid register counts as
        empty. ``port.valid`` and ``port.payload`` are one LUT (a 2:1 multiplexer) of
        flip-flops; nothing depends on ``port.ready`` in the same cycle but ``adv``'s next
        state. ``ones``: per payload bit a flip-flop that sets it (ORed in at the output, and a
        synchronous set of the skid register's bit, so that the output stays one LUT).
        ``gated``: ``(flag, values, start)``, payload bits ``start``.. that are ``flag & value``
        (a flip-flop of the slot, and a flip-flop per bit that holds its value until a step after
        the flag's item has left the slot): the skid register keeps the flag, not the bits
        (each output bit one LUT of ``adv``, the flag, the skid's flag and the value).
        """
        m = self.m
        payload = Value.cast(slot_payload)
        skid = Signal(len(payload), name="skid", reset_less=True)
        # (The skid register keeps no gated bit.)
        gated_bits = range(gated[2], gated[2] + len(gated[1])) if gated is not None else ()
        bits = [bit for bit in range(len(payload)) if bit not in gated_bits]
        skid_flag = Signal(name="skid_flag", reset_less=True) if gated is not None else None
        step = self.ce_fanout or len(bits)
        for start in range(0, len(bits), step):
            chunk = bits[start:start + step]
            with m.If(self.enable(len(chunk) + (skid_flag is not None and not start))):
                if skid_flag is not None and not start:
                    m.d.sync += skid_flag.eq(gated[0])
                # Only kept (`adv` low) if the sink did not take it.
                if ones is None and gated is None:
                    m.d.sync += skid[chunk[0]:chunk[-1] + 1].eq(payload[chunk[0]:chunk[-1] + 1])
                    continue
                for bit in chunk:
                    if ones is None:
                        m.d.sync += skid[bit].eq(payload[bit])
                        continue
                    with m.If(ones[bit]):
                        m.d.sync += skid[bit].eq(1)
                    with m.Else():
                        m.d.sync += skid[bit].eq(payload[bit])
        out = Mux(self.adv, payload if ones is None else payload | ones, skid)
        if gated is not None:
            flag, values, start = gated
            held = Mux(self.adv, flag, skid_flag)
            out = Cat(out[:start], *(held & value for value in values),
                      out[start + len(values):])
        # (After the last enable copy is made.)
        for reg in (self.adv, *self._copies):
            m.d.sync += reg.eq(port.ready | (reg & ~slot_valid) | self.masked)
        m.d.comb += [
            port.valid.eq((~self.adv | slot_valid) & ~self.masked),
            Value.cast(port.payload).eq(out),
        ]


def skid_buffer(m, valid, payload, ready, sink_ready, *, name="sk", fanout=24):
    """A buffer between a source stream (``valid``, ``payload``; ``ready`` is driven here) and
    a sink whose ``sink_ready`` is a flip-flop; returns the sink's ``(valid, payload)``,
    flip-flops.

    ``ready`` is a flip-flop too, ``rdy`` (in copies of at most ``fanout`` clock enables), so
    that a source whose own advance is a flip-flop (:meth:`Pipeline.drive_output`) computes it
    from flip-flops in one LUT, and the sink's ``ready`` reaches only this buffer's next
    states. Three registers: ``I`` (the input register) takes the source's beat in every cycle
    in which ``rdy`` is high; ``O`` (the output) takes ``I``'s beat (``rdy`` high) or the skid
    register ``S``'s (``rdy`` low) in the cycles in which it is empty or the sink takes it
    (``go``); ``S`` takes ``I``'s beat whenever ``rdy`` is high, and holds it while ``rdy`` is
    low. ``rdy`` falls for the cycles after one in which ``I`` held a beat and ``go`` was low
    (the beat waits in ``S``), and rises after one with ``go``. Every register is one LUT of
    flip-flops (``I`` one LUT of the source's flip-flops, if its port is one); ``go`` (``O``
    empty or ``sink_ready``) is a LUT that is ``O``'s clock enable, one copy per ``fanout``
    flip-flops (``fanout`` 24: ``synth sanitizer`` (its decoder-encoder join before stop 27),
    seeds 1-3, median 114.4 MHz, ``transcoder``
    utf-8 to wtf-8 107.7; with 8: 107.7 and 105.3; with 64: 104.1 and 99.5; ``O`` loaded under
    ``sink_ready`` alone, a flip-flop, loses the cycles in which
    ``O`` holds a bubble: 0.92 bytes per cycle for the sanitiser on random 1-4 byte text
    instead of 0.95, and a deadlock in front of ``utf-8-sig``'s mark). Latency
    :data:`SKID_LATENCY`; the sink may take a beat every cycle."""
    payload = Value.cast(payload)
    width = len(payload)
    i_valid, s_valid, o_valid = (Signal(name=f"{name}_{reg}_valid") for reg in "iso")
    i_p, s_p, o_p = (Signal(width, name=f"{name}_{reg}_p", reset_less=True) for reg in "iso")
    regs = [(i_valid, valid), (i_p, payload), (s_valid, i_valid), (s_p, i_p)]
    rdys = []
    for _ in range(0, 2 * width + 2, fanout):
        rdy = Signal(name=f"{name}_rdy{len(rdys)}")
        rdys.append(rdy)
        # S is full after a cycle in which I held a beat and O did not move, or S was full
        m.d.sync += rdy.eq(~o_valid | sink_ready | (rdy & ~i_valid))
    bits = Cat(*(Value.cast(reg) for reg, _ in regs))
    values = Cat(*(Value.cast(value) for _, value in regs))
    for n, start in enumerate(range(0, len(bits), fanout)):
        with m.If(rdys[n]):
            m.d.sync += bits[start:start + fanout].eq(values[start:start + fanout])
    out, src = Cat(o_valid, o_p), Cat(Mux(rdys[0], i_valid, s_valid), Mux(rdys[0], i_p, s_p))
    for n, start in enumerate(range(0, len(out), fanout)):
        with m.If(lut(m, f"{name}_go{n}", ~o_valid | sink_ready)):
            m.d.sync += out[start:start + fanout].eq(src[start:start + fanout])
    m.d.comb += ready.eq(rdys[-1])
    return o_valid, o_p


#: Copies of :class:`OutputPair`'s ``incoming`` (one had 13 loads, a 4 ns route).
INCOMING_COPIES = 3


class OutputPair:
    """The output of a rigid pipeline ``pipe`` whose outputs are sparse enough that, of two
    outputs in consecutive steps, the later one is *small* (a few bits, the others 0): two
    places instead of a slot and a skid register of the output's width.

    The last stage holds an output when ``incoming``, a register this class makes from
    ``before`` (the same flag a stage earlier), zero while the outputs are hidden (and after
    a reset). ``S``, the big place (registers the caller makes with :meth:`load_s`), takes the
    last stage in every cycle in which it is empty (``s_free``); ``Q``, the small place
    (:meth:`load_q`), in every cycle in which ``S`` is full and the pipeline advances (``sa``).
    The pipeline advances (``adv``) after a cycle in which the sink was ready, or while ``S``
    is empty; so ``S`` is full in a step only if its output came in the step before (or
    ``Q``'s, older, went out in the cycle before), and what comes while it is full is the later
    of two consecutive outputs: a small one, into ``Q``, which is then empty. The states: both
    empty; ``S`` full (``s_v``); ``Q`` full (``S`` empty); both full, ``S`` older (``d``);
    both full, ``Q`` older; ``x``: ``Q`` is offered. Every next state is one LUT of at most
    four flip-flops and ``ready`` (``x`` loads when ``ready``: a clock enable from the port),
    none needs a reset from the flush (all start at 0 and stay there while ``incoming`` is 0),
    and ``o.valid`` and ``o.payload`` are one LUT of flip-flops (a multiplexer between the
    places, choosing by a copy of ``x``).

    The enables of ``S`` are copies of ``s_free`` (``ce_fanout`` flip-flops each, or one; one
    at least per copy of ``adv``, which each read their own) and the choice at the output
    copies of ``x`` (``select_fanout`` bits each, each computed from its own value): so
    synthesis keeps the copies apart.
    """
    def __init__(self, pipe, port, before, ce_fanout=None, select_fanout=None):
        self.pipe, self.port = pipe, port
        self.ce_fanout, self.select_fanout = ce_fanout, select_fanout
        m = pipe.m
        # In copies (each a few loads); `masked` is `flush[-2]` a step later, and the copies
        # differ in a shorter flush flag (high only with `flush[-2]`), so that synthesis keeps
        # them.
        self.incomings = [Signal(name=f"out_incoming{k}") for k in range(INCOMING_COPIES)]
        for k, reg in enumerate(self.incomings):
            with m.If(pipe.enable(1)):
                m.d.sync += reg.eq(before & ~pipe.flush[-2] & ~pipe.flush[-2 - k])
        self.incoming = self.incomings[0]
        self.sa = Signal(name="sa")          # S is full and the pipeline advances: Q loads
        self.s_v = Signal(name="s_v")
        self.s_free = [Signal(name="s_free0")]
        self._room = ce_fanout if ce_fanout is not None else float("inf")

    def load_s(self, reg, value, clear=None):
        """``reg`` (a register of ``S``) takes ``value`` while ``S`` is empty, or 0 if
        ``clear`` (a synchronous reset)."""
        width = len(Value.cast(reg))
        if self._room < width:
            self.s_free.append(Signal(name=f"s_free{len(self.s_free)}"))
            self._room = self.ce_fanout
        self._room -= width
        if clear is not None:
            return self.pipe.load_cleared(reg, value, clear, self.s_free[-1])
        with self.pipe.m.If(self.s_free[-1]):
            self.pipe.m.d.sync += reg.eq(value)
        return reg

    def load_q(self, reg, value):
        """``reg`` (a register of ``Q``) takes ``value`` when an output may come into ``Q``."""
        with self.pipe.m.If(self.sa):
            self.pipe.m.d.sync += reg.eq(value)
        return reg

    def drive(self, big, small):
        """Drive the port: ``small`` (the payload from ``Q``'s registers) while ``x``, else
        ``big`` (from ``S``'s); make ``adv`` and the flags."""
        pipe, m, port = self.pipe, self.pipe.m, self.port
        ready, sa, s_v = port.ready, self.sa, self.s_v
        copies = iter(range(1 << 16))

        def incoming():
            return self.incomings[next(copies) % len(self.incomings)]
        big, small = Value.cast(big), Value.cast(small)
        step = self.select_fanout or len(big)
        x = [Signal(name=f"x{n}") for n in range((len(big) + step - 1) // step)]
        d = Signal(name="d")                 # both full, S older
        advs = [pipe.adv, *pipe._copies]
        self.s_free += [Signal(name=f"s_free{n}") for n in range(len(self.s_free), len(advs))]
        # S: full -> empty when it is offered and taken; empty -> full when an output comes
        # (the pipeline then advances). `s_free` (not `s_v`): each copy with its own copy of
        # `x` or `s_v`, so that synthesis keeps them apart.
        m.d.sync += s_v.eq(Mux(s_v, x[0] | ~ready, incoming()))
        for k, reg in enumerate(self.s_free):
            m.d.sync += reg.eq(Mux(s_v, ~x[k % len(x)] & ready, ~incoming()))
        # `adv`: the sink was ready, or S is empty and stays so (so `adv` is high while S is
        # empty, and starts the pipeline after power-up).
        for reg, free in zip(advs, self.s_free):
            m.d.sync += reg.eq(ready | (free & ~incoming()))
        m.d.sync += sa.eq(ready & Mux(s_v, x[0], incoming()))
        m.d.sync += d.eq(~ready & (d | (sa & incoming())))
        # Q is offered next when S is taken while it is full (`d`) or an output comes into it.
        with m.If(ready):
            m.d.sync += [reg.eq(~reg & (d | (sa & incoming()))) for reg in x]
        m.d.comb += port.valid.eq((s_v | x[0] | d) & ~pipe.masked)
        for start in range(0, len(big), step):
            stop = min(start + step, len(big))
            m.d.comb += Value.cast(port.payload)[start:stop].eq(
                Mux(x[start // step], small[start:stop], big[start:stop]))
