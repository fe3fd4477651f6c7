"""theorem41: the App. C.1 prescription of Theorem 4.1 / E.1 (Kumar, arXiv 2609.39408) as
certified brackets, against an independent 50-digit mpmath evaluation of the same formulas
written out again here; K_* and N_mu against mpmath maximization and quadrature."""
import json
import math
from fractions import Fraction

import mpmath as mp
import pytest
from hypothesis import given, settings, strategies as st

from certify._arb import workprec
from proofs_checks import theorem41 as T

mp.mp.dps = 50
H3 = [(1.0, 1.0)]
THREE = [(0.2, 0.4), (0.3, 0.7), (0.5, 1.0)]      # the paper's three-scale mixture (App. A)


# ------------------------------------------------------------------- independent mpmath chain
def _mpf(x):
    return mp.mpf(x.numerator) / x.denominator if isinstance(x, Fraction) else mp.mpf(x)


def mp_F(mu, B):
    """√(B/(1+B)) ∫ v^{-3/2} φ(√(B/v)) dμ (eq. (8))."""
    return mp.sqrt(B / (1 + B)) * mp.fsum(
        _mpf(w) * _mpf(v) ** mp.mpf(-1.5) * mp.npdf(mp.sqrt(B / _mpf(v))) for w, v in mu)


def mp_Fstar(mu):
    """max_B F by a grid and Newton on F' (mpmath numerical differentiation)."""
    grid = [mp.mpf(i) / 100 for i in range(1, 2000)]
    b0 = max(grid, key=lambda b: mp_F(mu, b))
    bs = mp.findroot(lambda b: mp.diff(lambda x: mp_F(mu, x), b), b0)
    return mp_F(mu, bs), bs


def mp_g(mu, t):
    """g_μ(t) = Σ w v^{-7/2}(t³ − 3vt) e^{−(1/v − 1)t²/2} (eq. (7))."""
    return mp.fsum(_mpf(w) * _mpf(v) ** mp.mpf(-3.5) * (t ** 3 - 3 * _mpf(v) * t)
                   * mp.exp(-(1 / _mpf(v) - 1) * t ** 2 / 2) for w, v in mu)


def mp_Nmu(mu):
    """‖g_μ‖_{L²(γ)} by quadrature (not the App. D closed form used by the code)."""
    f = lambda t: mp_g(mu, t) ** 2 * mp.npdf(t)
    return mp.sqrt(2 * mp.quad(f, [0, 2, 5, 10, mp.inf]))


