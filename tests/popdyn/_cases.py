"""Build popdyn objects from the plain-data cases of data/refs/engine_refs.json."""
import json
from pathlib import Path

import numpy as np

import popdyn

REFS = Path(__file__).resolve().parents[2] / "data" / "refs"   # test-only, not in the wheel


def load_cases():
    with open(REFS / "engine_refs.json") as fh:
        doc = json.load(fh)
    return doc["cases"] if isinstance(doc, dict) else doc


def build(case):
    inp = case.get("inputs", case)
    W = np.array(inp["W"], dtype=float)
    m, d = W.shape
    b = np.array(inp["b"], dtype=float)
    student = popdyn.Student(d, m, inp["activation"], negative_slope=inp.get("negative_slope", 0.01),
                             bias=True, intercept=True, scaling=inp.get("scaling", "standard"))
    params = popdyn.Params(np.array(inp["a"], dtype=float), W, b, float(inp["c"]))
    t = inp["teacher"]
    if t["kind"] == "additive":
        link = t["link"]
        if isinstance(link, list):  # a mixture [[w, name], ...]
            from popdyn.links import mixture
            link = mixture([(float(w), n) for w, n in link])
        teacher = popdyn.Teacher.additive(link, np.array(t["U"], dtype=float), t.get("kappa"))
    else:
        teacher = popdyn.Teacher.network(t["activation"], t["V"], np.array(t["U"], dtype=float),
                                         t.get("bias"), negative_slope=t.get("negative_slope", 0.01))
    return student, params, teacher


def outputs(case):
    out = case.get("outputs", case)
    g = out["grad"]
    return (float(out["loss"]), np.array(g["a"], dtype=float), np.array(g["W"], dtype=float),
            np.array(g["b"], dtype=float), float(g["c"]), float(out["teacher_mean"]),
            float(out["teacher_variance"]))
