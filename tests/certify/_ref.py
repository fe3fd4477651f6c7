"""Independent high-precision references for the certified layer (pure mpmath, >= 50 digits).

Shares no code with ``popdyn`` or ``certify`` and uses none of their methods (no Owen T, no
Hermite / Mehler series, no canonical ramps): every pair moment is a 2-D Gaussian integral
computed as an outer tanh–sinh quadrature (mpmath ``quad``) over the first unit's direction,
of the first function times the *conditional* expectation of the second one given it, which is
a textbook 1-D Gaussian closed form:

    E[F(t₁) G(t₂)] = ∫ φ(z) F(α₁z + b₁) · E_W[G(μ(z) + τW)] dz,
    t₁ = α₁Z + b₁,  t₂ = μ(Z) + τW,  μ(z) = (w₁·w₂/α₁) z + b₂,  τ² = |w₂|² − (w₁·w₂)²/|w₁|²,

with the geometry exact in rationals (float64 inputs are dyadic rationals), so τ = 0 exactly for
parallel or duplicated neurons and ρ within 1e−12 of 1 keeps its full precision.  The inner
closed forms: E[relu(μ + τW)] = μΦ(μ/τ) + τφ(μ/τ); E[1{μ + τW > 0}] = Φ(μ/τ);
E[(μ + τW)ⁿ] by the binomial theorem with E[W^{2j}] = (2j − 1)!!;
E[(μ + τW)^k e^{−a(μ+τW)²/2}] = (1 + aτ²)^{−1/2} e^{−aμ²/(2(1+aτ²))} E[(μ′ + τ′W)^k],
μ′ = μ/(1 + aτ²), τ′² = τ²/(1 + aτ²) (completing the square); E[sin(μ + τW)] = sin μ e^{−τ²/2}.
The outer quadrature is split at the kink of F and around the transition of the inner factor;
the integrand is scaled to O(1) (its maximum over a probe grid) because mpmath's quad controls
absolute errors; the estimated error must be below 10^−(dps−12) times max(|value|, 1) on that
scale (i.e. relative to the value, or to the integrand's size for values that cancel, such as
orthogonal polynomials at ρ ≈ 1e−17), else the grid is refined once and then it raises.

Pairs of polynomial functions are integrated exactly instead (the product of F(α₁z + b₁) and the
inner closed form is a polynomial in z; E[z^k] = (k − 1)!!), because orthogonal polynomials at
ρ ≈ 1e−17 leave values ~1e−63 that a quadrature resolves only against the integrand's size.

Functions are lists of atoms: ("pl", p, q) = p·relu + q·id, ("step", p, q) = p·1{t>0} + q
(relu'(0) = 0), ("poly", {n: c}), ("gp", a, {k: c}) = Σ c_k t^k e^{−a t²/2}, ("sin", w).
"""
from __future__ import annotations

import math
from fractions import Fraction

import mpmath

ctx = mpmath.MPContext()
ctx.dps = 60


def F(x) -> Fraction:
    """Exact rational of a float / int / Fraction."""
    if isinstance(x, Fraction):
        return x
    return Fraction(x)


def mpq(fr) -> "mpmath.mpf":
    fr = F(fr) if not isinstance(fr, mpmath.mpf) else fr
    if isinstance(fr, Fraction):
        return ctx.mpf(fr.numerator) / fr.denominator
    return ctx.mpf(fr)


# ------------------------------------------------------------------------------ functions
_SQ2PI = None


def _smooth_atoms(name, deriv):
    """Smooth activations as atoms: erf, erf′ (a Gaussian), gelu, gelu′ = Φ + tφ have closed
    conditional means; tanh and silu ("num") are integrated numerically in ``inner``."""
    if name == "erf":
        return [("erf",)] if deriv == 0 else [("gp", Fraction(2), {0: 2 / ctx.sqrt(ctx.pi)})]
    if name == "gelu":
        return [("gelu",)] if deriv == 0 else [("ncdf",), ("gp", Fraction(1),
                                                          {1: 1 / ctx.sqrt(2 * ctx.pi)})]
    if name in ("tanh", "silu"):
        return [("num", name, deriv)]
    raise ValueError(name)


