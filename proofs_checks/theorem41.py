r"""The hypotheses of Theorem 4.1 / E.1: the App. C.1 prescription as certified Arb brackets.

Kumar (arXiv 2609.39408), Theorem 4.1 (the common-link case of Theorem E.1) holds only for
sizes m, d, initialization scale s and mesh h chosen by the complete parameter prescription of
App. C.1, eqs. (33)-(42); "m >= r and d >= 16r/δ alone are insufficient" (§4, *Parameter
scope*).  :func:`prescription` computes every constant of that prescription in the paper's
order, specialized as in Theorem 4.1 (μ_i = μ, λ_i = r^{-1/2}, so λ_* = r^{-1/2}, residual
e = 0, ζ = 0), and :func:`hypotheses_report` compares a run's (m, d, s, h, horizon) with the
prescribed bounds.

The constants, in the printed order (J = 1 − α):

* (33) χ₀ = 10⁻⁴, e_* = Jχ₀/(4096√r), ε_BM = e_*/8, κ_BM = Jλ_*/1024,
  ϑ = min{λ_*/1000, e_*/16, √(κ_BM ε_BM/6400)}, R = max{8, 16/e_*, √(25600/(κ_BM ε_BM))};
* (34) p_rect = (Φ(2) − Φ(1))(Φ(1) − Φ(1/2))²[2Φ(ϑ/(4√(r−1))) − 1]^{r−1} (last factor 1 at
  r = 1), m ≥ max{r, p_rect⁻¹ log(16r/δ)};
* (35) ℓ = log(64m/δ), B₁ = 64√r/J, ℓ_I = log(8m/δ), Q_I = r + 2√(rℓ_I) + 2ℓ_I,
  integer d > r with d ≥ max{r, 64, 128ℓ, 16r/δ, 16ℓ_I, 2Q_I(32B₁/χ₀)^{2/3}};
  then x₀ = d^{−1/2}, k = Jλ_*/(4096d²), Q_* = k/(10√d);
* (36) T₁ = κ_BM⁻¹ log(4/ε_BM), T₀ = 4R/k + T₁ + 1, S₀ = 5m e^{4T₀}, v_* = 4R²,
  c_G = Jφ(1)√ε_G/(128√r), Γ = (3S₀/4 + 400m)/v_*, T_G = (100/K_*) log(2Γ/c_G),
  T = T₀ + T_G + 1, S = S₀ e^{4(T_G+1)}, M = 2√S;
* (37) h ≤ min{2⁻¹², k/(512M), 1/(4M²T), κ_BM ε_BM/3200, K_*/10⁴, 1/(1000r), 10⁻⁴,
  c_G v_*/(20000TS)};
* (38) ν ≤ min{Q_*/4, 1/(400T), x₀/(4MT), ϑλ_*kx₀²/(2048M³), k/(512M), 2k/(3M²),
  1/(80M²T), κ_BM ε_BM/320, K_*/10⁴, √(K_*/(1000T)), c_G v_*/(80TS)};
* (39) N_* = ⌈4R/(hk)⌉ + ⌈T₁/h⌉, N = N_* + ⌈T_G/h⌉;
* (40) γ = K_*/2, k_c = ⌈(2/(hγ)) log(32S/(γv_*))⌉, T_c = h + (2/γ) log(32S/(γv_*)),
  S_c = S e^{4T_c}, N_c = N + k_c, R_c² = γm/64, G_c = γ²/8192 = K_*²/32768,
  0 < ν_c ≤ min{γ/16, √(γ/(8T_c))};
* (41) ζ ≤ min{ν/2, χ₀/128, λ_*/100, χ₀/(32B₁), ν_c/2};
* (42) s² ≤ min{mν/S, mε_L/(20M²), mν_c/S_c, R_c²/(4S_c), mG_c/S_c, mε_L/(20S_c)};

with the signal (eq. (8), (32))

    K_* = (J/(2√r N_μ)) max_{B≥0} √(B/(1+B)) ∫ v^{−3/2} φ(√(B/v)) dμ(v),

N_μ = ‖g_μ‖_{L²(γ)}, N_μ² = ∬ K((1−v)(1−w)) dμ dμ with K(t) = 3(2 + 3t)/(1 − t)^{7/2} (App. D,
the generating function of the Hermite coefficients of g_v).  ν and ν_c are free "force
allowances" of the prescription; the report takes the largest admissible ones, which give
the largest (loosest) s² bound, since every term of (42) is nondecreasing in ν and ν_c.

Every constant is a rigorous Arb ball (python-flint), with the one maximization in K_* done by
a certified branch and bound (:func:`signal_max`).  Most constants are astronomically large or
small (S₀ = 5m e^{4T₀} with T₀ ~ 10²⁷ at r = 2): Arb has arbitrary exponents, and the report
gives log₁₀ brackets.

References
----------
Kumar (arXiv 2609.39408): §3 eqs. (7)-(8) (teacher family, K_*, G_c); §4 Theorem 4.1 and
*Parameter scope*; §5 ("illustrative parameters, outside the theorem's sufficient
prescriptions"); App. C.1 eqs. (31)-(42); App. D (N_μ, the generating function K);
App. E Theorem E.1 eqs. (44)-(49) (the conclusions).
"""
from __future__ import annotations

import math
import numbers
import re
from fractions import Fraction

from flint import arb

from certify._arb import arb_bounds, check_prec, workprec

__all__ = ["ORDER", "mu_atoms", "mu_from_link", "mu_with_exactness", "n_mu", "signal_max",
           "signal_constant", "family_signal_bounds", "prescription", "hypotheses_report",
           "settings_from_run_spec", "R_GAP"]

#: the constants of App. C.1 in the paper's order: (key, symbol, equation)
ORDER = (
    ("J", "J = 1 − α", "(31)"), ("lambda_star", "λ_* = r^{-1/2}", "(33)"),
    ("chi_0", "χ₀", "(33)"), ("e_star", "e_*", "(33)"), ("eps_BM", "ε_BM", "(33)"),
    ("kappa_BM", "κ_BM", "(33)"), ("theta", "ϑ", "(33)"), ("R", "R", "(33)"),
    ("p_rect", "p_rect", "(34)"), ("m_bound", "m ≥ max{r, p_rect⁻¹ log(16r/δ)}", "(34)"),
    ("m", "m (used below)", "(34)"),
    ("ell", "ℓ", "(35)"), ("B_1", "B₁", "(35)"), ("ell_I", "ℓ_I", "(35)"), ("Q_I", "Q_I", "(35)"),
    ("d_bound", "d ≥ max{r, 64, 128ℓ, 16r/δ, 16ℓ_I, 2Q_I(32B₁/χ₀)^{2/3}}", "(35)"),
    ("d", "d (used below)", "(35)"),
    ("x_0", "x₀", "(35)"), ("k", "k", "(35)"), ("Q_star", "Q_*", "(35)"),
    ("T_1", "T₁", "(36)"), ("T_0", "T₀", "(36)"), ("S_0", "S₀", "(36)"), ("v_star", "v_*", "(36)"),
    ("c_G", "c_G", "(36)"), ("Gamma", "Γ", "(36)"), ("T_G", "T_G", "(36)"), ("T", "T", "(36)"),
    ("S", "S", "(36)"), ("M", "M", "(36)"),
    ("h_bound", "h ≤ min{…}", "(37)"), ("h", "h (used below)", "(37)"),
    ("nu_bound", "ν ≤ min{…}", "(38)"),
    ("N_star", "N_*", "(39)"), ("N", "N", "(39)"),
    ("gamma", "γ", "(40)"), ("k_c", "k_c", "(40)"), ("T_c", "T_c", "(40)"), ("S_c", "S_c", "(40)"),
    ("N_c", "N_c", "(40)"), ("R_c2", "R_c²", "(40)"), ("nu_c_bound", "ν_c ≤ min{…}", "(40)"),
    ("zeta_bound", "ζ ≤ min{…}", "(41)"), ("s2_bound", "s² ≤ min{…}", "(42)"),
    ("N_mu", "N_μ", "(8)"), ("K_star", "K_*", "(8)/(32)"), ("G_c", "G_c", "(8)/(40)"),
)
_KEYS = tuple(k for k, _, _ in ORDER)

