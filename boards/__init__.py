"""The iCEBreaker board: the cores behind a UART with a framed, credit-based protocol.

* :mod:`.pll` -- iCE40 PLL parameters (range-checked) and the PLL + reset of the ``sync`` domain.
* :mod:`.uart` -- 8N1 UART receiver and transmitter with stream ports.
* :mod:`.buffer` -- byte ring buffers in single-port RAM (UP5K SPRAM on hardware).
* :mod:`.protocol` -- the frame format, credits and modes; the host-side codec.
* :mod:`.datapath` -- the cores wired per mode (transcode, decode, encode, validate).
* :mod:`.board` -- :class:`~.board.BoardCore`: protocol engine + buffers + datapath + LEDs.
* :mod:`.icebreaker` -- the top level for ``amaranth_boards``' iCEBreaker; build and program.
* :mod:`.virtual` -- the virtual board: BoardCore compiled with CXXRTL behind a pseudo-terminal.
* :mod:`.host` -- the host side: send a message, check the output against the reference model.
"""
