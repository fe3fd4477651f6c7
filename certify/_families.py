"""Certifiers by student family (:mod:`popdyn.family`): which module brackets the loss and the
AGOP alignment of a family other than the ridge family that :mod:`certify.loss` and
:mod:`certify.alignment` treat themselves.

A family's certify module registers its functions here at import (one line each;
:mod:`certify.swiglu` for ``swiglu``); :func:`certify.loss` and :func:`certify.alignment` look the
student's ``family.name`` up, so they never import the modules that import them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

#: family name -> loss(student, params, teacher, *, prec) -> LossBracket
LOSS: dict = {}
#: family name -> alignment(student, params, U, *, prec) -> AlignmentBracket
ALIGNMENT: dict = {}
#: families whose ``LOSS`` entry also takes ``grad=True`` (a certified gradient)
GRAD: set = set()
#: family name -> RefitEntry: how :func:`certify.refit_risk` builds the refit quadratic
#: (G, g, V, moments) of that family
REFIT: dict = {}


@dataclass(frozen=True)
class RefitEntry:
    """A family's certified refit builder.

    Attributes
    ----------
    build : callable
        ``build(student, params, teacher, prec) -> (G, g, V, moments)`` when ``standalone``;
        otherwise ``build(student, params, teacher, prec, *, base)``, given the ridge builder
        ``base`` that :mod:`certify.refit` chose for the teacher (the family extends the ridge
        problem, as the skip family does).
    standalone : bool
        True when the family checks its own arguments and covers its own teachers (SwiGLU);
        the ridge checks and coverage rules of :mod:`certify.refit` are then not applied.

    The refit kinds are the family's own (``student.family.refit_kinds``), as on the float side.
    """

    build: Callable
    standalone: bool = False


def register(name: str, *, loss=None, alignment=None, grad: bool = False, refit=None,
             refit_standalone: bool = False) -> None:
    """Register the certifiers of the student family ``name`` (see :class:`RefitEntry` for
    ``refit`` and ``refit_standalone``)."""
    if loss is not None:
        LOSS[name] = loss
        if grad:
            GRAD.add(name)
    if alignment is not None:
        ALIGNMENT[name] = alignment
    if refit is not None:
        REFIT[name] = RefitEntry(refit, bool(refit_standalone))
