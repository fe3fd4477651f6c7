"""Cells of a paper comparison: one printed number of the paper beside popdyn's, with a verdict.

A *cell* is one quantity of one row of one of the paper's tables (or one number of its prose):
``{"experiment", "row", "column", "paper", "popdyn", "verdict", "reason"}``.  ``paper`` is the
number as printed (a printed bracket is ``[lo, hi]``, a printed status a string); ``popdyn`` is
the statistic of the paper's caption (mean, median, or the single run's value) over popdyn's
runs of that row, ``[lo, hi]`` where the quantity is an interval (an unresolved alignment enters
as ``[0, 1]``, paper App. A); ``verdict`` is ``"matches"`` or ``"differs"``; ``reason`` says why,
with the tolerance and the distance, and carries the hand-written explanation of a known miss.

Tolerances are declared per cell beside the paper's numbers (``paper_values.toml``), one of

``{abs = a}``
    both ends of popdyn's value within ``a`` of the paper's value, or of the printed bracket's
    ends (the popdyn interval must lie inside the paper's interval widened by ``a``);
``{rel = q}``
    within ``q·|paper|``;
``{factor = f}``
    within a factor ``f`` either way (paper/f ≤ popdyn ≤ paper·f, both positive);
``{sd = k}``
    within ``k`` of the paper's printed seed standard deviations (the cell's ``sd``);
``{abs_or_bracket = a}``
    the same rule as ``abs``, named where the paper prints a value or a bracket;
``{exact = true}``
    a printed status or mark (``"loss stop"``, ``"--"``): equal strings.

Each tolerance is widened by half a unit of the paper's last printed digit (``digits`` decimal
places): a printed 0.972 stands for [0.9715, 0.9725].  A printed status (e.g. ``"loss stop"``)
matches only the same status.  A quantity popdyn did not measure differs, with the reason.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np

__all__ = ["CELL_KEYS", "aggregate", "judge", "make_cell", "write_json"]

#: the keys of one cell object, in this order (``popdyn reproduce --json``)
CELL_KEYS = ("experiment", "row", "column", "paper", "popdyn", "verdict", "reason")

_STATS: dict[str, Callable[..., Any]] = {"mean": np.mean, "median": np.median}


def _interval(x):
    """``x`` as a closed interval (lo, hi); a number is the degenerate interval."""
    if isinstance(x, (list, tuple)):
        if len(x) != 2:
            raise ValueError(f"an interval must be [lo, hi], got {x!r}")
        lo, hi = float(x[0]), float(x[1])
        if not lo <= hi:
            raise ValueError(f"an interval must have lo <= hi, got {x!r}")
        return lo, hi
    v = float(x)
    return v, v


def aggregate(values, statistic: str):
    """The caption's ``statistic`` over per-run values.

    Parameters
    ----------
    values : list
        Per-run values: numbers, ``[lo, hi]`` intervals, strings (statuses) or ``None`` (not
        measured in that run; left out).
    statistic : {"mean", "median", "single run"}
        The statistic of the paper's caption.  Intervals are aggregated end by end (the mean of
        the lower ends and the mean of the upper ends: paper App. A, "brackets give the mean
        lower and upper bounds"); a result whose ends coincide is returned as a number.

    Returns
    -------
    float, [lo, hi], str or None
        ``None`` when no run measured the quantity.
    """
    vals = [v for v in values if v is not None
            and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return None
    if any(isinstance(v, str) for v in vals):
        if statistic != "single run" or len(vals) != 1:
            raise ValueError("a status can only be compared for a single run")
        return vals[0]
    if statistic == "single run":
        if len(vals) != 1:
            raise ValueError(f"statistic 'single run' needs one run, got {len(vals)}")
        v = vals[0]
        return [float(v[0]), float(v[1])] if isinstance(v, (list, tuple)) else float(v)
    if statistic not in _STATS:
        raise ValueError(f"`statistic` must be one of ['mean', 'median', 'single run'], "
                         f"got {statistic!r}")
    f = _STATS[statistic]
    ends = np.array([_interval(v) for v in vals])
    lo, hi = float(f(ends[:, 0])), float(f(ends[:, 1]))
    return lo if lo == hi else [lo, hi]


def _fmt(x) -> str:
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in x) + "]"
    if isinstance(x, str):
        return x
    return f"{float(x):.4g}"


def judge(paper, ours, tolerance: dict, *, digits: int, sd: float | None = None):
    """Verdict and reason of one cell.

    Parameters
    ----------
    paper : float, [lo, hi] or str
        The paper's printed value.
    ours : float, [lo, hi], str or None
        popdyn's statistic (``None``: not measured).
    tolerance : dict
        One of ``{"abs": a}``, ``{"rel": q}``, ``{"factor": f}``, ``{"sd": k}`` (module
        docstring).
    digits : int
        Decimal places the paper prints (half a unit of the last one widens the tolerance).
    sd : float, optional
        The paper's printed seed standard deviation (needed by ``{"sd": k}``).

    Returns
    -------
    (str, str)
        ``("matches" | "differs", reason)``.
    """
    if ours is None:
        return "differs", "not measured by popdyn"
    if isinstance(paper, str) or isinstance(ours, str) or "exact" in (tolerance or {}):
        ok = paper == ours
        return ("matches" if ok else "differs"), f"status {'equal' if ok else 'differs'}"
    if not isinstance(tolerance, dict) or len(tolerance) != 1:
        raise ValueError(f"`tolerance` must be one of {{abs|abs_or_bracket|rel|factor|sd = x}} "
                         f"or {{exact = true}}, got {tolerance!r}")
    (kind, t), = tolerance.items()
    u = 0.5 * 10.0 ** (-int(digits))
    plo, phi = _interval(paper)
    olo, ohi = _interval(ours)
    if kind in ("abs", "abs_or_bracket"):
        a = float(t) + u
        lo, hi, text = plo - a, phi + a, f"±{float(t):g}"
    elif kind == "rel":
        a = float(t) * max(abs(plo), abs(phi)) + u
        lo, hi, text = plo - a, phi + a, f"±{100 * float(t):g}%"
    elif kind == "factor":
        f = float(t)
        if not (f >= 1 and plo > 0):
            raise ValueError(f"a factor tolerance needs factor >= 1 and a positive paper value, "
                             f"got factor {f!r}, paper {paper!r}")
        lo, hi, text = plo / f - u, phi * f + u, f"within a factor {f:g}"
    elif kind == "sd":
        if sd is None:
            raise ValueError("a tolerance {sd = k} needs the paper's printed `sd`")
        a = float(t) * float(sd) + u
        lo, hi, text = plo - a, phi + a, f"±{float(t):g} sd ({float(sd):g})"
    else:
        raise ValueError(f"`tolerance` must be one of abs, abs_or_bracket, rel, factor, sd, "
                         f"exact; got {kind!r}")
    ok = lo <= olo and ohi <= hi
    if ok:
        return "matches", f"inside [{lo:.4g}, {hi:.4g}] ({text} of the paper's {_fmt(paper)})"
    miss = max(lo - olo, ohi - hi)
    return "differs", (f"outside [{lo:.4g}, {hi:.4g}] ({text} of the paper's {_fmt(paper)}) "
                       f"by {miss:.3g}")


def make_cell(experiment: str, pcell: dict, ours, statistic: str, *, n: int,
              known_reason: str | None = None) -> dict:
    """One cell object (:data:`CELL_KEYS`) from a paper cell of ``paper_values.toml`` and
    popdyn's aggregated value; ``n`` runs entered the statistic; ``known_reason`` is the
    hand-written explanation of a miss, appended to the reason of a cell that differs."""
    verdict, reason = judge(pcell["paper"], ours, pcell["tolerance"], digits=pcell["digits"],
                            sd=pcell.get("sd"))
    reason = f"{statistic} of {n} run{'s' if n != 1 else ''}; {reason}"
    if verdict == "differs" and known_reason:
        reason += f"; {known_reason}"
    return {"experiment": experiment, "row": pcell["row"], "column": pcell["column"],
            "paper": pcell["paper"], "popdyn": ours, "verdict": verdict, "reason": reason}


def write_json(path, cells) -> Path:
    """Write ``cells`` as a JSON array of cell objects, atomically (a temporary file renamed)."""
    path = Path(path)
    for c in cells:
        if tuple(c) != CELL_KEYS:
            raise ValueError(f"a cell must have exactly the keys {CELL_KEYS}, got {tuple(c)}")
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(list(cells), indent=1, allow_nan=False) + "\n")
    tmp.replace(path)
    return path
