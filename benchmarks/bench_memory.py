"""Peak memory of the fused training step, whole-matrix vs tile by tile.

Each measurement runs in its own subprocess (``--child``): popdyn is imported (numba kernels
loaded from the cache), a small student's training warms the kernels, the problem is built,
the peak RSS is reset (``/proc/self/clear_refs`` = 5) and ``popdyn.train`` runs ``--updates``
fixed-step GD
updates (:class:`popdyn.dynamics.FusedGD`) of a biased relu student (m units, d inputs)
against a two-unit relu network teacher; the child reports VmRSS before training and the peak
VmHWM of the training (``ru_maxrss`` as well: the peak over the whole child).  The whole-matrix
evaluation is forced with ``popdyn._kernels.fused.TILE = 0``, the tiled one uses ``--tile``.

Then, in this process: the ratio tiled / whole-matrix of the time of one evaluation at
``--m-ratio`` units (interleaved rounds, the minimum CPU time of each), and the minor page
faults of one call of the public ``popdyn.objective.loss_and_grad`` (scratch kept between
calls), of the engine's ``family.loss_and_grad`` (fresh m×m arrays at each call: what the
public function did before) and of one fused step evaluation at ``--tile`` and ``--m-ratio``
units.

Usage: ``python benchmarks/bench_memory.py [--m 4096 --d 64 --updates 3 --tile 512]``
(≈ 1 min at m = 4096: one whole-matrix step is ≈ 2.7 CPU-s).  The load average is printed:
the machine may be shared.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.path.insert(0, os.path.dirname(_HERE))        # the checkout's popdyn, also in the children

from _timing import best_interleaved  # noqa: E402


def _problem(m, d, seed=0):
    import popdyn

    U = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))[0][:2]
    teacher = popdyn.Teacher.network("relu", [1.0, -0.7], 1.3 * U, bias=[0.2, -0.4])
    student = popdyn.Student(d, m, "relu", bias=True, intercept=True)
    return student, student.init(seed, 0.01, teacher), teacher


def _status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024        # kB → bytes
    return -1


def child(m, d, updates, tile):
    import popdyn
    from popdyn._kernels import fused as fk

    fk.TILE = tile
    # warm the kernels (loaded from numba's cache) on a small student of the same path
    small = _problem(min(m, 2 * tile) if tile else 16, d)
    popdyn.train(*small, method="gd", lr=0.05, max_updates=1)
    student, params, teacher = _problem(m, d)
    before = _status("VmRSS")
    reset = True
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        reset = False
    t0 = time.perf_counter()
    c0 = time.process_time()
    tr = popdyn.train(student, params, teacher, method="gd", lr=0.05, max_updates=updates)
    out = dict(tile=tile, m=m, d=d, updates=int(tr.n[-1]), rss_before=before,
               hwm=_status("VmHWM"), hwm_reset=reset,
               maxrss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
               wall=time.perf_counter() - t0, cpu=time.process_time() - c0,
               loss=float(tr.loss[-1]))
    print(json.dumps(out))


def _run_child(m, d, updates, tile):
    cmd = [sys.executable, __file__, "--child", "--m", str(m), "--d", str(d),
           "--updates", str(updates), "--tile", str(tile)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def ratio(m, d, rounds=5):
    """(whole-matrix, tiled) CPU time of one evaluation of the step at m units."""
    from popdyn._kernels import fused as fk
    from popdyn._moments import teacher_tables

    student, p, t = _problem(m, d)
    args = (float(student.act.p), float(student.act.q), float(student.s), p.a, p.W, p.b,
            float(p.c), True, True) + teacher_tables(t)
    g = [np.empty(m), np.empty((m, d)), np.empty(m)]
    fns = [lambda: fk.pl_loss_grad_values(*args, *g, tile=0),
           lambda: fk.pl_loss_grad_values(*args, *g, tile=fk.TILE)]
    for f in fns:                          # warm both
        f()
    # CPU time of the process (less inflated by a loaded machine than the wall time)
    tw, tt = best_interleaved(fns, rounds=rounds, inner=1, clock=time.process_time)

    return tw, tt


def public_times(m, d, rounds=3):
    """CPU time of one call (best of interleaved rounds): the public ``loss_and_grad``, the
    engine's ``family.loss_and_grad`` and the fused whole-matrix step evaluation."""
    from popdyn._kernels import fused as fk
    from popdyn._moments import teacher_tables
    from popdyn.objective import loss_and_grad

    student, p, t = _problem(m, d)
    args = (float(student.act.p), float(student.act.q), float(student.s), p.a, p.W, p.b,
            float(p.c), True, True) + teacher_tables(t)
    g = [np.empty(m), np.empty((m, d)), np.empty(m)]
    fns = [lambda: loss_and_grad(student, p, t), lambda: student.family.loss_and_grad(p, t),
           lambda: fk.pl_loss_grad_values(*args, *g, tile=0)]
    for f in fns:
        f()
    return best_interleaved(fns, rounds=rounds, inner=1, clock=time.process_time)


