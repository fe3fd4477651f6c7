"""Loss plateaus (DESIGN §5; central seed paper, Appendix: plateau rule and Figure 2 shading).

* δ-prefix: the largest n with |ℓ_k − ℓ_0| ≤ δ for all k ≤ n (ℓ the normalized loss; the paper
  uses δ = 1e−3 and 1e−4);
* ratio prefix: the largest n with |ℓ_k/ℓ_0 − 1| ≤ ratio for all k ≤ n (5%, with a 1% comparison
  boundary);
* the release is the first update after the prefix (None when the run never leaves it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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


def _prefix_end(bad: np.ndarray) -> int:
    idx = np.flatnonzero(bad)
    return int(idx[0]) - 1 if idx.size else bad.shape[0] - 1


def plateau(losses, *, delta: float | None = None, ratio: float | None = None,
            n=None, t=None) -> Plateau:
    """The loss-plateau prefix of a (normalized) loss sequence.

    Exactly one of ``delta`` (absolute band |ℓ_k − ℓ_0| ≤ δ) or ``ratio`` (|ℓ_k/ℓ_0 − 1| ≤ ratio)
    must be given.  ``n`` and ``t`` (same length as ``losses``) give the update and flow-time
    clocks.  Raises ``ValueError`` for empty or non-finite sequences.
    """
    ell = np.asarray(losses, dtype=np.float64)
    if ell.ndim != 1 or ell.size == 0:
        raise ValueError(f"`losses` must be a non-empty 1-D sequence, got shape {ell.shape}")
    if not np.all(np.isfinite(ell)):
        raise ValueError("`losses` must be finite (contains NaN or inf)")
    if (delta is None) == (ratio is None):
        raise ValueError("give exactly one of `delta` and `ratio`")
    if delta is not None:
        thr = V.real("delta", delta, positive=True)
        bad = np.abs(ell - ell[0]) > thr
        rule = "delta"
    else:
        thr = V.real("ratio", ratio, positive=True)
        if ell[0] == 0:
            raise ValueError("`losses[0]` is 0: the ratio prefix is undefined")
        bad = np.abs(ell / ell[0] - 1.0) > thr
        rule = "ratio"
    end = _prefix_end(bad)
    release = end + 1 if end + 1 < ell.size else None
    nn = np.arange(ell.size) if n is None else V.array("n", n, (ell.size,))
    tt = None if t is None else V.array("t", t, (ell.size,))
    return Plateau(rule, thr, end, release, int(nn[end]), None if tt is None else float(tt[end]),
                   None if release is None else int(nn[release]),
                   None if (release is None or tt is None) else float(tt[release]),
                   float(ell[end] - ell[0]))


def shared_prefix(plateaus) -> int:
    """The prefix shared by a cohort: the minimum of the seeds' plateau endpoints (in updates)."""
    ends = [p.end_n for p in plateaus]
    if not ends:
        raise ValueError("`plateaus` must be non-empty")
    return int(min(ends))


def shared_plateau(plateaus, *, clock: str = "n"):
    """The prefix shared by a cohort on either clock: min of the seeds' plateau endpoints in
    updates (``clock="n"``, an int, same as :func:`shared_prefix`) or in flow time
    (``clock="t"``, a float; every plateau must carry ``end_t``).

    References
    ----------
    Seed paper 003, Figure 1 ("shading marks the loss-only plateau shared by all fifty seeds").
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
    return float(min(p.end_t for p in ps))


STANDARD_RULES = (("delta", 1e-3), ("delta", 1e-4), ("ratio", 0.05), ("ratio", 0.01))
"""The seed paper's prefixes: δ = 1e−3 and 1e−4 (Tables 3–4), the 5% ratio prefix and its 1%
comparison boundary (Figure 2)."""


def standard_plateaus(losses, *, n=None, t=None) -> dict:
    """All the seed paper's prefixes of one normalized loss sequence, keyed
    ``"delta=0.001"``, ``"delta=0.0001"``, ``"ratio=0.05"``, ``"ratio=0.01"``."""
    out = {}
    for rule, thr in STANDARD_RULES:
        out[f"{rule}={thr:g}"] = plateau(losses, n=n, t=t, **{rule: thr})
    return out
