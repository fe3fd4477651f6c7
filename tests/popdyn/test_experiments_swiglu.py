"""The experiment pipeline for SwiGLU students and gated (multi-index) teachers: diagnostics,
configs, sweeps into a store, resume, tables, figures; the shipped configs validate.

Tiny configurations (d = 4, m = 3, a dozen updates) so the file runs in seconds.
"""
import json

import numpy as np
import pytest

import popdyn
from popdyn import config as C
from popdyn._paths import data_path
from popdyn.cli import main
from popdyn.diagnostics import agop, alignment, diagnose, gate_geometry, recorder, refit_risk
from popdyn.experiments import Store, run_one, sweep, table
from popdyn.experiments.runner import build, spec_key

from _stores import same_run

# its module-scoped fixture is expensive: keep the module on one xdist worker
# (--dist loadfile in pyproject.toml), so the fixture is built once
pytestmark = pytest.mark.xdist_group("swiglu_stores")

SWIGLU = """
name = "tiny_swiglu"
[[teachers]]
link = "h3"
rank = 1
[[teachers]]
label = "GELU(s)t"
kind = "gated"
gate = "gelu"
[student]
activation = "swiglu"
d = 4
m = 3
[init]
scale = 0.3
seeds = [0, 1]
[train]
method = "{method}"
lr = 0.2
eps = 0.1
head_lr_mult = 0.01
max_updates = {updates}
[schedule]
every = 3
early = [1]
[diagnostics]
kinds = ["unrestricted", "same_budget"]
certify_kinds = ["unrestricted"]
[store]
checkpoint_every = 6
"""

GATED = """
name = "tiny_gated"
[[teachers]]
label = "ReLU(s)t"
kind = "gated"
gate = "relu"
normalize = true
[[teachers]]
label = "rotation"
kind = "gated"
gate = "rotation"
U = [[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
[student]
d = 4
m = 3
[init]
scale = 0.2
seeds = [0, 1]
[train]
method = "{method}"
lr = 0.2
eps = 0.1
max_updates = {updates}
[schedule]
every = 3
early = [1]
[diagnostics]
kinds = ["unrestricted", "same_budget", "projected"]
certify_kinds = ["same_budget"]
[store]
checkpoint_every = 6
"""


def _cfg(text, method="flow", updates=12):
    text = text.format(method=method, updates=updates)
    if method != "flow":           # eps is the flow's tolerance: the other methods refuse it
        text = text.replace("eps = 0.1\n", "")
    return C.loads(text)


# ---------------------------------------------------------------------------- diagnostics
def test_diagnose_swiglu_agrees_with_public_functions():
    T = popdyn.Teacher.additive("h3+0.3h2", np.eye(4)[:2], [0.8, 0.6])
    S = popdyn.SwiGLUStudent(4, 3)
    p = S.init(1, 0.5, T)
    D = diagnose(S, p, T, kinds=("unrestricted", "same_budget", "bounded"), budget=0.7,
                 geometry=True)
    A = agop(S, p)
    np.testing.assert_allclose(D.agop, A, rtol=1e-12, atol=1e-15 * np.abs(A).max())
    al = alignment(A, T.subspace)
    assert D.alignment.a_min == pytest.approx(al.a_min, abs=1e-12)
    for kind, b in (("unrestricted", None), ("same_budget", None), ("bounded", 0.7)):
        assert D.refits[kind].risk == refit_risk(S, p, T, kind, b).risk, kind
    rec = D.as_record()
    g = gate_geometry(p, T)
    for k, v in g.as_dict().items():
        assert rec[k] == v
    assert "hist_subspace" not in rec
    with pytest.raises(ValueError, match="not defined for SwiGLU"):
        diagnose(S, p, T, kinds=("projected",))


