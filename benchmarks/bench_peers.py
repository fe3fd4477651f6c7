"""The bias-free GD step against independent arc-cosine implementations, and the biased step
against its unavoidable work.

Case: a bias-free ReLU student (no intercept) against a 4-unit bias-free ReLU teacher
network, d = 64, m = 32 and 256; one evaluation of the population loss and its gradient.

Timed side by side in one run, interleaved in rounds (best of each; this machine is shared and
noisy), every ratio against a time of the same run:

* ``step`` -- popdyn's GD step: the fused loss-and-gradient kernel
  (:func:`popdyn._kernels.fused.pl_loss_grad`, what ``popdyn.train(..., method="gd")`` evaluates
  per update); bias-free sets go through the arc-cosine closed forms of
  :mod:`popdyn._kernels.arccos`;
* ``l&g`` -- :func:`popdyn.objective.loss_and_grad` (the general Python-level path: validation,
  family dispatch, :class:`popdyn._moments.Moments`);
* ``general`` -- the fused step with every bias 1e−300 instead of 0 (the same numbers to
  rounding, computed by the general bivariate-normal kernels): the speed-up of the fast path;
* ``jax`` -- ``jax.jit(jax.value_and_grad(loss))`` in float64 (``jax_enable_x64``) of the
  first-order arc-cosine kernel k(w, w′) = |w||w′|(sin θ + (π − θ) cos θ)/(2π) (Cho & Saul 2009;
  the closed form of neural-tangents' ``stax.Relu``), when jax is installed (the ``bench`` extra:
  ``pip install -e .[bench]``).  Two formulations are timed (arccos of the cosine, and atan2 of
  (|w||w′| sin θ, w·w′) without the divisions) and the faster one is the peer; the diagonal of
  the self kernel is |w|²/2 (the masked form keeps jax.grad finite there);
* ``numpy`` -- an independent numpy implementation written here, the same kernel with its
  hand-written gradient ∂k/∂w = (|w′| sin θ ŵ + (π − θ) w′)/(2π), as GEMMs;
* ``biased`` -- the fused step of the same student with biases N(0, 0.1²) (general kernels), and
  its *unavoidable work*: the number of ramp–ramp pairs (one bivariate normal CDF Φ₂ each: the
  m(m+1)/2 student pairs and the m·k student–teacher pairs whose ramps are both non-trivial)
  times the measured cost of one Φ₂ (:func:`popdyn._kernels.bvn.bvn_cdf` on exactly those
  pairs' arguments, one call per pair), plus the step's GEMMs (θθᵀ, θθ*ᵀ, B(a∘W), B*(v∘U),
  Ca, C*v, Aa, A*v) timed in numpy.

It first checks that popdyn, the numpy peer and the jax peer agree (loss and gradient within
1e−10 relative), then prints milliseconds and the ratios.  The goals are step/jax ≤ 1.0 at
m = 256, ≤ 1.5 at m = 32, and biased ≤ 1.0× the bias-free peer step at m = 256 (the
looser ≤ 3× is printed too), where the peer is the jax step where jax is installed and the
numpy step otherwise.  Both biased ratios are printed: ``biased/peer`` against that peer, and
the stricter ``biased/fastest`` against the faster of jax and numpy (the numpy peer is the
faster one here, being GEMMs on one core).

The process is pinned to ``--cores`` cores (default 1, ``os.sched_setaffinity`` before jax is
imported, so that XLA's thread pool has that one core too): the issue compares the steps on
one core each.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_peers.py [--rounds 7] [--clock cpu] [--cores 1]

``--clock cpu`` times the CPU time of the process (``time.process_time``, all threads: jax's
too) instead of the wall time: on a shared, loaded machine the wall time mostly measures the
wait for a core.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _timing import best_interleaved  # noqa: E402

import popdyn  # noqa: E402
from popdyn._kernels._jit import jit  # noqa: E402
from popdyn._kernels.bvn import bvn_cdf  # noqa: E402
from popdyn._kernels.plmoments import pl_units  # noqa: E402
from popdyn.dynamics import _Fused  # noqa: E402
from popdyn.objective import loss_and_grad  # noqa: E402


def peer_loss_grad(a, W, V, U):
    """½E[(f − y)²] and (∂a, ∂W) for f = Σ aⱼ relu(wⱼ·x), y = Σ vₖ relu(uₖ·x) (numpy)."""
    nw = np.sqrt(np.einsum("ij,ij->i", W, W))
    nu = np.sqrt(np.einsum("ij,ij->i", U, U))
    What = W / nw[:, None]

    def kern(X, nx, Y, ny):
        cos = np.clip((X @ Y.T) / np.outer(nx, ny), -1.0, 1.0)
        th = np.arccos(cos)
        sin = np.sqrt(np.maximum(1.0 - cos * cos, 0.0))
        K = np.outer(nx, ny) * (sin + (math.pi - th) * cos) / (2 * math.pi)
        return K, th, sin

    Kss, ths, sins = kern(W, nw, W, nw)
    Kst, tht, sint = kern(W, nw, U, nu)
    Ktt, _, _ = kern(U, nu, U, nu)
    L = 0.5 * (a @ Kss @ a - 2 * a @ Kst @ V + V @ Ktt @ V)
    ga = Kss @ a - Kst @ V
    # Σⱼ aⱼ ∂k(wᵢ, wⱼ)/∂wᵢ − Σₖ vₖ ∂k(wᵢ, uₖ)/∂wᵢ
    Ms, Mt = (sins * nw[None, :]) @ a, (sint * nu[None, :]) @ V
    Ps, Pt = (math.pi - ths) * a[None, :], (math.pi - tht) * V[None, :]
    gW = a[:, None] * ((Ms - Mt)[:, None] * What + Ps @ W - Pt @ U) / (2 * math.pi)
    return L, ga, gW


def jax_peers():
    """The two jax formulations (jit of value_and_grad, float64), or None without jax."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def k_acos(X, Y, same):
        nx = jnp.sqrt(jnp.sum(X * X, 1))
        ny = jnp.sqrt(jnp.sum(Y * Y, 1))
        nn = jnp.outer(nx, ny)
        cos = jnp.clip((X @ Y.T) / nn, -1.0, 1.0)
        if same:
            eye = jnp.eye(X.shape[0], dtype=bool)
            cos = jnp.where(eye, 0.0, cos)
        th = jnp.arccos(cos)
        K = nn * (jnp.sqrt(1.0 - cos * cos) + (jnp.pi - th) * cos) / (2 * jnp.pi)
        return jnp.where(eye, 0.5 * nx * nx, K) if same else K

    def k_atan2(X, Y, same):
        prod = X @ Y.T
        nn2 = jnp.outer(jnp.sum(X * X, 1), jnp.sum(Y * Y, 1))
        if same:
            eye = jnp.eye(X.shape[0], dtype=bool)
            prod = jnp.where(eye, 0.0, prod)
        s = jnp.sqrt(jnp.maximum(nn2 - prod * prod, 1e-300))
        K = (s + (jnp.pi - jnp.arctan2(s, prod)) * prod) / (2 * jnp.pi)
        return jnp.where(eye, 0.5 * jnp.sum(X * X, 1), K) if same else K

    out = {}
    for name, k in (("acos", k_acos), ("atan2", k_atan2)):
        def loss(a, W, V, U, k=k):
            return 0.5 * (a @ k(W, W, True) @ a - 2 * a @ k(W, U, False) @ V
                          + V @ k(U, U, True) @ V)
        vg = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))

        def call(a, W, V, U, vg=vg):
            L, (ga, gW) = vg(a, W, V, U)
            gW.block_until_ready()
            return L, ga, gW
        out[name] = call
    return out, jnp.asarray


