"""Diagnostics of Kumar (arXiv 2609.39408) (docs/design.md §5).

* :func:`agop` — the average gradient outer product M = s²Wᵀ(aaᵀ∘B)W;
* :func:`alignment` — A_top, A_min, A_mean and the eigengap of M against a teacher subspace;
  the paper's resolution rule and [0, 1] intervals of unresolved scores (:func:`paper_resolved`,
  :func:`interval_mean`, :func:`gain_interval`), and A_sub (:func:`a_sub`);
* :func:`refit_risk` — frozen-feature refit risks (unrestricted, same-budget, bounded, projected);
* :func:`bounded_refit`, :func:`refit_gain` — the bounded normalized-feature refit of Kumar
  (arXiv 2609.39408), eq. (6), with its lower/upper values, and the conservative gain;
* :func:`neuron_geometry`, :func:`snap_to_axes`, :func:`angle_histogram` — neuron angles;
* :func:`fixed_ball_refits`, :func:`coefficient_form` — refits at several checkpoints in one
  fixed coefficient ball (the paper's "unchanged coefficient budgets");
* :func:`gate_geometry` — SwiGLU gate/value angles and thresholded gate–axis counts;
* :func:`diagnose`, :func:`recorder`, :func:`series`, :func:`at_update`, :func:`checkpoints` —
  all of them at a checkpoint, recorded along a run.
"""
from .agop import agop, agop_from_moments
from .budget import coefficient_form, fixed_ball_refits
from .alignment import (Alignment, a_sub, alignment, gain_interval, interval_mean, paper_resolved,
                        score_interval)
from .gates import GateGeometry, gate_geometry
from .geometry import (NeuronGeometry, angle_histogram, importance, neuron_geometry,
                       snap_to_axes, teacher_frame)
from .record import Diagnostics, at_update, checkpoints, diagnose, recorder, series
from .refit import (KINDS, BoundedProblem, BoundedRefit, Refit, RefitProblem, bounded_problem,
                    bounded_refit, default_caps, refit_gain, refit_problem, refit_risk,
                    solve_ball, solve_bounded, solve_cutoff)

__all__ = [
    "Alignment", "Diagnostics", "GateGeometry", "gate_geometry", "KINDS", "NeuronGeometry", "Refit", "RefitProblem", "agop",
    "agop_from_moments", "alignment", "coefficient_form", "fixed_ball_refits", "angle_histogram", "at_update", "checkpoints", "diagnose",
    "importance", "neuron_geometry", "recorder", "refit_problem", "refit_risk", "series",
    "snap_to_axes", "solve_ball", "solve_cutoff", "teacher_frame",
    "BoundedProblem", "BoundedRefit", "bounded_problem", "bounded_refit", "default_caps",
    "refit_gain", "solve_bounded", "a_sub", "gain_interval", "interval_mean", "paper_resolved",
    "score_interval",
]
