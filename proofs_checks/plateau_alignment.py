"""Checks ``plateau_alignment`` and ``plateau_alignment_prefix``: subspace learning during the
loss plateau (Kumar, "Awakening of the Buddha: Subspace Learning During Population-Loss
Plateaus", arXiv 2609.39408, Theorem 4.1 / E.1).

The theorem: for ReLU students trained by population gradient descent from a small IID Gaussian
initialization, on additive teachers whose links are positive mixtures of the Gaussian-damped
cubics g_v of eq. (7), *at the end of the high-loss plateau* the minimum AGOP alignment A_min
rises by at least 1/2 and the bounded refit MSE falls by more than 0.399 (in units of E[y²]),
*both relative to initialization*.

``plateau_alignment`` (:func:`check`) runs a configuration of the paper's own protocol (App. A:
the ``paper_relu`` student, IID N(0, s²/d) initialization, persistent Armijo, the baseline
plateau rule with the exact endpoint state E) and decides with :func:`check_store_paper`; its
quick settings run the embedded ``paper_smoke`` (g_{1/2}, seeds 1–3), its full settings
``paper/plateau_alignment`` (the g-family rows of Table 1, seeds 1–50; ``popdyn reproduce
plateau_alignment`` reports the same runs beside the paper).

``plateau_alignment_prefix`` (:func:`check_prefix`, :func:`check_store`) keeps popdyn's earlier
reading on its own declared family, described next; ``popdyn run`` uses it for configurations
that are not on the paper's protocol.

popdyn's earlier reading (plateau_alignment_prefix; stated, not tuned)
----------------------------------------------------------------------
* Checkpoint P: the last diagnostic inside the run's δ-prefix of the normalized loss,
  |ℓ_n − ℓ_0| ≤ δ (δ = 1e−3; the paper's Tables 3–4: "P is the last diagnostic inside the
  prefix"), computed per run (each run's own endpoint, never an averaged one).
* Rise of A_min: ΔA = A_min(P) − A_min(0) on the *same* run, A_min the smallest squared principal
  cosine between the rank-r teacher subspace and the top-r AGOP eigenspace (docs/design.md §5).
  Certified as the bracket [A_P.lo − A_0.hi, A_P.hi − A_0.lo] of :func:`certify.alignment`;
  an unresolved eigenspace contributes [0, 1] (so it can never pass).
* Drop of refit risk: ΔR = R(0) − R(P) in units of V_Y, R the minimum frozen-feature refit MSE
  under the same coefficient budget.  Default (``budget="same_budget"``, docs/design.md §5): the budget
  at each checkpoint is the norm of that checkpoint's own head, ‖a′‖ ≤ ‖a‖ ("unchanged
  coefficient budget").  A float ``budget = B`` uses one fixed ball ‖a′‖ ≤ B at both
  checkpoints (``bounded`` kind) instead.  Certified conservatively as in the paper's Table 2
  (ΔR = R̲_0 − R̄_E): the bracket [R_0.lo − R_P.hi, R_0.hi − R_P.lo] from
  :func:`certify.refit_risk`.
* Decision, per declared seed (no seed is dropped or selected): ΔA ≥ 1/2 and ΔR ≥ 0.399
  (the theorem's "more than" is decided as ≥ on the certified lower end).  A run fails a claim
  if its certified upper end is below the constant; undecided if the bracket straddles it.  The
  overall verdict is fail if any claim fails, else undecided if any is undecided, else pass.
* Family: additive teachers with a ``damped_cubic:a`` link (the declared family) and a small
  initialization (scale ≤ ``max_scale``).  Runs outside the family are reported as controls.

The paper's protocol: :func:`check_store_paper` decides the same two claims on runs of the
paper's baseline (Kumar, arXiv 2609.39408, App. A; ``popdyn reproduce plateau_alignment``, the
g_μ-family rows of Table 1): checkpoint E = the endpoint of the baseline plateau rule
(``rec["plateau_event"]``, its exact stored state), ΔA_min from :func:`certify.alignment` and
ΔR = R̲_0 − R̄_E − 1e−5 from :func:`certify.bounded_refit` (eq. (6)); the family there is
Theorem 4.1's own (:func:`proofs_checks.theorem41.mu_from_link`).  :func:`check_store` keeps
popdyn's own reading above (its declared family stays ``damped_cubic:a``).

Theorem hypotheses: the result (:class:`PlateauVerdict`) carries, beside its unchanged verdict,
the hypotheses report of Theorem 4.1 / E.1 (Kumar, arXiv 2609.39408; the App. C.1 prescription,
:mod:`proofs_checks.theorem41`) for each run setting, and its verdict line says "outside the
theorem's hypotheses (...)" when a bound on m, d, s, h or the horizon (or a structural
hypothesis) is not met -- as for the paper's own illustrations (§5).

Note on the same-budget reading: inside a δ-prefix with a fitted intercept the student output
has ‖f‖ ≲ √δ-scale, and a refit with a head of the same norm can lower the MSE only by about
2‖f‖-scale, so under this reading ΔR > 0.399 cannot occur inside a δ = 1e−3 prefix; the check
reports what it measures (and the unrestricted refit drop as a control, to show the feature gain).

References
----------
Kumar (arXiv 2609.39408): abstract and Theorem 4.1 (the constants 1/2 and 0.399), App. A
(protocol, ΔR = R̲_0 − R̄_E), Tables 3–4 (P), Table 6 (medians over twenty seeds at d = 16,
m = 64, ε = 0.05); docs/design.md §5, §6.
"""
from __future__ import annotations