def _num_eval(name, deriv, t):
    if name == "tanh":
        th = ctx.tanh(t)
        return th if deriv == 0 else 1 - th * th
    sg = 1 / (1 + ctx.exp(-t))
    return t * sg if deriv == 0 else sg + t * sg * (1 - sg)


def activation(name: str, slope: float = 0.01):
    if name in ("erf", "gelu", "tanh", "silu"):
        return _smooth_atoms(name, 0)
    if name == "relu":
        return [("pl", Fraction(1), Fraction(0))]
    if name == "leaky_relu":
        s = F(slope)
        return [("pl", 1 - s, s)]
    raise ValueError(name)


def derivative(fn):
    out = []
    for at in fn:
        if at[0] == "erf":
            out += _smooth_atoms("erf", 1)
            continue
        if at[0] == "gelu":
            out += _smooth_atoms("gelu", 1)
            continue
        if at[0] == "num":
            out.append(("num", at[1], 1))
            continue
        if at[0] != "pl":
            raise ValueError("derivative only for PL atoms")
        out.append(("step", at[1], at[2]))
    return out


def _he_monomials(k):
    out = {}
    for j in range(k // 2 + 1):
        out[k - 2 * j] = (-1) ** j * math.factorial(k) // (
            math.factorial(j) * math.factorial(k - 2 * j) * 2 ** j)
    return out


def _hk(k, w=1):
    """w · He_k/√k! as a poly atom (mpf coefficients)."""
    nrm = mpq(F(w)) / ctx.sqrt(math.factorial(k))
    return ("poly", {p: nrm * c for p, c in _he_monomials(k).items()})


def link(name: str):
    """A teacher link by its popdyn name (docs/design.md §2), as atoms."""
    name = name.strip()
    if name.startswith("mixture("):
        atoms = []
        for part in name[len("mixture("):-1].split(","):
            w, nm = part.strip().split("*", 1)
            for at in link(nm.strip()):
                atoms.append(_scale_atom(at, F(float(w))))
        return atoms
    if name.startswith("h") and name[1:].isdigit():
        return [_hk(int(name[1:]))]
    if name == "h3+0.3h2":
        return [_hk(3), _hk(2, Fraction(3, 10))]
    if name == "relu":
        return [("pl", Fraction(1), Fraction(0))]
    if name == "abs":
        return [("pl", Fraction(2), Fraction(-1))]
    if name == "sin":
        return [("sin", Fraction(1))]
    if name == "gaussian_bump":
        return [("gp", Fraction(1), {0: ctx.mpf(1)})]
    if name.startswith("damped_cubic:"):
        a = F(float(name.split(":", 1)[1]))
        return [("gp", a, {3: ctx.mpf(1)})]
    raise ValueError(f"no reference for link {name!r}")


def _scale_atom(at, w):
    k = at[0]
    if k in ("pl", "step"):
        return (k, at[1] * w, at[2] * w)
    if k == "poly":
        return ("poly", {p: c * mpq(w) for p, c in at[1].items()})
    if k == "gp":
        return ("gp", at[1], {p: c * mpq(w) for p, c in at[2].items()})
    if k == "sin":
        return ("sin", at[1] * w)
    raise ValueError(k)


def evaluate(fn, t):
    """F(t) at an mpf t."""
    s = ctx.mpf(0)
    for at in fn:
        k = at[0]
        if k == "pl":
            s += mpq(at[1]) * max(t, 0) + mpq(at[2]) * t
        elif k == "step":
            s += (mpq(at[1]) if t > 0 else 0) + mpq(at[2])
        elif k == "poly":
            s += ctx.fsum(c * t ** p for p, c in at[1].items())
        elif k == "gp":
            s += ctx.fsum(c * t ** p for p, c in at[2].items()) * ctx.exp(-mpq(at[1]) * t * t / 2)
        elif k == "sin":
            s += mpq(at[1]) * ctx.sin(t)
        elif k == "erf":
            s += ctx.erf(t)
        elif k == "gelu":
            s += t * ctx.ncdf(t)
        elif k == "ncdf":
            s += ctx.ncdf(t)
        elif k == "num":
            s += _num_eval(at[1], at[2], t)
    return s


