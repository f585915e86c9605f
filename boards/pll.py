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
from amaranth.lib.cdc import ResetSynchronizer


__all__ = ["PLLParameters", "pll_parameters", "ICE40PLL"]


F_IN_RANGE   = (10e6, 133e6)
F_PFD_RANGE  = (10e6, 133e6)
F_VCO_RANGE  = (533e6, 1066e6)
F_OUT_RANGE  = (16e6, 275e6)


def _mhz(hz):
    return f"{hz / 1e6:g} MHz"


@dataclass(frozen=True)
class PLLParameters:
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

    @property
    def error(self):
        """Relative error of the achieved frequency."""
        return (self.f_out - self.f_requested) / self.f_requested

    def as_dict(self):
        """JSON-ready summary (used in the build report)."""
        return {
            "f_in_mhz": self.f_in / 1e6, "f_out_mhz": self.f_out / 1e6,
            "f_requested_mhz": self.f_requested / 1e6, "f_pfd_mhz": self.f_pfd / 1e6,
            "f_vco_mhz": self.f_vco / 1e6, "divr": self.divr, "divf": self.divf,
            "divq": self.divq, "filter_range": self.filter_range, "feedback": "SIMPLE",
        }


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


class ICE40PLL(Elaboratable):
    """``SB_PLL40_PAD`` fed by the clock pad ``pad`` (a port requested with ``dir="-"``),
    driving the ``sync`` domain (global buffer ``PLLOUTGLOBAL``), with ``sync`` in reset until
    ``LOCK`` is high (asynchronous assert, synchronous release).

    ``locked`` (an output :class:`Signal`) mirrors ``LOCK`` for LEDs or debugging.
    """
    def __init__(self, parameters, pad, *, domain="sync"):
        if not isinstance(parameters, PLLParameters):
            raise TypeError(f"parameters must be PLLParameters, not {parameters!r}")
        self.parameters = parameters
        self.pad = pad
        self.domain = domain
        self.locked = Signal()

    def elaborate(self, platform):
        m = Module()
        p = self.parameters
        m.domains.sync = cd = ClockDomain(self.domain)
        clk_out = Signal(name="pll_clk")
        m.d.comb += cd.clk.eq(clk_out)
        m.submodules.pll = Instance("SB_PLL40_PAD",
            p_FEEDBACK_PATH="SIMPLE",
            p_DIVR=p.divr, p_DIVF=p.divf, p_DIVQ=p.divq, p_FILTER_RANGE=p.filter_range,
            i_PACKAGEPIN=self.pad.io,
            i_RESETB=1, i_BYPASS=0,
            o_PLLOUTGLOBAL=clk_out,
            o_LOCK=self.locked,
        )
        m.submodules.reset_sync = ResetSynchronizer(~self.locked, domain=self.domain)
        # No clock constraint here: nextpnr derives the output frequency from the PLL's
        # parameters and the 12 MHz constraint of the clock pad.
        return m