import json
import math
import tempfile
from typing import Any
from dataclasses import dataclass, field

import numpy as np

import certify
from popdyn import config as C
from popdyn.config import make_student, teacher_from_table
from popdyn.experiments import Store, sweep
from popdyn.experiments.runner import params_from
from popdyn.experiments.store import num
from popdyn.experiments.tables import groups

from ._core import make_verdict, register, summary_verdict, Verdict
from .theorem41 import hypotheses_report, mu_from_link, settings_from_run_spec

A_CONST = 0.5
R_CONST = 0.399
FAMILY = "damped_cubic:"


def family_config(*, link="damped_cubic:0.5", rank=1, d=8, m=16, scale=0.01, seeds=(0, 1, 2),
                  method="flow", eps=0.05, lr=0.05, max_updates=2000, loss_target=0.1,
                  every=1, delta=1e-3, budget="same_budget", prec=128, base=None) -> dict:
    """The configuration (a plain dict, as :func:`popdyn.config.load` returns) of the check's
    cohort.  ``base`` (a configuration) supplies student, init, train and schedule instead."""
    kinds = _kinds(budget)
    if base is not None:
        cfg: dict[str, Any] = {k: dict(base[k]) for k in ("student", "init", "train", "schedule")
                               if k in base}
        cfg["init"].pop("seeds", None)
        cfg["init"]["seeds"] = list(base["init"].get("seeds", [0]))
    else:
        cfg = {"student": {"d": d, "m": m, "activation": "relu", "bias": True},
               "init": {"scale": scale, "seeds": list(seeds), "fit_intercept": True},
               "train": {"method": method, "loss_target": loss_target, "max_updates": max_updates,
                         **({"eps": eps, "h0": 0.05, "h_max": 10.0} if method == "flow" else {"lr": lr})},
               "schedule": {"every": every, "early": []}}
    cfg["name"] = "plateau_alignment"
    cfg["teachers"] = [{"label": f"{link} r={rank} (plateau_alignment)", "link": link, "rank": rank}]
    cfg["diagnostics"] = {"kinds": ["unrestricted", "same_budget"] + (["bounded"] if "bounded" in kinds else []),
                          "budget": None if budget == "same_budget" else float(budget),
                          "delta": delta, "certify": True, "certify_kinds": kinds, "prec": prec,
                          "geometry": True}
    return cfg


def _kinds(budget):
    if budget == "same_budget":
        return ["same_budget", "unrestricted"]
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not budget > 0:
        raise ValueError(f"`budget` must be 'same_budget' or a positive float, got {budget!r}")
    return ["bounded", "unrestricted"]


