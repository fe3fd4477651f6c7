"""Average gradient outer product of a two-layer student (docs/design.md §3, §5).

For f(x) = s Σ_j a_j σ(w_j·x + b_j) + c on x ~ N(0, I_d), ∇_x f = s Σ_j a_j σ′(w_j·x + b_j) w_j, so

    M = E[∇_x f ∇_x fᵀ] = s² Wᵀ (a aᵀ ∘ B) W,    B_ij = E[σ′_i σ′_j],

for every activation: B is the engine's derivative moment matrix (closed forms through the
bivariate normal CDF for relu / leaky_relu, Hermite series for smooth activations).
"""
from __future__ import annotations

import copy
from typing import Any, Literal, overload

import numpy as np
from numpy.typing import NDArray

from .. import _tails
from .. import _validate as V
from .. import accuracy as _acc
from .._typing import AnyParams, AnyStudent
from ..families import capability
from ..family import family_of


def _check_student(student, params):
    family_of(student).check(params)


def agop_from_moments(student, params, B) -> np.ndarray:
    """M = s² Wᵀ(aaᵀ ∘ B)W from a precomputed B = E[σ′_iσ′_j] (no input checks)."""
    s, a, W = student.s, params.a, params.W
    K = (s * s) * (a[:, None] * B * a[None, :])
    M = W.T @ (K @ W)
    return 0.5 * (M + M.T)


@overload
def agop(student: AnyStudent, params: AnyParams, *, rtol: float = 1e-10,
         full_output: Literal[False] = False) -> NDArray[np.float64]: ...
@overload
def agop(student: AnyStudent, params: AnyParams, *, rtol: float = 1e-10,
         full_output: Literal[True]) -> tuple[NDArray[np.float64], dict[str, Any]]: ...
@overload
def agop(student: AnyStudent, params: AnyParams, *, rtol: float = 1e-10, full_output: bool = False
         ) -> NDArray[np.float64] | tuple[NDArray[np.float64], dict[str, Any]]: ...
def agop(student: AnyStudent, params: AnyParams, *, rtol: float = 1e-10, full_output: bool = False
         ) -> NDArray[np.float64] | tuple[NDArray[np.float64], dict[str, Any]]:
    """The AGOP M = E[∇_x f(x) ∇_x f(x)ᵀ] of ``student`` at ``params``, exactly in population.

    Parameters
    ----------
    student : Student or SwiGLUStudent
        A student of any family (:mod:`popdyn.family`).
    params : Params or SwiGLUParams
        Its parameters.
    rtol : float
        Requested accuracy in the spectral norm, a contract (:mod:`popdyn.accuracy`): M is
        returned when its estimated error satisfies ‖ΔM‖₂ <= rtol·‖M‖₂ + atol (``atol``: the
        rounding floor 8(m + d + 2)u·‖s²|W|ᵀ(|a||a|ᵀ∘|B|)|W|‖₂), else with an
        :class:`popdyn.AccuracyWarning`.  relu / leaky relu (closed forms) and erf (B in closed
        form) are within rounding; the series of silu, gelu and tanh are refined (÷100 per
        step down to 1e−16) and the estimate is the change of M between the last two series
        tolerances (an a-posteriori estimate; :func:`certify.alignment` gives rigorous
        brackets).
    full_output : bool
        If True return ``(M, info)`` with ``info["error"]`` (the estimate of ‖ΔM‖₂),
        ``info["rtol"]``, ``info["atol"]``, ``info["series_tol"]`` and ``info["within_rtol"]``.

    Returns
    -------
    ndarray (d, d)
        Symmetric positive semidefinite; the intercept c does not enter.

    Notes
    -----
    M = s² Wᵀ(aaᵀ ∘ B)W with B_ij = E[σ′(w_i·x + b_i) σ′(w_j·x + b_j)].  A neuron with w_j = 0
    contributes nothing (its gradient in x vanishes).

    References
    ----------
    Kumar (arXiv 2609.39408), AGOP definition; docs/design.md §3
    ("The AGOP is M = Wᵀ(aaᵀ ∘ B)W — the same B") and §5.  Every student family goes through its
    ``agop`` (:mod:`popdyn.family`; SwiGLU: :func:`popdyn.swiglu.agop_from_moments`, skip
    students: :mod:`popdyn.skip`).
    """
    fam = family_of(student)
    fam.check(params)
    rtol = V.real("rtol", rtol, positive=True)
    if not rtol < 1:
        raise ValueError(f"`rtol` must be a float in (0, 1), got {rtol!r}")
    M, info = contract_agop(fam, params, rtol)
    return (M, info) if full_output else M


def _agop_atol(fam, params, M, B) -> float:
    """The float64 rounding floor of the AGOP: from |W|ᵀ(s²|a||B||a|ᵀ)|W| when the family has a
    ridge first layer (``fam.first_layer``) and B was formed, else from ‖M‖."""
    st = fam.student
    if B is None or fam.first_layer is None:
        return _acc.rounding_floor(st.m + st.d, _acc.spectral_norm(M))
    s = st.s
    aa = np.abs(params.a)
    Wa = np.abs(getattr(params, fam.first_layer))
    K = (s * s) * (aa[:, None] * np.abs(B) * aa[None, :])
    return _acc.rounding_floor(st.m + st.d, _acc.spectral_norm(Wa.T @ (K @ Wa)))


