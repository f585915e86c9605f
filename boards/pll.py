"""iCE40 PLL: parameters for a target clock, and the PLL + reset for the ``sync`` domain.

:func:`pll_parameters` finds the ``SB_PLL40_PAD``/``SB_PLL40_CORE`` settings (``DIVR``, ``DIVF``,
``DIVQ``, ``FILTER_RANGE``, feedback path ``SIMPLE``) that bring an input clock (12 MHz on the
iCEBreaker) closest to a target frequency, checking the ranges of the iCE40 sysCLOCK PLL
(Lattice TN1251):

* input 10..133 MHz; phase detector (PFD = F_IN / (DIVR+1)) 10..133 MHz;
* VCO (F_PFD * (DIVF+1)) 533..1066 MHz;
* output (F_VCO / 2**DIVQ, DIVQ 1..6) 16..275 MHz;
* DIVR 0..15, DIVF 0..127.

It raises :class:`ValueError` with the reason when no setting is within ``tolerance`` of the
target, and reports the achieved frequency. :class:`ICE40PLL` instantiates ``SB_PLL40_PAD``
(the input is the clock pad itself) and drives the ``sync`` domain, held in reset until the PLL
reports lock (through a :class:`~amaranth.lib.cdc.ResetSynchronizer`).
"""

from dataclasses import dataclass

from amaranth.hdl import ClockDomain, Elaboratable, Instance, Module, Signal
from amaranth.lib import io
from amaranth.lib.cdc import ResetSynchronizer


__all__ = ["PLLParameters", "pll_parameters", "ICE40PLL",
           "ECP5PLLParameters", "ecp5_pll_parameters", "ECP5PLL"]


F_IN_RANGE   = (10e6, 133e6)
F_PFD_RANGE  = (10e6, 133e6)
F_VCO_RANGE  = (533e6, 1066e6)
F_OUT_RANGE  = (16e6, 275e6)


def _mhz(hz):
    return f"{hz / 1e6:g} MHz"


class _Setting:
    """What every PLL setting gives: ``error`` (relative, of the achieved ``f_out``) and
    :meth:`as_dict`; a subclass has ``f_in``, ``f_requested``, ``f_pfd``, ``f_vco``, ``f_out``
    and :meth:`settings` (its dividers)."""
    @property
    def error(self):
        """Relative error of the achieved frequency."""
        return (self.f_out - self.f_requested) / self.f_requested

    def as_dict(self):
        """JSON-ready summary (used in the build report)."""
        return {
            "f_in_mhz": self.f_in / 1e6, "f_out_mhz": self.f_out / 1e6,
            "f_requested_mhz": self.f_requested / 1e6, "f_pfd_mhz": self.f_pfd / 1e6,
            "f_vco_mhz": self.f_vco / 1e6, **self.settings(),
        }


@dataclass(frozen=True)
class PLLParameters(_Setting):
    """One PLL setting (feedback path ``SIMPLE``) and the frequencies it gives."""
    f_in: float
    f_requested: float
    divr: int
    divf: int
    divq: int
    filter_range: int

    @property
    def f_pfd(self):
        return self.f_in / (self.divr + 1)

    @property
    def f_vco(self):
        return self.f_pfd * (self.divf + 1)

    @property
    def f_out(self):
        """The achieved output frequency (Hz)."""
        return self.f_vco / (1 << self.divq)

    def settings(self):
        return {"divr": self.divr, "divf": self.divf, "divq": self.divq,
                "filter_range": self.filter_range, "feedback": "SIMPLE"}


def _filter_range(f_pfd):
    # The loop filter setting Lattice's tools (and icepll) pick for a PFD frequency.
    mhz = f_pfd / 1e6
    for limit, value in ((17, 1), (26, 2), (44, 3), (66, 4), (101, 5)):
        if mhz < limit:
            return value
    return 6


