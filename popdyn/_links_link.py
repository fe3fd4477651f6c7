"""The :class:`Link` record of :mod:`popdyn.links`: PL part, Hermite coefficients, tails and
moments of one teacher link, with its pointwise evaluators.
"""
from __future__ import annotations

import dataclasses
import functools
import numbers

import numpy as np

from ._links_hermite import _ctx, _to_float


# --------------------------------------------------------------------------------------------
# the Link dataclass
# --------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Link:
    r"""A teacher link g(z) = p·relu(z) + q·z + H(z) with tabulated Hermite part H.

    Build links with :func:`get_link` or :func:`mixture`, not directly.

    Attributes
    ----------
    name : str
        Canonical name (``get_link(name)`` returns this link).
    p, q : float
        Piecewise-linear part p·relu(z) + q·z, handled by the engine in closed form.
    coeffs : ndarray, shape (N_tab + 1,)
        Ĥ_n = E[H(Z) h_n(Z)], h_n = He_n/√n!.
    is_polynomial : bool
        Whether H is a polynomial (then N_tab is its degree and all tails are exactly 0).
    t2, l1 : ndarray, shape (N_tab + 1,)
        Σ_{n>N} Ĥ_n² and Σ_{n>N} |Ĥ_n| for N = 0..N_tab, including n > N_tab, rounded up.
    dcoeffs, dt2, dl1 : ndarray, shape (N_tab + 1,)
        The same for the derivative sequence Ĥ'_n = E[H'(Z) h_n(Z)] = √(n+1) Ĥ_{n+1}.
    mean, second_moment, variance, d_second_moment : float
        E[g], E[g²], Var g, E[g'²] of the whole link (PL part included).
    mean_str, second_moment_str, variance_str, d_second_moment_str : str
        The same with 30 significant digits.
    h_second_moment, h_d_second_moment : float
        E[H²] and E[H'²] of the Hermite part alone (rounded up; = coeffs[0]² + t2[0] and
        dcoeffs[0]² + dt2[0]).
    tail_beyond : str
        How the tails beyond N_tab were obtained: "zero", "parseval+sobolev" or "minkowski"
        (see the module docstring).
    components : tuple of (float, Link)
        For mixtures, the (flattened) weighted components; empty for base links.
    info : dict or None
        Provenance of user links (:func:`popdyn.links_user.from_hermite`,
        :func:`popdyn.links_user.from_callable`: the stated
        error bounds); None for built-in links.
    """

    name: str
    p: float
    q: float
    coeffs: np.ndarray
    is_polynomial: bool
    t2: np.ndarray
    l1: np.ndarray
    dcoeffs: np.ndarray
    dt2: np.ndarray
    dl1: np.ndarray
    mean: float
    second_moment: float
    variance: float
    d_second_moment: float
    mean_str: str
    second_moment_str: str
    variance_str: str
    d_second_moment_str: str
    tail_beyond: str
    h_second_moment: float
    h_d_second_moment: float
    components: tuple = ()
    _f: object = dataclasses.field(default=None, repr=False)
    _df: object = dataclasses.field(default=None, repr=False)
    _fmp: object = dataclasses.field(default=None, repr=False)
    _dfmp: object = dataclasses.field(default=None, repr=False)
    _hdata: object = dataclasses.field(default=None, repr=False)
    _mp_moments: tuple = dataclasses.field(default=(), repr=False)
    info: object = dataclasses.field(default=None, repr=False)

    # identity is the canonical name
    def __eq__(self, other):
        if not isinstance(other, Link):
            return NotImplemented
        return self.name == other.name

    def __hash__(self):
        return hash(("popdyn.Link", self.name))

    def __repr__(self):
        return (f"Link({self.name!r}, p={self.p!r}, q={self.q!r}, N_tab={self.N_tab}, "
                f"mean={self.mean!r}, second_moment={self.second_moment!r})")

    @property
    def N_tab(self) -> int:
        """Highest tabulated Hermite index of H."""
        return len(self.coeffs) - 1

    def __call__(self, z):
        """g(z), elementwise (float64 numpy)."""
        z_arr = np.asarray(z, dtype=float)
        with np.errstate(over="ignore"):     # e.g. polynomials at huge |z|: ±inf
            out = self._f(z_arr)
        return float(out) if np.ndim(out) == 0 else out

    def derivative(self, z):
        """g'(z), elementwise (float64 numpy; relu'(0) = 0, abs'(0) = 0)."""
        z_arr = np.asarray(z, dtype=float)
        with np.errstate(over="ignore"):
            out = self._df(z_arr)
        return float(out) if np.ndim(out) == 0 else out

    def eval_mp(self, z):
        """g(z) in mpmath (private precision context; for references)."""
        return self._fmp(_ctx.mpf(z))

    def derivative_mp(self, z):
        """g'(z) in mpmath."""
        return self._dfmp(_ctx.mpf(z))

    def coefficients_full(self, N):
        """Normalized Hermite coefficients E[g(Z) h_n(Z)], n = 0..N, of the whole link.

        The relu part uses ĉ_0 = 1/√(2π), ĉ_1 = 1/2, ĉ_n = φ(0) He_{n−2}(0)/√n! (n ≥ 2).
        For a non-polynomial H, ``N`` may not exceed ``N_tab``.
        """
        if isinstance(N, bool) or not isinstance(N, numbers.Integral):
            raise TypeError(f"`N` must be an int, got {type(N).__name__}")
        N = int(N)
        if N < 0:
            raise ValueError(f"`N` must be >= 0, got {N}")
        if not self.is_polynomial and N > self.N_tab:
            raise ValueError(
                f"`N` = {N} exceeds N_tab = {self.N_tab} of link {self.name!r}: coefficients "
                "beyond N_tab are not tabulated (use the tail tables t2/l1 to bound them)")
        out = np.zeros(N + 1)
        m = min(N, self.N_tab)
        out[:m + 1] = self.coeffs[:m + 1]
        if self.p != 0.0:
            out += self.p * _relu_coeffs(N)
        if self.q != 0.0 and N >= 1:
            out[1] += self.q
        return out


@functools.lru_cache(maxsize=16)
def _relu_coeffs(N):
    """Normalized Hermite coefficients of relu, n = 0..N (float64, read-only)."""
    out = np.zeros(N + 1)
    with _ctx.workdps(30):
        phi0 = 1 / _ctx.sqrt(2 * _ctx.pi)
        out[0] = _to_float(phi0)
        if N >= 1:
            out[1] = 0.5
        r = phi0 / _ctx.sqrt(2)
        n = 2
        while n <= N:
            out[n] = _to_float(r)
            r = r * (-(n - 1)) / _ctx.sqrt((n + 1) * (n + 2))
            n += 2
    out.setflags(write=False)
    return out
