"""Limit the BLAS thread pool inside a run (one run per worker process).

A sweep runs one run per worker; letting OpenBLAS start its own threads in every worker
oversubscribes the cores (measured here: a 64×64 ``eigh`` took 48 ms with the default pool on a
loaded two-core machine, 0.74 ms with one thread).  Runs therefore execute with one BLAS thread,
in every executor (which also keeps the floating-point reduction order, hence the results,
identical across executors and worker counts).  Uses ``threadpoolctl`` when installed, else the
``openblas_set_num_threads`` entry points of the OpenBLAS libraries already loaded (found in
``/proc/self/maps``); on other platforms it does nothing.
"""
from __future__ import annotations

import contextlib
import ctypes
import threading
from typing import Any

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_", "openblas_get_num_threads")
_LIBS = None


def _openblas_libs():
    global _LIBS
    if _LIBS is not None:
        return _LIBS
    libs = []
    try:
        with open("/proc/self/maps") as fh:
            paths = sorted({ln.split()[-1] for ln in fh if "openblas" in ln.lower() and "/" in ln})
    except OSError:
        paths = []
    for p in paths:
        try:
            lib = ctypes.CDLL(p)
        except OSError:
            continue
        setter = next((getattr(lib, s) for s in _SETTERS if hasattr(lib, s)), None)
        getter = next((getattr(lib, g) for g in _GETTERS if hasattr(lib, g)), None)
        if setter is not None and getter is not None:
            libs.append((setter, getter))
    _LIBS = libs
    return libs


_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"depth": 0, "old": None}


@contextlib.contextmanager
def blas_threads(n: int = 1):
    """Context manager: at most ``n`` BLAS threads inside, the previous setting restored when the
    last concurrent user leaves (reference-counted, so threads of one worker do not undo each
    other's limit)."""
    import numpy  # noqa: F401  (make sure the BLAS library is loaded)

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None
    if threadpool_limits is not None:
        with threadpool_limits(limits=n, user_api="blas"):
            yield
        return
    libs = _openblas_libs()
    with _LOCK:
        if _STATE["depth"] == 0:
            _STATE["old"] = [int(g()) for _, g in libs]
        _STATE["depth"] += 1
        for s, _ in libs:
            s(n)
    try:
        yield
    finally:
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0:
                for (s, _), k in zip(libs, _STATE["old"]):
                    s(k)