def mp_chain(*, r, alpha, Kstar, delta, eps_L, eps_G, m, d, h):
    """App. C.1 eqs. (33)-(42), written out again (mpmath, 50 digits)."""
    r, J, dl = mp.mpf(r), 1 - _mpf(alpha), _mpf(delta)
    eL, eG, m, d, h = _mpf(eps_L), _mpf(eps_G), mp.mpf(m), mp.mpf(d), _mpf(h)
    out = {}
    lam = 1 / mp.sqrt(r)
    chi0 = mp.mpf(10) ** -4
    e_s = J * chi0 / (4096 * mp.sqrt(r))
    eBM, kBM = e_s / 8, J * lam / 1024
    th = min(lam / 1000, e_s / 16, mp.sqrt(kBM * eBM / 6400))
    R = max(mp.mpf(8), 16 / e_s, mp.sqrt(25600 / (kBM * eBM)))
    Phi = mp.ncdf
    pr = (Phi(2) - Phi(1)) * (Phi(1) - Phi(mp.mpf(1) / 2)) ** 2
    if r > 1:
        # 2Φ(x) − 1 = erf(x/√2), without the cancellation of 2Φ(x) − 1 at x ~ 1e−10
        pr *= mp.erf(th / (4 * mp.sqrt(r - 1)) / mp.sqrt(2)) ** (r - 1)
    out.update(e_star=e_s, eps_BM=eBM, kappa_BM=kBM, theta=th, R=R, p_rect=pr,
               m_bound=max(r, mp.log(16 * r / dl) / pr))
    ell, B1 = mp.log(64 * m / dl), 64 * mp.sqrt(r) / J
    ellI = mp.log(8 * m / dl)
    QI = r + 2 * mp.sqrt(r * ellI) + 2 * ellI
    out.update(ell=ell, B_1=B1, ell_I=ellI, Q_I=QI,
               d_bound=max(r, 64, 128 * ell, 16 * r / dl, 16 * ellI,
                           2 * QI * mp.cbrt((32 * B1 / chi0) ** 2)))
    x0, k = 1 / mp.sqrt(d), J * lam / (4096 * d ** 2)
    Qs = k / (10 * mp.sqrt(d))
    T1 = mp.log(4 / eBM) / kBM
    T0 = 4 * R / k + T1 + 1
    S0 = 5 * m * mp.exp(4 * T0)
    vs = 4 * R ** 2
    cG = J * mp.npdf(1) * mp.sqrt(eG) / (128 * mp.sqrt(r))
    Gam = (3 * S0 / 4 + 400 * m) / vs
    K = Kstar
    TG = 100 / K * mp.log(2 * Gam / cG)
    Tt = T0 + TG + 1
    S = S0 * mp.exp(4 * (TG + 1))
    M = 2 * mp.sqrt(S)
    out.update(x_0=x0, k=k, Q_star=Qs, T_1=T1, T_0=T0, S_0=S0, v_star=vs, c_G=cG, Gamma=Gam,
               T_G=TG, T=Tt, S=S, M=M)
    out["h_bound"] = min(mp.mpf(2) ** -12, k / (512 * M), 1 / (4 * M ** 2 * Tt),
                         kBM * eBM / 3200, K / 10 ** 4, 1 / (1000 * r), mp.mpf(10) ** -4,
                         cG * vs / (20000 * Tt * S))
    nu = min(Qs / 4, 1 / (400 * Tt), x0 / (4 * M * Tt), th * lam * k * x0 ** 2 / (2048 * M ** 3),
             k / (512 * M), 2 * k / (3 * M ** 2), 1 / (80 * M ** 2 * Tt), kBM * eBM / 320,
             K / 10 ** 4, mp.sqrt(K / (1000 * Tt)), cG * vs / (80 * Tt * S))
    Ns = mp.ceil(4 * R / (h * k)) + mp.ceil(T1 / h)
    N = Ns + mp.ceil(TG / h)
    g = K / 2
    lg = mp.log(32 * S / (g * vs))
    kc = mp.ceil(2 / (h * g) * lg)
    Tc = h + 2 / g * lg
    Sc = S * mp.exp(4 * Tc)
    Rc2 = g * m / 64
    nuc = min(g / 16, mp.sqrt(g / (8 * Tc)))
    Gc = K ** 2 / 32768
    out.update(nu_bound=nu, N_star=Ns, N=N, gamma=g, k_c=kc, T_c=Tc, S_c=Sc, N_c=N + kc,
               R_c2=Rc2, nu_c_bound=nuc, G_c=Gc,
               zeta_bound=min(nu / 2, chi0 / 128, lam / 100, chi0 / (32 * B1), nuc / 2),
               s2_bound=min(m * nu / S, m * eL / (20 * M ** 2), m * nuc / Sc, Rc2 / (4 * Sc),
                            m * Gc / Sc, m * eL / (20 * Sc)))
    return out


def _mp_of(x):
    """An exact Arb endpoint as an mpf (decimal conversion at 1024 bits: a value like
    e^{10^16} needs the extra bits to print its leading 60 digits correctly)."""
    with workprec(1024):
        return mp.mpf(x.str(60, radius=False, more=True))


