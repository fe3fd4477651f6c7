"""Cells of a paper comparison (popdyn.experiments.cells): aggregation of per-run values and
intervals, the tolerance rules with the paper's printed rounding, and the JSON form."""
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from popdyn.experiments import cells as K


def test_aggregate_numbers_and_intervals():
    assert K.aggregate([1.0, 2.0, 6.0], "mean") == 3.0
    assert K.aggregate([1.0, 2.0, 6.0], "median") == 2.0
    # an unresolved run enters as [0, 1]: the mean is a bracket of the mean lower and upper ends
    assert K.aggregate([0.9, [0.0, 1.0], 0.8], "mean") == [pytest.approx(1.7 / 3),
                                                           pytest.approx(2.7 / 3)]
    assert K.aggregate([None, float("nan")], "mean") is None
    assert K.aggregate(["loss stop"], "single run") == "loss stop"
    with pytest.raises(ValueError, match="single run"):
        K.aggregate([1.0, 2.0], "single run")
    with pytest.raises(ValueError, match="`statistic` must be one of"):
        K.aggregate([1.0], "mode")


@given(st.lists(st.tuples(st.floats(-5, 5), st.floats(0, 3)), min_size=1, max_size=12),
       st.sampled_from(["mean", "median"]))
@settings(max_examples=60, deadline=None)
def test_aggregate_of_intervals_contains_the_aggregate_of_any_selection(pairs, stat):
    """Whatever point each run's interval stands for, the statistic of those points lies in the
    aggregated bracket (mean and median are monotone in every argument)."""
    runs = [[lo, lo + w] for lo, w in pairs]
    agg = K.aggregate(runs, stat)
    lo, hi = (agg, agg) if not isinstance(agg, list) else agg
    rng = np.random.default_rng(len(pairs))
    for _ in range(5):
        pts = [a + rng.random() * (b - a) for a, b in runs]
        v = float(getattr(np, stat)(pts))
        assert lo - 1e-12 <= v <= hi + 1e-12


def test_judge_abs_with_the_printed_rounding():
    # 0.972 printed with 3 digits and tolerance 0.03: [0.9415, 1.0025]
    assert K.judge(0.972, 0.9416, {"abs": 0.03}, digits=3)[0] == "matches"
    assert K.judge(0.972, 0.9414, {"abs": 0.03}, digits=3)[0] == "differs"
    # a popdyn bracket must lie inside the paper's bracket widened by the tolerance
    assert K.judge([0.952, 0.972], [0.93, 0.99], {"abs": 0.03}, digits=3)[0] == "matches"
    v, why = K.judge([0.952, 0.972], [0.0, 0.99], {"abs": 0.03}, digits=3)
    assert v == "differs" and "by 0.921" in why


def test_judge_rel_factor_sd_and_status():
    assert K.judge(128, 134.4, {"rel": 0.05}, digits=0)[0] == "matches"     # 6.4 + 0.5
    assert K.judge(128, 135.0, {"rel": 0.05}, digits=0)[0] == "differs"
    assert K.judge(0.054, 0.027, {"factor": 2}, digits=3)[0] == "matches"
    assert K.judge(0.054, 0.0264, {"factor": 2}, digits=3)[0] == "differs"
    assert K.judge(0.147, 0.147 + 2 * 0.106, {"sd": 2}, digits=3, sd=0.106)[0] == "matches"
    assert K.judge(0.147, 0.147 + 2 * 0.106 + 0.001, {"sd": 2}, digits=3, sd=0.106)[0] == "differs"
    assert K.judge("loss stop", "loss stop", {"abs": 0}, digits=0)[0] == "matches"
    assert K.judge("loss stop", "censored", {"abs": 0}, digits=0)[0] == "differs"
    assert K.judge(0.5, None, {"abs": 0.1}, digits=1) == ("differs", "not measured by popdyn")
    with pytest.raises(ValueError, match="needs the paper's printed `sd`"):
        K.judge(0.1, 0.1, {"sd": 2}, digits=3)
    with pytest.raises(ValueError, match="`tolerance` must be one of"):
        K.judge(0.1, 0.1, {"ulp": 2}, digits=3)


def test_make_cell_and_json_roundtrip(tmp_path):
    pc = {"row": "Additive ReLU", "column": "E", "paper": 113, "digits": 0,
          "tolerance": {"rel": 0.05}}
    c = K.make_cell("table2", pc, 140.0, "median", n=50, known_reason="see docs")
    assert tuple(c) == K.CELL_KEYS and c["verdict"] == "differs" and c["reason"].endswith("see docs")
    c2 = K.make_cell("table2", pc, 114.0, "median", n=50, known_reason="see docs")
    assert c2["verdict"] == "matches" and "see docs" not in c2["reason"]
    p = K.write_json(tmp_path / "cells.json", [c, c2])
    back = json.loads(p.read_text())
    assert back == [c, c2] and not list(tmp_path.glob(".*.tmp"))
    with pytest.raises(ValueError, match="exactly the keys"):
        K.write_json(tmp_path / "x.json", [{"row": 1}])
