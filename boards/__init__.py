"""The iCEBreaker board: the cores behind a UART with a framed, credit-based protocol.

* :mod:`.pll` -- iCE40 PLL parameters (range-checked) and the PLL + reset of the ``sync`` domain.
* :mod:`.uart` -- 8N1 UART receiver and transmitter with stream ports.
* :mod:`.protocol` -- the frame format, credits and modes as enums and tables; the host codec.
* :mod:`.frame_rx`, :mod:`.frame_tx` -- the frame receiver and transmitter.
* :mod:`.replies` -- the payloads of the board's own frames (HELLO_ACK, CREDIT, STATUS, ERROR).
* :mod:`.control` -- the message state and the choice of the next frame to send.
* :mod:`.credit` -- the input credit and the output window.
* :mod:`.stamps` -- board time: a message's cycle counter and stamps.
* :mod:`.leds` -- events stretched into LED blinks.
* :mod:`.buffer` -- byte ring buffers in single-port RAM (UP5K SPRAM on hardware).
* :mod:`.feeder` -- input buffer -> datapath, with ``last`` on the message's final byte.
* :mod:`.stream_fifo` -- a SyncFIFO with stream ports of any shape.
* :mod:`.datapath` -- the cores wired per mode (transcode, decode, encode, validate, to-utf16,
  from-utf16).
* :mod:`.board` -- :class:`~.board.BoardCore`: all of the above composed.
* :mod:`.icebreaker` -- the top level for ``amaranth_boards``' iCEBreaker; build and program.
* :mod:`.virtual` -- the virtual board: BoardCore compiled with CXXRTL behind a pseudo-terminal.
* :mod:`.host` -- the host side: send a message, check the output against the reference model.
"""