def _wmom(j):
    """E[W^j]."""
    if j % 2:
        return 0
    out = 1
    for i in range(1, j, 2):
        out *= i
    return out


def _poly_mean(coeffs, mu, tau):
    """E[Σ c_n (μ + τW)^n]."""
    s = ctx.mpf(0)
    for n, c in coeffs.items():
        s += c * ctx.fsum(math.comb(n, j) * mu ** (n - j) * tau ** j * _wmom(j)
                          for j in range(0, n + 1, 2))
    return s


def inner(fn, mu, tau):
    """E[F(μ + τW)], W ~ N(0, 1) (τ >= 0)."""
    s = ctx.mpf(0)
    for at in fn:
        k = at[0]
        if k == "pl":
            p, q = mpq(at[1]), mpq(at[2])
            if tau == 0:
                r = max(mu, 0)
            else:
                r = mu * ctx.ncdf(mu / tau) + tau * ctx.npdf(mu / tau)
            s += p * r + q * mu
        elif k == "step":
            p, q = mpq(at[1]), mpq(at[2])
            r = (1 if mu > 0 else 0) if tau == 0 else ctx.ncdf(mu / tau)
            s += p * r + q
        elif k == "poly":
            s += _poly_mean(at[1], mu, tau)
        elif k == "gp":
            a = mpq(at[1])
            den = 1 + a * tau * tau
            mu2 = mu / den
            tau2 = tau / ctx.sqrt(den)
            s += ctx.exp(-a * mu * mu / (2 * den)) / ctx.sqrt(den) * _poly_mean(at[2], mu2, tau2)
        elif k == "sin":
            s += mpq(at[1]) * ctx.sin(mu) * ctx.exp(-tau * tau / 2)
        elif k == "erf":          # E[erf(μ + τW)] = erf(μ/√(1 + 2τ²))
            s += ctx.erf(mu / ctx.sqrt(1 + 2 * tau * tau))
        elif k in ("gelu", "ncdf"):
            sd = ctx.sqrt(1 + tau * tau)      # E[Φ(μ + τW)] = Φ(μ/√(1 + τ²))
            if k == "ncdf":
                s += ctx.ncdf(mu / sd)
            else:                             # E[T Φ(T)] = μΦ(μ/sd) + τ² φ(μ/sd)/sd
                s += mu * ctx.ncdf(mu / sd) + tau * tau * ctx.npdf(mu / sd) / sd
        elif k == "num":
            if tau == 0:
                s += _num_eval(at[1], at[2], mu)
            else:
                s += _num_inner(at, mu, tau)
    return s


def _num_inner(at, mu, tau):
    """E[G(μ + τW)] for a "num" atom G (τ > 0) by tanh–sinh quadrature in w, split at
    0, ±2, ±8 (the Gaussian's mass) and at the transition w = −μ/τ only when it lies within
    |w| < 40.  (The former single split at −μ/τ alone sent, for a tiny neuron (τ = 1e−7,
    μ = 0.5: −μ/τ = −5e6), the whole Gaussian mass into a semi-infinite piece whose nodes
    missed it: E[tanh(0.5 + 1e−7 W)] came out ~1e−1341051072608 instead of tanh(0.5),
    the cause of the soak's 12 "violations" in its tiny-neuron tanh / silu cases.)
    The integrand is scaled to O(1) and the estimated error must be below 10^−(dps−12)
    relative (else ``ArithmeticError``)."""
    f = lambda w: ctx.npdf(w) * _num_eval(at[1], at[2], mu + tau * w)   # noqa: E731
    pts = [ctx.mpf(v) for v in (-8, -2, 0, 2, 8)]
    z0 = -mu / tau
    if abs(z0) < 40:
        pts.append(z0)
    grid = [-ctx.inf] + sorted(set(pts)) + [ctx.inf]
    S = max(abs(f(w)) for w in [ctx.mpf(k) / 4 for k in range(-16, 17)] + pts) or ctx.mpf(1)
    val, err = ctx.quad(lambda w: f(w) / S, grid, error=True, maxdegree=12)
    if err > ctx.mpf(10) ** (-(ctx.dps - 12)) * max(abs(val), 1):
        raise ArithmeticError(f"reference inner quadrature not converged (error {err})")
    return val * S