def _inside(name, ref, lo, hi):
    """ref (50-digit mpmath) in the certified [lo, hi], up to mpmath's own error: a value
    x = e^y computed from y to 50 digits is relatively off by ~|y|·1e−50, so the slack is
    1e−44·max(1, |log x|)·|x|."""
    a, b = _mp_of(lo), _mp_of(hi)
    slack = mp.mpf(10) ** -44 * max(1, abs(mp.log(abs(ref)))) * abs(ref)
    assert a - slack <= ref <= b + slack, f"{name}: mpmath {mp.nstr(ref, 20)} not in [{lo}, {hi}]"


CASES = [
    dict(r=2, alpha=0.0, mu=H3, delta=0.25, eps_L=1.0, eps_G=0.25, m=32, d=16, h=0.05),
    dict(r=3, alpha=0.3, mu=THREE, delta=0.1, eps_L=0.5, eps_G=0.125, m=10 ** 14,
         d=3 * 10 ** 7, h="1e-10"),
    dict(r=1, alpha=0.0, mu=[(0.5, Fraction(1, 3)), (0.5, Fraction(2, 3))], delta=0.4, eps_L=1.0,
         eps_G=0.25, m=5 * 10 ** 5, d=2 * 10 ** 6, h="3e-7"),
]


@pytest.mark.parametrize("case", CASES, ids=["h3_r2_paper", "three_scale_r3", "r1_mixture"])
def test_constants_against_mpmath(case):
    P = T.prescription(**case)
    Fs, _ = mp_Fstar(case["mu"])
    N = mp_Nmu(case["mu"])
    K = (1 - _mpf(case["alpha"])) / (2 * mp.sqrt(case["r"]) * N) * Fs
    ref = mp_chain(Kstar=K, **{k: v for k, v in case.items() if k != "mu"})
    ref.update(N_mu=N, K_star=K)
    names = [c["name"] for c in P["constants"]]
    assert names == [k for k, _, _ in T.ORDER]            # the paper's order, every constant
    for key, val in ref.items():
        lo, hi = P["balls"][key]
        _inside(key, val, lo, hi)
    json.dumps(P["constants"], allow_nan=False)            # plain data


def test_K_star_h3_paper_value():
    """h3, r = 2, α = 0: K_* ≈ 0.026127 at B = (√5 − 1)/2, G_c ≈ 2.08e−8 (paper-protocol §7)."""
    sc = T.signal_constant(H3, r=2, alpha=0.0)
    K, G = sc["K_star"], sc["G_c"]
    assert abs(float(K.mid()) - 0.026127) < 5e-7 and abs(float(G.mid()) - 2.08e-8) < 1e-10
    assert float(K.rad()) < 1e-50                          # narrow enough for e^{4 T_G}
    bstar = (math.sqrt(5) - 1) / 2
    a, b = sc["argmax"]
    assert a <= bstar <= b and b - a < 1e-12
    # closed form: B/(1+B) = B² at B² + B = 1, so K_* = B φ(√B)/(2√2 √6)
    Bm = (mp.sqrt(5) - 1) / 2
    _inside("K_star", Bm * mp.npdf(mp.sqrt(Bm)) / (2 * mp.sqrt(2) * mp.sqrt(6)),
            K.lower(), K.upper())


@pytest.mark.parametrize("mu", [H3, [(1.0, 0.5)], [(1, Fraction(1, 3))], THREE,
                                [(0.5, 1.0), (0.5, Fraction(1, 3))]])
def test_N_mu_closed_form_against_quadrature(mu):
    n = T.n_mu(mu)
    _inside("N_mu", mp_Nmu(mu), n.lower(), n.upper())


def test_N_v_table():
    """N_v² = 3{2 + 3(1 − v)²}/[v(2 − v)]^{7/2}: 6, 10.5714, 22.5808, 78.2445 at v = 1, 2/3,
    1/2, 1/3 (paper-protocol §4)."""
    for v, want in ((1, 6.0), (Fraction(2, 3), 10.5714), (Fraction(1, 2), 22.5808),
                    (Fraction(1, 3), 78.2445)):
        assert abs(float((T.n_mu([(1, v)]) ** 2).mid()) - want) < 1e-4


