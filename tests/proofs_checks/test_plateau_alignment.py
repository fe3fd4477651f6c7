"""plateau_alignment: the check decides from certified brackets, never passes on an undecided
bracket, and reports out-of-family runs as controls."""
import math

import pytest

from popdyn import config as C
from popdyn.experiments import Store, sweep
from proofs_checks import get_check, run_check
from proofs_checks.plateau_alignment import check_store, family_config

# its module-scoped fixture is expensive: the module runs on one xdist worker (--dist loadfile in
# pyproject.toml), so the fixture is built once; the group mark states the same intent for
# --dist loadgroup
pytestmark = pytest.mark.xdist_group("plateau_quick")


@pytest.fixture(scope="module")
def verdict():
    return run_check("plateau_alignment_prefix", quick=True, d=4, m=6, seeds=(0, 1),
                     max_updates=300)


def test_registered_with_presets():
    chk = get_check("plateau_alignment_prefix")
    assert chk.quick["budget"] == "same_budget" and chk.full["d"] == 16 and chk.full["m"] == 64
    assert len(chk.full["seeds"]) == 20
    chk = get_check("plateau_alignment")           # the paper's protocol
    assert chk.quick["config"] == "paper_smoke"
    assert chk.full["config"] == "paper/plateau_alignment"


def test_verdict_structure(verdict):
    v = verdict
    assert v.verdict in ("pass", "fail", "undecided")
    claims = [p for p in v.parts if p.role == "claim"]
    assert len(claims) == 4                                  # ΔA and ΔR for each of two seeds
    assert {p.constant for p in claims} == {0.5, 0.399}
    for p in claims:
        lo, hi = p.bracket
        if p.verdict == "pass":
            assert lo >= p.constant
        if p.verdict == "fail":
            assert hi < p.constant
    assert "reading" in v.report() and "settings" in v.report()
    assert v.settings["preset"] == "quick" and v.settings["d"] == 4


def test_unresolved_is_never_pass(tmp_path):
    """A run without certified brackets gives (-inf, inf): undecided, not pass."""
    cfg = C.validate(family_config(d=4, m=4, seeds=(0,), max_updates=20))
    cfg["diagnostics"]["certify"] = False
    st = Store(tmp_path / "s")
    sweep(cfg, st, workers=1, progress=False)
    v = check_store(st)
    assert v.verdict == "undecided"
    claims = [p for p in v.parts if p.role == "claim"]
    assert claims and all(p.verdict == "undecided" for p in claims)
    assert all(math.isinf(p.bracket[0]) for p in claims)


def test_out_of_family_is_control(tmp_path):
    cfg = C.loads('[teacher]\nlink="h2"\nrank=1\n[student]\nd=4\nm=4\n[init]\nscale=0.01\n'
                  'seeds=[0]\n[train]\nmethod="gd"\nlr=0.5\nmax_updates=20\n[schedule]\nevery=2\n')
    st = Store(tmp_path / "s")
    sweep(cfg, st, workers=1, progress=False)
    v = check_store(st)
    assert v.verdict == "undecided"
    assert all(p.role == "control" for p in v.parts)
    assert "no stored run is in the declared family" in v.report()


def test_bad_family():
    with pytest.raises(ValueError, match="declared family"):
        run_check("plateau_alignment_prefix", link="h3")


# ------------------------------------------------------------------ Theorem 4.1 hypotheses report
PAPER_SPEC = {"teacher": {"link": "h3", "rank": 2, "label": "h3 r=2"},
              "student": {"d": 16, "m": 32, "activation": "relu", "bias": True,
                          "intercept": False, "scaling": "mean_field"},
              "init": {"scale": 1e-4, "seed": 1, "fit_intercept": False},
              "train": {"method": "gd", "lr": 0.05, "max_updates": 20000}}


