r"""Check ``skip_spurious_minima``: a certified spurious strict local minimum of the plain
bias-free relu student for a three-neuron planar teacher in d = 2, its embeddings at widths 4
and 5, and what the finder finds with the learned linear skip ("Removing spurious
minima for planar features by skip connections"; cf. Safran & Shamir 2018).

Declared before running
-----------------------
* Teacher ``TEACHER``: y = relu(x₁) + relu(x₂) + relu(−x₁) (directions at angles 0, π/2, π,
  output weights 1, 1, 1 -- positive, planar, "spread"), d = 2.
* Students: ``Student(2, m, "relu", bias=False, intercept=False)`` (and ``skip=True``), standard
  scaling.
* Starts: a_j ~ N(0, 1), w_j ~ N(0, I₂) (and v ~ N(0, 0.1² I₂) with the skip) from
  ``numpy.random.default_rng(seed)``, ``starts`` of them; L-BFGS-B on popdyn's exact
  ``loss_and_grad`` (gtol 1e−12), then float Newton in the reduced coordinates
  u_j = |a_j| w_j (:mod:`certify.critical`); a point counts as a local minimum candidate when
  |∇L|_∞ ≤ 1e−10 and the float reduced Hessian has λ_min > 1e−8, as spurious when L > 1e−8.
  Candidates are deduplicated up to unit permutation (sorted rows, tolerance 1e−6).

Claims (every bracket rigorous, :func:`certify.critical_point` at radius ``radius``):

* width 3: a spurious candidate is certified: unique critical point in the box (Krawczyk),
  Hessian λ_min > 0 on the whole box (``at_least`` 0), loss bracket above the global minimum's
  value 0 (``at_least`` the smallest positive float, i.e. lo > 0);
* widths 4 and 5: the embedding that splits unit i into 2 (width 4) or 3 (width 5) parallel
  copies of the same sign.  Every duplicate embedding has a flat segment of critical points (mass
  moves between copies), so none is strict; what is certified (:func:`certify.critical.
  split_is_local_min`) is that it is a local minimum whose minimizing set nearby is exactly that
  segment: ε_i h > 0 near the kink line of unit i for every state of the width-3 box (bracket of
  the margin ``at_least`` 0).  Units whose margin is certainly negative give saddles when split
  (certified by the same arcs: the loss falls along an opposite-tilt split) and are reported.

Controls (reported, not in the verdict): the global minimum (student = teacher) certified with a
loss bracket containing 0; a zero-mass embedding (an extra unit with a = 0) is not a local
minimum: g(û) = E[h relu(û·x)] is certainly nonzero at some û, and a = −sgn(g) t, w = t û gives
L = L* − t²|g(û)| + t⁴/4 < L* for small t; the finder with the learned skip (counts of starts,
critical points, certified minima by kind).

References
----------
"Removing spurious minima for planar features by skip connections"; I. Safran, O. Shamir,
ICML 2018; :mod:`certify.critical`.
"""
from __future__ import annotations

import math

import numpy as np
from flint import arb
from scipy.optimize import minimize

import popdyn
from certify import _arb as A
from certify.critical import (_ArbB, _FloatB, _lgh, _pair, _problem, critical_point, from_reduced, newton_refine, split_is_local_min)

from ._core import make_verdict, register, summary_verdict, Verdict

#: the declared teacher: directions (rows) and output weights
TEACHER_U = ((1.0, 0.0), (0.0, 1.0), (-1.0, 0.0))
TEACHER_ALPHA = (1.0, 1.0, 1.0)
GRAD_TOL = 1e-10
EIG_TOL = 1e-8
LOSS_TOL = 1e-8
TINY = 5e-324


def teacher():

    return popdyn.Teacher.network("relu", np.array(TEACHER_ALPHA), np.array(TEACHER_U))


def _student(m, skip):

    return popdyn.Student(2, m, "relu", bias=False, intercept=False, skip=skip)


