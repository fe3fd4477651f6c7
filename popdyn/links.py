r"""Teacher links: the scalar functions g in additive teachers y = Σ_k κ_k g(u_k·x).

A link is applied to the *raw* projection z = u·x ~ N(0, 1) and is exactly the function named
(docs/design.md §2): nothing is normalized silently.

Names (``LINK_NAMES``) and meanings
-----------------------------------
``h1`` … ``h6``
    normalized probabilists' Hermite polynomials h_k = He_k / √k!  (``h2`` = (z² − 1)/√2).
``h3+0.3h2``
    the literal sum h_3 + 0.3·h_2 (0.3 is the decimal 3/10).
``relu``, ``abs``, ``tanh``, ``sin``
    max(z, 0), |z|, tanh(z), sin(z).
``silu``, ``silu_centered``
    z·sigmoid(z) and silu(z) − E[silu(Z)].
``gaussian_bump``
    exp(−z²/2).
``damped_cubic:a`` (family, a > 0 finite; also ``get_link(("damped_cubic", a))``)
    z³·exp(−a z²/2), a Gaussian-damped cubic parametrized by its damping rate a. This is **not**
    the central paper's g_v (below): the paper's g_v has an extra linear term, the factor
    v^{−7/2} and a = 1/v − 1, and its subscript is a point-mass location, not a damping rate.
    Kept for compatibility. ``a`` is taken as a float64: ``"damped_cubic:1/3"`` means
    ``a = float(1/3)`` and its canonical name is ``damped_cubic:0.3333333333333333``.
``g:<v>``, ``q:<v>`` (family, v ∈ [1/3, 1] an exact rational; also ``get_link(("g", v))``)
    The damped cubics of Kumar (arXiv 2609.39408), eq. (7):
    g_v(t) = v^{−7/2}(t³ − 3vt)exp(−(1/v − 1)t²/2), and q_v = g_v/N_v with N_v = ‖g_v‖_{L²(γ)}.
    v is read exactly: "1/3", "2/3", "0.5" (= 1/2), "1"; a float is read as the simplest
    rational that rounds to it (popdyn._links_g.simplest_rational). Canonical names ``g:1/3``,
    ``g:1/2``, ``g:1``. g_1 = √6·h_3 (a polynomial).
``g_mu(w1*g:v1, w2*g:v2, ...)``, ``q_mu(...)`` (see :func:`g_mixture`)
    g_μ = ∫ g_v dμ for an atomic probability measure μ on [1/3, 1] (weights ≥ 0, exact
    rationals, summing to 1), and q_μ = g_μ/N_μ. The paper's Table 1 links (g_1 + g_{1/3})/2
    and 0.2g_{0.4} + 0.3g_{0.7} + 0.5g_1 are ``g_mu(1/2*g:1/3, 1/2*g:1)`` and
    ``g_mu(1/5*g:2/5, 3/10*g:7/10, 1/2*g:1)``. Coefficients from the exact series
    ⟨g_μ, h_{2j+3}⟩ = (−1)^j √((2j+3)!)/(2^j j!)·∫(1−v)^j dμ (no mean, no degree 1 or 2), the
    energy N_μ² = ∬K((1−v)(1−w))dμdμ, K(t) = 3(2+3t)/(1−t)^{7/2}, in closed form
    (:mod:`popdyn._links_g`).
``g_mu(uniform)``, ``q_mu(uniform)``
    g_μ for μ uniform on [1/3, 1], a measure given by its moments ∫(1−v)^j dμ = (2/3)^j/(j+1):
    coefficients from the same series, N_μ² = Σ_j (2j+3)!/(4^j j!²)·m_j² summed explicitly to
    n = N_tab + 129 with the geometric tail bound beyond; pointwise values by quadrature over v
    (float64: 432 fixed Gauss–Legendre atoms; mpmath: adaptive quadrature).
``mixture([(w1, link1), (w2, link2), …])``
    signed mixtures Σ_l w_l g_l (weights w_l finite and nonzero, of either sign; links by name or
    :class:`Link`). Nested mixtures are flattened (weights multiplied in float64). The canonical
    name is ``mixture(w1*name1, w2*name2, …)``, which :func:`get_link` also accepts. Mixtures of
    ``g``/``q`` links are again g_μ for a (signed) measure and keep the exact closed forms.
``user:<name>`` (see :func:`popdyn.links_user.from_hermite`, :func:`popdyn.links_user.from_callable`)
    a polynomial link a user brings, from a finite Hermite vector (exact) or from a callable
    (Gauss–Hermite quadrature with a stated error bound, :mod:`popdyn.links_user`); registered
    by name in the running process.

Representation
--------------
Every link is written g(z) = p·relu(z) + q·z + H(z): an exactly representable piecewise-linear
(PL) part (relu: (1, 0); abs: (2, −1); h1: (0, 1); otherwise (0, 0); mixtures add) and a
*Hermite part* H given by its normalized coefficients Ĥ_n = E[H(Z) h_n(Z)], n = 0..N_tab
(``coeffs``). N_tab = 512 for non-polynomial H, exactly the degree for polynomial H (N_tab = 0
and ``coeffs = [0.]`` when H = 0, e.g. relu, abs, h1). ``is_polynomial`` refers to H.

Derivative sequence: Ĥ'_n = E[H'(Z) h_n(Z)] = √(n+1)·Ĥ_{n+1}, n = 0..N_tab (``dcoeffs``;
``dcoeffs[N_tab]`` uses Ĥ_{N_tab+1}, which is computed but not stored in ``coeffs``).

Tail tables, indexed by the cut N = 0..N_tab (length N_tab + 1):
``t2[N] = Σ_{n>N} Ĥ_n²``, ``l1[N] = Σ_{n>N} |Ĥ_n|``, ``dt2[N] = Σ_{n>N} Ĥ'_n²``,
``dl1[N] = Σ_{n>N} |Ĥ'_n|``. They include everything beyond N_tab. They are assembled in mpmath
(≥ 40 significant digits; never as float64 differences) and rounded *upward* to float64, so each
stored entry is ≥ the true tail (a float64 tail that underflows is stored as the smallest
subnormal, not 0). The part beyond N_tab (``tail_beyond``) is

* ``"zero"`` — polynomial H: exactly 0 (the stored tails are exact sums);
* ``"parseval+sobolev"`` — for the L² tails the Parseval residual E[H^{(k)}²] − Σ_{n≤M}(n)_k Ĥ_n²
  (k = 0, 1; (n)_k the falling factorial) at a cut M ≥ N_tab + 1, computed in mpmath with
  closed-form (Gaussian-polynomial links, sin) or 120-digit quadrature (tanh, silu) energies, plus
  its error bound; for the ℓ¹ tails the Cauchy–Schwarz/Sobolev bound
  Σ_{m>M}|Ĥ_m| ≤ √(R_2(M)/M) and Σ_{m>M}√m|Ĥ_m| ≤ √(R_3(M)/(M−1)), R_k the residual of
  E[H^{(k)}²]. Tabulated links (tanh, silu, silu_centered) use M = 1024 (coefficients computed
  up to n = 1024 at precompute time, see ``data/_precompute/links.py``); closed-form links use
  M = N_tab + 129 at an adaptive precision of up to 400 digits (below ~1e−390 the residual is
  replaced by its resolution, an upper bound far below the float64 range). So the L² tails
  beyond N_tab are values (to ≥ 30 digits) wherever they are representable, and the ℓ¹ tails are
  the explicit sums up to M plus an upper bound for n > M (for the tails at N ≤ N_tab this
  bound is negligible unless the coefficients decay slowly, e.g. damped cubics with a ≳ 10,
  where it stays within a small factor of the truth).
* ``"closed-form"`` — the paper's g_μ / q_μ: coefficients explicit from the exact series up to
  n = N_tab + 129, beyond that the geometric bound of :mod:`popdyn._links_g` (|∫(1−v)^j dμ| ≤
  Wρ^j, W = Σ|w_l|, ρ = max|1 − v_l| ≤ 2/3): upper bounds, tight to many digits.
* ``"minkowski"`` — mixtures with a non-Gaussian-polynomial component (tanh, silu, sin, …): the
  part beyond N_tab is bounded by Minkowski / the triangle inequality from the components' own
  tails, (Σ_l |w_l| √t2_l[N_tab])² and Σ_l |w_l| l1_l[N_tab] (an upper bound, not a value; the
  absolute weights keep it valid for signed mixtures).
  Mixtures of Gaussian-polynomial links (h_k, h3+0.3h2, gaussian_bump, damped cubics, and PL
  links) are handled exactly as one Gaussian-polynomial function (``"parseval+sobolev"``).

Scalar moments of the whole g — ``mean`` = E[g], ``second_moment`` = E[g²], ``variance``,
``d_second_moment`` = E[g'²] — are computed in mpmath (closed forms, or quadrature at 40 digits;
tabulated links from 40-digit precomputed values) and stored as float64 (round to nearest) and
as 30-significant-digit strings (``mean_str`` …) for certification.

Coefficient sources: polynomials exactly; ``sin`` by E[sin(Z) He_n(Z)] = e^{−1/2} sin(nπ/2);
Gaussian-polynomial links P(z)·exp(−a z²/2) by the generating function
E[exp(−aZ²/2) He_n(Z)] = n!·[t^n] (1+a)^{−1/2} exp(−γt²/2), γ = a/(1+a), followed by the Jacobi
operator (z·f)^_n = √(n+1) f̂_{n+1} + √n f̂_{n−1} in mpmath with guard digits (any a on demand,
well under a second); tanh and silu from the table ``data/links/links.npz`` (Hermite-function
trapezoidal quadrature in 360/400-bit fixed point, two independent schemes agreeing to ~1e−100;
double-double storage, ~32 digits).

Pointwise evaluation (``__call__``, ``derivative``) is float64 numpy; the derivative of relu at 0
is taken as 0 (and of abs as sign(0) = 0).

Modules: names and parsing (:mod:`popdyn._links_names`), Hermite parts in mpmath
(:mod:`popdyn._links_hermite`), pointwise evaluators (:mod:`popdyn._links_eval`), the
:class:`Link` record (:mod:`popdyn._links_link`), building and caching links by canonical name
(:mod:`popdyn._links_build`); the closed forms of g_v and g_μ are :mod:`popdyn._links_g`.

References
----------
docs/design.md §2–§3; Kumar (arXiv 2609.39408), eq. (7) and App. A (the teacher
links g_v, g_μ, q_μ and the 13 scalar raw links of Table 1).
"""
from __future__ import annotations