def pll_parameters(f_out, f_in=12e6, *, tolerance=0.005):
    """The PLL setting that brings ``f_in`` (Hz) closest to ``f_out`` (Hz).

    Raises :class:`TypeError` for non-numbers and :class:`ValueError` if a frequency is out of
    range or if the closest setting is off by more than ``tolerance`` (relative).
    """
    for name, value in (("f_out", f_out), ("f_in", f_in), ("tolerance", tolerance)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, not {value!r}")
    if not F_IN_RANGE[0] <= f_in <= F_IN_RANGE[1]:
        raise ValueError(f"PLL input {_mhz(f_in)} is outside {_mhz(F_IN_RANGE[0])}.."
                         f"{_mhz(F_IN_RANGE[1])}")
    if not F_OUT_RANGE[0] <= f_out <= F_OUT_RANGE[1]:
        raise ValueError(f"PLL output {_mhz(f_out)} is outside the iCE40 PLL's range "
                         f"{_mhz(F_OUT_RANGE[0])}..{_mhz(F_OUT_RANGE[1])}")
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, not {tolerance!r}")
    best = None
    for divr in range(16):
        f_pfd = f_in / (divr + 1)
        if not F_PFD_RANGE[0] <= f_pfd <= F_PFD_RANGE[1]:
            continue
        for divf in range(128):
            f_vco = f_pfd * (divf + 1)
            if not F_VCO_RANGE[0] <= f_vco <= F_VCO_RANGE[1]:
                continue
            for divq in range(1, 7):
                candidate = PLLParameters(f_in, f_out, divr, divf, divq, _filter_range(f_pfd))
                if not F_OUT_RANGE[0] <= candidate.f_out <= F_OUT_RANGE[1]:
                    continue
                if best is None or abs(candidate.f_out - f_out) < abs(best.f_out - f_out):
                    best = candidate
    if best is None:
        raise ValueError(f"no iCE40 PLL setting exists for {_mhz(f_in)} -> {_mhz(f_out)} "
                         f"(PFD {_mhz(F_PFD_RANGE[0])}..{_mhz(F_PFD_RANGE[1])}, VCO "
                         f"{_mhz(F_VCO_RANGE[0])}..{_mhz(F_VCO_RANGE[1])})")
    if abs(best.error) > tolerance:
        raise ValueError(f"the iCE40 PLL cannot make {_mhz(f_out)} from {_mhz(f_in)}: the "
                         f"closest is {best.f_out / 1e6:.4f} MHz ({best.error:+.2%}, tolerance "
                         f"{tolerance:.2%})")
    return best


class _LockedPLL(Elaboratable):
    """A PLL primitive fed by the clock pad ``pad`` (a port requested with ``dir="-"``),
    driving the ``sync`` domain, with ``sync`` in reset until the PLL locks (asynchronous
    assert, synchronous release through a :class:`~amaranth.lib.cdc.ResetSynchronizer`).
    ``locked`` (an output :class:`Signal`) mirrors the PLL's lock output. A subclass sets
    ``PARAMETERS`` (the settings' class) and writes :meth:`primitive`."""
    PARAMETERS = None

    def __init__(self, parameters, pad, *, domain="sync"):
        if not isinstance(parameters, self.PARAMETERS):
            raise TypeError(f"parameters must be {self.PARAMETERS.__name__}, not "
                            f"{parameters!r}")
        self.parameters = parameters
        self.pad = pad
        self.domain = domain
        self.locked = Signal()

    def primitive(self, m, clk_out):
        """Add the PLL to ``m`` with its output on ``clk_out`` and its lock on ``locked``."""
        raise NotImplementedError

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = cd = ClockDomain(self.domain)
        clk_out = Signal(name="pll_clk")
        m.d.comb += cd.clk.eq(clk_out)
        self.primitive(m, clk_out)
        m.submodules.reset_sync = ResetSynchronizer(~self.locked, domain=self.domain)
        # No clock constraint here: nextpnr derives the output frequency from the PLL's
        # parameters and the constraint of the clock pad.
        return m


class ICE40PLL(_LockedPLL):
    """``SB_PLL40_PAD`` (the input is the clock pad itself), its output on the global buffer
    ``PLLOUTGLOBAL`` (see :class:`_LockedPLL`)."""
    PARAMETERS = PLLParameters

    def primitive(self, m, clk_out):
        p = self.parameters
        m.submodules.pll = Instance("SB_PLL40_PAD",
            p_FEEDBACK_PATH="SIMPLE",
            p_DIVR=p.divr, p_DIVF=p.divf, p_DIVQ=p.divq, p_FILTER_RANGE=p.filter_range,
            i_PACKAGEPIN=self.pad.io,
            i_RESETB=1, i_BYPASS=0,
            o_PLLOUTGLOBAL=clk_out,
            o_LOCK=self.locked,
        )


# -------------------------------------------------------------------------------------------------
# ECP5

#: ECP5 ``EHXPLLL`` ranges (Lattice TN1263, as ``ecppll`` uses them): input, phase detector,
#: VCO and output frequencies (Hz); the dividers are 1..128 (CLKI_DIV, CLKOP_DIV) and 1..80
#: (CLKFB_DIV).
ECP5_F_IN_RANGE = (8e6, 400e6)
ECP5_F_PFD_RANGE = (3.125e6, 400e6)
ECP5_F_VCO_RANGE = (400e6, 800e6)
ECP5_F_OUT_RANGE = (10e6, 400e6)


@dataclass(frozen=True)
class ECP5PLLParameters(_Setting):
    """One ``EHXPLLL`` setting (feedback from ``CLKOP``) and the frequencies it gives."""
    f_in: float
    f_requested: float
    clki_div: int
    clkfb_div: int
    clkop_div: int

    @property
    def f_pfd(self):
        return self.f_in / self.clki_div

    @property
    def f_out(self):
        """The achieved output frequency (Hz)."""
        return self.f_pfd * self.clkfb_div

    @property
    def f_vco(self):
        return self.f_out * self.clkop_div

    def settings(self):
        return {"clki_div": self.clki_div, "clkfb_div": self.clkfb_div,
                "clkop_div": self.clkop_div, "feedback": "CLKOP"}


def _check_range(what, value, limits, family):
    if not limits[0] <= value <= limits[1]:
        raise ValueError(f"PLL {what} {_mhz(value)} is outside the {family} PLL's range "
                         f"{_mhz(limits[0])}..{_mhz(limits[1])}")


def ecp5_pll_parameters(f_out, f_in=25e6, *, tolerance=0.005):
    """The ``EHXPLLL`` setting that brings ``f_in`` (Hz; 25 MHz on the ULX3S) closest to
    ``f_out`` (Hz), preferring the highest VCO frequency among equally close ones. Raises
    :class:`TypeError` for non-numbers and :class:`ValueError` if a frequency is out of range
    or the closest setting is off by more than ``tolerance`` (relative)."""
    for name, value in (("f_out", f_out), ("f_in", f_in), ("tolerance", tolerance)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, not {value!r}")
    _check_range("input", f_in, ECP5_F_IN_RANGE, "ECP5")
    _check_range("output", f_out, ECP5_F_OUT_RANGE, "ECP5")
    best = None
    for clki_div in range(1, 129):
        if not ECP5_F_PFD_RANGE[0] <= f_in / clki_div <= ECP5_F_PFD_RANGE[1]:
            continue
        for clkfb_div in range(1, 81):
            f = f_in / clki_div * clkfb_div
            # The largest output divider keeps the VCO highest (least jitter).
            clkop_div = min(128, int(ECP5_F_VCO_RANGE[1] // f))
            if clkop_div < 1 or f * clkop_div < ECP5_F_VCO_RANGE[0] or \
                    not ECP5_F_OUT_RANGE[0] <= f <= ECP5_F_OUT_RANGE[1]:
                continue
            candidate = ECP5PLLParameters(f_in, f_out, clki_div, clkfb_div, clkop_div)
            if best is None or (abs(candidate.error), -candidate.f_vco) < \
                    (abs(best.error), -best.f_vco):
                best = candidate
    if best is None or abs(best.error) > tolerance:
        closest = "none" if best is None else f"{best.f_out / 1e6:.4f} MHz ({best.error:+.2%})"
        raise ValueError(f"the ECP5 PLL cannot make {_mhz(f_out)} from {_mhz(f_in)}: the "
                         f"closest is {closest}, tolerance {tolerance:.2%}")
    return best


class ECP5PLL(_LockedPLL):
    """``EHXPLLL`` fed through the clock pad's input buffer, its ``CLKOP`` output also its
    feedback (see :class:`_LockedPLL`)."""
    PARAMETERS = ECP5PLLParameters

    def primitive(self, m, clk_out):
        p = self.parameters
        m.submodules.clk_buffer = buffer = io.Buffer("i", self.pad)
        m.submodules.pll = Instance("EHXPLLL",
            a_FREQUENCY_PIN_CLKI=f"{p.f_in / 1e6:g}",
            a_FREQUENCY_PIN_CLKOP=f"{p.f_out / 1e6:g}",
            a_ICP_CURRENT="12", a_LPF_RESISTOR="8",
            a_MFG_ENABLE_FILTEROPAMP="1", a_MFG_GMCREF_SEL="2",
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA",
            p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=p.clkop_div,
            p_CLKOP_CPHASE=p.clkop_div - 1, p_CLKOP_FPHASE=0,
            p_CLKI_DIV=p.clki_div, p_CLKFB_DIV=p.clkfb_div, p_FEEDBK_PATH="CLKOP",
            i_RST=0, i_STDBY=0, i_CLKI=buffer.i, i_CLKFB=clk_out,
            i_PHASESEL0=0, i_PHASESEL1=0, i_PHASEDIR=1, i_PHASESTEP=1, i_PHASELOADREG=1,
            i_PLLWAKESYNC=0, i_ENCLKOP=0,
            o_CLKOP=clk_out, o_LOCK=self.locked,
        )
