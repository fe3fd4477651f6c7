r"""Check ``ownership``: the favorable gauge selects the owner among duplicate neurons, and —
separately, in the regime where it holds — the others' functional contribution is pruned to zero
(the feature-ownership paper's "global selection and functional pruning"; docs/design.md §7).

Setting (:func:`popdyn.gauge.ownership`): k bias-free ReLU neurons with the same direction
(cos = 1/√d with the teacher u) and coefficient c0/k each — the same initial function for every
gauge — teacher relu(u·x); neuron 0 has a/|w| = D, the others 1/D ("opposite") or 1
("balanced").  Population gradient descent (exact moments) and finite-sample full-batch gradient
descent at the same step.

Claims:

* selection — in every run of the grid the favorable neuron ends with the largest coefficient:
  the bracket of c_fav / max_{j≥1} c_j over the runs lies in [1, ∞) (``at_least`` 1);
* pruning (population; finite-sample) — only in docs/design.md §7's regime: opposite-gauge others with a
  large imbalance, c0·D ≥ 10 (checked): the others' joint contribution ‖Σ_{j≥1} a_jσ_j‖/‖y‖ at
  the horizon is ≤ PRUNE_TOL = 1e−8.

Controls (reported, not in the verdict): balanced others, and opposite others at a small
initialization (c0·D ≤ 0.1), under the same pruning rule — docs/design.md §7 expects them to keep a finite
aligned share (c_own/c_j ≈ 0.9·D), i.e. to *fail* the pruning rule.

References
----------
The feature-ownership paper (abstract: "Training changes a network's predictions while
allocating task-relevant structure across its internal units");
docs/design.md §7.
"""
from __future__ import annotations

import numpy as np

from popdyn.gauge import ownership

from ._core import make_verdict, register, summary_verdict

PRUNE_TOL = 1e-8
PRUNE_REGIME = 10.0     # c0·D ≥ 10
SMALL_REGIME = 0.1      # c0·D ≤ 0.1


def _run(spec, common):

    kw = dict(common)
    kw.update(spec)
    return ownership(**kw)


def _bracket(vals):
    return (float(np.min(vals)), float(np.max(vals)))


@register("ownership",
          description="favorable gauge selects the owner; opposite-gauge large-imbalance others are pruned",
          quick=dict(k=(2, 3), D=(4.0, 16.0), c0=(1.0,), d=10, lr=0.02, max_time=30.0,
                     small_c0=1e-3, small_time=60.0, n_samples=2000, seeds=(0,), every=50),
          full=dict(k=(2, 3, 5), D=(2.0, 4.0, 16.0, 64.0), c0=(1.0, 0.1), d=10, lr=0.01,
                    max_time=40.0, small_c0=1e-3, small_time=100.0, n_samples=4000,
                    seeds=(0, 1, 2), every=100))
