"""Loader for data/refs/diagnostics_refs.json (30-digit mpmath references produced by
data/_precompute/diagnostics_refs.py, independent of popdyn's moment kernels)."""
import json
from functools import lru_cache
from pathlib import Path

import numpy as np

REFS = Path(__file__).resolve().parents[2] / "data" / "refs" / "diagnostics_refs.json"


@lru_cache(maxsize=1)
def cases():
    return json.loads(REFS.read_text())["cases"]


def case_ids():
    return [c["name"] for c in cases()]


def f(x):
    """A reference value (decimal string with 25 significant digits) as float."""
    return np.array(x, dtype=object).astype(float) if isinstance(x, list) else float(x)


def build(case):
    """(student, params, teacher) of a reference case."""
    import popdyn

    s = case["student"]
    student = popdyn.Student(d=s["d"], m=s["m"], activation=s["activation"],
                             negative_slope=s.get("negative_slope", 0.01), bias=s["bias"],
                             scaling=s["scaling"])
    p = case["params"]
    params = popdyn.Params(p["a"], p["W"], p["b"], p["c"])
    t = case["teacher"]
    if t["kind"] == "additive":
        teacher = popdyn.Teacher.additive(t["link"], np.array(t["U"]), t["kappa"])
    else:
        teacher = popdyn.Teacher.network(t["activation"], t["V"], np.array(t["U"]), t["bias"])
    return student, params, teacher
