"""Loss and gradient on seeded random states, to compare two versions of the engine.

``python benchmarks/version_drift.py --dump OUT.npz`` evaluates L and ∇L on ``--states``
seeded random (student, teacher, state) triples, through the general path
(:func:`popdyn.objective.loss_and_grad` with the fused kernels off) and, where it applies, the
fused kernel (:class:`popdyn.dynamics._Fused`), and stores them with the inputs' hex.
``--compare OLD.npz NEW.npz`` prints the largest relative change of L (|ΔL|/|L|) and of ∇L
(max|Δg|/max|g| per state) between two dumps made by two trees (run each with its tree first
on ``PYTHONPATH``).  Not a test: the changes are reported, not asserted.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

LINKS = ("h2", "h3+0.3h2", "relu", "tanh", "silu", "h4")
ACTS = ("relu", "leaky_relu", "silu", "tanh")


def cases(n):
    import popdyn

    rng = np.random.default_rng(20261201)
    for i in range(n):
        d = int(rng.integers(2, 9))
        m = int(rng.integers(1, 9))
        act = ACTS[i % len(ACTS)] if i % 3 else ACTS[i % 2]       # mostly PL students
        bias = bool(rng.integers(0, 2))
        st = popdyn.Student(d, m, act, bias=bias)
        r = int(rng.integers(1, min(d, 3) + 1))
        U = np.linalg.qr(rng.normal(size=(d, r)))[0].T
        if i % 4 == 3:
            T = popdyn.Teacher.network("relu", rng.normal(size=r), rng.normal(size=(r, d)),
                                       rng.normal(size=r) * 0.5)
        else:
            T = popdyn.Teacher.additive(LINKS[i % len(LINKS)], U)
        scale = float(10.0 ** rng.uniform(-2, 0.5))
        p = popdyn.Params(rng.normal(size=m), rng.normal(size=(m, d)) * scale,
                          rng.normal(size=m) * (0.5 if bias else 0.0), float(rng.normal()))
        yield st, T, p


def dump(path, n):
    import popdyn
    from popdyn import dynamics
    from popdyn.objective import loss_and_grad

    rows = {"L": [], "g": [], "Lf": [], "gf": [], "fused": []}
    for st, T, p in cases(n):
        L, g = loss_and_grad(st, p, T)
        rows["L"].append(L)
        rows["g"].append(np.concatenate([g.a, g.W.ravel(), g.b, [g.c]]))
        fz = dynamics._Fused.make(st, T)
        if fz is None:
            rows["Lf"].append(np.nan)
            rows["gf"].append(np.full_like(rows["g"][-1], np.nan))
        else:
            Lf, gf, _ = fz.evaluate(p)
            rows["Lf"].append(Lf)
            rows["gf"].append(np.concatenate([gf.a, gf.W.ravel(), gf.b, [gf.c]]))
        rows["fused"].append(fz is not None)
    np.savez(path, version=popdyn.__version__, L=np.array(rows["L"]), Lf=np.array(rows["Lf"]),
             fused=np.array(rows["fused"]), g=np.array(rows["g"], dtype=object),
             gf=np.array(rows["gf"], dtype=object))
    print(f"{popdyn.__version__}: {n} states ({int(np.sum(rows['fused']))} fused) -> {path}")


def compare(old, new):
    a = np.load(old, allow_pickle=True)
    b = np.load(new, allow_pickle=True)
    print(f"{a['version']} -> {b['version']}, {len(a['L'])} states")
    for key, gkey, what in (("L", "g", "general path"), ("Lf", "gf", "fused kernel")):
        ok = np.isfinite(a[key])
        rl = np.abs(b[key][ok] - a[key][ok]) / np.abs(a[key][ok])
        rg = [np.max(np.abs(y - x)) / np.max(np.abs(x))
              for x, y, f in zip(a[gkey], b[gkey], ok) if f]
        print(f"  {what:13s} ({int(ok.sum())} states): max |dL|/|L| = {rl.max():.3e}, "
              f"max max|dg|/max|g| = {max(rg):.3e}, bit-identical L: {int(np.sum(rl == 0))}")
    for z in (a, b):
        ok = np.asarray(z["fused"], dtype=bool)
        dl = np.abs(z["Lf"][ok] - z["L"][ok]) / np.abs(z["L"][ok])
        dg = [np.max(np.abs(x - y)) / np.max(np.abs(x))
              for x, y, f in zip(z["g"], z["gf"], ok) if f]
        same = sum(int(z["Lf"][i] == z["L"][i] and np.array_equal(z["g"][i], z["gf"][i]))
                   for i in np.flatnonzero(ok))
        print(f"  fused vs general in {z['version']}: max |dL|/|L| = {dl.max():.3e}, "
              f"max max|dg|/max|g| = {max(dg):.3e}, bit-identical L and g: {same}/{int(ok.sum())}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump")
    ap.add_argument("--compare", nargs=2)
    ap.add_argument("--states", type=int, default=120)
    args = ap.parse_args()
    if args.dump:
        dump(args.dump, args.states)
    if args.compare:
        compare(*args.compare)
    if not (args.dump or args.compare):
        sys.exit("give --dump OUT.npz or --compare OLD.npz NEW.npz")