def _pmul(p, q):
    out = [ctx.mpf(0)] * (len(p) + len(q) - 1)
    for i, a in enumerate(p):
        for j, b in enumerate(q):
            out[i + j] += a * b
    return out


def _ppow(p, n):
    out = [ctx.mpf(1)]
    for _ in range(n):
        out = _pmul(out, p)
    return out


def _poly_in_z(fn, slope, shift, tau=None):
    """Coefficients (in z) of F(slope·z + shift) (tau None) or of E_W[F(slope·z + shift + τW)],
    for an all-polynomial F."""
    out = [ctx.mpf(0)]
    lin = [shift, slope]
    for at in fn:
        for n, c in at[1].items():
            if tau is None:
                terms = [(n, c)]
            else:
                terms = [(n - j, c * math.comb(n, j) * tau ** j * _wmom(j))
                         for j in range(0, n + 1, 2)]
            for k, cc in terms:
                pk = _ppow(lin, k)
                if len(pk) > len(out):
                    out += [ctx.mpf(0)] * (len(pk) - len(out))
                for i, v in enumerate(pk):
                    out[i] += cc * v
    return out


#: the rule for pairs of two numerically integrated functions (tanh, silu and derivatives):
#: "quad" (tanh–sinh inside tanh–sinh, mpmath's error estimates) or "trapezoid"
#: (:func:`_nested_trapezoid`, node counts from a stated error bound)
RULE = "quad"


def _is_num(fn):
    return len(fn) == 1 and fn[0][0] == "num"


def _num_strip(at):
    """(δ, K(t)) of a "num" atom: its complex singularities lie at distance >= 2δ from the real
    axis, and on the strip |Im t| <= δ its modulus is at most K(|Re t|):
    tanh (poles at iπ/2 + iπℤ, δ = π/4): |tanh t|² = (cosh 2x − cos 2y)/(cosh 2x + cos 2y) <= 1
    when cos 2y >= 0, so |tanh| <= 1 and |tanh′| = |1 − tanh²| <= 2;
    silu (the logistic σ has poles at iπ + 2iπℤ, δ = π/2): |1 + e^{−t}|² = 1 + 2e^{−x}cos y +
    e^{−2x} >= 1 for |y| <= π/2, so |σ(t)|, |1 − σ(t)| = |σ(−t)| <= 1, |silu t| <= |t| <=
    |x| + π/2 and |silu′ t| = |σ + tσ(1 − σ)| <= 1 + |x| + π/2."""
    name, deriv = at[1], at[2]
    if name == "tanh":
        return ctx.pi / 4, (lambda x: 1) if deriv == 0 else (lambda x: 2)
    half = ctx.pi / 2
    return half, (lambda x: x + half) if deriv == 0 else (lambda x: 1 + x + half)


def _trap_step(a, M, eps):
    """Step h of the trapezoidal rule on ℝ for u analytic in |Im z| < a with ∫|u(x + ib)|dx <= M
    (|b| < a): |error| <= 2M/(e^{2πa/h} − 1) (Trefethen & Weideman, SIAM Rev. 56 (2014),
    Thm 5.1), made <= eps."""
    return 2 * ctx.pi * a / ctx.log(1 + 2 * M / eps)


_TRAP_L = 12     # |z| <= 12: the Gaussian factor is below φ(12) = 2.1e−32 beyond


def _trap_nodes(h):
    n = int(ctx.ceil(_TRAP_L / h))
    return [k * h for k in range(-n, n + 1)]


def _phi(z):
    return ctx.exp(-z * z / 2) / ctx.sqrt(2 * ctx.pi)