def test_diagnose_gated_teacher_ordinary_student():
    T = popdyn.Teacher.gated("tanh", np.eye(4)[:2])
    S = popdyn.Student(d=4, m=3)
    p = S.init(0, 0.4, T)
    D = diagnose(S, p, T, kinds=("unrestricted", "same_budget", "bounded", "projected"),
                 budget=0.5, geometry=True)
    np.testing.assert_array_equal(D.agop, agop(S, p))
    for kind, b in (("unrestricted", None), ("same_budget", None), ("bounded", 0.5),
                    ("projected", 0.5)):
        assert D.refits[kind].risk == refit_risk(S, p, T, kind, b).risk, kind
    assert "hist_subspace" in D.as_record()
    tr = popdyn.train(S, p, T, method="gd", lr=0.1, max_updates=3, recorder=recorder())
    assert len(tr.records) == len(tr)
    assert tr.records[-1]["normalized_loss"] == pytest.approx(tr.normalized_loss[-1], rel=1e-14)


# ---------------------------------------------------------------------------- sweeps
@pytest.fixture(scope="module")
def swiglu_store(tmp_path_factory):
    d = tmp_path_factory.mktemp("swiglu") / "s"
    res = sweep(_cfg(SWIGLU), d, workers=1, progress=False)
    assert res["ran"] == 4
    return d


@pytest.fixture(scope="module")
def gated_store(tmp_path_factory):
    d = tmp_path_factory.mktemp("gated") / "s"
    res = sweep(_cfg(GATED, method="gd"), d, workers=1, progress=False)
    assert res["ran"] == 4
    return d


EPS = float(np.finfo(float).eps)


def test_swiglu_store_contents(swiglu_store):
    st = Store(swiglu_store)
    for k in st.keys():
        rec = st.record(k)
        arr = st.arrays(k)
        assert {"a", "G", "V", "c"} <= set(arr) and "W" not in arr
        assert arr["G"].shape == arr["V"].shape == (len(arr["snap_n"]), 3, 4)
        # snapshots sit at the exactly fitted intercept: the stored state reproduces the loss
        S = popdyn.SwiGLUStudent(4, 3)
        spec = rec["spec"]
        _, T, _, _, _, _ = build(spec)
        i = len(arr["snap_n"]) - 1
        p = popdyn.SwiGLUParams(arr["a"][i], arr["G"][i], arr["V"][i], float(arr["c"][i]))
        assert popdyn.population_loss(S, p, T) == pytest.approx(arr["loss"][-1], rel=1e-12)
        assert "gate_weighted_angle" in rec["records"][0]
        for name in ("init", "plateau"):
            c = rec["certified"][name]
            assert c["a_min"]["lo"] <= c["a_min"]["hi"] and "loss" in c
            # certified SwiGLU refits are recorded (rigorous against the polynomial link and,
            # and, for the gated teacher, certify.swiglu_gated) and contain the float
            # refit of the checkpoint
            br = c["refit_unrestricted"]
            assert "refit_unrestricted_error" not in c
            assert br["provenance"] == "rigorous"
            # the float64 refit carries its own rounding (measured: 1 ulp below the rigorous
            # lower bound against GELU(s)t): 4 ulps of allowance on the float side
            fr = rec["checkpoints"][name]["refit_unrestricted"]
            assert br["lo"] - 4 * EPS * abs(br["lo"]) <= fr <= br["hi"] + 4 * EPS * abs(br["hi"])
        # readable without popdyn: plain JSON
        json.loads((st.run_dir(k) / "record.json").read_text())


def test_gated_store_contents(gated_store):
    st = Store(gated_store)
    labels = set()
    for k in st.keys():
        rec = st.record(k)
        labels.add(rec["label"])
        assert {"a", "W", "b", "c"} <= set(st.arrays(k))
        assert "refit_projected" in rec["checkpoints"]["init"]
        c = rec["certified"]["plateau"]
        # ridge students against gated teachers: rigorous refit and loss brackets (certify.gated)
        # containing the float refit of the checkpoint
        assert "a_min" in c and "refit_same_budget_error" not in c
        br = c["refit_same_budget"]
        assert br["provenance"] == "rigorous" and c["loss"]["provenance"] == "rigorous"
        assert br["lo"] <= rec["checkpoints"]["plateau"]["refit_same_budget"] <= br["hi"]
    assert labels == {"ReLU(s)t", "rotation"}


