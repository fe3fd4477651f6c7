"""Certifiers by student family (:mod:`popdyn.family`): which module brackets the loss and the
AGOP alignment of a family other than the ridge family that :mod:`certify.loss` and
:mod:`certify.alignment` treat themselves.

A family's certify module registers its functions here at import (one line each;
:mod:`certify.swiglu` for ``swiglu``); :func:`certify.loss` and :func:`certify.alignment` look the
student's ``family.name`` up, so they never import the modules that import them.
"""
from __future__ import annotations

#: family name -> loss(student, params, teacher, *, prec) -> LossBracket
LOSS: dict = {}
#: family name -> alignment(student, params, U, *, prec) -> AlignmentBracket
ALIGNMENT: dict = {}
#: families whose ``LOSS`` entry also takes ``grad=True`` (a certified gradient)
GRAD: set = set()
#: family name -> refit(student, params, teacher, prec, *, base) -> (G, g, V, moments): the
#: refit quadratic, given the ridge builder ``base`` that :mod:`certify.refit` chose
REFIT: dict = {}


def register(name: str, *, loss=None, alignment=None, grad: bool = False, refit=None) -> None:
    """Register the certifiers of the student family ``name``."""
    if loss is not None:
        LOSS[name] = loss
        if grad:
            GRAD.add(name)
    if alignment is not None:
        ALIGNMENT[name] = alignment
    if refit is not None:
        REFIT[name] = refit
