"""Two source trees side by side in CPU seconds: the runs of ``bench_sweep.py --seeds S
--updates N`` in one process, and the cached start-up of ``popdyn run --help``.

Wall-clock comparisons (``bench_compare_trees.py``) drift with whatever else the shared machine
runs; the CPU time of a process moves much less.  Each round runs both trees in fresh
subprocesses, alternating which goes first (ABBA), each with its own numba cache directory
(warmed before the first round); the best and the median of each tree and their ratios are
printed.  A tree is a plain checkout, e.g. ``git archive REV | tar -x -C /tmp/old``.

Run:  python benchmarks/bench_trees_cpu.py OLD_TREE NEW_TREE [--rounds 6] [--seeds 3]
      [--updates 2000]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys

RUNS = r'''
import sys, tempfile, time, warnings
sys.path.insert(0, sys.argv[1] + "/benchmarks")
warnings.simplefilter("ignore")
import bench_sweep as B
from popdyn.experiments import runner
from popdyn.experiments.sweep import plan
specs = [sp for _, sp in plan(B.config(int(sys.argv[2]), int(sys.argv[3]), 100))]
with tempfile.TemporaryDirectory() as d:          # compile / load the caches, untimed
    runner.run_one(specs[0], d)
with tempfile.TemporaryDirectory() as d:
    t0 = time.process_time()
    for s in specs:
        runner.run_one(s, d)
    print(time.process_time() - t0)
'''


def _env(tree):
    return dict(os.environ, PYTHONPATH=tree, OPENBLAS_NUM_THREADS="1",
                NUMBA_CACHE_DIR=os.path.join(tree, ".bench_numba_cache"))


def runs_cpu(tree, seeds, updates):
    out = subprocess.run([sys.executable, "-c", RUNS, tree, str(seeds), str(updates)],
                         env=_env(tree), capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def help_cpu(tree):
    u0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "popdyn.cli", "run", "--help"], env=_env(tree),
                   capture_output=True, check=True)
    u1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (u1.ru_utime - u0.ru_utime) + (u1.ru_stime - u0.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--updates", type=int, default=2000)
    a = ap.parse_args()
    trees = {"old": os.path.abspath(a.old), "new": os.path.abspath(a.new)}
    for t in trees.values():                       # warm each tree's numba cache
        runs_cpu(t, 1, 200)
    res = {k: {"runs": [], "help": []} for k in trees}
    for r in range(a.rounds):
        for k in (("old", "new") if r % 2 == 0 else ("new", "old")):
            res[k]["runs"].append(runs_cpu(trees[k], a.seeds, a.updates))
            res[k]["help"].append(help_cpu(trees[k]))
        print(f"round {r}: " + ", ".join(f"{k} runs {res[k]['runs'][-1]:.3f} s help "
                                         f"{res[k]['help'][-1]:.3f} s" for k in trees),
              flush=True)
    n = 4 * a.seeds
    print(f"\nCPU seconds, {a.rounds} ABBA rounds ({n} runs of bench_sweep's config, "
          f"{a.updates} updates each; `popdyn run --help`)")
    for what in ("runs", "help"):
        o, w = res["old"][what], res["new"][what]
        print(f"  {what:4s}  old best {min(o):.3f} median {statistics.median(o):.3f}   "
              f"new best {min(w):.3f} median {statistics.median(w):.3f}   ratio new/old: "
              f"best {min(w) / min(o):.3f}, median {statistics.median(w) / statistics.median(o):.3f}")


if __name__ == "__main__":
    main()
