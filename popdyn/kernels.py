"""Building blocks for numba kernels written outside popdyn (e.g. certify's Mehler kernels).

:func:`jit` is the project's one jit decorator (``numba.njit(cache=True, fastmath=False)``, no
``fastmath``: docs/design.md §6); :func:`two_sum` and :func:`two_prod` are the error-free
transformations of float64 (Knuth; Dekker) that the compiled kernels use; :func:`bvn_cdf` and
:func:`bvn_cdf_batch` are the bivariate normal CDF Φ₂(h, k; r) (Genz 2004) for one argument
triple and, vectorized, for arrays of them (absolute error ≤ 2 ulp(1), relative error ≤ 2e−14 +
2·eps·|ln Φ₂|; both take 1 − r and 1 + r from the caller, so that correlations within 1e−12 of
±1 keep their accuracy).
"""
from ._kernels._jit import jit
from ._kernels.bvn import bvn_cdf
from ._kernels.bvn_batch import bvn_cdf_batch
from ._kernels.eft import two_prod, two_sum

__all__ = ["bvn_cdf", "bvn_cdf_batch", "jit", "two_prod", "two_sum"]
