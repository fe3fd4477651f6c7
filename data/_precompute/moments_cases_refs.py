"""Stored 62-digit references for tests/certify/test_certify_moments.py (the pair moments
C = E[σσ], B = E[σ'σ'], μ0 = E[σ] of two student units, and the student–teacher moment
Ct = E[σ(w·x + b) g(u·x)]).

Until 0.6.0 the test computed these references live, inside hypothesis tests (about 55 s of the
suite's single-core time); it now loads them from data/refs/moments_cases_refs.json.

Cases.  Exactly the cases the former hypothesis tests checked: their explicit ``@example``
decorators and the examples hypothesis 6.170.17 drew for them under the suite's derandomized
profile (tests/conftest.py), recorded from a run of the former test file (the draws depend on
the hypothesis version and on the test function's source, so they are now fixed here).  A draw
is (w1, b1, w2, b2, mode, activation) for the pair test and (w, b, link, activation, mode) for
the student–teacher test; the second unit / the student row is built from the draw by the
mode, as the test's ``_second`` does, but here in plain Python floats (``math.fsum`` and
``math.sqrt`` are correctly rounded: no BLAS kernel enters).  The built float64 inputs are
stored as ``float.hex`` and the test feeds exactly those to the code under test.

Method (independent of popdyn and certify).  tests/certify/_ref.py (2-D Gaussian quadrature:
outer tanh–sinh, inner conditional expectation in closed form, geometry exact in rationals), at
62 digits (``R.ctx.workdps(62)``), exactly the calls the former live test made.  Each value is
stored with 75 significant digits, which read back under ``workdps(62)`` give exactly the mpf
the former test compared with (checked before writing).

Runtime: about 1 minute on one core.  Usage: python data/_precompute/moments_cases_refs.py
"""
from __future__ import annotations

import json
import math
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "certify"))

import _ref as R  # noqa: E402

PATH = os.path.join(ROOT, "data", "refs", "moments_cases_refs.json")
WORK_DPS = 62
DIGITS = 75
SLOPE = 0.1
U0 = [0.6, 0.0, 0.8]

# (w1, b1, w2, b2, mode, activation): the 5 former @examples, then the 10 hypothesis draws
PAIR_DRAWS = [
    ([0.6, -0.2, 0.3], 0.0, [0.1, 0.5, -0.4], 0.0, "near12", "relu"),
    ([0.6, -0.2, 0.3], -0.3, [0.1, 0.5, -0.4], 0.4, "anti", "leaky_relu"),
    ([0.6, -0.2, 0.3], 0.2, [0.1, 0.5, -0.4], -0.4, "tiny", "relu"),
    ([0.6, -0.2, 0.3], 0.2, [0.1, 0.5, -0.4], 0.4, "const", "leaky_relu"),
    ([0.6, -0.2, 0.3], 0.2, [0.1, 0.5, -0.4], 0.4, "huge", "relu"),
    ([1.3404347310578908, -0.8844663842248168, 7.348973299116598e-34], 0.03312487328542568,
     [-0.3373919619253152, 4.8641886865018984e-250, 0.46171972318305876], 4.1656400875417854e-120,
     "const", "relu"),
    ([-1.0398704656482076, 1.212924705773193, -0.6063818619569874], -1.9999999999999998,
     [0.0699308830624088, -0.8452491464208702, 6.358608703203564e-50], 0.27520189415760643,
     "const", "relu"),
    ([0.37996449030646495, -5.743149141967176e-239, -1.5], 1.9850978330367912,
     [0.24768303035764916, 1.5, 4.741474831009718e-81], -0.3554447955674669, "near12", "relu"),
    ([-0.9976416986021625, -0.6468075013849337, -3.792606708283118e-184], 1.9961132055201896,
     [-0.19558203046316747, -1.1196609090931037e-147, -2.225073858507e-311], 0.07435019179826652,
     "zero", "leaky_relu"),
    ([0.0, -1.5, 1.0996227115610049], -1.9498758132338567,
     [1.170836135780288, 0.052816707148227504, -3.80681518318956e-79], -0.8948885986145567,
     "anti", "relu"),
    ([-1.0967395025532474, 1.105575464323555e-97, -1.356964687294454], -9.989550498178718e-231,
     [0.24951214022753954, -0.8877005408935679, 1.2961658264777465], 1.2e-16, "near12", "relu"),
    ([6.081429359738082e-27, -4.3271427131959067e-240, -0.5094128607864787], -0.8130264704495349,
     [0.5185972223960755, -0.5353992953382918, 0.3814021986098153], 1.859754734033861,
     "near12", "leaky_relu"),
    ([-0.6981563964200941, 1.1155503942670162, -0.43101276877059247], 1.6076885156999836,
     [1.311042615227887, -0.5964450028804196, 6.549622407960982e-78], 1.1754943508222875e-38,
     "near6", "relu"),
    ([-0.31068098642444797, 0.3124186558794264, 1.5], 2.2250738585e-313,
     [0.7979, -0.32356291073161136, -9.453452870205187e-237], -1.175494351e-38, "dup", "relu"),
    ([0.37009156685257727, 1.5, 1.99764786318385e-244], 2.797574692585259e-31,
     [-1.2333077883224264, -0.37213353352003153, -1.3308361414663443], 1.2723337697564983,
     "near12", "leaky_relu"),
]