def test_family_bracket_contains_members():
    lo, hi = T.family_signal_bounds(r=2)
    for mu in (H3, THREE, [(1, Fraction(1, 3))], [(1.0, 0.5)]):
        K = T.signal_constant(mu, r=2)["K_star"]
        assert lo.upper() <= K.lower() and K.upper() <= hi.lower()


@settings(max_examples=8, deadline=None)
@given(st.floats(0.01, 0.45), st.floats(1.05, 1.9))
def test_m_bound_increases_as_delta_decreases(delta, f):
    """Smaller δ (higher confidence) needs a larger width and a larger dimension."""
    P1 = T.prescription(r=2, mu=H3, delta=delta / f, eps_L=1, eps_G=0.25, m=10 ** 13)
    P2 = T.prescription(r=2, mu=H3, delta=delta, eps_L=1, eps_G=0.25, m=10 ** 13)
    assert P1["balls"]["m_bound"][0] > P2["balls"]["m_bound"][1]
    assert P1["balls"]["d_bound"][0] >= P2["balls"]["d_bound"][1]


@settings(max_examples=8, deadline=None)
@given(st.integers(10 ** 6, 10 ** 9), st.integers(2, 50))
def test_bounds_tighten_with_dimension(d, f):
    """A larger d lowers k, so the horizon N grows and the admissible h and s² shrink."""
    a = T.prescription(r=2, mu=H3, delta=0.25, eps_L=1, eps_G=0.25, m=10 ** 13, d=d, h="1e-9")
    b = T.prescription(r=2, mu=H3, delta=0.25, eps_L=1, eps_G=0.25, m=10 ** 13, d=d * f, h="1e-9")
    assert a["balls"]["h_bound"][0] > b["balls"]["h_bound"][1]
    assert a["balls"]["s2_bound"][0] > b["balls"]["s2_bound"][1]
    assert a["balls"]["N"][1] < b["balls"]["N"][0]


def test_report_paper_baseline_outside():
    """The paper's baseline r = 2, d = 16, m = 32, s = 1e−4, h = 0.05, 20000 updates: every
    size bound fails ("illustrative parameters, outside the theorem's sufficient
    prescriptions", §5)."""
    rep = T.hypotheses_report(dict(r=2, alpha=0.0, link="h3", m=32, d=16, s=1e-4, h=0.05,
                                   updates=20000))
    json.dumps(rep, allow_nan=False)
    st_ = {h["name"]: h["status"] for h in rep["hypotheses"]}
    assert st_ == {"teacher": "met", "m": "not met", "d": "not met", "s": "not met",
                   "h": "not met", "horizon": "not met", "zeta": "met"}
    assert rep["status"] == "outside"
    assert rep["summary"].startswith(
        "outside the theorem's hypotheses (m, d, s, h, horizon not met")
    assert all(c["applies"] is False for c in rep["conclusions"])
    m_b = next(h for h in rep["hypotheses"] if h["name"] == "m")["bound"]
    assert 12 < m_b["log10"][0] <= m_b["log10"][1] < 13        # m ≥ 7.38e12
    refit = next(c for c in rep["conclusions"] if c["name"] == "refit")
    assert 0.399 < refit["gap"] < 0.4


