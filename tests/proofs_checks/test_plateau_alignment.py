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
    return run_check("plateau_alignment", quick=True, d=4, m=6, seeds=(0, 1), max_updates=300)


def test_registered_with_presets():
    chk = get_check("plateau_alignment")
    assert chk.quick["budget"] == "same_budget" and chk.full["d"] == 16 and chk.full["m"] == 64
    assert len(chk.full["seeds"]) == 20


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
        run_check("plateau_alignment", link="h3")
