"""The SwiGLU protocol of Kumar (arXiv 2609.39408) App. U.6 through the sweep, and the Tables
3–7 / Figure 24 measurements of `popdyn reproduce` (App. U.7, U.8).

References: a direct :func:`popdyn.swiglu.train_paper` call (the configuration path must equal
it bit for bit), an uninterrupted run (a resumed run must equal it bit for bit), brute-force
recomputation from the stored arrays (the prefixes by a plain loop over the losses, the
diagnostics by :func:`popdyn.swiglu.paper_diagnostics` of the stored states, the legacy ridge
value by an explicit inverse), closed forms (V_y = 1 − 1/π of the rank-one ReLU teacher with
E[y²] = 1, U.6).  All runs are tiny (d = 4, m = 6, a few dozen updates).
"""
import copy
import json
import math

import numpy as np
import pytest

from popdyn import SwiGLUStudent
from popdyn import config as C
from popdyn import swiglu as sw
from popdyn._paths import data_path
from popdyn.dynamics import Schedule
from popdyn.experiments import Store, sweep
from popdyn.experiments import reproduce as R
from popdyn.experiments.cells import CELL_KEYS
from popdyn.experiments.runner import build, params_from, paper_recorder, run_one
from popdyn.experiments.sweep import plan

FIELDS = ("a", "G", "V", "bg", "bv", "c")


def tiny_cfg(updates=40, every=5, checkpoint=1000, teacher=None, early=()):
    """The shipped rank-one smoke setting (table3.toml, "Smoke r=1") cut to ``updates``."""
    cfg = C.load(data_path("configs", "paper", "table3.toml"))
    smoke = cfg.pop("settings")[0]
    assert smoke["label"] == "Smoke r=1"
    for k in ("student", "init", "train"):
        cfg[k] = {**copy.deepcopy(cfg[k]), **smoke.get(k, {})}
    cfg["train"]["max_updates"] = updates
    cfg["schedule"] = {"every": every, "early": list(early)}
    cfg["store"] = {"checkpoint_every": checkpoint}
    if teacher is not None:
        cfg["teacher"] = teacher
    return C.validate(cfg)


def one_run(cfg, root):
    st = Store(root)
    k = sweep(cfg, st, workers=1, progress=False)["keys"][0]
    return st, k


def test_shipped_matrix_is_the_papers_24_conditions():
    """Tables 3–5: 24 runs with the U.6 stopping rules per condition; Table 6: 4 × 20."""
    specs = []
    for fn in R.EXPERIMENTS["table3"].configs:
        specs += [s for _, s in plan(C.load(data_path("configs", "paper", fn)))]
    rows = {R._row_swiglu({"setting": s["setting"], "label": s["teacher"]["label"],
                           "seed": s["init"]["seed"]}): s for s in specs}
    pv = R.paper_values("table3")
    assert set(rows) == {c["row"] for c in pv["table3"]["cells"]} and len(specs) == 24
    stop = {"Smoke r=1 (0)": (0.9, 1e6, 20000), "Smoke r=2 (0)": (0.9, 1e6, 20000),
            "h_3 (2)": (0.5, 1e6, 20000), "h_3, m=256 (0)": (0.9, 1e6, 20000),
            "ReLU (1)": (0.7, 1e6, 20000), "r=2, (1,.6) (2)": (0.6, 500, 3000),
            "GD Δt=0.05 (0)": (0.5, 250, 20000)}
    for row, (ls, tm, nm) in stop.items():
        tr = rows[row]["train"]
        assert (tr["loss_target"], tr["max_time"], tr["max_updates"]) == (ls, tm, nm), row
        assert tr["method"] == "paper_euler" and rows[row]["diagnostics"]["certify"] is False
    assert rows["GD Δt=0.3 (0)"]["train"]["dt"] == 0.3 and "dt" not in rows["h_3 (0)"]["train"]
    assert rows["h_3, m=256 (0)"]["student"]["m"] == 256 and rows["h_3, m=256 (0)"]["init"]["scale"] == 0.1
    assert rows["Smoke r=2 (0)"]["init"]["scale"] == 0.05 and rows["Smoke r=1 (0)"]["init"]["scale"] == 0.1
    n6 = sum(len(plan(C.load(data_path("configs", "paper", fn))))
             for fn in R.EXPERIMENTS["table6"].configs)
    assert n6 == 80
    # Figure 24's run is Table 3's m = 256 run (one stored run for both experiments)
    k24 = plan(C.load(data_path("configs", "paper", "figure24.toml")))[0][0]
    k3 = [k for k, s in plan(C.load(data_path("configs", "paper", "table3.toml")))
          if s["setting"] == "h_3, m=256"]
    assert k3 == [k24]


