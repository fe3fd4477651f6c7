"""Neuron geometry relative to the teacher subspace (docs/design.md §5; Kumar (arXiv 2609.39408),
Figures 1, 2, 14).

For neuron j with first-layer weight w_j, the teacher subspace S (orthonormal rows spanning
span U) and the teacher axes u_1, …, u_k (unit vectors in span U):

* angle to the subspace: ∠(w_j, span U) = atan2(‖(I − P)w_j‖, ‖P w_j‖) ∈ [0°, 90°];
* projected nearest-axis angle: the angle between the in-subspace component P w_j and its
  nearest axis ±u_k (largest |u_k·P w_j|) ∈ [0°, arccos(1/√r)] for r orthonormal axes (the
  geometric limit; hatched in the paper's heatmaps);
* at r = 2 with orthonormal axes, the plane angle atan2(|u_2·w_j|, |u_1·w_j|) ∈ [0°, 90°]
  (0° and 90° are the two axes; Figure 1 bottom row);
* importance |a_j|·‖(w_j, b_j)‖ (docs/design.md §2), and importance-weighted 5° histograms
normalized
  per seed (each seed's histogram sums to 1).

Angles are in degrees; undefined angles (w_j = 0, or P w_j = 0 for axis angles) are NaN and
carry no weight in histograms.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as V
from ..models import Params
from ..teachers import Teacher
from .alignment import check_subspace


def teacher_frame(U, d: int | None = None):
    """(S, axes): an orthonormal basis S (r, d) of the teacher subspace and the unit teacher axes.

    ``U`` is a :class:`popdyn.Teacher` (S = ``teacher.subspace``; axes = its unit directions
    ``teacher.theta``) or an array of orthonormal rows (S = axes = U).
    """
    if isinstance(U, Teacher):
        if d is not None and U.d != d:
            raise ValueError(f"`teacher` has input dimension {U.d}, expected d = {d}")
        S = U.subspace
        axes = U.theta[U.alpha > 0]
        return np.ascontiguousarray(S), np.ascontiguousarray(axes)
    S = check_subspace(U, d)
    return S, S


def _weights(W, name="W"):
    W = V.array(name, W, (None, None))
    return W


def snap_to_axes(W, U, axes=None) -> np.ndarray:
    """Replace each row's teacher-subspace component by its nearest teacher axis.

    w_j = P w_j + (I − P) w_j becomes sign(u_k·w_j)‖P w_j‖ u_k + (I − P) w_j with k maximizing
    |u_k·P w_j| (ties: the smallest k; sign(0) = +1).  Rows with P w_j = 0 are unchanged.  The
    norm of every row, its out-of-subspace component (and, in the refit, its bias) are kept.

    Parameters
    ----------
    W : array_like (m, d)
    U : array_like (r, d) or Teacher
        Orthonormal rows spanning the teacher subspace (or a teacher; see :func:`teacher_frame`).
    axes : array_like (k, d), optional
        Unit axes inside span U (default: the rows of U, or the teacher's directions).

    References
    ----------
    Kumar (arXiv 2609.39408), Figure 1 row four ("projects each weight's teacher-plane component onto its
    nearest axis …, retaining outside-plane components and biases, then refits"); docs/design.md §5.
    """
    W = _weights(W)
    S, ax = teacher_frame(U, W.shape[1])
    if axes is not None:
        ax = _check_axes(axes, S)
    Pw = (W @ S.T) @ S
    out = W - Pw
    scores = Pw @ ax.T                                   # (m, k)
    k = np.argmax(np.abs(scores), axis=1)
    sc = scores[np.arange(W.shape[0]), k]
    sign = np.where(sc < 0, -1.0, 1.0)
    nP = np.linalg.norm(Pw, axis=1)
    snapped = out + (sign * nP)[:, None] * ax[k]
    return np.where((nP > 0)[:, None], snapped, W)


def _check_axes(axes, S):
    ax = V.array("axes", axes, (None, S.shape[1]))
    n = np.linalg.norm(ax, axis=1)
    if ax.shape[0] == 0 or np.any(np.abs(n - 1) > 1e-10):
        raise ValueError("`axes` must be non-empty unit rows")
    if np.max(np.abs(ax - (ax @ S.T) @ S)) > 1e-10:
        raise ValueError("`axes` must lie in the teacher subspace")
    return ax


@dataclass(frozen=True)
class NeuronGeometry:
    """Per-neuron angles (degrees) and importances; see the module docstring.

    Attributes
    ----------
    subspace_angle : ndarray (m,)
        Angle of w_j to span U (NaN for w_j = 0).
    axis_angle : ndarray (m,)
        Angle of P w_j to its nearest teacher axis (NaN if P w_j = 0).
    axis : ndarray of int (m,)
        Index of that axis (−1 if undefined).
    plane_angle : ndarray (m,) or None
        atan2(|u_2·w_j|, |u_1·w_j|) for r = 2 orthonormal axes, else None.
    importance : ndarray (m,)
        |a_j|·sqrt(|w_j|² + b_j²).
    axis_limit : float
        arccos(1/√r) in degrees: the largest possible nearest-axis angle for r orthonormal axes.
    """

    subspace_angle: np.ndarray
    axis_angle: np.ndarray
    axis: np.ndarray
    plane_angle: np.ndarray | None
    importance: np.ndarray
    axis_limit: float

    def histogram(self, which: str = "subspace", *, width: float = 5.0):
        """Importance-weighted histogram (sums to 1) of ``subspace``, ``axis`` or ``plane`` angles.

        Returns ``(weights, edges)`` with bins [0, width), …, [90 − width, 90].
        """
        V.choice("which", which, ("subspace", "axis", "plane"))
        ang = {"subspace": self.subspace_angle, "axis": self.axis_angle,
               "plane": self.plane_angle}[which]
        if ang is None:
            raise ValueError("`which='plane'` needs a rank-2 teacher with orthonormal axes")
        return angle_histogram(ang, self.importance, width=width)

    def weighted_mean(self, which: str = "subspace") -> float:
        """Importance-weighted mean angle (NaN if no neuron carries weight)."""
        V.choice("which", which, ("subspace", "axis", "plane"))
        ang = {"subspace": self.subspace_angle, "axis": self.axis_angle,
               "plane": self.plane_angle}[which]
        if ang is None:
            raise ValueError("`which='plane'` needs a rank-2 teacher with orthonormal axes")
        ok = np.isfinite(ang)
        w = self.importance[ok]
        tot = float(np.sum(w))
        return float(np.sum(w * ang[ok]) / tot) if tot > 0 else float("nan")


def _orthonormal_pair(ax: np.ndarray) -> bool:
    """``np.allclose(ax @ ax.T, np.eye(2), atol=1e-10)`` for two finite axes: the same test
    |G − I| ≤ atol + rtol·|I| entrywise (rtol = 1e−5), without allclose's overhead."""
    eye = np.eye(2)
    return bool(np.all(np.abs(ax @ ax.T - eye) <= 1e-10 + 1e-5 * np.abs(eye)))


def importance(params) -> np.ndarray:
    """|a_j|·sqrt(|w_j|² + b_j²) (docs/design.md §2)."""
    return np.abs(params.a) * np.sqrt(np.einsum("ij,ij->i", params.W, params.W) + params.b ** 2)


def neuron_geometry(params, U, *, axes=None) -> NeuronGeometry:
    """Angles of every neuron to the teacher subspace and to the nearest teacher axis.

    Parameters
    ----------
    params : Params
    U : array_like (r, d) or Teacher
        Teacher subspace (orthonormal rows) or a teacher (its ``subspace`` and directions).
    axes : array_like (k, d), optional
        Unit axes inside span U (default: the rows of U / the teacher's directions).

    References
    ----------
    Kumar (arXiv 2609.39408), Figure 2 rows four and five, Figure 14 (importance-weighted histograms);
    docs/design.md §5.
    """
    if not isinstance(params, Params):
        raise TypeError(f"`params` must be a popdyn.Params, got {type(params).__name__}")
    S, ax = teacher_frame(U, params.W.shape[1])
    if axes is not None:
        ax = _check_axes(axes, S)
    return _neuron_geometry(params, S, ax)


def _neuron_geometry(params, S: np.ndarray, ax: np.ndarray) -> NeuronGeometry:
    """:func:`neuron_geometry` with a checked frame (S, axes) (no input checks)."""
    W = params.W
    r = S.shape[0]
    coords = W @ S.T
    Pw = coords @ S
    Qw = W - Pw
    nP = np.linalg.norm(Pw, axis=1)
    nQ = np.linalg.norm(Qw, axis=1)
    nW = np.linalg.norm(W, axis=1)
    sub = np.degrees(np.arctan2(nQ, nP))
    sub[nW == 0] = np.nan
    scores = Pw @ ax.T
    k = np.argmax(np.abs(scores), axis=1)
    sc = scores[np.arange(W.shape[0]), k]
    res = np.linalg.norm(Pw - sc[:, None] * ax[k], axis=1)
    axang = np.degrees(np.arctan2(res, np.abs(sc)))
    undefined = nP == 0
    axang[undefined] = np.nan
    k = np.where(undefined, -1, k)
    plane = None
    if r == 2 and ax.shape[0] == 2 and _orthonormal_pair(ax):
        p = Pw @ ax.T
        plane = np.degrees(np.arctan2(np.abs(p[:, 1]), np.abs(p[:, 0])))
        plane[undefined] = np.nan
    limit = float(np.degrees(np.arccos(1.0 / np.sqrt(r))))
    return NeuronGeometry(sub, axang, k.astype(np.int64), plane, importance(params), limit)


def angle_histogram(angles, weights=None, *, width: float = 5.0, upper: float = 90.0):
    """Weighted histogram of angles (degrees) on [0, upper] in bins of ``width``, summing to 1.

    NaN angles are ignored.  If no finite angle carries positive weight the histogram is all
    NaN (undefined, not zero: averages over seeds should skip it).

    Returns
    -------
    hist : ndarray (nbins,)
    edges : ndarray (nbins + 1,)
    """
    ang = V.array("angles", angles, (None,), finite=False)
    w = np.ones_like(ang) if weights is None else V.array("weights", weights, (ang.shape[0],))
    if np.any(w < 0):
        raise ValueError("`weights` must be non-negative")
    width = V.real("width", width, positive=True)
    upper = V.real("upper", upper, positive=True)
    nb = int(round(upper / width))
    if not np.isclose(nb * width, upper):
        raise ValueError(f"`width` must divide `upper` ({upper}), got {width}")
    edges = np.linspace(0.0, upper, nb + 1)
    ok = np.isfinite(ang)
    if np.any(ok & ((ang < 0) | (ang > upper))):
        raise ValueError(f"`angles` must lie in [0, {upper}] degrees")
    h, _ = np.histogram(ang[ok], bins=edges, weights=w[ok])
    tot = float(np.sum(h))
    if not tot > 0:
        return np.full(nb, np.nan), edges
    return h / tot, edges


#: the recorder's 5° bins on [0°, 90°] (as built by :func:`angle_histogram`)
_EDGES_5 = np.linspace(0.0, 90.0, 19)
_EDGES_5.setflags(write=False)
#: numpy.histogram processes its input in blocks of this size
_NP_HIST_BLOCK = 65536


def _histogram_5(ang: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``angle_histogram(ang, w)[0]`` (5° bins on [0°, 90°]) without its argument checks, for
    angles computed by :func:`_neuron_geometry` and importances ≥ 0.

    ``numpy.histogram`` with explicit bin edges sums the weights as differences of the
    cumulative sums of the angle-sorted weights; the same operations are done here, so the
    result is bit-identical (inputs longer than numpy's block size go through
    :func:`angle_histogram` itself).
    """
    ok = np.isfinite(ang)
    a = ang[ok]
    if (ang.shape[0] > _NP_HIST_BLOCK or np.any((a < 0) | (a > 90.0))
            or not np.all(np.isfinite(w)) or np.any(w < 0)):
        return angle_histogram(ang, w)[0]          # (raises the documented error on bad input)
    order = np.argsort(a)
    sa = a[order]
    cw = np.concatenate((np.zeros(1), w[ok][order].cumsum()))
    idx = np.concatenate((sa.searchsorted(_EDGES_5[:-1], "left"),
                          sa.searchsorted(_EDGES_5[-1:], "right")))
    cum = np.zeros(_EDGES_5.shape)
    cum += cw[idx]
    h = np.diff(cum)
    tot = float(np.sum(h))
    if not tot > 0:
        return np.full(18, np.nan)
    return h / tot
