"""A :class:`~amaranth.lib.wiring.Component` whose parameters are checked before it exists."""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .error_kind import check_policy


__all__ = ["CheckedComponent", "StreamStage", "PolicyStage", "EncodingStage", "in_a_row",
           "READY_COPIES", "READY_LOADS", "share_ready", "ready_source", "drive_ready"]


#: The copies of a stage's ``i.ready`` that it drives for the stage before it
#: (:func:`share_ready`).
READY_COPIES = 3

#: The control flip-flops of the stage before that read one copy (:func:`ready_source`).
READY_LOADS = 4


class CheckedComponent(wiring.Component):
    """Base class of the project's components that take parameters.

    A subclass defines ``check_parameters`` as a class method with the same parameters as its
    ``__init__``; it raises :class:`TypeError` or :class:`ValueError` with a one-line message
    that names the parameter and what it may be. It runs before the object is created, so a bad
    parameter raises its error and nothing else: no half-built elaboratable is left behind for
    Amaranth to warn about ("created but never used").

    The parameters that ``__init__`` then receives are known to be good.
    """

    def __new__(cls, *args, src_loc_at=0, **kwargs):
        cls.check_parameters(*args, **kwargs)
        return super().__new__(cls, *args, src_loc_at=src_loc_at + 1, **kwargs)

    @classmethod
    def check_parameters(cls, *args, **kwargs):
        """Raise :class:`TypeError` / :class:`ValueError` if the parameters are not valid."""


class StreamStage(CheckedComponent):
    """Base class of a stage with one input stream ``i`` and one output stream ``o``, whose
    payload layouts the subclass gives in ``LAYOUTS`` (a pair: input, output)."""

    LAYOUTS = None

    #: Whether the stage drives :attr:`i_readies` (flip-flop copies of ``i.ready``).
    DRIVES_READIES = False

    #: Whether the stage reads :attr:`o_readies` instead of ``o.ready``.
    USES_READIES = False

    def __init__(self):
        i_layout, o_layout = self.LAYOUTS
        super().__init__({
            "i": In(stream.Signature(i_layout)),
            "o": Out(stream.Signature(o_layout)),
        })
        #: Signals that the stage drives, each a flip-flop equal to ``i.ready`` in every cycle
        #: (given by :func:`share_ready`; none by default).
        self.i_readies = ()
        #: Signals equal to ``o.ready`` in every cycle (the next stage's :attr:`i_readies`),
        #: which the stage reads instead of ``o.ready`` (none by default: ``o.ready``).
        self.o_readies = ()


class PolicyStage(StreamStage):
    """A :class:`StreamStage` with an error policy: the ``errors`` parameter, one of the
    subclass's ``POLICIES`` (checked before construction)."""

    POLICIES = ()

    @classmethod
    def check_parameters(cls, errors="replace"):
        check_policy(errors, cls.POLICIES)

    def __init__(self, errors="replace"):
        self._errors = errors
        super().__init__()

    @property
    def errors(self):
        """The error policy."""
        return self._errors


class EncodingStage(StreamStage):
    """A :class:`StreamStage` for an encoding chosen by name: the ``encoding`` and ``errors``
    parameters (the subclass's ``check_parameters`` checks them)."""

    def __init__(self, encoding="utf-8", errors="replace"):
        self._encoding, self._errors = encoding, errors
        super().__init__()

    @property
    def encoding(self):
        return self._encoding

    @property
    def errors(self):
        return self._errors


def in_a_row(stages, outer):
    """A module in which ``stages`` (components with streams ``i`` and ``o``) are submodules
    connected in a row, from ``outer.i`` to ``outer.o``."""
    m = Module()
    for index, stage in enumerate(stages):
        m.submodules[f"stage{index}"] = stage
    wiring.connect(m, wiring.flipped(outer.i), stages[0].i)
    for before, after in zip(stages, stages[1:]):
        wiring.connect(m, before.o, after.i)
        share_ready(before, after)
    wiring.connect(m, stages[-1].o, wiring.flipped(outer.o))
    return m


def share_ready(before, after):
    """Where ``after`` takes ``before.o`` on its ``i`` and both can (``after.DRIVES_READIES``,
    ``before.USES_READIES``), :data:`READY_COPIES` flip-flop copies of ``after``'s ``i.ready``
    that ``before`` reads instead of ``o.ready`` (:func:`ready_source`): the ready path crosses
    on several short routes instead of one net of a dozen loads. Call before elaboration."""
    if getattr(after, "DRIVES_READIES", False) and getattr(before, "USES_READIES", False):
        copies = tuple(Signal(name=f"ready_copy{n}") for n in range(READY_COPIES))
        after.i_readies = before.o_readies = copies


def ready_source(stage):
    """A function that gives, each time it is called, the signal a control flip-flop of
    ``stage`` reads as ``o.ready``: the copies of :attr:`StreamStage.o_readies` in turn,
    :data:`READY_LOADS` calls each (so neighbouring flip-flops share a copy), or ``o.ready``."""
    readies = tuple(stage.o_readies) or (stage.o.ready,)
    calls = []

    def ready():
        calls.append(None)
        return readies[(len(calls) - 1) // READY_LOADS % len(readies)]
    return ready


def drive_ready(m, stage, enables):
    """Drive ``stage.i.ready`` with a new copy of ``enables`` (an
    :class:`~.utf8_shift_encoder.EnableCopies` of the stage's input enable), and each of
    :attr:`StreamStage.i_readies` (given by :func:`share_ready`) with one more."""
    m.d.comb += stage.i.ready.eq(enables.new())
    for copy in stage.i_readies:
        enables.new(copy)
