"""Shared helpers of the certified layer's reference tests: loading the stored references of
data/refs, decoding their exact float64 inputs (hex strings) and comparing brackets with them.

Test-only code (not popdyn, not certify); every helper used to be repeated in two or more test
modules (test_certify_skip / test_certify_skip_grad_refit, test_certify_gated_rigorous /
test_certify_pl_smooth).  Nothing here computes a reference: the references are the stored
strings, compared exactly in mpmath.
"""
from __future__ import annotations

import json
import os

import mpmath as mp
import numpy as np

import popdyn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFS_DIR = os.path.join(ROOT, "data", "refs")

# the quadrature references of gated_refs.json and pl_smooth_refs.json are stored to 30 digits
# (dps 32; quadrature error <= 1e−30 of the scale)
REF_ABS = mp.mpf(10) ** -27


def load_refs(name: str):
    """The parsed JSON document ``data/refs/<name>``."""
    with open(os.path.join(REFS_DIR, name)) as fh:
        return json.load(fh)


def unhex(x):
    """Decode the exact float64 inputs of a stored case: every string "0x…" / "-0x…" (also
    inside lists and dicts) becomes its float (``float.fromhex``, exact); anything else is kept."""
    if isinstance(x, list):
        return [unhex(y) for y in x]
    if isinstance(x, dict):
        return {k: unhex(y) for k, y in x.items()}
    return float.fromhex(x) if isinstance(x, str) and x.startswith(("0x", "-0x")) else x


def hex_array(x):
    """A vector or matrix of hex strings as a float64 array (exact)."""
    if isinstance(x[0], list):
        return np.array([[float.fromhex(v) for v in r] for r in x])
    return np.array([float.fromhex(v) for v in x])


def build_skip(inp):
    """(Student with skip, Params, Teacher) of a skip-reference case whose ``inputs`` were
    decoded by :func:`unhex` (data/refs/skip_refs.json, skip_grad_refit_refs.json)."""
    t = inp["teacher"]
    W = np.array(inp["W"])
    S = popdyn.Student(W.shape[1], W.shape[0], activation=inp["act"], scaling=inp["scaling"],
                       negative_slope=0.1, skip=True)
    if t["kind"] == "additive":
        T = popdyn.Teacher.additive(t["link"], np.array(t["U"]), np.array(t["weights"]))
    else:
        T = popdyn.Teacher.network(t["activation"], np.array(t["weights"]), np.array(t["U"]),
                                   np.array(t["bias"]))
    p = popdyn.Params(np.array(inp["a"]), W, np.array(inp["b"]), inp["c"], np.array(inp["v"]))
    return S, p, T


def exact(x):
    """An exact arb (midpoint or radius) as an mpmath number (no rounding to float64)."""
    man, ex = x.man_exp()
    return mp.ldexp(mp.mpf(int(man)), int(ex))


def ball_has(ball, ref, tol=0):
    """Whether the arb ``ball`` (midpoint and radius read exactly) contains ``ref`` ± ``tol``."""
    mid, rad = exact(ball.mid()), exact(ball.rad())
    return abs(mp.mpf(ref) - mid) <= rad + tol


def assert_inside(br, ref, what):
    """Assert that the bracket ``br`` (``lo``, ``hi`` floats) contains the stored decimal
    ``ref``, compared exactly in mpmath at the current precision."""
    v = mp.mpf(ref)
    assert mp.mpf(br.lo) <= v <= mp.mpf(br.hi), f"{what}: {ref} outside [{br.lo!r}, {br.hi!r}]"


def skip_state(seed, act, teacher, d=4, m=3):
    """A random student with skip (d, m, activation ``act``, v ~ 0.5 N(0, I)) and a teacher in a
    random 2-plane: a relu network (``teacher == "network"``) or the additive h3+0.3h2."""
    rng = np.random.default_rng(seed)
    S = popdyn.Student(d, m, activation=act, skip=True)
    U = np.linalg.qr(rng.standard_normal((d, 2)))[0].T
    T = (popdyn.Teacher.network("relu", np.array([1.0, -0.6]), 1.3 * U, np.array([0.2, -0.1]))
         if teacher == "network" else popdyn.Teacher.additive("h3+0.3h2", U))
    p = S.init(seed, 0.7, T).replace(v=0.5 * rng.standard_normal(d))
    return S, p, T


def check_loss_bracket(S, p, T, case):
    """certify.loss of a stored case: rigorous, its loss, E[y] and V_Y brackets contain the
    stored references (loss, mean_y, second_y) and the loss width is <= 1e−12 relative.
    Returns the bracket."""
    import certify

    L = certify.loss(S, p, T)
    assert L.provenance == "rigorous"
    assert_inside(L.loss, case["loss"], "loss")
    assert_inside(L.mean_y, case["mean_y"], "E[y]")
    assert_inside(L.variance, mp.mpf(case["second_y"]) - mp.mpf(case["mean_y"]) ** 2, "V_Y")
    assert L.loss.width <= 1e-12 * L.loss.hi
    return L
