"""Build data/refs/engine_refs.json: independent high-precision references for the engine.

What it computes
    For 66 deterministic cases (student activation, scaling, parameters a, W, b, c and a teacher),
    the population loss L = ½E[(f − y)²], its gradient with respect to a (m), W (m×d), b (m) and
    c, the teacher mean E[y] and the teacher variance Var(y), x ~ N(0, I_d), with the conventions
    of docs/design.md §2 (see tests/_mpref.py for the model, the derivative convention relu'(0) = 0
    and the exact meaning of every link).  Outputs are decimal strings with 30 significant digits.

How
    With tests/_mpref.py: pure mpmath, no code from popdyn.  Every moment is a Gaussian integral
    over the plane of two ridge directions (exact rational plane geometry, so duplicated,
    antiparallel, zero and parallel-to-teacher neurons are handled exactly), the inner integral by
    textbook 1-D closed forms or a lattice trapezoidal rule (tanh / SiLU), the outer one by a
    vector tanh–sinh quadrature split at every kink.

Precision
    Target dps = 40 (working precision 50 digits, quadratures converged to ~1e-40 relative to the
    integrand's L1 norm), reported to 30 digits.  Every degenerate-geometry case and every 6th
    other case is recomputed at dps = 60.  On the unrounded values, with scale = the largest
    |output| of the case, the build requires |Δ|/|v| < 1e-32 for every output with
    |v| ≥ 1e-10·scale and |Δ|/scale < 1e-35 for all outputs (it fails otherwise); both maxima are
    stored in precision_check.  Outputs below 1e-40·scale (rounding noise of exact zeros such as
    E[h4(u·x)]) are written as "0".

Runtime
    Full build: 329 s wall with -j 2 on the 2-core machine (66 cases at dps 40, 481 s of CPU,
    slowest case 22 s; plus 21 checks at dps 60), mpmath 1.3.0 with its pure-Python backend;
    ~560 s when the machine was shared with other work.
    Run:  python data/_precompute/engine_refs.py [-j N]   (--only id1,id2 computes and checks
    a few cases without writing the file)

The inputs in the JSON are exactly the float64 numbers the references were computed for (JSON
floats round-trip).  Teacher directions from a QR factorisation are orthonormal only to ~1e-16:
the reference uses the float64 numbers as given (meta.U_exact_orthonormal says which cases have
exactly orthonormal rows, e.g. signed basis vectors or ±1/2 Hadamard rows).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from multiprocessing import Pool

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests"))

import _mpref  # noqa: E402  (the independent reference; never popdyn)
from mpmath import mp, mpf  # noqa: E402

OUT = os.path.join(REPO, "data", "refs", "engine_refs.json")
DPS = 40
CHECK_DPS = 60

LINKS = ["h1", "h2", "h3", "h4", "h5", "h6", "h3+0.3h2", "relu", "tanh", "abs", "sin", "silu",
         "silu_centered", "gaussian_bump", "damped_cubic:0.5"]
MIX_A = [[0.6, "h3"], [0.4, "damped_cubic:1.0"]]
MIX_B = [[0.5, "h2"], [0.25, "gaussian_bump"], [0.25, "abs"]]


# ----------------------------------------------------------------------------------------------
# deterministic case construction
# ----------------------------------------------------------------------------------------------

def _fl(x):
    return [float(v) for v in np.asarray(x, dtype=float).ravel()]


def _mat(x):
    return [[float(v) for v in row] for row in np.asarray(x, dtype=float)]


def _orth_rows(rng, r, d):
    """r approximately orthonormal rows (QR of a Gaussian matrix): orthonormal to ~1e-16."""
    q, _ = np.linalg.qr(rng.standard_normal((d, r)))
    return q.T.copy()


def _basis_rows(rng, r, d):
    """r exactly orthonormal rows: signed standard basis vectors on random coordinates."""
    idx = rng.choice(d, size=r, replace=False)
    U = np.zeros((r, d))
    for k, i in enumerate(idx):
        U[k, i] = 1.0 if rng.random() < 0.5 else -1.0
    return U


def _hadamard_rows(d):
    """Two exactly orthonormal rows with entries ±1/2 on the first four coordinates (d ≥ 4)."""
    U = np.zeros((2, d))
    U[0, :4] = [0.5, 0.5, 0.5, 0.5]
    U[1, :4] = [0.5, -0.5, 0.5, -0.5]
    return U


def _student(rng, m, d, wscale=1.0, bscale=0.5, cscale=0.3):
    W = rng.standard_normal((m, d)) * wscale / math.sqrt(d)
    a = rng.standard_normal(m)
    b = rng.standard_normal(m) * bscale
    c = float(rng.standard_normal() * cscale)
    return a, W, b, c


def _one_minus_rho(w0, w1):
    """1 − cos(w0, w1) of the float64 vectors, computed exactly (rationals) then rounded."""
    from fractions import Fraction
    f0 = [Fraction(float(x)) for x in w0]
    f1 = [Fraction(float(x)) for x in w1]
    dot = sum(x * y for x, y in zip(f0, f1))
    n0 = sum(x * x for x in f0)
    n1 = sum(x * x for x in f1)
    # 1 − ρ = (n0 n1 − dot²) / (n0 n1 + dot sqrt(n0 n1)) for dot > 0
    det = n0 * n1 - dot * dot
    def q(fr):
        return mpf(fr.numerator) / fr.denominator

    with mp.workdps(50):
        nn = q(n0 * n1)
        return float(q(det) / (nn + q(dot) * mp.sqrt(nn)))


def _case(cid, category, description, activation, scaling, a, W, b, c, teacher,
          negative_slope=None, meta=None):
    return {
        "id": cid,
        "category": category,
        "description": description,
        "activation": activation,
        "negative_slope": None if negative_slope is None else float(negative_slope),
        "scaling": scaling,
        "a": _fl(a),
        "W": _mat(W),
        "b": _fl(b),
        "c": float(c),
        "teacher": teacher,
        "meta": dict(meta or {}),
    }


def _additive(link, U, kappa):
    return {"kind": "additive", "link": link, "U": _mat(U), "kappa": _fl(kappa)}


def _network(activation, V, U, bias, negative_slope=None):
    return {"kind": "network", "activation": activation,
            "negative_slope": None if negative_slope is None else float(negative_slope),
            "V": _fl(V), "U": _mat(U), "bias": _fl(bias)}


def build_cases():
    cases = []

    # A/B. relu and leaky_relu students against every link (plus a positive mixture)
    slopes = [0.1, 0.01, 0.2, 0.3, 0.05]
    for fam_i, act in enumerate(["relu", "leaky_relu"]):
        links = LINKS + [MIX_A if act == "relu" else MIX_B]
        for li, link in enumerate(links):
            seed = 1000 + 100 * fam_i + li
            rng = np.random.default_rng(seed)
            m = 3 + (li % 3 == 0)
            d = 4 + (li % 3)
            r = 1 + (li % 2)
            a, W, b, c = _student(rng, m, d)
            if li % 3 == 1:
                U, exact = _basis_rows(rng, r, d), True
            elif li % 3 == 2 and r == 2:
                U, exact = _hadamard_rows(d), True
            else:
                U, exact = _orth_rows(rng, r, d), False
            kappa = rng.choice([-1, 1], size=r) * rng.uniform(0.5, 1.5, size=r)
            scaling = "mean_field" if li % 4 == 3 else "standard"
            ns = slopes[li % len(slopes)] if act == "leaky_relu" else None
            lname = link if isinstance(link, str) else "mixture"
            cases.append(_case(
                f"{act}-{lname}", f"{act}_links", f"{act} student (m={m}, d={d}) vs additive "
                f"teacher, link {link!r}, r={r}, {scaling}",
                act, scaling, a, W, b, c, _additive(link, U, kappa), negative_slope=ns,
                meta={"seed": seed, "U_exact_orthonormal": exact}))

    # C. smooth students, |w| up to 5, |b| up to 5
    smooth = {
        "silu": ["h2", "silu_centered", "damped_cubic:0.5"],
        "gelu": ["h1", "h4", "relu", "sin"],
        "tanh": ["h3", "tanh", "abs"],
        "erf": ["h2", "gaussian_bump", "silu"],
    }
    for ai, (act, links) in enumerate(smooth.items()):
        for li, link in enumerate(links):
            seed = 2000 + 100 * ai + li
            rng = np.random.default_rng(seed)
            m = 3 if act in ("gelu", "erf") else 2 + (li == 0)
            d = 3 + (li % 2)
            r = 1 + (li % 2)
            norms = np.array([4.8, 1.3, 0.4])[:m]
            W = rng.standard_normal((m, d))
            W = W / np.linalg.norm(W, axis=1, keepdims=True) * norms[:, None]
            b = np.array([4.7, -1.2, 0.3])[:m] * rng.choice([-1, 1], size=m)
            a = rng.standard_normal(m)
            c = float(rng.standard_normal() * 0.3)
            if li % 2 == 0:
                U, exact = _orth_rows(rng, r, d), False
            else:
                U, exact = _basis_rows(rng, r, d), True
            kappa = rng.choice([-1, 1], size=r) * rng.uniform(0.5, 1.5, size=r)
            scaling = "mean_field" if (ai + li) % 3 == 2 else "standard"
            cases.append(_case(
                f"{act}-{link}", "smooth_links", f"{act} student (m={m}, d={d}, |w| up to 4.8, "
                f"|b| up to 4.7) vs additive link {link!r}, r={r}, {scaling}",
                act, scaling, a, W, b, c, _additive(link, U, kappa),
                meta={"seed": seed, "U_exact_orthonormal": exact}))

    # D. network teachers: non-orthogonal, non-unit u's and biases
    net_specs = [
        ("relu", None, "relu", None, 3, 4, 3, "standard"),
        ("leaky_relu", 0.2, "relu", None, 3, 4, 3, "mean_field"),
        ("gelu", None, "relu", None, 3, 3, 2, "standard"),
        ("relu", None, "tanh", None, 3, 4, 2, "standard"),
        ("silu", None, "gelu", None, 2, 3, 2, "standard"),
        ("erf", None, "erf", None, 3, 4, 2, "mean_field"),
        ("tanh", None, "silu", None, 2, 3, 1, "standard"),
        ("relu", None, "leaky_relu", 0.15, 3, 5, 2, "standard"),
    ]
    for ni, (act, ns, tact, tns, m, d, k, scaling) in enumerate(net_specs):
        seed = 3000 + ni
        rng = np.random.default_rng(seed)
        a, W, b, c = _student(rng, m, d, wscale=1.2)
        Ut = rng.standard_normal((k, d)) * rng.uniform(0.5, 1.8, size=(k, 1)) / math.sqrt(d)
        if k >= 2:  # make the first two teacher rows clearly non-orthogonal
            Ut[1] = 0.6 * Ut[0] + 0.8 * Ut[1]
        V = rng.standard_normal(k)
        bias = rng.standard_normal(k) * 0.6
        cases.append(_case(
            f"net-{act}-vs-{tact}", "network_teacher", f"{act} student (m={m}, d={d}) vs "
            f"{tact} teacher network with {k} non-orthogonal units and biases, {scaling}",
            act, scaling, a, W, b, c, _network(tact, V, Ut, bias, tns), negative_slope=ns,
            meta={"seed": seed}))

    # E. degenerate geometry
    def rng_for(i):
        return np.random.default_rng(4000 + i)

    # E1: relu, w = 0 with b ≠ 0 and with b = 0
    rng = rng_for(1)
    a, W, b, c = _student(rng, 4, 4)
    W[0] = 0.0
    b[0] = 0.7
    W[1] = 0.0
    b[1] = 0.0
    cases.append(_case("degen-relu-zero-w", "degenerate", "relu: neuron 0 has w = 0, b = 0.7; "
                       "neuron 1 has w = 0, b = 0 (relu'(0) = 0 convention)", "relu", "standard",
                       a, W, b, c, _additive("h3+0.3h2", _basis_rows(rng, 2, 4), [1.0, -0.7]),
                       meta={"seed": 4001, "U_exact_orthonormal": True}))
    # E2: gelu, w = 0 with b ≠ 0 and b = 0
    rng = rng_for(2)
    a, W, b, c = _student(rng, 3, 3)
    W[0] = 0.0
    b[0] = -0.4
    W[1] = 0.0
    b[1] = 0.0
    cases.append(_case("degen-gelu-zero-w", "degenerate", "gelu: neuron 0 has w = 0, b = -0.4; "
                       "neuron 1 has w = 0, b = 0", "gelu", "mean_field", a, W, b, c,
                       _additive("relu", _orth_rows(rng, 1, 3), [1.2]),
                       meta={"seed": 4002, "U_exact_orthonormal": False}))
    # E3: relu, duplicated neurons (correlation exactly 1, identical biases)
    rng = rng_for(3)
    a, W, b, c = _student(rng, 3, 4)
    W[1] = W[0]
    b[1] = b[0]
    cases.append(_case("degen-relu-duplicate", "degenerate", "relu: neurons 0 and 1 identical "
                       "(w and b), different a", "relu", "mean_field", a, W, b, c,
                       _additive("h2", _orth_rows(rng, 2, 4), [1.0, 0.8]),
                       meta={"seed": 4003, "U_exact_orthonormal": False}))
    # E4: leaky relu, antiparallel pair
    rng = rng_for(4)
    a, W, b, c = _student(rng, 3, 4)
    W[1] = -W[0]
    b[1] = 0.25
    cases.append(_case("degen-leaky-antiparallel", "degenerate", "leaky_relu: w_1 = -w_0 exactly "
                       "(correlation -1), different biases", "leaky_relu", "standard", a, W, b, c,
                       _additive("abs", _orth_rows(rng, 1, 4), [1.0]), negative_slope=0.1,
                       meta={"seed": 4004, "U_exact_orthonormal": False}))
    # E5: relu, near-parallel pair with 1 − ρ ≈ 1e−12 (same bias: nearly coincident kinks)
    for tag, eps, i in [("1e-12", math.sqrt(2e-12), 5), ("1e-24", math.sqrt(2e-24), 6)]:
        rng = rng_for(i)
        a, W, b, c = _student(rng, 3, 4)
        v = rng.standard_normal(4)
        v -= (v @ W[0]) / (W[0] @ W[0]) * W[0]
        v *= eps * np.linalg.norm(W[0]) / np.linalg.norm(v)
        W[1] = W[0] + v
        b[1] = b[0]
        one_minus_rho = _one_minus_rho(W[0], W[1])
        cases.append(_case(f"degen-relu-nearparallel-{tag}", "degenerate",
                           f"relu: w_1 = w_0 + orthogonal perturbation, 1 - rho ≈ {tag} "
                           "(same bias)", "relu", "standard", a, W, b, c,
                           _additive("h3", _orth_rows(rng, 1, 4), [1.0]) if i == 5 else
                           _network("relu", [1.0, -0.5], rng.standard_normal((2, 4)) * 0.7,
                                    [0.1, -0.2]),
                           meta={"seed": 4000 + i, "one_minus_rho_target": float(tag),
                                 "one_minus_rho": one_minus_rho}))
    # E7: |w| = 1e−8 with |b| = 10|w| (relu and leaky)
    for act, i in [("relu", 7), ("leaky_relu", 8)]:
        rng = rng_for(i)
        a, W, b, c = _student(rng, 3, 4)
        u = rng.standard_normal(4)
        W[0] = u / np.linalg.norm(u) * 1e-8
        b[0] = 10 * np.linalg.norm(W[0])
        W[1] = -W[0] * 0.5
        b[1] = -10 * np.linalg.norm(W[1])
        cases.append(_case(f"degen-{act}-tiny-w", "degenerate", f"{act}: |w_0| = 1e-8 with "
                           "b_0 = +10|w_0|; w_1 = -w_0/2 with b_1 = -10|w_1| (kinks at z = ∓10)",
                           act, "standard", a, W, b, c,
                           _additive("h1" if act == "relu" else "h2", _basis_rows(rng, 1, 4),
                                     [1.0]),
                           negative_slope=0.2 if act == "leaky_relu" else None,
                           meta={"seed": 4000 + i, "U_exact_orthonormal": True}))
    # E9: relu, neuron exactly parallel to a teacher direction and one exactly antiparallel
    rng = rng_for(9)
    a, W, b, c = _student(rng, 3, 5)
    U = _orth_rows(rng, 2, 5)
    W[0] = 2.0 * U[0]  # exact (power-of-two scaling)
    b[0] = 0.0
    W[1] = -0.5 * U[1]
    b[1] = 0.3
    cases.append(_case("degen-relu-parallel-teacher", "degenerate", "relu: w_0 = 2 u_0 exactly "
                       "(b_0 = 0), w_1 = -u_1/2 exactly (b_1 = 0.3); relu link", "relu", "standard",
                       a, W, b, c, _additive("relu", U, [1.0, 0.6]),
                       meta={"seed": 4009, "U_exact_orthonormal": False}))
    # E10: tanh, duplicate + near-parallel (1 − ρ ≈ 1e−12) + parallel to the teacher direction
    rng = rng_for(10)
    a, W, b, c = _student(rng, 3, 3, wscale=1.5)
    U = _orth_rows(rng, 1, 3)
    W[0] = 2.0 * U[0]  # exact (power-of-two scaling)
    W[1] = W[0]
    b[1] = b[0]
    v = rng.standard_normal(3)
    v -= (v @ W[0]) / (W[0] @ W[0]) * W[0]
    v *= math.sqrt(2e-12) * np.linalg.norm(W[0]) / np.linalg.norm(v)
    W[2] = W[0] + v
    cases.append(_case("degen-tanh-dup-nearpar-parallel", "degenerate", "tanh: w_0 = 2 u_0 "
                       "(parallel to the teacher), neuron 1 = neuron 0, w_2 = w_0 + perturbation "
                       "with 1 - rho ≈ 1e-12; tanh link", "tanh", "standard", a, W, b, c,
                       _additive("tanh", U, [1.0]),
                       meta={"seed": 4010, "U_exact_orthonormal": False}))
    # E11: silu, w = 0 with b ≠ 0 and a neuron exactly parallel to a network-teacher unit
    rng = rng_for(11)
    a, W, b, c = _student(rng, 2, 3)
    Ut = rng.standard_normal((2, 3)) * 0.8
    W[0] = 0.0
    b[0] = 0.9
    W[1] = -2.0 * Ut[1]
    cases.append(_case("degen-silu-zero-w-parallel-net", "degenerate", "silu: w_0 = 0, b_0 = 0.9; "
                       "w_1 = -2 u_1 exactly antiparallel to a gelu teacher unit", "silu",
                       "standard", a, W, b, c, _network("gelu", [1.0, -0.7], Ut, [0.2, 0.5]),
                       meta={"seed": 4011}))

    # F. d = 64, m = 3 (cost does not grow with d)
    rng = np.random.default_rng(5001)
    a, W, b, c = _student(rng, 3, 64)
    cases.append(_case("d64-relu-h3+0.3h2", "large_d", "relu student m=3, d=64 vs additive "
                       "h3+0.3h2, r=2 (QR rows)", "relu", "standard", a, W, b, c,
                       _additive("h3+0.3h2", _orth_rows(rng, 2, 64), [1.0, 0.5]),
                       meta={"seed": 5001, "U_exact_orthonormal": False}))
    rng = np.random.default_rng(5002)
    a, W, b, c = _student(rng, 3, 64)
    Ut = rng.standard_normal((2, 64)) / 8.0
    cases.append(_case("d64-gelu-net-relu", "large_d", "gelu student m=3, d=64 vs relu teacher "
                       "network with 2 units and biases, mean_field", "gelu", "mean_field",
                       a, W, b, c, _network("relu", [1.0, -0.8], Ut, [0.3, -0.1]),
                       meta={"seed": 5002}))
    ids = [cs["id"] for cs in cases]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    return cases


def check_ids(cases):
    """Cases recomputed at CHECK_DPS: all degenerate ones and every 6th of the others."""
    out = []
    others = 0
    for cs in cases:
        if cs["category"] == "degenerate":
            out.append(cs["id"])
        else:
            if others % 6 == 0:
                out.append(cs["id"])
            others += 1
    return out


# ----------------------------------------------------------------------------------------------
# computation
# ----------------------------------------------------------------------------------------------

def _inputs(cs):
    return {k: cs[k] for k in ("activation", "negative_slope", "scaling", "a", "W", "b", "c",
                               "teacher")}


def _flat(out):
    g = out["grad"]
    vals = [out["loss"], g["c"], out["teacher_mean"], out["teacher_variance"]]
    vals += list(g["a"]) + list(g["b"]) + [x for row in g["W"] for x in row]
    return vals


def _work(job):
    """Returns (id, dps, 30-digit outputs, all outputs with dps digits, seconds)."""
    cs, dps = job
    t0 = time.time()
    try:
        out = _mpref.reference_mp(_inputs(cs), dps=dps)
    except Exception as exc:  # name the case in the error
        raise RuntimeError(f"case {cs['id']} at dps={dps}: {exc!r}") from exc
    with mp.workdps(dps + 10):
        formatted = _mpref.format_outputs(out)
        full = [mp.nstr(x, dps) for x in _flat(out)]
    return cs["id"], dps, formatted, full, time.time() - t0


def _precision_diff(v1, v2):
    """(max relative difference over the outputs with |v| ≥ 1e-10 · scale, max absolute
    difference / scale over all outputs), scale = largest |output| of the case."""
    with mp.workdps(80):
        v1 = [mpf(x) for x in v1]
        v2 = [mpf(x) for x in v2]
        scale = max(abs(x) for x in v2)
        rel = mpf(0)
        absd = mpf(0)
        for x, y in zip(v1, v2):
            absd = max(absd, abs(x - y) / scale)
            if abs(y) >= scale * mpf("1e-10"):
                rel = max(rel, abs(x - y) / abs(y))
        return float(rel), float(absd)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--only", default=None, help="comma-separated case ids (no file written)")
    args = ap.parse_args(argv)
    t_start = time.time()
    cases = build_cases()
    if args.only:
        keep = set(args.only.split(","))
        cases = [cs for cs in cases if cs["id"] in keep]
    chk = set(check_ids(cases))
    jobs = [(cs, DPS) for cs in cases] + [(cs, CHECK_DPS) for cs in cases if cs["id"] in chk]
    # longest first (smooth / hard cases) for a better schedule
    hard = ("tanh", "silu")

    def weight(job):
        cs = job[0]
        t = cs["teacher"]
        w = 1.0
        if cs["activation"] in hard:
            w += 3
        if t.get("activation") in hard or str(t.get("link")) in ("tanh", "silu", "silu_centered"):
            w += 1
        return -w * (1.6 if job[1] == CHECK_DPS else 1.0)

    jobs.sort(key=weight)
    results = {}
    fulls = {}
    timing = {}
    with Pool(args.jobs) as pool:
        for cid, dps, out, full, dt in pool.imap_unordered(_work, jobs):
            results[(cid, dps)] = out
            fulls[(cid, dps)] = full
            timing[(cid, dps)] = dt
            print(f"{cid:40s} dps={dps} {dt:7.1f}s", flush=True)
    worst = 0.0
    worst_abs = 0.0
    per_case = {}
    for cid in sorted(chk):
        rd, ad = _precision_diff(fulls[(cid, DPS)], fulls[(cid, CHECK_DPS)])
        per_case[cid] = [rd, ad]
        worst = max(worst, rd)
        worst_abs = max(worst_abs, ad)
        print(f"  check {cid:40s} rel diff {rd:.3e}  abs diff/scale {ad:.3e}")
    total = time.time() - t_start
    print(f"precision check dps {DPS} vs {CHECK_DPS}: max relative difference {worst:.3e}, "
          f"max absolute difference / scale {worst_abs:.3e}")
    print(f"total wall time {total:.0f} s")
    if worst > 1e-32 or worst_abs > 1e-35:
        raise SystemExit("precision check failed")
    if args.only:
        return
    out_cases = []
    for cs in cases:
        cs = dict(cs)
        cs["outputs"] = results[(cs["id"], DPS)]
        cs["meta"] = dict(cs["meta"], seconds=round(timing[(cs["id"], DPS)], 2))
        out_cases.append(cs)
    doc = {
        "schema": "popdyn.engine_refs/1",
        "description": "Independent high-precision references for the population loss, gradient, "
                       "teacher mean and variance (tests/_mpref.py, pure mpmath; never popdyn).",
        "generator": "data/_precompute/engine_refs.py",
        "reference_impl": "tests/_mpref.py",
        "conventions": {
            "input": "x ~ N(0, I_d)",
            "student": "f(x) = s * sum_j a_j sigma(w_j.x + b_j) + c; s = 1 (standard) or 1/m "
                       "(mean_field); W rows are w_j",
            "teacher_additive": "y = sum_k kappa_k g(u_k.x), rows of U are u_k; links as in "
                                "docs/design.md §2 ('h3+0.3h2' with the exact decimal 3/10; "
                                "'damped_cubic:a' = z^3 exp(-a z^2/2) with a = float(a); a mixture "
                                "is a list of [weight, link])",
            "teacher_network": "y = sum_k V_k sigma*(u_k.x + bias_k), rows of U arbitrary",
            "loss": "L = 1/2 E[(f - y)^2]  (MSE = 2L)",
            "grad": "partial derivatives of L: a (m), W (m x d), b (m), c (scalar)",
            "derivative_convention": "relu'(0) = 0; leaky_relu'(0) = negative_slope",
            "teacher_variance": "Var(y) = E[y^2] - E[y]^2",
            "numbers": "inputs are exactly the float64 values of the JSON numbers; outputs are "
                       "decimal strings with 30 significant digits",
        },
        "dps": DPS,
        "digits": _mpref.DIGITS,
        "precision_check": {
            "dps": CHECK_DPS,
            "case_ids": sorted(chk),
            "max_relative_difference": worst,
            "max_absolute_difference_over_scale": worst_abs,
            "measure": "on the unrounded values (40 resp. 60 digits), scale = largest |output| of "
                       "the case: relative difference |v40 - v60|/|v60| over the outputs with "
                       "|v60| >= 1e-10 scale, and |v40 - v60|/scale over all outputs",
            "per_case_rel_abs": {k: per_case[k] for k in sorted(per_case)},
        },
        "build": {
            "wall_seconds": round(total, 1),
            "jobs": args.jobs,
            "mpmath": __import__("mpmath").__version__,
            "mpmath_backend": __import__("mpmath").libmp.BACKEND,
        },
        "cases": out_cases,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    print(f"wrote {OUT} ({os.path.getsize(OUT) / 1e6:.2f} MB, {len(out_cases)} cases)")


if __name__ == "__main__":
    main()
