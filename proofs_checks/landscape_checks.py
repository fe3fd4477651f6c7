r"""Skip connections and spurious minima for planar features (the skip-connection paper).

The skip-connection paper, "Removing spurious minima for planar features by skip connections",
studies bias-free relu students f(x) = Σ_i a_i relu(w_i·x) + v·x + c against teachers
y = Σ_k v*_k relu(u_k·x) with positive output weights and planar features (all u_k in one 2-D
plane).  This module reads its claims as:

* (b) ``skip_benign``: with the learned linear skip v·x there is no spurious local minimum with
  non-negative output weights once m ≥ k;
* (c) ``direction_count``: at critical points with positive output weights in 2-D, the number of
  distinct student directions is ≤ 2k;
* (d) ``teacher_span``: student directions of positive mass lie in the teacher span (d > 2)
  (checked at local minima; saddles reported).

((a), the spurious minimum of the plain relu student, is the check ``skip_spurious_minima``
(:mod:`proofs_checks.skip_spurious`); not repeated here.)

How they are checked.  A census over declared starts (data/configs/landscape/teachers.toml:
teachers, and the start rule: ``Student.init(seed, scale)`` with a → |a|) and widths
m = k … 2k: the critical-point finder of :mod:`popdyn.landscape` (trust-region Newton with the
exact Hessian, in the reduced coordinates u_i = |a_i| w_i with every sign +1, i.e. non-negative
output weights; units whose mass dies are removed and the boundary condition of a zero-weight
unit is tested), and, for (c) and (d), also Levenberg–Marquardt on ∇L = 0 (which reaches saddles).
Every local-minimum candidate goes to ``certify.critical_point`` (Krawczyk / interval Newton in
Arb; :func:`certify_point`).  Where that function is unavailable, every
minimum is reported "uncertified (certify.critical_point unavailable)" and the verdict is
``undecided``, never ``pass``.

Decision rules.
* ``skip_benign``: bracket [#certified spurious strict minima, #spurious candidates not
  certified to be saddles] ≤ 0 (a spurious candidate is a minimum-like point —
  ``strict_local_min``, ``degenerate``, or a boundary point with min_θ G(θ) ≥ 0 — whose normalized
  loss exceeds the global tolerance).  A certified spurious minimum fails the check (a
  counterexample); uncertified candidates leave it undecided.  A census can only fail or
  support the claim: a pass means "no spurious minimum reached from the declared starts".
* ``direction_count``: bracket [max, max] of the distinct directions (merged within 1e−6 rad)
  at the critical points found, ≤ 2k (numerical).
* ``teacher_span``: bracket [n, n] of the local minima found with a unit of positive mass off
  the teacher plane (|P⊥θ_i| > ``span_tol`` and not explained by a flat direction:
  :func:`span_status`), ≤ 0 (numerical).  Saddles are a control part (reported, not in the
  verdict): LM on ∇L = 0 finds genuine saddles with units off the plane (their gradient is
  ~1e−16 by popdyn's moment engine too), so the property holds, if at all, at minima only.
"""
from __future__ import annotations

import math
import tomllib

import numpy as np

import popdyn
from certify.critical import critical_point
from popdyn import landscape as ls
from popdyn.resources import data_path
from popdyn.landscape import Reduced, polish

from ._core import make_verdict, register, summary_verdict, Verdict

PAPER = ("\"Removing spurious minima for planar features by skip connections\" (its claims as "
         "this check reads them)")
UNAVAILABLE = "uncertified (certify.critical_point unavailable)"


# ---------------------------------------------------------------------------- declared setup
def declared_teachers() -> dict:
    """The declared teachers of data/configs/landscape/teachers.toml (name → dict)."""
    with data_path("configs", "landscape", "teachers.toml").open("rb") as fh:
        return tomllib.load(fh)["teacher"]


def make_teacher(name: str, d: int = 2):
    """The declared planar teacher ``name`` embedded in span(e1, e2) of R^d."""
    decl = declared_teachers()
    if name not in decl:
        raise ValueError(f"`teacher` must be one of {sorted(decl)}, got {name!r}")
    ang = np.deg2rad(np.asarray(decl[name]["angles"], float))
    U = np.zeros((ang.size, d))
    U[:, 0], U[:, 1] = np.cos(ang), np.sin(ang)
    return popdyn.Teacher.network("relu", np.asarray(decl[name]["weights"], float), U)


def declared_starts(student, seeds, scale):
    """Start s: ``student.init(seed=s, scale=scale)`` with a → |a| (non-negative output weights)."""
    out = []
    for s in seeds:
        p = student.init(int(s), float(scale))
        out.append(p.replace(a=np.abs(p.a)))
    return out