def test_teacher_normalization_is_the_second_moment():
    """U.6: y = γ φ(x_1) with E[y²] = 1, so the rank-one ReLU teacher has V_y = 1 − 1/π."""
    cfg = C.load(data_path("configs", "paper", "table3_links.toml"))
    T = {t["label"]: C.teacher_from_table(t, 16) for t in cfg["teachers"]}
    assert T["ReLU"].variance == pytest.approx(1.0 - 1.0 / math.pi, rel=1e-12)
    assert T["h_3+.3h_2"].variance == pytest.approx(1.0, rel=1e-12)      # centered, E y² = 1


def test_config_errors_name_the_setting():
    base = tiny_cfg()
    bad = copy.deepcopy(base)
    bad["diagnostics"]["certify"] = True
    with pytest.raises(C.ConfigError, match="certify must be false"):
        C.expand(bad)
    bad = copy.deepcopy(base)
    bad["train"]["lr"] = 0.1
    with pytest.raises(C.ConfigError, match=r"paper_euler' takes only"):
        C.expand(bad)
    bad = copy.deepcopy(base)
    bad["student"]["biases"] = False
    bad["init"].pop("convention")
    with pytest.raises(C.ConfigError, match="biases = true"):
        C.expand(bad)
    bad = copy.deepcopy(base)
    bad["train"]["rel_change"] = -1.0
    with pytest.raises(C.ConfigError, match="`rel_change`"):
        C.expand(bad)
    ok = copy.deepcopy(base)
    ok["train"] = {"method": "gd", "lr": 0.1, "dt": 0.1}
    with pytest.raises(C.ConfigError, match="apply to method = 'paper_euler' only"):
        C.expand(ok)


def test_config_path_equals_a_direct_train_paper_call(tmp_path):
    """One segment: the stored run is train_paper's trajectory bit for bit (losses, clock,
    every snapshot field, the diagnostics records, the status)."""
    cfg = tiny_cfg(updates=40, every=5)
    st, k = one_run(cfg, tmp_path / "st")
    rec, arrs = st.record(k), st.arrays(k)
    spec = plan(cfg)[0][1]
    T = C.teacher_from_table(spec["teacher"], 4)
    S = SwiGLUStudent(4, 6, biases=True, clock="mean_field")
    p0 = S.init(0, 0.1, T, convention="paper")
    tr = sw.train_paper(S, p0, T, rel_change=0.01, dt_max=50.0, loss_stop=0.9, t_max=1e6,
                        n_max=40, schedule=Schedule(every=5, early=()),
                        recorder=paper_recorder(T.subspace))
    assert tr.status == rec["status"] == "horizon" and rec["paper"]["status"] == "censored"
    assert np.array_equal(arrs["n"], tr.n) and np.array_equal(arrs["loss"], tr.loss)
    assert np.array_equal(arrs["t"], tr.t) and np.array_equal(arrs["snap_n"], tr.snap_n)
    for f in FIELDS:
        assert np.array_equal(arrs[f], tr.snapshots[f]), f
    got = [{k2: v for k2, v in r.items()} for r in rec["records"]]
    want = json.loads(json.dumps([{k2: (list(v) if isinstance(v, tuple) else v)
                                   for k2, v in r.items()} for r in tr.records]))
    assert got == want
    # the records are the paper's diagnostics of the stored states
    d0 = sw.paper_diagnostics(S, params_from(S, arrs, 0), T, T.subspace)
    assert rec["records"][0]["A_top"] == d0["A_top"] and rec["records"][0]["R"] == d0["R"]


def test_resume_is_bit_identical_and_segments_change_no_update(tmp_path):
    cfg = tiny_cfg(updates=40, every=5, checkpoint=10)
    key, spec = plan(cfg)[0]
    full_st, kf = one_run(cfg, tmp_path / "full")
    root = tmp_path / "resumed"
    out = run_one(spec, str(root), _stop_after_segments=2)
    assert out["status"] == "interrupted"
    out = run_one(spec, str(root))
    assert out["resumed"] and not out["skipped"]
    st = Store(root)
    a, b = full_st.arrays(kf), st.arrays(key)
    assert set(a) == set(b)
    for name in a:
        assert np.array_equal(a[name], b[name]), name
    ra, rb = full_st.record(kf), st.record(key)
    assert ra["records"] == rb["records"] and ra["paper"] == rb["paper"]
    # segmentation changes no update: the one-segment run has the same states and losses
    one_st, k1 = one_run(tiny_cfg(updates=40, every=5, checkpoint=1000), tmp_path / "one")
    c = one_st.arrays(k1)
    assert np.array_equal(c["loss"], a["loss"]) and np.array_equal(c["a"], a["a"])
    assert np.array_equal(c["G"], a["G"])
    np.testing.assert_allclose(c["t"], a["t"], rtol=1e-14, atol=0)