#: R(0) − R(N) > 1 − χ₀/8 − (√(3/5) + χ₀/64)² (Theorem E.1, eq. (46)); evaluated in the report
R_GAP = "1 − χ₀/8 − (√(3/5) + χ₀/64)²"

_V_MIN = Fraction(1, 3)


# ------------------------------------------------------------------------------- conversions
def _exact(x, name):
    """An exact rational (Fraction) from an int, a float (its binary value), a Fraction or a
    decimal / ratio string ('1/3', '0.2', '1e-400')."""
    if isinstance(x, bool):
        raise TypeError(f"`{name}` must be a number, got {x!r}")
    if isinstance(x, numbers.Rational):
        return Fraction(int(x.numerator), int(x.denominator))
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"`{name}` must be finite, got {x!r}")
        return Fraction(x)
    if isinstance(x, numbers.Real):
        return _exact(float(x), name)
    if isinstance(x, str):
        try:
            if "/" in x:
                p, q = x.split("/", 1)
                return Fraction(Fraction(p.strip()), Fraction(q.strip()))
            return Fraction(x.strip())
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"`{name}` must be a number or a decimal/ratio string, "
                             f"got {x!r}") from None
    raise TypeError(f"`{name}` must be a number, got {type(x).__name__}")


def _arb_of(q: Fraction):
    return arb(q.numerator) / arb(q.denominator)


def _run_value(x, name):
    """A positive run value (h, s) as an Arb ball: a float or int exactly, a Fraction as the
    quotient, a decimal string (e.g. ``"1e-400000"``, below the float range) as Arb parses it
    (a rigorous ball; never expanded to an exact rational, whose digits could be astronomically
    many).  Call inside :func:`workprec`."""
    if isinstance(x, str):
        try:
            v = arb(x.strip())
        except (ValueError, TypeError):
            raise ValueError(f"`{name}` must be a number or a decimal string, got {x!r}") from None
    else:
        v = _arb_of(_exact(x, name))
    if not v > 0:
        raise ValueError(f"`{name}` must be > 0, got {x!r}")
    return v


def _lo(x):
    return x.lower()


def _hi(x):
    return x.upper()


def _ln10():
    return arb(10).log()


def _log10_bounds(x):
    """Outward-rounded float bounds of log₁₀ x for a ball x > 0 (None if not certainly > 0)."""
    if not x > 0:
        return None
    lo = (_lo(x).log() / _ln10())
    hi = (_hi(x).log() / _ln10())
    return [arb_bounds(lo)[0], arb_bounds(hi)[1]]


def _sci(x) -> str:
    """A short decimal form of the midpoint of a ball (any exponent)."""
    if x.is_zero():
        return "0"
    m = x.mid()
    if m.is_zero():
        return "0"
    sign = "-" if m < 0 else ""
    L = abs(m).log() / _ln10()
    e = int(L.mid().floor().unique_fmpz())
    mant = float((arb(10) ** (L - e)).mid())
    if mant >= 9.9999995:
        mant, e = mant / 10, e + 1
    if -4 <= e < 6:
        return f"{sign}{mant * 10.0 ** e:.6g}"
    return f"{sign}{mant:.6g}e{e:+d}"


def _float_or_none(v: float):
    return v if math.isfinite(v) and (v == 0.0 or 1e-300 < abs(v) < 1e300) else None


def _record(key, x, symbol, eq):
    lo, hi = arb_bounds(x)
    return {"name": key, "symbol": symbol, "eq": eq, "value": _sci(x),
            "lo": _float_or_none(lo), "hi": _float_or_none(hi),
            "log10": _log10_bounds(x), "provenance": "rigorous"}


# ------------------------------------------------------------------------------- the measure
def mu_atoms(mu):
    """Validate a finitely supported probability measure μ on [1/3, 1] given as (weight, v)
    atoms and return it as a tuple of (weight, v) Fractions (exact binary values of floats).

    Weights must be positive and sum to 1 within 1e-9; ``v`` must lie in [1/3, 1] exactly (pass
    ``Fraction(1, 3)`` or ``"1/3"`` for the endpoint: the float 1/3 lies below it).
    """
    if isinstance(mu, (str, bytes)) or not hasattr(mu, "__iter__"):
        raise TypeError("`mu` must be a list of (weight, v) atoms, e.g. [(1.0, 1.0)] for h3")
    atoms = []
    for i, at in enumerate(mu):
        try:
            w, v = at
        except (TypeError, ValueError):
            raise ValueError(f"`mu[{i}]` must be a (weight, v) pair, got {at!r}") from None
        w, v = _exact(w, f"mu[{i}] weight"), _exact(v, f"mu[{i}] v")
        if not w > 0:
            raise ValueError(f"`mu[{i}]` weight must be > 0, got {float(w)!r}")
        if not _V_MIN <= v <= 1:
            raise ValueError(f"`mu[{i}]` location v must lie in [1/3, 1] (App. C.1), "
                             f"got {float(v)!r}"
                             "; pass Fraction(1, 3) or '1/3' for the endpoint")
        atoms.append((w, v))
    if not atoms:
        raise ValueError("`mu` must have at least one atom")
    tot = sum(w for w, _ in atoms)
    if abs(float(tot) - 1.0) > 1e-9:
        raise ValueError(f"`mu` weights must sum to 1 (a probability measure), got {float(tot)!r}")
    return tuple(atoms)


_ROUND_BITS = 400


def _split_top(body):
    """Split ``body`` at the commas outside parentheses."""
    out, depth, cur = [], 0, []
    for ch in body:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [p.strip() for p in out]


def _atom_v(text):
    """The exact location v of ``g:<v>`` (``"1/3"`` or a decimal), or None."""
    try:
        v = _exact(text.strip(), "v")
    except (TypeError, ValueError):
        return None
    return v if _V_MIN <= v <= 1 else None


def _measure_items(body):
    """Atoms (w, v) of ``w1*g:v1, w2*g:v2, ...`` normalized to total mass 1, or None."""
    raw = []
    for p in _split_top(body):
        if "*" not in p:
            return None
        w, nm = p.split("*", 1)
        nm = nm.strip()
        if not nm.startswith("g:"):
            return None
        v = _atom_v(nm[2:])
        try:
            w = _exact(w.strip(), "weight")
        except (TypeError, ValueError):
            return None
        if v is None or not w > 0:
            return None
        raw.append((w, v))
    tot = sum(w for w, _ in raw)
    return tuple((w / tot, v) for w, v in raw) if raw and tot > 0 else None


def _component(name):
    """(c, atoms) with ``name`` = c·g_μ, μ = atoms (a probability measure on [1/3, 1]), c an
    exact Fraction or an Arb ball at :data:`_ROUND_BITS` bits (call inside :func:`workprec`);
    None outside the family.  h3 = g₁/√6; g:v = g_v; q:v = g_v/N_v; g_mu(μ) = g_μ;
    q_mu(μ) = g_μ/N_μ (eq. (7), App. D)."""
    s = name.strip()
    if s == "h3":
        return 1 / arb(6).sqrt(), ((Fraction(1), Fraction(1)),)
    if s.startswith(("g:", "q:")):
        v = _atom_v(s[2:])
        if v is None:
            return None
        atoms = ((Fraction(1), v),)
    elif s.startswith(("g_mu(", "q_mu(")) and s.endswith(")"):
        atoms = _measure_items(s[len("g_mu("):-1])
        if atoms is None:
            return None
    else:
        return None
    if s.startswith("q"):
        return 1 / n_mu(atoms, prec=_ROUND_BITS), atoms
    return Fraction(1), atoms


