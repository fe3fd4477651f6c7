"""Where the biased pair kernel spends its time: the stages of one chunked evaluation.

The state is that of ``bench_peers.py``'s biased step (d = 64, a ReLU student with biases
N(0, 0.1²) at m = ``--m``, initialization scale 0.5 against the 4-unit ReLU teacher): its
student–student pairs i ≤ j, cut into the chunks of ``pl_self_moments``.  Each chunk is evaluated
by :func:`popdyn._kernels.pl_batch._moments_list` and by copies of it compiled here with stages
removed (the source of ``_moments_list`` with one condition replaced; the script stops if the
source no longer contains it):

* ``full`` -- the kernel as it is;
* ``no_hh1`` -- without the deferred Hh₁ of the A terms (``if na > 0``);
* ``no_price`` -- without the deferred Price forms (``if nd > 0``: node sums, assembly, tests);
* ``no_hh1_price`` -- without both;
* ``no_hi`` -- without the deferred closed forms at |r̃| ≥ 0.925 (``if nh > 0``: the remainder
  batch, the closed forms, and the rest-list work of the pairs they push);
* ``no_rest`` -- without the rest list (the one-pair evaluators after a deferred estimate missed
  the target: the aligned forms, the checked Price form, the adaptive quadrature);
* ``front_only`` -- the branch-free front alone (the per-pair loop after it removed too).

With ``--sweep LABEL:K`` the state is instead state K of seed 0's trajectory of
``bench_sweep.py``'s teacher LABEL (d = 64, m = 32; states every 5,000 of 20,000 GD updates, K = 0
the initialization): the geometry the sweep's steps meet (aligned and anti-aligned units, many
pairs at |r̃| ≥ 0.925).

The copies compute less, so their results are wrong; only their times are used.  Timed
interleaved in rounds in one process (best of each; this machine is shared and noisy), one
thread.  Printed: nanoseconds per pair of each, and the differences that isolate the front,
the per-pair loop, the Hh₁ batch and the Price stage.  The differences are estimates (the
stages share caches and the out-of-order core), not a profile.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_pair_stages.py [--m 256] [--rounds 7]
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_pair_stages.py --sweep sine:3
"""
from __future__ import annotations

import argparse
import inspect
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _timing import best_interleaved  # noqa: E402