def contract_agop(fam, params, rtol: float):
    """(M, info) of :func:`agop` under the tolerance contract (no input checks)."""
    tols = _acc.tolerances(rtol)
    Mo = fam.moments(params, None, need="student", tol=tols[0])
    M = fam.agop(params, Mo)
    atol = _agop_atol(fam, params, M, getattr(Mo, "B", None))
    if fam.agop_closed_form:
        return M, {"error": atol, "rtol": rtol, "atol": atol, "series_tol": tols[0],
                   "within_rtol": True, "tail_bound": 0.0}
    tails = SeriesTails.of(fam, params)
    tb = tails.error(Mo) if tails is not None else 0.0
    err = np.inf
    tol = tols[0]
    cap = f"the series tolerance floor {_acc.RTOL_FLOOR:g} was reached"

    def at_cap(Mo_):
        order = getattr(Mo_, "order", None) or getattr(Mo_, "N", None)
        return order is not None and order >= _acc.ORDER_CAP

    hopeless = tb > rtol * _acc.spectral_norm(M) + atol and at_cap(Mo)
    if hopeless:         # the a-priori tail exceeds the target at the order cap: no tolerance helps
        cap = f"the Hermite order cap {_acc.ORDER_CAP} was reached"
        err = atol + tb
    for nxt in ([] if hopeless else tols[1:]):
        Mo2 = fam.moments(params, None, need="student", tol=nxt)
        M2 = fam.agop(params, Mo2)
        err = _acc.spectral_norm(M - M2) + atol
        M, Mo, tol = M2, Mo2, nxt
        atol = _agop_atol(fam, params, M, getattr(Mo, "B", None))
        tb = tails.error(Mo) if tails is not None else 0.0
        err += tb
        target = rtol * _acc.spectral_norm(M) + atol
        if err <= target:
            return M, {"error": err, "rtol": rtol, "atol": atol, "series_tol": tol,
                       "within_rtol": True, "tail_bound": tb}
        if at_cap(Mo):
            cap = f"the Hermite order cap {_acc.ORDER_CAP} was reached"
            break
    target = rtol * _acc.spectral_norm(M) + atol
    if len(tols) == 1 and not hopeless:  # rtol at the floor: no second tolerance to compare with
        Mo2 = fam.moments(params, None, need="student", tol=min(1e-15, 10 * tols[0]))
        err = _acc.spectral_norm(M - fam.agop(params, Mo2)) + atol + tb
        if err <= target:
            return M, {"error": err, "rtol": rtol, "atol": atol, "series_tol": tol,
                       "within_rtol": True, "tail_bound": tb}
    if tails is not None and tb > 0.01 * target:
        # the series tail is what is left: evaluate the affected entries of B by quadrature
        M3, tb3 = tails.repair(Mo, rtol)
        if M3 is not None:
            post = err - tb     # the change between tolerances and rounding stay
            atol = _agop_atol(fam, params, M3, _ridge(Mo).B)
            err3 = max(post, atol) + tb3
            target = rtol * _acc.spectral_norm(M3) + atol
            M, tb, err = M3, tb3, err3
            if err <= target:
                return M, {"error": err, "rtol": rtol, "atol": atol, "series_tol": tol,
                           "within_rtol": True, "tail_bound": tb}
    if tb > 0.5 * err:
        cap += (f" (a-priori bound of the discarded Hermite tail: {tb:.3g}; the entries of B "
                "left to the series could not all be evaluated by quadrature)")
    _acc.warn(f"AGOP of the {getattr(fam.student, 'activation', fam.label)} student", err,
              target, rtol, cap, "certify.alignment gives rigorous brackets.", stacklevel=4)
    return M, {"error": err, "rtol": rtol, "atol": atol, "series_tol": tol, "within_rtol": False,
               "tail_bound": tb}


# ------------------------------------------------------------------- a-priori series tails
def _ridge(Mo):
    """The ridge moments inside ``Mo`` (the skip family wraps them as ``Mo.R``)."""
    return Mo.R if hasattr(Mo, "R") and not isinstance(getattr(Mo, "R"), np.ndarray) else Mo


def _with_B(Mo, B):
    """A shallow copy of the moments ``Mo`` with the student B replaced."""
    R = copy.copy(_ridge(Mo))
    R.B = B
    if R is not Mo and hasattr(Mo, "R") and not isinstance(Mo.R, np.ndarray):
        out = copy.copy(Mo)
        out.R = R
        return out
    return R


