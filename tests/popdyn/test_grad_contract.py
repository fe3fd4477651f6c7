"""The accuracy contract of the gradient and an error estimate that is neither silent nor a false
alarm (:func:`popdyn.population_grad`, :func:`popdyn.loss_and_grad`, :mod:`popdyn.accuracy`).

References (independent of popdyn's moment code):

* data/refs/grad_contract_refs.json (data/_precompute/grad_contract_refs.py: tests/_mpref.py,
  pure mpmath plane quadrature at 32 digits, inputs as float64 hex): 20 erf students with
  |w|, |b| <= 5 in random and degenerate (parallel, antiparallel) geometry against h3,
  h3+0.3h2, relu and sin teachers -- the float gradient was 1.6e−10 to 2.1e−9 off at the default
  rtol 1e−10 with no warning before the contract (measured 11 of these 20 beyond 1e−10) --
  and 16 relu / leaky-relu students with one nearly affine unit (|w| = 1e−6, b = 0.3;
  |w| = 1e−3, b = 0.9) against h2, h3, h3+0.3h2 and tanh, whose exact losses used to be
  flagged ("estimated error 1.65" ... "3.93e+03");
* data/refs/engine_refs.json (66 cases, loss and gradient, tests/_mpref.py at 40 digits) and
  data/refs/tiny_refs.json (200 relu / leaky-relu students with tiny units, loss at 50 digits,
  tests/certify/_ref.py).

Both directions of the contract, per block of the gradient (a with c, W, b; the norm of
:func:`popdyn.population_grad`: the largest entry error against rtol × the block's largest
entry plus its rounding floor): a block beyond its target is warned; when every block (and the
loss) is within rtol/100 of the reference, no warning is allowed (warnings are errors there).
"""
import json
import warnings
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

import popdyn

from _cases import build as build_engine, load_cases, outputs

ROOT = Path(__file__).resolve().parents[2]
REFS = json.loads((ROOT / "data" / "refs" / "grad_contract_refs.json").read_text())
TINY = json.loads((ROOT / "data" / "refs" / "tiny_refs.json").read_text())
ENGINE = load_cases()
BLOCKS = (("a+c", ("a", "c")), ("W", ("W",)), ("b", ("b",)))
_OVERSHOT = ("erf2", "erf6", "erf14")


def _unhex(x):
    if isinstance(x, list):
        return np.array([_unhex(v) for v in x], dtype=float)
    return float.fromhex(x)


def _build(inp, slope):
    W = _unhex(inp["W"])
    m, d = W.shape
    S = popdyn.Student(d, m, inp["activation"], negative_slope=slope)
    p = popdyn.Params(_unhex(inp["a"]), W, _unhex(inp["b"]), _unhex(inp["c"]))
    t = inp["teacher"]
    if t["kind"] == "additive":
        T = popdyn.Teacher.additive(t["link"], _unhex(t["U"]), _unhex(t["kappa"]))
    else:
        T = popdyn.Teacher.network(t["activation"], _unhex(t["V"]), _unhex(t["U"]),
                                   _unhex(t["bias"]), negative_slope=slope)
    return S, p, T


def _ref_grad(g):
    return {"a": np.array(g["a"], dtype=float), "W": np.array(g["W"], dtype=float),
            "b": np.array(g["b"], dtype=float), "c": np.array([float(g["c"])])}


def _call(fn, *args, strict=False, **kw):
    """fn(*args, **kw) with its AccuracyWarnings recorded (``strict``: raised)."""
    with warnings.catch_warnings(record=True) as wl:
        warnings.simplefilter("error" if strict else "always", popdyn.AccuracyWarning)
        out = fn(*args, **kw)
    return out, [w for w in wl if issubclass(w.category, popdyn.AccuracyWarning)]


def _block_errors(g, ref):
    """{block: (true error, largest |reference entry|)} in exact arithmetic on the floats."""
    out = {}
    for blk, fields in BLOCKS:
        err = size = 0.0
        for f in fields:
            got = np.atleast_1d(np.asarray(getattr(g, f), dtype=float))
            want = ref[f]
            err = max(err, float(np.max(np.abs(got - want))))
            size = max(size, float(np.max(np.abs(want))))
        out[blk] = (err, size)
    return out