def test_report_constructed_setting_meets_bounds():
    """Sizes and scales chosen from the prescription itself meet their bounds; the horizon,
    not given (it exceeds every machine integer), leaves the report undecided."""
    base = T.prescription(r=2, mu=H3, delta=0.25, eps_L=1, eps_G=0.25)
    m, d = base["m"], base["d"]
    rep0 = T.hypotheses_report(dict(r=2, mu=H3, m=m, d=d))
    hb = next(h for h in rep0["hypotheses"] if h["name"] == "h")["bound"]["log10"]
    h = f"1e{math.floor(hb[0]) - 1}"
    rep1 = T.hypotheses_report(dict(r=2, mu=H3, m=m, d=d, h=h))
    sb = next(x for x in rep1["hypotheses"] if x["name"] == "s")["bound"]["log10"]
    s = f"1e{math.floor(sb[0] / 2) - 1}"
    rep = T.hypotheses_report(dict(r=2, mu=H3, m=m, d=d, h=h, s=s))
    st_ = {x["name"]: x["status"] for x in rep["hypotheses"]}
    assert st_ == {"teacher": "met", "m": "met", "d": "met", "s": "met", "h": "met",
                   "horizon": "not given", "zeta": "met"}
    assert rep["status"] == "undecided" and rep["not_met"] == []
    assert all(c["applies"] is None for c in rep["conclusions"])
    # one size short of the bound: not met
    rep2 = T.hypotheses_report(dict(r=2, mu=H3, m=m - 1, d=d, h=h, s=s))
    assert {x["name"]: x["status"] for x in rep2["hypotheses"]}["m"] == "not met"
    json.dumps(rep, allow_nan=False)


def test_report_outside_family_uses_family_bracket():
    rep = T.hypotheses_report(dict(r=1, link="damped_cubic:0.5", m=16, d=8, s=0.01, h=0.05,
                                   updates=2000))
    st_ = {x["name"]: x["status"] for x in rep["hypotheses"]}
    assert st_["teacher"] == "not met" and st_["m"] == st_["d"] == st_["h"] == "not met"
    assert rep["signal"]["family"] is True


def test_mu_from_link():
    assert T.mu_from_link("h3") == ((1, 1),)
    assert T.mu_from_link("g:1/3") == ((1, Fraction(1, 3)),)
    mix = T.mu_from_link("mixture(0.2*g:0.4, 0.3*g:0.7, 0.5*g:1.0)")
    assert [float(v) for _, v in mix] == [0.4, 0.7, 1.0]
    assert abs(float(sum(w for w, _ in mix)) - 1) < 1e-15
    for bad in ("damped_cubic:0.5", "h2", "g:0.2", "mixture(0.5*h3, 0.5*h5)", None,
                "mixture(1.0*g:1/3, -1.0*g:1)", "g_mu(uniform)", "q:0.2", "mixture(1.0*sin)"):
        assert T.mu_from_link(bad) is None
    # h3 = g_1/√6 inside a mixture: weights (w/√6, w') normalized, against mpmath
    mu, exact = T.mu_with_exactness("mixture(0.5*h3, 0.5*g:0.5)")
    assert [v for _, v in mu] == [Fraction(1, 2), Fraction(1)] and not exact
    with mp.workdps(130):
        w1 = mp.mpf(1) / mp.sqrt(6)
        assert abs(mp.mpf(mu[1][0].numerator) / mu[1][0].denominator - w1 / (1 + w1)) < 1e-110
        # q:v = g_v/N_v with N_v² = 3{2 + 3(1 − v)²}/[v(2 − v)]^{7/2} (App. D)
        mu, _ = T.mu_with_exactness("mixture(1.0*q:1/2, 1.0*g:1)")
        Nh = mp.sqrt(3 * (2 + 3 * mp.mpf(1) / 4) / (mp.mpf(3) / 4) ** mp.mpf(3.5))
        assert abs(mp.mpf(mu[0][0].numerator) / mu[0][0].denominator
                   - (1 / Nh) / (1 + 1 / Nh)) < 1e-110


#: the six positive-mixture rows of Table 1 (label, link as in data/configs/paper/table1.toml)
TABLE1_FAMILY = [("g_{1/2}", "g:1/2"), ("g_{1/3}", "g:1/3"), ("g_{2/3}", "g:2/3"), ("h_3", "h3"),
                 ("g_1 + g_{1/3}", "g_mu(1/2*g:1/3, 1/2*g:1)"),
                 ("Three-scale mixture", "g_mu(1/5*g:2/5, 3/10*g:7/10, 1/2*g:1)")]