class SeriesTails:
    """The a-priori truncation bound of the Hermite series behind B = E[σ′_iσ′_j] of a smooth
    ridge (or skip) student (silu, gelu, tanh), and its repair by quadrature.

    With t_i an upper bound of the discarded tail Σ_{n>N} Dd_{i,n}² of unit i
    (:func:`popdyn._tails.derivative_tail_bound`), Cauchy–Schwarz bounds the truncation error
    of the Mehler sum B_ij = Σ_{n≤N} Dd_{i,n}Dd_{j,n}ρ_ij^n by |ρ_ij|^{N+1}√(t_i t_j), and the
    AGOP's by ‖s²|W|ᵀ(|a||a|ᵀ ∘ T)|W|‖₂ (T the matrix of those bounds).  Not a rigorous
    bound of the float result (the quadrature constants, the engine's coefficient errors and
    rounding are estimates), but it does not rely on the series having started to converge.
    """

    def __init__(self, fam, params, code, al, be):
        self.fam, self.params, self.code, self.al, self.be = fam, params, code, al, be
        st = fam.student
        self.s = float(st.s)
        self.aa = np.abs(np.asarray(params.a, dtype=np.float64))

    @classmethod
    def of(cls, fam, params):
        """The tails of ``fam``'s student at ``params``, or None when B has no series (a
        closed form, or a family without ridge units)."""
        st = fam.student
        if capability(fam, "ridge_units") is None or fam.agop_closed_form:
            return None
        code = getattr(st.act, "code", None)
        if code not in _tails.CODES:
            return None
        W = np.asarray(params.W, dtype=np.float64)
        al = np.sqrt(np.einsum("ij,ij->i", W, W))
        be = (np.asarray(params.b, dtype=np.float64) if st.bias else np.zeros(st.m))
        return cls(fam, params, int(code), al, be)

    def matrix(self, Mo):
        """(T, N, R): the entrywise bounds of B's truncation error at the order of ``Mo``."""
        R0 = _ridge(Mo)
        N = int(R0.order)
        t = np.sqrt(_tails.derivative_tail_bound(self.code, self.al, N))
        th = R0.theta
        R = np.clip(th @ th.T, -1.0, 1.0)
        with np.errstate(under="ignore"):
            P = np.abs(R) ** (N + 1)
        np.fill_diagonal(P, 1.0)
        return P * t[:, None] * t[None, :], N, R

    def propagate(self, T) -> float:
        """‖s²|W|ᵀ(|a||a|ᵀ ∘ T)|W|‖₂ for an entrywise error matrix T of B."""
        if not np.any(T):
            return 0.0
        Wa = np.abs(np.asarray(self.params.W, dtype=np.float64))
        K = (self.s * self.s) * (self.aa[:, None] * T * self.aa[None, :])
        return _acc.spectral_norm(Wa.T @ (K @ Wa))

    def error(self, Mo) -> float:
        """The a-priori tail bound of the AGOP at the order of ``Mo`` (0 when B is a sum
        with a vanishing tail)."""
        return self.propagate(self.matrix(Mo)[0])

    def repair(self, Mo, rtol):
        """(M, tail): the AGOP with the entries of B whose tail bound matters evaluated by
        quadrature (:func:`popdyn._tails.diag_moment`, :func:`popdyn._tails.pair_moment`,
        each with its error estimated by a rule √2 finer), and the bound left; (None, None)
        when nothing was replaced."""
        T, N, R = self.matrix(Mo)
        R0 = _ridge(Mo)
        W = np.asarray(self.params.W, dtype=np.float64)
        wn = self.al
        m = T.shape[0]
        K = (self.s * self.s) * (self.aa[:, None] * T * self.aa[None, :]) * np.outer(wn, wn)
        scale = rtol * _acc.spectral_norm(self.fam.agop(self.params, Mo))
        B = np.array(R0.B, dtype=np.float64, copy=True)
        E = np.zeros_like(T)
        Tn = T.copy()
        done = False
        for i in np.flatnonzero(np.diag(K) > 1e-3 * scale / m):
            v, e = _tails.diag_moment_est(self.code, wn[i], self.be[i])
            B[i, i], E[i, i], Tn[i, i] = v, e, 0.0
            done = True
        iu, ju = np.triu_indices(m, 1)
        big = K[iu, ju] > 1e-3 * scale / (m * m)
        order = np.argsort(-K[iu, ju][big])[:PAIR_CAP]
        for i, j in zip(iu[big][order], ju[big][order]):
            omr2 = max(1.0 - R[i, j] * R[i, j], 0.0)
            v, e = _tails.pair_moment_est(self.code, wn[i], self.be[i], wn[j], self.be[j],
                                          R[i, j], omr2)
            if v is None:
                continue
            B[i, j] = B[j, i] = v
            E[i, j] = E[j, i] = e
            Tn[i, j] = Tn[j, i] = 0.0
            done = True
        if not done:
            return None, None
        M = self.fam.agop(self.params, _with_B(Mo, 0.5 * (B + B.T)))
        return M, self.propagate(Tn) + self.propagate(E)


#: the most off-diagonal entries of B evaluated by 2-D quadrature in one repair
PAIR_CAP = 32
