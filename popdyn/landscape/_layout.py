"""The flat parameter vector of the landscape modules: :class:`Layout` (order a, W row-major, b,
v, c; fixed parameters are not coordinates), :func:`flatten`, :func:`unflatten`.

Its own module so that :mod:`._hessian` (which dispatches to :mod:`._smooth` and :mod:`._biased`)
and those modules share one definition without importing each other.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models import Params

@dataclass(frozen=True)
class Layout:
    """Slices of the flat parameter vector of a student (order: a, W, b, v, c; see module doc)."""

    m: int
    d: int
    bias: bool
    skip: bool
    intercept: bool

    @property
    def a(self) -> slice:
        return slice(0, self.m)

    @property
    def W(self) -> slice:
        return slice(self.m, self.m + self.m * self.d)

    @property
    def b(self) -> slice:
        k = self.m + self.m * self.d
        return slice(k, k + (self.m if self.bias else 0))

    @property
    def v(self) -> slice:
        k = self.b.stop
        return slice(k, k + (self.d if self.skip else 0))

    @property
    def c(self) -> slice:
        k = self.v.stop
        return slice(k, k + (1 if self.intercept else 0))

    @property
    def size(self) -> int:
        return self.c.stop

    def names(self) -> list:
        """Human-readable coordinate names (``a[0]``, ``W[0,1]``, ``v[1]``, ``c``)."""
        out = [f"a[{j}]" for j in range(self.m)]
        out += [f"W[{j},{k}]" for j in range(self.m) for k in range(self.d)]
        if self.bias:
            out += [f"b[{j}]" for j in range(self.m)]
        if self.skip:
            out += [f"v[{k}]" for k in range(self.d)]
        if self.intercept:
            out.append("c")
        return out


def layout(student) -> Layout:
    """The :class:`Layout` of ``student``'s free parameters."""
    return Layout(student.m, student.d, bool(student.bias), bool(student.skip),
                  bool(student.intercept))


def flatten(student, params) -> np.ndarray:
    """The free parameters of ``params`` as one vector in the order of :class:`Layout`."""
    lay = layout(student)
    parts = [params.a, params.W.ravel()]
    if lay.bias:
        parts.append(params.b)
    if lay.skip:
        parts.append(params.v)
    if lay.intercept:
        parts.append([params.c])
    return np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in parts])


def unflatten(student, x):
    """Inverse of :func:`flatten` (a :class:`popdyn.Params`; fixed parameters are zero)."""
    lay = layout(student)
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (lay.size,):
        raise ValueError(f"`x` must have shape ({lay.size},) for this student, got {x.shape}")
    b = x[lay.b] if lay.bias else np.zeros(lay.m)
    v = x[lay.v] if lay.skip else None
    c = float(x[lay.c][0]) if lay.intercept else 0.0
    return Params(x[lay.a].copy(), x[lay.W].reshape(lay.m, lay.d).copy(), b.copy(), c,
                  None if v is None else v.copy())
