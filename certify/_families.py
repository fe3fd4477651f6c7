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


def register(name: str, *, loss=None, alignment=None) -> None:
    """Register the certifiers of the student family ``name``."""
    if loss is not None:
        LOSS[name] = loss
    if alignment is not None:
        ALIGNMENT[name] = alignment