def _round_fraction(x) -> Fraction:
    """The exact midpoint of an Arb ball as a Fraction."""
    man, exp = x.mid().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def mu_with_exactness(link):
    """(μ, exact) of a paper-family link name (see :func:`mu_from_link`), or (None, True).

    ``exact`` is False when a ``mixture(...)`` combines components with different irrational
    normalizations (h3 = g₁/√6, q:v = g_v/N_v, q_mu = g_μ/N_μ): the weights of μ are then the
    midpoints of :data:`_ROUND_BITS`-bit Arb balls (relative error below 2^{-390}), so the
    constants of the report are those of a measure within that distance of the link's."""
    if not isinstance(link, str):
        return None, True
    s = link.strip()
    if s.startswith("mixture(") and s.endswith(")"):
        with workprec(_ROUND_BITS):
            comps = []
            for p in _split_top(s[len("mixture("):-1]):
                if "*" not in p:
                    return None, True
                w, nm = p.split("*", 1)
                try:
                    w = _exact(w.strip(), "weight")
                except (TypeError, ValueError):
                    return None, True
                c = _component(nm)
                if c is None or not w > 0:
                    return None, True
                comps.append((w, c[0], c[1]))
            if not comps:
                return None, True
            if all(isinstance(c, Fraction) for _, c, _ in comps):
                ws = {}
                for w, c, atoms in comps:
                    for a, v in atoms:
                        ws[v] = ws.get(v, Fraction(0)) + w * c * a
                exact = True
            else:
                acc = {}
                for w, c, atoms in comps:
                    cc = _arb_of(c) if isinstance(c, Fraction) else c
                    for a, v in atoms:
                        acc[v] = acc.get(v, arb(0)) + _arb_of(w * a) * cc
                ws = {v: _round_fraction(x) for v, x in acc.items()}
                exact = len(ws) == 1
        tot = sum(ws.values())
        try:
            return mu_atoms([(x / tot, v) for v, x in sorted(ws.items(), key=lambda t: t[0])]), exact
        except (TypeError, ValueError):
            return None, True
    with workprec(_ROUND_BITS):
        c = _component(s)
    if c is None:
        return None, True
    try:
        return mu_atoms(c[1]), True
    except (TypeError, ValueError):
        return None, True


def mu_from_link(link):
    """The measure μ of a paper-family link name, or None outside the family.

    Every name of the family that popdyn produces (:func:`popdyn.links.get_link`, ``.name``):
    ``"h3"`` is g₁/√6, so μ = δ₁; ``"g:<v>"`` and ``"q:<v>"`` (v exact: ``"1/3"`` or a decimal
    such as ``"0.5"``; the normalization q = g/N does not change μ) are the paper's g_v and q_v
    of eq. (7), μ = δ_v; ``"g_mu(w1*g:v1, ...)"`` and ``"q_mu(...)"`` are g_μ and q_μ with
    μ = Σ w_l δ_{v_l}/Σ w_l; ``"mixture(w1*name1, ...)"`` with positive weights and components
    among these is Σ_k w_k c_k g_{μ_k} (c_k = 1/√6 for h3, 1/N for q-components, 1 otherwise),
    μ ∝ Σ_k w_k c_k μ_k (exact rationals unless the c_k are irrational; see
    :func:`mu_with_exactness`).  K_* and the normalized teacher q_μ = g_μ/N_μ do not depend on
    the total mass.  Any other link (e.g. ``damped_cubic:a`` = z³e^{−az²/2}, which has a linear
    Hermite component; ``h2``; a signed mixture; ``g_mu(uniform)``, whose μ is not finitely
    supported) gives None.

    Kumar (arXiv 2609.39408), §3 eq. (7), App. D (N_μ).
    """
    return mu_with_exactness(link)[0]


def _kernel(t):
    """K(t) = 3(2 + 3t)/(1 − t)^{7/2} (App. D)."""
    return 3 * (2 + 3 * t) / (1 - t) ** arb("3.5")


def n_mu(mu, *, prec=256):
    """N_μ = ‖g_μ‖_{L²(γ)} as an Arb ball: N_μ² = Σ_ij w_i w_j K((1 − v_i)(1 − v_j)) (App. D)."""
    atoms = mu_atoms(mu)
    with workprec(check_prec(prec)):
        tot = sum((_arb_of(w) for w, _ in atoms), arb(0))
        s = arb(0)
        for wi, vi in atoms:
            for wj, vj in atoms:
                s += _arb_of(wi) * _arb_of(wj) * _kernel(_arb_of((1 - vi) * (1 - vj)))
        return s.sqrt() / tot


# ------------------------------------------------------------------------------- the signal
def _signal_parts(atoms):
    tot = sum((_arb_of(w) for w, _ in atoms), arb(0))
    c = [_arb_of(w) / tot * _arb_of(v) ** arb("-1.5") * (2 * arb.pi()).rsqrt() for w, v in atoms]
    a = [1 / (2 * _arb_of(v)) for _, v in atoms]
    return c, a


def _E(c, a, B):
    return sum((ci * (-(ai * B)).exp() for ci, ai in zip(c, a)), arb(0))


def _Ep(c, a, B):
    return -sum((ci * ai * (-(ai * B)).exp() for ci, ai in zip(c, a)), arb(0))


def _g(B):
    return (B / (1 + B)).sqrt()


def _gp(B):
    return 1 / (2 * B.sqrt() * (1 + B) ** arb("1.5"))


