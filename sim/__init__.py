"""Simulation: the reference model, stream drivers, compiled simulation and the engines.

* :mod:`.reference` -- the executable specification of UTF-8 decoding and encoding.
* :mod:`.testbench` -- one stream source, sink and rule checker for every Amaranth simulation.
* :mod:`.compiled` -- cores compiled to C++ with CXXRTL (cached), and their stream driver.
* :mod:`.engines` -- a whole message through the reference, the Python simulator or a compiled
  model, with one call.
"""