def check(*, k, D, c0, d, lr, max_time, small_c0, small_time, n_samples, seeds, every):
    common = dict(d=d, lr=lr, max_time=max_time, every=every)
    sel_runs, lines = [], []
    for kk in k:
        for DD in D:
            for cc in c0:
                for others in ("opposite", "balanced"):
                    sel_runs.append(_run(dict(k=kk, D=DD, c0=cc, others=others), common))
    kmax, Dmax = max(k), max(D)
    for s in seeds:
        for others in ("opposite", "balanced"):
            sel_runs.append(_run(dict(k=kmax, D=Dmax, c0=max(c0), others=others, mode="finite",
                                      n_samples=n_samples, seed=s), common))
    small = [_run(dict(k=kmax, D=Dmax, c0=small_c0, others=o, max_time=small_time), common)
             for o in ("opposite", "balanced")]
    sel_runs.extend(small)
    lines.extend(r.summary() for r in sel_runs)
    ratios = [r.selection_ratio for r in sel_runs]
    owners_ok = sum(r.selected for r in sel_runs)
    parts = [make_verdict("selection", f"c_fav / max c_other at the horizon over {len(sel_runs)} runs "
                          f"(k ∈ {tuple(k)}, D ∈ {tuple(D)}, c0 ∈ {tuple(c0) + (small_c0,)}, opposite and "
                          f"balanced others, population and finite n = {n_samples}); favorable neuron "
                          f"is the owner in {owners_ok}/{len(sel_runs)}", kind="at_least", constant=1.0,
                          bracket=_bracket(ratios), provenance="numerical")]

    # pruning, in the declared regime only
    prune_specs = [(kk, DD, cc) for kk in k for DD in D for cc in c0 if cc * DD >= PRUNE_REGIME]
    if not prune_specs:
        raise ValueError(f"no (D, c0) in the settings satisfies the pruning regime c0·D ≥ {PRUNE_REGIME}")
    by_key = {(r.k, r.D, r.c0, r.others, r.mode, r.settings.get("seed")): r for r in sel_runs}
    pop = [by_key[(kk, DD, cc, "opposite", "population", None)] for kk, DD, cc in prune_specs]
    fin = [r for r in sel_runs if r.mode == "finite" and r.others == "opposite"
           and r.c0 * r.D >= PRUNE_REGIME]
    parts.append(make_verdict("pruning (population)", f"others' contribution / ‖y‖ at t = {max_time:g}, "
                              f"opposite-gauge others with c0·D ≥ {PRUNE_REGIME:g} ({len(pop)} runs)",
                              kind="at_most", constant=PRUNE_TOL,
                              bracket=_bracket([r.final_others_rel for r in pop]), provenance="numerical",
                              notes=tuple(f"k={r.k} D={r.D:g} c0={r.c0:g}: exponential pruning rate "
                                          f"{r.pruning_rate:.3g} (fit of log contribution late in the run, above the 1e-12 rounding floor)"
                                          for r in pop)))
    if fin:
        parts.append(make_verdict("pruning (finite-sample GD)", f"same, full-batch GD on n = {n_samples} "
                                  f"samples, seeds {tuple(seeds)}", kind="at_most", constant=PRUNE_TOL,
                                  bracket=_bracket([r.final_others_rel for r in fin]),
                                  provenance="numerical"))
    # controls
    bal = [r for r in sel_runs if r.others == "balanced" and r.mode == "population" and r.c0 == max(c0)]
    parts.append(make_verdict("control: balanced others", "same pruning rule for balanced others "
                              "(docs/design.md §7: a finite aligned share remains)", kind="at_most",
                              constant=PRUNE_TOL, bracket=_bracket([r.final_others_rel for r in bal]),
                              provenance="numerical", role="control",
                              notes=tuple(f"k={r.k} D={r.D:g}: c_own/c_j = "
                                          f"{r.c[-1, 0] / np.max(r.c[-1, 1:]):.4g} (0.9·D = {0.9 * r.D:.4g})"
                                          for r in bal)))
    sm = small[0]
    if small_c0 * Dmax <= SMALL_REGIME:
        parts.append(make_verdict("control: small initialization", f"same pruning rule for opposite "
                                  f"others at c0 = {small_c0:g}, D = {Dmax:g} (c0·D ≤ {SMALL_REGIME:g}; "
                                  f"t = {small_time:g})", kind="at_most", constant=PRUNE_TOL,
                                  bracket=(sm.final_others_rel, sm.final_others_rel), provenance="numerical",
                                  role="control",
                                  notes=(f"c_own/c_j = {sm.c[-1, 0] / np.max(sm.c[-1, 1:]):.4g} "
                                         f"(0.9·D = {0.9 * sm.D:.4g})",)))
    return summary_verdict(
        "ownership", "the favorable gauge selects the owner; opposite-gauge others with a large "
        "imbalance are pruned to zero (population and finite-sample GD)", parts,
        notes=["runs (loss = exact population L; contribution = ‖Σ_{j≥1} a_jσ_j‖):"] + lines)
