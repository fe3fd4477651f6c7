"""proofs_checks.landscape_checks: decision logic of skip_benign on a tiny census
(teacher pair_acute, k = 2, widths 2..4, one or two starts).  direction_count and teacher_span on
their quick census are checked in test_checks.py, from the ``--all --quick`` run."""
from types import SimpleNamespace

import proofs_checks as pc
from proofs_checks import landscape_checks as lc


def test_skip_benign_is_undecided_without_certify(monkeypatch):
    """Without certify.critical_point every minimum is 'uncertified' and the verdict is
    undecided, never pass (even when no spurious candidate was found)."""
    monkeypatch.setattr(lc, "_critical_point_function", lambda: None)
    v = pc.run_check("skip_benign", teachers=("pair_acute",), seeds=(0,))
    assert v.verdict == "undecided"
    assert any(lc.UNAVAILABLE in n for n in v.notes)
    assert all(p.verdict == "undecided" for p in v.parts if p.role == "claim")


def test_skip_benign_decides_with_a_certifier(monkeypatch):
    """With a certifier the census decides: pass when no candidate remains; a certified spurious
    strict minimum fails it (a planted candidate)."""
    calls = []

    def fake(student, params, teacher, *, radius=None, prec=128):
        calls.append(student.m)
        return SimpleNamespace(verdict="strict_local_min", loss=SimpleNamespace(lo=1e-3, hi=2e-3),
                               hessian_eigs=[SimpleNamespace(lo=0.1, hi=0.2)], radius=1e-8,
                               reason="fake")

    monkeypatch.setattr(lc, "_critical_point_function", lambda: fake)
    v = pc.run_check("skip_benign", teachers=("pair_acute",), seeds=(0, 1))
    rows = lc.census("pair_acute", d=2, widths=[2], seeds=(0, 1), scale=1.0, certify=False)[0]
    assert rows[0]["starts"] == 2 and rows[0]["kinds"]["global_min"] >= 1
    assert v.verdict == "pass", v.report()
    assert calls                                   # the global minima went to the certifier
    real = lc._is_candidate
    monkeypatch.setattr(lc, "_is_candidate", lambda cp, tol: True)      # plant candidates
    v2 = pc.run_check("skip_benign", teachers=("pair_acute",), seeds=(0,))
    monkeypatch.setattr(lc, "_is_candidate", real)
    assert v2.verdict == "fail" and v2.bracket[0] >= 1
