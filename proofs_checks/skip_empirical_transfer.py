r"""Check ``skip_empirical_transfer``: the skip student's benign landscape transferred to the
empirical loss over joint parameter balls of a fixed radius (J. P. Zimmermann, M. Grillo,
A. Balakin et al., "Removing spurious minima for planar features by skip connections",
arXiv 2610.01728, ``thm:fixed-radius-bridge``).

Source
------
The paper's prose is not in the search store; its abstract is (an arXiv listing), and so is the
authors' Lean formalization (repository "Removing-spurious-minima-for-planar-features-by-skip-
connections": ``Overview_definitions.lean``, ``Overview_theorems.lean``, ``Theorems.lean``,
``Empirical.lean``), whose statements are what this check reads.  In the paper's coordinates a
bias-free relu student with a linear skip is (b, s, w): skip b, masses s_i and unit directions
w_i, f(x) = b·x + Σ_i s_i relu(w_i·x); the teacher is y = b*·x + Σ_k t_k relu(v_k·x) with
t_k > 0, |v_k| = 1 and span(v) of dimension ≤ 2.  Definitions used here:

* ``DataLoss`` = ½ (1/N) Σ_j (f(x_j) − y_j)² (popdyn's L_n);
* ``MatchingSkip`` = b* + ½(Σ_k t_k v_k − Σ_i s_i w_i), and the sheared skip u = b − MatchingSkip;
  with relu(z) = |z|/2 + z/2 the residual is ρ(x) = Σ_i s_i|w_i·x|/2 − Σ_k t_k|v_k·x|/2 + u·x
  (``raw_skip_residual_eq_sheared``) and the population loss splits as
  L = ½E[(Σ s_i|w_i·x|/2 − Σ t_k|v_k·x|/2)²] + ½|u|² (``joint_population_split``);
* ``JointDistance`` = max(max_i |s_i − s′_i|, max_i |w_i − w′_i|, |u − u′|) (Mathlib's sup metric);
* ``DataAccuracy x δ``: |d (1/N) Σ_j H(x_j) − R₂ E_γ H| ≤ d R₂ L δ for every continuous,
  positively 2-homogeneous H that is L-Lipschitz on the unit ball, R₂ = (1/N) Σ_j |x_j|².

``thm:fixed-radius-bridge``: for every radius r > 0 there is δ > 0 such that for every data set
with ``DataAccuracy x δ`` and teacher-generated labels, every candidate with non-negative masses
and unit directions that minimizes the empirical loss over the whole joint ball of radius r
around itself (a *fixed-radius minimum*; competitors may have signed masses) has empirical loss
0.  The Lean proof is by compactness: δ exists but is not explicit.  Its explicit ingredients:
(i) confinement: for δ ≤ 1/(8 d n) (n the student width) such minima have masses ≤
C = (2 d n (Σ|t|)²)^{1/2} and |u| ≤ U = (d (Σ|t|)²/2)^{1/2}; (ii) uniform comparison
(``eq_uniform_comparison``, ``thickened_box_uniform_comparison``): with
B = (Σ_i|s_i| + Σ_k|t_k|)/2 + |u|, which bounds ρ and its Lipschitz constant on the unit ball,

    | (d/R₂) L_n(q) − L(q) | ≤ d B(q)² δ                                              (UC)

for every state q; (iii) population exact fits are common zeros of every empirical loss
(``joint_population_zero_is_common_empirical_zero``), so a candidate whose joint ball holds a
population zero cannot be a spurious fixed-radius minimum.  From (ii) and (iii) the route gives
a quantitative sufficient condition: 2 d B_max² δ < Δ*(r) with Δ*(r) = inf over box points p at
joint distance ≥ r from the zero set of L(p) − min_{ball(p, r)} L; since a point at distance r
from a zero differing only in u has L = r²/2, Δ*(r) ≤ r²/2, so the route needs at least

    δ ≤ δ_route = min( 1/(8 d n), r² / (4 d B_max²) ),   B_max = (n(C + r) + Σ|t|)/2 + U + r.

In d = 2 the smallest δ of a data set is bracketed by :func:`popdyn.skip_empirical.data_accuracy`
(W₁ of the |x|²-weighted angular measure against the uniform one: δ̂ ∈ [W₁/(1 + π²)^{1/2}, W₁]).

What is run (settings ``data/configs/skip_empirical_transfer.toml``)
-------------------------------------------------------------------
For each declared teacher (``data/configs/landscape/teachers.toml``, the population checks'
planar teachers in d = 2, b* = 0) and data size n: X ~ N(0, I₂) from
``numpy.random.default_rng([data_seed, n])``, y = teacher(X) (no noise); the student
``Student(2, m, "relu", bias=False, intercept=False, skip=True)``, m = k + ``extra_width`` (the
paper's model: no intercept, which would break the 2-homogeneity behind ``DataAccuracy``); starts
``Student.init(seed, scale)`` with a → |a| and v = 0 (the population checks' start rule),
seeds 0..``starts``−1; full-batch GD θ ← θ − lr ∇L_n on (a, W, v)
(:func:`popdyn.skip_empirical.gradient_descent`) until max|∇L_n| ≤ ``gtol``,
2L_n/V_Y ≤ ``loss_floor`` or ``max_updates``; a visited state every ``every`` updates.  In the
paper's coordinates s_i = a_i|w_i|, w_i/|w_i| and u = v − MatchingSkip.  End states are
classified by the population criterion (popdyn's exact population loss L):

* ``global``: 2L/V_Y ≤ ``global_tol``;
* ``spurious``: converged (max|∇L_n| ≤ ``gtol``) with 2L/V_Y > ``spurious_tol``; it is
  *in hypothesis* when every mass s_i ≥ 0 (the theorem's condition), and it *has a descent
  certificate* when a state q in its joint ball of radius ``radius`` with L_n(q) < L_n(p) is
  found: the nearest population exact fit (units assigned to the teacher's lines, signs of
  directions free since |z| is even, masses shifted equally; an upper bound on the distance to
  the zero set; L_n = 0 there), the segment towards it clipped to the ball, and ``ball_points``
  random points of the ball (seeded) -- such a p is not a fixed-radius minimum;
* ``undecided``: anything else (not converged within the budget).

Claims (parts; numerical)
-------------------------
* ``transfer[teacher,n]``: bracket [0, #in-hypothesis spurious end states without a descent
  certificate + #undecided] ≤ 0 (a census: it cannot certify a fixed-radius minimum, so it
  never fails; it passes when every end state is global or certified not to be a fixed-radius
  minimum);
* ``success[teacher,n]``: the Clopper–Pearson interval (``level``) of the global rate ≥
  ``success_min``;
* ``uniform comparison[teacher,n]``: max over all visited states of
  |(d/R₂)L_n − L| / (d B² δ̂_hi) ≤ 1 ((UC) with the upper end of the data's accuracy bracket).

Controls (reported, not in the verdict)
---------------------------------------
* ``accuracy[teacher,n]``: the data's δ̂ bracket against δ_route (≤ δ_route is necessary for the
  comparison route; the notes give the n it would need if δ̂ ∝ n^{-1/2});
* ``gradient deviation[teacher,n]``: sup over the visited states of |∇L_n − ∇L| (Euclidean, over
  a, W, v) on the training sample and on a fresh sample of ``deviation_factor``·n points at the
  same states; the exponent log(sup_n / sup_fn)/log(factor) within 0.5 ± 0.25 (E|∇L_n − ∇L|² =
  tr Σ/n at a fixed state);
* ``no-skip control``: the plain relu student (no skip) of width 3 on the teacher of the check
  ``skip_spurious_minima`` (relu(x₁) + relu(x₂) + relu(−x₁)), same data rule and GD
  (``control_starts`` starts, ``control_updates`` updates): bracket [#spurious, #spurious +
  #unconverged with 2L/V_Y > ``spurious_tol``] ≥ 1 -- the census detects spurious empirical
  minima where the skip is absent.

Not tested
----------
The theorem's δ itself (existential, from compactness) and any sample-size statement derived
from it (``rem:finite-data-accuracy`` and its high-probability form are asymptotic); that the
end states are fixed-radius minima (a global minimization over each ball: only descent points
are searched for); the confinement lemma; d > 2 (the accuracy bracket uses W₁ on the circle);
teacher skips b* ≠ 0; the other contributions (``thm:headline``, ``thm:plain-trap``,
teacher-span confinement, effective width: the checks ``skip_benign``,
``skip_spurious_minima``, ``teacher_span``, ``direction_count``).

References
----------
Zimmermann, Grillo, Balakin et al., arXiv 2610.01728 (abstract; Lean formalization);
popdyn.skip_empirical; popdyn.skip (SK-1, SK-2); docs/design.md §4.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

import popdyn
from popdyn.skip_empirical import data_accuracy, empirical_loss_and_grad, gradient_descent
from popdyn.learnability import clopper_pearson

from ._core import load_settings as _load_settings
from ._core import make_verdict, register, summary_verdict

PAPER = ("Zimmermann, Grillo, Balakin et al., \"Removing spurious minima for planar features by "
         "skip connections\", arXiv 2610.01728, thm:fixed-radius-bridge")
D = 2


# ---------------------------------------------------------------------------- setting
def teacher_data(name: str):
    """(t (k,), V (k, 2) unit rows, popdyn Teacher) of a declared teacher: a name of
    data/configs/landscape/teachers.toml, or ``"skip_spurious"`` (the teacher of the check
    ``skip_spurious_minima``)."""
    if name == "skip_spurious":
        from . import skip_spurious as SS
        t, Vd = np.array(SS.TEACHER_ALPHA, float), np.array(SS.TEACHER_U, float)
    else:
        from .landscape_checks import declared_teachers
        decl = declared_teachers()
        if name not in decl:
            raise ValueError(f"`teachers` must be names of {sorted(decl)} (or 'skip_spurious'), "
                             f"got {name!r}")
        ang = np.deg2rad(np.asarray(decl[name]["angles"], float))
        t = np.asarray(decl[name]["weights"], float)
        Vd = np.column_stack([np.cos(ang), np.sin(ang)])
    return t, Vd, popdyn.Teacher.network("relu", t, Vd)


def draw(teacher, n: int, seed: int, stream: int = 0):
    """X (n, 2) ~ N(0, I) from ``default_rng([seed, n, stream])``, y = teacher(X)."""
    rng = np.random.default_rng([int(seed), int(n), int(stream)])
    X = rng.standard_normal((int(n), D))
    return X, teacher(X)


# ---------------------------------------------------------------------------- paper coordinates
def paper_coordinates(params, t, Vd):
    """(s, w, u): masses s_i = a_i|w_i|, unit directions (e₁ where w_i = 0, with s_i = 0) and the
    sheared skip u = v − MatchingSkip, MatchingSkip = ½(Σ_k t_k v_k − Σ_i s_i w_i) (b* = 0)."""
    nw = np.linalg.norm(params.W, axis=1)
    ok = nw > 0
    Wh = np.where(ok[:, None], params.W / np.where(ok, nw, 1.0)[:, None], np.eye(D)[0])
    s = np.where(ok, params.a * nw, 0.0)
    u = params.v - 0.5 * (t @ Vd - s @ Wh)
    return s, Wh, u


def from_paper(s, Wh, u, t, Vd):
    """popdyn Params (a = s, W = w, v = u + MatchingSkip) of paper coordinates."""
    v = u + 0.5 * (t @ Vd - s @ Wh)
    return popdyn.Params(np.array(s, float), np.array(Wh, float), np.zeros(len(s)), 0.0, v)


def joint_distance(P, Q) -> float:
    """``JointDistance``: max(max|s − s′|, max_i |w_i − w′_i|, |u − u′|)."""
    return float(max(np.max(np.abs(P[0] - Q[0])), np.max(np.linalg.norm(P[1] - Q[1], axis=1)),
                     np.linalg.norm(P[2] - Q[2])))


def residual_bound(P, t) -> float:
    """B = (Σ|s_i| + Σ|t_k|)/2 + |u| (bounds the residual and its Lipschitz constant on the unit
    ball; (UC))."""
    return float((np.abs(P[0]).sum() + np.abs(t).sum()) / 2 + np.linalg.norm(P[2]))


def teacher_lines(t, Vd, tol=1e-12):
    """Teacher lines (directions mod ±) with their total masses: (L (ℓ, 2), T (ℓ,))."""
    lines, mass = [], []
    for tk, vk in zip(t, Vd):
        for i, ln in enumerate(lines):
            if abs(abs(ln @ vk) - 1.0) <= tol:
                mass[i] += tk
                break
        else:
            lines.append(vk.copy())
            mass.append(float(tk))
    return np.array(lines), np.array(mass)


def nearest_zero(P, t, Vd):
    """A population exact fit Q near P in joint distance (an upper bound on the distance to the
    zero set): every unit is assigned to a teacher line (direction ±v, the nearer sign: |z| is
    even) or to none (mass 0, direction kept); each line gets ≥ 1 unit and the masses on it are
    shifted equally to sum to the line's mass; u = 0.  Minimum over all assignments.
    Returns (distance, Q)."""
    s, Wh, u = P
    Ls, Ts = teacher_lines(t, Vd)
    m, nl = len(s), len(Ts)
    best = (math.inf, None)
    for assign in itertools.product(range(nl + 1), repeat=m):      # nl = "none"
        if any(all(a != ell for a in assign) for ell in range(nl)):
            continue
        s2, W2 = s.copy(), Wh.copy()
        for i, a in enumerate(assign):
            if a == nl:
                s2[i] = 0.0
            else:
                v = Ls[a]
                W2[i] = v if Wh[i] @ v >= 0 else -v
        for ell in range(nl):
            idx = [i for i, a in enumerate(assign) if a == ell]
            s2[idx] += (Ts[ell] - s[idx].sum()) / len(idx)
        Q = (s2, W2, np.zeros_like(u))
        dist = joint_distance(P, Q)
        if dist < best[0]:
            best = (dist, Q)
    return best


def _ball_point(P, r, rng):
    s, Wh, u = P
    s2 = s + r * rng.uniform(-1, 1, s.shape)
    phimax = 2 * math.asin(min(r / 2, 1.0))
    ph = rng.uniform(-phimax, phimax, len(s))
    c, sn = np.cos(ph), np.sin(ph)
    W2 = np.column_stack([c * Wh[:, 0] - sn * Wh[:, 1], sn * Wh[:, 0] + c * Wh[:, 1]])
    ang = rng.uniform(0, 2 * math.pi)
    u2 = u + r * math.sqrt(rng.uniform()) * np.array([math.cos(ang), math.sin(ang)])
    return s2, W2, u2


def descent_certificate(student, P, X, y, t, Vd, r, n_points, seed):
    """Search the joint ball of radius r around P for a state of smaller empirical loss (module
    docstring).  Returns dict(loss_p, best, found, how, zero_distance)."""
    def Ln(Q):
        return empirical_loss_and_grad(student, from_paper(*Q, t, Vd), X, y)[0]

    Lp = Ln(P)
    dz, Z = nearest_zero(P, t, Vd)
    best, how = math.inf, "none"
    if Z is not None:
        if dz <= r:
            best, how = Ln(Z), "population zero in the ball"
        for a in np.linspace(0.02, 1.0, 50):
            Q = ((1 - a) * P[0] + a * Z[0], (1 - a) * P[1] + a * Z[1], (1 - a) * P[2])
            nq = np.linalg.norm(Q[1], axis=1)
            if np.any(nq == 0):
                continue
            Q = (Q[0], Q[1] / nq[:, None], Q[2])
            if joint_distance(P, Q) <= r:
                L = Ln(Q)
                if L < best:
                    best, how = L, "segment towards the nearest exact fit"
    rng = np.random.default_rng(seed)
    for _ in range(n_points):
        Q = _ball_point(P, r, rng)
        if joint_distance(P, Q) <= r:
            L = Ln(Q)
            if L < best:
                best, how = L, "random point of the ball"
    return {"loss_p": Lp, "best": best, "found": best < Lp, "how": how, "zero_distance": dz}


# ---------------------------------------------------------------------------- one census
def _flat_grad(g):
    return np.concatenate([g.a, g.W.ravel(), g.v])


def census(name, n, *, skip=True, m=None, data_seed, starts, scale, lr, max_updates, every,
           gtol, loss_floor, global_tol, spurious_tol, radius, ball_points, deviation_factor):
    """GD runs from the declared starts on one data set (module docstring); per run the end
    class and, at every visited state, the measured deviations."""
    t, Vd, T = teacher_data(name)
    k = len(t)
    m = k if m is None else m
    S = popdyn.Student(D, m, "relu", bias=False, intercept=False, skip=skip)
    VY = float(T.variance)
    X, y = draw(T, n, data_seed)
    acc = data_accuracy(X)
    Xf, yf = draw(T, deviation_factor * n, data_seed, stream=1)
    runs = []
    for seed in range(starts):
        p0 = S.init(seed, scale)
        p0 = p0.replace(a=np.abs(p0.a))
        res = gradient_descent(S, p0, X, y, lr=lr, max_updates=max_updates, gtol=gtol,
                               loss_floor=0.5 * loss_floor * VY, every=every)
        ratio, dev, devf, inbox = 0.0, 0.0, 0.0, []
        for _, q in res["snapshots"]:
            if not q.is_finite():
                continue
            Lq, gq = popdyn.loss_and_grad(S, q, T, check=False)
            Ln, gn = empirical_loss_and_grad(S, q, X, y)
            _, gf = empirical_loss_and_grad(S, q, Xf, yf)
            P = paper_coordinates(q, t, Vd)
            B = residual_bound(P, t)
            ratio = max(ratio, abs(D / acc["R2"] * Ln - Lq) / (D * B * B * acc["hi"]))
            dev = max(dev, float(np.linalg.norm(_flat_grad(gn) - _flat_grad(gq))))
            devf = max(devf, float(np.linalg.norm(_flat_grad(gf) - _flat_grad(gq))))
            inbox.append(P)
        pe = res["params"]
        Lpop = popdyn.population_loss(S, pe, T) if pe.is_finite() else math.inf
        nl = 2 * Lpop / VY
        P = paper_coordinates(pe, t, Vd)
        if nl <= global_tol:
            cls = "global"
        elif res["status"] == "converged" and nl > spurious_tol:
            cls = "spurious"
        else:
            cls = "undecided"
        rec = {"seed": seed, "class": cls, "status": res["status"], "updates": res["updates"],
               "pop_norm": nl, "emp_norm": 2 * res["loss"] / VY, "gmax": res["gmax"],
               "masses": P[0], "nonneg": bool(np.all(P[0] >= 0)), "ratio": ratio, "dev": dev,
               "dev_fresh": devf, "states": inbox}
        if cls == "spurious":
            rec["cert"] = descent_certificate(S, P, X, y, t, Vd, radius, ball_points,
                                              seed=[data_seed, n, seed])
        runs.append(rec)
    return {"teacher": name, "n": n, "m": m, "k": k, "t": t, "acc": acc, "runs": runs,
            "VY": VY}


def _box(t, m, r):
    st = float(np.abs(t).sum())
    C = math.sqrt(2 * D * m * st ** 2)
    U = math.sqrt(D * st ** 2 / 2)
    Bmax = (m * (C + r) + st) / 2 + U + r
    cap = 1.0 / (8 * D * m)
    return C, U, Bmax, cap, min(cap, r * r / (4 * D * Bmax ** 2))


def _in_box(P, C, U, r):
    return bool(np.all(np.abs(P[0]) <= C + r) and np.linalg.norm(P[2]) <= U + r)


# ---------------------------------------------------------------------------- settings
def load_settings() -> dict:
    """The declared ``quick`` and ``full`` settings, ``data/configs/skip_empirical_transfer.toml``
    (:func:`proofs_checks._core.load_settings`)."""
    return _load_settings("skip_empirical_transfer")


_SETTINGS = load_settings()


@register("skip_empirical_transfer",
          description="empirical minima of the skip student over joint parameter balls of a "
                      "fixed radius: GD census on n samples, data accuracy against the uniform "
                      "comparison, gradient deviation (thm:fixed-radius-bridge, arXiv 2610.01728)",
          quick=_SETTINGS["quick"], full=_SETTINGS["full"])
def check(*, teachers, extra_width, n_samples, data_seed, starts, scale, lr, max_updates, every,
          gtol, loss_floor, global_tol, spurious_tol, radius, ball_points, success_min, level,
          deviation_factor, control_starts, control_updates):
    """The claims and controls of the module docstring."""
    run_kw = dict(data_seed=data_seed, scale=scale, lr=lr, every=every, gtol=gtol,
                  loss_floor=loss_floor, global_tol=global_tol, spurious_tol=spurious_tol,
                  radius=radius, ball_points=ball_points, deviation_factor=deviation_factor)
    parts, notes = [], []
    for name in teachers:
        for n in n_samples:
            t_data = teacher_data(name)[0]
            k = len(t_data)
            c = census(name, n, m=k + extra_width, starts=starts, max_updates=max_updates,
                       **run_kw)
            m, acc, runs = c["m"], c["acc"], c["runs"]
            C, U, Bmax, cap, droute = _box(t_data, m, radius)
            tag = f"{name},n={n}"
            cls = [r["class"] for r in runs]
            n_glob, n_und = cls.count("global"), cls.count("undecided")
            spur = [r for r in runs if r["class"] == "spurious"]
            bad = [r for r in spur if r["nonneg"] and not r["cert"]["found"]]
            outside = [r for r in spur if not r["nonneg"]]
            inbox = sum(_in_box(P, C, U, radius) for r in runs for P in r["states"])
            nstates = sum(len(r["states"]) for r in runs)
            notes.append(f"{tag}: m = {m}, k = {k}; δ̂ ∈ [{acc['lo']:.4g}, {acc['hi']:.4g}] "
                         f"(W₁ = {acc['w1']:.4g}, R₂ = {acc['R2']:.4g}); box C = {C:.4g}, "
                         f"U = {U:.4g}, B_max = {Bmax:.4g}, cap 1/(8dn) = {cap:.4g}, δ_route = "
                         f"{droute:.4g}; visited states in the r-thickened box: {inbox}/{nstates}")
            for r in runs:
                line = (f"  seed {r['seed']}: {r['class']} ({r['status']}, {r['updates']} "
                        f"updates), 2L/V_Y = {r['pop_norm']:.3g}, 2L_n/V_Y = "
                        f"{r['emp_norm']:.3g}, max|∇L_n| = {r['gmax']:.2g}, masses "
                        f"{np.round(r['masses'], 4).tolist()}, UC ratio {r['ratio']:.3g}, "
                        f"sup|∇L_n − ∇L| = {r['dev']:.3g} (fresh {deviation_factor}n: "
                        f"{r['dev_fresh']:.3g})")
                if "cert" in r:
                    ce = r["cert"]
                    line += (f"; {'in' if r['nonneg'] else 'OUTSIDE (negative mass)'} "
                             f"hypothesis; descent in the r-ball: {ce['found']} ({ce['how']}, "
                             f"L_n {ce['loss_p']:.3g} -> {ce['best']:.3g}; nearest exact fit at "
                             f"joint distance ≤ {ce['zero_distance']:.3g})")
                notes.append(line)
            parts.append(make_verdict(
                f"transfer[{tag}]",
                "spurious GD end states with non-negative masses and no descent point in their "
                f"joint ball of radius {radius:g}, plus undecided end states (bracket [0, that "
                "count]: a census cannot certify a fixed-radius minimum)", kind="at_most",
                constant=0.0, bracket=(0, len(bad) + n_und), provenance="numerical",
                notes=(f"{len(runs)} starts: {n_glob} global, {len(spur)} spurious "
                       f"({len(spur) - len(outside)} in hypothesis, {len(bad)} without a "
                       f"descent certificate; {len(outside)} with a negative mass, outside the "
                       f"hypothesis), {n_und} undecided",)))
            lo, hi = clopper_pearson(n_glob, len(runs), level)
            parts.append(make_verdict(
                f"success[{tag}]", f"Clopper–Pearson interval (level {level:g}) of the rate of "
                f"global end states (2L/V_Y ≤ {global_tol:g}) ≥ {success_min:g}",
                kind="at_least", constant=success_min, bracket=(lo, hi), provenance="numerical",
                notes=(f"{n_glob}/{len(runs)} global",)))
            rmax = max((r["ratio"] for r in runs), default=math.nan)
            parts.append(make_verdict(
                f"uniform comparison[{tag}]",
                "max over visited states of |(d/R₂)L_n − L| / (d B² δ̂_hi) (eq_uniform_comparison "
                "with the data's accuracy bracket)", kind="at_most", constant=1.0,
                bracket=(rmax, rmax), provenance="numerical"))
            need_n = n * (acc["hi"] / droute) ** 2
            parts.append(make_verdict(
                f"accuracy[{tag}]", "the data's accuracy bracket δ̂ against δ_route = "
                "min(1/(8dn), r²/(4dB_max²)), necessary for the comparison route",
                kind="at_most", constant=droute, bracket=(acc["lo"], acc["hi"]),
                provenance="numerical", role="control",
                notes=(f"n needed for δ̂_hi ≤ δ_route if δ̂ ∝ n^(-1/2): ≈ {need_n:.3g}",)))
            dv = max(r["dev"] for r in runs)
            dvf = max(r["dev_fresh"] for r in runs)
            expo = math.log(dv / dvf) / math.log(deviation_factor) if dv > 0 and dvf > 0 \
                else math.nan
            parts.append(make_verdict(
                f"gradient deviation[{tag}]",
                f"exponent log(sup|∇L_n − ∇L| / sup|∇L_fn − ∇L|)/log f, f = {deviation_factor} "
                f"(sup over the visited states: {dv:.4g} at n, {dvf:.4g} at f·n)",
                kind="within", constant=0.5, tol=0.25, bracket=(expo, expo),
                provenance="numerical", role="control"))
    # ---- the no-skip control
    if control_starts > 0:
        n0 = n_samples[0]
        c = census("skip_spurious", n0, skip=False, m=3, starts=control_starts,
                   max_updates=control_updates, **run_kw)
        cls = [r["class"] for r in c["runs"]]
        nsp = cls.count("spurious")
        notes.append(f"no-skip control (plain relu, m = 3, skip_spurious_minima's teacher, "
                     f"n = {n0}): {cls.count('global')} global, {nsp} spurious, "
                     f"{cls.count('undecided')} undecided")
        for r in c["runs"]:
            notes.append(f"  seed {r['seed']}: {r['class']} ({r['status']}), 2L/V_Y = "
                         f"{r['pop_norm']:.3g}, masses {np.round(r['masses'], 4).tolist()}")
        stall = sum(r["class"] == "undecided" and r["pop_norm"] > spurious_tol
                    for r in c["runs"])
        parts.append(make_verdict(
            "no-skip control", "spurious end states of the plain relu student (no skip): "
            "bracket [converged spurious, converged spurious + unconverged with 2L/V_Y > "
            "spurious_tol] ≥ 1: the census detects spurious empirical minima", kind="at_least",
            constant=1.0, bracket=(nsp, nsp + stall), provenance="numerical", role="control"))
    stmt = ("empirical minima of the bias-free relu student with a learned linear skip over "
            f"joint parameter balls of radius {radius:g} (GD census on n samples): every "
            "end state is global or has a descent point in its ball, GD succeeds at the declared "
            "rate, and the uniform comparison holds with the data's measured accuracy; the "
            f"accuracy the comparison route needs is reported ({PAPER})")
    return summary_verdict("skip_empirical_transfer", stmt, parts, notes=notes)
