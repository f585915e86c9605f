"""The virtual board: the board's gateware compiled with CXXRTL, its UART on a pseudo-terminal.

:class:`VirtualBoard` builds (once; cached by :func:`~utf8_gateware.sim.compiled.build_cxxrtl`)
the same :class:`~utf8_gateware.boards.board.BoardCore` that the iCEBreaker bitstream contains,
with the PLL replaced by the simulation clock, runs it in a child process and gives the path of
a pty (:attr:`VirtualBoard.port`) that a host opens with pyserial like a USB-UART. The C++
driver (``virtual_board.cc``) bit-bangs the UART at the simulated baud rate; line utilisation
measured by the board's cycle counters is in simulated time, and does not depend on how fast
the host machine runs the host: while the host process is runnable (computing, or preempted on a
busy machine) and none of its bytes is waiting, simulated time stands still. The bridge can
inject faults on
the line in both directions (:class:`Faults`): bit flips, dropped and inserted bytes, stalls and
resets of the board.
"""

import importlib.resources
import os
import re
import subprocess
import tty

from utf8_gateware.sim import compiled


__all__ = ["VirtualBoardError", "FAULT_KINDS", "Faults", "DRIVER", "build_virtual_board",
           "VirtualBoard"]


#: The pty driver (C++), compiled after the design.
DRIVER = "virtual_board.cc"


class VirtualBoardError(RuntimeError):
    """The virtual board cannot be built or run (one-line message)."""


#: The faults the bridge injects (their bits in the driver's KINDS mask, in this order).
FAULT_KINDS = ("flip", "drop", "insert", "stall", "reset")


class Faults:
    """Faults the bridge injects: ``rate`` faults per byte in each direction (each byte draws
    one of ``kinds``, :data:`FAULT_KINDS`) from a generator seeded with ``seed``; ``reset_at``:
    reset the board once after that many bytes went to it. A ``stall`` pauses one direction of
    the line for a time drawn evenly up to ``stall`` seconds (default :data:`STALL_S`);
    ``reset`` pulses the gateware's reset."""
    #: The longest stall (seconds): what a USB-UART bridge (the iCEBreaker's FT2232H) makes of
    #: a late host. Towards the board the line pauses when the host's next bulk OUT transfer
    #: misses its USB frame (1 ms; the FT2232H's 4 KiB transmit buffer otherwise keeps the
    #: line busy); towards the host the bytes wait in the bridge for its latency timer (1 ms,
    #: Linux's low-latency default for FTDI chips) and the next frame. Up to 2 ms either way,
    #: less than the board's :data:`~utf8_gateware.boards.protocol.FRAME_TIMEOUT_S` (5 ms): a
    #: stalled frame is not dropped.
    STALL_S = 0.002

    def __init__(self, rate=0.0, seed=1, kinds=FAULT_KINDS[:4], reset_at=0, stall=STALL_S):
        if not 0 <= rate < 1:
            raise ValueError(f"the fault rate must be in [0, 1), not {rate!r}")
        unknown = set(kinds) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kind {sorted(unknown)[0]!r} (known: "
                             f"{', '.join(FAULT_KINDS)})")
        if seed < 0 or reset_at < 0:
            raise ValueError("the seed and reset_at must not be negative")
        if not stall > 0:
            raise ValueError(f"the longest stall must be positive, not {stall!r}")
        self.rate, self.seed, self.kinds, self.reset_at = rate, seed, tuple(kinds), reset_at
        self.stall = stall

    @classmethod
    def parse(cls, text, kinds=FAULT_KINDS[:4]):
        """``RATE[,SEED]`` (the ``--inject-faults`` argument)."""
        rate, _, seed = text.partition(",")
        try:
            return cls(float(rate), int(seed) if seed else 1, kinds)
        except ValueError as error:
            detail = str(error) if "rate" in str(error) or "kind" in str(error) else \
                f"expected RATE[,SEED], e.g. 1e-4,7, not {text!r}"
            raise ValueError(detail) from None

    def arguments(self, clk_freq):
        """The driver's fault arguments for a board clocked at ``clk_freq`` Hz."""
        mask = sum(1 << FAULT_KINDS.index(kind) for kind in self.kinds)
        stall = max(1, round(self.stall * clk_freq))
        return [repr(self.rate), str(self.seed), str(mask), str(self.reset_at), str(stall)]


