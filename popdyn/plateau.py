"""Loss plateaus (docs/design.md §5; Kumar (arXiv 2609.39408), App. A: the plateau rule, and
Figure 2: the shading).

* δ-prefix: the largest n with |ℓ_k − ℓ_0| ≤ δ for all k ≤ n (ℓ the normalized loss; the paper
  uses δ = 1e−3 and 1e−4: Kumar (arXiv 2609.39408) U.6, the SwiGLU prefix);
* ratio prefix: the largest n with |ℓ_k/ℓ_0 − 1| ≤ ratio for all k ≤ n (5%, with a 1% comparison
  boundary);
* q₀ window: the largest n with max_{k≤n} ℓ_k / min_{k≤n} ℓ_k ≤ 1 + q₀ (Kumar, App. B eq. (26);
  q₀ = 0.05 primary, 0.01 comparison), optionally with every ℓ_k in a band [lo, hi];
* the ReLU baseline rule (Kumar §5 and App. A, "running maximum/minimum"): the q₀ = 0.05 window
  with the band [0.95, 1.05], on the full MSE E[(f − y)²] (:data:`BASELINE_RULE`);
* the release is the first update after the prefix (None when the run never leaves it: the
  plateau is then right-censored at the horizon, ``censored=True``).

A :class:`PlateauRule` evaluates one rule on a whole loss record (:meth:`PlateauRule.apply`) or
update by update (:meth:`PlateauRule.watch`, what :func:`popdyn.train` uses to snapshot the
endpoint E and its successor E + 1 while training); both give the same endpoint.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
from numpy.typing import ArrayLike

from . import _validate as V


@dataclass(frozen=True)
class Plateau:
    """A loss prefix: ``end`` is the index of its last update, ``release`` the first index outside
    (None if the whole sequence stays inside).  ``end_n``/``end_t`` and ``release_n``/``release_t``
    give both clocks when ``n``/``t`` were passed (else the index is used for n and t is None)."""

    rule: str
    threshold: float
    end: int
    release: int | None
    end_n: int
    end_t: float | None
    release_n: int | None
    release_t: float | None
    change: float  # ℓ_end − ℓ_0
    #: the band [lo, hi] every loss of the prefix must lie in (None: no band)
    band: tuple | None = None
    #: True when the sequence never leaves the prefix (right-censored at the last update)
    censored: bool = False


def _prefix_end(bad: np.ndarray) -> int:
    idx = np.flatnonzero(bad)
    return int(idx[0]) - 1 if idx.size else bad.shape[0] - 1


def _band(band):
    """``band`` validated as a (lo, hi) pair of floats with lo <= hi, or None."""
    if band is None:
        return None
    try:
        lo, hi = band
    except (TypeError, ValueError):
        raise TypeError(f"`band` must be a pair (lo, hi) or None, got {band!r}") from None
    lo, hi = V.real("band[0]", lo), V.real("band[1]", hi)
    if not lo <= hi:
        raise ValueError(f"`band` must have lo <= hi, got ({lo}, {hi})")
    return (lo, hi)


def _window_bad(ell: np.ndarray, q0: float) -> np.ndarray:
    """Where max_{k≤n} ℓ_k / min_{k≤n} ℓ_k > 1 + q₀ (or the running minimum is <= 0, where the
    ratio is undefined): the failures of Kumar App. B eq. (26), update by update."""
    hi = np.maximum.accumulate(ell)
    lo = np.minimum.accumulate(ell)
    with np.errstate(divide="ignore", invalid="ignore"):
        return ~(lo > 0) | (hi / lo > 1.0 + q0)


def plateau(losses: ArrayLike, *, delta: float | None = None, ratio: float | None = None,
            q0: float | None = None, band: tuple[float, float] | None = None,
            n: ArrayLike | None = None, t: ArrayLike | None = None) -> Plateau:
    """The loss-plateau prefix of a loss sequence.

    Exactly one of ``delta`` (absolute band |ℓ_k − ℓ_0| ≤ δ), ``ratio`` (|ℓ_k/ℓ_0 − 1| ≤ ratio)
    or ``q0`` (the running window max_{k≤n} ℓ_k / min_{k≤n} ℓ_k ≤ 1 + q₀ of Kumar (arXiv
    2609.39408) App. B eq. (26); a non-positive running minimum fails it) must be given.
    ``band = (lo, hi)`` additionally requires lo ≤ ℓ_k ≤ hi at every update of the prefix (the
    ReLU runs of App. B and the baseline rule of App. A: ``q0=0.05, band=(0.95, 1.05)`` on the
    full MSE).  The prefix ends at the last update before the first failure; when already ℓ_0
    fails (possible only with a band or a non-positive ℓ_0), ``end = end_n = -1`` (an empty
    prefix) and the release is update 0.  ``n`` and ``t`` (same length as ``losses``) give the
    update and flow-time clocks.  A sequence that never fails is right-censored
    (``censored=True``, ``release=None``).  Raises ``ValueError`` for empty or non-finite
    sequences.
    """
    ell = np.asarray(losses, dtype=np.float64)
    if ell.ndim != 1 or ell.size == 0:
        raise ValueError(f"`losses` must be a non-empty 1-D sequence, got shape {ell.shape}")
    if not np.all(np.isfinite(ell)):
        raise ValueError("`losses` must be finite (contains NaN or inf)")
    if sum(x is not None for x in (delta, ratio, q0)) != 1:
        raise ValueError("give exactly one of `delta`, `ratio` and `q0`")
    band = _band(band)
    if delta is not None:
        thr = V.real("delta", delta, positive=True)
        bad = np.abs(ell - ell[0]) > thr
        rule = "delta"
    elif ratio is not None:
        thr = V.real("ratio", ratio, positive=True)
        if ell[0] == 0:
            raise ValueError("`losses[0]` is 0: the ratio prefix is undefined")
        bad = np.abs(ell / ell[0] - 1.0) > thr
        rule = "ratio"
    else:
        thr = V.real("q0", q0, positive=True)
        bad = _window_bad(ell, thr)
        rule = "window"
    if band is not None:
        bad = bad | (ell < band[0]) | (ell > band[1])
    end = _prefix_end(bad)
    release = end + 1 if end + 1 < ell.size else None
    nn = np.arange(ell.size) if n is None else V.array("n", n, (ell.size,))
    tt = None if t is None else V.array("t", t, (ell.size,))
    if end < 0:
        return Plateau(rule, thr, -1, 0, -1, None, int(nn[0]),
                       None if tt is None else float(tt[0]), float("nan"), band, False)
    return Plateau(rule, thr, end, release, int(nn[end]), None if tt is None else float(tt[end]),
                   None if release is None else int(nn[release]),
                   None if (release is None or tt is None) else float(tt[release]),
                   float(ell[end] - ell[0]), band, release is None)


#: loss units of a :class:`PlateauRule` evaluated during training: ``"mse"`` -- the full MSE
#: E[(f − y)²] = 2L (the paper's ReLU loss, App. A), ``"normalized"`` -- 2L/V_Y (ℓ of App. B
#: and U.6; :attr:`popdyn.Trajectory.normalized_loss`)
UNITS = ("mse", "normalized")
RULES = ("delta", "ratio", "window")


@dataclass(frozen=True)
class PlateauRule:
    """A plateau rule: ``kind`` (``"delta"``, ``"ratio"`` or ``"window"``, the keywords of
    :func:`plateau`), its ``threshold`` (δ, ratio or q₀), an optional ``band`` and the loss
    ``units`` it reads during training (:data:`UNITS`).

    :meth:`apply` is :func:`plateau` on a whole sequence; :meth:`watch` the same rule update by
    update (:class:`PlateauWatch`).
    """

    kind: str
    threshold: float
    band: tuple | None = None
    units: str = "mse"

    def __post_init__(self):
        V.choice("kind", self.kind, RULES)
        object.__setattr__(self, "threshold", V.real("threshold", self.threshold, positive=True))
        object.__setattr__(self, "band", _band(self.band))
        V.choice("units", self.units, UNITS)

    def apply(self, losses: ArrayLike, *, n: ArrayLike | None = None,
              t: ArrayLike | None = None) -> Plateau:
        """The prefix of ``losses`` (already in :attr:`units`) under this rule."""
        return plateau(losses, band=self.band, n=n, t=t, **{self._kw: self.threshold})

    @property
    def _kw(self) -> str:
        return "q0" if self.kind == "window" else self.kind

    def watch(self) -> "PlateauWatch":
        return PlateauWatch(self)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "threshold": self.threshold,
                "band": None if self.band is None else list(self.band), "units": self.units}


#: the ReLU baseline rule (Kumar (arXiv 2609.39408) §5 and App. A): the plateau ends immediately
#: before the first update whose full MSE leaves [0.95, 1.05] or whose running maximum/minimum
#: ratio exceeds 1.05, checked at every update
BASELINE_RULE = PlateauRule("window", 0.05, band=(0.95, 1.05), units="mse")
#: App. B's windows (eq. (26)): q₀ = 0.05 (primary) and the 0.01 comparison, on ℓ = L/V_Y; the
#: ReLU runs add the band [0.95, 1.05] (:func:`window_rules`)
Q0_PRIMARY, Q0_COMPARISON = 0.05, 0.01


def window_rules(*, band: bool = False) -> dict:
    """App. B's q₀ windows as rules on the normalized loss: ``{"q0=0.05": ..., "q0=0.01": ...}``,
    with the band [0.95, 1.05] for ReLU students when ``band`` (Kumar App. B, eq. (26))."""
    b = (0.95, 1.05) if band else None
    return {f"q0={q:g}": PlateauRule("window", q, band=b, units="normalized")
            for q in (Q0_PRIMARY, Q0_COMPARISON)}


#: U.6's SwiGLU prefixes |ℓ − ℓ(0)| ≤ δ, δ = 1e−3 and the 1e−4 variant (:func:`plateau`'s
#: ``delta``, as :data:`STANDARD_RULES` has them)
SWIGLU_RULES = {f"delta={d:g}": PlateauRule("delta", d, units="normalized") for d in (1e-3, 1e-4)}


#: plateau rules by name (a config's ``[schedule] plateau``): the baseline rule, App. B's
#: windows on ℓ = L/V_Y without and with the ReLU band, U.6's δ-prefixes
NAMED_RULES = {
    "baseline": BASELINE_RULE,
    **window_rules(),
    **{f"{k}+band": r for k, r in window_rules(band=True).items()},
    **SWIGLU_RULES,
}


def named_rule(name: str) -> PlateauRule:
    """The rule called ``name`` in :data:`NAMED_RULES`."""
    V.choice("plateau", name, NAMED_RULES)
    return NAMED_RULES[name]


class PlateauWatch:
    """A :class:`PlateauRule` evaluated update by update: :meth:`feed` takes the loss of each
    update in order (in the rule's units) and returns True at the first one that fails the rule;
    the endpoint E is then the index before it.  The comparisons are those of :func:`plateau`
    (the same running maximum and minimum, the same quotient), so the endpoint agrees with
    :meth:`PlateauRule.apply` on the same sequence."""

    def __init__(self, rule: PlateauRule):
        self.rule = rule
        self.count = 0               # losses fed so far
        #: the first, largest and smallest loss fed (set by the first :meth:`feed`)
        self.first: float = math.nan
        self.hi: float = math.nan
        self.lo: float = math.nan
        #: index of the first failing loss (None while inside the prefix)
        self.release: int | None = None

    @property
    def done(self) -> bool:
        return self.release is not None

    @property
    def end(self) -> int | None:
        """The prefix's last index (−1: empty), None while it is still running."""
        return None if self.release is None else self.release - 1

    def feed(self, value: float) -> bool:
        """Add the next loss; True when it is the first to fail the rule."""
        if self.done:
            return False
        v = float(value)
        r = self.rule
        if self.count == 0:
            self.first = self.hi = self.lo = v
        else:
            self.hi, self.lo = max(self.hi, v), min(self.lo, v)
        bad = not np.isfinite(v)
        if not bad:
            if r.kind == "delta":
                bad = abs(v - self.first) > r.threshold
            elif r.kind == "ratio":
                bad = self.first == 0 or abs(v / self.first - 1.0) > r.threshold
            else:
                bad = not (self.lo > 0) or self.hi / self.lo > 1.0 + r.threshold
            if r.band is not None:
                bad = bad or v < r.band[0] or v > r.band[1]
        if bad:
            self.release = self.count
        self.count += 1
        return bad

    def feed_all(self, values: Iterable[float]) -> "PlateauWatch":
        for v in values:
            if self.feed(v):
                break
        return self


def shared_prefix(plateaus: Iterable[Plateau]) -> int:
    """The prefix shared by a cohort: the minimum of the seeds' plateau endpoints (in updates)."""
    ends = [p.end_n for p in plateaus]
    if not ends:
        raise ValueError("`plateaus` must be non-empty")
    return int(min(ends))


def shared_plateau(plateaus: Iterable[Plateau], *, clock: str = "n") -> int | float:
    """The prefix shared by a cohort on either clock: min of the seeds' plateau endpoints in
    updates (``clock="n"``, an int, same as :func:`shared_prefix`) or in flow time
    (``clock="t"``, a float; every plateau must carry ``end_t``).

    References
    ----------
    Kumar (arXiv 2609.39408), Figure 1 ("shading marks the loss-only plateau shared by all fifty
    seeds").
    """
    V.choice("clock", clock, ("n", "t"))
    ps = list(plateaus)
    if not ps:
        raise ValueError("`plateaus` must be non-empty")
    for p in ps:
        if not isinstance(p, Plateau):
            raise TypeError(f"`plateaus` must hold popdyn.Plateau objects, got {type(p).__name__}")
    if clock == "n":
        return int(min(p.end_n for p in ps))
    if any(p.end_t is None for p in ps):
        raise ValueError("`clock='t'` needs plateaus computed with the flow-time clock `t`")
    return float(min(p.end_t for p in ps if p.end_t is not None))   # none is None (above)


STANDARD_RULES = (("delta", 1e-3), ("delta", 1e-4), ("ratio", 0.05), ("ratio", 0.01))
"""The paper's prefixes (Kumar, arXiv 2609.39408): δ = 1e−3 and 1e−4 (Tables 3–4), the 5% ratio
prefix and its 1% comparison boundary (Figure 2)."""


def standard_plateaus(losses: ArrayLike, *, n: ArrayLike | None = None,
                      t: ArrayLike | None = None) -> dict:
    """All the paper's prefixes of one normalized loss sequence, keyed
    ``"delta=0.001"``, ``"delta=0.0001"``, ``"ratio=0.05"``, ``"ratio=0.01"``."""
    out = {}
    for rule, thr in STANDARD_RULES:
        rule_kw: dict[str, Any] = {rule: thr}
        out[f"{rule}={thr:g}"] = plateau(losses, n=n, t=t, **rule_kw)
    return out
