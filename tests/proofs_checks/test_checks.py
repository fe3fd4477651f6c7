"""proofs_checks: the framework (verdicts, decision rules, registry, CLI) and the first checks.

``popdyn check --all --quick`` runs here through :func:`proofs_checks.cli.main`.  Its time budget
(under two minutes on two cores) is measured by benchmarks/bench_checks.py, not here:
a timed test fails on a loaded machine and passes on a fast one.
"""
import io
import json
import math

import pytest

import proofs_checks
from proofs_checks import Verdict, decide, get_check, make_verdict, run_check, summary_verdict
from proofs_checks.cli import main

# its module-scoped fixture is expensive: the module runs on one xdist worker (--dist loadfile in
# pyproject.toml), so the fixture is built once; the group mark states the same intent for
# --dist loadgroup
pytestmark = pytest.mark.xdist_group("all_quick")

EXPECTED = {"reaction_transport", "balancedness", "gauge_separation", "ownership"}


@pytest.fixture(scope="module")
def all_quick(tmp_path_factory):
    import tempfile

    out, err = io.StringIO(), io.StringIO()
    path = tmp_path_factory.mktemp("checks") / "verdicts.json"
    scratch = tmp_path_factory.mktemp("scratch")       # the checks' temporary directory
    old, tempfile.tempdir = tempfile.tempdir, str(scratch)
    try:
        rc = main(["--all", "--quick", "--json", str(path)], out=out, err=err)
    finally:
        tempfile.tempdir = old
    left = sorted(p.name for p in scratch.iterdir())
    return rc, out.getvalue(), err.getvalue(), json.loads(path.read_text()), left


def test_all_quick_runs_and_reports(all_quick):
    rc, out, err, doc, left = all_quick
    assert rc == 0, err
    assert left == [], f"temporary files left behind: {left}"
    assert "np.float64(" not in out and "np.int64(" not in out
    # a composite verdict with rigorous and numerical claims says how many are rigorous
    line = next(ln for ln in out.splitlines() if ln.startswith("  gauge_separation "))
    gs = next(d["verdict"] for d in doc if d["name"] == "gauge_separation")
    claims = [p for p in gs["parts"] if p["role"] == "claim"]
    n_rig = sum(p["provenance"] == "rigorous" for p in claims)
    if 0 < n_rig < len(claims):
        assert f"(numerical: {n_rig} of {len(claims)} claims rigorous)" in line
    assert "summary (quick settings" in out
    for name in EXPECTED:
        assert name in out
    assert {d["name"] for d in doc} == EXPECTED | {"plateau_alignment", "plateau_alignment_prefix",
                                                   "linear_target_phases",
                                                   "weight_decay_landscape",
                                                   "skip_empirical_transfer",
                                                   "skip_spurious_minima",
                                                   "skip_benign", "direction_count",
                                                   "teacher_span", "learnability"}
    for d in doc:
        assert not d["error"]
        v = d["verdict"]
        assert v["verdict"] in ("pass", "fail", "undecided")
        assert v["settings"]["preset"] == "quick"
        assert v["provenance"] in ("rigorous", "numerical")
        assert len(v["bracket"]) == 2 and v["bracket"][0] <= v["bracket"][1]
        assert v["parts"], "every first check is composite"


def test_all_quick_verdicts(all_quick):
    """The identities and the declared regimes pass; the controls are reported as controls."""
    _, out, _, doc, _ = all_quick
    by = {d["name"]: d["verdict"] for d in doc}
    for name in EXPECTED:
        assert by[name]["verdict"] == "pass", by[name]
    assert by["skip_spurious_minima"]["verdict"] == "pass"          # rigorous
    assert by["skip_spurious_minima"]["provenance"] == "rigorous"
    gs = {p["name"]: p for p in by["gauge_separation"]["parts"]}
    assert gs["ratio/small-init"]["role"] == "control"
    assert gs["scaling/large"]["role"] == "control"
    assert gs["ratio/small-init"]["verdict"] == "fail"   # Θ(D), not Θ(D²): reported honestly
    assert gs["ratio/large-imbalance"]["role"] == "claim"
    # every claim regime is decided on rigorous brackets (the stiff opposite gauges
    # through the verified slow-manifold tube), every time bracket behind it tagged rigorous
    for name in ("scaling/small-init", "ratio/large-imbalance"):
        assert gs[name]["provenance"] == "rigorous", gs[name]["provenance"]
        pts = gs[name]["settings"]["points"]
        assert pts and all(q[k]["provenance"] == "rigorous" for q in pts
                           for k in ("T_favorable", "T_opposite"))
    # the printed report shows the ratio for each gauge value and the exponent bracket per regime
    assert "R = T_opp/T_fav" in out and "tail exponent" in out
    assert "(control: reported, not part of the verdict)" in out


def test_quick_direction_count_and_teacher_span(all_quick):
    """direction_count and teacher_span (proofs_checks.landscape_checks) on their tiny
    quick census (teacher pair_acute, k = 2, one start; settings checked), read from the
    ``--all --quick`` run instead of running the two checks a second time."""
    from proofs_checks import landscape_checks as lc

    by = {d["name"]: d["verdict"] for d in all_quick[3]}
    v = by["direction_count"]
    assert v["settings"]["teachers"] == ["pair_acute"] and v["settings"]["seeds"] == [0]
    assert v["verdict"] in ("pass", "fail") and v["bracket"][0] >= 1
    assert v["bracket"][1] <= 4 or v["verdict"] == "fail"
    v = by["teacher_span"]
    assert v["settings"]["teachers"] == ["pair_acute"] and v["settings"]["seeds"] == [0]
    assert v["settings"]["dims"] == [3]
    claims = [p for p in v["parts"] if p["role"] == "claim"]
    assert claims and v["verdict"] in proofs_checks.VERDICTS
    T = lc.make_teacher("pair_acute", 3)
    assert all(abs(x) <= 1e-8 for x in T.U[:, 2])