def find_critical(m, *, skip, starts, seed):
    """The declared float search (module docstring).  Returns (records, n_converged) with
    records dicts {x, signs, loss, gmax, eig_min} of distinct candidates (all converged points,
    not only minima)."""


    T = teacher()
    S = _student(m, skip)
    rng = np.random.default_rng(seed)
    recs, conv = [], 0
    for _ in range(starts):
        a0 = rng.normal(size=m)
        W0 = rng.normal(size=(m, 2))
        v0 = 0.1 * rng.normal(size=2) if skip else None

        def split(z):
            return popdyn.Params(z[:m], z[m:3 * m].reshape(m, 2), np.zeros(m), 0.0,
                                 z[3 * m:] if skip else None)

        def fg(z):
            L, g = popdyn.loss_and_grad(S, split(z), T, check=False)
            return L, np.concatenate([g.a, g.W.ravel()] + ([g.v] if skip else []))

        z0 = np.concatenate([a0, W0.ravel()] + ([v0] if skip else []))
        with np.errstate(all="ignore"):     # diverging runs (|u| → ∞) are dropped below
            r = minimize(fg, z0, jac=True, method="L-BFGS-B",
                         options=dict(maxiter=3000, gtol=1e-12, ftol=1e-16))
            p = split(r.x)
            if np.any(p.a == 0) or not p.is_finite():
                continue
            prob, x = _problem(S, p, T)
            x, gmax, _ = newton_refine(prob, x, steps=20)
            if not (np.all(np.isfinite(x)) and gmax <= GRAD_TOL):
                continue
            L, _, H = _lgh(x, prob, _FloatB, hess=True, refuse_coincident=False)
        conv += 1
        key = _key(x, prob.signs, m)
        if any(np.allclose(key, q["key"], atol=1e-6) for q in recs):
            continue
        recs.append({"x": x, "signs": prob.signs.copy(), "loss": float(L), "gmax": gmax,
                     "eig_min": float(np.linalg.eigvalsh(H)[0]), "key": key,
                     "params": None})
    return recs, conv


def _key(x, signs, m):
    U = np.column_stack([x[:2 * m].reshape(m, 2), signs])
    rows = sorted(map(tuple, np.round(U, 6)))
    return np.concatenate([np.ravel(rows), np.round(x[2 * m:], 6)])


def _zero_mass_margin(cp, prob, prec, n_dirs=64):
    """max over n_dirs directions û of |g(û)| (rigorous lower bound) with g(û) = E[h relu(û·x)]
    at the certified point (every point of the box K(X))."""


    best = (0.0, None)
    with A.workprec(prec):
        B = _ArbB()
        m, d = prob.m, prob.d
        box = [A.ball(float(cp.enclosure.lo[i]), float(cp.enclosure.hi[i])) for i in range(prob.P)]
        for k in range(n_dirs):
            ang = 2 * math.pi * (k + 0.5) / n_dirs
            uh = B.arr([math.cos(ang), math.sin(ang)])
            g = arb(0)
            for j in range(m):
                g = g + int(prob.signs[j]) * _pair(np.array(box[j * d:(j + 1) * d], dtype=object),
                                                   uh, B)["K"]
            for t, z in enumerate(prob.Z):
                g = g - arb(float(prob.alpha[t])) * _pair(B.arr(list(z)), uh, B)["K"]
            lo = A.lower(abs(g)) if not g.contains(0) else 0.0
            if lo > best[0]:
                best = (lo, ang)
    return best


@register("skip_spurious_minima",
          description="certified spurious strict minimum of the plain bias-free relu student "
                      "(3-neuron planar teacher, d = 2), its width-4/5 embeddings, and the skip",
          quick=dict(starts=8, seed=3, radius=1e-4, prec=128, skip_widths=(3,), skip_starts=2),
          full=dict(starts=40, seed=3, radius=1e-4, prec=128, skip_widths=(3, 4, 5, 6),
                    skip_starts=20))
