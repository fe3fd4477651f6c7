"""Soundness soak of the certified brackets and of the float rtol contract: random
configurations against an independent reference, sized for 10,000 cases on two cores.

Usage: python benchmarks/soak_certify.py [--cases N] [--start K] [--seed S] [--workers W]
       [--reference arb|mpmath] [--state PATH] [--dps D] [--rule trapezoid|quad]
       [--family ridge|skip|swiglu_gated|all] [--smooth-nets] [--recheck-every K]
       [--recheck-timeout SEC] [--float-timeout SEC] [--with-hypothesis]
       [--only ridge|skip|swiglu_gated]

The full soak (measured on cases 0–129 of seed 19000 at ``--family all``: 1.53 CPU-s a case —
reference 0.59, certify 0.53, float side 0.10, mpmath re-checks 0.31 — so about 2.1 hours for
10,000 cases on two dedicated cores; a huge tanh / silu neuron costs 10–55 CPU-s, mostly
certify and the nested trapezoid; the report's ``timing`` block has the figures of a run):

    nice -n 10 python benchmarks/soak_certify.py --cases 10000 --workers 2 \\
        --state soak_state.json --with-hypothesis

Cases.  Case i is drawn by a numpy Generator seeded with seed + i (reproducible alone and in
any order).  ``--family all`` (default) cycles with the case index through

* ``ridge``: an activation (relu, leaky_relu, silu, gelu, tanh, erf), a teacher (additive
  links h2, relu, sin, h3+0.3h2, abs; networks of relu and tanh units — with ``--smooth-nets``
  tanh, silu, gelu, erf cycling; gated teachers y = F(s)t, the gate cycling through tanh, relu,
  gelu, id and the rotation control), d = 2, m = 2 or 3 and a geometry: random, duplicated,
  antiparallel, a zero neuron, a tiny neuron (|w| = 1e−7 with a bias ±0.5), a huge neuron
  (|w| log-uniform in [4, 30], biases × 5).  Checked: the loss, E[y], V_Y, the gradient in a,
  b and c (not gated), the AGOP alignment a_top, a_min, a_mean, and the unrestricted,
  same_budget and bounded (B = ½) refits; and the float engine's rtol contract
  (popdyn.accuracy) at rtol 1e−10 and 1e−12: the loss and the AGOP eigenvalues within rtol
  (plus the stated rounding floor) of the reference, or an AccuracyWarning; the loss also
  within its stated error;
* ``skip``: students with a linear skip v·x (every activation; d = 2..4, m = 2 or 3; random,
  duplicated, antiparallel, zero and tiny neurons, v = 0 or not, standard or mean-field
  scaling) against an additive teacher on the first row of U (h2, h3+0.3h2, relu): the loss,
  E[y], V_Y, the gradient in a, b, c, the refits (unrestricted; same_budget and bounded for the
  standard scaling: the target is y − v·x, the float side's definition) and, for relu, leaky
  relu and erf, the AGOP eigenvalues and scores (data/_precompute/skip_align_refs.py);
* ``swiglu_gated``: SwiGLU students (d = 3 or 4, m = 2) against gated teachers (rows
  orthonormalized in float64 or exact axes; g_j parallel / antiparallel to u₁, v_j ⟂ u₂, zero
  neurons): the loss, E[y], V_Y and the unrestricted refit, against the direct 2-D Gaussian
  integrals of data/_precompute/swiglu_gated_refs.py (mpmath trapezoid, both references).

Not covered: ∂L/∂W and ∂L/∂v (their reference needs σ″ moments), multi-index teachers other
than the gated ones, SwiGLU students against additive or network teachers.

References (``--reference``).  ``mpmath``: tests/certify/_ref.py (outer tanh–sinh of one unit
times the textbook conditional mean of the other; tanh / silu pairs by the nested trapezoid with
the Trefethen–Weideman bound, ``--rule``).  ``arb`` (default): the same integrals integrated
rigorously in Arb (tests/certify/_ref_arb.py: ``acb.integral`` on the 1-D integrals, the
nested trapezoid evaluated in Arb, acb.integral inside acb.integral where the trapezoid would
need too many nodes), 10–40 times faster.  Neither uses popdyn's or certify's moment code.
Because Arb's elementary functions are shared with certify, every ``--recheck-every``-th case
(40) and every case whose arb value comes within its margin 10^−dps·max(|v|, 1) of a bracket
end is recomputed with the mpmath reference, and the verdict for that case is the mpmath one;
the arb and mpmath values must then agree within the margin ("arb/mpmath disagreements": must
be 0).  A re-check that runs past ``--recheck-timeout`` seconds (the mpmath nested rule of a
huge tanh unit needs hours) is counted as "re-check timed out", with the case listed.
Moments are good to about 10^−(dps+3) (``--dps`` 20: far below the bracket widths, ≥ 1e−16
relative); tiny-neuron cases run 10 digits higher (their centered Gram has eigenvalues ~1e−20
that the refit must resolve).  Comparisons at 60 digits.

The verdict (``judge``) treats a reference value as the ball v ± e, e its stated error (the arb
radii propagated) or the margin.  A value outside its bracket is recomputed, with the backend
that decided, at dps + 20 and then dps + 40 digits, and judged again; it is a violation only if
its ball still misses the bracket at the highest digits.  A ball that still reaches the
bracket (an exact bracket such as E[y²] = [½, ½] against a quadrature a hair below ½) is
counted as consistent.  An arb/mpmath disagreement is likewise recomputed with both backends at
the higher digits before it counts.

State and report (``--state``, JSON, rewritten atomically after every case): the arguments,
one record per finished case (name, brackets checked, violations, refusals, failures, the
seconds spent in the reference, certify, the float side and the mpmath re-check), and the
totals: cases, brackets checked (by provenance and family), violations (must be 0), refusals
by message, float contract counts (contract violations: must be 0), per-case cost, wall time.
A rerun with the same ``--state`` continues where it stopped: finished cases are kept, the
cases that were running are redone (``--cases``, ``--start``, ``--seed`` and the case mix must
match the state's).  ``--workers`` processes (multiprocessing) each run whole cases.

``--with-hypothesis`` runs, after the cases, the property tests of tests/certify and
tests/popdyn under the ``soak`` hypothesis profile (25 times each test's examples, no deadline;
tests/conftest.py) and records their outcome and wall time in the report.

Exit status 1 when a violation, an arb/mpmath disagreement or a float contract violation was
found, or the hypothesis run failed.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import math
import multiprocessing as mpc
import os
import signal
import subprocess
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (os.path.join(ROOT, "tests", "certify"), os.path.join(ROOT, "data", "_precompute"),
           os.path.join(ROOT, "benchmarks")):
    if _p not in sys.path:
        sys.path.append(_p)

import mpmath as mp  # noqa: E402
import numpy as np  # noqa: E402

ACTS = ("relu", "leaky_relu", "silu", "gelu", "tanh", "erf")
TEACHERS = ("h2", "relu", "sin", "h3+0.3h2", "abs", "net_relu", "net_tanh", "gated")
GEOMS = ("random", "duplicated", "antiparallel", "zero", "tiny", "huge")
GATES = ("tanh", "relu", "gelu", "id", "rotation")
FAMILIES = ("ridge", "skip", "swiglu_gated")
#: the largest |w| of the huge geometry (log-uniform from HUGE_MIN)
HUGE_MIN, HUGE_MAX = 4.0, 30.0

# set by main() in every process (workers get them through _init)
OPT = {"dps": 20, "rule": "trapezoid", "smooth_nets": False, "family": "all",
       "reference": "arb", "recheck_every": 40, "recheck_timeout": 600.0,
       "float_timeout": 30.0}


# ------------------------------------------------------------------------------ draws
def draw(i: int, seed: int):
    """(name, activation, raw inputs, teacher family) of ridge case i (raw["teacher"] is None
    for a gated teacher)."""
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
    elif geom == "huge":
        lim = math.exp(rng.uniform(math.log(HUGE_MIN), math.log(HUGE_MAX)))
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
        act_t = ("tanh", "silu", "gelu", "erf")[(i // 3) % 4] if OPT["smooth_nets"] else "tanh"
        t = {"kind": "network", "activation": act_t, "V": [1.0], "U": U,
             "bias": [float(rng.normal(0, 0.3))]}
    else:
        t = None
    raw = {"W": W.tolist(), "b": b.tolist(), "a": a.tolist(), "c": float(rng.normal(0, 0.3)),
           "teacher": t}
    gate = f":{GATES[(i // 3) % len(GATES)]}" if t is None else ""
    return f"case{i}:{act}:{fam}:{geom}{gate}", act, raw, fam


def draw_skip(i: int, seed: int):
    """(name, inputs) of skip case i: the student, U (orthonormal rows) and a teacher link on
    U's first row."""
    rng = np.random.default_rng(seed + i)
    act = ACTS[rng.integers(len(ACTS))]
    geom = GEOMS[rng.integers(5)]                   # no huge neuron
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
               U=Q.T[:r].tolist(), link=("h2", "h3+0.3h2", "relu")[rng.integers(3)])
    return f"case{i}:skip:{act}:{geom}:{inp['link']}:{inp['scaling']}", inp


