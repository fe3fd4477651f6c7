"""Population loss landscapes: exact Hessians, critical points and their classification.

Scope: relu and leaky-relu students (with or without the learned skip v·x, with or without
the intercept, standard or mean-field scaling) against relu / leaky-relu network teachers:
bias-free students against bias-free teachers by the arc-cosine closed forms, students with
biases (``popdyn.Student(..., bias=True)``), or any PL student against a teacher with biases,
by the truncated bivariate moments of :mod:`popdyn.landscape._biased`; and smooth students
(silu, gelu, tanh, erf; with or without biases, skip, intercept) against network teachers
(relu / leaky-relu / smooth units, any biases) and additive teachers
(:mod:`popdyn.landscape._smooth`: derivative Mehler series with an error estimate and the rtol
contract; :func:`smooth_loss_grad_hessian` takes ``rtol`` and ``full_output``).  Other cases
are refused with a ``ValueError`` saying why (see :func:`supported`).  The finder works in the
reduced coordinates of positively homogeneous units (relu / leaky relu, with or without biases);
:func:`classify` also takes a ``(student, params)`` pair and classifies smooth students from the
full Hessian.

* :func:`loss_grad_hessian`, :func:`hessian`, :func:`spectrum` -- exact L, ∇L, ∇²L from the
  arc-cosine closed forms (:mod:`popdyn.landscape._hessian`, formulas H-1..H-5) or, with
  biases, formulas B-1..B-10 of :mod:`popdyn.landscape._biased`, in the
  flattening order of :class:`Layout` (a, W row-major, b, v, c; fixed parameters omitted);
  :func:`flatten` / :func:`unflatten` convert.
* :func:`reduce`, :class:`Reduced`, :func:`reduced_loss_grad_hessian` -- reduced coordinates
  u_i = |a_i| w_i with the signs of a fixed (positive homogeneity makes the full Hessian singular
  along (a, w) → (a/λ, λw)); vector order U (row-major), v, c.
* :func:`find_critical_points` -- trust-region Newton (``trust-exact``) or Levenberg–Marquardt on
  ∇L = 0 with the exact Hessian from declared starts, Newton polishing, pruning of dead units,
  deduplication up to permutation (:func:`same_point`).
* :func:`classify` -- ``global_min`` / ``strict_local_min`` / ``saddle`` / ``degenerate`` /
  ``not_critical`` with the numbers it rests on (loss, |∇L|, eigenvalues, tolerance, boundary
  derivative of a zero-mass unit, :func:`boundary_derivative`).

References
----------
"Removing spurious minima for planar features by skip connections";
Cho & Saul (2009) arc-cosine kernels; docs/design.md §3, §7.
"""
from ._hessian import (Layout, flatten, hessian, layout, loss_grad_hessian, pl_kernel,
                       relu_kernel, spectrum, supported, unflatten)

__all__ = ["Layout", "flatten", "hessian", "layout", "loss_grad_hessian", "pl_kernel",
           "relu_kernel", "spectrum", "supported", "unflatten"]
from ._smooth import loss_grad_hessian as smooth_loss_grad_hessian  # smooth students (S-1..S-8)

__all__ += ["smooth_loss_grad_hessian"]
from ._critical import (KINDS, METHODS, Classification, CriticalPoint, Reduced,
                        boundary_derivative, classify, find_critical_points, polish, reduce,
                        reduced_loss_grad_hessian, same_point)

__all__ += ["KINDS", "METHODS", "Classification", "CriticalPoint", "Reduced",
            "boundary_derivative", "classify", "find_critical_points", "polish", "reduce",
            "reduced_loss_grad_hessian", "same_point"]
