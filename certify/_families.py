"""Certifiers by student family (:mod:`popdyn.families`): one :class:`Certifier` object per
family, holding every certified operation of that family, and one table of the moment sources
that certify a family against further teacher classes (:class:`MomentSource`).

A family's certify module registers its certifier at import (:mod:`certify.ridge`,
:mod:`certify.skip`, :mod:`certify.swiglu`); :func:`certify.loss`, :func:`certify.alignment`
and :func:`certify.refit_risk` ask :func:`of` for the student's certifier and
:meth:`Certifier.require` for the operation, so they never import the modules that import them
and never test a family's name.  A family with no registered certifier (one defined outside
popdyn, say) gets an empty :class:`Certifier`: every certified operation is refused with one
line, and :func:`certify.loss` falls back to the float64 engine's value (``numerical``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional

from popdyn.family import family_of

from .errors import CertificationError


@dataclass(frozen=True)
class Certifier:
    """The certified operations of one student family (docs/design.md §6).

    Attributes
    ----------
    family : str
        The family's registered name (:func:`popdyn.families.get`).
    loss : callable, optional
        ``loss(student, params, teacher, *, prec[, grad=True]) -> LossBracket``.
    grad : bool
        Whether ``loss`` also takes ``grad=True`` (a certified gradient).
    alignment : callable, optional
        ``alignment(student, params, U, *, prec) -> AlignmentBracket``.
    refit : callable, optional
        ``refit(student, params, teacher) -> build``: checks the arguments it covers and
        returns the builder ``build(student, params, teacher, prec) -> (G, g, V, moments)`` of
        the refit quadratic (:func:`certify.refit_risk`).  The refit kinds are the family's own
        (``student.family.refit_kinds``), as on the float side.
    gated_moments : bool
        Whether the Hermite moments of gated teachers (:mod:`certify.gated`) apply to the
        family's students as they stand (the ridge student form).
    """

    family: str
    loss: Optional[Callable] = None
    grad: bool = False
    alignment: Optional[Callable] = None
    refit: Optional[Callable] = None
    gated_moments: bool = False

    def covers(self, operation: str) -> bool:
        """Whether the family has a certified ``operation`` (one of :data:`OPERATIONS`)."""
        if operation == "grad":
            return self.loss is not None and self.grad
        return getattr(self, OPERATIONS[operation]) is not None

    def require(self, operation: str, student) -> Callable:
        """The callable of ``operation`` ("loss", "grad", "alignment", "refit"), or one
        :class:`CertificationError` line naming the families that have it."""
        fn = getattr(self, OPERATIONS[operation])
        if fn is not None and self.covers(operation):
            return fn
        label = family_of(student).label
        if operation == "grad":
            raise CertificationError(f"the gradient of a {label} student is not certified",
                                     hint="grad=False (the loss), or popdyn.population_grad")
        what, fallback = _REFUSALS[operation]
        raise CertificationError(
            f"certified {what} covers the families {names(operation)}, not {label} students",
            hint=f"use {fallback} for a float64 value")


#: operation -> the :class:`Certifier` field that provides it
OPERATIONS = {"loss": "loss", "grad": "loss", "alignment": "alignment", "refit": "refit"}
_REFUSALS = {"loss": ("loss", "popdyn.population_loss"),
             "alignment": ("AGOP alignment", "popdyn.diagnostics.alignment"),
             "refit": ("refit", "popdyn.diagnostics.refit_risk")}

#: family name -> its :class:`Certifier`
CERTIFIERS: dict = {}


def register(certifier: Certifier) -> Certifier:
    """Register ``certifier`` under its family's name (one call per family); returns it."""
    if not isinstance(certifier, Certifier):
        raise TypeError(f"`certifier` must be a certify._families.Certifier, "
                        f"got {type(certifier).__name__}")
    CERTIFIERS[certifier.family] = certifier
    return certifier


def of(student) -> Certifier:
    """The certifier of ``student``'s family; an empty :class:`Certifier` (every operation
    refused) for a family that registered none.  ``TypeError`` for non-students."""
    name = family_of(student).name
    return CERTIFIERS.get(name) or Certifier(name)


def names(operation: str) -> list:
    """The sorted names of the families with a certified ``operation``."""
    return sorted(n for n, c in CERTIFIERS.items() if c.covers(operation))


class MomentSource(NamedTuple):
    """A module that certifies a family against a further teacher class.

    Attributes
    ----------
    family : str
        The family's registered name.
    teachers : str
        What the source covers, for messages ("gated teachers").
    covers : callable
        ``covers(teacher) -> bool``.
    loss : callable
        ``loss(student, params, teacher, prec) -> LossBracket``.
    refit : callable
        ``refit(student, params, teacher, prec) -> (G, g, V, moments)``.
    """

    family: str
    teachers: str
    covers: Callable
    loss: Callable
    refit: Callable


#: every registered :class:`MomentSource`, in registration order
SOURCES: list = []


def register_source(source: MomentSource) -> MomentSource:
    """Register a (family, teacher class) moment source; returns it."""
    if not isinstance(source, MomentSource):
        raise TypeError(f"`source` must be a certify._families.MomentSource, "
                        f"got {type(source).__name__}")
    SOURCES.append(source)
    return source


def source(family: str, teacher) -> Optional[MomentSource]:
    """The first registered moment source of ``family`` that covers ``teacher``, or None."""
    return next((s for s in SOURCES if s.family == family and s.covers(teacher)), None)
