"""The ridge family's certifier (relu, leaky relu and the smooth activations; :mod:`popdyn`'s
``Student``): its loss and gradient (:mod:`certify.loss`), AGOP alignment
(:mod:`certify.alignment`) and refit (:mod:`certify.refit`) registered as one
:class:`certify._families.Certifier`, and its moment sources (:mod:`certify.pl_smooth`,
:mod:`certify.gated`) in the (family, teacher class) table (docs/design.md §6).
"""
from __future__ import annotations

from popdyn.families.ridge import RIDGE as _RIDGE_SPEC

from . import _families, gated, pl_smooth
from .alignment import _ridge_alignment
from .loss import _ridge_family_loss
from .refit import ridge_refit

__all__ = ["GATED", "PL_SMOOTH", "RIDGE"]

#: the ridge family's certifier
RIDGE = _families.register(_families.Certifier(
    _RIDGE_SPEC.name, loss=_ridge_family_loss, grad=True, alignment=_ridge_alignment,
    refit=ridge_refit))

#: the ridge family's moment sources beyond :func:`certify.moments.certified_moments`: PL
#: students against smooth teacher networks, and gated teachers
PL_SMOOTH = _families.register_source(_families.MomentSource(
    _RIDGE_SPEC.name, "smooth teacher networks", pl_smooth.covers,
    moments=pl_smooth.pl_smooth_moments))
GATED = _families.register_source(_families.MomentSource(
    _RIDGE_SPEC.name, "gated teachers", gated.covers, moments=gated.gated_moments))
