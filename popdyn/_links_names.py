"""Link names: the fixed names, the families, the registry of user links and name parsing.

Pure string and number handling of :mod:`popdyn.links`: damping rates ``a`` (:func:`_parse_a`),
the atoms of a measure μ (:func:`_parse_measure_items`, :func:`_check_measure`,
:func:`_measure_name`), mixture weights and the canonical mixture name (:func:`_check_weight`,
:func:`_flatten`, :func:`_mixture_name`).  Resolving a name into a link is
:mod:`popdyn._links_build`.
"""
from __future__ import annotations

import math
import numbers
from fractions import Fraction

from . import _links_g as _G


LINK_NAMES = (
    "h1", "h2", "h3", "h4", "h5", "h6", "h3+0.3h2",
    "relu", "tanh", "abs", "sin", "silu", "silu_centered", "gaussian_bump",
)
"""Fixed link names. The families ``damped_cubic:<a>`` and ``mixture(...)`` come on top."""

_FAMILIES = ("damped_cubic:<a>", "g:<v>", "q:<v>", "g_mu(<w>*g:<v>, ...)", "q_mu(<w>*g:<v>, ...)",
             "g_mu(uniform)", "q_mu(uniform)", "mixture(<w>*<name>, ...)", "user:<name>")


# --------------------------------------------------------------------------------------------
# names, parsing and the public API
# --------------------------------------------------------------------------------------------
def _valid_names_msg():
    return ", ".join(LINK_NAMES + _FAMILIES)


def _check_a(a, argname):
    if isinstance(a, bool) or not isinstance(a, numbers.Real):
        raise TypeError(f"`{argname}` must be a real number, got {type(a).__name__}")
    a = float(a)
    if not math.isfinite(a) or a <= 0:
        raise ValueError(f"`{argname}` (the damping rate of damped_cubic) must be a finite "
                         f"float > 0, got {a!r}")
    return a


def _parse_a(text):
    text = text.strip()
    try:
        if "/" in text:
            num, den = text.split("/", 1)
            a = float(Fraction(int(num.strip()), int(den.strip())))
        else:
            a = float(text)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"`spec`: cannot read the damping rate a of 'damped_cubic:{text}' "
                         "(expected a float such as 0.5 or a ratio such as 1/3)") from None
    return _check_a(a, "spec")


def _parse_measure_items(body, s):
    """Atoms (w, v) of a probability measure on [1/3, 1] from 'w*g:v, ...' (validated, merged,
    sorted by v, zero weights dropped)."""
    items = []
    for part in body.split(","):
        part = part.strip()
        if "*" not in part or not part.split("*", 1)[1].strip().startswith("g:"):
            raise ValueError(f"`spec`: cannot parse measure atom {part!r} in {s!r} "
                             "(expected 'w*g:v', e.g. '1/2*g:1/3')")
        w, v = part.split("*", 1)
        items.append((w.strip(), v.strip()[2:]))
    return _check_measure(items, "spec")


def _check_measure(pairs, argname):
    """Validated atoms of a probability measure on [1/3, 1]: weights ≥ 0 (exact rationals, see
    :func:`g_mixture`) summing to 1 exactly or within 1e−12; merged by v, sorted, zeros dropped."""
    if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__iter__"):
        raise TypeError(f"`{argname}` must be a sequence of (weight, v) pairs")
    acc = {}
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"`{argname}`: each atom must be a (weight, v) pair, got {pair!r}")
        w = _G.as_rational(pair[0], argname)
        v = _G.check_v(pair[1], argname)
        if w < 0:
            raise ValueError(f"`{argname}`: weights of the measure mu must be >= 0 (a "
                             f"probability measure, eq. (7)), got {_G.frac_str(w)}; use "
                             "popdyn.links.mixture for signed combinations")
        acc[v] = acc.get(v, Fraction(0)) + w
    items = tuple((w, v) for v, w in sorted(acc.items()) if w != 0)
    if not items:
        raise ValueError(f"`{argname}` must contain at least one atom with positive weight")
    tot = sum(w for w, _ in items)
    if tot != 1 and abs(float(tot - 1)) > 1e-12:
        raise ValueError(f"`{argname}`: the weights must sum to 1 (exactly, or within 1e-12), "
                         f"got {float(tot)!r}")
    return items


def _measure_name(prefix, items):
    if len(items) == 1 and items[0][0] == 1:
        return f"{prefix}:{_G.frac_str(items[0][1])}"
    return (f"{prefix}_mu(" + ", ".join(f"{_G.frac_str(w)}*g:{_G.frac_str(v)}" for w, v in items)
            + ")")


def _check_weight(w, argname):
    if isinstance(w, bool) or not isinstance(w, numbers.Real):
        raise TypeError(f"`{argname}`: mixture weights must be real numbers, "
                        f"got {type(w).__name__}")
    w = float(w)
    if not math.isfinite(w) or w == 0:
        raise ValueError(f"`{argname}`: mixture weights must be finite and nonzero (either "
                         f"sign), got {w!r}")
    return w


def _flatten(items):
    out = []
    for w, l in items:
        if l.components:
            out.extend((w * wl, ll) for wl, ll in l.components)
        else:
            out.append((w, l))
    return tuple(out)


def _mixture_name(items):
    return "mixture(" + ", ".join(f"{w!r}*{l.name}" for w, l in items) + ")"


#: links registered by from_hermite / from_callable, by canonical name ``user:<name>``
_USER_LINKS: dict = {}