def build_virtual_board(core):
    """Compile ``core`` (a :class:`BoardCore`) with the pty driver; returns the executable path.

    Raises :class:`VirtualBoardError` (no C++ compiler, or a failed step)."""
    if os.name != "posix":
        raise VirtualBoardError("the virtual board needs a POSIX system (pseudo-terminals)")
    driver = (importlib.resources.files(__package__) / DRIVER).read_text()
    try:
        return compiled.build_cxxrtl(core, driver, "virtual-board", top="top")
    except compiled.CompilerNotFoundError as error:
        raise VirtualBoardError(str(error)) from None
    except compiled.CompiledSimError as error:
        raise VirtualBoardError(f"cannot build the virtual board: {error}") from None


def _counts(text):
    """``{name: count}`` of the driver's ``name:count,...``."""
    return {name.decode(): int(count) for name, count in
            (item.split(b":") for item in text.split(b","))}


class VirtualBoard:
    """A running virtual board (a context manager).

    ``core``: the :class:`BoardCore` to run (default: the iCEBreaker's configuration, see
    :func:`~utf8_gateware.boards.icebreaker.board_core`). After :meth:`start`, :attr:`port` is
    the pty path to open with pyserial (any baud rate setting works; the simulated line runs at
    ``core.baud``). ``faults``: :class:`Faults` to inject (default: none). ``host_pid``: the
    process that talks to the board (default: the one that starts it); while it is runnable with
    none of its bytes waiting, simulated time stands still (``None``: time runs freely, whatever
    the host does; so it does where Linux's ``/proc`` is missing). :meth:`stop` ends the
    child process and returns its statistics (``cycles``, ``elapsed_ns``, ``framing_errors``,
    ``faults``: the count of each kind injected, ``stalled``: the cycles of the stalls in each
    direction, ``to_board`` and ``to_host``).
    """
    #: Seconds without progress before a host probes (``Link(retransmit_after=...)``) until it
    #: has measured a round trip (then its timeout follows the round trips): the simulation
    #: runs about 150 times slower than a real board, and the first frames queue behind a
    #: message's first credit (16-32 KiB, several seconds of simulation).
    RETRANSMIT_AFTER = 5.0

    #: ``host_pid``'s default: the process that starts the board.
    STARTER = "starter"

    def __init__(self, core=None, faults=None, executable=None, host_pid=STARTER):
        if core is None:
            from .icebreaker import board_core
            core = board_core()
        self.core = core
        self.faults = faults
        self.executable = executable
        self.host_pid = host_pid
        self.port = None
        self.process = None
        self.stats = None

    @property
    def baud(self):
        return self.core.clk_freq / self.core.divisor

    def start(self):
        executable = self.executable or build_virtual_board(self.core)
        host_pid = os.getpid() if self.host_pid == self.STARTER else self.host_pid or 0
        master, slave = os.openpty()
        try:
            tty.setraw(slave)   # no echo, no line editing, 8-bit clean
            self.port = os.ttyname(slave)
            self.process = subprocess.Popen(
                [str(executable), str(master), str(self.core.divisor), str(host_pid),
                 *(self.faults.arguments(self.core.clk_freq) if self.faults else [])],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=(master, slave), close_fds=True)
        except OSError as error:
            raise VirtualBoardError(f"cannot start the virtual board: {error}") from None
        finally:
            os.close(master)
            os.close(slave)
        return self

    def stop(self, timeout=10):
        if self.process is None:
            return self.stats
        process, self.process = self.process, None
        try:
            out, err = process.communicate(input=b"", timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        match = re.search(rb"cycles=(\d+) elapsed_ns=(\d+) framing_errors=(\d+)", out or b"")
        if match:
            self.stats = {"cycles": int(match.group(1)), "elapsed_ns": int(match.group(2)),
                          "framing_errors": int(match.group(3))}
            injected = re.search(rb"faults=(\S+)", out)
            if injected:
                self.stats["faults"] = _counts(injected.group(1))
            stalled = re.search(rb"stalled=(\S+)", out)
            if stalled:
                self.stats["stalled"] = _counts(stalled.group(1))
        elif process.returncode not in (0, None, -9):
            message = (err or b"").decode(errors="replace").strip().splitlines()
            raise VirtualBoardError("the virtual board failed: " +
                                    (message[-1] if message else f"exit {process.returncode}"))
        return self.stats

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
