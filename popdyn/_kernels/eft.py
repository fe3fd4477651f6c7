"""Error-free transformations of float64 (Knuth, Dekker), shared by the kernels and certify.

Each returns the rounded result and its exact rounding error (barring overflow and underflow):
``two_sum(a, b) = (s, e)`` with s + e = a + b exactly, ``two_prod(a, b) = (p, e)`` with
p + e = a·b exactly (Veltkamp's splitting, no fma needed).

References
----------
T. Ogita, S. M. Rump, S. Oishi, "Accurate sum and dot product", SIAM J. Sci. Comput. 26 (2005)
1955–1988, Algorithms 3.1–3.2 (TwoSum, Split, TwoProduct).
"""
from ._jit import jit


@jit
def two_sum(a, b):
    """(s, e): s = fl(a + b), e the exact error (Knuth's TwoSum)."""
    s = a + b
    z = s - a
    return s, (a - (s - z)) + (b - z)


@jit
def split(a):
    """Veltkamp's splitting a = hi + lo with 26-bit halves (exact)."""
    c = 134217729.0 * a          # 2^27 + 1
    hi = c - (c - a)
    return hi, a - hi


@jit
def two_prod(a, b):
    """(p, e): p = fl(a·b), e the exact error (Dekker's TwoProduct)."""
    p = a * b
    ah, al = split(a)
    bh, bl = split(b)
    return p, al * bl - (((p - ah * bh) - al * bh) - ah * bl)