from ._links_build import (_assemble, _canonical, _get_link,  # noqa: F401
                           _link_from_name)
from ._links_eval import _mp_hermite  # noqa: F401
from ._links_hermite import (N_TAB, _beyond_from_residuals, _ctx, _ff,  # noqa: F401
                             _hdata_gp, _hermite_monomials, _to_float,
                             hermite_monomials)
from ._links_link import Link
from ._links_names import (LINK_NAMES, _USER_LINKS, _check_measure, _check_weight,  # noqa: F401
                           _flatten, _measure_name, _mixture_name)


__all__ = ["Link", "get_link", "mixture", "LINK_NAMES", "N_TAB"]


def get_link(spec) -> Link:
    """Return the link named by ``spec`` (cached).

    Parameters
    ----------
    spec : str, Link or tuple
        A name from ``LINK_NAMES``, ``"damped_cubic:<a>"`` (a float or ratio, a > 0), the
        paper's ``"g:<v>"`` / ``"q:<v>"`` (v ∈ [1/3, 1], exact rational) and
        ``"g_mu(w1*g:v1, ...)"`` / ``"q_mu(...)"``, a mixture name
        ``"mixture(w1*name1, w2*name2, ...)"``, a registered ``"user:<name>"``, a
        :class:`Link` (returned as is), ``("damped_cubic", a)``, ``("g", v)`` or ``("q", v)``.

    Raises
    ------
    ValueError
        Unknown name (the message lists the valid names and a close match), a ≤ 0 or
        non-finite, v outside [1/3, 1], bad mixture or measure weights, unregistered user link.
    TypeError
        ``spec`` of another type.

    Examples
    --------
    >>> g = get_link("h2")
    >>> g.coeffs.tolist(), g.p, g.q
    ([0.0, 0.0, 1.0], 0.0, 0.0)
    >>> get_link(("damped_cubic", 0.5)).name
    'damped_cubic:0.5'
    >>> get_link("g:0.5").name, get_link(("g", 1 / 3)).name
    ('g:1/2', 'g:1/3')
    """
    return _get_link(spec)