def signal_max(mu, *, prec=256, rtol=None, max_boxes=20000):
    r"""Certified bracket of F_* = max_{B ≥ 0} F(B), F(B) = √(B/(1+B)) ∫ v^{−3/2} φ(√(B/v)) dμ(v).

    With φ(√(B/v)) = e^{−B/(2v)}/√(2π), F = g·E with g(B) = √(B/(1+B)) increasing and concave,
    E(B) = Σ c_i e^{−a_i B} decreasing (c_i = w_i v_i^{−3/2}/√(2π), a_i = 1/(2v_i)).  Branch and
    bound on [0, B_max] with exact Arb box endpoints: every box [a, b] gets the rigorous upper
    bound g(b)E(a) (monotonicity) and, for a > 0, the mean-value bound
    F(c) + max(D⁺, −D⁻, 0)(b − a)/2 with F'([a, b]) ⊂ [D⁻, D⁺] =
    [g'(b)E(b) + g(b)E'(a), g'(a)E(a) + g(a)E'(b)] (g' > 0 decreasing, E' < 0 increasing), and
    F(b) or F(a) where that derivative enclosure has one sign.  Lower bounds are F at box
    midpoints.  The tail B > B_max is bounded by E(B_max) (g ≤ 1), B_max doubled until that is
    below the best lower bound.  Boxes whose upper bound is below the best lower bound are
    discarded; the rest are bisected until the bracket's relative width is at most ``rtol``
    (default 2^{−(prec − 64)}: the prescription needs K_* to about log₂ T_G + 60 bits, since
    S = S₀e^{4(T_G+1)} with T_G ∝ 1/K_*), or ``max_boxes`` boxes were processed (the bracket is
    then wider, still rigorous).

    Returns
    -------
    dict
        ``lo``, ``hi`` (exact Arb endpoints of the bracket of F_*), ``argmax`` (float interval
        containing every maximizer), ``boxes`` (boxes processed), ``provenance`` "rigorous".
    """
    atoms = mu_atoms(mu)
    prec = check_prec(prec)
    rtol = arb(2) ** -(prec - 64) if rtol is None else arb(rtol)
    with workprec(prec):
        c, a = _signal_parts(atoms)

        def F(B):
            return _g(B) * _E(c, a, B)

        best_lo = arb(0)
        B_max = arb(64)
        boxes = [(B_max * i / 256, B_max * (i + 1) / 256) for i in range(256)]
        for A, Bb in boxes:
            f = F((A + Bb) / 2)
            if _lo(f) > best_lo:
                best_lo = _lo(f)
        while not _hi(_E(c, a, B_max)) < best_lo:
            boxes.append((B_max, 2 * B_max))
            B_max = 2 * B_max
            if B_max > 2 ** 20:
                raise ArithmeticError("signal_max: the tail bound did not fall below the maximum")
        n_proc, live = 0, []
        while boxes:
            nxt = []
            for A, Bb in boxes:
                n_proc += 1
                C = (A + Bb) / 2
                fc = F(C)
                if _lo(fc) > best_lo:
                    best_lo = _lo(fc)
                ub = _hi(_g(Bb) * _E(c, a, A))
                if A > 0:
                    Dlo = _lo(_gp(Bb) * _E(c, a, Bb) + _g(Bb) * _Ep(c, a, A))
                    Dhi = _hi(_gp(A) * _E(c, a, A) + _g(A) * _Ep(c, a, Bb))
                    slope = _emax([Dhi, -Dlo, arb(0)])
                    ub = _emin([ub, _hi(fc + slope * (Bb - A) / 2)])
                    if Dlo > 0:
                        ub = _emin([ub, _hi(F(Bb))])
                    elif Dhi < 0:
                        ub = _emin([ub, _hi(F(A))])
                nxt.append((A, Bb, ub))
            live = [(A, Bb, u) for A, Bb, u in nxt if u >= best_lo]
            ub_all = _emax([u for _, _, u in live] + [best_lo])
            if _hi(ub_all - best_lo) <= _lo(rtol * best_lo) or n_proc >= max_boxes:
                break
            boxes = []
            for A, Bb, _ in live:
                C = (A + Bb) / 2
                if not (C.is_exact() and A < C < Bb):    # precision exhausted: stop here
                    boxes = []
                    break
                boxes += [(A, C), (C, Bb)]
        hi_all = _emax([u for _, _, u in live] + [best_lo])
        arg = [arb_bounds(_emin([A for A, _, _ in live]))[0],
               arb_bounds(_emax([Bb for _, Bb, _ in live]))[1]]
        return {"lo": best_lo, "hi": hi_all, "argmax": arg, "boxes": n_proc,
                "provenance": "rigorous"}


def signal_constant(mu, *, r, alpha=0.0, prec=256):
    """K_* (eq. (8)) with λ_* = r^{−1/2}, N_μ and G_c = K_*²/32768, as Arb balls.

    Returns a dict with ``K_star``, ``N_mu``, ``G_c`` (balls), ``F_star`` (the bracket of the
    maximum as a ball) and ``argmax`` (float interval containing the maximizing B).
    """
    r = _check_r(r)
    J = _J(alpha)
    sm = signal_max(mu, prec=prec)
    with workprec(check_prec(prec)):
        N = n_mu(mu, prec=prec)
        Fs = sm["lo"].union(sm["hi"])
        K = _arb_of(J) / (2 * arb(r).sqrt() * N) * Fs
        return {"K_star": K, "N_mu": N, "G_c": K * K / 32768, "F_star": Fs,
                "argmax": sm["argmax"], "boxes": sm["boxes"]}


def family_signal_bounds(*, r, alpha=0.0, prec=256):
    r"""A bracket of K_* valid for *every* probability measure μ on [1/3, 1].

    Lower: N_μ ≤ max_v N_v = N_{1/3} (Minkowski; N_v² = K((1 − v)²) is decreasing on [1/3, 1])
    and max_B F ≥ F(1) ≥ 2^{−1/2} min_v v^{−3/2}φ(v^{−1/2}) = 2^{−1/2}φ(1) (v^{−3/2}e^{−1/(2v)} is
    decreasing for v ≥ 1/3).  Upper: N_μ ≥ |⟨g_μ, h₃⟩| = √6 (App. D, MP2) and
    √B e^{−B/(2v)} ≤ √v e^{−1/2}, so F(B) ≤ max_v v^{−1}e^{−1/2}/√(2π) = 3e^{−1/2}/√(2π).
    Returns (lo, hi) Arb balls.
    """
    r = _check_r(r)
    J = _arb_of(_J(alpha))
    with workprec(check_prec(prec)):
        pref = J / (2 * arb(r).sqrt())
        n13 = _kernel(arb(4) / 9).sqrt()
        two_pi = 2 * arb.pi()
        lo = pref / n13 * arb(2).rsqrt() * (arb(-1) / 2).exp() * two_pi.rsqrt()
        hi = pref / arb(6).sqrt() * 3 * (arb(-1) / 2).exp() * two_pi.rsqrt()
        return lo, hi


# ------------------------------------------------------------------------------- validation
def _check_r(r):
    if isinstance(r, bool) or not isinstance(r, numbers.Integral) or r < 1:
        raise ValueError(f"`r` must be an int >= 1, got {r!r}")
    return int(r)


def _J(alpha):
    a = _exact(alpha, "alpha")
    if not 0 <= a < 1:
        raise ValueError(f"`alpha` must satisfy 0 <= alpha < 1 (σ_α, §3), got {float(a)!r}")
    return 1 - a


def _tol(x, name, lo, hi, lo_open=True, hi_open=False):
    q = _exact(x, name)
    ok = (lo < q if lo_open else lo <= q) and (q < hi if hi_open else q <= hi)
    if not ok:
        rng = f"{'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}"
        raise ValueError(f"`{name}` must lie in {rng} (Theorem 4.1), got {float(q)!r}")
    return q


def _pos_int(x, name):
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < 1:
        raise ValueError(f"`{name}` must be a positive int, got {x!r}")
    return int(x)


def _ceil_int(x) -> int:
    """The least integer certainly ≥ every point of the ball x (x of moderate size)."""
    hi = _hi(x).ceil()
    return int(hi.mid().unique_fmpz())


