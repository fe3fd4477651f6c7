"""popdyn: exact population gradient dynamics of two-layer networks on Gaussian inputs.

Public API (see README.md): :class:`Student`, :class:`Params`, :class:`SwiGLUStudent`,
:class:`SwiGLUParams`, :class:`Teacher` (additive, network, gated, multi-index),
:func:`population_loss`, :func:`population_grad`, :func:`train`, :class:`Trajectory`,
:class:`Schedule`, :func:`plateau`; diagnostics :func:`agop`, :func:`alignment`,
:func:`refit_risk` (more in :mod:`popdyn.diagnostics`); :class:`AccuracyWarning` (the float
engine's ``rtol`` contract, :mod:`popdyn.accuracy`).
"""
from . import families, family, finite, gauge, skip, threads
from .accuracy import AccuracyWarning
from .activations import ACTIVATIONS
from .diagnostics import agop, alignment, refit_risk
from .dynamics import Schedule, Trajectory, train
from .models import Params, Student
from .objective import fit_intercept, loss_and_grad, population_grad, population_loss
from .plateau import Plateau, plateau, shared_prefix
from .swiglu import SwiGLUParams, SwiGLUStudent
from .teachers import Teacher

__version__ = "0.8.0"

__all__ = [
    "ACTIVATIONS", "AccuracyWarning", "Params", "agop", "alignment", "refit_risk", "Plateau", "Schedule", "Student", "SwiGLUParams", "SwiGLUStudent", "Teacher", "Trajectory",
    "fit_intercept", "loss_and_grad", "plateau", "population_grad", "population_loss",
    "shared_prefix", "train", "__version__",
]