def _brute_prefix(ell, n, t, snap_n, delta):
    k = 0
    while k + 1 < len(ell) and abs(ell[k + 1] - ell[0]) <= delta:
        k += 1
    iP = max(i for i in range(len(snap_n)) if snap_n[i] <= n[k])
    return k, iP


@pytest.mark.parametrize("rank", [1, 2])
def test_measure_against_brute_force(tmp_path, rank):
    teacher = None
    if rank == 2:
        teacher = {"label": "h_3", "link": "h3", "rank": 2, "kappa": [1.0, 0.6],
                   "normalize": "second_moment"}
    cfg = tiny_cfg(updates=70, every=7, early=(66,), teacher=teacher)
    st, k = one_run(cfg, tmp_path / "st")
    rec, arrs = st.record(k), st.arrays(k)
    m = R._m_swiglu_paper(rec, arrs)
    S, T = R._build(rec)
    VY = T.variance
    ell = [2.0 * float(L) / VY for L in arrs["loss"]]
    n, t, sn = list(arrs["n"]), list(arrs["t"]), list(arrs["snap_n"])

    def diag(i):
        return sw.paper_diagnostics(S, params_from(S, arrs, i), T, T.subspace)

    d0 = diag(0)
    assert m["l_0"] == pytest.approx(ell[0], rel=1e-15)
    assert m["A_top_0"] == pytest.approx(d0["A_top"], abs=1e-12)
    assert m["R_0"] == pytest.approx(d0["R"], abs=1e-12)
    for tag, delta in (("", 1e-3), ("table4:", 1e-4)):
        kk, iP = _brute_prefix(ell, n, t, sn, delta)
        dP = diag(iP)
        assert m[tag + "t_P"] == t[n.index(sn[iP])] and m[tag + "l_P"] == ell[n.index(sn[iP])]
        assert m[tag + "A_top_P"] == pytest.approx(dP["A_top"], abs=1e-12)
        assert m[tag + "R_P"] == pytest.approx(dP["R"], abs=1e-12)
        if rank == 1:
            assert m[tag + "A_min_P"] == "--"
        else:
            assert m[tag + "A_min_P"] == pytest.approx(dP["A_min"], abs=1e-12)
        if not tag:
            assert m["t_prefix"] == t[kk]
    assert m["status"] == "censored" and m["t_f"] == t[-1] and m["l_f"] == ell[-1]
    assert m["table5:l_f"] == ell[-1] and m["t_D"] == float(arrs["snap_t"][-1]) == t[-1]
    dD = diag(len(sn) - 1)
    assert m["A_top_D"] == pytest.approx(dD["A_top"], abs=1e-12)
    assert m["R_D"] == pytest.approx(dD["R"], abs=1e-12)
    # Figure 24's quantities at update 66 (a snapshot of this run's grid)
    f = R._m_figure24(rec, arrs)
    i66 = sn.index(66)
    p = params_from(S, arrs, i66)
    Mo = S.family.moments(p, T)
    G = Mo.Phi - np.outer(Mo.phibar, Mo.phibar)
    b = Mo.Yphi - Mo.phibar * T.mean
    G = 0.5 * (G + G.T)
    Dh = np.diag(1.0 / np.sqrt(np.diag(G)))
    legacy = (VY - (Dh @ b) @ np.linalg.inv(Dh @ G @ Dh + R.LEGACY_RIDGE * np.eye(S.m))
              @ (Dh @ b)) / VY
    assert f["risk_legacy"] == pytest.approx(legacy, abs=1e-10)
    assert f["risk"] == pytest.approx(diag(i66)["R"], abs=1e-12)
    assert f["t"] == t[n.index(66)] and f["l_move"] == abs(ell[n.index(66)] - ell[0])
    # Tables 6-7
    g = R._m_swiglu_gains(rec, arrs)
    assert g["dR"] == m["R_0"] - m["R_P"]
    if rec["records"][0]["resolved"] and rec["records"][_brute_prefix(ell, n, t, sn, 1e-3)[1]]["resolved"]:
        assert g["dA_top"] == g["dA"] == m["A_top_P"] - m["A_top_0"]


