r"""Check ``weight_decay_landscape``: spurious local minima of the ℓ2-regularized empirical loss of
two-layer relu networks against the width m and the initialization scale (E. Boursier,
M. Bowditch, M. Englert, R. Lazić, "Favorability of loss landscape with weight decay requires
both large overparametrization and initialization", arXiv 2505.22578; first version "Benignity
of loss landscape with weight decay requires both large overparametrization and
initialization").

Source
------
The paper's full text is not in the search store: only its abstract (and the start of its
introduction) is.  From the abstract: for the ℓ2-regularized training loss of two-layer relu
networks, the landscape is benign -- free of spurious local minima -- when m ≳ min(n^d, 2^n)
(n points in R^d); "in this regime, almost all constant activation regions contain a global
minimum and no spurious local minima"; the level is also necessary, "via the example of
orthogonal data"; the results matter in the large-initialization regime, while from small
initialization "optimization can still converge to spurious local minima, despite the global
benignity of the landscape".  A secondary summary (not authoritative) adds a log(n/ε) factor and
the convex reformulation.  The normalization, the bias-free network, the data (Gaussian points
with relu-teacher labels, orthogonal points, the three-point "x̂" construction with linear labels
for the small-initialization experiment) and the balanced initialization w_j ~ N(0, s²I),
a_j = ±|w_j| are read from the authors' public experiment code, not from the paper's theorems:
their statements (constants, probability levels, the law of the random region) are not
available here.

What is taken as the setting
----------------------------
:mod:`popdyn.landscape.empirical`: f(x) = Σ_j a_j relu(w_j·x) (no biases),
L = (1/2n)Σ(f(x_i) − y_i)² + (λ/2)|θ|² (half the authors' objective, same λ: the same minima).
The number of (pattern, sign) classes N = 2(K − 1) (K realizable activation patterns, the
all-inactive one excluded; K = 2Σ_{i<d} C(n−1, i) ≤ min(2n^{d−1}, 2^n) for data in general
position, = 2^n for orthogonal data) is the width scale of the paper's threshold; the paper's
own threshold min(n^d, 2^n) is reported next to it.

Procedure (declared: ``data/configs/weight_decay_landscape.toml``)
------------------------------------------------------------------
For every data set: the cells of the arrangement (certified complete), the global optimum
bracketed by the convex reformulation ([lower, upper], both rigorous); for every width m and
both initialization scales, ``starts`` runs of monotone full-batch GD (``steps`` updates), each
end state attributed to the minimum of L over the closure of its activation region
(:func:`popdyn.landscape.empirical.region_candidate`: L ≥ the region's convex reduced objective)
when its loss is within a factor 1 + ``assoc_tol`` of it (otherwise "undecided: not converged";
numerical attribution), and that point certified (:func:`~certify.landscape_empirical.
certify_state`: Krawczyk on the region's polynomial gradient, Hessian eigenvalue brackets, the
zero units' dual margin, exact kinks) and classified global / spurious / saddle / undecided
(:func:`~popdyn.landscape.empirical.classify`; "spurious" needs a certified local minimum whose
loss is above a certified upper bound on the width-m minimum: the convex solution when it fits
in m units, else the best end state of that width).  Each certificate is rigorous; the
attribution of a GD end state to it is numerical, so the claims are tagged numerical.

Claims
------
* ``global optimum certified``: the widest global-optimum bracket (upper − lower) over the data
  sets ≤ ``gap_tol`` (rigorous);
* ``large width, large init: no spurious``: certified spurious end states at large
  initialization over widths m ≥ N, all data sets: bracket [certified, certified + undecided] ≤ 0;
* ``orthogonal data, small width: spurious``: certified spurious end states at large
  initialization at the smallest width on the orthogonal data sets ≥ 1 (the necessity example);
  an existence claim, so the bracket is [certified, ∞): a census that finds no witness leaves
  it undecided, it cannot refute it;
* ``threshold``: the smallest width m_clean from which on no spurious end state is found at
  large initialization, divided by min(n^d, 2^n), max over data sets, ≤ 1 (m ≳ min(n^d, 2^n)
  suffices); the bracket counts undecided end states as clean (lower end) and as spurious
  (upper end);
* ``regions hold a global minimum``: the Clopper–Pearson lower end (level ``level``) of the
  fraction of random activation regions at the largest width (``regions`` draws of the large-init
  law per data set, pooled) whose closure holds a global minimum (restricted convex optimum ≤
  the certified global upper bound + ``global_tol``) ≥ ``region_min``;
* ``small init: non-global end states at large width``: end states at small initialization,
  widths m ≥ N, on ``small_datasets``, certified spurious or certified saddle ≥ 1 (the contrast:
  GD from small initialization ends, within the declared updates, at a point that is not a
  global minimum although the landscape at that width is benign); an existence claim with the
  bracket [certified, ∞), the Clopper–Pearson upper end of the rate of such end states in the
  notes.  The abstract says "converge
  to spurious local minima"; with zero units present a non-global critical point is a saddle
  (a zero unit can grow: the dual margin is negative), so the spurious-only count is a control.

Controls: the pattern counts against the general-position formula, the spurious rate per width
with its Clopper–Pearson interval, the regions' fraction per width, the wall times.

What stays undecided
--------------------
A region minimum with a unit on a kink w_j·x_l = 0 that is not forced by exact orthogonality
(the convex optimum on a face of its cone, e.g. some Gaussian data sets) is refused by the
in-region Krawczyk certificate (no one-sided KKT certificate here); an end state whose loss is
more than a factor 1 + ``assoc_tol`` above its region's minimum after ``steps`` updates (wide
networks from large initialization converge slowly) is not attributed.  Both count as undecided,
and the claims take them as possibly spurious.

Not tested
----------
The theorems' constants and probability statements (only finite run counts here), the log(n/ε)
factor, the law of the random region the paper uses, widths far beyond 64, n > 8 or d > 3, the
lower-bound construction for orthogonal data itself (only its consequence: spurious minima at
small width), gradient flow (GD with step control instead), every GD end state that is not
attributed (counted as undecided), the feature-learning analysis behind the small-initialization
statement (only its outcome is measured), networks with biases (``with_bias`` reduces them to
this case; not run).

References
----------
Boursier, Bowditch, Englert, Lazić, arXiv 2505.22578 (abstract); M. Pilanci, T. Ergen, ICML
2020; :mod:`popdyn.landscape.empirical`.
"""
from __future__ import annotations

