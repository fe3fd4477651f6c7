"""SwiGLU gate and value geometry relative to the teacher subspace (docs/design.md §5; Kumar (arXiv
2609.39408), Figures 4, 18, 19).

For gate g_j, value v_j and the teacher subspace S (orthonormal rows, projector P) with unit
teacher axes u_1, …, u_k:

* squared cosines to the subspace  c_j = ‖P g_j‖²/‖g_j‖²  (and the same for v_j);
* *effective angles* from saved scalar summaries of these squared cosines: the weighted score
  Σ_j w_j c_j / Σ_j w_j with neuron weight w_j = |a_j|·‖g_j‖·‖v_j‖ (the neuron's output scale,
  since SiLU(g·x)(v·x) is of order ‖g‖‖v‖ for small gates), and the median score
  median_j c_j (unweighted); an effective angle is arccos(√score) in degrees;
* the angle of each gate to its nearest teacher axis, arccos(max_k |u_k·g_j|/‖g_j‖) (the full
  angle, not the projected one), the fraction of gates within ``threshold`` degrees (default
  25.8°, the paper's threshold) of some axis, and the fraction of axes u_k that have at least one
  gate within the threshold ("axes covered").

Zero gates (or values) have undefined angles: they get NaN, carry no weight and count as not
near any axis; fractions are over all m gates and all k axes.  These are our reading of the
paper's equations (29)–(30); the definitions above are what is computed.

References
----------
Kumar (arXiv 2609.39408), Figure 4 rows four and five,
Figures 18–19 ("effective gate angles obtained from weighted and median squared-cosine scores",
"fraction of gates within 25.8° of a teacher axis and the fraction of axes covered").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as V
from ..swiglu import SwiGLUBiasParams, SwiGLUParams
from .geometry import _check_axes, teacher_frame

THRESHOLD = 25.8


@dataclass(frozen=True)
class GateGeometry:
    """Gate/value geometry of a SwiGLU state (module docstring).

    Attributes
    ----------
    gate_cos2, value_cos2 : ndarray (m,)
        Squared cosines of g_j, v_j to the teacher subspace (NaN for zero rows).
    gate_axis_angle : ndarray (m,)
        Angle (degrees) of g_j to its nearest teacher axis ±u_k (NaN for g_j = 0).
    gate_axis : ndarray of int (m,)
        Index of that axis (−1 if undefined).
    weights : ndarray (m,)
        |a_j|·‖g_j‖·‖v_j‖.
    gate_weighted_angle, gate_median_angle, value_weighted_angle, value_median_angle : float
        Effective angles (degrees) from the weighted and median squared-cosine scores.
    frac_gates_near_axis, frac_axes_covered : float
        Thresholded gate–axis counts.
    threshold : float
        The threshold angle in degrees.
    """

    gate_cos2: np.ndarray
    value_cos2: np.ndarray
    gate_axis_angle: np.ndarray
    gate_axis: np.ndarray
    weights: np.ndarray
    gate_weighted_angle: float
    gate_median_angle: float
    value_weighted_angle: float
    value_median_angle: float
    frac_gates_near_axis: float
    frac_axes_covered: float
    threshold: float

    def as_dict(self) -> dict:
        """Scalars only (for recorders)."""
        return {"gate_weighted_angle": self.gate_weighted_angle,
                "gate_median_angle": self.gate_median_angle,
                "value_weighted_angle": self.value_weighted_angle,
                "value_median_angle": self.value_median_angle,
                "frac_gates_near_axis": self.frac_gates_near_axis,
                "frac_axes_covered": self.frac_axes_covered}


def _cos2(X, S):
    n2 = np.einsum("ij,ij->i", X, X)
    p = X @ S.T
    out = np.full(X.shape[0], np.nan)
    ok = n2 > 0
    out[ok] = np.minimum(np.einsum("ij,ij->i", p[ok], p[ok]) / n2[ok], 1.0)
    return out


def _angle(score: float) -> float:
    if not np.isfinite(score):
        return float("nan")
    return float(np.degrees(np.arccos(np.sqrt(min(max(score, 0.0), 1.0)))))


def _scores(c2, w):
    ok = np.isfinite(c2)
    ww = w[ok]
    tot = float(ww.sum())
    weighted = float(np.sum(ww * c2[ok]) / tot) if tot > 0 else float("nan")
    median = float(np.median(c2[ok])) if np.any(ok) else float("nan")
    return _angle(weighted), _angle(median)


def gate_geometry(params, U, *, threshold: float = THRESHOLD, axes=None) -> GateGeometry:
    """Gate and value angles of a SwiGLU state to the teacher subspace and axes.

    Parameters
    ----------
    params : SwiGLUParams or SwiGLUBiasParams
        A SwiGLU state; for the biased student (Kumar (arXiv 2609.39408) eq. (71)) the
        geometry is that of the spatial gate and value rows g_j, v_j (the biases b_j, c_j do
        not enter the angles; the weight is |a_j|·‖g_j‖·‖v_j‖ as without biases).
    U : array_like (r, d) or Teacher
        Teacher subspace (orthonormal rows) or a teacher (its ``subspace`` and unit directions).
    threshold : float
        Gate–axis threshold angle in degrees, in (0, 90] (default 25.8°, the paper's).
    axes : array_like (k, d), optional
        Unit teacher axes inside span U (default: the rows of U / the teacher's directions).

    Returns
    -------
    GateGeometry

    Examples
    --------
    >>> import numpy as np, popdyn
    >>> from popdyn.diagnostics import gate_geometry
    >>> p = popdyn.SwiGLUParams([1.0, 1.0], [[1.0, 0.1, 0.0], [0.0, 0.0, 1.0]],
    ...                         [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    >>> g = gate_geometry(p, np.eye(3)[:1])
    >>> g.frac_gates_near_axis, g.frac_axes_covered
    (0.5, 1.0)
    """
    if not isinstance(params, (SwiGLUParams, SwiGLUBiasParams)):
        raise TypeError(f"`params` must be a popdyn.SwiGLUParams or popdyn.swiglu.SwiGLUBiasParams,"
                        f" got {type(params).__name__}")
    threshold = V.real("threshold", threshold, positive=True)
    if threshold > 90:
        raise ValueError(f"`threshold` must be in (0, 90] degrees, got {threshold!r}")
    G, Vv = params.G, params.V
    S, ax = teacher_frame(U, G.shape[1])
    if axes is not None:
        ax = _check_axes(axes, S)
    gc2 = _cos2(G, S)
    vc2 = _cos2(Vv, S)
    ng = np.linalg.norm(G, axis=1)
    w = np.abs(params.a) * ng * np.linalg.norm(Vv, axis=1)
    gw, gm = _scores(gc2, w)
    vw, vm = _scores(vc2, w)
    proj = np.abs(G @ ax.T)                                   # (m, k)
    k = np.argmax(proj, axis=1)
    ang = np.full(G.shape[0], np.nan)
    ok = ng > 0
    ang[ok] = np.degrees(np.arccos(np.clip(proj[ok, k[ok]] / ng[ok], 0.0, 1.0)))
    near = ok & (ang <= threshold)
    covered = np.zeros(ax.shape[0], bool)
    if np.any(ok):
        angk = np.degrees(np.arccos(np.clip(proj[ok] / ng[ok, None], 0.0, 1.0)))   # (m_ok, k)
        covered = np.any(angk <= threshold, axis=0)
    return GateGeometry(gc2, vc2, ang, np.where(ok, k, -1).astype(np.int64), w, gw, gm, vw, vm,
                        float(np.mean(near)), float(np.mean(covered)), threshold)