def draw_swiglu_gated(i: int, seed: int):
    """(name, inputs of data/_precompute/swiglu_gated_refs.py) of SwiGLU-vs-gated case i."""
    import swiglu_gated_refs as SG
    rng = np.random.default_rng(seed + i)
    gate = GATES[(i // 3) % len(GATES)]
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


def family_of(i: int) -> str:
    return OPT["family"] if OPT["family"] != "all" else FAMILIES[i % 3]


def case_name(i: int, seed: int) -> str:
    return {"ridge": draw, "skip": draw_skip,
            "swiglu_gated": draw_swiglu_gated}[family_of(i)](i, seed)[0]


# ------------------------------------------------------------------------------ references
class _Timeout(Exception):
    pass


def _backend(kind: str, dps: int):
    """A context in which _ref.pair / _ref.mean are the chosen reference."""
    import _ref as R
    R.RULE = OPT["rule"]
    if kind == "arb":
        import _ref_arb as A
        return A.installed(dps)
    return contextlib.nullcontext({})


def _F(x):
    import _ref as R
    return R.F(float(x))


def _rad():
    """The radius of the last _ref.pair / _ref.mean value (arb backend), else None."""
    import _ref as R
    if getattr(R.pair, "__module__", "") != "_ref_arb":
        return None
    import _ref_arb as A
    return A.LAST_RAD


class _V:
    """A reference value with an absolute error bound (``err`` None: none stated, the soak's
    margin applies) and its source ("arb": re-checked by mpmath when it touches a bracket end;
    "mpmath": an mpmath-only reference)."""
    __slots__ = ("v", "err", "src", "scale")

    def __init__(self, v, err, src="arb", scale=1.0):
        self.v, self.err, self.src, self.scale = v, err, src, scale


def composite_reference(act, slope, W, b, a, s, c, tunits, dps, U=None, agop=True,
                        budgets=True, grad_b=True):
    """Loss, E[y'], V', gradient in a, b, c, refit optima and (``agop``) the AGOP eigenvalues
    and scores of the model s Σ a_j σ(w_j·x + b_j) + c against the target
    y' = Σ_k λ_k F_k(w_k·x + b_k) (``tunits`` = [(λ, atoms, w, b)]), every moment a 2-D
    Gaussian integral of ``_ref.pair`` / ``_ref.mean`` (whichever backend is installed):

        L = ½(s² aᵀCa + 2sc aᵀμ0 + c² − 2s aᵀCtλ − 2c E[y'] + E[y'²]),
        ∂L/∂a_j = s(s(Ca)_j + c μ0_j − (Ctλ)_j),   ∂L/∂c = s aᵀμ0 + c − E[y'],
        ∂L/∂b_j = s a_j (s(Da)_j + c ν_j − (Dtλ)_j)   (D_ji = E[σ′_jσ_i], ν_j = E[σ′_j]),

    refits by data/_precompute/certify_refs.py ``trs`` on G = C − μ0μ0ᵀ, g = Ctλ − μ0E[y'],
    V = E[y'²] − E[y']² (same_budget: B² = |a|²; bounded: B = ½), the AGOP
    M = s² Wᵀ(aaᵀ ∘ B)W (B = E[σ′_iσ′_j]) and its scores for the rows of U (as
    data/_precompute/smooth_refs.py ``one``).

    Returns (values, errors): with the arb backend the errors of the loss, E[y'], V' and the
    gradient are the moments' radii propagated through these formulas (|coefficients| times
    radii, plus the rounding of 60+ digit arithmetic); the refits and the AGOP quantities get
    no error (None: the soak uses its margin)."""
    import _ref as R
    import certify_refs
    from certify_refs import trs
    ctx = R.ctx
    arb_mode = _rad() is not None
    with ctx.workdps(dps + 15):
        fn = R.activation(act, slope)
        dfn = R.derivative(fn)
        m, d = len(W), len(W[0])
        q = lambda x: R.mpq(_F(x))                       # noqa: E731

        def P(*args):
            v = R.pair(*args)
            return v, (_rad() or 0.0)

        def Mn(*args):
            v = R.mean(*args)
            return v, (_rad() or 0.0)
        av, cc, sv = [q(x) for x in a], q(c), R.mpq(s)
        lam = [R.mpq(t[0]) for t in tunits]
        C = [[None] * m for _ in range(m)]
        Bm = [[None] * m for _ in range(m)]
        for i in range(m):
            for j in range(i, m):
                C[i][j] = C[j][i] = P(fn, W[i], b[i], fn, W[j], b[j])
                if agop:
                    Bm[i][j] = Bm[j][i] = R.pair(dfn, W[i], b[i], dfn, W[j], b[j])
        zero = (ctx.mpf(0), 0.0)
        D = [[P(dfn, W[j], b[j], fn, W[i], b[i]) if grad_b else zero for i in range(m)]
             for j in range(m)]
        mu0 = [Mn(fn, W[i], b[i]) for i in range(m)]
        nu = [Mn(dfn, W[i], b[i]) if grad_b else zero for i in range(m)]
        Ct, Dt = [], []
        for i in range(m):
            pc = [P(fn, W[i], b[i], t[1], t[2], t[3]) for t in tunits]
            pd = [P(dfn, W[i], b[i], t[1], t[2], t[3]) if grad_b else zero for t in tunits]
            Ct.append((ctx.fsum(lam[k] * x[0] for k, x in enumerate(pc)),
                       sum(abs(float(lam[k])) * x[1] for k, x in enumerate(pc))))
            Dt.append((ctx.fsum(lam[k] * x[0] for k, x in enumerate(pd)),
                       sum(abs(float(lam[k])) * x[1] for k, x in enumerate(pd))))
        me = [Mn(t[1], t[2], t[3]) for t in tunits]
        ey = (ctx.fsum(lam[k] * x[0] for k, x in enumerate(me)),
              sum(abs(float(lam[k])) * x[1] for k, x in enumerate(me)))
        pe = [[P(t[1], t[2], t[3], u[1], u[2], u[3]) for u in tunits] for t in tunits]
        nt = len(tunits)
        ey2 = (ctx.fsum(lam[k] * lam[l] * pe[k][l][0] for k in range(nt) for l in range(nt)),
               sum(abs(float(lam[k] * lam[l])) * pe[k][l][1] for k in range(nt)
                   for l in range(nt)))
        fa = [abs(float(x)) for x in av]
        fs, fc = abs(float(sv)), abs(float(cc))
        Ca = [ctx.fsum(C[i][j][0] * av[j] for j in range(m)) for i in range(m)]
        eCa = [sum(C[i][j][1] * fa[j] for j in range(m)) for i in range(m)]
        Da = [ctx.fsum(D[i][j][0] * av[j] for j in range(m)) for i in range(m)]
        eDa = [sum(D[i][j][1] * fa[j] for j in range(m)) for i in range(m)]
        amu = ctx.fsum(av[i] * mu0[i][0] for i in range(m))
        eamu = sum(fa[i] * mu0[i][1] for i in range(m))
        L = (sv * sv * ctx.fsum(av[i] * Ca[i] for i in range(m)) + 2 * sv * cc * amu + cc * cc
             - 2 * sv * ctx.fsum(av[i] * Ct[i][0] for i in range(m)) - 2 * cc * ey[0]
             + ey2[0]) / 2
        eL = (fs * fs * sum(fa[i] * eCa[i] for i in range(m)) + 2 * fs * fc * eamu
              + 2 * fs * sum(fa[i] * Ct[i][1] for i in range(m)) + 2 * fc * ey[1] + ey2[1]) / 2
        V = ey2[0] - ey[0] * ey[0]
        eV = ey2[1] + 2 * abs(float(ey[0])) * ey[1] + ey[1] ** 2
        # E[y'] of polynomial links at |u|² ≠ 1 is ~1e−17 with brackets ~1e−33 wide: its
        # rounding allowance is relative to its terms, not to 1
        sey = sum(abs(float(lam[k] * x[0])) for k, x in enumerate(me))
        vals = {"loss": _V(L, eL), "mean_y": _V(ey[0], ey[1], scale=sey), "variance": _V(V, eV),
                "grad c": _V(sv * amu + cc - ey[0], fs * eamu + ey[1])}
        for j in range(m):
            vals[f"grad a[{j}]"] = _V(sv * (sv * Ca[j] + cc * mu0[j][0] - Ct[j][0]),
                                      fs * (fs * eCa[j] + fc * mu0[j][1] + Ct[j][1]))
            if grad_b:
                vals[f"grad b[{j}]"] = _V(sv * av[j] * (sv * Da[j] + cc * nu[j][0] - Dt[j][0]),
                                          fs * fa[j] * (fs * eDa[j] + fc * nu[j][1] + Dt[j][1]))
        G = ctx.matrix(m, m)
        for i in range(m):
            for j in range(m):
                G[i, j] = C[i][j][0] - mu0[i][0] * mu0[j][0]
        g = [Ct[i][0] - mu0[i][0] * ey[0] for i in range(m)]
        lamG, QG = ctx.eigsy(G)
        lamG = [lamG[i] for i in range(m)]
        certify_refs.DPS = dps + 5
        vals["refit unrestricted"] = _V(trs(QG, lamG, g, V, None), None)
        if budgets:
            vals["refit same_budget"] = _V(trs(QG, lamG, g, V, ctx.fsum(x * x for x in av)),
                                           None)
            vals["refit bounded"] = _V(trs(QG, lamG, g, V, ctx.mpf(0.25)), None)
        if agop:
            Wq = [[q(x) for x in row] for row in W]
            K = [[sv * sv * av[i] * av[j] * Bm[i][j] for j in range(m)] for i in range(m)]
            M = ctx.matrix(d, d)
            for x in range(d):
                for y in range(d):
                    M[x, y] = ctx.fsum(Wq[i][x] * K[i][j] * Wq[j][y]
                                       for i in range(m) for j in range(m))
            Ev, Q = ctx.eigsy(M)
            order = sorted(range(d), key=lambda i: -Ev[i])
            vals["agop eigenvalues"] = [Ev[i] for i in order]
            if U is not None:
                Uq = [[q(x) for x in row] for row in U]
                r = len(Uq)
                Vr = [[Q[x, order[k]] for x in range(d)] for k in range(r)]
                Pm = ctx.matrix(r, r)
                for i in range(r):
                    for k in range(r):
                        Pm[i, k] = ctx.fsum(Uq[i][x] * Vr[k][x] for x in range(d))
                vals["a_min"] = _V(min(ctx.svd_r(Pm, compute_uv=False)) ** 2, None)
                vals["a_mean"] = _V(ctx.fsum(Pm[i, k] ** 2 for i in range(r)
                                             for k in range(r)) / r, None)
                vals["a_top"] = _V(ctx.fsum(ctx.fsum(Uq[i][x] * Vr[0][x] for x in range(d))
                                            ** 2 for i in range(r)), None)
        # the 60+ digit rounding of the composites (relative 10^−(dps+12)) on top
        rnd = 10.0 ** (-(dps + 12))
        for k, x in vals.items():
            if isinstance(x, _V):
                x.src = "arb" if arb_mode else "mpmath"
                if arb_mode and x.err is not None:
                    x.err = ctx.mpf(x.err) * (1 + 1e-6) + rnd * max(abs(float(x.v)), x.scale)
                else:
                    x.err = None
        return vals


def _teacher_units(T):
    """[(λ, atoms, w, b)] of y for an additive or network teacher."""
    import _ref as R
    if T.kind == "network":
        fn = R.activation(T.activation.name, T.activation.negative_slope)
        return [(_F(T.weights[k]), fn, list(map(float, T.U[k])), float(T.bias[k]))
                for k in range(T.k)]
    fn = R.link(T.link.name)
    return [(_F(T.weights[k]), fn, list(map(float, T.U[k])), 0.0) for k in range(T.k)]


def _grad_b(want):
    return want is None or any(k.startswith("grad b") for k in want)


def reference_ridge(i, seed, kind, dps, want=None):
    """(values, stats) of ridge case i with reference ``kind``."""
    import _ref as R
    name, act, raw, fam = draw(i, seed)
    W, b, a = raw["W"], raw["b"], raw["a"]
    with _backend(kind, dps) as stats:
        if raw["teacher"] is None:
            import gated_refs
            import popdyn
            gate = GATES[(i // 3) % len(GATES)]
            S = popdyn.Student(d=2, m=len(W), activation=act)
            p = popdyn.Params(np.array(a), np.array(W), np.array(b), raw["c"])
            L, ey, ey2, _, _, _, refit = gated_refs.reference(S, p, gate, np.eye(2), 1.0, dps)
            src = kind
            vals = {"loss": _V(L, None, src),
                    # E[y] = 0 exactly for y = F(s)t (not a moment); for the rotation
                    # (s² − t²)/2 on U = I, E[y] = 0 and E[y²] = 1 are exact polynomial
                    # moments (exact rationals in both references)
                    "mean_y": _V(ey, 0, src),
                    "variance": _V(ey2 - ey * ey, 0 if gate == "rotation" else None, src),
                    "refit unrestricted": _V(refit["unrestricted"], None, src),
                    "refit same_budget": _V(refit["same_budget"], None, src),
                    "refit bounded": _V(refit["bounded_0.5"], None, src)}
        else:
            _, _, T = _build_ridge(act, raw)
            vals = composite_reference(act, 0.01, W, b, a, R.Fraction(1), raw["c"],
                                       _teacher_units(T), dps, U=[list(map(float, u)) for u
                                                                  in T.subspace],
                                       grad_b=_grad_b(want))
        return vals, dict(stats)


def reference_skip(i, seed, kind, dps, want=None):
    import _ref as R
    name, inp = draw_skip(i, seed)
    m = len(inp["W"])
    s = R.Fraction(1) if inp["scaling"] == "standard" else R.Fraction(1, m)
    u = list(map(float, inp["U"][0]))
    lin = [("poly", {1: R.ctx.mpf(1)})]
    # target y' = y − v·x: the model's skip is frozen in the refit (certify.skip docstring)
    tunits = [(R.Fraction(1), R.link(inp["link"]), u, 0.0)]
    if any(x != 0 for x in inp["v"]):
        tunits.append((R.Fraction(-1), lin, list(map(float, inp["v"])), 0.0))
    with _backend(kind, dps) as stats:
        vals = composite_reference(inp["act"], 0.1, inp["W"], inp["b"], inp["a"], s, inp["c"],
                                   tunits, dps, agop=False,
                                   budgets=inp["scaling"] == "standard", grad_b=_grad_b(want))
        # the loss's E[y], V_Y are of the teacher y itself (the target's are y − v·x)
        with R.ctx.workdps(dps + 15):
            fn = R.link(inp["link"])
            ey = R.mean(fn, u, 0.0)
            r1 = _rad()
            ey2 = R.pair(fn, u, 0.0, fn, u, 0.0)
            r2 = _rad()
            src = kind
            err = None if r1 is None else (r1, r2)
            vals["mean_y"] = _V(ey, None if err is None else R.ctx.mpf(r1) * 1.001, src)
            vals["variance"] = _V(ey2 - ey * ey, None if err is None else
                                  R.ctx.mpf(r2 + 2 * abs(float(ey)) * r1 + r1 * r1) * 1.001,
                                  src)
        stats = dict(stats)
    if inp["act"] in ("relu", "leaky_relu", "erf"):
        import skip_align_refs as SA
        SA.mp.mp.dps = max(dps, 30) + 10
        ref = SA.scores(SA.agop(inp), inp["U"])
        for k in ("a_top", "a_min", "a_mean"):
            vals[k] = _V(ref[k], None, "mpmath")
        for k, lam in enumerate(ref["lam"]):
            vals[f"agop eigenvalue {k}"] = _V(lam, None, "mpmath")
    return vals, stats


def reference_swiglu(i, seed, kind, dps, want=None):
    """data/_precompute/swiglu_gated_refs.py at dps + 5 digits; with the arb reference its
    2-D moments are evaluated in Arb (_ref_arb.sg_moment: the same rules)."""
    import swiglu_gated_refs as SG
    name, inp = draw_swiglu_gated(i, seed)
    SG.mp.mp.dps = dps + 5
    if kind == "arb":
        import _ref_arb as A
        cm = A.swiglu_installed(dps + 5)
    else:
        cm = contextlib.nullcontext()
    with cm:
        Q = SG.quantities(inp)
    L, Rr = SG.loss_and_refit(inp, Q)
    ey, ey2 = Q[3], Q[4]
    # E[y], E[y²] are 1-D mpmath quadratures in both modes (swiglu_gated_refs.teacher_moments)
    return {"loss": _V(L, None, kind), "mean_y": _V(ey, None, "mpmath"),
            "variance": _V(ey2 - ey * ey, None, "mpmath"),
            "refit unrestricted": _V(Rr, None, kind)}, {}


REFERENCES = {"ridge": reference_ridge, "skip": reference_skip, "swiglu_gated": reference_swiglu}


# ------------------------------------------------------------------------------ certify side
def _build_ridge(act, raw):
    import popdyn
    W = np.array(raw["W"])
    S = popdyn.Student(d=W.shape[1], m=W.shape[0], activation=act)
    p = popdyn.Params(np.array(raw["a"]), W, np.array(raw["b"]), raw["c"])
    t = raw["teacher"]
    if t is None:
        return S, p, None
    if t["kind"] == "additive":
        T = popdyn.Teacher.additive(t["link"], np.array(t["U"]), np.array(t["kappa"]))
    else:
        T = popdyn.Teacher.network(t["activation"], np.array(t["V"]), np.array(t["U"]),
                                   np.array(t["bias"]))
    return S, p, T


def _grad_brackets(out, Lb, m):
    if Lb.grad is None:
        return
    ga, gb, gc = Lb.grad["a"], Lb.grad["b"], Lb.grad["c"]
    for j in range(m):
        out[f"grad a[{j}]"] = (float(ga.lo[j]), float(ga.hi[j]), ga.provenance)
        out[f"grad b[{j}]"] = (float(gb.lo[j]), float(gb.hi[j]), gb.provenance)
    out["grad c"] = (gc.lo, gc.hi, gc.provenance)


def _br(b):
    return (b.lo, b.hi, b.provenance)


def _guard(refusals, what, fn):
    import certify
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    except certify.CertificationError as e:
        refusals[f"{what}: {str(e)[:90]}"] += 1
        return None


def _common_brackets(S, p, T, act, refusals, out, grad=True, alignment=True, U=None,
                     budgets=True):
    import certify
    Lb = None
    if grad:
        Lb = _guard(refusals, f"gradient ({act})", lambda: certify.loss(S, p, T, grad=True))
    if Lb is None:
        Lb = _guard(refusals, f"loss ({act})", lambda: certify.loss(S, p, T))
    if Lb is not None:
        out["loss"], out["mean_y"], out["variance"] = _br(Lb.loss), _br(Lb.mean_y), \
            _br(Lb.variance)
        _grad_brackets(out, Lb, S.m)
    if alignment:
        al = _guard(refusals, f"alignment ({act})",
                    lambda: certify.alignment(S, p, T if U is None else U))
        if al is not None:
            for k in ("a_top", "a_min", "a_mean"):
                out[k] = _br(getattr(al, k))
            if U is not None:
                for k in range(len(al.eigenvalues.lo)):
                    out[f"agop eigenvalue {k}"] = _br(al.eigenvalues[k])
    kinds = (("unrestricted", None), ("same_budget", None), ("bounded", 0.5)) if budgets \
        else (("unrestricted", None),)
    for kind, B in kinds:
        R = _guard(refusals, f"refit {kind} ({act})",
                   lambda: certify.refit_risk(S, p, T, kind, budget=B))
        if R is not None:
            out[f"refit {kind}"] = _br(R.risk)


def brackets_ridge(i, seed, refusals):
    import popdyn
    name, act, raw, fam = draw(i, seed)
    S, p, T = _build_ridge(act, raw)
    out = {}
    if T is None:
        gate = GATES[(i // 3) % len(GATES)]
        T = popdyn.Teacher.gated(gate, np.eye(2))
        _common_brackets(S, p, T, f"gated {gate}, {act}", refusals, out, grad=False,
                         alignment=False)
    else:
        _common_brackets(S, p, T, act, refusals, out)
    return out


def brackets_skip(i, seed, refusals):
    import popdyn
    name, inp = draw_skip(i, seed)
    W = np.array(inp["W"])
    S = popdyn.Student(W.shape[1], W.shape[0], activation=inp["act"], scaling=inp["scaling"],
                       negative_slope=0.1, skip=True)
    p = popdyn.Params(np.array(inp["a"]), W, np.array(inp["b"]), inp["c"], np.array(inp["v"]))
    T = popdyn.Teacher.additive(inp["link"], np.array(inp["U"][:1]), np.array([1.0]))
    out = {}
    _common_brackets(S, p, T, f"skip {inp['act']}", refusals, out, alignment=False,
                     budgets=inp["scaling"] == "standard")
    if inp["act"] in ("relu", "leaky_relu", "erf"):
        import certify
        al = _guard(refusals, f"skip alignment ({inp['act']})",
                    lambda: certify.alignment(S, p, np.array(inp["U"])))
        if al is not None:
            for k in ("a_top", "a_min", "a_mean"):
                out[k] = _br(getattr(al, k))
            for k in range(len(al.eigenvalues.lo)):
                out[f"agop eigenvalue {k}"] = _br(al.eigenvalues[k])
    return out


def brackets_swiglu(i, seed, refusals):
    import popdyn
    import certify
    from popdyn.swiglu import SwiGLUParams, SwiGLUStudent
    name, inp = draw_swiglu_gated(i, seed)
    G = np.array(inp["G"])
    S = SwiGLUStudent(G.shape[1], G.shape[0])
    p = SwiGLUParams(np.array(inp["a"]), G, np.array(inp["V"]), inp["c"])
    T = popdyn.Teacher.gated(inp["gate"], np.array(inp["U"]), inp["kappa"])
    out = {}
    Lb = _guard(refusals, f"swiglu loss (gated {inp['gate']})", lambda: certify.loss(S, p, T))
    if Lb is not None:
        out["loss"], out["mean_y"], out["variance"] = _br(Lb.loss), _br(Lb.mean_y), \
            _br(Lb.variance)
    Rb = _guard(refusals, f"swiglu refit (gated {inp['gate']})",
                lambda: certify.refit_risk(S, p, T, "unrestricted"))
    if Rb is not None:
        out["refit unrestricted"] = _br(Rb.risk)
    return out


BRACKETS = {"ridge": brackets_ridge, "skip": brackets_skip, "swiglu_gated": brackets_swiglu}


# ------------------------------------------------------------------------------ float side
def float_contract(i, seed, vals, counts, fails):
    """The float engine's rtol contract (popdyn.accuracy) on ridge cases with a ridge teacher:
    within rtol (plus the stated floor), or an AccuracyWarning."""
    import popdyn
    from popdyn.diagnostics.agop import agop
    name, act, raw, fam = draw(i, seed)
    if raw["teacher"] is None:
        return
    S, p, T = _build_ridge(act, raw)
    for rtol in (1e-10, 1e-12):
        with warnings.catch_warnings(record=True) as wl:
            warnings.simplefilter("always", popdyn.AccuracyWarning)
            Lf, info = popdyn.population_loss(S, p, T, rtol=rtol, full_output=True)
        warned = any(issubclass(w.category, popdyn.AccuracyWarning) for w in wl)
        counts["float values"] += 1
        ref_L = mp.mpf(vals["loss"].v)
        err = abs(mp.mpf(Lf) - ref_L)
        if warned:
            counts[f"float loss AccuracyWarning (rtol {rtol:g})"] += 1
        # the stated error is the series estimate plus the stated rounding floor ``atol``
        # (popdyn.population_loss: "0 for pure closed forms beyond rounding")
        floor = float(info.get("atol", 4e-16 * max(abs(float(ref_L)), 1.0)))
        if err > mp.mpf(float(info["error"])) + mp.mpf(floor):
            counts["float loss outside its stated error"] += 1
            fails.append(f"{name} float loss {Lf!r} vs {mp.nstr(ref_L, 20)} "
                         f"(stated {info['error']:.2e})")
        if err > rtol * abs(ref_L) + mp.mpf(info["atol"]) and not warned:
            counts["float loss beyond rtol without AccuracyWarning (contract violation)"] += 1
            fails.append(f"{name} float loss off by {float(err):.2e} at rtol {rtol:g}, no warning")
        lam_ref = [mp.mpf(x) for x in vals["agop eigenvalues"]]
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


# ------------------------------------------------------------------------------ one case
def _case_dps(name):
    """The reference's digits: ``--dps``, plus 10 for tiny neurons (their centered Gram has
    eigenvalues ~1e−20 that the refit must resolve)."""
    dps = OPT["dps"]
    return dps + 10 if ":tiny" in name else dps


def _margin(v, dps=None):
    """How close (absolute) the reference may come to a bracket end before the case is
    re-checked, and how far the arb and mpmath values may differ: 10^−dps of max(|v|, 1) (the
    moments are good to ~10^−(dps+3); tiny-neuron cases compute at dps + 10 but their refits
    are only that good).  ``dps`` defaults to ``--dps``."""
    return mp.mpf(10) ** (-(OPT["dps"] if dps is None else dps)) * max(abs(v), 1)


#: extra digits of the escalation: a reference value outside its bracket is recomputed at
#: dps + 20, then dps + 40, before the verdict
ESCALATE = (20, 40)


def judge(br, values, stated, extra=0):
    """The verdict of reference ``values`` (computed at ``extra`` digits above the case's) on
    the brackets ``br``.

    Each value is a ball v ± e: e is its stated error (``stated`` and an error stated: the arb
    radii propagated) or the margin 10^−(dps+extra)·max(|v|, 1) (``dps``: ``--dps``).  Returns three lists of keys:

    * ``disjoint``: the ball misses the bracket (a violation if it persists at the highest
      digits);
    * ``outside``: v lies outside the bracket but within e of it (the reference cannot decide
      at these digits);
    * ``touched``: an arb value whose ball reaches a bracket end (the case is re-checked by
      mpmath).

    An exact value (e = 0) touches only from outside."""
    disjoint, outside, touched = [], [], []
    for k, (lo, hi, prov) in br.items():
        if k not in values:
            continue
        x = values[k]
        v = mp.mpf(x.v)
        lo, hi = mp.mpf(lo), mp.mpf(hi)
        e = x.err if (stated and x.err is not None) else _margin(v, OPT["dps"] + extra)
        if v < lo - e or v > hi + e:
            disjoint.append(k)
        elif not (lo <= v <= hi):
            outside.append(k)
        inside = (lo < v - e and v + e < hi) if e > 0 else (lo <= v <= hi)
        if x.src == "arb" and not inside:
            touched.append(k)
    return disjoint, outside, touched


@contextlib.contextmanager
def _cpu_limit(seconds):
    """Raise _Timeout in this process after ``seconds`` of its CPU time inside the block
    (ITIMER_PROF: the limits are CPU seconds, so a loaded machine does not trip them); the
    timer and the previous SIGPROF handler are restored on leaving it."""
    def handler(signum, frame):
        raise _Timeout()
    old = signal.signal(signal.SIGPROF, handler)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


def _disagree(vals, mvals, extra, counts):
    """[(key, arb value, mpmath value)] of the arb values that differ from their mpmath
    re-check by more than the margin at ``--dps`` + ``extra`` digits plus the arb value's stated error (``counts``:
    where "arb/mpmath values compared" is counted, or None)."""
    out = []
    for k, x in vals.items():
        if k not in mvals or (isinstance(x, _V) and x.src != "arb"):
            continue
        xs = x if isinstance(x, list) else [x.v]
        ys = mvals[k] if isinstance(mvals[k], list) else [mvals[k].v]
        for xv, yv in zip(xs, ys):
            if counts is not None:
                counts["arb/mpmath values compared"] += 1
            xv, yv = mp.mpf(xv), mp.mpf(yv)
            tol = _margin(yv, OPT["dps"] + extra)
            tol += x.err if isinstance(x, _V) and x.err else 0
            if abs(xv - yv) > tol:
                out.append((k, xv, yv))
    return out


def _escalate(i, seed, fam, name, br, base, bad, out, decider, dps, counts, fails, rec):
    """Recompute every reference value outside its bracket (``bad``: its ball misses the
    bracket; ``out``: within its error of it) with the deciding backend at dps + 20, then
    dps + 40 digits, and judge again.  Returns ([(key, value)] still disjoint at the highest
    digits — the violations —, [keys] still within their error of a bracket end); ``base``
    holds the values at ``dps`` (what a violation reports if the escalation cannot finish)."""
    keys = list(bad) + list(out)
    last = {k: base[k] for k in keys}
    t = time.process_time()
    for extra in ESCALATE:
        if not keys:
            break
        counts[f"references escalated to dps + {extra}"] += len(keys)
        try:
            with _cpu_limit(OPT["recheck_timeout"]):
                vals, _ = REFERENCES[fam](i, seed, decider, dps + extra, set(keys))
        except (_Timeout, ArithmeticError) as e:
            counts["escalation not finished (timeout or not converged)"] += 1
            fails.append(f"{name}: escalation to dps + {extra} ({', '.join(keys)}): "
                         f"{type(e).__name__} {e}")
            break
        sub = {k: br[k] for k in keys if k in vals}
        d, o, _ = judge(sub, vals, decider == "arb", extra)
        last.update({k: vals[k] for k in sub})
        keys = d + o
        bad, out = d, o
    rec["t_recheck"] = rec.get("t_recheck", 0.0) + time.process_time() - t
    return [(k, last[k]) for k in bad], list(out)


def run_one(i: int, seed: int) -> dict:
    """Everything about case i, as a JSON-able record."""
    import certify
    mp.mp.dps = 60
    fam = family_of(i)
    name = case_name(i, seed)
    dps = _case_dps(name)
    counts = collections.Counter()
    refusals = collections.Counter()
    fails = []
    rec = {"i": i, "name": name, "family": fam}
    t = time.process_time()
    certify.moments.clear_cache()
    br = BRACKETS[fam](i, seed, refusals)
    rec["t_certify"] = time.process_time() - t
    want = set(br)                  # no reference for a quantity certify refused
    t = time.process_time()
    try:
        vals, stats = REFERENCES[fam](i, seed, OPT["reference"], dps, want)
    except ArithmeticError as e:          # a reference rule did not meet its bound
        counts["reference not converged (case skipped)"] += 1
        rec.update(counts=dict(counts), refusals=dict(refusals),
                   fails=[f"{name}: reference: {e}"], t_ref=time.process_time() - t,
                   t_float=0.0, t_recheck=0.0)
        return rec
    rec["t_ref"] = time.process_time() - t
    if stats.get("max_rel_rad", 0.0) > 10.0 ** (-(dps + 2)):
        counts["arb reference radius above 10^-(dps+2) (forced re-check)"] += 1
    t = time.process_time()
    if fam == "ridge" and OPT["float_timeout"] > 0:
        try:
            with _cpu_limit(OPT["float_timeout"]):
                float_contract(i, seed, vals, counts, fails)
        except _Timeout:
            counts["float side stopped at --float-timeout"] += 1
            fails.append(f"{name}: float side (population_loss / agop at rtol 1e-10, 1e-12) "
                         f"still running after {OPT['float_timeout']} s CPU")
    rec["t_float"] = time.process_time() - t

    arb_ref = OPT["reference"] == "arb"
    bad, out, touched = judge(br, vals, True)
    rec["touched"] = touched
    recheck = arb_ref and any(x.src == "arb" for x in vals.values() if isinstance(x, _V)) and (
        i % OPT["recheck_every"] == 0 or touched
        or counts["arb reference radius above 10^-(dps+2) (forced re-check)"])
    rec["t_recheck"] = 0.0
    decider, base = OPT["reference"], vals
    if recheck:
        t = time.process_time()
        try:
            with _cpu_limit(OPT["recheck_timeout"]):
                mvals, _ = REFERENCES[fam](i, seed, "mpmath", dps, want)
        except _Timeout:
            mvals = None
            counts["mpmath re-check timed out"] += 1
            fails.append(f"{name}: mpmath re-check timed out after {OPT['recheck_timeout']} s"
                         f"{' (touching: ' + ', '.join(touched) + ')' if touched else ''}")
        except ArithmeticError as e:
            mvals = None
            counts["mpmath re-check not converged"] += 1
            fails.append(f"{name}: mpmath re-check: {e}")
        rec["t_recheck"] = time.process_time() - t
        counts["cases re-checked by mpmath"] += 1
        if touched:
            counts["cases re-checked: arb value within its error of a bracket end"] += 1
        if mvals is not None:
            dis = _disagree(vals, mvals, 0, counts)
            for extra in ESCALATE:           # a disagreement: both backends at more digits
                if not dis:
                    break
                keys = sorted({k for k, _, _ in dis})
                counts[f"arb/mpmath disagreements escalated to dps + {extra}"] += len(keys)
                try:
                    with _cpu_limit(OPT["recheck_timeout"]):
                        va, _ = REFERENCES[fam](i, seed, "arb", dps + extra, set(keys))
                        vm, _ = REFERENCES[fam](i, seed, "mpmath", dps + extra, set(keys))
                except (_Timeout, ArithmeticError) as e:
                    fails.append(f"{name}: disagreement escalation to dps + {extra}: "
                                 f"{type(e).__name__} {e}")
                    break
                mvals.update({k: vm[k] for k in keys if k in vm})
                dis = _disagree({k: va[k] for k in keys if k in va}, vm, extra, None)
            for k, xv, yv in dis:
                counts["arb/mpmath disagreements"] += 1
                fails.append(f"{name} {k}: arb {mp.nstr(xv, 30)} vs mpmath {mp.nstr(yv, 30)}")
            bad, out, _ = judge(br, mvals, False)     # the mpmath verdict decides
            decider, base = "mpmath", mvals
    bad, out = _escalate(i, seed, fam, name, br, base, bad, out, decider, dps, counts, fails, rec)
    for k in out:
        counts["brackets whose end lies within the reference's error at the highest digits "
               "(consistent)"] += 1
    for k, (lo, hi, prov) in br.items():
        if k not in vals:
            continue
        counts["brackets"] += 1
        counts[f"brackets {prov}"] += 1
        counts[f"brackets ({fam})"] += 1
        counts[f"brackets ({fam}) {prov}"] += 1
        counts[f"brackets: {k.split('[')[0].split(' ')[0] if k.startswith('grad') else k}"] += 1
    for k, x in bad:
        lo, hi, _ = br[k]
        counts["violations"] += 1
        fails.append(f"{name} {k}: {mp.nstr(mp.mpf(x.v), 30)} outside [{lo!r}, {hi!r}] "
                     "at the highest digits")
    rec.update(counts=dict(counts), refusals=dict(refusals), fails=fails,
               stats={k: v for k, v in stats.items()})
    return rec


# ------------------------------------------------------------------------------ driver
def _warm():
    """Compile the float engine's kernels before any case is timed: the first float side of a
    worker would otherwise spend its --float-timeout budget in numba's compiler."""
    import warnings

    import popdyn
    from popdyn.diagnostics.agop import agop

    U = np.eye(2)[:1]
    for act in ACTS:
        S = popdyn.Student(2, 2, act, bias=True)
        p = popdyn.Params(np.array([0.7, -0.4]), np.array([[0.9, 0.2], [-0.3, 1.1]]),
                          np.array([0.1, -0.2]))
        for T in (popdyn.Teacher.additive("h2", U), popdyn.Teacher.additive("relu", U),
                  popdyn.Teacher.network("relu", [1.0], [[1.0, 0.0]], [0.0])):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                popdyn.population_loss(S, p, T, rtol=1e-12, full_output=True)
                agop(S, p, rtol=1e-12)


def _init(opt):
    OPT.update(opt)
    if OPT.get("float_timeout", 0) > 0:
        _warm()
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # the parent handles Ctrl-C
    # the pool ends its workers with SIGTERM: they must die then, not run the parent's handler
    # (inherited through fork), which raised KeyboardInterrupt inside the task queue's lock and
    # left the parent waiting at exit
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:                                             # Linux: die with the parent (no orphans)
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _work(args):
    i, seed = args
    t = time.time()
    try:
        rec = run_one(i, seed)
    except Exception as e:                          # a crash is reported, never swallowed
        import traceback
        rec = {"i": i, "name": case_name(i, seed), "family": family_of(i),
               "counts": {"crashed cases": 1}, "refusals": {},
               "fails": [f"case {i}: crash: {e!r}: {traceback.format_exc()[-600:]}"],
               "t_ref": 0.0, "t_certify": 0.0, "t_float": 0.0, "t_recheck": 0.0}
    rec["wall"] = time.time() - t
    return rec


def _totals(state):
    counts = collections.Counter()
    refusals = collections.Counter()
    fails = []
    cost = collections.Counter()
    per_family = collections.defaultdict(collections.Counter)
    for rec in state["cases"].values():
        counts.update(rec["counts"])
        counts["cases"] += 1
        refusals.update(rec["refusals"])
        fails += rec["fails"]
        for k in ("t_ref", "t_certify", "t_float", "t_recheck", "wall"):
            cost[k] += rec.get(k, 0.0)
            per_family[rec["family"]][k] += rec.get(k, 0.0)
        per_family[rec["family"]]["cases"] += 1
    n = max(counts["cases"], 1)
    timing = {"CPU-s per case": {k[2:] if k.startswith("t_") else k: cost[k] / n
                                 for k in ("t_ref", "t_certify", "t_float", "t_recheck")},
              "CPU-s per case by family": {
                  f: {k[2:]: c[k] / max(c["cases"], 1)
                      for k in ("t_ref", "t_certify", "t_float", "t_recheck")}
                  for f, c in per_family.items()},
              "CPU-s total": sum(cost[k] for k in ("t_ref", "t_certify", "t_float",
                                                   "t_recheck"))}
    per = timing["CPU-s total"] / n
    timing["extrapolated wall hours for 10,000 cases on 2 workers"] = per * 10000 / 2 / 3600
    return {"counts": dict(sorted(counts.items())), "refusals": dict(refusals.most_common()),
            "fails": fails, "timing": timing}


def _save(path, state):
    state["totals"] = _totals(state)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        json.dump(state, fh, indent=1, default=str)
    os.replace(tmp, path)


def _hypothesis(state, path):
    """The property tests under the soak profile (tests/conftest.py), with their wall time."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "--hypothesis-soak",
           "tests/certify", "tests/popdyn"]
    env = dict(os.environ, HYPOTHESIS_PROFILE="soak")
    t = time.time()
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    state["hypothesis"] = {"command": "HYPOTHESIS_PROFILE=soak " + " ".join(cmd[1:]),
                           "returncode": r.returncode, "wall_s": time.time() - t,
                           "tail": r.stdout[-3000:]}
    if path:
        _save(path, state)
    print(r.stdout[-2000:])
    return r.returncode


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=20)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--seed", type=int, default=19000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--reference", choices=("arb", "mpmath"), default="arb")
    ap.add_argument("--state", "--json", dest="state", default=None,
                    help="JSON state and report (resumable)")
    ap.add_argument("--dps", type=int, default=20)
    ap.add_argument("--rule", choices=("trapezoid", "quad"), default="trapezoid",
                    help="mpmath reference rule for pairs of two tanh / silu functions")
    ap.add_argument("--family", choices=FAMILIES + ("all",), default="all")
    ap.add_argument("--only", choices=FAMILIES, default=None,
                    help="with --family all: run only the cases of this family (the same cases "
                         "as in the full mix: a re-soak after a change to one family's code)")
    ap.add_argument("--smooth-nets", action="store_true",
                    help="network teachers of tanh, silu, gelu, erf units (cycling), not tanh only")
    ap.add_argument("--recheck-every", type=int, default=40)
    ap.add_argument("--recheck-timeout", type=float, default=600.0)
    ap.add_argument("--float-timeout", type=float, default=30.0,
                    help="CPU seconds for the float side of a case (0: no float side)")
    ap.add_argument("--with-hypothesis", action="store_true",
                    help="then run the property tests under HYPOTHESIS_PROFILE=soak")
    args = ap.parse_args(argv)
    opt = {"dps": args.dps, "rule": args.rule, "smooth_nets": args.smooth_nets,
           "family": args.family, "reference": args.reference,
           "recheck_every": args.recheck_every, "recheck_timeout": args.recheck_timeout,
           "float_timeout": args.float_timeout, "only": args.only}
    OPT.update(opt)
    mp.mp.dps = 60
    # what defines the cases and their verdicts (the time limits do not)
    key = {"seed": args.seed, **{k: v for k, v in opt.items() if not k.endswith("timeout")
                                 and not (k == "only" and v is None)}}
    state = {"args": key, "cases": {}, "wall_s": 0.0}
    if args.state and os.path.exists(args.state):
        with open(args.state) as fh:
            old = json.load(fh)
        if old["args"] != key:
            sys.exit(f"--state {args.state} was written with {old['args']}, not {key}: "
                     "use another --state or the same arguments")
        state = old
        print(f"resuming: {len(state['cases'])} cases done", flush=True)
    if args.only and args.family != "all":
        sys.exit("--only selects cases of the full mix: use it with --family all")
    todo = [i for i in range(args.start, args.start + args.cases) if str(i) not in state["cases"]
            and (args.only is None or FAMILIES[i % 3] == args.only)]

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    t0 = time.time()
    wall0 = state.get("wall_s", 0.0)

    def take(rec):
        state["cases"][str(rec["i"])] = rec
        state["wall_s"] = wall0 + time.time() - t0
        if args.state:
            _save(args.state, state)
        print(f"case {rec['i']} {rec['name']}: ref {rec['t_ref']:.2f} s, certify "
              f"{rec['t_certify']:.2f} s, float {rec['t_float']:.2f} s, re-check "
              f"{rec['t_recheck']:.2f} s; violations {rec['counts'].get('violations', 0)}",
              flush=True)

    try:
        if args.workers <= 1:
            if opt.get("float_timeout", 0) > 0:
                _warm()
            for i in todo:
                take(_work((i, args.seed)))
        else:
            ctx = mpc.get_context("fork")
            with ctx.Pool(args.workers, initializer=_init, initargs=(opt,),
                          maxtasksperchild=200) as pool:
                for rec in pool.imap_unordered(_work, [(i, args.seed) for i in todo]):
                    take(rec)
    except KeyboardInterrupt:
        print("interrupted: finished cases are in the state file; rerun to resume", flush=True)
        if args.state:
            _save(args.state, state)
        return 130
    tot = _totals(state)
    state["totals"] = tot
    print("\n== soak_certify ==")
    for k, v in tot["counts"].items():
        print(f"{k}: {v}")
    print(f"refusals: {sum(tot['refusals'].values())}")
    for k, v in tot["refusals"].items():
        print(f"  {v} x {k}")
    for f in tot["fails"][:50]:
        print("  ", f)
    print(json.dumps(tot["timing"], indent=1))
    print(f"wall time: {state['wall_s']:.0f} s")
    if args.state:
        _save(args.state, state)
    c = tot["counts"]
    rc = 1 if (c.get("violations") or c.get("arb/mpmath disagreements") or c.get("crashed cases")
               or any("contract violation" in k for k in c)) else 0
    if args.with_hypothesis:
        rc = _hypothesis(state, args.state) or rc
    return rc


if __name__ == "__main__":
    sys.exit(main())
