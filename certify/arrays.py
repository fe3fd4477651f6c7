"""The Arb array context of :mod:`popdyn.assembly`: the float engine's assembly lines evaluated
in ball arithmetic.

:mod:`popdyn.assembly` writes the loss, gradient, AGOP and refit quadratic once against an array
context; :data:`ARB` evaluates them on python-flint balls.  Vectors are :class:`Vec` (a tuple
of ``arb`` with elementwise ``+``, ``-``, ``*`` and products with scalars), matrices are
``arb_mat``.  Every operation is a ball operation at the current python-flint precision, so
the result encloses the exact value of the formula at the exact inputs (floats enter exactly:
:func:`vec`, :func:`certify._arb.mat_from_array`).  ``vdot`` and ``matvec`` are ``arb_mat``
products (Arb's dot products, one rounding per entry).
"""
from __future__ import annotations

import numpy as np
from flint import arb, arb_mat
from popdyn.assembly import ArrayContext


__all__ = ["ARB", "Vec", "vec", "col", "as_vec"]


class Vec:
    """A vector of balls: elementwise ``+``, ``-``, ``*`` with another :class:`Vec` of the same
    length or with a scalar (``arb``, int or float, taken exactly); ``/`` by a scalar."""

    __slots__ = ("x",)

    def __init__(self, entries):
        self.x = tuple(entries)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i]

    def __iter__(self):
        return iter(self.x)

    def _zip(self, other, op):
        if isinstance(other, Vec):
            if len(other) != len(self):
                raise ValueError(f"vectors of lengths {len(self)} and {len(other)}")
            return Vec(op(u, w) for u, w in zip(self.x, other.x))
        return Vec(op(u, other) for u in self.x)

    def __add__(self, other):
        return self._zip(other, lambda u, w: u + w)

    def __radd__(self, other):
        return self._zip(other, lambda u, w: w + u)

    def __sub__(self, other):
        return self._zip(other, lambda u, w: u - w)

    def __rsub__(self, other):
        return self._zip(other, lambda u, w: w - u)

    def __mul__(self, other):
        return self._zip(other, lambda u, w: u * w)

    def __rmul__(self, other):
        return self._zip(other, lambda u, w: w * u)

    def __truediv__(self, other):
        return self._zip(other, lambda u, w: u / w)

    def __neg__(self):
        return Vec(-u for u in self.x)

    def __repr__(self):
        return f"Vec({list(self.x)!r})"


def vec(x) -> Vec:
    """The exact :class:`Vec` of a float64 array."""
    return Vec(arb(float(u)) for u in np.asarray(x, dtype=np.float64).ravel())


def col(x: Vec) -> arb_mat:
    """The column ``arb_mat`` of a :class:`Vec`."""
    return arb_mat(len(x), 1, list(x.x))


def as_vec(M: arb_mat) -> Vec:
    """The :class:`Vec` of a column (or row) ``arb_mat``."""
    return Vec(M.entries())


class ArbContext(ArrayContext):
    """:class:`popdyn.assembly.ArrayContext` on balls (module docstring)."""

    name = "arb"

    def matvec(self, M, x):
        return as_vec(M * col(x))

    def rmatvec(self, M, x):
        return as_vec(M.transpose() * col(x))

    def vdot(self, x, y):
        return (col(x).transpose() * col(y))[0, 0]

    def vecmat(self, x, M):
        return as_vec(col(x).transpose() * M)

    def hadamard(self, X, Y):
        n, k = X.nrows(), X.ncols()
        return arb_mat(n, k, [X[i, j] * Y[i, j] for i in range(n) for j in range(k)])

    def matmul(self, A_, B):
        return A_ * B

    def transpose(self, A_):
        return A_.transpose()

    def outer(self, x, y):
        return arb_mat(len(x), len(y), [u * w for u in x for w in y])

    def scale_rows(self, x, M):
        n, k = M.nrows(), M.ncols()
        return arb_mat(n, k, [x[i] * M[i, j] for i in range(n) for j in range(k)])

    def scale_cols(self, M, x):
        n, k = M.nrows(), M.ncols()
        return arb_mat(n, k, [M[i, j] * x[j] for i in range(n) for j in range(k)])

    def sym(self, A_):
        """½(A + Aᵀ), exactly symmetric; an entry whose mirror is the same ball is kept as it
        is (the average of two points of a ball lies in it), as float64 keeps ½(x + x) = x."""
        n = A_.nrows()
        out = arb_mat(n, n)
        for i in range(n):
            out[i, i] = A_[i, i]
            for j in range(i + 1, n):
                u, w = A_[i, j], A_[j, i]
                v = u if (u.mid() == w.mid() and u.rad() == w.rad()) else (u + w) / 2
                out[i, j] = v
                out[j, i] = v
        return out


#: the ball-arithmetic context
ARB = ArbContext()