def _check_both_directions(S, p, T, ref_grad, ref_loss, rtol, tag, strict=True):
    """One loss_and_grad call in each mode: strict (warnings are errors) when the true errors
    are within rtol/100; otherwise a block beyond its target must be warned and say so."""
    (L, g, info), w = _call(popdyn.loss_and_grad, S, p, T, rtol=rtol, full_output=True)
    gi, li = info["grad"], info["loss"]
    blocks = _block_errors(g, ref_grad)
    lerr = float(abs(mp.mpf(L) - mp.mpf(ref_loss)))
    lsize = abs(float(ref_loss))
    tight = all(e <= rtol / 100 * s for e, s in blocks.values()) and lerr <= rtol / 100 * lsize
    if tight and strict:
        # no warning may be issued: the same call with warnings as errors
        _call(popdyn.loss_and_grad, S, p, T, rtol=rtol, strict=True)
        assert info["within_rtol"], (tag, gi["error"], li["error"])
    for blk, (e, s) in blocks.items():
        if e > rtol * s + gi["atol"][blk]:
            assert w and not gi["within_rtol"], (tag, blk, e, s)              # beyond => warned
        if not w:
            assert e <= rtol * s + gi["atol"][blk], (tag, blk, e)             # silent => within
    if lerr > rtol * lsize + li["atol"]:
        assert w and not li["within_rtol"], (tag, "loss", lerr)
    return blocks, gi, w


@pytest.mark.slow
@pytest.mark.parametrize("case", REFS["sets"]["erf"], ids=[c["id"] for c in REFS["sets"]["erf"]])
def test_erf_gradient_within_rtol_or_warned(case):
    """The erf gradient meets rtol 1e−10 (the default) outright and 1e−12 or warns, and the
    stated per-block estimate covers the true error without overshooting it by more than 1e3
    (beyond the rounding floor)."""
    S, p, T = _build(case["inputs"], REFS["negative_slope"])
    ref = _ref_grad(case["grad"])
    # rtol 1e−12 on every 5th case and on the three whose estimate overshot the true error most
    # (by 1e4 and more: coefficient errors summed without cancellation); the others take 3–10 s
    # more each at 1e−12
    rtols = ((1e-10, 1e-12) if int(case["id"][3:]) % 5 == 0 or case["id"] in _OVERSHOT
             else (1e-10,))
    for rtol in rtols:
        (g, info), w = _call(popdyn.population_grad, S, p, T, rtol=rtol, full_output=True)
        assert set(info) >= {"error", "order", "rtol", "atol", "series_tol", "within_rtol"}
        blocks = _block_errors(g, ref)
        for blk, (e, s) in blocks.items():
            tgt = rtol * s + info["atol"][blk]
            assert w or e <= tgt, (rtol, blk, e, tgt)
            assert e <= info["error"][blk] + info["atol"][blk], (rtol, blk, e, info["error"])
            # not orders of magnitude above the truth (the rounding floor aside; measured ≤ 260)
            assert info["error"][blk] <= 1e3 * max(e, info["atol"][blk]), (rtol, blk, e, info)
        if rtol == 1e-10:
            assert not w and info["within_rtol"], [str(x.message) for x in w]
        # both rtols: true errors within rtol/100 => no warning (it used to warn at 1e−12 on 11
        # of the 20 cases, the estimate 10²–10⁴ above true errors ~1e−15)
        _check_both_directions(S, p, T, ref, case["loss"], rtol, case["id"])


@pytest.mark.parametrize("case", REFS["sets"].get("affine", []),
                         ids=[c["id"] for c in REFS["sets"].get("affine", [])])
def test_nearly_affine_relu_unit_no_false_alarm(case):
    """Relu / leaky relu with one nearly affine unit: the values are exact to rounding, and
    neither the loss nor the gradient warns (warnings are errors); the loss's stated error is
    at the rounding level (it was up to 3.93e+03), and it covers the true error."""
    S, p, T = _build(case["inputs"], REFS["negative_slope"])
    for rtol in (1e-10, 1e-12):
        (L, info), _ = _call(popdyn.population_loss, S, p, T, rtol=rtol, full_output=True,
                             strict=True)
        lerr = float(abs(mp.mpf(L) - mp.mpf(case["loss"])))
        assert lerr <= 1e-14 * abs(L)
        assert info["error"] <= 1e-12 * abs(L), info["error"]
        assert lerr <= info["error"] + info["atol"]
        (g, ginfo), _ = _call(popdyn.population_grad, S, p, T, rtol=rtol, full_output=True,
                              strict=True)
        for blk, (e, s) in _block_errors(g, _ref_grad(case["grad"])).items():
            assert e <= 1e-13 * s + ginfo["atol"][blk], (blk, e, s)
            assert e <= ginfo["error"][blk] + ginfo["atol"][blk], (blk, e, ginfo["error"])
        _check_both_directions(S, p, T, _ref_grad(case["grad"]), case["loss"], rtol, case["id"])


@pytest.mark.parametrize("case", ENGINE, ids=[c["id"] for c in ENGINE])
def test_engine_refs_both_directions(case):
    S, p, T = build_engine(case)
    L, ga, gW, gb, gc, _, _ = outputs(case)
    ref = {"a": ga, "W": gW, "b": gb, "c": np.array([gc])}
    blocks, info, w = _check_both_directions(S, p, T, ref, case["outputs"]["loss"], 1e-10,
                                             case["id"])
    if S.act.kind != "pl":
        for blk, (e, _) in blocks.items():       # the stated estimate covers the true error
            assert e <= info["error"][blk] + info["atol"][blk], (blk, e, info["error"][blk])


