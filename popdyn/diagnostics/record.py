"""All diagnostics at one checkpoint, and a recorder for :func:`popdyn.train` (docs/design.md §4, §5).

:func:`diagnose` computes the moments once (C, B, μ0 and the teacher cross moments) and derives
from them the AGOP, its alignment with the teacher subspace and the refit risks; the projected
refit needs one more moment evaluation at the snapped weights.  :func:`recorder` returns the
callable that :func:`popdyn.train` calls at every snapshot; its flat dict of scalars is stored in
``Trajectory.records``, so a stored diagnostic is read back (:func:`series`) and never recomputed.

The moments come from the same code paths as the public functions: the student family's
``moments(..., need="values")`` (:mod:`popdyn.family`), its ``agop`` and ``refit_problem``.
Ridge students get the engine's value moments (C, B, μ0, Ct; against multi-index teachers the
moments of the multi-index teacher's ``cross``); SwiGLU students one evaluation of
:func:`popdyn.swiglu.moments` (refit kinds ``unrestricted``, ``same_budget``, ``bounded``;
``projected`` is not defined for SwiGLU and raises ``ValueError``).  A family's
``geometry_kind`` selects the neuron geometry (angle histograms) or the gate geometry
(:func:`popdyn.diagnostics.gate_geometry`: effective gate / value angles and thresholded
gate–axis counts).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import _validate as V
from ..family import family_of
from ..plateau import plateau
from .alignment import Alignment, _alignment, alignment, check_subspace
from .gates import GateGeometry, gate_geometry
from .geometry import (NeuronGeometry, _histogram_5, _neuron_geometry, snap_to_axes,
                       teacher_frame)
from .. import accuracy as _acc
from .agop import SeriesTails as _SeriesTails, _ridge
from .refit import KINDS, _check_budget, _refit

#: refit kinds defined for SwiGLU students (``projected`` snaps ridge weights: not defined)
SWIGLU_KINDS = ("unrestricted", "same_budget", "bounded")


@dataclass(frozen=True)
class Diagnostics:
    """The diagnostics of one checkpoint.

    Attributes
    ----------
    agop : ndarray (d, d)
    alignment : Alignment
    refits : dict of str → Refit
    geometry : NeuronGeometry, GateGeometry or None
        Neuron geometry (ordinary students) or gate geometry (SwiGLU students).
    variance : float
        V_Y.
    """

    agop: np.ndarray
    alignment: Alignment
    refits: dict
    geometry: NeuronGeometry | GateGeometry | None
    variance: float
    extra: dict = field(default_factory=dict)

    def as_record(self) -> dict:
        """Flat dict of scalars: alignment scores, refit risks in units of V_Y (``refit_<kind>``,
        ``refit_<kind>_lower``, ``refit_<kind>_status``; ``refit_<kind>_budget`` for ball solves,
        ``refit_<kind>_rank``, ``_cutoff`` and ``_discarded`` for cutoff solves), the AGOP eigenvalues λ_1..λ_{r+1} (``agop_top``), and with
        geometry the importance-weighted 5° histograms (``hist_subspace``, ``hist_axis``) and
        mean angles -- or, for SwiGLU students, the gate geometry scalars
        (:meth:`GateGeometry.as_dict`: ``gate_weighted_angle``, ``gate_median_angle``,
        ``value_weighted_angle``, ``value_median_angle``, ``frac_gates_near_axis``,
        ``frac_axes_covered``)."""
        rec = dict(self.alignment.as_dict())
        al = self.alignment
        rec["agop_top"] = al.eigenvalues[:min(al.r + 1, al.d)].tolist()
        for kind, rf in self.refits.items():
            rec.update(rf.as_dict(f"refit_{kind}"))
        if isinstance(self.geometry, GateGeometry):
            rec.update(self.geometry.as_dict())
        elif self.geometry is not None:
            g = self.geometry
            # _histogram_5(ang, w) is g.histogram(which)[0] (5° bins) without argument checks
            rec["hist_subspace"] = _histogram_5(g.subspace_angle, g.importance).tolist()
            rec["hist_axis"] = _histogram_5(g.axis_angle, g.importance).tolist()
            rec["mean_subspace_angle"] = g.weighted_mean("subspace")
            rec["mean_axis_angle"] = g.weighted_mean("axis")
            if g.plane_angle is not None:
                rec["hist_plane"] = _histogram_5(g.plane_angle, g.importance).tolist()
        rec.update(self.extra)
        return rec


def _check_kinds(kinds) -> tuple:
    if isinstance(kinds, str):
        kinds = (kinds,)
    try:
        kinds = tuple(kinds)
    except TypeError:
        raise TypeError(f"`kinds` must be a sequence of refit kinds, got {kinds!r}") from None
    for k in kinds:
        V.choice("kinds", k, KINDS)
    if len(set(kinds)) != len(kinds):
        raise ValueError(f"`kinds` has duplicates: {kinds}")
    return kinds


def _settings(kinds, budget, rcond, geometry):
    kinds = _check_kinds(kinds)
    if "bounded" in kinds:
        budget = _check_budget("bounded", budget)
    elif budget is not None:
        budget = V.real("budget", budget, positive=True)
        if "projected" not in kinds:
            raise ValueError("`budget` is used only by the kinds 'bounded' and 'projected'")
    rcond = V.real("rcond", rcond, positive=True)
    if not rcond < 1:
        raise ValueError(f"`rcond` must be in (0, 1), got {rcond!r}")
    if not isinstance(geometry, (bool, np.bool_)):
        raise TypeError(f"`geometry` must be a bool, got {geometry!r}")
    return kinds, budget, rcond


def diagnose(student, params, teacher, *, U=None, kinds=("unrestricted", "same_budget"),
             budget=None, geometry: bool = False, rcond: float = 1e-12,
             equilibrate: bool = True, rtol: float = 1e-10, _checked: bool = False,
             _frame=None, _moments=None) -> Diagnostics:
    """AGOP, alignment, refit risks (and optionally neuron geometry) at one checkpoint.

    Parameters
    ----------
    student, params, teacher
        The state to diagnose.
    U : array_like (r, d), optional
        Teacher subspace (orthonormal rows); default ``teacher.subspace``.  Also the axes of the
        ``projected`` refit and of the geometry (default: the teacher's own directions).
    kinds : sequence of str
        Refit kinds (see :func:`popdyn.diagnostics.refit_risk`).
    budget : float, optional
        B for ``bounded`` (required) and ``projected`` (optional ball refit after snapping).
    geometry : bool
        Also compute the neuron geometry (the gate geometry for SwiGLU students).
    rcond, equilibrate, rtol
        As in :func:`popdyn.diagnostics.refit_risk`.

    Notes
    -----
    SwiGLU students and multi-index (gated) teachers are supported (module docstring); for
    SwiGLU the kind ``projected`` raises ``ValueError``.

    Only the moments the diagnostics use are evaluated (C, B, μ0 and the cross values Ct:
    ``need="values"`` of :func:`popdyn._moments.moments`, bit-identical to the same entries of
    the full evaluation).  ``_frame`` (private) is the checked ``teacher_frame(U or teacher, d)``, passed
    by :func:`recorder`, which computes it once.

    References
    ----------
    Kumar (arXiv 2609.39408), Figures 1–2 (alignment, refit and geometry rows); docs/design.md §5.
    """
    fam = family_of(student)
    if not _checked:
        fam.check(params, teacher)
        kinds, budget, rcond = _settings(kinds, budget, rcond, geometry)
        rtol = V.real("rtol", rtol, positive=True)
    bad = [k for k in kinds if k not in fam.refit_kinds]
    if bad:
        raise ValueError(f"refit kind(s) {bad} are not defined for {fam.label} students; use "
                         f"{list(fam.refit_kinds)}")
    if _frame is None:
        _frame = teacher_frame(teacher if U is None else U, student.d)
    S, axes = _frame
    # C, B, μ0, Ct: all the diagnostics need (the ridge family's value moments), or those the
    # training step computed at this state (``_moments``, the same bits)
    M = fam.moments(params, teacher, need="values", tol=rtol) if _moments is None else _moments
    A = np.ascontiguousarray(fam.agop(params, M))
    A = _agop_tails(fam, params, M, A, rtol)
    # A is exactly symmetric (every family's agop symmetrizes) and S checked: only finiteness
    # is left to check (alignment itself raises the documented error)
    al = _alignment(A, S) if np.isfinite(A).all() else alignment(A, S)
    prob = None
    refits = {}
    for kind in kinds:
        if kind == "projected":
            W = getattr(params, fam.first_layer)
            snapped = params.replace(**{fam.first_layer: snap_to_axes(W, S, axes)})
            Mp = fam.moments(snapped, teacher, need="values", tol=rtol)
            refits[kind] = _refit(fam.refit_problem(snapped, teacher, Mp), kind, budget,
                                  rcond=rcond, equilibrate=equilibrate, params=snapped)
            continue
        if prob is None:
            prob = fam.refit_problem(params, teacher, M)
        b = {"unrestricted": None, "bounded": budget,
             "same_budget": float(np.linalg.norm(params.a))}[kind]
        refits[kind] = _refit(prob, kind, b, rcond=rcond, equilibrate=equilibrate, params=params)
    geo = None
    if geometry:
        geo = (gate_geometry(params, S, axes=axes) if fam.geometry_kind == "gate"
               else _neuron_geometry(params, S, axes))
    return Diagnostics(A, al, refits, geo, float(teacher.variance))


def _agop_tails(fam, params, M, A, rtol):
    """``A`` checked against the a-priori bound of its Hermite tails (smooth ridge students:
    :class:`popdyn.diagnostics.agop.SeriesTails`): unchanged when the bound is below 1% of
    rtol·‖A‖₂ + atol (always, for closed-form AGOPs), else with the affected entries of B
    evaluated by quadrature, and an AccuracyWarning when the bound still exceeds the target."""
    tails = _SeriesTails.of(fam, params)
    if tails is None or getattr(_ridge(M), "order", None) is None:
        return A
    nrm = _acc.spectral_norm(A)
    target = rtol * nrm + _acc.rounding_floor(fam.student.m + fam.student.d, nrm)
    tb = tails.error(M)
    if tb <= 0.01 * target:
        return A
    A2, tb2 = tails.repair(M, rtol)
    if A2 is not None:
        A, tb = np.ascontiguousarray(A2), tb2
        nrm = _acc.spectral_norm(A)
        target = rtol * nrm + _acc.rounding_floor(fam.student.m + fam.student.d, nrm)
    if tb > target:
        _acc.warn(f"AGOP of the {getattr(fam.student, 'activation', fam.label)} student", tb,
                  target, rtol, f"the Hermite order cap {_acc.ORDER_CAP} leaves a tail of "
                  f"{tb:.3g} (a-priori bound)", "certify.alignment gives rigorous brackets.",
                  stacklevel=4)
    return A


def recorder(U=None, kinds=("unrestricted", "same_budget"), *, budget=None,
             geometry: bool = False, rcond: float = 1e-12, equilibrate: bool = True,
             rtol: float = 1e-10):
    """A recorder for ``popdyn.train(..., recorder=...)`` computing :func:`diagnose` at snapshots.

    The returned callable has the signature ``(student, params, teacher, *, n, t, loss) -> dict``
    and returns :meth:`Diagnostics.as_record` plus ``n``, ``t``, ``loss`` (L = ½E[(f − y)²]) and
    ``normalized_loss`` (2L/V_Y).  Settings are validated here, once.

    Examples
    --------
    >>> import numpy as np, popdyn
    >>> from popdyn.diagnostics import recorder, series
    >>> T = popdyn.Teacher.additive("h2", np.eye(4)[:2])
    >>> S = popdyn.Student(d=4, m=6)
    >>> tr = popdyn.train(S, S.init(0, 0.1, T), T, method="gd", lr=0.1, max_updates=3,
    ...                   recorder=recorder())
    >>> series(tr, "a_min").shape == (len(tr),)
    True
    """
    kinds, budget, rcond = _settings(kinds, budget, rcond, geometry)
    if U is not None:
        U = check_subspace(U)
    rtol = V.real("rtol", rtol, positive=True)
    if not isinstance(equilibrate, (bool, np.bool_)):
        raise TypeError(f"`equilibrate` must be a bool, got {equilibrate!r}")

    frames: dict = {}            # the checked teacher frame: per (teacher, d) when U is None

    def frame(student, teacher):
        key = (student.d, None if U is not None else id(teacher))
        hit = frames.get(key)
        if hit is None or (U is None and hit[0] is not teacher):
            if len(frames) > 8:
                frames.clear()
            hit = frames[key] = (teacher, teacher_frame(teacher if U is None else U, student.d))
        return hit[1]

    def record(student, params, teacher, *, n, t, loss, moments=None) -> dict:
        D = diagnose(student, params, teacher, U=U, kinds=kinds, budget=budget,
                     geometry=geometry, rcond=rcond, equilibrate=bool(equilibrate), rtol=rtol,
                     _checked=True, _frame=frame(student, teacher), _moments=moments)
        rec = {"n": int(n), "t": float(t), "loss": float(loss),
               "normalized_loss": 2.0 * float(loss) / D.variance}
        rec.update(D.as_record())
        return rec

    # (ignore[attr-defined]: the recorder protocol reads these attributes off the function)
    record.kinds = kinds  # type: ignore[attr-defined]
    record.budget = budget  # type: ignore[attr-defined]
    #: :func:`popdyn.train` passes the value moments of the snapshot state when its stepper
    #: holds them (the fused GD step): the same bits as recomputing them
    record.takes_moments = True  # type: ignore[attr-defined]
    return record


def series(trajectory, key: str) -> np.ndarray:
    """The stored values of ``key`` over a trajectory's snapshots (from ``Trajectory.records``
    or a list of records), as an array; raises ``KeyError`` naming the available keys."""
    records = getattr(trajectory, "records", trajectory)
    if not isinstance(records, (list, tuple)) or not records:
        raise ValueError("`trajectory` has no diagnostic records (train with recorder=...)")
    if key not in records[0]:
        raise KeyError(f"no diagnostic {key!r}; recorded keys: {sorted(records[0])}")
    vals = [r[key] for r in records]
    try:
        return np.array(vals, dtype=np.float64)
    except (TypeError, ValueError):
        return np.array(vals, dtype=object)


def at_update(trajectory, n: int) -> int:
    """Index of the last snapshot with update count ≤ ``n`` (the last diagnostic inside a
    prefix ending at update n; Kumar Table 3: "P is the last diagnostic inside the
    prefix")."""
    n = V.nonneg_int("n", n)
    sn = np.asarray(trajectory.snap_n)
    i = int(np.searchsorted(sn, n, side="right")) - 1
    if i < 0:
        raise ValueError(f"no snapshot at or before update {n}")
    return i


def checkpoints(trajectory, *, delta: float = 1e-3) -> dict:
    """The paper's three checkpoints of a recorded run: initialization, the last diagnostic inside
    the δ-prefix of the normalized loss (the end of the plateau), and the finish.

    Returns
    -------
    dict
        ``plateau`` (:class:`popdyn.Plateau` on both clocks), ``index`` and ``record`` (dicts
        keyed ``init``, ``plateau``, ``final``: snapshot indices and their stored records), and
        ``loss_change`` = ℓ(P) − ℓ(0) of the normalized loss at the plateau checkpoint P.

    References
    ----------
    Kumar (arXiv 2609.39408), Tables 3–4 ("P is the last diagnostic inside the prefix").
    """
    if not getattr(trajectory, "records", None):
        raise ValueError("`trajectory` has no diagnostic records (train with recorder=...)")
    ell = trajectory.normalized_loss
    pl = plateau(ell, delta=delta, n=trajectory.n, t=trajectory.t)
    idx = {"init": 0, "plateau": at_update(trajectory, pl.end_n), "final": len(trajectory) - 1}
    recs = {k: trajectory.records[i] for k, i in idx.items()}
    return {"plateau": pl, "index": idx, "record": recs,
            "loss_change": float(ell[trajectory.snap_n[idx["plateau"]]] - ell[0])}