def check(*, starts, seed, radius, prec, skip_widths, skip_starts):


    T = teacher()
    S3 = _student(3, False)
    recs, conv = find_critical(3, skip=False, starts=starts, seed=seed)
    minima = [q for q in recs if q["eig_min"] > EIG_TOL]
    spurious = sorted([q for q in minima if q["loss"] > LOSS_TOL], key=lambda q: q["loss"])
    notes = [f"declared teacher: directions {TEACHER_U}, output weights {TEACHER_ALPHA}; "
             f"width 3, {starts} starts (seed {seed}): {conv} converged, {len(recs)} distinct "
             f"critical points, {len(minima)} float minima, {len(spurious)} spurious"]
    for q in recs:
        notes.append(f"  L = {q['loss']:.10g}, |∇L|∞ = {q['gmax']:.1e}, float λ_min = "
                     f"{q['eig_min']:.4g}, signs {q['signs'].astype(int).tolist()}, "
                     f"u = {np.round(q['x'], 6).tolist()}")
    parts = []
    if not spurious:
        parts.append(Verdict("width 3: spurious strict minimum", "undecided",
                             "the finder found no spurious float minimum from the declared starts",
                             0.0, (-math.inf, math.inf), "rigorous", -math.inf))
        return summary_verdict("skip_spurious_minima", _STATEMENT, parts, notes=notes)
    q = spurious[0]
    p3 = from_reduced(S3, q["x"], q["signs"])
    cp = critical_point(S3, p3, T, radius=radius, prec=prec)
    eig = cp.min_eig
    notes.append(f"width 3 certificate: {cp.verdict}; {cp.reason}; box radius {cp.radius:g}")
    parts.append(make_verdict(
        "width 3: Hessian λ_min > 0 on the box",
        f"Krawczyk-certified unique critical point in the box of radius {cp.radius:g} "
        f"(contraction {cp.contraction:.3g}); λ_min of every Hessian on the box (reduced "
        "coordinates)", kind="at_least", constant=0.0,
        bracket=(eig.lo, eig.hi) if (eig is not None and cp.verdict != "undecided")
        else (-math.inf, math.inf), provenance="rigorous",
        notes=(f"eigenvalue brackets: {', '.join(str(e) for e in cp.hessian_eigs)}",)))
    if cp.verdict == "strict_local_min" and eig.lo <= 0:   # pragma: no cover (consistency)
        raise AssertionError("inconsistent verdict")
    lb = cp.loss
    parts.append(make_verdict(
        "width 3: loss above the global minimum 0",
        "loss bracket at the certified critical point; the global minimum (student = teacher) "
        "has loss 0; pass iff lo > 0", kind="at_least", constant=TINY,
        bracket=(lb.lo, lb.hi) if lb is not None else (-math.inf, math.inf),
        provenance="rigorous"))
    # ---- embeddings by duplicate units
    prob, _ = _problem(S3, p3, T)
    splits = {i: split_is_local_min(S3, p3, T, cp, i, eta=1e-3, prec=prec) for i in range(3)}
    good = [i for i in range(3) if splits[i]["certified"]]
    for i in range(3):
        sp = splits[i]
        kind = ("local minimum (non-strict)" if sp["certified"] else
                "not a local minimum (saddle), certified" if sp["not_min"] else "undecided")
        notes.append(f"split unit {i}: ε_i h ∈ [{sp['min_margin']:.6g}, {sp['max_margin']:.6g}] "
                     f"on the kink arcs -> {kind}")
    bad = [i for i in range(3) if splits[i]["not_min"]]
    if bad:
        parts.append(make_verdict(
            "control: splitting the other units gives saddles",
            f"max over the kink arcs of units {bad} of ε_i h (< 0 proves the split is not a "
            "local minimum)", kind="at_most", constant=-TINY,
            bracket=(min(splits[i]["min_margin"] for i in bad),
                     max(splits[i]["max_margin"] for i in bad)),
            provenance="rigorous", role="control"))
    for width, copies in ((4, 2), (5, 3)):
        if not good:
            parts.append(Verdict(f"width {width}: split embedding", "undecided",
                                 "no unit has a certified positive kink margin", 0.0,
                                 (-math.inf, math.inf), "rigorous", -math.inf))
            continue
        i = max(good, key=lambda j: splits[j]["min_margin"])
        # the embedded state (balanced), and popdyn's loss / gradient there as a float check
        U = q["x"].reshape(3, 2)
        rows = [U[j] for j in range(3) if j != i] + [U[i] / copies] * copies
        signs = [q["signs"][j] for j in range(3) if j != i] + [q["signs"][i]] * copies
        Sw = _student(width, False)
        pw = from_reduced(Sw, np.ravel(rows), signs)
        Lw, gw = popdyn.loss_and_grad(Sw, pw, T)
        gmax = float(max(np.max(np.abs(gw.a)), np.max(np.abs(gw.W))))
        sp = splits[i]
        parts.append(make_verdict(
            f"width {width}: unit {i} split into {copies} copies is a local minimum",
            "min over the width-3 box and the arcs within 2η of the kink line of unit i of ε_i h "
            f"(η = {sp['eta']:g}, {sp['n_arcs']} sub-arcs per side, Arb); > 0 proves L_wide ≥ L* "
            "near the split, equality exactly on the split segment (non-strict: no duplicate "
            "embedding is strict)", kind="at_least", constant=TINY,
            bracket=(sp["min_margin"], sp["min_margin"]) if math.isfinite(sp["min_margin"])
            else (-math.inf, math.inf), provenance="rigorous",
            notes=(f"popdyn at the embedded state: L = {Lw:.12g} (width-3 bracket {lb}), "
                   f"max |∇L| = {gmax:.2e}",)))
    # ---- controls
    Tp = popdyn.Params(np.array(TEACHER_ALPHA), np.array(TEACHER_U), np.zeros(3))
    cg = critical_point(S3, Tp, T, radius=radius, prec=prec)
    parts.append(make_verdict(
        "control: global minimum (student = teacher)", "loss bracket at the certified critical "
        f"point at the teacher ({cg.verdict}) contains 0", kind="contains", constant=0.0,
        bracket=(cg.loss.lo, cg.loss.hi) if cg.loss is not None else (1.0, 1.0),
        provenance="rigorous", role="control", notes=(cg.reason,)))
    if cp.verdict == "strict_local_min":
        gmin, ang = _zero_mass_margin(cp, prob, prec)
        parts.append(make_verdict(
            "control: a zero-mass extra unit is not a local minimum",
            "max_û |g(û)|, g(û) = E[h relu(û·x)] on the certified enclosure (64 directions); "
            "> 0 gives a descent path a = −sgn(g)t, w = tû", kind="at_least", constant=TINY,
            bracket=(gmin, gmin), provenance="rigorous", role="control",
            notes=(f"best direction angle {ang!r}",) if ang is not None else ()))
    # ---- with the learned skip
    dv = 0.5 * (np.sum(q["signs"][:, None] * q["x"].reshape(3, 2), 0)
                - np.array(TEACHER_ALPHA) @ np.array(TEACHER_U))
    notes.append(f"with the skip at v = 0 the width-3 spurious point has ∂L/∂v = "
                 f"{np.round(dv, 8).tolist()} (not a critical point of the skip student)")
    skip_spurious, skip_lines = 0, []
    for m in skip_widths:
        srecs, sconv = find_critical(m, skip=True, starts=skip_starts, seed=seed + 1000 * m)
        Ssk = _student(m, True)
        kinds = {"strict_local_min": 0, "saddle": 0, "undecided": 0}
        spur = 0
        for r_ in srecs:
            ps = from_reduced(Ssk, r_["x"], r_["signs"])
            c = critical_point(Ssk, ps, T, radius=radius, prec=prec)
            kinds[c.verdict] += 1
            if c.verdict == "strict_local_min" and c.loss.lo > 0:
                spur += 1
            skip_lines.append(f"  skip m = {m}: L = {r_['loss']:.6g}, float λ_min = "
                              f"{r_['eig_min']:.3g} -> {c.verdict} ({c.reason[:90]})")
        skip_spurious += spur
        notes.append(f"with the skip, width {m}: {skip_starts} starts, {sconv} converged, "
                     f"{len(srecs)} distinct critical points, certified {kinds}, spurious "
                     f"certified strict minima: {spur}")
    notes.extend(skip_lines)
    parts.append(make_verdict(
        "control: certified spurious strict minima with the skip",
        f"count over widths {tuple(skip_widths)} from the declared starts (reported: the skip "
        "claim itself is the check skip_benign)", kind="at_most", constant=0.0,
        bracket=(skip_spurious, skip_spurious), provenance="rigorous", role="control"))
    return summary_verdict("skip_spurious_minima", _STATEMENT, parts, notes=notes)


_STATEMENT = ("the plain bias-free relu student has a certified spurious strict local minimum "
              "(reduced coordinates) for the declared 3-neuron planar teacher in d = 2, and its "
              "duplicate-unit embeddings at widths 4 and 5 are certified (non-strict) local minima")