_VARIANTS = {
    "full": (),
    "no_hh1": (("if na > 0:", "if False:"),),
    "no_price": (("if nd > 0:", "if False:"),),
    "no_hh1_price": (("if na > 0:", "if False:"), ("if nd > 0:", "if False:")),
    "no_hi": (("if nh > 0:", "if False:"),),
    "no_rest": (("for e in range(nr):\n        k = RK[e]", "for e in range(0):\n        k = RK[e]"),),
    "front_only": (("for k in range(n):\n        i = I[k]", "for k in range(0):\n        i = I[k]"),
                   ("if na > 0:", "if False:"), ("if nd > 0:", "if False:")),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--sweep", default="", metavar="LABEL:K",
                    help="state K (0-4) of bench_sweep.py's teacher LABEL instead")
    args = ap.parse_args(argv)
    import numba
    from numba import njit, typed

    import popdyn
    from popdyn._kernels import pl_batch as PB
    from popdyn._kernels import pl_chunks as PC
    from popdyn._kernels import pl_front as PF
    from popdyn._kernels import pl_pair as PP
    from popdyn._kernels.geometry import pair_geometry_self
    from popdyn._kernels.pl_ramps import ATOL, MAXINT, QTOL, RTOL

    numba.set_num_threads(1)
    d, m = 64, args.m
    rng = np.random.default_rng(0)
    U = rng.standard_normal((4, d)) / math.sqrt(d)
    T = popdyn.Teacher.network("relu", np.ones(4), U)
    W = popdyn.Student(d, m, bias=False, intercept=False).init(0, 0.5, T).W
    b = rng.standard_normal(m) * 0.1                  # as bench_peers' biased step
    if args.sweep:
        W, b = _sweep_state(args.sweep)
        m = W.shape[0]
    al = np.sqrt(np.einsum("ij,ij->i", W, W))
    th = np.ascontiguousarray(W / al[:, None])
    R = th @ th.T
    OMR, OPR = np.empty((m, m)), np.empty((m, m))
    pair_geometry_self(th, np.ones(m, np.bool_), R, OMR, OPR)
    pp, qq = np.ones(m), np.zeros(m)
    Ut = typed.List(PP.pl_units(pp, qq, al, b))
    UA = PF._unit_array(Ut, pp, qq, al, b)
    I, J, RHO, OM, OP, DG, out = PC._chunk_arrays()
    CI, CJ = PC._chunk_starts(m, m, True)
    chunks = []
    for c in range(len(CI)):
        n, _, _ = PC._chunk_index(R, OMR, OPR, CI[c], CJ[c], 0, m, 0, m, True, I, J, RHO, OM,
                                  OP, DG)
        chunks.append(tuple(a[:n].copy() for a in (I, J, RHO, OM, OP, DG)))
    npairs = sum(len(c[0]) for c in chunks)
    lists = [typed.List([c[q] for c in chunks]) for q in range(6)]
    WS, WI, WB = PB._list_scratch()

    src = inspect.getsource(PB._moments_list.py_func).split("\n", 1)[1]   # without decorator
    runs = {}
    for name, edits in _VARIANTS.items():
        s = src
        for old, new in edits:
            if old not in s:
                sys.exit(f"bench_pair_stages: _moments_list no longer contains {old!r}")
            s = s.replace(old, new)
        ns = dict(PB.__dict__)
        exec(s, ns)
        ml = njit(error_model="numpy")(ns["_moments_list"])

        @njit
        def run(pp, qq, al, b, UA, CHI, CHJ, CHR, CHO, CHP, CHD, out, WS, WI, WB, ml=ml):
            Ut = PP.pl_units(pp, qq, al, b)       # a native list, as in the kernels
            for c in range(len(CHI)):
                n = CHI[c].shape[0]
                ml(Ut, pp, qq, al, b, Ut, pp, qq, al, b, UA, UA, CHI[c], CHJ[c], CHR[c], CHO[c],
                   CHP[c], CHD[c], RTOL, ATOL, QTOL, MAXINT, out[:n], WS, WI, WB)

        runs[name] = (lambda run=run: run(pp, qq, al, b, UA, *lists, out, WS, WI, WB))
        runs[name]()                                   # compile
    t = dict(zip(runs, best_interleaved(list(runs.values()), rounds=args.rounds, inner=5)))
    ns_ = {k: v / npairs * 1e9 for k, v in t.items()}
    print(f"bench_pair_stages: d = {d}, m = {m}, {npairs} pairs in {len(chunks)} chunks, one "
          f"thread; load {os.getloadavg()[0]:.2f}")
    for k, v in ns_.items():
        print(f"  {k:13s} {v:6.1f} ns/pair")
    print(f"  deferred closed forms at |r̃| ≥ 0.925 (with their rest-list work) "
          f"{ns_['full'] - ns_['no_hi']:.1f}, rest list {ns_['full'] - ns_['no_rest']:.1f} ns/pair")
    print(f"  stages: front {ns_['front_only']:.1f}, per-pair loop "
          f"{ns_['no_hh1_price'] - ns_['front_only']:.1f}, Hh1 batch "
          f"{ns_['full'] - ns_['no_hh1']:.1f}, Price stage {ns_['full'] - ns_['no_price']:.1f} "
          "ns/pair")
    return 0


def _sweep_state(spec: str):
    """(W, b) of state K of seed 0's trajectory of ``bench_sweep.py``'s teacher LABEL."""
    import bench_sweep as B

    from popdyn import config as C

    label, _, k = spec.rpartition(":")
    labels = [lab for lab, _ in B.TEACHERS]
    if label not in labels or not k.isdigit() or not 0 <= int(k) <= 4:
        sys.exit(f"bench_pair_stages: --sweep must be LABEL:K with LABEL one of {labels} and "
                 f"K in 0-4, got {spec!r}")
    for s in C.expand(B.config(1, 10, 100)):
        if s["teacher"]["label"] == label:
            _, _, states = B.trajectory_states(s, 20_000, 5_000)
            st = states[int(k)]
            return st.W, st.b
    raise AssertionError(label)


if __name__ == "__main__":
    sys.exit(main())
