"""Certifiers by student family (:mod:`popdyn.families`): one :class:`Certifier` object per
family, holding every certified operation of that family, and one (family, teacher class) table
of the moment sources that certify a family against further teacher classes
(:class:`MomentSource`: :mod:`certify.pl_smooth` and :mod:`certify.gated` for the ridge family,
:mod:`certify.swiglu_gated` for SwiGLU).

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
    """

    family: str
    loss: Optional[Callable] = None
    grad: bool = False
    alignment: Optional[Callable] = None
    refit: Optional[Callable] = None

    def covers(self, operation: str) -> bool:
        """Whether the family has a certified ``operation`` (one of :data:`OPERATIONS`)."""
        if operation not in OPERATIONS:
            raise ValueError(f"`operation` must be one of {', '.join(map(repr, OPERATIONS))}, "
                             f"got {operation!r}")
        if operation == "grad":
            return self.loss is not None and self.grad
        return getattr(self, OPERATIONS[operation]) is not None

    def require(self, operation: str, student) -> Callable:
        """The callable of ``operation`` ("loss", "grad", "alignment", "refit"), or one
        :class:`CertificationError` line naming the families that have it."""
        if self.covers(operation):
            return getattr(self, OPERATIONS[operation])
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
    """A module that certifies a family against a further teacher class: either the moments
    of the family's own assembly (``moments``; the ridge family's :mod:`certify.pl_smooth` and
    :mod:`certify.gated`) or the loss and refit quadratic outright (``loss``, ``refit``;
    :mod:`certify.swiglu_gated`).

    Attributes
    ----------
    family : str
        The family's registered name.
    teachers : str
        What the source covers, for messages ("gated teachers").
    covers : callable
        ``covers(student, teacher) -> bool``.
    moments : callable, optional
        ``moments(student, params, teacher, *, prec)`` -> the certified-moments record the
        family's assembly reads (:class:`certify.moments.CertifiedMoments` fields).
    loss : callable, optional
        ``loss(student, params, teacher, prec) -> LossBracket``.
    refit : callable, optional
        ``refit(student, params, teacher, prec) -> (G, g, V, moments)``.
    """

    family: str
    teachers: str
    covers: Callable
    moments: Optional[Callable] = None
    loss: Optional[Callable] = None
    refit: Optional[Callable] = None


#: every registered :class:`MomentSource`, in registration order
SOURCES: list = []


def register_source(source: MomentSource) -> MomentSource:
    """Register a (family, teacher class) moment source; returns it."""
    if not isinstance(source, MomentSource):
        raise TypeError(f"`source` must be a certify._families.MomentSource, "
                        f"got {type(source).__name__}")
    SOURCES.append(source)
    return source


def source(student, teacher) -> Optional[MomentSource]:
    """The first moment source registered for ``student``'s family that covers the pair, or
    None (``TypeError`` for non-students)."""
    name = family_of(student).name
    return next((s for s in SOURCES if s.family == name and s.covers(student, teacher)), None)


def has_source(student, moments: Callable) -> bool:
    """Whether ``moments`` is registered as a moment source of ``student``'s family (without
    asking any source's ``covers``)."""
    name = family_of(student).name
    return any(s.family == name and s.moments is moments for s in SOURCES)
