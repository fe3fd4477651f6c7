"""Soundness soak of the certified brackets and of the float rtol contract (issue 19): random
configurations against an independent mpmath reference.

Usage: python benchmarks/soak_certify.py [--cases N] [--seed S] [--start K] [--dps D]
       [--rule trapezoid|quad] [--json PATH] [--smooth-nets]
       [--family ridge|skip_align|swiglu_gated|all]

Each case draws (numpy Generator seeded by seed + case index, so a case is reproducible alone):
an activation (relu, leaky_relu, silu, gelu, tanh, erf), a teacher family (additive h2, relu,
sin, h3+0.3h2, abs; networks relu and tanh; gated teachers, the gate cycling through tanh,
relu, gelu, id, rotation with the case index), d = 2, m = 2 or 3 and a geometry: random,
duplicated, antiparallel, a zero neuron, a tiny neuron (|w| = 1e−7 with a bias), large weights
(|w| up to 20, |b| up to 3).  It brackets the loss, E[y], V_Y, the AGOP alignment (a_top,
a_min, a_mean) and the unrestricted, same_budget and bounded (B = ½) refits with certify, and
checks the float engine's rtol contract (popdyn.accuracy) at rtol = 1e−10 and 1e−12: the loss
and the AGOP eigenvalues within rtol (plus the stated rounding floor) of the reference, or an
AccuracyWarning; the loss also within its stated error.

The reference (data/_precompute/smooth_refs.py on tests/certify/_ref.py; gated teachers:
``_gated_reference``, Stein's lemma E[σ(w·x + b)F(s)t] = (w·u₂)E[σ′(w·x + b)F(s)] and the same
pairs) shares no code or method with popdyn or certify: 2-D Gaussian integrals as an outer
mpmath quadrature of one unit times the textbook conditional mean of the other.  Pairs of two
tanh / silu functions (no closed conditional mean) use, with ``--rule trapezoid`` (default), a
nested trapezoidal rule whose node spacings come from the Trefethen–Weideman strip bound with
explicit bounds of |tanh|, |silu| and their derivatives on the strips (``_ref._nested_trapezoid``;
total bound below 10^−(dps+3) relative, checked); ``--rule quad`` is the former tanh–sinh inside
tanh–sinh (minutes per pair).  Default ``--dps 20`` (working precision dps + 15, moments good
to ~10^−(dps+3), i.e. 1e−23: far below the bracket widths tested, ≥ 1e−16 relative); tiny-neuron
cases run 10 digits higher because their centered Gram has eigenvalues ~1e−20 that the refit
reference must resolve.  Comparisons at 60 digits.  (The 12 "violations" of cases 39, 75, 76
reported at 0.6.0 were the reference's: its 1-D inner quadrature of a tiny tanh / silu neuron
missed the Gaussian's mass; ``_ref._num_inner``, pinned by test_certify_smooth_tiny.py.)

Since issue 19's second pass (branch issue19e) the gated-teacher brackets and the refits of
relu / leaky_relu students against smooth teacher networks are rigorous (certify.gated,
certify.pl_smooth) instead of numerical / refused; the counts split the brackets by provenance
("brackets rigorous", "brackets numerical") so that the coverage is visible.

``--family skip_align`` draws skip students instead (relu, leaky_relu, erf; d = 2..4, m = 2 or
3; random, duplicated, antiparallel, zero and tiny neurons, v = 0 or not, both scalings) and
checks the certified AGOP eigenvalues and scores (certify.skip.skip_alignment) against
data/_precompute/skip_align_refs.py (orthant probabilities by quadrature, erf pairs in closed
form); ``--family swiglu_gated`` draws SwiGLU students (d = 3 or 4, m = 2) against gated
teachers (gate cycling through id, relu, gelu, tanh, rotation; rows orthonormalized in float64
or exact axes; g_j parallel / antiparallel to u₁, v_j ⟂ u₂, zero neurons) and checks the loss,
E[y], V_Y and the unrestricted refit (certify.swiglu_gated) against the direct 2-D Gaussian
integrals of data/_precompute/swiglu_gated_refs.py at ``--dps`` digits.  ``--family all``
cycles ridge, skip_align, swiglu_gated with the case index.

Printed: cases, brackets checked, violations (a reference outside a bracket; must be 0),
refusals by message, float contract counts (values, AccuracyWarnings, contract violations:
must be 0), wall time.  ``--json`` keeps running totals (an interrupted soak keeps its counts).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.append(os.path.join(ROOT, "tests", "certify"))
sys.path.append(os.path.join(ROOT, "data", "_precompute"))

import mpmath as mp  # noqa: E402
import numpy as np  # noqa: E402

ACTS = ("relu", "leaky_relu", "silu", "gelu", "tanh", "erf")
TEACHERS = ("h2", "relu", "sin", "h3+0.3h2", "abs", "net_relu", "net_tanh", "gated")
RULE = "trapezoid"
SMOOTH_NETS = False
GEOMS = ("random", "duplicated", "antiparallel", "zero", "tiny", "large")


def draw(i: int, seed: int):
    """(name, activation, raw inputs or None for gated, teacher family) of case i."""
    rng = np.random.default_rng(seed + i)
    act = ACTS[rng.integers(len(ACTS))]
    fam = TEACHERS[rng.integers(len(TEACHERS))]
    geom = GEOMS[rng.integers(len(GEOMS))]
    d, m = 2, int(rng.integers(2, 4))
    W = rng.normal(0, 0.8, (m, d))
    b = rng.normal(0, 0.6, m)
    a = rng.normal(0, 1.0, m)
    if geom == "duplicated":
        W[1] = W[0]
    elif geom == "antiparallel":
        W[1] = -W[0]
    elif geom == "zero":
        W[1] = 0.0
    elif geom == "tiny":
        W[1] = 1e-7 * W[1] / np.linalg.norm(W[1])
        b[1] = 0.5 if b[1] >= 0 else -0.5
    elif geom == "large":
        lim = 20.0 if act == "erf" else (8.0 if act == "gelu" else 4.0)
        W[0] *= lim / np.linalg.norm(W[0])
        b *= 5.0
    th = rng.normal(size=d)
    U = [list(th / np.linalg.norm(th))]
    if fam in ("h2", "relu", "sin", "h3+0.3h2", "abs"):
        t = {"kind": "additive", "link": fam, "U": U, "kappa": [1.0]}
    elif fam == "net_relu":
        t = {"kind": "network", "activation": "relu", "V": [1.0], "U": U,
             "bias": [float(rng.normal(0, 0.3))]}
    elif fam == "net_tanh":
        # --smooth-nets: the unit cycles through tanh, silu, gelu, erf with the case index (no
        # extra draw, so the other cases stay the same)
        act_t = ("tanh", "silu", "gelu", "erf")[i % 4] if SMOOTH_NETS else "tanh"
        t = {"kind": "network", "activation": act_t, "V": [1.0], "U": U,
             "bias": [float(rng.normal(0, 0.3))]}
    else:
        t = None
    raw = {"W": W.tolist(), "b": b.tolist(), "a": a.tolist(), "c": float(rng.normal(0, 0.3)),
           "teacher": t}
    return f"case{i}:{act}:{fam}:{geom}", act, raw, fam


def run_case(i, seed, dps, counts, refusals, fails):
    import popdyn
    import certify
    import smooth_refs as SR

    name, act, raw, fam = draw(i, seed)
    if raw["teacher"] is None:            # gated teacher: numerical brackets, Stein reference
        return _gated_case(i, name, act, raw, dps, counts, refusals, fails)
    inp = SR.to_inputs(raw)
    S, p, T = SR.build(act, inp)
    # tiny neurons leave centered-Gram eigenvalues ~1e−20 (measured 3.5e−20): their case runs
    # 10 digits higher so that the refit's eigenvalue threshold 10^−dps·λ_max (TRS_DPS = dps + 5)
    # sits far above the moments' error (~10^−(dps+3)) and far below every real eigenvalue
    if name.endswith(":tiny"):
        dps += 10
    SR.DPS = dps
    SR.TRS_DPS = dps + 5
    SR.R.RULE = RULE
    # reference strings with 10 digits beyond the soak's dps (the moments are good to ~dps + 3):
    # the default dps − 2 digits would sit within ~1e−18 of brackets 1e−16 wide
    # (scientific notation: fixed-point strings of moments ~1e−10⁶ exhausted memory in case 71)
    SR.s = lambda x: SR.ctx.nstr(x, dps + 10)
    ref = SR.one(name, act, inp)
    certify.moments.clear_cache()

    def check(br, val, what):
        counts["brackets"] += 1
        counts[f"brackets {br.provenance}"] += 1
        v = mp.mpf(val)
        if not (mp.mpf(br.lo) <= v <= mp.mpf(br.hi)):
            counts["violations"] += 1
            fails.append(f"{name} {what}: {val} outside [{br.lo!r}, {br.hi!r}]")

    def guard(what, fn):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return fn()
        except certify.CertificationError as e:
            refusals[f"{what} ({act}): {str(e)[:90]}"] += 1
            return None

    L = guard("loss", lambda: certify.loss(S, p, T))
    if L is not None:
        check(L.loss, ref["loss"], "loss")
        check(L.mean_y, ref["mean_y"], "E[y]")
        check(L.variance, mp.mpf(ref["second_y"]) - mp.mpf(ref["mean_y"]) ** 2, "V_Y")
    al = guard("alignment", lambda: certify.alignment(S, p, T))
    if al is not None:
        for k in ("a_top", "a_min", "a_mean"):
            check(getattr(al, k), ref[k], k)
    for kind, key, B in (("unrestricted", "unrestricted", None),
                         ("same_budget", "same_budget", None), ("bounded", "bounded_0.5", 0.5)):
        R = guard(f"refit {kind}", lambda: certify.refit_risk(S, p, T, kind, budget=B))
        if R is not None:
            check(R.risk, ref["refit"][key], f"refit {kind}")
    # the float engine's rtol contract (popdyn.accuracy): within rtol, or an AccuracyWarning
    from popdyn.diagnostics.agop import agop
    for rtol in (1e-10, 1e-12):
        with warnings.catch_warnings(record=True) as wl:
            warnings.simplefilter("always", popdyn.AccuracyWarning)
            Lf, info = popdyn.population_loss(S, p, T, rtol=rtol, full_output=True)
        warned = any(issubclass(w.category, popdyn.AccuracyWarning) for w in wl)
        counts["float values"] += 1
        ref_L = mp.mpf(ref["loss"])
        err = abs(mp.mpf(Lf) - ref_L)
        if warned:
            counts[f"float loss AccuracyWarning (rtol {rtol:g})"] += 1
        if err > mp.mpf(float(info["error"])) + mp.mpf(4e-16) * max(abs(ref_L), 1):
            counts["float loss outside its stated error"] += 1
            fails.append(f"{name} float loss {Lf!r} vs {ref['loss']} (stated {info['error']:.2e})")
        if err > rtol * abs(ref_L) + mp.mpf(info["atol"]) and not warned:
            counts["float loss beyond rtol without AccuracyWarning (contract violation)"] += 1
            fails.append(f"{name} float loss off by {float(err):.2e} at rtol {rtol:g}, no warning")
        lam_ref = [mp.mpf(x) for x in ref["agop_eigenvalues"]]
        with warnings.catch_warnings(record=True) as wl:
            warnings.simplefilter("always", popdyn.AccuracyWarning)
            M, ainfo = agop(S, p, rtol=rtol, full_output=True)
        warned = any(issubclass(w.category, popdyn.AccuracyWarning) for w in wl)
        counts["float values"] += 1
        if warned:
            counts[f"float AGOP AccuracyWarning (rtol {rtol:g})"] += 1
        ev = np.sort(np.linalg.eigvalsh(np.asarray(M, dtype=float)))[::-1]
        scale = max(abs(lam_ref[0]), mp.mpf(1e-300))
        aerr = max(abs(mp.mpf(ev[k]) - lam_ref[k]) for k in range(len(ev)))
        if aerr > rtol * scale + mp.mpf(ainfo["atol"]) and not warned:
            counts["float AGOP beyond rtol without AccuracyWarning (contract violation)"] += 1
            fails.append(f"{name} float AGOP off by {float(aerr / scale):.2e} relative at rtol "
                         f"{rtol:g}, no warning")


GATES = ("tanh", "relu", "gelu", "id", "rotation")


def _gated_reference(S, p, gate, dps):
    """(loss, E[y], E[y²], refit optima) against y = F(s)t (s = x₁, t = x₂) or (s² − t²)/2,
    independently (data/_precompute/gated_refs.py ``reference``): Stein's lemma in t,
    E[σ(w·x + b)F(s)t] = (w·e₂)E[σ′(w·x + b)F(s)] (e₁ ⊥ e₂), and the 2-D mpmath quadrature of
    tests/certify/_ref.py for every pair; E[y] = 0, E[y²] = E[F(s)²] (rotation: exact
    polynomial moments)."""
    import gated_refs
    L, ey, ey2, _, _, _, refit = gated_refs.reference(S, p, gate, np.eye(2), 1.0, dps)
    return L, ey, ey2, refit


def _gated_case(i, name, act, raw, dps, counts, refusals, fails):
    import popdyn
    import certify
    gate = GATES[i % len(GATES)]
    name = f"{name}:{gate}"
    if name.split(":")[3] == "tiny":
        dps += 10
    W = np.array(raw["W"])
    S = popdyn.Student(d=W.shape[1], m=W.shape[0], activation=act)
    p = popdyn.Params(np.array(raw["a"]), W, np.array(raw["b"]), raw["c"])
    T = popdyn.Teacher.gated(gate, np.eye(2))
    import _ref
    _ref.RULE = RULE
    L_ref, ey_ref, ey2, refit = _gated_reference(S, p, gate, dps)
    certify.moments.clear_cache()

    def check(br, val, what):
        counts["brackets"] += 1
        counts["brackets (gated teachers)"] += 1
        counts[f"brackets {br.provenance}"] += 1
        counts[f"brackets (gated teachers) {br.provenance}"] += 1
        v = mp.mpf(val)
        if not (mp.mpf(br.lo) <= v <= mp.mpf(br.hi)):
            counts["violations"] += 1
            fails.append(f"{name} {what}: {val} outside [{br.lo!r}, {br.hi!r}]")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            Lb = certify.loss(S, p, T)
            check(Lb.loss, L_ref, "loss")
            check(Lb.mean_y, ey_ref, "E[y]")
            check(Lb.variance, ey2 - ey_ref ** 2, "V_Y")
        except certify.CertificationError as e:
            refusals[f"loss (gated {gate}, {act}): {str(e)[:90]}"] += 1
        for kind, key, B in (("unrestricted", "unrestricted", None),
                             ("same_budget", "same_budget", None),
                             ("bounded", "bounded_0.5", 0.5)):
            try:
                R = certify.refit_risk(S, p, T, kind, budget=B)
                check(R.risk, refit[key], f"refit {kind}")
            except certify.CertificationError as e:
                refusals[f"refit {kind} (gated {gate}, {act}): {str(e)[:90]}"] += 1


def _checker(name, counts, fails, group):
    def check(br, val, what):
        counts["brackets"] += 1
        counts[f"brackets ({group})"] += 1
        counts[f"brackets {br.provenance}"] += 1
        counts[f"brackets ({group}) {br.provenance}"] += 1
        v = mp.mpf(val)
        if not (mp.mpf(br.lo) <= v <= mp.mpf(br.hi)):
            counts["violations"] += 1
            fails.append(f"{name} {what}: {val} outside [{br.lo!r}, {br.hi!r}]")
    return check


def draw_skip(i: int, seed: int):
    """(name, inputs of data/_precompute/skip_align_refs.py) of skip-alignment case i."""
    rng = np.random.default_rng(seed + i)
    act = ("relu", "leaky_relu", "erf")[rng.integers(3)]
    geom = GEOMS[rng.integers(5)]                   # no "large": erf pairs stay closed anyway
    d, m = int(rng.integers(2, 5)), int(rng.integers(2, 4))
    W = rng.normal(0, 0.8, (m, d))
    b = rng.normal(0, 0.6, m)
    if geom == "duplicated":
        W[1] = W[0]
    elif geom == "antiparallel":
        W[1] = -W[0]
    elif geom == "zero":
        W[1] = 0.0
        b[1] = 0.4 if b[1] >= 0 else -0.4
    elif geom == "tiny":
        W[1] = 1e-7 * W[1] / np.linalg.norm(W[1])
        b[1] = 0.5 if b[1] >= 0 else -0.5
    v = rng.normal(0, 0.5, d) if rng.random() < 0.8 else np.zeros(d)
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    r = int(rng.integers(1, d))
    inp = dict(act=act, scaling=("standard", "mean_field")[rng.integers(2)], W=W.tolist(),
               a=rng.normal(0, 1.0, m).tolist(), b=b.tolist(), v=v.tolist(), c=0.1,
               U=Q.T[:r].tolist())
    return f"case{i}:skip:{act}:{geom}", inp


def run_skip_case(i, seed, dps, counts, refusals, fails):
    import popdyn
    import certify
    import skip_align_refs as SA
    name, inp = draw_skip(i, seed)
    mp.mp.dps = max(dps, 30)
    SA.mp.mp.dps = max(dps, 30)
    ref = SA.scores(SA.agop(inp), inp["U"])
    mp.mp.dps = 60
    W = np.array(inp["W"])
    S = popdyn.Student(W.shape[1], W.shape[0], activation=inp["act"], scaling=inp["scaling"],
                       negative_slope=0.1, skip=True)
    p = popdyn.Params(np.array(inp["a"]), W, np.array(inp["b"]), inp["c"], np.array(inp["v"]))
    check = _checker(name, counts, fails, "skip alignment")
    try:
        al = certify.alignment(S, p, np.array(inp["U"]))
    except certify.CertificationError as e:
        refusals[f"skip alignment ({inp['act']}): {str(e)[:90]}"] += 1
        return
    for k in ("a_top", "a_min", "a_mean"):
        check(getattr(al, k), ref[k], k)
    for k, lam in enumerate(ref["lam"]):
        check(al.eigenvalues[k], lam, f"eigenvalue {k}")


def draw_swiglu_gated(i: int, seed: int):
    """(name, inputs of data/_precompute/swiglu_gated_refs.py) of SwiGLU-vs-gated case i."""
    import swiglu_gated_refs as SG
    rng = np.random.default_rng(seed + i)
    gate = GATES[i % len(GATES)]
    geom = ("random", "parallel", "antiparallel", "perp", "zero")[rng.integers(5)]
    d, m = int(rng.integers(3, 5)), 2
    G = rng.normal(0, 0.8, (m, d))
    Vv = rng.normal(0, 0.8, (m, d))
    if geom == "random":
        import random
        U = SG._qr2(random.Random(int(rng.integers(1 << 30))), d)
    else:
        U = [[1.0 if k == 0 else 0.0 for k in range(d)], [1.0 if k == 1 else 0.0 for k in range(d)]]
    if geom in ("parallel", "antiparallel"):
        G[0] = (0.9 if geom == "parallel" else -1.1) * np.array(U[0])
    elif geom == "perp":
        Vv[0, 1] = 0.0                                    # v_0 ⟂ u₂
        G[1] = 0.7 * np.array(U[1])                       # g_1 ∥ u₂
    elif geom == "zero":
        if rng.random() < 0.5:
            G[1] = 0.0
        else:
            Vv[1] = 0.0
    inp = dict(gate=gate, U=[list(map(float, u)) for u in U],
               kappa=float(rng.choice([1.0, -0.7, 1.6])), G=G.tolist(), V=Vv.tolist(),
               a=rng.normal(0, 1.0, m).tolist(), c=float(rng.normal(0, 0.3)))
    return f"case{i}:swiglu:{gate}:{geom}", inp


def run_swiglu_gated_case(i, seed, dps, counts, refusals, fails):
    import popdyn
    import certify
    import swiglu_gated_refs as SG
    from popdyn.swiglu import SwiGLUParams, SwiGLUStudent
    name, inp = draw_swiglu_gated(i, seed)
    SG.mp.mp.dps = dps + 5
    Q = SG.quantities(inp)
    L, R = SG.loss_and_refit(inp, Q)
    ey, ey2 = Q[3], Q[4]
    mp.mp.dps = 60
    G = np.array(inp["G"])
    S = SwiGLUStudent(G.shape[1], G.shape[0])
    p = SwiGLUParams(np.array(inp["a"]), G, np.array(inp["V"]), inp["c"])
    T = popdyn.Teacher.gated(inp["gate"], np.array(inp["U"]), inp["kappa"])
    certify.moments.clear_cache()
    check = _checker(name, counts, fails, "swiglu vs gated")
    try:
        Lb = certify.loss(S, p, T)
        check(Lb.loss, L, "loss")
        check(Lb.mean_y, ey, "E[y]")
        check(Lb.variance, ey2 - ey * ey, "V_Y")
    except certify.CertificationError as e:
        refusals[f"swiglu loss (gated {inp['gate']}): {str(e)[:90]}"] += 1
    try:
        Rb = certify.refit_risk(S, p, T, "unrestricted")
        check(Rb.risk, R, "refit unrestricted")
        if not Rb.risk.resolved:
            counts["swiglu vs gated refit unresolved"] += 1
    except certify.CertificationError as e:
        refusals[f"swiglu refit (gated {inp['gate']}): {str(e)[:90]}"] += 1


FAMILY = "ridge"


def _run(i, seed, dps, counts, refusals, fails):
    fam = FAMILY if FAMILY != "all" else ("ridge", "skip_align", "swiglu_gated")[i % 3]
    fn = {"ridge": run_case, "skip_align": run_skip_case,
          "swiglu_gated": run_swiglu_gated_case}[fam]
    return fn(i, seed, dps, counts, refusals, fails)


def _name(i, seed):
    fam = FAMILY if FAMILY != "all" else ("ridge", "skip_align", "swiglu_gated")[i % 3]
    return {"ridge": draw, "skip_align": draw_skip,
            "swiglu_gated": draw_swiglu_gated}[fam](i, seed)[0]


def _dump(args, counts, refusals, fails, wall):
    with open(args.json + ".tmp", "w") as fh:
        json.dump({"counts": counts, "refusals": refusals, "fails": fails, "wall_s": wall,
                   "args": vars(args)}, fh, indent=1)
    os.replace(args.json + ".tmp", args.json)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=20)
    ap.add_argument("--seed", type=int, default=19000)
    ap.add_argument("--dps", type=int, default=20)
    ap.add_argument("--rule", choices=("trapezoid", "quad"), default="trapezoid",
                    help="reference rule for pairs of two tanh / silu functions")
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--smooth-nets", action="store_true",
                    help="network teachers of tanh, silu, gelu, erf units (cycling), not tanh only")
    ap.add_argument("--family", choices=("ridge", "skip_align", "swiglu_gated", "all"),
                    default="ridge", help="which students to draw (module docstring)")
    args = ap.parse_args(argv)
    global SMOOTH_NETS, FAMILY
    FAMILY = args.family
    SMOOTH_NETS = args.smooth_nets
    mp.mp.dps = 60          # the comparisons (e.g. V_Y = E[y²] − E[y]²) at 60 digits, not 15
    global RULE
    RULE = args.rule
    counts = collections.Counter()
    refusals = collections.Counter()
    fails = []
    t0 = time.time()
    for i in range(args.start, args.start + args.cases):
        t = time.time()
        try:
            _run(i, args.seed, args.dps, counts, refusals, fails)
        except ArithmeticError as e:      # the reference quadrature did not converge
            counts["reference not converged (case skipped)"] += 1
            fails.append(f"case {i}: reference: {e}")
        counts["cases"] += 1
        if args.json:           # running totals, so that an interrupted soak keeps its counts
            _dump(args, counts, refusals, fails, time.time() - t0)
        print(f"case {i} {_name(i, args.seed)}: {time.time() - t:.1f} s; "
              f"violations so far {counts['violations']}", flush=True)
    wall = time.time() - t0
    print("\n== soak_certify ==")
    for k, v in sorted(counts.items()):
        print(f"{k}: {v}")
    print(f"refusals: {sum(refusals.values())}")
    for k, v in refusals.most_common():
        print(f"  {v} x {k}")
    for f in fails[:50]:
        print("  ", f)
    print(f"wall time: {wall:.0f} s")
    if args.json:
        _dump(args, counts, refusals, fails, wall)
    return 1 if counts["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
