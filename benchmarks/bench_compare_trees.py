"""Side-by-side benchmarks of two source trees, interleaved (ABBA rounds), in one run.

The machine is shared and noisy, so the same benchmark scripts are run alternately against an
old and a new tree (each on PYTHONPATH, the same interpreter) and the best of the rounds is
compared.  Trees are plain checkouts, e.g. ``git archive main | tar -x -C /tmp/old``.

Run:  python benchmarks/bench_compare_trees.py OLD_TREE NEW_TREE [ROUNDS [BENCH ...]]
(the default benchmarks: bench_engine.py, bench_sweep.py --seeds 4 --updates 2000,
bench_diagnostics.py; raw outputs go to the temporary directory, the summary to stdout).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

if len(sys.argv) < 3:
    sys.exit(__doc__)
OLD, NEW = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
PY = sys.executable
OUTDIR = tempfile.mkdtemp(prefix="bench_compare_")
BENCH = [("bench_engine.py", []), ("bench_sweep.py", ["--seeds", "4", "--updates", "2000"]),
         ("bench_diagnostics.py", [])]
PATS = {
    "bench_engine.py": [r"exact loss\+grad\s+([\d.]+) ms", r"cached start-up \+ first evaluation:\s+([\d.]+) s",
                        r"`popdyn run --help` start-up:\s+([\d.]+) s"],
    "bench_sweep.py": [r"mean ([\d.]+) s \(", r"sweep wall time: ([\d.]+) s"],
    "bench_diagnostics.py": [r"one loss\+gradient evaluation\s+([\d.]+) ms", r"all diagnostics \(4 refits \+ geometry\)\s+([\d.]+) ms",
                             r"recorder default \(unrestricted \+ same-budget\)\s+([\d.]+) ms"],
}
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
only = sys.argv[4:] or [b for b, _ in BENCH]
def run(tree, b, args):
    env = dict(os.environ, PYTHONPATH=tree + os.pathsep + os.path.join(tree, "benchmarks"))
    t0 = time.time()
    out = subprocess.run([PY, os.path.join(tree, "benchmarks", b)] + args, cwd=tree, env=env,
                         capture_output=True, text=True)
    if out.returncode:
        print("FAILED", tree, b, out.stderr[-2000:], flush=True)
    return out.stdout, time.time() - t0
# warm numba caches of both trees
for tree in (OLD, NEW):
    env = dict(os.environ, PYTHONPATH=tree)
    subprocess.run([PY, "-c", "import popdyn,numpy as np;T=popdyn.Teacher.additive('h2',np.eye(4)[:1]);S=popdyn.Student(4,3);p=S.init(0,.5,T);popdyn.train(S,p,T,method='gd',max_updates=3);import popdyn.diagnostics as D;D.diagnose(S,p,T,geometry=True)"], cwd="/tmp", env=env)
res = {}
for b, args in BENCH:
    if b not in only:
        continue
    for r in range(rounds):
        order = (OLD, NEW) if r % 2 == 0 else (NEW, OLD)
        for tree in order:
            out, wall = run(tree, b, args)
            vals = [[float(x) for x in re.findall(p, out)] for p in PATS[b]]
            res.setdefault(b, {}).setdefault(tree, []).append(vals)
            print(b, "round", r, "new" if tree == NEW else "old", vals, f"({wall:.0f} s)", flush=True)
            with open(os.path.join(OUTDIR, f"{b}_{'new' if tree == NEW else 'old'}_{r}.txt"),
                      "w") as fh:
                fh.write(out)
print("\nSUMMARY (best over rounds; ratio new/old)")
for b, d in res.items():
    for k, pat in enumerate(PATS[b]):
        o = [v[k] for v in d[OLD]]; n = [v[k] for v in d[NEW]]
        for j in range(len(o[0]) if o and o[0] else 0):
            bo, bn = min(x[j] for x in o), min(x[j] for x in n)
            print(f"  {b:22s} {pat[:45]:45s} [{j}] old {bo:9.3f}  new {bn:9.3f}  ratio {bn / bo:.3f}")
with open(os.path.join(OUTDIR, "summary.json"), "w") as fh:
    json.dump({b: {("new" if t == NEW else "old"): v for t, v in d.items()}
               for b, d in res.items()}, fh)
print("raw outputs:", OUTDIR)