import math
import time

import numpy as np

from certify import landscape_empirical as CE
from popdyn.landscape import empirical as E
from popdyn.learnability import clopper_pearson

from ._core import load_settings as _load_settings
from ._core import make_verdict, register, summary_verdict


def parse_dataset(spec: str):
    """``"kind:n:d:seed"`` → (kind, n, d, seed)."""
    parts = str(spec).split(":")
    if len(parts) != 4:
        raise ValueError(f"`datasets` entries must be 'kind:n:d:seed', got {spec!r}")
    kind = parts[0]
    if kind not in E.DATA_KINDS:
        raise ValueError(f"`datasets` kind must be one of {list(E.DATA_KINDS)}, got {kind!r}")
    return kind, int(parts[1]), int(parts[2]), int(parts[3])


class _Problem:
    """One data set: patterns, certified global optimum, certificate cache."""

    def __init__(self, spec, lam, prec):
        self.spec = spec
        self.kind, self.n, self.d, self.seed = parse_dataset(spec)
        self.X, self.y = E.make_data(self.kind, self.n, self.d, self.seed)
        self.lam = lam
        self.prec = prec
        self.P = E.activation_patterns(self.X)
        self.opt = CE.global_optimum(self.X, self.y, lam, self.P, prec=prec)
        self.N = 2 * int(sum(1 for D in self.P.D if D.any()))
        self.paper = min(self.n ** self.d, 2 ** self.n)
        self.cache = {}

    def end_state(self, a, W, zero_tol, assoc_tol):
        ac, Wc, z, val = E.region_candidate(self.X, self.y, self.lam, a, W, zero_tol=zero_tol)
        Lend = E.loss(self.X, self.y, self.lam, a, W)
        key = (tuple(np.round(np.sort(np.concatenate([ac, Wc.ravel()])), 9)), z > 0)
        if key not in self.cache:
            self.cache[key] = CE.certify_state(self.X, self.y, self.lam, ac, Wc, patterns=self.P,
                                              zero_units=z, prec=self.prec)
        cert = self.cache[key]
        converged = Lend <= (1 + assoc_tol) * val + 1e-15
        return cert, converged, Lend, (ac, Wc)


