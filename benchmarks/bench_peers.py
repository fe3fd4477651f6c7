"""The bias-free GD step against an independent arc-cosine implementation (issue 22).

Case of issue 22: a bias-free ReLU student (no intercept) against a 4-unit bias-free ReLU teacher
network, d = 64, m = 32 and 256; one evaluation of the population loss and its gradient.

Timed side by side, interleaved in rounds (best of each; this machine is shared and noisy):

* ``popdyn`` -- :func:`popdyn.objective.loss_and_grad`; bias-free sets go through the
  arc-cosine closed forms of :mod:`popdyn._kernels.arccos`;
* ``general`` -- the same call with every bias 1e−300 instead of 0 (the same numbers to
  rounding, computed by the general bivariate-normal kernels): the speed-up of the fast path;
* ``peer`` -- an independent numpy implementation written here: the first-order arc-cosine
  kernel k(w, w′) = |w||w′|(sin θ + (π − θ) cos θ)/(2π) (Cho & Saul 2009) and its hand-written
  gradient ∂k/∂w = (|w′| sin θ ŵ + (π − θ) w′)/(2π), as GEMMs (the shape of a jax.grad of the
  neural-tangents kernel; jax itself is not installed here -- with jax installed the script
  also times jax.jit(jax.value_and_grad) of the same kernel);
* ``biased`` -- the same student with biases N(0, 0.1²) through the general kernels.

It first checks that popdyn and the peer agree (loss and gradient within 1e−10 relative), then
prints milliseconds and the ratios popdyn/peer, general/popdyn and biased/peer.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_peers.py [--rounds 5]
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _timing import best_interleaved  # noqa: E402

import popdyn  # noqa: E402
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    d = 64
    rng = np.random.default_rng(0)
    U = rng.standard_normal((4, d)) / math.sqrt(d)
    V = np.ones(4)
    T = popdyn.Teacher.network("relu", V, U)
    try:
        import jax  # noqa: F401
        have_jax = True
    except ImportError:
        have_jax = False
    print(f"d = {d}, teacher: 4 relu units; jax {'installed' if have_jax else 'not installed'}")
    for m in (32, 256):
        S = popdyn.Student(d, m, bias=False, intercept=False)
        p = S.init(0, 0.5, T)
        Sb = popdyn.Student(d, m, bias=True, intercept=False)
        pg = popdyn.Params(p.a, p.W, np.full(m, 1e-300), 0.0)
        pb = popdyn.Params(p.a, p.W, rng.standard_normal(m) * 0.1, 0.0)
        L, g = loss_and_grad(S, p, T)
        Lp, ga, gW = peer_loss_grad(p.a, p.W, V, U)
        sc = max(np.abs(gW).max(), np.abs(ga).max())
        assert abs(L - Lp) <= 1e-10 * abs(Lp), (L, Lp)
        assert np.abs(g.a - ga).max() <= 1e-10 * sc and np.abs(g.W - gW).max() <= 1e-10 * sc
        inner = 50 if m == 32 else 5
        fns = [lambda: loss_and_grad(S, p, T), lambda: loss_and_grad(Sb, pg, T),
               lambda: peer_loss_grad(p.a, p.W, V, U), lambda: loss_and_grad(Sb, pb, T)]
        for f in fns:
            f()
        t_pop, t_gen, t_peer, t_b = best_interleaved(fns, rounds=args.rounds, inner=inner)
        print(f"m = {m:3d}: popdyn {t_pop * 1e3:8.3f} ms  general {t_gen * 1e3:8.3f} ms  "
              f"peer(numpy) {t_peer * 1e3:8.3f} ms  biased {t_b * 1e3:8.3f} ms | "
              f"popdyn/peer {t_pop / t_peer:6.2f}  general/popdyn {t_gen / t_pop:6.2f}  "
              f"biased/peer {t_b / t_peer:6.2f}")


if __name__ == "__main__":
    main()
