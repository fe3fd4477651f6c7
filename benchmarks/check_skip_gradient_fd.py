"""Check certify.skip's gradient brackets against central differences of the certified loss.

For students of width m = 3 with a skip (d = 4; relu, leaky relu, erf, gelu, silu, tanh), the
gradient bracket of ``certify.loss(..., grad=True)`` (prec 128) is compared with the
Richardson-extrapolated central difference (steps 2^-14, 2^-15, exact float64 perturbations)
of the midpoint of the certified loss ball at prec 300 (radius ~1e−90, so the difference is
limited by its h⁴ truncation, ~1e−17).  The loss path is validated against mpmath
(tests/certify/test_certify_skip.py); the gradient path (Stein terms, Mehler sums of σ′ and
ασ″ coefficients) is separate code, so this checks it on student–student pairs that the
mpmath references (one-neuron smooth cases) do not reach.  Prints, per activation and
teacher, the largest distance of the difference from the bracket (0 = inside) and the largest
width.  Heavy (minutes): not part of the test suite.

Run:  python benchmarks/check_skip_gradient_fd.py [act ...]
"""
import sys

import mpmath as mp
import numpy as np

import certify
import certify.skip as CS
import popdyn

mp.mp.dps = 60
_CAP = {}
_orig = CS._brackets


def _grab(L, CM, prec, g=None):
    _CAP["L"] = L
    return _orig(L, CM, prec, g)


CS._brackets = _grab


def _loss_ball(S, p, T):
    certify.loss(S, p, T, prec=300)
    return mp.mpf(_CAP["L"].mid().str(90, radius=False))


def _fd(S, p, T, name, idx):
    vals = []
    for h in (2.0 ** -14, 2.0 ** -15):
        arr_p = getattr(p, name).copy()
        arr_m = getattr(p, name).copy()
        arr_p[idx] += h
        arr_m[idx] -= h
        x0 = mp.mpf(float(getattr(p, name)[idx]))
        hp, hm = mp.mpf(float(arr_p[idx])) - x0, x0 - mp.mpf(float(arr_m[idx]))
        Lp = _loss_ball(S, p.replace(**{name: arr_p}), T)
        Lm = _loss_ball(S, p.replace(**{name: arr_m}), T)
        vals.append((Lp - Lm) / (hp + hm))
    return (4 * vals[1] - vals[0]) / 3


def main(acts):
    for act in acts:
        for tk in ("network", "additive"):
            rng = np.random.default_rng(1)
            d, m = 4, 3
            S = popdyn.Student(d, m, activation=act, skip=True, negative_slope=0.1)
            U = np.linalg.qr(rng.standard_normal((d, 2)))[0].T
            T = (popdyn.Teacher.network("relu", np.array([1.0, -0.6]), 1.3 * U,
                                        np.array([0.2, -0.1])) if tk == "network"
                 else popdyn.Teacher.additive("h3+0.3h2", U))
            p = S.init(3, 0.7, T).replace(v=0.5 * rng.standard_normal(d))
            g = certify.loss(S, p, T, grad=True).grad
            worst, width = 0.0, 0.0
            for name, idx in (("W", (0, 0)), ("W", (1, 2)), ("W", (2, 3)), ("b", (1,)),
                              ("a", (2,)), ("v", (1,))):
                fd = _fd(S, p, T, name, idx)
                lo, hi = g[name].lo[idx], g[name].hi[idx]
                out = max(mp.mpf(lo) - fd, fd - mp.mpf(hi), 0)
                worst = max(worst, float(out))
                width = max(width, hi - lo)
            print(f"{act:10s} {tk:8s} outside by {worst:.2e}  width <= {width:.2e}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["relu", "leaky_relu", "erf", "gelu", "silu", "tanh"])