def run_width(pb: _Problem, m, scale, *, starts, lr, steps, zero_tol, assoc_tol, global_tol,
              seed0):
    """GD runs at width m from scale ``scale``; returns the per-run (class, certificate, L_end)."""
    out, ends = [], []
    for s in range(starts):
        rng = np.random.default_rng([seed0, m, s])
        a, W = E.init_params(m, pb.d, scale, rng)
        a, W, _, _, _ = E.train_gd(pb.X, pb.y, pb.lam, a, W, lr=lr, steps=steps)
        cert, conv, Lend, cand = pb.end_state(a, W, zero_tol, assoc_tol)
        ends.append((cert, conv, Lend, a, W))
    # a certified upper bound on the width-m minimum: the convex solution if it fits, and the
    # best end state of this width (its exact loss, Arb)
    ub = pb.opt.upper if pb.opt.groups <= m else math.inf
    best = min(ends, key=lambda e: e[2])
    ub = min(ub, CE.loss_upper_bound(pb.X, pb.y, pb.lam, best[3], best[4], prec=pb.prec))
    for cert, conv, Lend, _, _ in ends:
        k = E.classify(cert, pb.opt.lower, ub, global_tol=global_tol)
        if not conv:
            k = "undecided"
        out.append((k, cert, Lend))
    return out


def region_fraction(pb: _Problem, m, draws, *, scale, global_tol, seed0):
    """Of ``draws`` random parameters (the init law at ``scale``), how many regions' closures hold
    a global minimum: restricted convex optimum ≤ the certified upper bound + global_tol."""
    hits = 0
    for s in range(draws):
        rng = np.random.default_rng([seed0, 7, m, s])
        a, W = E.init_params(m, pb.d, scale, rng)
        cls = sorted(set((tuple(bool(t) for t in pb.X @ W[j] > 0), float(np.sign(a[j])))
                         for j in range(m)))
        v = E.restricted_optimum(pb.X, pb.y, pb.lam, [(np.array(D), s_) for D, s_ in cls])
        hits += int(v <= pb.opt.upper + global_tol)
    return hits


def load_settings() -> dict:
    """The declared ``quick`` and ``full`` settings, ``data/configs/weight_decay_landscape.toml``
    (:func:`proofs_checks._core.load_settings`)."""
    return _load_settings("weight_decay_landscape")


_SETTINGS = load_settings()


@register("weight_decay_landscape",
          description="spurious minima of the weight-decay empirical loss of relu networks vs "
                      "width and initialization scale, certified against the convex global "
                      "optimum (Boursier, Bowditch, Englert, Lazić, arXiv 2505.22578)",
          quick=_SETTINGS["quick"], full=_SETTINGS["full"])
