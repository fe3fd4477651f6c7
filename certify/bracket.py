"""The bracket type: a closed interval [lo, hi] with how it was obtained.

Mirrors Arb's ``arb`` ball (STYLE item 6): immutable, ``lo``, ``hi``, ``mid``, ``rad``,
``contains``, ``overlaps``, ``intersection`` (raises when empty).  Endpoints are float64 numbers
and mean their exact binary values; a float given as input (to ``contains``, comparisons,
:meth:`Bracket.point`) also means its exact binary value.  Arb balls are converted with their
exact lower and upper endpoints rounded outward (never ``float(ball)``, which is the midpoint).

Provenance
----------
``"rigorous"``
    Interval arithmetic over the exact formula, every rounding and every truncation bounded.
``"numerical"``
    The enclosure rests on an estimate (step refinement, tabulated coefficients whose tails are
    estimated, float64 error estimates).  Stated as such, never presented as rigorous.

Status
------
``"resolved"`` (the default), or ``"unresolved"``: the quantity is not determined at the
precision used (for example an eigenspace whose gap could not be certified); the bracket is
then the whole admissible range (e.g. [0, 1] for an alignment), never a point.

Comparisons are three-valued only through explicit methods (STYLE item 7): ``certainly_lt``
is True iff every point of ``self`` is below every point of ``other``; ``possibly_lt`` iff some
point is.  There is no ``__bool__`` and no ``<``; :meth:`decide_lt` raises
:class:`certify.Undecided` when the brackets overlap.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from .errors import Undecided

if TYPE_CHECKING:
    import numpy as np
    from flint import arb
    from numpy.typing import ArrayLike, NDArray

__all__ = ["Bracket", "PROVENANCES", "STATUSES"]

PROVENANCES = ("rigorous", "numerical")
STATUSES = ("resolved", "unresolved")


def _exact(x: object) -> Fraction | float:
    """An exact rational (or ±inf) for a float / int / Fraction / mpmath mpf / Bracket endpoint."""
    if isinstance(x, bool):
        raise TypeError("a bool is not a number here")
    if isinstance(x, Fraction):
        return x
    if isinstance(x, numbers.Integral):
        return Fraction(int(x))
    if isinstance(x, float):
        if math.isnan(x):
            raise ValueError("NaN is not a value")
        if math.isinf(x):
            return x
        return Fraction(x)
    # mpmath mpf (and anything else with an exact rational representation)
    mpf_ = getattr(x, "_mpf_", None)
    if mpf_ is not None:
        from mpmath import libmp

        if mpf_ in (libmp.finf, libmp.fninf):
            return math.inf if mpf_ == libmp.finf else -math.inf
        if mpf_ == libmp.fnan:
            raise ValueError("NaN is not a value")
        sign, man, exp, bc = mpf_
        man, exp = int(man), int(exp)
        top = exp + man.bit_length()
        # outside the float range only the order against floats matters: use a proxy
        # (|x| < 2^-1100 sits strictly between 0 and every nonzero float; |x| > 2^1100 beyond
        # every finite float)
        if man and top < -1100:
            v = Fraction(1, 1 << 1100)
        elif man and top > 1100:
            v = Fraction(1 << 1100)
        else:
            v = Fraction(man << exp) if exp >= 0 else Fraction(man, 1 << (-exp))
        return -v if sign else v
    if isinstance(x, numbers.Real):
        return _exact(float(x)) if not isinstance(x, numbers.Rational) else Fraction(x)
    raise TypeError(f"expected a real number, got {type(x).__name__}")


def _nearest(q: Fraction | float) -> float:
    try:
        return float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


_BIG = 1.7976931348623157e308


def _down(q: Fraction | float) -> float:
    """Largest float64 <= q (q an exact rational, or a float / ±inf returned as is)."""
    if isinstance(q, float):
        return q
    f = _nearest(q)
    if math.isinf(f):
        return _BIG if q > 0 else -math.inf
    if Fraction(f) > q:
        f = math.nextafter(f, -math.inf)
    return f


def _up(q: Fraction | float) -> float:
    """Smallest float64 >= q (q an exact rational, or a float / ±inf returned as is)."""
    if isinstance(q, float):
        return q
    f = _nearest(q)
    if math.isinf(f):
        return math.inf if q > 0 else -_BIG
    if Fraction(f) < q:
        f = math.nextafter(f, math.inf)
    return f


@dataclass(frozen=True)
class Bracket:
    """A closed interval [lo, hi] with provenance and status.

    Parameters
    ----------
    lo, hi : float
        Endpoints (exact binary values), ``lo <= hi``; ±inf allowed, NaN not.
    provenance : {"rigorous", "numerical"}
    status : {"resolved", "unresolved"}
    note : str
        Free text: how the bracket was obtained, or why it is unresolved.

    Examples
    --------
    >>> b = Bracket(0.25, 0.5)
    >>> b.contains(0.3), b.certainly_lt(1.0), b.possibly_gt(0.4)
    (True, True, True)
    >>> b.intersection(Bracket(0.4, 2.0))
    Bracket(lo=0.4, hi=0.5, provenance='rigorous', status='resolved', note='')
    """

    lo: float
    hi: float
    provenance: str = "rigorous"
    status: str = "resolved"
    note: str = ""

    def __post_init__(self) -> None:
        for nm in ("lo", "hi"):
            v = getattr(self, nm)
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise TypeError(f"`{nm}` must be a real number, got {v!r}")
            fv = float(v)
            if not isinstance(v, float) and Fraction(fv) != _exact(v):
                raise ValueError(f"`{nm}` = {v!r} is not exactly a float64; use Bracket.enclosing")
            if math.isnan(fv):
                raise ValueError(f"`{nm}` must not be NaN")
            object.__setattr__(self, nm, fv)
        if not self.lo <= self.hi:
            raise ValueError(f"empty bracket: lo = {self.lo!r} > hi = {self.hi!r}")
        if self.provenance not in PROVENANCES:
            raise ValueError(f"`provenance` must be one of {PROVENANCES}, got {self.provenance!r}")
        if self.status not in STATUSES:
            raise ValueError(f"`status` must be one of {STATUSES}, got {self.status!r}")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def point(cls, x: float | Fraction, **kw: Any) -> "Bracket":
        """[x, x] for a float64 x (exact)."""
        x = float(_require_float(x, "x"))
        return cls(x, x, **kw)

    @classmethod
    def enclosing(cls, lo: float | Fraction, hi: float | Fraction | None = None,
                  **kw: Any) -> "Bracket":
        """The smallest float bracket containing the exact numbers lo and hi (default hi = lo).

        Accepts floats, ints, Fractions and mpmath mpf values (exact).
        """
        qlo = _exact(lo)
        qhi = qlo if hi is None else _exact(hi)
        if qlo > qhi:
            raise ValueError(f"empty bracket: lo = {lo!r} > hi = {hi!r}")
        return cls(_down(qlo), _up(qhi), **kw)

    @classmethod
    def from_arb(cls, x: arb, **kw: Any) -> "Bracket":
        """From a python-flint ``arb`` ball: its exact endpoints rounded outward."""
        from ._arb import arb_bounds

        lo, hi = arb_bounds(x)
        if math.isnan(lo) or math.isnan(hi):
            raise ValueError("the ball is NaN (not finite); no bracket")
        return cls(lo, hi, **kw)

    @classmethod
    def whole(cls, lo: float = -math.inf, hi: float = math.inf, *, note: str = "", provenance: str = "rigorous") -> "Bracket":
        """The whole admissible range, flagged ``unresolved`` (e.g. [0, 1] for an alignment)."""
        return cls(float(lo), float(hi), provenance=provenance, status="unresolved", note=note)

    def replace(self, **kw: Any) -> "Bracket":
        d: dict[str, Any] = dict(lo=self.lo, hi=self.hi, provenance=self.provenance,
                                 status=self.status, note=self.note)
        d.update(kw)
        return Bracket(**d)

    # ------------------------------------------------------------------ geometry
    @property
    def mid(self) -> float:
        """A float64 midpoint (rounded; use ``rad`` for a covering radius)."""
        if math.isinf(self.lo) or math.isinf(self.hi):
            if math.isinf(self.lo) and math.isinf(self.hi):
                return 0.0
            return self.lo if math.isinf(self.hi) else self.hi
        return float((Fraction(self.lo) + Fraction(self.hi)) / 2)

    @property
    def rad(self) -> float:
        """Smallest float r with [mid − r, mid + r] ⊇ [lo, hi] (exact check, rounded up)."""
        if math.isinf(self.lo) or math.isinf(self.hi):
            return math.inf
        m = Fraction(self.mid)
        return _up(max(m - Fraction(self.lo), Fraction(self.hi) - m))

    @property
    def width(self) -> float:
        """hi − lo rounded up."""
        if math.isinf(self.lo) or math.isinf(self.hi):
            return math.inf
        return _up(Fraction(self.hi) - Fraction(self.lo))

    @property
    def rel_width(self) -> float:
        """width / min|x| over the bracket (inf if the bracket contains 0)."""
        if self.lo <= 0.0 <= self.hi:
            return math.inf if self.width > 0 else 0.0
        return self.width / min(abs(self.lo), abs(self.hi))

    @property
    def is_rigorous(self) -> bool:
        return self.provenance == "rigorous"

    @property
    def resolved(self) -> bool:
        return self.status == "resolved"

    def contains(self, x: float | Fraction | Bracket) -> bool:
        """x ∈ [lo, hi], exactly (x a float, int, Fraction, mpmath mpf, or a Bracket)."""
        if isinstance(x, Bracket):
            return self.lo <= x.lo and x.hi <= self.hi
        q = _exact(x)
        return _le(self.lo, q) and _le(q, self.hi)

    def overlaps(self, other: float | Fraction | Bracket) -> bool:
        o = _as_bracket(other)
        return self.lo <= o.hi and o.lo <= self.hi

    def intersection(self, other: float | Fraction | Bracket) -> "Bracket":
        """[max lo, min hi]; raises ``ValueError`` when empty.  Provenance is the weaker one."""
        o = _as_bracket(other)
        lo, hi = max(self.lo, o.lo), min(self.hi, o.hi)
        if lo > hi:
            raise ValueError(f"empty intersection of [{self.lo!r}, {self.hi!r}] and "
                             f"[{o.lo!r}, {o.hi!r}]")
        prov = "rigorous" if self.is_rigorous and o.is_rigorous else "numerical"
        st = "resolved" if self.resolved or o.resolved else "unresolved"
        return Bracket(lo, hi, provenance=prov, status=st, note=self.note or o.note)

    def union(self, other: float | Fraction | Bracket) -> "Bracket":
        """The convex hull."""
        o = _as_bracket(other)
        prov = "rigorous" if self.is_rigorous and o.is_rigorous else "numerical"
        st = "resolved" if self.resolved and o.resolved else "unresolved"
        return Bracket(min(self.lo, o.lo), max(self.hi, o.hi), provenance=prov, status=st,
                       note=self.note or o.note)

    def clip(self, lo: float, hi: float) -> "Bracket":
        """Intersect with the admissible range [lo, hi] that the true value is known to lie in."""
        return self.replace(lo=min(max(self.lo, float(lo)), float(hi)),
                            hi=max(min(self.hi, float(hi)), float(lo)))

    # ------------------------------------------------------------------ comparisons
    def certainly_lt(self, other: float | Fraction | Bracket) -> bool:
        return self.hi < _as_bracket(other).lo

    def certainly_le(self, other: float | Fraction | Bracket) -> bool:
        return self.hi <= _as_bracket(other).lo

    def certainly_gt(self, other: float | Fraction | Bracket) -> bool:
        return self.lo > _as_bracket(other).hi

    def certainly_ge(self, other: float | Fraction | Bracket) -> bool:
        return self.lo >= _as_bracket(other).hi

    def possibly_lt(self, other: float | Fraction | Bracket) -> bool:
        return self.lo < _as_bracket(other).hi

    def possibly_le(self, other: float | Fraction | Bracket) -> bool:
        return self.lo <= _as_bracket(other).hi

    def possibly_gt(self, other: float | Fraction | Bracket) -> bool:
        return self.hi > _as_bracket(other).lo

    def possibly_ge(self, other: float | Fraction | Bracket) -> bool:
        return self.hi >= _as_bracket(other).lo

    def decide_lt(self, other: float | Fraction | Bracket) -> bool:
        """True if certainly <, False if certainly >=; raises :class:`Undecided` otherwise."""
        if self.certainly_lt(other):
            return True
        if self.certainly_ge(other):
            return False
        raise Undecided(f"cannot decide {self} < {other}: the brackets overlap")

    def __bool__(self) -> bool:
        raise TypeError("a Bracket has no truth value; use certainly_* / possibly_* "
                        "(or decide_lt, which raises Undecided)")

    def __lt__(self, other: object) -> bool:
        raise TypeError("Brackets are not ordered by '<'; use certainly_lt / possibly_lt")

    __le__ = __gt__ = __ge__ = __lt__

    # ------------------------------------------------------------------ arithmetic (outward)
    def __neg__(self) -> "Bracket":
        return self.replace(lo=-self.hi, hi=-self.lo)

    def scale(self, c: float | Fraction) -> "Bracket":
        """c · self for an exact float c (outward rounded)."""
        c = _exact(_require_float(c, "c"))
        if isinstance(c, float) or math.isinf(self.lo) or math.isinf(self.hi):
            vals = [float(c) * self.lo, float(c) * self.hi]
            vals = [0.0 if math.isnan(v) else v for v in vals]
            return self.replace(lo=min(vals), hi=max(vals))
        a, b = c * Fraction(self.lo), c * Fraction(self.hi)
        return self.replace(lo=_down(min(a, b)), hi=_up(max(a, b)))

    def __str__(self) -> str:
        tag = "" if self.is_rigorous else " (numerical)"
        st = "" if self.resolved else " [unresolved]"
        return f"[{self.lo!r}, {self.hi!r}]{tag}{st}"


def _require_float(x, name):
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"`{name}` must be a real number, got {x!r}")
    if not isinstance(x, float):
        fx = float(x)
        if Fraction(fx) != _exact(x):
            raise ValueError(f"`{name}` = {x!r} is not exactly a float64")
        return fx
    return x


def _le(a: Fraction | float, b: Fraction | float) -> bool:
    """a <= b for exact rationals / floats / ±inf."""
    if isinstance(a, float) and math.isinf(a):
        return a < 0 or (isinstance(b, float) and b == math.inf)
    if isinstance(b, float) and math.isinf(b):
        return b > 0
    return Fraction(a) <= Fraction(b)


def _as_bracket(x: float | Fraction | Bracket) -> Bracket:
    if isinstance(x, Bracket):
        return x
    return Bracket.enclosing(x)


class BracketArray:
    """Entrywise brackets of an array: float64 arrays ``lo`` <= ``hi`` (exact values) with a
    common provenance.  Indexing returns a :class:`Bracket`; ``contains`` checks every entry.
    Immutable (the arrays are read-only copies).
    """

    __slots__ = ("lo", "hi", "provenance", "status", "note")
    lo: NDArray[np.float64]
    hi: NDArray[np.float64]
    provenance: str
    status: str
    note: str

    def __init__(self, lo: ArrayLike, hi: ArrayLike, provenance: str = "rigorous",
                 status: str = "resolved", note: str = "") -> None:
        import numpy as np

        lo = np.array(lo, dtype=np.float64)
        hi = np.array(hi, dtype=np.float64)
        if lo.shape != hi.shape:
            raise ValueError(f"`lo` and `hi` must have the same shape, got {lo.shape}, {hi.shape}")
        if np.any(np.isnan(lo)) or np.any(np.isnan(hi)):
            raise ValueError("bracket endpoints must not be NaN")
        if np.any(lo > hi):
            raise ValueError("empty bracket: some lo > hi")
        if provenance not in PROVENANCES:
            raise ValueError(f"`provenance` must be one of {PROVENANCES}, got {provenance!r}")
        if status not in STATUSES:
            raise ValueError(f"`status` must be one of {STATUSES}, got {status!r}")
        lo.setflags(write=False)
        hi.setflags(write=False)
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        object.__setattr__(self, "provenance", provenance)
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "note", note)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("BracketArray is immutable")

    @property
    def shape(self) -> tuple[int, ...]:
        return self.lo.shape

    @property
    def mid(self) -> NDArray[np.float64]:
        return 0.5 * self.lo + 0.5 * self.hi

    @property
    def width(self) -> NDArray[np.float64]:
        return self.hi - self.lo

    def __getitem__(self, idx: Any) -> Bracket | BracketArray:
        lo, hi = self.lo[idx], self.hi[idx]
        if getattr(lo, "ndim", 0):
            return BracketArray(lo, hi, self.provenance, self.status, self.note)
        return Bracket(float(lo), float(hi), provenance=self.provenance, status=self.status,
                       note=self.note)

    def contains(self, x: ArrayLike) -> bool:
        """Every entry of the float64 array ``x`` lies in its bracket (exact comparison)."""
        import numpy as np

        x = np.asarray(x, dtype=np.float64)
        if x.shape != self.lo.shape:
            raise ValueError(f"shape mismatch: {x.shape} vs {self.lo.shape}")
        return bool(np.all(self.lo <= x) and np.all(x <= self.hi))

    def __bool__(self) -> bool:
        raise TypeError("a BracketArray has no truth value; use contains / entries")

    def __repr__(self) -> str:
        return (f"BracketArray(shape={self.shape}, max width={float(self.width.max()) if self.lo.size else 0.0:.3g}, "
                f"provenance={self.provenance!r})")
