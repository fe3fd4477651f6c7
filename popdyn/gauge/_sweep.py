r"""Gauge sweeps: specialization times of opposite gauges and their local log-log slopes (docs/design.md §7).

Two parametrizations of the same function-preserving orbit (docs/design.md §7):

* ``"scaling"`` — a factor λ > 1 applied to a balanced start (a = |w| = √c0):
  (a, w) → (λa, w/λ), so a/|w| = λ²; the opposite gauge is 1/λ (a/|w| = 1/λ²);
* ``"ratio"`` — the ratio D = a/|w| > 1 at fixed c0 = a|w|; the opposite gauge is 1/D.

(So the two are the same family with D = λ²: a slope s in λ is s/2 in D.)  For each gauge g of a
sweep the favorable (g) and opposite (1/g) single-neuron flows are integrated exactly in the
reduced (c, φ) variables (:mod:`popdyn.gauge._reduced`), giving numerical brackets of
T_fav, T_opp and R = T_opp/T_fav; consecutive gauges give the local log-log slope of R(g) with a
bracket (interval arithmetic on the brackets).

:data:`REGIMES` declares the four regimes of the table of docs/design.md §7 — the condition each gauge of a
sweep must satisfy is checked, so a sweep cannot silently leave its regime — and
:func:`regime_table` reproduces the table from these runs.

References
----------
The feature-ownership paper (abstract: "Training changes a network's predictions while
allocating task-relevant structure across its internal units"):
the Θ(D²) separation;
docs/design.md §7 (table of regimes measured by a probe of the exact flow).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import _validate as V
from ._bracket import NumericalBracket, hull, ratio_bracket, slope_bracket
from ._reduced import RTOLS, check_thresholds, ratio_start, reduced_specialization_times

PARAMETRIZATIONS = ("scaling", "ratio")
METHODS = ("rigorous", "numerical")
#: per-integration budget of validated steps of the explicit rigorous method; past it the point
#: falls back to the numerical bracket, tagged numerical (the stiff opposite gauges, where ċ
#: relaxes at rate ≈ S/2 while φ moves at rate ρ and an explicit Taylor method needs ~ S·T
#: steps, use the slow-manifold tube instead)
MAX_STEPS = 4000
#: Δ at or below −STIFF_DELTA: the rigorous method encloses the times by the verified
#: slow-manifold tube (:mod:`certify.gauge`), with no step budget
STIFF_DELTA = 4.0

__all__ = ["PARAMETRIZATIONS", "METHODS", "MAX_STEPS", "STIFF_DELTA", "SweepPoint", "Sweep", "gauge_sweep", "Regime", "REGIMES",
           "RegimeResult", "regime_table", "format_regime_table"]


def _ratio_of(parametrization: str, g: float) -> float:
    return g * g if parametrization == "scaling" else g


@dataclass(frozen=True)
class SweepPoint:
    """One gauge value of a sweep at one threshold: T_fav, T_opp and R = T_opp/T_fav."""

    gauge: float
    threshold: float
    t_fav: NumericalBracket
    t_opp: NumericalBracket
    ratio: NumericalBracket


@dataclass(frozen=True)
class Sweep:
    """A gauge sweep at fixed (parametrization, c0, d, cos0).

    ``points[k]`` lists the :class:`SweepPoint` of threshold ``thresholds[k]`` for each gauge;
    ``slopes[k][i]`` is the local log-log slope bracket of R between gauges i and i+1.
    """

    parametrization: str
    c0: float
    d: int
    cos0: float
    gauges: tuple
    thresholds: tuple
    points: tuple
    slopes: tuple
    nfev: int = 0

    def table(self) -> str:
        """A printable table of the sweep."""
        var = "λ" if self.parametrization == "scaling" else "D"
        lines = [f"{self.parametrization} sweep: c0 = {self.c0:g}, d = {self.d}, cos0 = {self.cos0:.4g}"]
        for k, tau in enumerate(self.thresholds):
            lines.append(f"  threshold {tau:g}:")
            lines.append(f"    {var:>8} {'T_fav':>12} {'T_opp':>12} {'R = T_opp/T_fav':>16} "
                         f"{'slope to next (bracket)':>36}")
            for i, p in enumerate(self.points[k]):
                sl = ""
                if i < len(self.slopes[k]):
                    s = self.slopes[k][i]
                    sl = f"{s.estimate:.4f} [{s.lo:.6f}, {s.hi:.6f}]"
                lines.append(f"    {p.gauge:>8g} {p.t_fav.estimate:>12.6g} {p.t_opp.estimate:>12.6g} "
                             f"{p.ratio.estimate:>16.6g} {sl:>36}")
        return "\n".join(lines)


_CACHE: dict = {}


def _times(c0, ratio, cos0, thr, rtols, method="numerical", max_steps=MAX_STEPS, d=None):
    """Brackets of the times of one start; ``d`` (rigorous method only): the start cosine is
    the real 1/√d, ``cos0`` its float (used by the numerical path)."""
    key = (float(c0), float(ratio), float(cos0), tuple(float(t) for t in thr), tuple(rtols),
           method, int(max_steps), None if d is None or method != "rigorous" else int(d))
    if key not in _CACHE:
        if len(_CACHE) > 4096:
            _CACHE.clear()
        if method == "rigorous":
            from ..plugins import load

            rigorous = load("gauge_certifier")     # certify.gauge (popdyn.plugins)

            num, nf = _times(c0, ratio, cos0, thr, rtols, "numerical")
            Delta = ratio_start(c0, ratio)[2]
            # stiff opposite gauges (Δ ≤ −STIFF_DELTA) go through the verified slow-manifold
            # tube; otherwise the explicit method, whose cost is about |Δ|·T validated steps
            # (the stiff rate S/2 ≥ |Δ|/2 of ċ times the horizon)
            tube = Delta <= -STIFF_DELTA
            T_last = max((b.hi for b in num if np.isfinite(b.hi)), default=np.inf)
            predicted = abs(Delta) * T_last
            why = None
            if not tube and not predicted <= max_steps:
                why = (f"rigorous enclosure skipped: about {predicted:.3g} validated steps "
                       f"predicted (|Δ|·T, stiff) > budget {max_steps}")
            else:
                try:
                    _CACHE[key] = rigorous.rigorous_specialization_times(
                        c0, ratio, None if d is not None else cos0, thr, max_steps=max_steps,
                        d=d)
                except rigorous.CertificationError as exc:
                    why = f"rigorous enclosure not obtained ({exc})"
            if why is not None:
                _CACHE[key] = ([NumericalBracket(b.lo, b.hi, b.estimate,
                                                 f"{b.method}; {why}; numerical fallback")
                                for b in num], nf)
        else:
            _CACHE[key] = reduced_specialization_times(c0, ratio, cos0, thr, rtols=rtols)
    return _CACHE[key]


def gauge_sweep(parametrization: str, gauges, *, c0: float, d: int, thresholds=(0.5, 0.9),
                cos0: float | None = None, rtols=RTOLS, method: str = "numerical",
                max_steps: int = MAX_STEPS) -> Sweep:
    """Specialization times of opposite gauges over a sweep of gauge values.

    Parameters
    ----------
    parametrization : {"scaling", "ratio"}
        See the module docstring.
    gauges : sequence of float
        Gauge values g > 1, strictly increasing (the opposite gauge 1/g is run automatically).
    c0 : float
        Initial coefficient a|w| > 0 (the same for both gauges: the initial function is fixed).
    d : int
        Input dimension (≥ 2); enters through the initial cosine cos0 = 1/√d unless ``cos0`` is
        given.  With ``cos0`` None the rigorous method starts from the real 1/√d (enclosed in
        Arb); the numerical one from its float.
    thresholds : sequence of float in (0, 1)
        Specialization thresholds on cos(θ, u).
    rtols : sequence of float
        Integration tolerances of the refinement rule (see
        :func:`popdyn.gauge.reduced_specialization_times`).
    method : {"numerical", "rigorous"}
        "rigorous": validated Taylor integration (:func:`certify.gauge.rigorous_specialization_times`,
        reached through the ``gauge_certifier`` service of :mod:`popdyn.plugins`; brackets tagged
        ``rigorous``; ratios and slopes in Arb), falling back per gauge point to
        the numerical bracket (tagged ``numerical``, the reason in its ``method``) when the
        enclosure fails or needs more than ``max_steps`` validated steps.  Stiff opposite
        gauges (Δ ≤ −STIFF_DELTA) use the verified slow-manifold tube
        (:mod:`certify.gauge`), not the explicit method, and no step budget.

    Returns
    -------
    Sweep
    """
    V.choice("parametrization", parametrization, PARAMETRIZATIONS)
    g = np.array(gauges, dtype=np.float64)
    if g.ndim != 1 or g.size == 0 or not np.all(np.isfinite(g)):
        raise ValueError(f"`gauges` must be a non-empty 1-D sequence of finite numbers, got {gauges!r}")
    if np.any(g <= 1):
        raise ValueError(f"`gauges` must be > 1 (the favorable gauge; 1/g is run as the opposite), "
                         f"got {g[g <= 1][0]!r}")
    if np.any(np.diff(g) <= 0):
        raise ValueError(f"`gauges` must be strictly increasing, got {g.tolist()}")
    c0 = V.real("c0", c0, positive=True)
    d = V.positive_int("d", d)
    if d < 2:
        raise ValueError(f"`d` must be >= 2, got {d}")
    exact_d = d if cos0 is None else None
    cos0 = 1.0 / np.sqrt(d) if cos0 is None else V.real("cos0", cos0)
    thr = check_thresholds(thresholds)
    rtols = tuple(float(r) for r in rtols)
    V.choice("method", method, METHODS)
    max_steps = V.positive_int("max_steps", max_steps)
    per: list[list] = [[] for _ in thr]
    nfev = 0
    for gi in g:
        D = _ratio_of(parametrization, gi)
        fav, n1 = _times(c0, D, cos0, thr, rtols, method, max_steps, exact_d)
        opp, n2 = _times(c0, 1.0 / D, cos0, thr, rtols, method, max_steps, exact_d)
        nfev += n1 + n2
        for k, tau in enumerate(thr):
            if fav[k].lo > 0 and opp[k].lo > 0 and fav[k].finite and opp[k].finite:
                R = ratio_bracket(opp[k], fav[k])
            else:
                R = NumericalBracket(0.0, np.inf, 0.0, "undefined (time 0 or not reached)")
            per[k].append(SweepPoint(float(gi), float(tau), fav[k], opp[k], R))
    slopes = []
    for k in range(thr.size):
        row = []
        for i in range(g.size - 1):
            r0, r1 = per[k][i].ratio, per[k][i + 1].ratio
            if r0.lo > 0 and r1.lo > 0 and r0.finite and r1.finite:
                row.append(slope_bracket(g[i], g[i + 1], r0, r1))
            else:
                row.append(NumericalBracket(-np.inf, np.inf, 0.0, "undefined"))
        slopes.append(tuple(row))
    return Sweep(parametrization, c0, d, cos0, tuple(float(x) for x in g), tuple(float(t) for t in thr),
                 tuple(tuple(p) for p in per), tuple(slopes), nfev)


# ---------------------------------------------------------------------------- regimes
@dataclass(frozen=True)
class Regime:
    """A declared regime of the table of docs/design.md §7.

    ``condition(c0, g)`` must hold for every (c0, gauge) of its sweeps (checked).  ``role`` is
    "claim" (the theorem's Θ(D²)-type statement is asserted here: ``expected`` = 2) or "control"
    (reported, not part of the verdict; ``expected`` is the exponent measured in docs/design.md §7).
    """

    name: str
    parametrization: str
    role: str
    expected: float
    condition_text: str
    design_row: str
    lo: float | None = None      # condition: lo <= c0 * (gauge ratio variable) <= hi
    hi: float | None = None

    def condition(self, c0: float, g: float) -> bool:
        x = c0 * _ratio_of(self.parametrization, g)
        return (self.lo is None or x >= self.lo) and (self.hi is None or x <= self.hi)


REGIMES = (
    Regime("scaling/small-init", "scaling", "claim", 2.0, "c0·λ² ≤ 0.1",
           "Θ(λ²) (local slopes 2.05–2.07)", hi=0.1),
    Regime("scaling/large", "scaling", "control", 4.0, "c0·λ² ≥ 10",
           "drifts to Θ(λ⁴)", lo=10.0),
    Regime("ratio/large-imbalance", "ratio", "claim", 2.0, "c0·D ≥ 10",
           "Θ(D²) (local slope 2.00)", lo=10.0),
    Regime("ratio/small-init", "ratio", "control", 1.0, "c0·D ≤ 0.1",
           "Θ(D) (the unfavorable neuron becomes balanced as c grows)", hi=0.1),
)


@dataclass(frozen=True)
class RegimeResult:
    """The sweeps of one regime and its exponent bracket.

    ``exponent`` is the hull of the *tail* local slopes (the last ``tail`` consecutive pairs of
    each sweep, i.e. at the largest gauges, where the asymptotic exponent is read) over all
    sweeps (c0, d, threshold) of the regime; ``all_slopes`` the hull of every local slope.
    """

    regime: Regime
    sweeps: tuple
    exponent: NumericalBracket
    all_slopes: NumericalBracket
    tail: int
    fav_times_D: NumericalBracket | None = field(default=None)


def regime_table(settings: dict, *, ds=(10, 100), thresholds=(0.5, 0.9), tail: int = 2,
                 rtols=RTOLS, method: str = "numerical", max_steps: int = MAX_STEPS) -> list:
    """Run the declared regimes and collect their exponent brackets.

    Parameters
    ----------
    settings : dict
        Regime name → list of (c0, gauges) pairs; every gauge must satisfy the regime's
        condition (``ValueError`` otherwise).
    ds : sequence of int
        Dimensions (initial cosine 1/√d).
    thresholds : sequence of float in (0, 1)
    tail : int
        Number of trailing local slopes per sweep entering the exponent bracket.
    method, max_steps
        See :func:`gauge_sweep`.

    Returns
    -------
    list of RegimeResult, in the order of :data:`REGIMES` restricted to ``settings``.
    """
    tail = V.positive_int("tail", tail)
    names = {r.name: r for r in REGIMES}
    for key in settings:
        if key not in names:
            raise ValueError(f"unknown regime {key!r}; declared regimes: {sorted(names)}")
    out = []
    for reg in REGIMES:
        if reg.name not in settings:
            continue
        sweeps, tails, alls, fav = [], [], [], []
        for c0, gauges in settings[reg.name]:
            for g in gauges:
                if not reg.condition(c0, g):
                    raise ValueError(f"regime {reg.name!r} requires {reg.condition_text}; the setting "
                                     f"c0 = {c0:g}, gauge = {g:g} violates it")
            if len(gauges) < tail + 1:
                raise ValueError(f"regime {reg.name!r}: need at least tail + 1 = {tail + 1} gauges, "
                                 f"got {len(gauges)}")
            for d in ds:
                sw = gauge_sweep(reg.parametrization, gauges, c0=c0, d=d, thresholds=thresholds,
                                 rtols=rtols, method=method, max_steps=max_steps)
                sweeps.append(sw)
                for k in range(len(sw.thresholds)):
                    tails.extend(sw.slopes[k][-tail:])
                    alls.extend(sw.slopes[k])
                    for p in sw.points[k]:
                        D = _ratio_of(reg.parametrization, p.gauge)
                        fav.append(NumericalBracket(p.t_fav.lo * D, p.t_fav.hi * D, p.t_fav.estimate * D))
        out.append(RegimeResult(reg, tuple(sweeps), hull(tails, f"hull of the last {tail} local slopes"),
                                hull(alls, "hull of all local slopes"), tail,
                                hull(fav, "hull of T_fav·(a/|w|)")))
    return out


def format_regime_table(results) -> str:
    """The table of docs/design.md §7 as reproduced by :func:`regime_table`."""
    lines = [f"{'parametrization':<16} {'regime':<22} {'role':<8} {'docs/design.md §7':<57} "
             f"{'measured tail exponent [bracket]':<36} {'all local slopes':<22}"]
    for r in results:
        reg = r.regime
        e, a = r.exponent, r.all_slopes
        lines.append(f"{reg.parametrization:<16} {reg.condition_text:<22} {reg.role:<8} {reg.design_row:<57} "
                     f"{e.estimate:.4f} [{e.lo:.4f}, {e.hi:.4f}]{'':<8} [{a.lo:.3f}, {a.hi:.3f}]")
    return "\n".join(lines)