def _gain(c0, cP, key, sign):
    b0, bP = c0.get(key), cP.get(key)
    if not isinstance(b0, dict) or not isinstance(bP, dict):
        return (-math.inf, math.inf), "numerical", False

    l0, h0, lP, hP = num(b0["lo"]), num(b0["hi"]), num(bP["lo"]), num(bP["hi"])
    br = (lP - h0, hP - l0) if sign > 0 else (l0 - hP, h0 - lP)
    prov = "rigorous" if b0["provenance"] == bP["provenance"] == "rigorous" else "numerical"
    return br, prov, b0["status"] == bP["status"] == "resolved"


def theorem_student(table: dict) -> bool:
    """Whether a ``[student]`` table declares a student of Theorem 4.1 (paper App. A): a ReLU
    or leaky-ReLU student of the ridge family (no linear skip)."""
    return (table.get("family", "ridge") == "ridge" and table.get("skip", False) is False
            and table.get("activation", "relu") in ("relu", "leaky_relu"))


def in_family(rec, max_scale) -> bool:
    """Whether a stored run is a claim of the theorem: a theorem student (:func:`theorem_student`)
    against a g_μ teacher from an initialization of scale at most ``max_scale``."""
    t = rec["spec"]["teacher"]
    return (t.get("kind", "additive") == "additive" and str(t.get("link", "")).startswith(FAMILY)
            and theorem_student(rec["spec"]["student"])
            and float(rec["spec"]["init"]["scale"]) <= max_scale)


def check_store(store, *, budget="same_budget", max_scale=0.05, settings=None):
    """The verdict on the runs of a result store (claims: in-family runs; controls: the rest)."""

    rkind = "same_budget" if budget == "same_budget" else "bounded"
    parts, notes = [], []
    n_claim = 0
    specs = []
    for setting, label, recs in groups(store):
        for rec in recs:
            fam = in_family(rec, max_scale)
            specs.append((rec["spec"], fam))
            role = "claim" if fam else "control"
            n_claim += fam
            tag = f"{label}{'' if setting == 'default' else ' · ' + setting} seed {rec['seed']}"
            cert = rec.get("certified")
            pl = rec["plateau"]
            if not cert:
                c0 = cP = {}
            else:
                c0, cP = cert["init"], cert["plateau"]
            brA, provA, resA = _gain(c0, cP, "a_min", +1)
            brR, provR, resR = _gain(c0, cP, f"refit_{rkind}", -1)
            where = (f"P = update {pl['P_n']} (t = {float(pl['P_t']):.4g}), "
                     f"loss change {float(pl['P_loss_change']):+.2e}")
            parts.append(make_verdict(
                f"ΔA_min {tag}", f"A_min(P) − A_min(0) ≥ 1/2 at {where}" + ("" if resA else
                "; unresolved AGOP eigenspace at one end ([0, 1])"), kind="at_least",
                constant=A_CONST, bracket=brA, provenance=provA, role=role))
            parts.append(make_verdict(
                f"ΔR_{rkind} {tag}", f"R(0) − R(P) ≥ 0.399 (units of V_Y, {rkind} refit) at P "
                f"= update {pl['P_n']}", kind="at_least", constant=R_CONST, bracket=brR,
                provenance=provR, role=role))
            brU, provU, _ = _gain(c0, cP, "refit_unrestricted", -1)
            if math.isfinite(brU[0]):
                parts.append(make_verdict(
                    f"ΔR_unrestricted {tag}", "unrestricted refit drop R(0) − R(P) vs 0.399 "
                    "(feature-quality control, not the theorem's budget)", kind="at_least",
                    constant=R_CONST, bracket=brU, provenance=provU, role="control"))
            for k in ("alignment_error", f"refit_{rkind}_error"):
                for c in (c0, cP):
                    if k in c:
                        notes.append(f"{tag}: certification error ({k}): {c[k]}")
    if n_claim == 0:
        notes.insert(0, "no stored run is in the declared family (additive damped_cubic:a teacher, "
                        f"relu/leaky_relu student, init scale ≤ {max_scale}): the theorem makes no "
                        "claim here; every part is a control and the verdict is undecided")
    stmt = ("at the last diagnostic P inside each run's loss plateau |ℓ_n − ℓ_0| ≤ δ, relative to "
            "initialization: A_min rises by ≥ 1/2 and the same-budget refit risk (units of V_Y) "
            "drops by ≥ 0.399, certified per declared seed, on additive Gaussian-damped cubic "
            "teachers from a small initialization")
    notes.append("reading: ΔA = A_min(P) − A_min(0), bracket [A_P.lo − A_0.hi, A_P.hi − A_0.lo]; "
                 "ΔR = R(0) − R(P), bracket [R_0.lo − R_P.hi, R_0.hi − R_P.lo] (certify); "
                 + ("same-budget = ‖a′‖ ≤ ‖a‖ of the checkpoint's own head"
                    if budget == "same_budget" else f"fixed ball ‖a′‖ ≤ {budget} at both checkpoints"))
    if not parts:
        return with_hypotheses(Verdict(
            "plateau_alignment", "undecided", stmt, A_CONST, (-math.inf, math.inf), "numerical",
            -math.inf, settings=dict(settings or {}), kind="at_least",
            notes=tuple(notes + ["the store has no finished runs"])), specs)
    v = summary_verdict("plateau_alignment", stmt, parts, settings=settings, notes=notes)
    if n_claim == 0:
        v = v.replace(verdict="undecided")
    return with_hypotheses(v, specs)