def test_verdict_carries_hypotheses_report(verdict):
    """The quick cohort (d = 4, m = 6, s = 0.01, adaptive flow) is far outside App. C.1: the
    result says so on its verdict line and carries the report as plain data."""
    import json
    from proofs_checks.plateau_alignment import PlateauVerdict
    v = verdict
    assert isinstance(v, PlateauVerdict) and v.hypotheses["status"] == "outside"
    head = v.report().splitlines()[0]
    assert head.startswith(f"[{v.verdict.upper()}] plateau_alignment")    # the check's name
    assert "outside the theorem's hypotheses (m, d, s, h, horizon not met: m = 6 <" in head
    d = json.loads(v.to_json())
    rep = d["hypotheses"]["settings"][0]["report"]
    assert {h["name"]: h["status"] for h in rep["hypotheses"]}["fixed step"] == "not met"
    assert d["hypotheses"]["settings"][0]["runs"] == 2 and d["verdict"] == v.verdict


def test_with_hypotheses_keeps_the_verdict():
    """Attaching the report changes neither the verdict, its bracket and margin, nor its parts;
    the paper's baseline (d = 16, m = 32, s = 1e−4, h = 0.05) misses m, d, s, h (§5:
    "illustrative parameters, outside the theorem's sufficient prescriptions")."""
    from proofs_checks import make_verdict, summary_verdict
    from proofs_checks.plateau_alignment import with_hypotheses
    p = make_verdict("ΔA_min x", "s", kind="at_least", constant=0.5, bracket=(0.6, 0.7),
                     provenance="rigorous")
    v0 = summary_verdict("plateau_alignment", "stmt", [p], settings={"a": 1}, notes=["n"])
    v = with_hypotheses(v0, [(PAPER_SPEC, True)])
    for f in ("verdict", "bracket", "margin", "constant", "provenance", "parts", "settings",
              "statement", "kind"):
        assert getattr(v, f) == getattr(v0, f)
    assert v.notes[1:] == v0.notes and "Theorem 4.1" in v.notes[0]
    line = v.hypotheses["summary"]
    assert line.startswith("outside the theorem's hypotheses (m, d, s, h, horizon not met: "
                           "m = 32 < 7.38417e+12; d = 16 < 4.3967e+6")
    assert v.replace(elapsed=1.0).hypotheses == v.hypotheses       # run_check keeps it


# ------------------------------------------------------------------ the paper's protocol
def test_paper_protocol_check_runs_its_configuration():
    """`plateau_alignment` runs an embedded configuration of the paper's protocol (here
    paper_smoke reduced to one seed, d = 5, m = 6, 200 updates) and decides it with
    check_store_paper: one ΔA_min and one ΔR claim per seed, the settings and the hypotheses
    report recorded."""
    from proofs_checks.plateau_alignment import PlateauVerdict
    v = run_check("plateau_alignment", seeds=1, d=5, m=6, max_updates=200)
    assert isinstance(v, PlateauVerdict)
    claims = [p for p in v.parts if p.role == "claim"]
    assert len(claims) == 2 and {p.constant for p in claims} == {0.5, 0.399}
    assert v.settings["config"] == "paper_smoke" and v.settings["seeds"] == 1
    assert (v.settings["d"], v.settings["m"], v.settings["max_updates"]) == (5, 6, 200)
    assert v.hypotheses["status"] == "outside"
    (run,) = v.hypotheses["settings"]
    assert run["runs"] == 1


def test_paper_protocol_check_refuses_other_protocols():
    with pytest.raises(ValueError, match=r"`config` must be on the paper's protocol"):
        run_check("plateau_alignment", config="h3_rank1")
    with pytest.raises(ValueError, match=r"`seeds` must be a non-negative int"):
        run_check("plateau_alignment", seeds=-1)
    with pytest.raises(FileNotFoundError, match="Did you mean 'paper_smoke'"):
        run_check("plateau_alignment", config="paper_smok")


def test_theorem_student_is_the_ridge_relu_student():
    """Theorem 4.1's students are ReLU / leaky-ReLU students of the ridge family without a skip;
    a SwiGLU, skip or smooth student is outside it (its runs are controls)."""
    from proofs_checks.plateau_alignment import theorem_student

    assert theorem_student({})
    assert theorem_student({"activation": "leaky_relu", "negative_slope": 0.1})
    assert theorem_student({"family": "ridge", "activation": "relu", "skip": False})
    assert not theorem_student({"activation": "silu"})
    assert not theorem_student({"activation": "swiglu"})
    assert not theorem_student({"skip": True})
    assert not theorem_student({"family": "skip", "activation": "relu"})
    assert not theorem_student({"family": "l2head", "activation": "relu"})