def mixture(pairs) -> Link:
    """Signed mixture Σ_l w_l g_l of links.

    Parameters
    ----------
    pairs : sequence of (float, str | Link | tuple)
        Weights w_l (finite, nonzero, either sign) and links (any ``get_link`` spec). Nested
        mixtures are flattened (weights multiplied in float64). Tail bounds stay valid for
        negative weights: the Minkowski bounds use |w_l|, Gaussian-polynomial and g_μ
        mixtures are handled exactly.

    Returns
    -------
    Link
        With p = Σ w_l p_l, q = Σ w_l q_l, Ĥ = Σ w_l Ĥ_l, exact moments and tails
        (see the module docstring for how the tails beyond N_tab are obtained).
    """
    if isinstance(pairs, (str, bytes, Link)) or not hasattr(pairs, "__iter__"):
        raise TypeError("`pairs` must be a sequence of (weight, link) pairs")
    items = []
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"`pairs`: each item must be a (weight, link) pair, got {pair!r}")
        w, spec = pair
        items.append((_check_weight(w, "pairs"), get_link(spec)))
    if not items:
        raise ValueError("`pairs` must contain at least one (weight, link) pair")
    return _link_from_name(_mixture_name(_flatten(items)))


def g_mixture(measure, *, normalized: bool = False) -> Link:
    """The paper's link g_μ = ∫ g_v dμ(v) (or q_μ = g_μ/N_μ) for an atomic probability measure μ.

    Kumar (arXiv 2609.39408), eq. (7): g_v(t) = v^{−7/2}(t³ − 3vt)exp(−(1/v − 1)t²/2),
    v ∈ [1/3, 1].

    Parameters
    ----------
    measure : sequence of (weight, v), or "uniform"
        Atoms of μ, or ``"uniform"`` for μ uniform on [1/3, 1] (``g_mu(uniform)``, given by
        its moments (2/3)^j/(j+1)). Weights ≥ 0 and locations v ∈ [1/3, 1] of atoms are read
        as exact rationals: ints, Fractions, strings ("1/3", "0.2" = 1/5 exactly) or floats
        (a float is read as the rational with the smallest denominator that rounds to it:
        0.2 → 1/5, 1/3 → 1/3).
        The weights must sum to 1 exactly or within 1e−12 (they are kept as given, never
        rescaled). Atoms at the same v are merged.
    normalized : bool
        False: g_μ (``g_mu(...)`` / ``g:<v>``). True: q_μ = g_μ/N_μ (``q_mu(...)`` / ``q:<v>``),
        E[q_μ²] = 1.

    Returns
    -------
    Link
        Canonical name ``g_mu(w1*g:v1, w2*g:v2, ...)`` (weights and v as reduced fractions, atoms
        sorted by v), or ``g:<v>`` for a point mass. Its Hermite coefficients are the exact series
        ⟨g_μ, h_{2j+3}⟩ = (−1)^j √((2j+3)!)/(2^j j!)·∫(1 − v)^j dμ (computed at 50 digits), its
        E[g²] = N_μ² = ∬K((1−v)(1−w))dμdμ with K(t) = 3(2+3t)/(1−t)^{7/2}, and its tails beyond
        N_tab are geometric upper bounds (``tail_beyond == "closed-form"``).

    Examples
    --------
    >>> g_mixture([(0.5, 1), (0.5, "1/3")]).name            # paper Table 1, "g_1 + g_{1/3}"
    'g_mu(1/2*g:1/3, 1/2*g:1)'
    >>> g_mixture([(0.2, 0.4), (0.3, 0.7), (0.5, 1)]).name  # "Three-scale mixture"
    'g_mu(1/5*g:2/5, 3/10*g:7/10, 1/2*g:1)'
    """
    if not isinstance(normalized, bool):
        raise TypeError(f"`normalized` must be True or False, got {normalized!r}")
    if isinstance(measure, str) and measure == "uniform":
        return get_link(("q" if normalized else "g") + "_mu(uniform)")
    items = _check_measure(measure, "measure")
    return get_link(_measure_name("q" if normalized else "g", items))


__all__ += ["g_mixture"]
