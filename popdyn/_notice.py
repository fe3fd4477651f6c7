"""The one-time notice that numba is compiling popdyn's kernels.

A fresh install (or an edit of a kernel source, which drops the caches:
:func:`popdyn._kernels._jit._drop_stale_caches`) spends a few minutes compiling the numba
kernels on first use (measured: 2–3 minutes of one core for what ``popdyn run`` needs).
:func:`compile_notice` prints one line to stderr, once per process, when that is about to
happen, and then a line every 10 seconds ("still compiling, N s") until :func:`quiet` is called
(the sweep's progress bar calls it when it starts) or the process ends.  "Cold" is decided cheaply from the file system, without touching
numba: no cached kernel index (``*.nbi``) of popdyn's kernel modules in their cache directory
(``popdyn/_kernels/__pycache__``, or anywhere under ``NUMBA_CACHE_DIR`` when that is set), or
caching switched off (``POPDYN_NO_CACHE=1``).  A partly filled cache prints nothing (what is
left compiles in seconds).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

_KERNELS = Path(__file__).resolve().parent / "_kernels"
_done = False


def cache_is_cold() -> bool:
    """True when no kernel of :mod:`popdyn._kernels` is in numba's on-disk cache."""
    if os.environ.get("POPDYN_NO_CACHE", "0") in ("1", "true", "yes"):
        return True
    stems = {p.stem for p in _KERNELS.glob("*.py") if not p.stem.startswith("_")}
    user = os.environ.get("NUMBA_CACHE_DIR")
    where = [Path(user)] if user else [_KERNELS / "__pycache__"]
    for d in where:
        if d.is_dir():
            it = d.rglob("*.nbi") if user else d.glob("*.nbi")
            if any(f.name.split(".", 1)[0] in stems for f in it):
                return False
    return True


def compile_notice(stream=None) -> bool:
    """Print the compile notice to stderr if the kernel cache is cold (once per process).

    Returns True when the notice was printed.
    """
    global _done
    if _done:
        return False
    _done = True
    if not cache_is_cold():
        return False
    stream = sys.stderr if stream is None else stream
    off = os.environ.get("POPDYN_NO_CACHE", "0") in ("1", "true", "yes")
    stream.write("popdyn: compiling numeric kernels once, a few minutes"
                 + (" (on-disk caching is off: POPDYN_NO_CACHE, so at every start)" if off
                    else "; later runs load them from the cache") + "...\n")
    stream.flush()
    _start_heartbeat(stream)
    return True


_stop = None


def _start_heartbeat(stream, every: float = 10.0) -> None:
    """A daemon thread writing "still compiling" every ``every`` seconds until :func:`quiet`."""
    import threading
    import time

    global _stop
    _stop = threading.Event()
    t0 = time.perf_counter()

    def beat(stop=_stop):
        while not stop.wait(every):
            stream.write(f"popdyn: still compiling numeric kernels, "
                         f"{time.perf_counter() - t0:.0f} s\n")
            stream.flush()

    threading.Thread(target=beat, name="popdyn-compile-notice", daemon=True).start()


def quiet() -> None:
    """Stop the "still compiling" lines (the caller now prints its own progress)."""
    if _stop is not None:
        _stop.set()