def _amin(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = out.min(x)
    return out


def _amax(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = out.max(x)
    return out


# ------------------------------------------------------------------------------- prescription
def _chain(*, r, J, K, delta, eps_L, eps_G, m, d, h):
    """Every constant of App. C.1 as Arb balls, at signal K (a ball), in the printed order.

    ``m``, ``d``: ints or None (None: the least admissible integer); ``h``: an exact Arb value or
    None (None: the lower end of the h bound, the largest certainly admissible mesh)."""
    v = {}
    Jb = _arb_of(J)
    rb = arb(r)
    dl, eL, eG = _arb_of(delta), _arb_of(eps_L), _arb_of(eps_G)
    v["J"] = Jb
    lam = rb.rsqrt()
    v["lambda_star"] = lam
    chi0 = arb(1) / 10 ** 4
    v["chi_0"] = chi0
    v["e_star"] = e_s = Jb * chi0 / (4096 * rb.sqrt())
    v["eps_BM"] = eBM = e_s / 8
    v["kappa_BM"] = kBM = Jb * lam / 1024
    v["theta"] = th = _amin(lam / 1000, e_s / 16, (kBM * eBM / 6400).sqrt())
    v["R"] = R = _amax(arb(8), 16 / e_s, (25600 / (kBM * eBM)).sqrt())
    s2 = arb(2).sqrt()
    pG = ((2 / s2).erf() - (1 / s2).erf()) / 2
    pI = ((1 / s2).erf() - (arb(1) / 2 / s2).erf()) / 2
    last = arb(1) if r == 1 else (th / (4 * arb(r - 1).sqrt()) / s2).erf() ** (r - 1)
    v["p_rect"] = pr = pG * pI ** 2 * last
    v["m_bound"] = mb = _amax(rb, (16 * rb / dl).log() / pr)
    m = _ceil_int(mb) if m is None else m
    mb_ = arb(m)
    v["m"] = mb_
    v["ell"] = ell = (64 * mb_ / dl).log()
    v["B_1"] = B1 = 64 * rb.sqrt() / Jb
    v["ell_I"] = ellI = (8 * mb_ / dl).log()
    v["Q_I"] = QI = rb + 2 * (rb * ellI).sqrt() + 2 * ellI
    v["d_bound"] = db = _amax(rb, arb(64), 128 * ell, 16 * rb / dl, 16 * ellI,
                              2 * QI * (32 * B1 / chi0) ** (arb(2) / 3))
    d = max(_ceil_int(db), r + 1) if d is None else d
    dd = arb(d)
    v["d"] = dd
    v["x_0"] = x0 = dd.rsqrt()
    v["k"] = k = Jb * lam / (4096 * dd ** 2)
    v["Q_star"] = Qs = k / (10 * dd.sqrt())
    v["T_1"] = T1 = (4 / eBM).log() / kBM
    v["T_0"] = T0 = 4 * R / k + T1 + 1
    v["S_0"] = S0 = 5 * mb_ * (4 * T0).exp()
    v["v_star"] = vs = 4 * R ** 2
    phi1 = (arb(-1) / 2).exp() * (2 * arb.pi()).rsqrt()
    v["c_G"] = cG = Jb * phi1 * eG.sqrt() / (128 * rb.sqrt())
    v["Gamma"] = Gam = (3 * S0 / 4 + 400 * mb_) / vs
    v["T_G"] = TG = 100 / K * (2 * Gam / cG).log()
    v["T"] = T = T0 + TG + 1
    v["S"] = S = S0 * (4 * (TG + 1)).exp()
    v["M"] = M = 2 * S.sqrt()
    v["h_bound"] = hb = _amin(arb(2) ** -12, k / (512 * M), 1 / (4 * M ** 2 * T),
                              kBM * eBM / 3200, K / 10 ** 4, 1 / (1000 * rb), arb(1) / 10 ** 4,
                              cG * vs / (20000 * T * S))
    h = _lo(hb) if h is None else h
    v["h"] = h
    v["nu_bound"] = nu = _amin(Qs / 4, 1 / (400 * T), x0 / (4 * M * T),
                               th * lam * k * x0 ** 2 / (2048 * M ** 3), k / (512 * M),
                               2 * k / (3 * M ** 2), 1 / (80 * M ** 2 * T), kBM * eBM / 320,
                               K / 10 ** 4, (K / (1000 * T)).sqrt(), cG * vs / (80 * T * S))
    v["N_star"] = Ns = (4 * R / (h * k)).ceil() + (T1 / h).ceil()
    v["N"] = N = Ns + (TG / h).ceil()
    v["gamma"] = gam = K / 2
    lg = (32 * S / (gam * vs)).log()
    v["k_c"] = kc = (2 / (h * gam) * lg).ceil()
    v["T_c"] = Tc = h + 2 / gam * lg
    v["S_c"] = Sc = S * (4 * Tc).exp()
    v["N_c"] = N + kc
    v["R_c2"] = Rc2 = gam * mb_ / 64
    v["nu_c_bound"] = nuc = _amin(gam / 16, (gam / (8 * Tc)).sqrt())
    v["zeta_bound"] = _amin(nu / 2, chi0 / 128, lam / 100, chi0 / (32 * B1), nuc / 2)
    Gc = K ** 2 / 32768
    v["s2_bound"] = _amin(mb_ * nu / S, mb_ * eL / (20 * M ** 2), mb_ * nuc / Sc, Rc2 / (4 * Sc),
                          mb_ * Gc / Sc, mb_ * eL / (20 * Sc))
    v["K_star"] = K
    v["G_c"] = Gc
    return v


#: constants that do not depend on K_* (the rest are monotone in K_*: see :func:`prescription`)
_K_FREE = ("J", "lambda_star", "chi_0", "e_star", "eps_BM", "kappa_BM", "theta", "R", "p_rect",
           "m_bound", "m", "ell", "B_1", "ell_I", "Q_I", "d_bound", "d", "x_0", "k", "Q_star",
           "T_1", "T_0", "S_0", "v_star", "c_G", "Gamma", "N_mu")


def prescription(*, r, alpha=0.0, mu, delta, eps_L, eps_G, m=None, d=None, h=None, prec=256):
    r"""Every constant of the App. C.1 prescription for Theorem 4.1 (λ_* = r^{−1/2}, ζ = 0).

    Parameters
    ----------
    r : int
        Teacher rank (≥ 1).
    alpha : float
        Leaky slope, 0 ≤ α < 1 (J = 1 − α).
    mu : list of (weight, v) or None
        The mixing measure (:func:`mu_atoms`); None means "some μ on [1/3, 1]": K_* is then the
        family-wide bracket of :func:`family_signal_bounds` and each constant is the hull of
        its values at the two ends (every constant downstream of K_* is monotone in K_*: T_G,
        T, S, M, N, k_c, T_c, S_c, N_c decrease and the h, ν, ν_c, ζ, s² bounds, γ, R_c², G_c
        increase as K_* grows, at fixed m, d, h).
    delta, eps_L, eps_G : float or str
        Tolerances 0 < δ < 1/2, 0 < ε_L ≤ 1, 0 < ε_G ≤ 1/4.
    m, d : int, optional
        The sizes used downstream (ℓ, ℓ_I, Q_I and the d bound depend on m; k and everything
        after it on d).  Default: the least admissible integers.
    h : float or str, optional
        The mesh used for N_*, N, k_c, T_c, S_c, N_c and the s² bound.  Default: the lower end
        of the h bound (the largest certainly admissible mesh).
    prec : int
        Arb working precision in bits.

    Returns
    -------
    dict
        ``constants``: list of records in the paper's order (``name``, ``symbol``, ``eq``,
        ``value`` (decimal of the midpoint), ``lo``/``hi`` (outward-rounded floats, None when
        outside the float range), ``log10`` ([lo, hi] or None), ``provenance``); ``balls``: the
        same as (lo, hi) pairs of exact Arb values, keyed by name; ``signal``: K_* details.
    """
    r = _check_r(r)
    J = _J(alpha)
    dl = _tol(delta, "delta", 0, Fraction(1, 2), hi_open=True)
    eL = _tol(eps_L, "eps_L", 0, 1)
    eG = _tol(eps_G, "eps_G", 0, Fraction(1, 4))
    m = None if m is None else _pos_int(m, "m")
    d = None if d is None else _pos_int(d, "d")
    prec = check_prec(prec)
    if h is not None:
        with workprec(prec):
            _run_value(h, "h")
    if mu is not None:
        sig = signal_constant(mu, r=r, alpha=1 - J, prec=prec)
        Ks = [sig["K_star"]]
        signal = {"K_star": _record("K_star", sig["K_star"], "K_*", "(8)"),
                  "argmax_B": sig["argmax"], "boxes": sig["boxes"], "family": False}
    else:
        lo, hi = family_signal_bounds(r=r, alpha=1 - J, prec=prec)
        Ks = [lo, hi]
        signal = {"K_star": None, "argmax_B": None, "boxes": 0, "family": True}
    with workprec(prec):
        hv = None if h is None else _run_value(h, "h")
        if hv is None and len(Ks) == 2:
            # one fixed mesh for both ends: the h bound is increasing in K_*, so its lower end
            # at the smaller K_* is admissible for every μ
            hv = _lo(_chain(r=r, J=J, K=Ks[0], delta=dl, eps_L=eL, eps_G=eG, m=m, d=d,
                            h=None)["h_bound"])
        runs = [_chain(r=r, J=J, K=K, delta=dl, eps_L=eL, eps_G=eG, m=m, d=d, h=hv) for K in Ks]
        if mu is not None:
            runs[0]["N_mu"] = sig["N_mu"]
        balls = {}
        for key in _KEYS:
            if key == "N_mu" and mu is None:
                continue
            xs = [rn[key] for rn in runs]
            balls[key] = (_emin([_lo(x) for x in xs]), _emax([_hi(x) for x in xs]))
        recs = []
        for key, sym, eq in ORDER:
            if key not in balls:
                continue
            lo_, hi_ = balls[key]
            if len(Ks) == 1 or key in _K_FREE:
                recs.append(_record(key, runs[0][key], sym, eq))
                continue
            # the hull of the two ends, from its endpoints (a midpoint-radius ball of two
            # values of very different magnitude would lose the sign of its lower end)
            recs.append({"name": key, "symbol": sym, "eq": eq,
                         "value": _sci(lo_) if lo_ == hi_ else f"[{_sci(lo_)}, {_sci(hi_)}]",
                         "lo": _float_or_none(arb_bounds(lo_)[0]),
                         "hi": _float_or_none(arb_bounds(hi_)[1]),
                         "log10": _log10_pair(lo_, hi_), "provenance": "rigorous"})
        for key in ("S", "M", "h_bound", "nu_bound", "S_c", "s2_bound", "N", "N_c"):
            lo_, hi_ = balls[key]
            if not (lo_.is_finite() and hi_.is_finite() and lo_ > 0):
                raise ArithmeticError(f"prescription: {key} is not certainly positive and finite "
                                      f"at prec = {prec}; try a higher prec")
        return {"constants": recs, "balls": balls, "signal": signal,
                "m": int(runs[0]["m"].mid().unique_fmpz()),
                "d": int(runs[0]["d"].mid().unique_fmpz())}


def _emin(xs):
    """The least of exact Arb values (exact comparisons)."""
    out = xs[0]
    for x in xs[1:]:
        if x < out:
            out = x
    return out


def _emax(xs):
    out = xs[0]
    for x in xs[1:]:
        if x > out:
            out = x
    return out


def _log10_pair(lo, hi):
    if not lo > 0:
        return None
    return [arb_bounds(lo.log() / _ln10())[0], arb_bounds(hi.log() / _ln10())[1]]


# ------------------------------------------------------------------------------- the report
#: tolerances used when a run does not state them: the largest allowed ε_L, ε_G and δ = 1/4
DEFAULT_TOLERANCES = {"delta": 0.25, "eps_L": 1.0, "eps_G": 0.25}

_REPORT_KEYS = {"r", "alpha", "mu", "link", "m", "d", "s", "h", "updates", "delta", "eps_L",
                "eps_G", "prec", "structural"}


def _cmp(value, lo, hi, sense):
    """met / not met / undecided for ``value`` (exact Arb) against the bound [lo, hi]:
    ``sense`` "ge" (value ≥ bound) or "le" (value ≤ bound)."""
    if sense == "ge":
        return "met" if value >= hi else ("not met" if value < lo else "undecided")
    return "met" if value <= lo else ("not met" if value > hi else "undecided")


def _bound_rec(balls, key):
    lo, hi = balls[key]
    lo_f, hi_f = arb_bounds(lo)[0], arb_bounds(hi)[1]
    return {"lo": _float_or_none(lo_f), "hi": _float_or_none(hi_f), "log10": _log10_pair(lo, hi),
            "value": _sci(lo) if lo == hi else (_sci(lo) if _sci(lo) == _sci(hi)
                                                 else f"[{_sci(lo)}, {_sci(hi)}]")}


def hypotheses_report(settings):
    r"""Which App. C.1 bounds of Theorem 4.1 a run's settings meet, and what the theorem gives.

    Parameters
    ----------
    settings : dict
        ``r`` (int), ``alpha`` (0 ≤ α < 1, default 0), ``mu`` ((weight, v) atoms) or ``link``
        (a link name, :func:`mu_from_link`; neither or a link outside the family: the family-wide
        K_* bracket is used and the teacher hypothesis is not met), the run's ``m``, ``d``,
        ``s`` (every initial entry N(0, s²/d)), ``h`` (fixed force step; raw step η = mh/2) and
        ``updates`` (its horizon, in updates); optional ``delta``, ``eps_L``, ``eps_G``
        (default :data:`DEFAULT_TOLERANCES`), ``prec`` (bits, default 256) and ``structural``
        (a list of {"name", "status", "detail"} for hypotheses decided elsewhere, e.g. a
        fixed-step integrator; reported and counted like the others).  ``s`` and ``h`` may be
        decimal strings (e.g. ``"1e-400000"``) for values below the float range.  A missing
        ``m``, ``d``, ``s``, ``h`` or ``updates`` is reported as "not given" and the constants
        downstream use the least admissible m, d and the largest admissible h.

    Returns
    -------
    dict (JSON-serializable)
        ``theorem``, ``inputs``, ``constants`` (:func:`prescription`, the paper's order),
        ``hypotheses`` (list of {"name", "statement", "eq", "bound", "run_value", "status",
        "detail"}; status "met" / "not met" / "undecided" / "not given"), ``status``
        ("inside" when every hypothesis is met, "outside" when one is not met, else
        "undecided"), ``not_met``, ``conclusions`` (what Theorem 4.1 / E.1 then gives, each
        with its constants) and ``summary`` (one line).
    """
    if not isinstance(settings, dict):
        raise TypeError(f"`settings` must be a dict, got {type(settings).__name__}")
    bad = set(settings) - _REPORT_KEYS
    if bad:
        raise ValueError(f"unknown settings {sorted(bad)}; valid: {sorted(_REPORT_KEYS)}")
    if "r" not in settings:
        raise ValueError("`settings` needs `r` (the teacher rank)")
    r = _check_r(settings["r"])
    alpha = settings.get("alpha", 0.0)
    tol = {k: settings.get(k, v) for k, v in DEFAULT_TOLERANCES.items()}
    prec = check_prec(settings.get("prec", 256))
    structural = list(settings.get("structural", []))
    if "mu" in settings and settings["mu"] is not None:
        mu = mu_atoms(settings["mu"])
        teacher = {"name": "teacher", "statement": "y = r^{-1/2} Σ_i q_μ(u_iᵀx), μ on [1/3, 1] "
                   "(eqs. (7), (31); λ_i = r^{-1/2}, e = 0)", "status": "met",
                   "detail": "μ = " + ", ".join(f"{float(w):.6g}·δ_{float(v):.6g}" for w, v in mu)}
    else:
        link = settings.get("link")
        mu, exact = mu_with_exactness(link) if link is not None else (None, True)
        if mu is None:
            teacher = {"name": "teacher", "statement": "link in the g_μ family of eq. (7)",
                       "status": "not met" if link is not None else "not given",
                       "detail": (f"link {link!r} is not a positive mixture of the damped cubics "
                                  "g_v of eq. (7); K_* is bracketed over the whole family"
                                  if link is not None else "no link or μ given; K_* is bracketed "
                                  "over the whole family")}
        else:
            teacher = {"name": "teacher", "statement": "link in the g_μ family of eq. (7)",
                       "status": "met", "detail": f"link {link!r}: μ = " + ", ".join(
                           f"{float(w):.6g}·δ_{float(v):.6g}" for w, v in mu)
                       + ("" if exact else " (weights rounded at 2^-400: irrational "
                          "normalizations √6 / N_v; the constants are those of this μ)")}
    m = settings.get("m")
    d = settings.get("d")
    m = None if m is None else _pos_int(m, "m")
    d = None if d is None else _pos_int(d, "d")
    h = settings.get("h")
    s = settings.get("s")
    with workprec(prec):
        hq = None if h is None else _run_value(h, "h")
        sq = None if s is None else _run_value(s, "s")
    upd = settings.get("updates")
    if upd is not None and (isinstance(upd, bool) or not isinstance(upd, numbers.Integral)
                            or upd < 0):
        raise ValueError(f"`updates` must be a nonnegative int, got {upd!r}")
    P = prescription(r=r, alpha=alpha, mu=mu, delta=tol["delta"], eps_L=tol["eps_L"],
                     eps_G=tol["eps_G"], m=m, d=d, h=h, prec=prec)
    balls = P["balls"]
    hyps = [teacher]
    with workprec(prec):
        def entry(name, statement, eq, key, value, sense, shown):
            b = _bound_rec(balls, key)
            if value is None:
                return {"name": name, "statement": statement, "eq": eq, "bound": b,
                        "run_value": None, "status": "not given", "detail": "not given"}
            st = _cmp(value, *balls[key], sense)
            op = "≥" if sense == "ge" else "≤"
            rel = {"met": op, "not met": "<" if sense == "ge" else ">", "undecided": "?"}[st]
            return {"name": name, "statement": statement, "eq": eq, "bound": b,
                    "run_value": shown, "status": st,
                    "detail": f"{name} = {shown} {rel} {b['value']}"}

        hyps.append(entry("m", "m ≥ max{r, p_rect⁻¹ log(16r/δ)}", "(34)", "m_bound",
                          None if m is None else arb(m), "ge", m))
        e_d = entry("d", "integer d > r, d ≥ max{r, 64, 128ℓ, 16r/δ, 16ℓ_I, 2Q_I(32B₁/χ₀)^{2/3}} "
                    "(ℓ, ℓ_I, Q_I at the run's m)", "(35)", "d_bound",
                    None if d is None else arb(d), "ge", d)
        if d is not None and d <= r:
            e_d["status"], e_d["detail"] = "not met", f"d = {d} ≤ r = {r}"
        hyps.append(e_d)
        hyps.append(entry("s", "s² ≤ min{mν/S, mε_L/(20M²), mν_c/S_c, R_c²/(4S_c), mG_c/S_c, "
                          "mε_L/(20S_c)} (largest admissible ν, ν_c)", "(42)", "s2_bound",
                          None if sq is None else sq ** 2, "le",
                          None if sq is None else _num(s)))
        if sq is not None:
            hyps[-1]["detail"] = hyps[-1]["detail"].replace(
                f"s = {_num(s)}", f"s² = {_sci(sq ** 2)}", 1)
        hyps.append(entry("h", "0 < h ≤ min{2⁻¹², k/(512M), 1/(4M²T), κ_BMε_BM/3200, K_*/10⁴, "
                          "1/(1000r), 10⁻⁴, c_Gv_*/(20000TS)}", "(37)", "h_bound",
                          hq, "le",
                          None if hq is None else _num(h)))
        hyps.append(entry("horizon", "the run reaches the acquisition checkpoint N = N_* + "
                          "⌈T_G/h⌉ (at the run's h)", "(39)", "N",
                          None if upd is None else arb(int(upd)), "ge", upd))
        hyps[-1]["N_c"] = _bound_rec(balls, "N_c")
        z = _bound_rec(balls, "zeta_bound")
        hyps.append({"name": "zeta", "statement": "0 ≤ ζ ≤ min{ν/2, χ₀/128, λ_*/100, χ₀/(32B₁), "
                     "ν_c/2} (ζ = 0 in Theorem 4.1)", "eq": "(41)", "bound": z, "run_value": 0,
                     "status": "met", "detail": f"ζ = 0 ≤ {z['value']}"})
        for st in structural:
            if not isinstance(st, dict) or not {"name", "status"} <= set(st):
                raise ValueError("`structural` entries must be dicts with 'name' and 'status'")
            if st["status"] not in ("met", "not met", "undecided", "not given"):
                raise ValueError(f"structural status must be met / not met / undecided / not "
                                 f"given, got {st['status']!r}")
            hyps.append({"name": str(st["name"]), "statement": str(st.get("statement", "")),
                         "eq": str(st.get("eq", "")), "bound": None, "run_value": None,
                         "status": st["status"], "detail": str(st.get("detail", ""))})
        statuses = [hp["status"] for hp in hyps]
        status = ("outside" if "not met" in statuses else
                  "inside" if all(x == "met" for x in statuses) else "undecided")
        not_met = [hp["name"] for hp in hyps if hp["status"] == "not met"]
        chi0 = arb(1) / 10 ** 4
        gap = 1 - chi0 / 8 - ((arb(3) / 5).sqrt() + chi0 / 64) ** 2
        eL, eG, dl = (_exact(tol[k], k) for k in ("eps_L", "eps_G", "delta"))
        Gc = _bound_rec(balls, "G_c")
        Nr, Ncr = _bound_rec(balls, "N"), _bound_rec(balls, "N_c")
        applies = {"inside": True, "outside": False}.get(status)
        conclusions = [
            {"name": "probability", "statement": f"all below hold simultaneously with probability "
             f"≥ 1 − 7δ/8 = {float(1 - 7 * dl / 8):.6g} over the initialization", "eq": "E.1"},
            {"name": "loss band", "statement": f"for 0 ≤ n ≤ N_c: {float(1 - eL / 16):.6g} ≤ L_n ≤ "
             f"{float(1 + eL / 16):.6g}, L_n ≥ 1 − G_c (G_c = {Gc['value']}), max/min ≤ "
             f"{float(1 + eL / 4):.6g}", "eq": "(10), (47)", "N_c": Ncr, "G_c": Gc},
            {"name": "alignment", "statement": f"A_min,0 ≤ A_mean,0 ≤ 1/4; A_min,N ≥ "
             f"{float(1 - eG):.6g}; A_mean,N ≥ {float(1 - eG / r):.6g}; ΔA_min ≥ 3/4 − ε_G = "
             f"{float(Fraction(3, 4) - eG):.6g} ≥ 1/2; positive rank-r cutoff gaps at 0 and N",
             "eq": "(11), (44)-(45)", "N": Nr},
            {"name": "refit", "statement": f"R(0) ≥ 1 − χ₀/8 = 0.9999875, R(N) < (√(3/5) + "
             f"χ₀/64)², so R(0) − R(N) > {R_GAP} = {_sci(gap)} > 0.399", "eq": "(12), (46)",
             "gap": arb_bounds(gap)[0]},
            {"name": "later loss decrease", "statement": "some N₂ > N_c has L_{N₂} ≤ 1 − 2G_c and "
             "L_n − L_{N₂} ≥ G_c for every n ≤ N_c", "eq": "(13)", "G_c": Gc},
        ]
        for c in conclusions:
            c["applies"] = applies
    inputs = {"r": r, "alpha": float(_exact(alpha, "alpha")),
              "mu": None if mu is None else [[float(w), float(v)] for w, v in mu],
              "link": settings.get("link"), "m": m, "d": d,
              "s": None if s is None else _num(s), "h": None if h is None else _num(h),
              "updates": upd, "delta": float(_exact(tol["delta"], "delta")),
              "eps_L": float(_exact(tol["eps_L"], "eps_L")),
              "eps_G": float(_exact(tol["eps_G"], "eps_G")), "prec": prec,
              "m_used": P["m"], "d_used": P["d"]}
    rep = {"theorem": "Kumar (arXiv 2609.39408), Theorem 4.1 / E.1; prescription App. C.1, "
                      "eqs. (33)-(42), λ_* = r^{-1/2}, ζ = 0",
           "inputs": inputs, "constants": P["constants"], "signal": P["signal"],
           "hypotheses": hyps, "status": status, "not_met": not_met, "conclusions": conclusions}
    rep["summary"] = summary_line(rep)
    return rep


def _num(x):
    """A plain-data form of a run value: the float itself, or the decimal string given."""
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


#: the size hypotheses, listed first in the summary line
_SIZES = ("m", "d", "s", "h", "horizon")


def summary_line(report) -> str:
    """One line: inside / outside / undecided; the size hypotheses (m, d, s, h, horizon) not
    met come first, with their bounds, then the other hypotheses not met."""
    hyps = report["hypotheses"]
    bad = [hp for hp in hyps if hp["status"] == "not met"]
    und = [hp for hp in hyps if hp["status"] in ("undecided", "not given")]
    if report["status"] == "inside":
        return ("inside the theorem's hypotheses (Theorem 4.1 / E.1, App. C.1: every bound on "
                "m, d, s, h and the horizon met)")
    if report["status"] == "outside":
        sizes = [hp for hp in bad if hp["name"] in _SIZES]
        other = [hp for hp in bad if hp["name"] not in _SIZES]
        parts = []
        if sizes:
            parts.append(f"{', '.join(hp['name'] for hp in sizes)} not met: "
                         + "; ".join(hp["detail"] for hp in sizes))
        if other:
            parts.append(("also " if sizes else "") + "not met: " + "; ".join(
                f"{hp['name']} ({hp['detail']})" for hp in other))
        if und:
            parts.append("undecided/not given: " + ", ".join(hp["name"] for hp in und))
        return "outside the theorem's hypotheses (" + "; ".join(parts) + ")"
    return ("hypotheses of Theorem 4.1 undecided (" + ", ".join(
        f"{hp['name']}: {hp['status']}" for hp in und) + ")")


# ------------------------------------------------------------------------------- popdyn runs
def settings_from_run_spec(spec, *, tolerances=None):
    """The :func:`hypotheses_report` settings of a popdyn run specification (``rec["spec"]``).

    Reading (stated, not tuned): r = the teacher's rank; α = 0 for relu, the negative slope for
    leaky_relu (σ_α(t) = αt + (1 − α)t₊ = max(t, αt)); μ from the link (:func:`mu_from_link`);
    m, d from the student (``preset = "paper_relu"`` is Kumar's student, eq. (2): mean-field 1/m
    output scaling, trained biases, no intercept, relu); s from the initialization: the
    ``"iid"`` convention draws every entry of A, W and B IID N(0, scale²/d) -- the paper's law
    (§3), so s = scale; ``"norm"`` draws W_jk ~ N(0, scale²/d) (s = scale) but heads and
    biases N(0, scale²); ``"entry"`` draws N(0, scale²) (s = scale·√d).  h: the fixed GD step
    ``lr`` (popdyn's Δt on L = ½E[(f − y)²]; with mean-field scaling this is the paper's force
    step, η = mh/2 on the full MSE); for persistent Armijo (``"armijo"``, App. A eq. (19)) its
    initial step ``h0`` (default 0.05), the largest step it can take (the accepted step never
    increases); for the adaptive ``flow`` integrator its smallest step ``h_min`` (every accepted
    step is ≥ h_min).  updates = ``max_updates``.

    Structural hypotheses the spec decides are reported beside them: a fixed step (method
    "gd"; Theorem 4.1 assumes simultaneous fixed-step GD, eq. (3) -- persistent Armijo's step is
    non-increasing and equals h0 at every update only if no trial is ever rejected, which the
    spec cannot tell, so "armijo" is *undecided*; "flow" is not met), the paper's student, the
    initialization law (met only for ``"iid"``, or ``"norm"`` at d = 1), a relu/leaky_relu
    activation and an additive teacher with unit coefficients.
    """
    from popdyn.models import PRESETS

    t, st, ini, tr = spec["teacher"], dict(spec["student"]), spec["init"], spec["train"]
    preset = st.get("preset")
    if preset is not None:
        if preset not in PRESETS:
            raise ValueError(f"`spec` student preset must be one of {sorted(PRESETS)}, "
                             f"got {preset!r}")
        st = {**st, **PRESETS[preset]}
    act = st.get("activation", "relu")
    alpha = 0.0 if act == "relu" else float(st.get("negative_slope", 0.01))
    d, m = int(st["d"]), int(st["m"])
    scale = float(ini["scale"])
    conv = ini.get("convention", "norm")
    s = scale * math.sqrt(d) if conv == "entry" else scale
    method = tr.get("method", "flow")
    h = {"gd": lambda: float(tr.get("lr", 0.05)), "armijo": lambda: float(tr.get("h0", 0.05))}.get(
        method, lambda: float(tr.get("h_min", 1e-6)))()
    structural = []

    def add(name, ok, detail, statement=""):
        status = ok if isinstance(ok, str) else ("met" if ok else "not met")
        structural.append({"name": name, "status": status, "detail": detail,
                           "statement": statement})

    add("activation", act in ("relu", "leaky_relu"), f"activation {act!r}",
        "σ_α(t) = αt + (1 − α)t₊, 0 ≤ α < 1 (§3)")
    fixed = {"gd": (True, "fixed-step GD"),
             "armijo": ("undecided", "persistent Armijo (App. A eq. (19)): the step starts at "
                        "h0 and is non-increasing, while the theorem assumes one fixed step h; "
                        "it is fixed-step GD at h0 only if no trial is rejected (h = h0 is "
                        "compared with the h bound)")}.get(
        method, (False, f"method {method!r}: an adaptive integrator, not one fixed step h (its "
                 "smallest step h_min is compared with the h bound)"))
    add("fixed step", fixed[0], fixed[1], "simultaneous fixed-step population GD, eq. (3)")
    add("student", st.get("scaling", "standard") == "mean_field" and st.get("bias", True)
        and not (st.get("intercept", True) and ini.get("fit_intercept", True)),
        (f"preset {preset!r}: " if preset else "")
        + f"scaling {st.get('scaling', 'standard')!r}, bias {st.get('bias', True)}, intercept "
        f"{st.get('intercept', True)} (fit_intercept {ini.get('fit_intercept', True)})",
        "f = (1/m)Σ_j A_jσ_α(W_jᵀx + B_j), trained biases, no intercept, eq. (2)")
    init_ok = conv == "iid" or (d == 1 and conv == "norm")
    add("initialization", init_ok,
        f"convention {conv!r}: every entry of A, W, B IID N(0, scale²/d)" if conv == "iid"
        else "all entries N(0, s²)" if init_ok
        else f"convention {conv!r}: heads and biases N(0, scale²) vs weights N(0, scale²/d)"
        if conv == "norm" else f"convention {conv!r}: every entry N(0, scale²)",
        "every entry of A, W, B IID N(0, s²/d) (§3)")
    kind = t.get("kind", "additive")
    add("additive teacher", kind == "additive" and t.get("kappa") is None
        and not t.get("normalize", False) in (True,),
        f"kind {kind!r}" + (f", kappa {t.get('kappa')!r}" if t.get("kappa") is not None else ""),
        "y = r^{-1/2} Σ_i q_μ(u_iᵀx) with unit coefficients (Theorem 4.1)")
    out = {"r": int(t.get("rank", 1)), "alpha": alpha, "link": t.get("link"), "m": m, "d": d,
           "s": s, "h": h,
           "updates": int(tr["max_updates"]) if "max_updates" in tr else None,
           "structural": structural}
    out.update(tolerances or {})
    return out
