"""Fixed configurations for the certified layer's reference tests (shared by the tests and by
data/_precompute/certify_refs.py); degenerate geometry is built in on purpose.

The construction (:func:`build`) uses ``np.linalg.qr`` and ``np.linalg.norm``, whose last bits
depend on the BLAS / LAPACK kernel (OpenBLAS picks one per CPU), so it is *not* the source of the
tests' inputs: data/refs/certify_refs.json stores, beside every reference, the exact float64
inputs it was computed for (``inputs``: hex strings, :func:`inputs`), and the tests rebuild the
objects from those (:func:`from_inputs`), bit for bit on any machine.
"""
from __future__ import annotations

import numpy as np

import popdyn

_S = np.sqrt(0.5)


def _rows(d, rng, n, scale=0.8):
    return rng.standard_normal((n, d)) * (scale / np.sqrt(d))


def _base(seed, d, m, scale=0.8):
    rng = np.random.default_rng(seed)
    W = _rows(d, rng, m, scale)
    b = rng.standard_normal(m) * scale
    a = rng.standard_normal(m) * scale
    return rng, W, b, a


def _degenerate(seed, d, m):
    """m >= 8 rows: generic, duplicate, antiparallel, near-parallel (1 − ρ ≈ 1e−12), w = 0,
    tiny |w| with |b| = 10|w|, a far threshold, a 1e−12 relative perturbation (1 − ρ ≈ 1e−25)."""
    rng, W, b, a = _base(seed, d, m)
    W[1] = W[0]; b[1] = b[0]                              # duplicated neuron
    W[2] = -W[0]; b[2] = 0.3                              # antiparallel
    e = np.zeros(d); e[-1] = 1.0
    W[3] = W[0] + 1.4e-6 * np.linalg.norm(W[0]) * e       # 1 − ρ ≈ 1e-12
    b[3] = b[0]
    W[4] = 0.0; b[4] = 0.7                                # w = 0 (constant unit)
    W[5] = 1e-8 * W[0] / np.linalg.norm(W[0]); b[5] = -1e-7   # |b| = 10|w|
    W[6] = W[0]; b[6] = -8.0 * np.linalg.norm(W[0])       # far threshold (x = 8)
    W[7] = W[0] + 1e-12 * np.linalg.norm(W[0]) * e        # 1 − ρ ≈ 5e-25
    b[7] = b[0] + 0.25
    return W, b, a


def teacher(spec, d):
    kind = spec["kind"]
    rng = np.random.default_rng(spec.get("seed", 0))
    if kind == "additive":
        r = spec.get("r", 2)
        U = np.linalg.qr(rng.standard_normal((d, r)))[0].T
        kappa = spec.get("kappa", np.linspace(1.0, 0.6, r))
        return popdyn.Teacher.additive(spec["link"], U, kappa)
    k = spec.get("k", 2)
    U = rng.standard_normal((k, d)) / np.sqrt(d)
    V = rng.standard_normal(k)
    bias = rng.standard_normal(k) * 0.5
    return popdyn.Teacher.network(spec["activation"], V, U, bias,
                                  negative_slope=spec.get("slope", 0.01))


CONFIGS = [
    dict(name="relu_h2_degenerate", d=5, m=8, activation="relu", degenerate=True,
         teacher=dict(kind="additive", link="h2")),
    dict(name="leaky_relunet_degenerate", d=4, m=8, activation="leaky_relu", slope=0.1,
         degenerate=True, teacher=dict(kind="network", activation="relu", seed=3)),
    dict(name="relu_h3p03h2", d=4, m=4, activation="relu",
         teacher=dict(kind="additive", link="h3+0.3h2", seed=1)),
    dict(name="leaky_leakynet_meanfield", d=3, m=4, activation="leaky_relu", slope=0.2,
         scaling="mean_field", teacher=dict(kind="network", activation="leaky_relu", slope=0.05,
                                            seed=2)),
    dict(name="relu_damped_cubic", d=4, m=4, activation="relu",
         teacher=dict(kind="additive", link="damped_cubic:0.5", seed=4)),
    dict(name="relu_sin", d=3, m=4, activation="relu", teacher=dict(kind="additive", link="sin",
                                                                   seed=5)),
    dict(name="leaky_bump_nobias", d=4, m=4, activation="leaky_relu", slope=0.01, bias=False,
         teacher=dict(kind="additive", link="gaussian_bump", seed=6)),
    dict(name="relu_mixture", d=3, m=4, activation="relu",
         teacher=dict(kind="additive", link="mixture(0.5*h3, 1.5*relu)", seed=7)),
    dict(name="relu_abs_h4", d=4, m=3, activation="relu",
         teacher=dict(kind="additive", link="abs", r=1, seed=8)),
    dict(name="relu_h4", d=4, m=3, activation="relu",
         teacher=dict(kind="additive", link="h4", r=2, seed=9)),
]


def _student(cfg):
    return popdyn.Student(d=cfg["d"], m=cfg["m"], activation=cfg["activation"],
                          negative_slope=cfg.get("slope", 0.01), bias=cfg.get("bias", True),
                          scaling=cfg.get("scaling", "standard"))


def _hex(x):
    x = np.asarray(x, dtype=np.float64)
    return float(x).hex() if x.ndim == 0 else [_hex(v) for v in x]


def _unhex(h):
    return float.fromhex(h) if isinstance(h, str) else np.array([_unhex(v) for v in h])


def inputs(S, p, T):
    """The exact float64 inputs of (student, params, teacher) as hex strings (``float.hex``)."""
    t = {"kind": T.kind, "U": _hex(T.U)}
    if T.kind == "additive":
        t.update(link=T.link.name, kappa=_hex(T.weights))   # canonical link name
    else:
        t.update(activation=T.activation.name, slope=_hex(T.activation.negative_slope),
                 V=_hex(T.weights), bias=_hex(T.bias))
    return {"a": _hex(p.a), "W": _hex(p.W), "b": _hex(p.b), "c": _hex(p.c), "teacher": t}


def from_inputs(cfg, inp):
    """(student, params, teacher) from stored :func:`inputs` -- independent of BLAS / LAPACK."""
    S = _student(cfg)
    p = popdyn.Params(_unhex(inp["a"]), _unhex(inp["W"]), _unhex(inp["b"]), _unhex(inp["c"]))
    t = inp["teacher"]
    if t["kind"] == "additive":
        T = popdyn.Teacher.additive(t["link"], _unhex(t["U"]), _unhex(t["kappa"]))
    else:
        T = popdyn.Teacher.network(t["activation"], _unhex(t["V"]), _unhex(t["U"]),
                                   _unhex(t["bias"]), negative_slope=_unhex(t["slope"]))
    return S, p, T


def build(cfg):
    """(student, params, teacher) of a configuration from its deterministic construction (its
    last bits depend on the BLAS kernel: the tests use :func:`from_inputs`)."""
    d, m = cfg["d"], cfg["m"]
    S = _student(cfg)
    if cfg.get("degenerate"):
        W, b, a = _degenerate(11, d, m)
    else:
        _, W, b, a = _base(23 + d + m, d, m)
    if not S.bias:
        b = np.zeros(m)
    T = teacher(cfg["teacher"], d)
    p = popdyn.Params(a, W, b, 0.37)
    return S, p, T
