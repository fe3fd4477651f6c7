"""plateau_alignment under the paper's protocol (Kumar, arXiv 2609.39408, App. A): a tiny
end-to-end run of `reproduce("plateau_alignment")` (d = 5, m = 6, 300 persistent-Armijo updates,
one seed per teacher; init scale 0.05 -- the largest in-family scale -- and h0 = 0.5 so that the
plateau ends within the horizon), checked against a brute-force plateau endpoint recomputed from
the stored every-update MSE and against certify.bounded_refit / certify.alignment recomputed at
the stored states 0 and E.  A Table 1 run outside the family (h_2) shares the store: a control."""
import math

import numpy as np
import pytest

import certify
from popdyn.diagnostics import bounded_refit, refit_gain
from popdyn.experiments import Store
from popdyn.experiments import reproduce as R
from popdyn.experiments.runner import params_from
from proofs_checks.plateau_alignment import check_store_paper

pytestmark = pytest.mark.xdist_group("plateau_paper")

TEACHERS = ["g_{1/2}", "h_3"]


def _tiny(real):
    def tiny(name, seeds, teachers=None):
        cfgs = real(name, seeds, teachers)
        for cfg in cfgs:
            cfg["student"].update(d=5, m=6)
            cfg["train"].update(max_updates=300, h0=0.5)
            cfg["init"]["scale"] = 0.05
        return cfgs
    return tiny


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setattr(R, "_configs", _tiny(R._configs))
    root = tmp_path_factory.mktemp("pa") / "st"
    try:
        res = R.reproduce("plateau_alignment", seeds=1, teachers=TEACHERS, store=root, workers=1)
        ctl = R.reproduce("table1", seeds=1, teachers=["h_2"], store=root, workers=1)
    finally:
        mp.undo()
    st = Store(root)
    (kc,) = [k for k in st.keys() if st.record(k)["label"] == "h_2"]
    return res, st, kc


def _band_endpoint(mse):
    """E of the baseline rule by brute force: the last update before the first one whose MSE
    leaves [0.95, 1.05] or whose running max/min exceeds 1.05 (None: censored)."""
    for n in range(1, len(mse)):
        w = mse[:n + 1]
        if not (0.95 <= mse[n] <= 1.05) or w.max() / w.min() > 1.05:
            return n - 1
    return None


def test_endpoint_brackets_and_roles(out):
    res, st, kc = out
    v = check_store_paper(st, settings={"store": "tiny"})    # the claims and the h_2 control
    assert {p.name: p.role for p in v.parts} == {
        **{f"{c} {t} seed 1": "claim" for c in ("ΔA_min", "ΔR") for t in TEACHERS},
        "ΔA_min h_2 seed 1": "control", "ΔR h_2 seed 1": "control"}
    assert {p.name: p.bracket for p in res["verdict"].parts} == {
        p.name: p.bracket for p in v.parts if p.role == "claim"}
    byname = {p.name: p for p in v.parts}
    for k in st.keys():
        rec, arrs = st.record(k), st.arrays(k)
        mse = 2.0 * np.asarray(arrs["loss"])
        E = _band_endpoint(mse)
        pe = rec["plateau_event"]
        assert E is not None and 0 < E < 300, (rec["label"], E)   # the rule fires in the run
        assert pe["end_n"] == E and not pe["censored"]
        iE = int(np.flatnonzero(np.asarray(arrs["snap_n"]) == E)[0])
        tag = f"{rec['label']} seed {rec['seed']}"
        S, T = R._build(rec)
        p0, pE = params_from(S, arrs, 0), params_from(S, arrs, iE)
        r0, rE = certify.bounded_refit(S, p0, T), certify.bounded_refit(S, pE, T)
        pR = byname[f"ΔR {tag}"]
        assert pR.bracket == (r0.risk.lo - rE.risk.hi - 1e-5, r0.risk.hi - rE.risk.lo)
        gf = refit_gain(bounded_refit(S, p0, T), bounded_refit(S, pE, T))
        assert pR.bracket[0] <= gf + 1e-9 and gf <= pR.bracket[1] + 1e-9
        assert f"E = update {E}" in pR.statement
        a0 = certify.alignment(S, p0, T.subspace)
        aE = certify.alignment(S, pE, T.subspace)
        pA = byname[f"ΔA_min {tag}"]
        assert pA.bracket == (aE.a_min.lo - a0.a_min.hi, aE.a_min.hi - a0.a_min.lo)
        for p in (pA, pR):
            lo, hi = p.bracket
            assert p.verdict == ("pass" if lo >= p.constant else
                                 "fail" if hi < p.constant else "undecided")
            assert p.margin == (hi if p.verdict == "fail" else lo) - p.constant


def test_hypotheses_and_rendering(out):
    res, _, _ = out
    v = res["verdict"]
    assert v.hypotheses["status"] == "outside"
    head = v.report().splitlines()[0]
    assert "outside the theorem's hypotheses" in head
    rep = v.hypotheses["settings"][0]["report"]
    st_ = {h["name"]: h["status"] for h in rep["hypotheses"]}
    assert st_["teacher"] == "met" and st_["initialization"] == "met"
    assert st_["student"] == "met" and st_["fixed step"] == "undecided"
    assert st_["m"] == st_["d"] == st_["s"] == st_["h"] == "not met"
    text = res["text"]
    assert "**Verdict:" in text and "| g_{1/2} | ΔR ≥ 0.399 | claim |" in text
    assert "| h_3 | ΔA_min ≥ 0.5 | claim |" in text
    assert any("baseline plateau rule" in n or "App. A" in n for n in v.notes)
    assert math.isfinite(v.margin) and v.provenance in ("rigorous", "numerical")
