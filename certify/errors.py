"""Errors of the certified layer.

``CertificationError`` is raised when an enclosure cannot be produced at the requested
precision (it says what to try); ``Undecided`` when a comparison between brackets is asked for
a definite answer that the brackets cannot give (STYLE item 7: never a falsy "maybe").
"""
from __future__ import annotations

__all__ = ["CertificationError", "Undecided"]


class CertificationError(ArithmeticError):
    """An enclosure could not be certified.

    The message always says what to try (a higher ``prec``, a finer step, another kind).
    ``hint`` holds that advice separately for programs.
    """

    def __init__(self, message: str, *, hint: str = "") -> None:
        self.hint = hint
        super().__init__(message if not hint else f"{message} -- try: {hint}")


class Undecided(ArithmeticError):
    """A comparison of brackets cannot be decided (the brackets overlap).

    Use :meth:`certify.Bracket.certainly_lt` / :meth:`certify.Bracket.possibly_lt` when a
    three-way answer is wanted; this exception is for code that needs a definite one.
    """