@pytest.mark.parametrize("label, spec", TABLE1_FAMILY + [
    ("q", "q:2/3"), ("q_mu", "q_mu(1/5*g:2/5, 3/10*g:7/10, 1/2*g:1)"), ("dec", "g:0.5"),
    ("mix", "mixture(1.0*g:1/3, 2.0*g:1)"), ("mix h3", "mixture(0.5*h3, 0.5*g:2/3)")])
def test_mu_from_link_popdyn_names_against_hermite_series(label, spec):
    """Every name popdyn produces for the family (get_link(...).name) gives μ whose moments
    ∫(1 − v)^j dμ / ∫dμ match popdyn's own Hermite coefficients of the link through the series
    ⟨g_μ, h_{2j+3}⟩ = (−1)^j √((2j+3)!)/(2^j j!) ∫(1 − v)^j dμ (App. D)."""
    from popdyn.links import get_link
    link = get_link(spec)
    mu = T.mu_from_link(link.name)
    assert mu is not None and abs(float(sum(w for w, _ in mu)) - 1) < 1e-15
    c = [float(x) for x in link.coeffs[:8]] + [0.0] * 8
    for j in (1, 2):
        want = sum(float(w) * float(1 - v) ** j for w, v in mu)
        got = ((-1) ** j * c[2 * j + 3] / c[3] * math.sqrt(6) * 2 ** j * math.factorial(j)
               / math.sqrt(math.factorial(2 * j + 3)))
        assert got == pytest.approx(want, rel=1e-12, abs=1e-14)


def test_settings_from_paper_spec():
    """The Table 1 protocol (preset paper_relu, iid init, persistent Armijo from h0 = 0.05):
    student and initialization met, the fixed step undecided, h = h0, s = scale."""
    spec = {"teacher": {"label": "g_{1/2}", "kind": "additive", "link": "g:1/2", "rank": 2,
                        "normalize": "second_moment"},
            "student": {"preset": "paper_relu", "d": 16, "m": 32},
            "init": {"convention": "iid", "scale": 1e-4, "fit_intercept": False, "seed": 1},
            "train": {"method": "armijo", "h0": 0.05, "max_halvings": 40, "max_updates": 20000}}
    s = T.settings_from_run_spec(spec)
    assert (s["m"], s["d"], s["s"], s["h"], s["r"], s["alpha"], s["updates"]) == \
        (32, 16, 1e-4, 0.05, 2, 0.0, 20000)
    st_ = {x["name"]: x["status"] for x in s["structural"]}
    assert st_ == {"activation": "met", "fixed step": "undecided", "student": "met",
                   "initialization": "met", "additive teacher": "met"}
    assert "non-increasing" in next(x for x in s["structural"]
                                    if x["name"] == "fixed step")["detail"]
    rep = T.hypotheses_report(s)
    assert rep["status"] == "outside" and rep["hypotheses"][0]["status"] == "met"
    spec["init"]["convention"] = "norm"
    spec["train"] = {"method": "gd", "lr": 0.1, "max_updates": 10}
    s = T.settings_from_run_spec(spec)
    st_ = {x["name"]: x["status"] for x in s["structural"]}
    assert s["h"] == 0.1 and st_["initialization"] == "not met" and st_["fixed step"] == "met"
    with pytest.raises(ValueError, match="preset must be one of"):
        T.settings_from_run_spec({**spec, "student": {"preset": "nope", "d": 2, "m": 2}})


@pytest.mark.parametrize("kw, match", [
    (dict(mu=[(1.0, 0.2)]), "v must lie in"), (dict(mu=[(0.5, 1.0)]), "sum to 1"),
    (dict(delta=0.5), "delta"), (dict(eps_G=0.3), "eps_G"), (dict(alpha=1.0), "alpha"),
    (dict(r=0), "r"), (dict(m=0), "m")])
def test_bad_input(kw, match):
    args = dict(r=2, mu=H3, delta=0.25, eps_L=1, eps_G=0.25)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        T.prescription(**args)