@pytest.mark.parametrize("text, method", [(SWIGLU, "flow"), (SWIGLU, "gd"), (GATED, "flow")])
def test_resume_is_identical(tmp_path, text, method):
    cfg = _cfg(text, method=method, updates=14)
    spec = C.expand(cfg)[-1]
    key = spec_key(spec)
    out = run_one(spec, str(tmp_path / "a"), _stop_after_segments=1)
    assert out["status"] == "interrupted"
    st = Store(tmp_path / "a")
    assert st.unfinished() == [key]
    out = run_one(spec, str(tmp_path / "a"))
    assert out["resumed"] and not (st.run_dir(key) / "checkpoint.npz").exists()
    run_one(spec, str(tmp_path / "b"))
    same_run(st, Store(tmp_path / "b"), key)
    assert st.record(key)["info"]["resumed"] is True


def test_worker_processes_identical(swiglu_store, tmp_path):
    """Two worker processes (fresh process history) give the same bits as the in-process sweep
    that ran after other SwiGLU computations (the SwiGLU engine's order warm start is reset at
    every segment)."""
    res = sweep(_cfg(SWIGLU), tmp_path / "w2", workers=2, progress=False)
    assert res["ran"] == 4
    for k in res["keys"]:
        same_run(Store(swiglu_store), Store(tmp_path / "w2"), k)
    assert table(swiglu_store, "csv") == table(tmp_path / "w2", "csv")


def test_tables(swiglu_store, gated_store):
    for store, labels in ((swiglu_store, ("h3 r=1", "GELU(s)t")),
                          (gated_store, ("ReLU(s)t", "rotation"))):
        md = table(store, "md")
        for lab in labels:
            assert f"| {lab} | 2 |" in md
        assert table(store, "md") == md
        csv = table(store, "csv")
        assert len(csv.strip().splitlines()) == 3
        assert table(store, "latex").startswith(r"\begin{table}")
    row = next(ln for ln in table(swiglu_store, "md").splitlines() if ln.startswith("| h3"))
    cells = row.split(" | ")
    assert cells[7].startswith("[") and cells[8].startswith("[")   # cert. ΔA_min and ΔR


def test_figures(swiglu_store, gated_store, tmp_path):
    pytest.importorskip("matplotlib")
    for store in (swiglu_store, gated_store):
        out = tmp_path / f"{store.parent.name}.png"
        assert main(["figure", "--store", str(store), "--out", str(out)]) == 0
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_show_and_ls(swiglu_store, capsys):
    assert main(["ls", "--store", str(swiglu_store)]) == 0
    key = capsys.readouterr().out.splitlines()[1].split()[0]
    assert main(["show", "--store", str(swiglu_store), key]) == 0
    out = capsys.readouterr().out
    assert "gate_w_angle" in out and "axes_covered" in out
    assert "plateau loss" in out and "refit_unrestricted" in out
    assert "refit_unrestricted_error" not in out


def test_popdyn_run_swiglu_config(swiglu_store, tmp_path, capsys):
    """`popdyn run` on a SwiGLU config: nothing recomputed on the same store, table and figure
    drawn, and no plateau_alignment family cohort added (the theorem concerns ReLU students)."""
    pytest.importorskip("matplotlib")
    cfg = tmp_path / "sw.toml"
    cfg.write_text(SWIGLU.format(method="flow", updates=12))
    out = tmp_path / "run.png"
    assert main(["run", str(cfg), "--store", str(swiglu_store), "--out", str(out),
                 "--workers", "1"]) == 0
    text = capsys.readouterr().out
    assert "0 computed" in text and "reported as controls (no cohort added)" in text
    assert "| GELU(s)t | 2 |" in text and out.exists()
    assert len(Store(swiglu_store).keys()) == 4