def _nested_trapezoid(at1, a1, B1, at2, slope, B2, tau):
    """E[F(a₁Z + B₁) G(slope·Z + B₂ + τW)] for two "num" atoms F, G (τ > 0): trapezoidal rules
    in W (inside) and Z (outside) on |·| <= 12, node spacings from the error bound of
    :func:`_trap_step`, with the strips of :func:`_num_strip`:

    * inside, u(w) = φ(w)G(μ + τw) is analytic for |Im w| < a = min(δ_G/τ, 3) with
      ∫|u(x + ib)|dx <= e^{a²/2} E[K_G(|μ| + τ|W|)] <= e^{a²/2} K_G(|μ| + τ) (K_G affine,
      E|W| <= 1);
    * outside, v(z) = φ(z)F(a₁z + B₁)g(z), g(z) = E[G(slope·z + B₂ + τW)] (for complex z, the
      inner integrand keeps |Im| <= δ_G), analytic for |Im z| < min(δ_F/a₁, δ_G/|slope|, 3)
      with ∫|v| <= e^{a²/2} E[K_F(|B₁| + a₁|Z|) K_G(|B₂| + |slope||Z| + τ|W|)] <=
      e^{a²/2} K_F(|B₁| + a₁) K_G(|B₂| + |slope| + τ) (the K are affine with nonnegative
      coefficients and E[(p + α|Z|)(q + β|Z|)] <= (p + α)(q + β));
    * the sums beyond |z| = L and |w| = L (L >= 12 with φ(L) < 10^−(dps+4)) are below
      8φ(L)(1 + L)² times the K (added to the bound).

    The inner error enters the outer sum multiplied by at most ∫φ|F| <= K_F(|B₁| + a₁).  The
    total bound must be below 10^−(dps−12) of max(1, |value|) (else ``ArithmeticError``)."""
    dF, KF = _num_strip(at1)
    dG, KG = _num_strip(at2)
    target = ctx.mpf(10) ** (-(ctx.dps - 12))
    # outer step
    az = min(dF / a1, dG / abs(slope) if slope != 0 else ctx.mpf(3), ctx.mpf(3))
    kf = KF(abs(B1) + a1)
    kg = KG(abs(B2) + abs(slope) + tau)
    Mz = ctx.exp(az * az / 2) * kf * kg
    hz = _trap_step(az, Mz, target / 4)
    eps = target / (8 * (1 + kf))        # inner error per node
    aw = min(dG / tau, ctx.mpf(3))
    ew = ctx.exp(aw * aw / 2)
    global _TRAP_L
    # the truncation |·| <= L with φ(L) far below the target at this precision (L >= 12)
    _TRAP_L = max(12, int(ctx.ceil(ctx.sqrt(2 * (ctx.dps + 4) * ctx.log(10)))) + 1)
    tail = 8 * _phi(ctx.mpf(_TRAP_L)) * (1 + _TRAP_L) ** 2
    f1 = lambda t: _num_eval(at1[1], at1[2], t)      # noqa: E731
    f2 = lambda t: _num_eval(at2[1], at2[2], t)      # noqa: E731
    inner_err = ctx.mpf(0)
    hw_cache = {}
    total = ctx.mpf(0)
    for z in _trap_nodes(hz):
        mu = slope * z + B2
        Mw = ew * KG(abs(mu) + tau)
        # one spacing per octave of the bound (keeps the node sets few and reusable)
        key = int(ctx.ceil(ctx.log(Mw, 2)))
        if key not in hw_cache:
            hw = _trap_step(aw, ctx.mpf(2) ** key, eps)
            hw_cache[key] = (hw, [(w, _phi(w)) for w in _trap_nodes(hw)])
        hw, nodes = hw_cache[key]
        g = hw * ctx.fsum(pw * f2(mu + tau * w) for w, pw in nodes)
        pz = _phi(z)
        total += pz * f1(a1 * z + B1) * g
    val = hz * total
    # outer rule + inner errors (hz Σ φ|F| <= 2 K_F(|B₁| + a₁)) + the sums beyond |·| = 12
    bound = target / 4 + 2 * kf * eps + tail * (kf * kg + 1) * 4
    if bound > target * max(abs(val), 1):
        raise ArithmeticError(f"nested trapezoid bound {bound} too large")
    return val


def _kinks(fn):
    return any(at[0] in ("pl", "step") for at in fn)


# ------------------------------------------------------------------------------ moments
def mean(fn, w, b):
    """E[F(w·x + b)]."""
    n2 = sum(F(v) ** 2 for v in w)
    return inner(fn, mpq(F(b)), ctx.sqrt(mpq(n2)))


