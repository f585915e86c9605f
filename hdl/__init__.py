"""The gateware: the UTF-8 cores and what they share.

* :mod:`.decoder`, :mod:`.encoder`, :mod:`.sanitizer` -- the cores, one per module.
* :mod:`.error_kind` -- :class:`~.error_kind.ErrorKind` and the error policies.
* :mod:`.layouts` -- the payload structs of the cores' streams.
* :mod:`.component` -- the base class that checks a core's parameters before it exists.
* :mod:`.synth` -- one core alone through synthesis, placement and routing, and the ceiling.
"""
