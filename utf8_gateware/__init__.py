"""utf8-gateware: streaming UTF-8 decoder and encoder cores in Amaranth HDL.

The package and the folders of the source tree (``pyproject.toml`` maps each subpackage to the
top-level folder of the same name):

* :mod:`utf8_gateware` (``utf8_gateware/``): this root: the version, the command line
  (:mod:`utf8_gateware.cli`), the external tools (:mod:`utf8_gateware.toolchain`), the sample.
* :mod:`utf8_gateware.hdl` (``hdl/``): the gateware cores, their payload layouts, synthesis.
* :mod:`utf8_gateware.sim` (``sim/``): the reference model, the stream drivers, the compiled
  simulation and the engines behind ``decode`` and ``encode``.
* :mod:`utf8_gateware.formal` (``formal/``): the specification models and the formal proofs.
* :mod:`utf8_gateware.boards` (``boards/``): the iCEBreaker board (top level, protocol, host
  side, virtual board).

Imports between these folders are absolute (``from utf8_gateware.sim import reference``);
imports within a folder are relative.
"""

__version__ = "0.1.0"
