"""utf8-gateware: streaming UTF-8 decoder and encoder cores in Amaranth HDL.

Subpackages:

* :mod:`utf8_gateware.hdl` -- the gateware cores (decoder, encoder, sanitiser).
* :mod:`utf8_gateware.sim` -- the reference model, simulation drivers, compiled simulation.
* :mod:`utf8_gateware.boards` -- the iCEBreaker top level, build/program, host validator.
"""

__version__ = "0.1.0"