# ---------------------------------------------------------------------------- certification
def _critical_point_function():
    """certify's critical-point certifier (certify is a dependency of this package)."""
    return critical_point


def certify_point(student, params, teacher, *, prec: int = 128) -> dict:
    """``certify.critical_point(student, params, teacher, radius=None, prec=prec)`` as a plain
    dict (``verdict`` in strict_local_min / saddle / undecided, loss bracket, λ_min lower bound,
    radius, reason), or verdict ``"uncertified"`` with the reason when the function is
    unavailable or raises."""
    fn = _critical_point_function()
    if fn is None:
        return {"verdict": "uncertified", "reason": UNAVAILABLE}
    try:
        res = fn(student, params, teacher, radius=None, prec=prec)
    except Exception as exc:     # noqa: BLE001 -- reported, never a pass
        return {"verdict": "uncertified",
                "reason": f"uncertified (certify.critical_point raised {type(exc).__name__}: {exc})"}
    eigs = list(getattr(res, "hessian_eigs", []) or [])
    lo_eig = min((float(e.lo) for e in eigs), default=float("nan"))
    loss = getattr(res, "loss", None)
    return {"verdict": str(res.verdict), "reason": str(getattr(res, "reason", "")),
            "loss": None if loss is None else [float(loss.lo), float(loss.hi)],
            "lambda_min_lo": lo_eig, "radius": getattr(res, "radius", None)}


# ---------------------------------------------------------------------------- census
MINIMUM_LIKE = ("strict_local_min", "degenerate")


def _is_candidate(cp, loss_tol):
    c = cp.classification
    if c.kind == "global_min" or c.loss_normalized <= loss_tol:
        return False
    return c.kind in MINIMUM_LIKE


def census(teacher_name, *, d, widths, seeds, scale, skip=True, method="trust-exact",
           prec=128, certify=True, loss_tol=1e-10, gtol=1e-9):
    """Critical points per width from the declared starts (see the module docstring).

    Returns
    -------
    rows : list of dict
        Per width: ``m``, ``starts``, ``failures``, ``points`` (distinct), counts by kind,
        ``candidates`` (spurious minimum candidates) with their certification, and
        ``certified_global`` (certification of the global minima found).
    points : dict
        width → list of :class:`popdyn.landscape.CriticalPoint`.
    """
    T = make_teacher(teacher_name, d)
    rows, allpts = [], {}
    for m in widths:
        st = popdyn.Student(d, int(m), "relu", bias=False, skip=skip, intercept=True)
        starts = declared_starts(st, seeds, scale)
        pts, fails = ls.find_critical_points(st, T, starts, method=method, gtol=gtol,
                                             loss_tol=loss_tol)
        kinds = {k: 0 for k in ls.KINDS if k != "not_critical"}
        boundary = 0
        cands, globs = [], []
        for cp in pts:
            kinds[cp.kind] += 1
            boundary += cp.classification.pruned > 0
            if _is_candidate(cp, loss_tol):
                cert = (certify_point(cp.point.student, cp.point.params(), T, prec=prec)
                        if certify else {"verdict": "uncertified", "reason": "not requested"})
                cands.append({"loss_normalized": cp.classification.loss_normalized,
                              "kind": cp.kind, "pruned": cp.classification.pruned,
                              "lambda_min": cp.classification.lambda_min,
                              "grad_norm": cp.classification.grad_norm,
                              "starts": len(cp.starts), "certification": cert})
            elif cp.kind in ("global_min", "strict_local_min") and method == "trust-exact":
                cert = (certify_point(cp.point.student, cp.point.params(), T, prec=prec)
                        if certify else {"verdict": "uncertified", "reason": "not requested"})
                globs.append({"kind": cp.kind, "lambda_min": cp.classification.lambda_min,
                              "certification": cert["verdict"], "reason": cert["reason"]})
        rows.append({"m": int(m), "starts": len(starts), "failures": len(fails),
                     "points": len(pts), "kinds": kinds, "boundary_points": boundary,
                     "candidates": cands, "certified_global": globs,
                     "failure_reasons": [r for _, r in fails][:3]})
        allpts[int(m)] = pts
    return rows, allpts


