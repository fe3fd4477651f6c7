"""Threads of popdyn's numeric kernels.

The pair moments of a biased relu / leaky-relu student (the bulk of a loss-and-gradient
evaluation at large m) run on numba's threads: the pairs are cut into the same chunks whatever
the thread count, each chunk is evaluated by the same code and writes its own entries, and
nothing is summed across chunks, so a seed gives the same bits on 1, 2 or 16 threads.  This
holds for the whole-matrix evaluation and for the tile-by-tile one of large students alike; the
lower triangles are copied in parallel too, and a tile's geometry (1 ∓ ρ) row block by row
block.  The step's matrix products (BLAS) and the student–teacher moments stay on the calling
thread: at d = 64, m = 1024 a step on 2 threads is about 1.8 times as fast as on one
(``benchmarks/bench_threads.py``).

BLAS: while popdyn's kernels run for a student of at least :data:`BLAS_SERIAL_MIN_UNITS` units,
the BLAS libraries loaded in the process (OpenBLAS, MKL, … as found by ``threadpoolctl``) run on
one thread (:func:`kernel_blas`), and their previous thread counts are restored afterwards.
The kernels' threads are the parallelism there; a multi-threaded BLAS beside them competes for
the same cores (its idle threads spin): on 2 cores a step on 2 kernel threads is then no faster
than on one (1.02×, against about 1.8× with BLAS on one thread).  It also makes the products'
bits independent of the BLAS thread count.

The count is numba's: at most ``NUMBA_NUM_THREADS`` (an environment variable read at import,
default: the number of cores), set per process (and per calling thread) by
:func:`set_threads` or the :func:`threads` context manager.  Sweeps choose it per worker
(:func:`popdyn.experiments.sweep.sweep`, ``threads=``; ``[execution] threads`` in a
configuration; ``--threads`` on the command line): by default the cores divided among the
worker processes, so that processes × threads does not exceed the machine.
"""
from __future__ import annotations

import contextlib
import os
import threading

import numba

__all__ = ["get_threads", "max_threads", "set_threads", "threads", "per_worker", "kernel_blas",
           "BLAS_SERIAL_MIN_UNITS"]

#: students with at least this many units run the BLAS calls of their kernels on one thread
#: (:func:`kernel_blas`; below it the pair kernels do not run in parallel)
BLAS_SERIAL_MIN_UNITS = 128

#: the BLAS libraries of the process (threadpoolctl controllers), found at the first
#: :func:`kernel_blas` of a large student: numba's products use scipy's BLAS, loaded with the
#: kernels
_BLAS_LIBS: list | None = None


def _blas_libs() -> list:
    global _BLAS_LIBS
    if _BLAS_LIBS is None:
        from threadpoolctl import ThreadpoolController

        _BLAS_LIBS = [lc for lc in ThreadpoolController().lib_controllers if lc.user_api == "blas"]
    return _BLAS_LIBS


_BLAS_LOCK = threading.Lock()
_BLAS_DEPTH = 0                 # kernel_blas sections open in this process (all threads)
_BLAS_PREV: list = []           # the thread counts to restore when the last one closes


@contextlib.contextmanager
def kernel_blas(m: int):
    """Run the block (a kernel call for a student of ``m`` units) with every BLAS library on
    one thread when m ≥ :data:`BLAS_SERIAL_MIN_UNITS`, restoring their thread counts when the
    last such block of the process ends (a few microseconds).  The setting is process-wide;
    blocks open in several Python threads at once (a threaded executor) are counted, so that
    none of them sees the counts restored while it runs."""
    global _BLAS_DEPTH, _BLAS_PREV
    if m < BLAS_SERIAL_MIN_UNITS:
        yield
        return
    libs = _blas_libs()
    with _BLAS_LOCK:
        if _BLAS_DEPTH == 0:
            _BLAS_PREV = [lc.get_num_threads() for lc in libs]
            for lc in libs:
                _set_blas(lc, 1)
        _BLAS_DEPTH += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _BLAS_DEPTH -= 1
            if _BLAS_DEPTH == 0:
                for lc, n in zip(libs, _BLAS_PREV):
                    if n is not None:
                        _set_blas(lc, n)


def _set_blas(lc, n: int) -> None:
    """Set a BLAS library's thread count from whichever Python thread closes the last section.
    threadpoolctl (≥ 3.6) lets only one "controlling" Python thread change OpenBLAS's
    process-wide count and ignores the others; the sections here are already serialized by a
    lock and counted, so its direct setter is used where it has one.  (An OpenMP build of
    OpenBLAS keeps the count per thread: it is then set in the thread that opens the first
    section.)"""
    getattr(lc, "_real_set_num_threads", lc.set_num_threads)(n)


def max_threads() -> int:
    """The largest thread count of this process (``NUMBA_NUM_THREADS``)."""
    return int(numba.config.NUMBA_NUM_THREADS)


def get_threads() -> int:
    """The kernels' current thread count in this (calling) thread."""
    return int(numba.get_num_threads())


def check_threads(n, what: str = "`threads`") -> int:
    """``n`` as an int in [1, :func:`max_threads`], or ValueError naming the valid range."""
    hi = max_threads()
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= hi:
        raise ValueError(f"{what} must be an integer in [1, {hi}] (NUMBA_NUM_THREADS), "
                         f"got {n!r}")
    return n


def set_threads(n: int) -> int:
    """Set the kernels' thread count (1 ≤ n ≤ :func:`max_threads`); returns the previous one.
    Results do not depend on it."""
    n = check_threads(n)
    prev = get_threads()
    numba.set_num_threads(n)
    return prev


@contextlib.contextmanager
def threads(n: int | None):
    """Run the block with ``n`` kernel threads (None: unchanged), then restore the count."""
    if n is None:
        yield get_threads()
        return
    prev = set_threads(n)
    try:
        yield n
    finally:
        numba.set_num_threads(prev)


def per_worker(workers: int, threads: int | None = None) -> int:
    """Threads per worker process: ``threads`` if given (checked), else the cores
    (``os.cpu_count()``, at most :func:`max_threads`) divided among ``workers``, at least 1."""
    if threads is not None:
        return check_threads(threads)
    cores = min(os.cpu_count() or 1, max_threads())
    return max(1, cores // max(1, int(workers)))
