"""The ridge family's certifier (relu, leaky relu and the smooth activations; :mod:`popdyn`'s
``Student``): its loss and gradient (:mod:`certify.loss`), AGOP alignment
(:mod:`certify.alignment`) and refit (:mod:`certify.refit`) registered as one
:class:`certify._families.Certifier`, which also takes the gated-teacher moments of
:mod:`certify.gated` (docs/design.md §6).
"""
from __future__ import annotations

from popdyn.families.ridge import RIDGE as _RIDGE_SPEC

from . import _families
from .alignment import _ridge_alignment
from .loss import _ridge_family_loss
from .refit import ridge_refit

__all__ = ["RIDGE"]

#: the ridge family's certifier
RIDGE = _families.register(_families.Certifier(
    _RIDGE_SPEC.name, loss=_ridge_family_loss, grad=True, alignment=_ridge_alignment,
    refit=ridge_refit, gated_moments=True))
