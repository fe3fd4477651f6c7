"""Wall time of ``popdyn check --all --quick`` (goal: under two minutes on two cores).

Runs :func:`proofs_checks.cli.main` with ``--all --quick`` twice in this process: the first
call includes loading (or, on a fresh install, compiling) the numba kernels, the second is the
warm time.  Prints both, the verdicts, and whether each is under the 120 s budget.  This is a
benchmark, not a test: the suite checks the verdicts (tests/proofs_checks/test_checks.py), not
the time.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_checks.py
"""
from __future__ import annotations

import io
import json
import os
import sys
import tempfile
import time


def main() -> int:
    from proofs_checks.cli import main as check

    print(f"bench_checks: popdyn check --all --quick; machine: {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.2f}")
    for label in ("first call (kernel load or compile)", "warm"):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "v.json")
            t0 = time.perf_counter()
            rc = check(["--all", "--quick", "--json", path], out=io.StringIO(), err=io.StringIO())
            dt = time.perf_counter() - t0
            with open(path) as f:
                verdicts = {v["name"]: v["verdict"]["verdict"] for v in json.load(f)}
        print(f"  {label}: {dt:.1f} s (budget 120 s: {'met' if dt < 120 else 'NOT met'}); "
              f"exit code {rc}; " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
