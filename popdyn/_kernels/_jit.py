"""The one jit decorator of popdyn.

Every numba kernel in the project is compiled through :func:`jit`, which is
``numba.njit(cache=True, fastmath=False)``.  ``fastmath`` is never used: it
reorders floating-point operations, which breaks error-free transformations
and makes float64 results a poor input for certification (DESIGN §6).

Set the environment variable ``POPDYN_NO_CACHE=1`` to disable on-disk caching
(useful when the package directory is read-only).
"""
import os

import numba

_CACHE = os.environ.get("POPDYN_NO_CACHE", "0") not in ("1", "true", "yes")


def jit(func=None, **kwargs):
    """Compile ``func`` with ``numba.njit(cache=True, fastmath=False)``.

    Keyword arguments other than ``cache`` and ``fastmath`` are passed to numba
    (e.g. ``parallel=True`` for kernels of >= 100 ms).
    """
    if "fastmath" in kwargs or "cache" in kwargs:
        raise TypeError("`fastmath` and `cache` are fixed by popdyn._kernels._jit")
    opts = dict(cache=_CACHE, fastmath=False, **kwargs)
    if func is None:
        return lambda f: numba.njit(**opts)(f)
    return numba.njit(**opts)(func)
