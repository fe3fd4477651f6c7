"""Building blocks for numba kernels written outside popdyn (e.g. certify's Mehler kernels).

:func:`jit` is the project's one jit decorator (``numba.njit(cache=True, fastmath=False)``, no
``fastmath``: docs/design.md §6); :func:`two_sum` and :func:`two_prod` are the error-free
transformations of float64 (Knuth; Dekker) that the compiled kernels use.
"""
from ._kernels._jit import jit
from ._kernels.eft import two_prod, two_sum

__all__ = ["jit", "two_prod", "two_sum"]