def pair(fn1, w1, b1, fn2, w2, b2):
    """E[F(w₁·x + b₁) G(w₂·x + b₂)] (see the module docstring)."""
    w1 = [F(v) for v in w1]
    w2 = [F(v) for v in w2]
    b1, b2 = F(b1), F(b2)
    n1 = sum(v * v for v in w1)
    n2 = sum(v * v for v in w2)
    c12 = sum(u * v for u, v in zip(w1, w2))
    if n1 == 0 and n2 == 0:
        return evaluate(fn1, mpq(b1)) * evaluate(fn2, mpq(b2))
    if n1 == 0:
        return evaluate(fn1, mpq(b1)) * inner(fn2, mpq(b2), ctx.sqrt(mpq(n2)))
    if n2 == 0:
        return evaluate(fn2, mpq(b2)) * inner(fn1, mpq(b1), ctx.sqrt(mpq(n1)))
    a1 = ctx.sqrt(mpq(n1))
    slope = mpq(c12) / a1                   # μ(z) = slope·z + b₂
    tau2 = (n1 * n2 - c12 * c12) / n1       # exact rational >= 0
    tau = ctx.sqrt(mpq(tau2))
    B1, B2 = mpq(b1), mpq(b2)
    if any(at[0] == "num" for at in fn2) and not any(at[0] == "num" for at in fn1):
        # the numerically integrated function goes outside (one quadrature instead of two)
        return pair(fn2, w2, b2, fn1, w1, b1)
    if RULE == "trapezoid" and tau > 0 and _is_num(fn1) and _is_num(fn2):
        # both numerically integrated: a nested trapezoidal rule with a stated error bound
        # (``_nested_trapezoid``) instead of tanh–sinh inside tanh–sinh
        if n2 > n1:      # the longer vector outside: the inner τ is then the smaller one
            return pair(fn2, w2, b2, fn1, w1, b1)
        return _nested_trapezoid(fn1[0], a1, B1, fn2[0], slope, B2, tau)
    if all(at[0] == "poly" for at in fn1 + fn2):
        # polynomials: exact Gaussian moments E[z^k] = (k − 1)!! of the product polynomial
        pz = _pmul(_poly_in_z(fn1, a1, B1), _poly_in_z(fn2, slope, B2, tau))
        return ctx.fsum(c * _wmom(k) for k, c in enumerate(pz))

    def f(z):
        return ctx.npdf(z) * evaluate(fn1, a1 * z + B1) * inner(fn2, slope * z + B2, tau)

    pts = []
    if _kinks(fn1):
        pts.append(-B1 / a1)
    if _kinks(fn2) and c12 != 0:
        z0 = -B2 / slope
        wdt = tau / abs(slope)
        pts.append(z0)
        if wdt > 0:
            for kk in (4, 32):
                pts += [z0 - kk * wdt, z0 + kk * wdt]
    if any(at[0] in ("erf", "gelu", "ncdf", "num", "gp") for at in fn1):
        z1 = -B1 / a1            # the transition of a smooth unit has width ~1/α
        pts += [z1 + kk / a1 for kk in (-8, -2, -0.5, 0, 0.5, 2, 8)]
    if any(at[0] in ("erf", "gelu", "ncdf", "num", "gp") for at in fn2) and c12 != 0:
        z2 = -B2 / slope
        wd2 = ctx.sqrt(1 + tau * tau) / abs(slope)
        pts += [z2 + kk * wd2 for kk in (-8, -2, 0, 2, 8)]
    Z = ctx.mpf(40)
    pts = sorted(set(p for p in pts if -Z < p < Z))
    grid = [-ctx.inf] + pts + [ctx.inf]
    # mpmath's quad controls the absolute error: scale the integrand to O(1) first, so that
    # tiny moments (e.g. ρ ~ 1e-158) keep their relative accuracy
    probe = [ctx.mpf(k) / 4 for k in range(-16, 17)] + pts
    S = max(abs(f(z)) for z in probe)
    if S == 0:
        S = ctx.mpf(1)
    tol = ctx.mpf(10) ** (-(ctx.dps - 12))
    val, err = ctx.quad(lambda z: f(z) / S, grid, error=True, maxdegree=12)
    if err > tol * max(abs(val), 1):
        # harder integrand (e.g. orthogonal polynomials leaving a tiny value): refine
        extra = [ctx.mpf(v) for v in (-8, -4, -2, 0, 2, 4, 8)]
        grid = [-ctx.inf] + sorted(set(pts + extra)) + [ctx.inf]
        val, err = ctx.quad(lambda z: f(z) / S, grid, error=True, maxdegree=20)
        if err > tol * max(abs(val), 1):
            raise ArithmeticError(f"reference quadrature not converged (error {err})")
    return val * S


