"""A :class:`~amaranth.lib.wiring.Component` whose parameters are checked before it exists."""

from amaranth.lib import wiring


__all__ = ["CheckedComponent"]


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