def test_decide_rules():
    assert decide("at_most", 0.0, 1e-13, 1e-12) == ("pass", pytest.approx(1e-12 - 1e-13))
    assert decide("at_most", 2e-12, 3e-12, 1e-12)[0] == "fail"
    assert decide("at_most", 0.0, 3e-12, 1e-12)[0] == "undecided"
    assert decide("at_least", 1.5, 2.0, 1.0) == ("pass", 0.5)
    assert decide("at_least", 0.5, 0.7, 1.0)[0] == "fail"
    assert decide("within", 1.9, 2.1, 2.0, 0.25) == ("pass", pytest.approx(0.15))
    assert decide("within", 0.9, 1.1, 2.0, 0.25)[0] == "fail"
    assert decide("within", 2.1, 2.4, 2.0, 0.25)[0] == "undecided"
    assert decide("contains", 1.0, 2.0, 1.5) == ("pass", 0.5)
    assert decide("contains", 1.0, 2.0, 2.5) == ("fail", -0.5)
    assert decide("at_most", math.nan, 1.0, 2.0)[0] == "undecided"
    with pytest.raises(ValueError, match="`kind`"):
        decide("below", 0, 1, 2)
    with pytest.raises(ValueError, match="`tol`"):
        decide("within", 0, 1, 2)


def test_verdict_validation_and_combination():
    with pytest.raises(ValueError, match="`verdict`"):
        Verdict("x", "maybe", "s", 1.0, (0, 1), "numerical", 0.0)
    with pytest.raises(ValueError, match="`provenance`"):
        Verdict("x", "pass", "s", 1.0, (0, 1), "approximate", 0.0)
    with pytest.raises(ValueError, match="`bracket`"):
        Verdict("x", "pass", "s", 1.0, (2, 1), "numerical", 0.0)
    a = make_verdict("a", "s", kind="at_most", constant=1.0, bracket=(0, 0.5), provenance="rigorous")
    b = make_verdict("b", "s", kind="at_most", constant=1.0, bracket=(0, 2.0), provenance="numerical",
                     role="control")
    c = make_verdict("c", "s", kind="at_most", constant=1.0, bracket=(0.5, 2.0), provenance="numerical")
    assert summary_verdict("t", "s", [a, b]).verdict == "pass"        # the control is ignored
    assert summary_verdict("t", "s", [a, c]).verdict == "undecided"
    s = summary_verdict("t", "s", [a, b, c])
    assert s.bracket == (0.5, 2.0) and s.provenance == "numerical"
    rep = s.report()
    assert "[UNDECIDED] t" in rep and "[PASS] a" in rep and "control" in rep
    assert json.loads(s.to_json())["parts"][1]["role"] == "control"


def test_registry():
    assert EXPECTED <= set(proofs_checks.CHECKS)
    with pytest.raises(ValueError, match="ownersip|ownership"):
        get_check("ownersip")
    with pytest.raises(ValueError, match="unknown setting"):
        run_check("balancedness", quick=True, stepsize=0.1)
    chk = get_check("balancedness")
    assert set(chk.quick) == set(chk.full)
    with pytest.raises(ValueError, match="already registered"):
        proofs_checks.register("balancedness", description="", quick={}, full={})(lambda: None)


def test_cli_usage_errors_and_list():
    out, err = io.StringIO(), io.StringIO()
    assert main(["--list"], out=out, err=err) == 0
    assert all(n in out.getvalue() for n in EXPECTED)
    assert main([], out=io.StringIO(), err=err) == 2
    err = io.StringIO()
    assert main(["no_such_check"], out=io.StringIO(), err=err) == 2
    assert "no check named" in err.getvalue()
    assert main(["--all", "ownership"], out=io.StringIO(), err=io.StringIO()) == 2


def test_cli_crashing_check_is_reported_with_status_1(monkeypatch):
    from proofs_checks import _core

    def boom(**kw):
        raise RuntimeError("kaboom")

    monkeypatch.setitem(_core.CHECKS, "boom", _core.Check("boom", boom, "crashes", {}, {}))
    out, err = io.StringIO(), io.StringIO()
    assert main(["boom"], out=out, err=err) == 1
    assert "[ERROR] boom: RuntimeError: kaboom" in out.getvalue() and "Traceback" in err.getvalue()


def test_cli_strict_status(monkeypatch):
    from proofs_checks import _core

    def failing(**kw):
        return make_verdict("failing", "s", kind="at_most", constant=0.0, bracket=(1.0, 2.0),
                            provenance="numerical")

    monkeypatch.setitem(_core.CHECKS, "failing", _core.Check("failing", failing, "fails", {}, {}))
    assert main(["failing"], out=io.StringIO(), err=io.StringIO()) == 0     # a fail is a result
    assert main(["failing", "--strict"], out=io.StringIO(), err=io.StringIO()) == 3