@register("plateau_alignment_prefix",
          description="popdyn's earlier reading of the plateau claims: δ-prefix checkpoint, "
                      "same-budget refit, damped_cubic:a teachers, flow clock (certified, per seed)",
          quick=dict(link="damped_cubic:0.5", rank=1, d=8, m=16, scale=0.01, seeds=(0, 1, 2),
                     method="flow", eps=0.05, max_updates=2000, loss_target=0.1, every=1,
                     delta=1e-3, budget="same_budget", prec=128),
          full=dict(link="damped_cubic:0.5", rank=1, d=16, m=64, scale=0.01,
                    seeds=tuple(range(20)), method="flow", eps=0.05, max_updates=20000,
                    loss_target=0.1, every=1, delta=1e-3, budget="same_budget", prec=128))
def check_prefix(*, link, rank, d, m, scale, seeds, method, eps, max_updates, loss_target,
                 every, delta, budget, prec, store=None):
    """popdyn's own reading (module docstring, :func:`check_store`): run the declared cohort
    into a (temporary) store and decide on it.  The paper's protocol is the check
    ``plateau_alignment`` (:func:`check`)."""
    if not str(link).startswith(FAMILY):
        raise ValueError(f"`link` must be in the declared family damped_cubic:<a>, got {link!r}")
    cfg = C.validate(family_config(link=link, rank=rank, d=d, m=m, scale=scale, seeds=seeds,
                                   method=method, eps=eps, max_updates=max_updates,
                                   loss_target=loss_target, every=every, delta=delta,
                                   budget=budget, prec=prec))
    settings = dict(link=link, rank=rank, d=d, m=m, scale=scale, seeds=list(seeds), method=method,
                    eps=eps, max_updates=max_updates, loss_target=loss_target, every=every,
                    delta=delta, budget=budget, prec=prec, activation="relu", bias=True)
    with tempfile.TemporaryDirectory(prefix="plateau_alignment-") as tmp:
        st = Store(store or tmp)
        sweep(cfg, st, workers=1, progress=False)
        return check_store(st, budget=budget, settings=settings)


@register("plateau_alignment",
          description="Theorem 4.1 (Kumar, arXiv 2609.39408): at each run's plateau endpoint E "
                      "A_min rises ≥ 1/2 and the bounded refit drops ≥ 0.399 (per seed; the "
                      "paper's protocol on its g_v / g_μ teachers)",
          quick=dict(config="paper_smoke", seeds=0, d=0, m=0, max_updates=0, workers=1,
                     store="", prec=128),
          full=dict(config="paper/plateau_alignment", seeds=0, d=0, m=0, max_updates=0,
                    workers=2, store="", prec=128))