# ------------------------------------------------------------------------------ composites
def units(student, params, teacher):
    """[(λ, fn, w, b)] for f − y (students λ = s a_j, teacher λ = −v_k) and the intercept."""
    m = student.m
    s = Fraction(1) if student.scaling == "standard" else Fraction(1, m)
    act = activation(student.activation, student.negative_slope)
    out = []
    for j in range(m):
        out.append((s * F(float(params.a[j])), act, list(params.W[j]),
                    float(params.b[j]) if student.bias else 0.0))
    if teacher.kind == "network":
        tf = activation(teacher.activation.name, teacher.activation.negative_slope)
        for k in range(teacher.k):
            out.append((-F(float(teacher.weights[k])), tf, list(teacher.U[k]),
                        float(teacher.bias[k])))
    else:
        g = link(teacher.link.name)
        for k in range(teacher.k):
            out.append((-F(float(teacher.weights[k])), g, list(teacher.U[k]), 0.0))
    return out, F(float(params.c))


def loss(student, params, teacher, dps: int = 55):
    """(L, E[y], E[y²]) as mpf."""
    with ctx.workdps(dps + 15):
        us, c = units(student, params, teacher)
        n = len(us)
        m = student.m
        E = [[None] * n for _ in range(n)]
        for i in range(n):
            for j in range(i, n):
                E[i][j] = E[j][i] = pair(us[i][1], us[i][2], us[i][3], us[j][1], us[j][2], us[j][3])
        mus = [mean(u[1], u[2], u[3]) for u in us]
        lam = [mpq(u[0]) for u in us]
        cm = mpq(c)
        tot = ctx.fsum(lam[i] * lam[j] * E[i][j] for i in range(n) for j in range(n))
        tot += 2 * cm * ctx.fsum(lam[i] * mus[i] for i in range(n)) + cm * cm
        t_idx = range(m, n)
        ey = ctx.fsum(-lam[i] * mus[i] for i in t_idx)
        ey2 = ctx.fsum(lam[i] * lam[j] * E[i][j] for i in t_idx for j in t_idx)
        return tot / 2, ey, ey2


def teacher_moments(student, params, teacher, dps: int = 55):
    """(E[y], E[y²]) as mpf."""
    with ctx.workdps(dps + 15):
        us, _ = units(student, params, teacher)
        tus = us[student.m:]
        ey = ctx.fsum(-mpq(u[0]) * mean(u[1], u[2], u[3]) for u in tus)
        ey2 = ctx.fsum(mpq(u[0]) * mpq(v[0]) * pair(u[1], u[2], u[3], v[1], v[2], v[3])
                       for u in tus for v in tus)
        return ey, ey2


def moment_matrices(student, params, teacher=None, dps: int = 55, with_B: bool = True):
    """(C, B, mu0, Ct) as lists of mpf (Ct only with a teacher; B None unless with_B)."""
    with ctx.workdps(dps + 15):
        us, _ = units(student, params, teacher) if teacher is not None else (None, None)
        m = student.m
        act = activation(student.activation, student.negative_slope)
        dact = derivative(act)
        W = params.W
        b = params.b if student.bias else [0.0] * m
        C = [[None] * m for _ in range(m)]
        B = [[None] * m for _ in range(m)]
        for i in range(m):
            for j in range(i, m):
                C[i][j] = C[j][i] = pair(act, W[i], b[i], act, W[j], b[j])
                if with_B:
                    B[i][j] = B[j][i] = pair(dact, W[i], b[i], dact, W[j], b[j])
        mu0 = [mean(act, W[i], b[i]) for i in range(m)]
        Ct = None
        if teacher is not None:
            tus = us[m:]
            Ct = [[pair(act, W[i], b[i], t[1], t[2], t[3]) for t in tus] for i in range(m)]
        return C, (B if with_B else None), mu0, Ct