def check(*, lam, datasets, small_datasets, widths, starts, large_scale, small_scale, lr, steps,
          zero_tol, assoc_tol, global_tol, gap_tol, regions, region_min, level, prec):
    """Run the GD census and the region census and decide the claims of the module docstring."""
    t_all = time.perf_counter()
    walls = {}
    notes = ["full text not in the store: built from the abstract and the authors' public "
             "experiment code (module docstring)"]
    widths = tuple(sorted(int(w) for w in widths))
    probs = {}
    t0 = time.perf_counter()
    for spec in dict.fromkeys(tuple(datasets) + tuple(small_datasets)):
        pb = _Problem(spec, lam, prec)
        probs[spec] = pb
        notes.append(f"{spec}: {pb.P.K} cells (general-position count "
                     f"{E.n_cells_general_position(pb.n, pb.d)}, complete {pb.P.complete}), "
                     f"N = {pb.N} (pattern, sign) classes, min(n^d, 2^n) = {pb.paper}; global "
                     f"optimum ∈ [{pb.opt.lower:.12g}, {pb.opt.upper:.12g}] (gap "
                     f"{pb.opt.gap:.2e}, m* = {pb.opt.groups} units, {pb.opt.status})")
    walls["patterns and convex optima"] = time.perf_counter() - t0
    kw = dict(starts=starts, lr=lr, steps=steps, zero_tol=zero_tol, assoc_tol=assoc_tol,
              global_tol=global_tol)
    census = {}
    t0 = time.perf_counter()
    for spec in datasets:
        pb = probs[spec]
        for m in widths:
            census[(spec, m, "large")] = run_width(pb, m, large_scale, seed0=1, **kw)
    walls["GD census, large init"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for spec in small_datasets:
        pb = probs[spec]
        for m in widths:
            if m >= pb.N or m == widths[-1]:
                census[(spec, m, "small")] = run_width(pb, m, small_scale, seed0=2, **kw)
    walls["GD census, small init"] = time.perf_counter() - t0

    def counts(rows):
        c = {k: 0 for k in E.CLASSES}
        for k, _, _ in rows:
            c[k] += 1
        return c

    for (spec, m, init), rows in census.items():
        c = counts(rows)
        lo, hi = clopper_pearson(c["spurious"], len(rows), level)
        why = sorted(set(cert.reason.split(";")[0] for k, cert, _ in rows if k == "undecided"))
        notes.append(f"{spec} m = {m:3d} {init:5s} init: {c} spurious rate CP {level:g} "
                     f"[{lo:.3f}, {hi:.3f}]" + (f"; undecided: {why}" if why else ""))
    parts = []
    # global optimum
    gmax = max(pb.opt.gap if pb.P.complete else math.inf for pb in probs.values())
    parts.append(make_verdict("global optimum certified", "widest bracket [lower, upper] of the "
                              "global minimum over the data sets (dual lower bound, Arb loss of the "
                              f"convex solution) ≤ {gap_tol:g}", kind="at_most", constant=gap_tol,
                              bracket=(0.0, gmax), provenance="rigorous"))
    # large width, large init
    sp, und = 0, 0
    for spec in datasets:
        pb = probs[spec]
        for m in widths:
            if m >= pb.N:
                c = counts(census[(spec, m, "large")])
                sp += c["spurious"]
                und += c["undecided"]
    parts.append(make_verdict("large width, large init: no spurious", "end states at widths m ≥ "
                              "N (the number of (pattern, sign) classes), large init, all data "
                              "sets: [certified spurious, + undecided] ≤ 0", kind="at_most",
                              constant=0.0, bracket=(sp, sp + und), provenance="numerical"))
    # orthogonal data, small width
    orth = [s for s in datasets if probs[s].kind == "orthogonal"]
    sp, und = 0, 0
    for spec in orth:
        c = counts(census[(spec, widths[0], "large")])
        sp += c["spurious"]
        und += c["undecided"]
    parts.append(make_verdict("orthogonal data, small width: spurious", f"certified spurious end "
                              f"states at m = {widths[0]}, large init, orthogonal data sets "
                              f"{orth} ≥ 1 (an existence claim: the census bounds the count "
                              "from below only, so the bracket is [certified, ∞))",
                              kind="at_least", constant=1.0,
                              bracket=(sp, math.inf) if orth else (-math.inf, math.inf),
                              provenance="numerical", notes=(f"spurious {sp}, undecided {und}",)))
    # threshold: m_clean counted two ways, undecided end states as clean (lower end) and as
    # spurious (upper end), so that an undecided census leaves the claim undecided
    ratios_lo, ratios_hi, rows_t = [], [], []
    for spec in datasets:
        pb = probs[spec]
        clean = {True: None, False: None}
        for strict in (True, False):
            for m in reversed(widths):
                c = counts(census[(spec, m, "large")])
                if c["spurious"] + (0 if strict else c["undecided"]) > 0:
                    break
                clean[strict] = m
        lo_m, hi_m = clean[True], clean[False]
        ratios_lo.append(math.inf if lo_m is None else lo_m / pb.paper)
        ratios_hi.append(math.inf if hi_m is None else hi_m / pb.paper)
        rows_t.append(f"{spec}: m_clean = {lo_m} (undecided end states as clean), {hi_m} (as "
                      f"spurious) (N = {pb.N}, min(n^d, 2^n) = {pb.paper})")
    parts.append(make_verdict("threshold", "max over data sets of m_clean / min(n^d, 2^n) (m_clean: "
                              "smallest declared width from which on no spurious end state is "
                              "found at large init; bracket: undecided end states counted as clean, "
                              "as spurious) ≤ 1", kind="at_most", constant=1.0,
                              bracket=(max(ratios_lo), max(ratios_hi)), provenance="numerical",
                              notes=tuple(rows_t)))
    # regions
    t0 = time.perf_counter()
    reg_rows, top_hits, top_n = [], 0, 0
    for spec in datasets:
        pb = probs[spec]
        for m in widths:
            h = region_fraction(pb, m, regions, scale=large_scale, global_tol=global_tol, seed0=3)
            lo, hi = clopper_pearson(h, regions, level)
            reg_rows.append(f"{spec} m = {m}: {h}/{regions} regions hold a global minimum, CP "
                            f"[{lo:.3f}, {hi:.3f}]")
            if m == widths[-1]:
                top_hits += h
                top_n += regions
    walls["region census"] = time.perf_counter() - t0
    lo, hi = clopper_pearson(top_hits, top_n, level)
    parts.append(make_verdict("regions hold a global minimum", f"Clopper–Pearson interval (level "
                              f"{level:g}) of the fraction of random regions at m = {widths[-1]} "
                              f"whose closure holds a global minimum ≥ {region_min:g}",
                              kind="at_least", constant=region_min, bracket=(lo, hi),
                              provenance="numerical", notes=tuple(reg_rows)))
    # small init
    sp, sd, und, runs = 0, 0, 0, 0
    for spec in small_datasets:
        pb = probs[spec]
        for m in widths:
            if m >= pb.N and (spec, m, "small") in census:
                c = counts(census[(spec, m, "small")])
                sp += c["spurious"]
                sd += c["saddle"]
                und += c["undecided"]
                runs += len(census[(spec, m, "small")])
    parts.append(make_verdict("small init: non-global end states at large width", f"end states "
                              f"at small init (scale {small_scale:g}), widths m ≥ N, data sets "
                              f"{tuple(small_datasets)} ({runs} runs) certified spurious or saddle "
                              "(GD stalled at a non-global point) ≥ 1 (an existence claim: a "
                              "census that finds none does not refute it, so the bracket is "
                              "[certified, ∞))", kind="at_least", constant=1.0,
                              bracket=(sp + sd, math.inf), provenance="numerical",
                              notes=(f"spurious {sp}, saddle {sd}, undecided {und}; "
                                     f"Clopper–Pearson upper end of the rate of non-global end "
                                     f"states: {clopper_pearson(sp + sd, runs, level)[1]:.3f}"
                                     if runs else "no runs",)))
    parts.append(make_verdict("control: small init, spurious minima", "certified spurious local "
                              "minima among those end states ≥ 1 (the abstract's wording; "
                              "bracket [certified, ∞))",
                              kind="at_least", constant=1.0, bracket=(sp, math.inf),
                              provenance="numerical", role="control"))
    # controls
    bad = [s for s, pb in probs.items() if not pb.P.complete]
    parts.append(make_verdict("control: patterns complete", "data sets whose cell list is not "
                              "certified complete (general position + count) = 0", kind="at_most",
                              constant=0.0, bracket=(len(bad), len(bad)), provenance="rigorous",
                              role="control"))
    walls["total"] = time.perf_counter() - t_all
    notes.append("wall times: " + ", ".join(f"{k} {v:.1f} s" for k, v in walls.items()))
    return summary_verdict(
        "weight_decay_landscape", "Boursier–Bowditch–Englert–Lazić (arXiv 2505.22578, abstract): "
        "with weight decay the empirical landscape of two-layer relu networks has no spurious "
        "local minima in almost all activation regions once m ≳ min(n^d, 2^n), this width is "
        "needed (orthogonal data), and small initialization can still reach spurious minima",
        parts, notes=notes)