@jit
def _bvn_many(h, k, r, om, op, out):
    """Φ₂ of each pair, one :func:`bvn_cdf` call each (the unavoidable-work probe)."""
    for e in range(h.shape[0]):
        out[e] = bvn_cdf(h[e], k[e], r[e], om[e], op[e])


def ramp_pairs(W, b, Tth, Tal, Tbe):
    """Φ₂ arguments (−x, −y, r̃, 1 − r̃, 1 + r̃) of the ramp–ramp pairs of one step: the student
    pairs i ≤ j and the student–teacher pairs whose ramps are both non-trivial (canonical forms of
    :func:`popdyn._kernels.plmoments.pl_units`; the diagonal at r̃ = 1 is included)."""
    al = np.sqrt(np.einsum("ij,ij->i", W, W))
    th = W / al[:, None]
    m, k = W.shape[0], Tth.shape[0]
    Us = pl_units(np.ones(m), np.zeros(m), al, b)
    Ut = pl_units(np.ones(k), np.zeros(k), Tal, Tbe)
    hs, ks, rs = [], [], []
    for X, Ua, Ub, upper in ((th @ th.T, Us, Us, True), (th @ Tth.T, Us, Ut, False)):
        for i, ui in enumerate(Ua):
            for j in range(i if upper else 0, len(Ub)):
                uj = Ub[j]
                if ui[0] != 0.0 and uj[0] != 0.0:
                    r = 1.0 if (upper and i == j) else ui[2] * uj[2] * float(X[i, j])
                    hs.append(-ui[3])
                    ks.append(-uj[3])
                    rs.append(r)
    r = np.clip(np.array(rs), -1.0, 1.0)
    return np.array(hs), np.array(ks), r, 1.0 - r, 1.0 + r