def faults(m, d, n=3):
    """Minor page faults per call at m units: the public ``loss_and_grad``, the engine's
    ``family.loss_and_grad`` (what the public function evaluated until it kept its scratch)
    and the fused whole-matrix evaluation of the training step (C, B returned fresh)."""
    from popdyn._kernels import fused as fk
    from popdyn._moments import teacher_tables
    from popdyn.objective import loss_and_grad

    student, p, t = _problem(m, d)
    args = (float(student.act.p), float(student.act.q), float(student.s), p.a, p.W, p.b,
            float(p.c), True, True) + teacher_tables(t)
    g = [np.empty(m), np.empty((m, d)), np.empty(m)]

    def count(f):
        f()
        r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(n):
            f()
        return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) / n

    return (count(lambda: loss_and_grad(student, p, t)),
            count(lambda: student.family.loss_and_grad(p, t)),
            count(lambda: fk.pl_loss_grad_values(*args, *g, tile=0)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=4096)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--updates", type=int, default=3)
    ap.add_argument("--tile", type=int, default=512)
    ap.add_argument("--m-ratio", type=int, default=1024)
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args(argv)
    if a.child:
        child(a.m, a.d, a.updates, a.tile)
        return 0
    with open("/proc/loadavg") as fh:
        print("loadavg:", fh.read().strip())
    gb = 2.0 ** 30
    res = {}
    for tile in (0, a.tile):
        r = res[tile] = _run_child(a.m, a.d, a.updates, tile)
        name = "whole-matrix" if tile == 0 else f"tiled ({tile})"
        print(f"{name:>14}: m={r['m']} d={r['d']} updates={r['updates']}  "
              f"RSS before train {r['rss_before'] / gb:.3f} GB, peak during train "
              f"{r['hwm'] / gb:.3f} GB{'' if r['hwm_reset'] else ' (not reset)'}, "
              f"ru_maxrss {r['maxrss'] / gb:.3f} GB, wall {r['wall']:.1f} s, "
              f"cpu {r['cpu']:.1f} s, loss {r['loss']:.17g}")
    l0, l1 = res[0]["loss"], res[a.tile]["loss"]
    print(f"final loss, relative difference tiled vs whole: {abs(l1 - l0) / abs(l0):.2e}")
    from popdyn._kernels import fused as fk

    fk.TILE = a.tile
    tw, tt = ratio(a.m_ratio, a.d)
    print(f"m={a.m_ratio}: one evaluation whole {tw * 1e3:.0f} CPU-ms, tiled ({a.tile}) "
          f"{tt * 1e3:.0f} CPU-ms: ratio tiled/whole {tt / tw:.3f}")
    for m in sorted({min(a.tile, a.m_ratio), a.m_ratio}):
        tp, te, ts = public_times(m, a.d)
        print(f"m={m}: CPU time per call: public loss_and_grad {tp * 1e3:.0f} ms, engine "
              f"family.loss_and_grad {te * 1e3:.0f} ms, fused step (whole) {ts * 1e3:.0f} ms")
        fpub, feng, fstep = faults(m, a.d)
        print(f"m={m}: minor page faults per call: public loss_and_grad {fpub:.0f}, engine "
              f"family.loss_and_grad {feng:.0f}, fused step (C, B returned) {fstep:.0f}")
    with open("/proc/loadavg") as fh:
        print("loadavg:", fh.read().strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