# ---------------------------------------------------------------------------- configs
@pytest.mark.parametrize("name", ["swiglu_rank1", "swiglu_rank_sweep", "baseline21"])
def test_shipped_configs_validate(name):
    cfg = C.load(data_path("configs", f"{name}.toml"))
    runs = C.expand(cfg)
    seen = {}
    for spec in runs:
        seen.setdefault((spec["teacher"]["label"], spec["setting"]), []).append(spec["init"]["seed"])
    if name == "swiglu_rank1":
        assert len(runs) == 80 and all(s == list(range(20)) for s in seen.values())
        assert [lab for lab, _ in seen] == ["h3", "h3+0.3h2", "ReLU", "tanh"]
    elif name == "swiglu_rank_sweep":
        assert len(runs) == 40 and all(s == list(range(10)) for s in seen.values())
        assert [lab for lab, _ in seen] == ["h2 r=2", "h2 r=4", "h2 r=8", "h2 r=16"]
    else:
        assert len(seen) == 21 and len(runs) == 21 * 50
    for spec in runs:                            # build every spec (nothing is run)
        student, teacher, p0, train, schedule, rec = build(spec)
        if name.startswith("swiglu"):
            assert isinstance(student, popdyn.SwiGLUStudent)
            assert train["head_lr_mult"] == 0.01 and train["method"] == "flow"
            assert (student.d, student.m) == ((16, 64) if name == "swiglu_rank1" else (64, 64))
            assert isinstance(p0, popdyn.SwiGLUParams)
        assert teacher.d == student.d
    if name == "baseline21":
        gated = [lab for lab, _ in seen if lab in ("st", "GELU(s)t", "tanh(s)t", "ReLU(s)t",
                                                    "rotation control")]
        assert len(gated) == 5


@pytest.mark.parametrize("student, match", [
    ('activation = "swiglu"\nd = 4\nm = 3\nbias = true', r"takes only d, m, intercept, clock and biases; \['bias'\]"),
    ('activation = "swiglu"\nd = 4\nm = 3\nscaling = "mean_field"\nnegative_slope = 0.1',
     r"\['negative_slope', 'scaling'\] apply to relu-family"),
    ('activation = "swiglu"\nd = 4\nm = 0', "`m`"),
    ('activation = "swiglu"\nd = 4\nm = 3\nintercpt = true', "Did you mean 'intercept'"),
    ('activation = "swigl"\nd = 4\nm = 3', "'swiglu' for a SwiGLU student"),
])
def test_bad_swiglu_student(student, match):
    text = f'[teacher]\nlink = "h2"\n[student]\n{student}\n[init]\nscale = 0.1\n'
    with pytest.raises(C.ConfigError, match=match):
        C.expand(C.loads(text))


@pytest.mark.parametrize("teacher, extra, match", [
    ('kind = "gated"\ngate = "gelo"', "", "unknown gate 'gelo'.*Did you mean 'gelu'"),
    ('kind = "gated"', "", "needs `gate`"),
    ('kind = "gated"\ngate = "id"\nrank = 3', "", "has rank 2"),
    ('kind = "gated"\ngate = "id"\nlink = "h2"', "", "does not take `link`"),
    ('kind = "gatd"\ngate = "id"', "", "Did you mean 'gated'"),
    ('link = "h2"\ngate = "id"', "", "does not take `gate`"),
    ('link = "h2"', '[diagnostics]\nkinds = ["projected"]\n', "not defined for SwiGLU"),
])
def test_bad_gated_and_swiglu_tables(teacher, extra, match):
    text = (f'[teacher]\n{teacher}\n[student]\nactivation = "swiglu"\nd = 4\nm = 3\n'
            f'[init]\nscale = 0.1\n{extra}')
    with pytest.raises(C.ConfigError, match=match):
        C.expand(C.loads(text))