def step_gemms(W, a, Tth, V):
    """The GEMMs and GEMVs of one GD step of an m-unit student (numpy; random stand-ins for
    the moment matrices)."""
    m, k = W.shape[0], Tth.shape[0]
    th = W
    C = np.ones((m, m))
    Ct = np.ones((m, k))
    aW = a[:, None] * W
    vU = V[:, None] * Tth

    def f():
        th @ th.T
        th @ Tth.T
        C @ aW
        Ct @ vU
        C @ a
        Ct @ V
        C @ a
        Ct @ V
    return f


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall time (perf_counter) or CPU time of the process (process_time)")
    ap.add_argument("--cores", type=int, default=1,
                    help="pin the process to this many cores (0: leave the affinity alone)")
    args = ap.parse_args()
    if args.cores > 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:args.cores])
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    d = 64
    rng = np.random.default_rng(0)
    U = rng.standard_normal((4, d)) / math.sqrt(d)
    V = np.ones(4)
    T = popdyn.Teacher.network("relu", V, U)
    jp = jax_peers()
    print(f"bench_peers: d = {d}, teacher: 4 relu units; jax "
          f"{'installed' if jp else 'not installed'}; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; clock {args.clock}; cores "
          f"{sorted(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}; "
          f"load {os.getloadavg()[0]:.2f}")
    rows = []
    for m in (32, 256):
        S = popdyn.Student(d, m, bias=False, intercept=False)
        p = S.init(0, 0.5, T)
        Sb = popdyn.Student(d, m, bias=True, intercept=False)
        pg = popdyn.Params(p.a, p.W, np.full(m, 1e-300), 0.0)
        pb = popdyn.Params(p.a, p.W, rng.standard_normal(m) * 0.1, 0.0)
        F, Fb = _Fused.make(S, T), _Fused.make(Sb, T)
        # agreement: popdyn's two paths, the numpy peer, the jax peers
        L, g = loss_and_grad(S, p, T)
        Lf, gf, _ = F.evaluate(p)
        Lp, ga, gW = peer_loss_grad(p.a, p.W, V, U)
        sc = max(np.abs(gW).max(), np.abs(ga).max())
        cands = [(Lf, gf.a, gf.W), (Lp, ga, gW)]
        if jp:
            calls, asarray = jp
            ja, jW, jV, jU = map(asarray, (p.a, p.W, V, U))
            for call in calls.values():
                Lj, gaj, gWj = call(ja, jW, jV, jU)
                cands.append((float(Lj), np.asarray(gaj), np.asarray(gWj)))
        for Lx, gax, gWx in cands:
            assert abs(L - Lx) <= 1e-10 * abs(L), (L, Lx)
            assert np.abs(g.a - gax).max() <= 1e-10 * sc and np.abs(g.W - gWx).max() <= 1e-10 * sc
        # unavoidable work of the biased step
        h, k, r, om, op = ramp_pairs(pb.W, pb.b, T.theta, T.alpha, T.bias)
        phi2 = np.empty(h.shape[0])
        fns = {"step": lambda: F.evaluate(p), "l&g": lambda: loss_and_grad(S, p, T),
               "general": lambda: Fb.evaluate(pg),
               "numpy": lambda: peer_loss_grad(p.a, p.W, V, U)}
        if jp:
            for name, call in calls.items():
                fns["jax-" + name] = (lambda call=call: call(ja, jW, jV, jU))
        fns["biased"] = lambda: Fb.evaluate(pb)
        fns["phi2"] = lambda: _bvn_many(h, k, r, om, op, phi2)
        fns["gemms"] = step_gemms(pb.W, pb.a, T.theta, V)
        for f in fns.values():
            f()
        inner = 40 if m == 32 else 4
        t = dict(zip(fns, best_interleaved(list(fns.values()), rounds=args.rounds, inner=inner,
                                                clock=clock)))
        jax_t = min((v for n, v in t.items() if n.startswith("jax")), default=float("nan"))
        peer = jax_t if jp else t["numpy"]            # the bias-free peer step
        fastest = min(jax_t, t["numpy"]) if jp else t["numpy"]
        unavoid = t["phi2"] + t["gemms"]
        print(f"m = {m}: " + "  ".join(f"{n} {v * 1e3:.3f} ms" for n, v in t.items())
              + f"  [{h.shape[0]} Φ₂, {t['phi2'] / h.shape[0] * 1e9:.0f} ns each]")
        rows.append((m, t["step"] / jax_t, t["l&g"] / jax_t, t["step"] / t["numpy"],
                     t["general"] / t["step"], t["biased"] / peer, t["biased"] / fastest,
                     t["biased"] / unavoid))
    print("\n  m | step/jax | l&g/jax | step/numpy | general/step | biased/peer | biased/fastest"
          " | biased/unavoidable")
    for m, *q in rows:
        print(f"{m:3d} | " + " | ".join(f"{x:8.2f}" for x in q))
    print(f"load {os.getloadavg()[0]:.2f} at the end")
    r32, r256 = rows
    verdict = [("step/jax <= 1.0 at m = 256", r256[1] <= 1.0),
               ("step/jax <= 1.5 at m = 32", r32[1] <= 1.5),
               (f"biased/peer <= 1.0 at m = 256 (peer: {'jax' if jp else 'numpy'})",
                r256[5] <= 1.0),
               (f"biased/peer <= 3 at m = 256 (peer: {'jax' if jp else 'numpy'})", r256[5] <= 3.0),
               ("biased/fastest <= 3 at m = 256 (stricter: the faster of jax and numpy)",
                r256[6] <= 3.0)]
    print("goals: " + "; ".join(
        f"{g}: {'met' if ok else 'NOT met'}" for g, ok in verdict))


if __name__ == "__main__":
    main()