def test_loss_stop_and_failure_statuses(tmp_path):
    """ℓ_stop reached: "loss stop" and D = the stopping update; a divergent fixed step:
    "failure", l_f "failed" and Table 5's diagnostics omitted."""
    cfg = tiny_cfg(updates=200, every=10)
    cfg["train"]["loss_target"] = 0.9995
    st, k = one_run(cfg, tmp_path / "a")
    m = R._m_swiglu_paper(st.record(k), st.arrays(k))
    assert m["status"] == "loss stop" and m["l_f"] <= 0.9995 and m["t_D"] == m["t_f"]
    cfg = tiny_cfg(updates=60, every=10)
    cfg["train"].update(dt=200.0, explode=2.0)
    st, k = one_run(cfg, tmp_path / "b")
    m = R._m_swiglu_paper(st.record(k), st.arrays(k))
    assert m["status"] == "failure" and m["l_f"] == "failed"
    assert m["t_D"] == m["A_top_D"] == m["R_D"] == "omitted"
    assert isinstance(m["table5:l_f"], float)


def test_compare_reads_the_section_prefixed_column():
    pv = {"table3": {"statistic": "single run", "cells": [
              {"row": "x (0)", "column": "t_P", "paper": 10.0, "digits": 1,
               "tolerance": {"rel": 0.1}}]},
          "table4": {"statistic": "single run", "cells": [
              {"row": "x (0)", "column": "t_P", "paper": 5.0, "digits": 1,
               "tolerance": {"rel": 0.1}},
              {"row": "x (0)", "column": "l_0", "paper": 1.0, "digits": 6,
               "tolerance": {"abs": 1e-3}}]}}
    cells = R.compare("table3", {"x (0)": [{"t_P": 10.0, "table4:t_P": 5.0, "l_0": 1.0}]}, pv)
    assert [c["popdyn"] for c in cells] == [10.0, 5.0, 1.0]
    assert all(c["verdict"] == "matches" for c in cells)


def test_gate_geometry_accepts_the_biased_student():
    from popdyn.diagnostics import gate_geometry

    S = SwiGLUStudent(4, 5, biases=True)
    p = S.init(3, 0.7, convention="paper")
    U = np.eye(4)[:1]
    g1 = gate_geometry(p, U)
    g0 = gate_geometry(sw.SwiGLUParams(p.a, p.G, p.V), U)
    assert g1.as_dict() == g0.as_dict()


def test_cli_reproduce_table3_writes_cells(tmp_path, monkeypatch):
    """`popdyn reproduce table3 --teachers "Smoke r=1" --seeds 1 --json F` on the smoke cut to
    30 updates: every paper cell of that row, each with exactly the keys of a cell."""
    real = R._configs

    def tiny(name, seeds, teachers=None):
        cfgs = real(name, seeds, teachers)
        for cfg in cfgs:
            cfg["train"]["max_updates"] = 30
            cfg["schedule"] = {"every": 10, "early": []}
        return cfgs

    monkeypatch.setattr(R, "_configs", tiny)
    from popdyn.cli import main

    out = tmp_path / "cells.json"
    rc = main(["reproduce", "table3", "--teachers", "Smoke r=1", "--seeds", "1", "--store",
               str(tmp_path / "st"), "--workers", "1", "--quiet", "--json", str(out)])
    assert rc == 0
    cells = json.loads(out.read_text())
    pv = R.paper_values("table3")
    want = sum(1 for s in pv.values() for c in s["cells"] if c["row"] == "Smoke r=1 (0)")
    assert len(cells) == want == 27
    for c in cells:
        assert tuple(c) == CELL_KEYS and c["row"] == "Smoke r=1 (0)"
        assert c["popdyn"] is not None, c
    byk = {(c["experiment"], c["column"]): c for c in cells}
    assert byk[("table3", "A_min_0")]["popdyn"] == "--"
    assert byk[("table3", "A_min_0")]["verdict"] == "matches"
    assert byk[("table5", "status")]["popdyn"] == "censored"


def test_paper_draw_layout_enters_the_run_key():
    """A paper-convention run's key carries the draw layout (so a store written with another
    layout is never reused); other runs' keys are the plain hash of their spec."""
    from popdyn import __version__
    from popdyn.experiments.runner import spec_key
    from popdyn.experiments.store import run_key

    spec = C.expand(tiny_cfg())[0]
    assert spec["init"]["convention"] == "paper"
    plain = {k: v for k, v in spec.items() if k != "order"}
    assert spec_key(spec) != run_key(plain, __version__)
    drawn = {**plain, "init": {**plain["init"], "draw": sw.PAPER_DRAW}}
    assert spec_key(spec) == run_key(drawn, __version__)
    other = copy.deepcopy(spec)
    other["init"]["convention"] = "norm"
    assert spec_key(other) == run_key({k: v for k, v in other.items() if k != "order"},
                                      __version__)