def check(*, config, seeds, d, m, max_updates, workers, store, prec):
    """Run a configuration of the paper's protocol and decide Theorem 4.1's claims on it.

    Parameters
    ----------
    config : str
        A configuration on the paper's protocol (``[schedule] kind = "baseline"``): the name
        of an embedded one (quick: ``paper_smoke``, g_{1/2} at rank two, seeds 1–3, 8,000
        updates; full: ``paper/plateau_alignment``, the six g-family rows of Table 1 at seeds
        1–50, 20,000 updates) or a TOML path.
    seeds : int
        Only the first ``seeds`` declared seeds (0: all of them).
    d, m, max_updates : int
        Overrides of the student's size and the horizon (0: the configuration's).
    workers : int
        Local worker processes of the sweep.
    store : str
        Result store directory ("" : a temporary one, deleted afterwards); an existing store is
        resumed and its finished runs are not recomputed.
    prec : int
        Arb precision (bits) of the certified brackets.

    Returns
    -------
    PlateauVerdict
        :func:`check_store_paper` on the configuration's runs, with the hypotheses report of
        Theorem 4.1 (App. C.1).
    """
    cfg = C.load(config)
    if cfg.get("schedule", {}).get("kind") != "baseline":
        raise ValueError(f"`config` must be on the paper's protocol ([schedule] kind = "
                         f"\"baseline\"), got {config!r}")
    for name, v in (("seeds", seeds), ("d", d), ("m", m), ("max_updates", max_updates)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"`{name}` must be a non-negative int (0: the configuration's), "
                             f"got {v!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"`workers` must be a positive int, got {workers!r}")
    if seeds:
        cfg["init"]["seeds"] = C.seeds_of(cfg["init"]["seeds"])[:seeds]
    if d:
        cfg["student"]["d"] = d
    if m:
        cfg["student"]["m"] = m
    if max_updates:
        cfg["train"]["max_updates"] = max_updates
    cfg = C.validate(cfg)
    settings = dict(config=str(config), seeds=C.seeds_of(cfg["init"]["seeds"]),
                    d=cfg["student"].get("d"), m=cfg["student"].get("m"),
                    max_updates=cfg["train"].get("max_updates"), prec=prec)
    with tempfile.TemporaryDirectory(prefix="plateau_alignment-") as tmp:
        st = Store(store or tmp)
        res = sweep(cfg, st, workers=workers, progress=False)
        return check_store_paper(st, res["keys"], prec=prec, settings=settings)


# ---------------------------------------------------------------------------- the paper's reading
PAPER_READING = ("the paper's protocol (Kumar, arXiv 2609.39408, App. A): checkpoint E = each "
                 "run's plateau endpoint of the baseline rule (the last update before the MSE "
                 "leaves [0.95, 1.05] or its running max/min exceeds 1.05; right-censored at the "
                 "horizon), the exact stored state at E; ΔA_min = A_min(E) − A_min(0) with "
                 "certified brackets [A_E.lo − A_0.hi, A_E.hi − A_0.lo] (certify.alignment; an "
                 "uncertified rank-r eigengap gives [0, 1], as the paper counts unresolved "
                 "spectra); ΔR = R̲_0 − R̄_E − 1e−5 (App. A's conservative gain) with bracket "
                 "[R̲_0 − R̄_E − 1e−5, R̄_0 − R̲_E], R the bounded refit of eq. (6) (caps 32/J and "
                 "64√r/J, no intercept) bracketed by certify.bounded_refit at 0 and E")


def paper_family(rec, max_scale) -> bool:
    """True when a run is in Theorem 4.1's family: an additive teacher whose link is a positive
    mixture of the damped cubics g_v of eq. (7) (:func:`proofs_checks.theorem41.mu_from_link`
    is not None), a relu/leaky_relu student (``preset = "paper_relu"`` included) and an
    initialization scale ≤ ``max_scale``."""
    from popdyn.models import PRESETS

    spec = rec["spec"]
    t, st = spec["teacher"], dict(spec["student"])
    if st.get("preset") in PRESETS:
        st = {**st, **PRESETS[st["preset"]]}
    return (t.get("kind", "additive") == "additive" and mu_from_link(t.get("link")) is not None
            and st.get("activation", "relu") in ("relu", "leaky_relu")
            and float(spec["init"]["scale"]) <= max_scale)


def _undecided(name, statement, constant, role):
    return make_verdict(name, statement, kind="at_least", constant=constant,
                        bracket=(-math.inf, math.inf), provenance="numerical", role=role)


def check_store_paper(store, keys=None, *, max_scale=0.05, prec=128, settings=None):
    r"""Theorem 4.1's claims on stored runs, read with the paper's protocol (Kumar, App. A).

    For each run: the checkpoint E is ``rec["plateau_event"]`` (the endpoint of the baseline
    plateau rule, whose exact state the ``[schedule] kind = "baseline"`` runs store; a censored
    run uses the state at its horizon and a note says so).  The claims, per declared seed
    (Theorem 4.1 / E.1, eqs. (11)-(12)):

    * ΔA_min = A_min(E) − A_min(0) ≥ 1/2, bracket [A_E.lo − A_0.hi, A_E.hi − A_0.lo] from
      :func:`certify.alignment` at 0 and E (an uncertified rank-r eigengap gives the score
      [0, 1], as the paper's "unresolved spectra" enter as [0, 1]);
    * ΔR = R̲_0 − R̄_E − 1e−5 ≥ 0.399 (App. A's conservative gain, units of E[y²] = 1), bracket
      [R̲_0 − R̄_E − 1e−5, R̄_0 − R̲_E] from :func:`certify.bounded_refit` at 0 and E (the
      bounded refit of eq. (6): caps 32/J and 64√r/J, no intercept); the float
      :func:`popdyn.diagnostics.refit_gain` is shown beside it.

    A part is ``rigorous`` only when both of its brackets are (certify encloses the moments of
    the g_v / g_μ links numerically, so on those teachers the parts are ``numerical``).
    Runs in the family (:func:`paper_family`) are claims, the rest controls.  The result
    carries the hypotheses report of Theorem 4.1 (App. C.1) and its first line says when the
    runs lie outside the theorem's hypotheses (§5: the paper's illustrations do).

    Parameters
    ----------
    store : Store or path
    keys : iterable of str, optional
        Run keys to decide on (default: every run of the store).
    max_scale : float
        Largest initialization scale of an in-family run.
    prec : int
        Arb precision of the certified brackets (bits).
    settings : dict, optional
        Recorded in the verdict.

    Returns
    -------
    PlateauVerdict
    """
    from popdyn.diagnostics import bounded_refit as float_refit, refit_gain
    from popdyn.diagnostics.refit import GAIN_MARGIN

    st = store if isinstance(store, Store) else Store(store, create=False)
    keys = list(keys) if keys is not None else list(st.keys())
    parts, notes, n_claim, specs = [], [], 0, []
    numerical = set()
    for k in keys:
        if not st.has(k):
            continue
        rec, arrs = st.record(k), st.arrays(k)
        fam = paper_family(rec, max_scale)
        specs.append((rec["spec"], fam))
        role = "claim" if fam else "control"
        n_claim += fam
        tag = f"{rec['label']} seed {rec['seed']}"
        pe = rec.get("plateau_event")
        if pe is None:
            notes.append(f"{tag}: the run has no plateau rule ([schedule] kind = 'baseline'); "
                         "its parts are undecided")
            parts.append(_undecided(f"ΔA_min {tag}", "no plateau endpoint", A_CONST, role))
            parts.append(_undecided(f"ΔR {tag}", "no plateau endpoint", R_CONST, role))
            continue
        E, iE, censored = int(pe["end_n"]), pe.get("E_index"), bool(pe["censored"])
        sn = np.asarray(arrs["snap_n"])
        if iE is None:
            iE = len(sn) - 1
        iE = int(iE)
        nE = int(sn[iE])
        if censored:
            notes.append(f"{tag}: right-censored (no exit from the band by update {E}); the "
                         f"state at the horizon, update {nE}, is used")
        elif nE != E:
            raise ValueError(f"run {k}: the snapshot at plateau_event.E_index is update {nE}, "
                             f"not E = {E}")
        S = make_student(rec["spec"]["student"])
        T = teacher_from_table(rec["spec"]["teacher"], S.d)
        p0, pE = params_from(S, arrs, 0), params_from(S, arrs, iE)
        where = (f"E = update {E}" + (" (censored: state at the horizon)" if censored else
                                      " (baseline plateau rule)"))
        try:
            a0 = certify.alignment(S, p0, T.subspace, prec=prec)
            aE = certify.alignment(S, pE, T.subspace, prec=prec)
            brA = (aE.a_min.lo - a0.a_min.hi, aE.a_min.hi - a0.a_min.lo)
            provA = "rigorous" if a0.provenance == aE.provenance == "rigorous" else "numerical"
            res = "" if a0.status == aE.status == "resolved" else (
                "; unresolved AGOP spectrum at " + " and ".join(
                    w for w, a in (("0", a0), ("E", aE)) if a.status != "resolved")
                + " ([0, 1])")
            parts.append(make_verdict(
                f"ΔA_min {tag}", f"A_min(E) − A_min(0) ≥ 1/2 at {where}{res}", kind="at_least",
                constant=A_CONST, bracket=brA, provenance=provA, role=role))
        except certify.CertificationError as exc:
            notes.append(f"{tag}: alignment not certified: {exc}")
            parts.append(_undecided(f"ΔA_min {tag}", f"A_min(E) − A_min(0) ≥ 1/2 at {where} "
                                    "(not certified)", A_CONST, role))
            provA = "numerical"
        try:
            r0 = certify.bounded_refit(S, p0, T, prec=prec)
            rE = certify.bounded_refit(S, pE, T, prec=prec)
            brR = (r0.lower - rE.upper - GAIN_MARGIN, r0.upper - rE.lower)
            provR = "rigorous" if r0.provenance == rE.provenance == "rigorous" else "numerical"
            gf = refit_gain(float_refit(S, p0, T), float_refit(S, pE, T))
            parts.append(make_verdict(
                f"ΔR {tag}", f"R̲_0 − R̄_E − 1e−5 ≥ 0.399 (eq. (6) refit, caps 32/J and 64√r/J, "
                f"no intercept) at {where}; float refit_gain {gf:.6g}", kind="at_least",
                constant=R_CONST, bracket=brR, provenance=provR, role=role))
        except certify.CertificationError as exc:
            notes.append(f"{tag}: bounded refit not certified: {exc}")
            parts.append(_undecided(f"ΔR {tag}", f"R̲_0 − R̄_E − 1e−5 ≥ 0.399 at {where} (not "
                                    "certified)", R_CONST, role))
            provR = "numerical"
        if "numerical" in (provA, provR):
            numerical.add(str(rec["spec"]["teacher"].get("link")))
    if numerical:
        notes.append("numerical brackets (not rigorous) on the links " + ", ".join(
            sorted(numerical)) + ": certify encloses the teacher moments of the g_v / g_μ "
            "links of eq. (7) numerically, so those parts are tagged numerical")
    if n_claim == 0:
        notes.insert(0, "no run is in Theorem 4.1's family (additive teacher with a positive "
                        "g_μ-mixture link of eq. (7), relu/leaky_relu student, init scale ≤ "
                        f"{max_scale}): every part is a control and the verdict is undecided")
    stmt = ("at each run's plateau endpoint E (the baseline band rule, App. A), relative to "
            "initialization: A_min rises by ≥ 1/2 and the bounded refit of eq. (6) drops by "
            "R̲_0 − R̄_E − 1e−5 ≥ 0.399, certified per declared seed, on additive teachers "
            "with positive g_μ-mixture links (eq. (7)) from a small initialization "
            "(Theorem 4.1)")
    notes.append("reading: " + PAPER_READING)
    if not parts:
        return with_hypotheses(Verdict(
            "plateau_alignment", "undecided", stmt, A_CONST, (-math.inf, math.inf), "numerical",
            -math.inf, settings=dict(settings or {}), kind="at_least",
            notes=tuple(notes + ["no finished runs"])), specs)
    v = summary_verdict("plateau_alignment", stmt, parts, settings=settings, notes=notes)
    if n_claim == 0:
        v = v.replace(verdict="undecided")
    return with_hypotheses(v, specs)


# ---------------------------------------------------------------------------- the hypotheses
@dataclass(frozen=True)
class PlateauVerdict(Verdict):
    """A :class:`Verdict` carrying the hypotheses report of Theorem 4.1 / E.1 beside it.

    ``hypotheses`` is plain data: ``summary`` (one line), ``status`` ("inside" / "outside" /
    "undecided": the worst over the runs' settings) and ``settings`` (one entry per distinct
    run setting: its ``role``, ``runs`` count and the :func:`proofs_checks.theorem41.
    hypotheses_report`).  The verdict itself is computed exactly as before; the report only
    says whether the runs lie inside the theorem's App. C.1 prescription.  The report's first
    line carries the summary."""

    hypotheses: dict = field(default_factory=dict)

    def report(self, indent: int = 0, *, notes: bool = True) -> str:
        text = super().report(indent, notes=notes)
        line = self.hypotheses.get("summary")
        if not line:
            return text
        head, _, rest = text.partition("\n")
        return f"{head}  — {line}" + ("\n" + rest if rest else "")


def hypotheses_of(specs) -> dict:
    """The hypotheses report of each distinct run setting among ``specs`` ((spec, in_family)
    pairs), in-family settings first (Kumar, arXiv 2609.39408, Theorem 4.1 / App. C.1; the
    reading of a popdyn run spec is :func:`proofs_checks.theorem41.settings_from_run_spec`)."""
    seen = {}
    for spec, fam in specs:
        ident = {k: spec[k] for k in ("teacher", "student", "init", "train") if k in spec}
        ident = {**ident, "init": {k: v for k, v in ident.get("init", {}).items() if k != "seed"},
                 "teacher": {k: v for k, v in ident.get("teacher", {}).items() if k != "label"}}
        key = json.dumps(ident, sort_keys=True, default=str)
        if key not in seen:
            seen[key] = {"role": "claim" if fam else "control", "runs": 0, "spec": spec}
        seen[key]["runs"] += 1
    out = []
    for e in sorted(seen.values(), key=lambda e: e["role"] != "claim"):
        try:
            rep = hypotheses_report(settings_from_run_spec(e["spec"]))
        except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
            rep = {"status": "undecided", "summary": f"hypotheses report unavailable: {exc}",
                   "hypotheses": [], "not_met": []}
        out.append({"role": e["role"], "runs": e["runs"], "report": rep})
    if not out:
        return {"status": "undecided", "summary": "", "settings": []}
    pool = [o for o in out if o["role"] == "claim"] or out
    stats = [o["report"]["status"] for o in pool]
    status = ("outside" if "outside" in stats else "inside" if all(x == "inside" for x in stats)
              else "undecided")
    first = next((o for o in pool if o["report"]["status"] == status), pool[0])
    summary = first["report"]["summary"]
    if len(pool) > 1:
        summary += f" [{len(pool)} run settings; shown: the first with this status]"
    return {"status": status, "summary": summary, "settings": out}


def with_hypotheses(v: Verdict, specs) -> PlateauVerdict:
    """``v`` unchanged in verdict, margins and parts, carrying :func:`hypotheses_of` ``specs``
    and, when a hypothesis is not met, a first note saying so."""
    hyp = hypotheses_of(specs)
    notes = tuple(v.notes)
    if hyp["summary"]:
        notes = (f"Theorem 4.1 / E.1 hypotheses (App. C.1): {hyp['summary']}",) + notes
    base = {f: getattr(v, f) for f in Verdict.__dataclass_fields__}
    base["notes"] = notes
    return PlateauVerdict(**base, hypotheses=hyp)