def _census_table(name, rows):
    lines = [f"teacher {name}: m | starts | failed | distinct crit. pts | global | strict local "
             "| degenerate | saddle | boundary | spurious candidates (certified)"]
    for r in rows:
        k = r["kinds"]
        cert = [c["certification"]["verdict"] for c in r["candidates"]]
        lines.append(f"  m={r['m']:2d} | {r['starts']:3d} | {r['failures']:2d} | {r['points']:3d} | "
                     f"{k['global_min']:3d} | {k['strict_local_min']:3d} | {k['degenerate']:3d} | "
                     f"{k['saddle']:3d} | {r['boundary_points']:3d} | {len(cert)} {cert}")
        for c in r["candidates"]:
            lines.append(f"      candidate: MSE/V_Y = {c['loss_normalized']:.6g}, kind {c['kind']}, "
                         f"λ_min = {c['lambda_min']:.3g}, |∇L| = {c['grad_norm']:.2g}, "
                         f"pruned {c['pruned']}, reached from {c['starts']} starts; "
                         f"{c['certification']['reason'] or c['certification']['verdict']}")
        gl = r["certified_global"]
        if gl:
            lines.append("      minima at the global value: "
                         + ", ".join(f"{g['certification']}" for g in gl))
    return lines


def census_figure(results, path, controls=None):
    """Bar chart of the census: per teacher and width, the distinct critical points by kind
    (with the skip; points on a degenerate global-minimum set reached from different starts
    count separately), and -- ``controls``: teacher → census rows without the skip at m = k --
    one last panel of the no-skip control."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    kinds = ("global_min", "strict_local_min", "degenerate", "saddle")
    colors = {"global_min": "tab:green", "strict_local_min": "tab:red",
              "degenerate": "tab:orange", "saddle": "tab:blue"}
    panels = [(f"{name} (k = {len(declared_teachers()[name]['angles'])}), with skip", rows,
               [r["m"] for r in rows], [str(r["m"]) for r in rows])
              for name, rows in results.items()]
    if controls:
        rows = [r for rs in controls.values() for r in rs]
        panels.append(("without skip (control), m = k", rows, list(range(len(rows))),
                       [f"{nm}\nm={r['m']}" for nm, rs in controls.items() for r in rs]))
    n = len(panels)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 3.6), squeeze=False)
    for ax, (title, rows, ms, labels) in zip(axes[0], panels):
        bottom = np.zeros(len(ms))
        for k in kinds:
            h = np.array([r["kinds"][k] for r in rows], float)
            ax.bar(ms, h, bottom=bottom, color=colors[k], label=k.replace("_", " "))
            bottom += h
        for x, r in zip(ms, rows):
            ax.text(x, bottom[ms.index(x)] + 0.1, f"{r['starts']} st.", ha="center", fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("width m")
        ax.set_ylabel("distinct critical points")
        ax.set_xticks(ms, labels, fontsize=7)
        ax.set_ylim(0, 1.15 * max(bottom.max(), 1.0))
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Census of critical points, bias-free relu + learned skip, a ≥ 0 "
                 "(skip-connection paper)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------- checks
@register("skip_benign",
          description="with the learned linear skip, no spurious local minimum with non-negative "
                      "output weights once m ≥ k (census m = k…2k, minima certified by "
                      "certify.critical_point; the skip-connection paper)",
          quick=dict(teachers=("pair_acute",), d=2, seeds=(0, 1, 2), scale=1.0, prec=128,
                     figure=None),
          full=dict(teachers=("tri_skew", "tri_sym", "tri_narrow", "pair_acute"), d=2,
                    seeds=tuple(range(40)), scale=1.0, prec=128, figure=None))
def skip_benign(*, teachers, d, seeds, scale, prec, figure):
    """Census with the skip; see the module docstring for the decision rule."""
    stmt = ("with the learned linear skip v·x, no spurious local minimum with non-negative output "
            "weights once m ≥ k: #certified spurious minima ≤ #uncertified candidates ≤ 0 over "
            "the census m = k…2k (a census: a pass means none was reached from the declared "
            f"starts; {PAPER})")
    available = _critical_point_function() is not None
    parts, notes, results = [], [], {}
    for name in teachers:
        k = len(declared_teachers()[name]["angles"])
        rows, _ = census(name, d=d, widths=range(k, 2 * k + 1), seeds=seeds, scale=scale,
                         prec=prec)
        results[name] = rows
        notes += _census_table(name, rows)
        cands = [c for r in rows for c in r["candidates"]]
        # certified spurious: a certified strict local minimum whose loss bracket lies above
        # the global minimum's value 0 (L = ½E[(f − y)²] ≥ 0, = 0 at the teacher)
        certified = sum(c["certification"]["verdict"] == "strict_local_min"
                        and (c["certification"].get("loss") or [0.0])[0] > 0.0 for c in cands)
        open_ = sum(c["certification"]["verdict"] != "saddle" for c in cands)
        v = make_verdict(f"skip_benign[{name}]", f"no spurious minimum for teacher {name}",
                         kind="at_most", constant=0.0, bracket=(certified, open_),
                         provenance="numerical",
                         settings={"teacher": name, "widths": [k, 2 * k]})
        if not available:
            v = v.replace(verdict="undecided", margin=-math.inf if open_ else 0.0,
                          notes=(UNAVAILABLE + ": every minimum reported uncertified",))
        elif v.verdict == "pass":
            # globally-valued minima that are certified strict are fine; but a pass needs the
            # census to have reached minima at all
            if not any(r["kinds"]["global_min"] for r in rows):
                v = v.replace(verdict="undecided", notes=("no global minimum reached",))
        parts.append(v)
    # control (reported, not in the verdict): the same census without the skip at m = k,
    # to show that the census does reach spurious minima where the skip is absent
    controls = {}
    for name in teachers:
        k = len(declared_teachers()[name]["angles"])
        rows0, _ = census(name, d=d, widths=[k], seeds=seeds, scale=scale, skip=False, prec=prec)
        controls[name] = rows0
        notes += ["control, without the skip:"] + _census_table(name, rows0)
        c0 = rows0[0]["candidates"]
        n_cert = sum(c["certification"]["verdict"] == "strict_local_min"
                     and (c["certification"].get("loss") or [0.0])[0] > 0.0 for c in c0)
        parts.append(make_verdict(f"no_skip_control[{name}]",
                                  f"without the skip (m = k = {k}): spurious minimum candidates "
                                  "found (certified, all)", kind="at_least", constant=1.0,
                                  bracket=(n_cert, len(c0)), provenance="numerical",
                                  role="control"))
    if not available:
        notes.insert(0, UNAVAILABLE + ": every minimum is reported uncertified and the verdict "
                     "is undecided")
    if figure:
        census_figure(results, figure, controls)
        notes.append(f"figure: {figure}")
    out = summary_verdict("skip_benign", stmt, parts, notes=notes,
                          settings=dict(teachers=list(teachers), d=d, seeds=list(seeds),
                                        scale=scale, prec=prec))
    if not available:
        out = out.replace(verdict="undecided")
    return out


def _critical_points_both(name, d, seeds, scale):
    """Critical points from trust-exact and from LM on ∇L = 0, widths k…2k (no certification)."""
    k = len(declared_teachers()[name]["angles"])
    pts = []
    for method in ("trust-exact", "newton"):
        _, allpts = census(name, d=d, widths=range(k, 2 * k + 1), seeds=seeds, scale=scale,
                           method=method, certify=False)
        for m, ps in allpts.items():
            pts += [(m, method, cp) for cp in ps]
    return k, pts


@register("direction_count",
          description="at critical points with positive output weights in 2-D (with the skip), "
                      "the number of distinct student directions is ≤ 2k (the skip-connection paper)",
          quick=dict(teachers=("pair_acute",), seeds=(0,), scale=1.0),
          full=dict(teachers=("tri_skew", "tri_sym", "tri_narrow", "pair_acute"),
                    seeds=tuple(range(30)), scale=1.0))
def direction_count(*, teachers, seeds, scale):
    stmt = ("at every critical point found (positive output weights, d = 2, with the skip), the "
            f"number of distinct directions (merged within 1e−6 rad) is ≤ 2k ({PAPER})")
    parts, notes = [], []
    for name in teachers:
        k, pts = _critical_points_both(name, 2, seeds, scale)
        counts = [len(cp.directions()) for _, _, cp in pts]
        mx = max(counts, default=float("nan"))
        by_kind = {}
        for (_, _, cp), n in zip(pts, counts):
            by_kind.setdefault(cp.kind, []).append(n)
        notes.append(f"teacher {name} (k = {k}): {len(pts)} critical points; max distinct "
                     f"directions by kind: " + ", ".join(f"{kk}: {max(v)} (of {len(v)})"
                                                         for kk, v in sorted(by_kind.items())))
        if not pts:
            parts.append(Verdict(f"direction_count[{name}]", "undecided", "no critical points",
                                 2.0 * k, (-math.inf, math.inf), "numerical", -math.inf))
            continue
        parts.append(make_verdict(f"direction_count[{name}]",
                                  f"max distinct directions ≤ 2k = {2 * k}", kind="at_most",
                                  constant=2.0 * k, bracket=(mx, mx), provenance="numerical"))
    return summary_verdict("direction_count", stmt, parts, notes=notes,
                           settings=dict(teachers=list(teachers), seeds=list(seeds), scale=scale))


def span_status(cp, teacher, *, span_tol=1e-6, gtol=1e-9, loss_tol=1e-10):
    """(max |P⊥θ_i|, status) of a critical point against the teacher plane span(e1, e2).

    ``"in_span"``: every unit direction within ``span_tol``.  Otherwise the units and v are
    projected onto the plane (units whose projection has no mass are dropped) and re-polished
    by Newton: ``"flat"`` if the projected point is a critical point (|∇L| ≤ gtol) at the same
    loss (within loss_tol·V_Y) -- the off-plane component lies along a flat (degenerate)
    direction of the loss and is not determined by it (e.g. units that split one teacher
    feature: a quartic valley) --, else ``"out_of_span"``.
    """
    r = cp.point
    Th = r.U / np.linalg.norm(r.U, axis=1, keepdims=True)
    off = float(np.max(np.linalg.norm(Th[:, 2:], axis=1)))
    if off <= span_tol:
        return off, "in_span"
    U, v = r.U.copy(), r.v.copy()
    U[:, 2:] = 0.0
    v[2:] = 0.0
    rp = Reduced(r.student, r.signs, U, v, r.c)
    keep = np.linalg.norm(U, axis=1) > 1e-6 * max(np.linalg.norm(U, axis=1).max(), 1.0)
    if not keep.any():
        return off, "out_of_span"
    rp = polish(rp.drop(keep), teacher, gtol)
    L, g, _ = ls.reduced_loss_grad_hessian(rp, teacher, hessian=False)
    same = abs(L - cp.loss) <= loss_tol * float(teacher.variance)
    return off, ("flat" if (np.linalg.norm(g) <= gtol and same) else "out_of_span")


@register("teacher_span",
          description="at local minima (positive output weights, with the skip, d > 2), every "
                      "student direction of positive mass lies in the teacher span; saddles are "
                      "reported as a control (the skip-connection paper)",
          quick=dict(teachers=("pair_acute",), dims=(3,), seeds=(0,), scale=1.0,
                     span_tol=1e-6),
          full=dict(teachers=("tri_skew", "tri_narrow", "pair_acute"), dims=(3, 4, 6),
                    seeds=tuple(range(20)), scale=1.0, span_tol=1e-6))
def teacher_span(*, teachers, dims, seeds, scale, span_tol):
    stmt = ("at every local minimum found (positive output weights, with the skip, d > 2), every "
            "unit direction lies in the teacher plane span(e1, e2): #minima with a unit off the "
            f"plane by more than span_tol = {span_tol:g} (not explained by a flat direction, "
            f"see span_status) ≤ 0; saddles are reported as a control ({PAPER})")
    parts, notes = [], []
    for name in teachers:
        for d in dims:
            if d <= 2:
                raise ValueError(f"`dims` must be > 2 (the claim is about d > 2), got {d}")
            T = make_teacher(name, d)
            k, pts = _critical_points_both(name, d, seeds, scale)
            stat = {"minimum": [], "saddle": []}
            for _, _, cp in pts:
                grp = "saddle" if cp.kind == "saddle" else "minimum"
                stat[grp].append(span_status(cp, T, span_tol=span_tol))
            for grp, role in (("minimum", "claim"), ("saddle", "control")):
                xs = stat[grp]
                bad = sum(s_ == "out_of_span" for _, s_ in xs)
                raw = max((o for o, _ in xs), default=float("nan"))
                badmax = max((o for o, s_ in xs if s_ == "out_of_span"), default=0.0)
                label = "minima" if grp == "minimum" else "saddles"
                notes.append(f"teacher {name}, d = {d}, {label}: {len(xs)} found; in span "
                             f"{sum(s_ == 'in_span' for _, s_ in xs)}, flat "
                             f"{sum(s_ == 'flat' for _, s_ in xs)}, out of span {bad} "
                             f"(max |P⊥θ| raw {raw:.3g}, of the out-of-span ones {badmax:.3g})")
                nm = f"teacher_span[{name},d={d},{label}]"
                if not xs:
                    parts.append(Verdict(nm, "undecided", f"no {label} found", 0.0,
                                         (-math.inf, math.inf), "numerical", -math.inf, role=role))
                    continue
                parts.append(make_verdict(nm, f"{label} with a unit out of the teacher plane",
                                          kind="at_most", constant=0.0, bracket=(bad, bad),
                                          provenance="numerical", role=role))
    return summary_verdict("teacher_span", stmt, parts, notes=notes,
                           settings=dict(teachers=list(teachers), dims=list(dims),
                                         seeds=list(seeds), scale=scale, span_tol=span_tol))