def test_tiny_units_loss_no_false_alarm():
    """The 200 relu / leaky-relu students with tiny units of tiny_refs.json: losses within
    1e−12 and never a warning (warnings are errors)."""
    slope = float(TINY["slope"])
    for k, case in enumerate(TINY["cases"]):
        inp = dict(case["inputs"], teacher=TINY["teachers"][case["inputs"]["teacher"]])
        S, p, T = _build(inp, slope)
        (L, info), _ = _call(popdyn.population_loss, S, p, T, full_output=True, strict=True)
        ref = mp.mpf(case["ref"]["loss"])
        assert float(abs(mp.mpf(L) - ref)) <= 1e-12 * abs(float(ref)) + info["atol"], k
        (g, gi), _ = _call(popdyn.population_grad, S, p, T, full_output=True, strict=True)
        assert gi["within_rtol"], k


def test_closed_forms_carry_no_estimate():
    """Relu students against relu networks: closed forms, zero stated error, order None."""
    case = next(c for c in ENGINE if c["activation"] == "relu"
                and c["teacher"]["kind"] == "network")
    S, p, T = build_engine(case)
    g, info = popdyn.population_grad(S, p, T, full_output=True)
    assert all(v == 0.0 for v in info["error"].values()) and info["order"] is None
    L, g2 = popdyn.loss_and_grad(S, p, T)
    assert np.array_equal(g.flat(), g2.flat())
    # the integrators' evaluation (the family's, fixed series tolerance) is the same bits
    L3, g3 = S.family.loss_and_grad(p, T, tol=1e-10)
    assert L3 == L and np.array_equal(g3.flat(), g.flat())


def test_refinement_is_bounded_and_named(monkeypatch):
    """A refinement that cannot meet rtol stops at the step cap, and the warning names it."""
    case = REFS["sets"]["erf"][0]
    S, p, T = _build(case["inputs"], REFS["negative_slope"])
    monkeypatch.setattr(popdyn.accuracy, "MAX_STEPS", 0)
    (g, info), w = _call(popdyn.population_grad, S, p, T, rtol=1e-15, full_output=True)
    assert w and "refinement step cap 0" in str(w[0].message)
    assert "population gradient (block" in str(w[0].message)
    assert not info["within_rtol"]


def test_rtol_validation():
    case = REFS["sets"]["erf"][0]
    S, p, T = _build(case["inputs"], REFS["negative_slope"])
    for bad in (0.0, 1.0, -1e-3, True):
        with pytest.raises(ValueError, match="`rtol`"):
            popdyn.population_grad(S, p, T, rtol=bad)
        with pytest.raises(ValueError, match="`rtol`"):
            popdyn.loss_and_grad(S, p, T, rtol=bad)


def test_gradient_warning_names_the_activation_and_a_working_remedy():
    """The gradient's AccuracyWarning names the student's activation, and points at certify's
    loss bracket (not at a gradient certificate certify refuses) for smooth students."""
    import warnings

    import popdyn

    rng = np.random.default_rng(3)
    d, m = 3, 3
    S = popdyn.Student(d, m, "erf", bias=True)
    T = popdyn.Teacher.additive("h3", np.eye(d)[:1])
    p = popdyn.Params(rng.normal(size=m), rng.normal(size=(m, d)) * 5, rng.normal(size=m) * 5,
                      0.0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        popdyn.population_grad(S, p, T, rtol=1e-14)
    msg = " ".join(str(x.message) for x in w if issubclass(x.category, popdyn.AccuracyWarning))
    assert "of the erf student" in msg and "relu-family" not in msg
    assert "grad=True" not in msg and "rigorous loss bracket" in msg


def test_refinement_does_not_depend_on_the_clock(monkeypatch):
    """The accuracy refinement is bounded by work, not time: a clock that jumps by an hour
    at every reading (a heavily loaded machine) gives the same bits and the same warnings."""
    import time
    import warnings

    import popdyn

    rng = np.random.default_rng(5)
    d, m = 3, 3
    S = popdyn.Student(d, m, "erf", bias=True)
    T = popdyn.Teacher.additive("tanh", np.eye(d)[:1])
    p = popdyn.Params(rng.normal(size=m), rng.normal(size=(m, d)) * 2, rng.normal(size=m) * 2,
                      0.0)

    def run():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            L, g = popdyn.loss_and_grad(S, p, T, rtol=1e-13)
        return L, g, sorted(str(x.message) for x in w)

    L0, g0, w0 = run()
    clock = iter(range(0, 10 ** 9, 3600))
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(clock)))
    L1, g1, w1 = run()
    assert L0 == L1 and w0 == w1
    for f in ("a", "W", "b", "c"):
        assert np.array_equal(np.asarray(getattr(g0, f)), np.asarray(getattr(g1, f)))