# (w, b, link, activation, mode): the 2 former @examples, then the 6 hypothesis draws (for the
# modes "parallel" / "anti" the drawn w is replaced, so only the built row is recorded there)
TEACHER_DRAWS = [
    ([0.3, 0.4, -0.2], -0.5, "damped_cubic:0.5", "leaky_relu", "parallel"),
    ([0.0, 1.0, 3.2957391870541008e-158], 0.0, "damped_cubic:0.5", "relu", "random"),
    ([-0.9590070775538492, 1.4762841503179538, 5e-16], 1e-10, "h3+0.3h2", "leaky_relu", "random"),
    ([-1.518731563571609e-198, -0.25, -6.67755557130995e-64], 0.24987956346995174, "h3+0.3h2",
     "relu", "random"),
    ([-0.78, -0.0, -1.04], 1.6079537156848458, "abs", "relu", "anti"),
    ([-2.8231817283323707e-195, 0.804718930526898, -0.05794919314858138], 0.44968421053291374, "h2",
     "relu", "random"),
    ([-0.78, -0.0, -1.04], 2.225073858507e-311, "mixture(0.5*h3, 1.5*relu)", "relu", "anti"),
    ([-0.78, -0.0, -1.04], 6.976896767807505e-145, "damped_cubic:0.5", "leaky_relu", "anti"),
]


def _norm(v):
    return math.sqrt(math.fsum(x * x for x in v))


def second(mode, w1, b1, w2, b2):
    """The second unit of a pair draw (the test's ``_second``, in plain Python floats)."""
    n1 = _norm(w1)
    if mode == "dup":
        return list(w1), b1
    if mode == "anti":
        return [-x for x in w1], b2
    if mode == "near6":
        return w1[:-1] + [w1[-1] + 1.4e-6 * n1], b2
    if mode == "near12":
        return w1[:-1] + [w1[-1] + 1e-12 * n1], b1
    if mode == "zero":
        return [0.0] * len(w1), b2
    if mode == "tiny":
        return [1e-8 * x / n1 for x in w1], (-1e-7 if b2 < 0 else 1e-7)
    n2 = _norm(w2)
    if mode == "far":
        return list(w2), -8.0 * n2
    if mode == "const":
        return [1e-9 * x / n2 for x in w2], (0.6 if b2 >= 0 else -0.6)
    if mode == "huge":
        return list(w2), -1e4 * n2
    if mode != "random":
        raise ValueError(mode)
    return list(w2), b2


def student_row(mode, w):
    if mode == "parallel":
        return [0.7 * x for x in U0]
    if mode == "anti":
        return [-1.3 * x for x in U0]
    return list(w)


def hexs(a):
    if isinstance(a, (list, tuple)):
        return [hexs(v) for v in a]
    return float(a).hex()


def dec(x):
    """75 significant digits; read back under workdps(62) they give x exactly (checked)."""
    s = R.ctx.nstr(x, DIGITS, min_fixed=-5, max_fixed=5)
    assert R.ctx.mpf(s) == x, (s, x)
    return s


def pair_case(draw):
    w1, b1, w2, b2, mode, act = draw
    v2, c2 = second(mode, list(w1), b1, list(w2), b2)
    fa = R.activation(act, SLOPE)
    fd = R.derivative(fa)
    with R.ctx.workdps(WORK_DPS):
        ref = {"C": dec(R.pair(fa, w1, b1, fa, v2, c2)),
               "B": dec(R.pair(fd, w1, b1, fd, v2, c2)),
               "mu": dec(R.mean(fa, v2, c2))}
    return {"draw": {"w1": hexs(w1), "b1": hexs(b1), "w2": hexs(w2), "b2": hexs(b2), "mode": mode,
                     "activation": act},
            "inputs": {"w1": hexs(w1), "b1": hexs(b1), "w2": hexs(v2), "b2": hexs(c2)},
            "ref": ref}


def teacher_case(draw):
    w, b, link, act, mode = draw
    row = student_row(mode, list(w))
    with R.ctx.workdps(WORK_DPS):
        ref = {"Ct": dec(R.pair(R.activation(act, SLOPE), row, b, R.link(link), U0, 0.0))}
    return {"draw": {"w": hexs(w), "b": hexs(b), "link": link, "activation": act, "mode": mode},
            "inputs": {"w": hexs(row), "b": hexs(b), "U": hexs(U0)}, "ref": ref}


def main():
    t0 = time.time()
    out = {"generator": "data/_precompute/moments_cases_refs.py",
           "reference": "tests/certify/_ref.py (pair, mean)", "work_dps": WORK_DPS,
           "digits": DIGITS, "negative_slope": SLOPE, "pair": [], "teacher": []}
    for k, dr in enumerate(PAIR_DRAWS):
        out["pair"].append(pair_case(dr))
        print(f"pair {k} ({dr[4]}, {dr[5]}) {time.time() - t0:.1f} s", flush=True)
    for k, dr in enumerate(TEACHER_DRAWS):
        out["teacher"].append(teacher_case(dr))
        print(f"teacher {k} ({dr[2]}, {dr[4]}) {time.time() - t0:.1f} s", flush=True)
    with open(PATH, "w") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")
    print(f"wrote {PATH} in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
