"""The one jit decorator of popdyn.

Every numba kernel in the project is compiled through :func:`jit`, which is
``numba.njit(cache=True, fastmath=False)``.  ``fastmath`` is never used: it
reorders floating-point operations, which breaks error-free transformations
and makes float64 results a poor input for certification (docs/design.md §6).

Set the environment variable ``POPDYN_NO_CACHE=1`` to disable on-disk caching
(useful when the package directory is read-only).  Caches are dropped whenever any jitted
source changes (:func:`_drop_stale_caches`: numba alone would keep stale callees).
"""
import hashlib
import os
from pathlib import Path

import numba

_CACHE = os.environ.get("POPDYN_NO_CACHE", "0") not in ("1", "true", "yes")

_KERNELS = Path(__file__).resolve().parent
#: jitted sources outside this directory (they call the kernels here)
_OTHERS = (_KERNELS.parents[1] / "certify" / "_mehler.py",)


def _drop_stale_caches(kernels: Path = _KERNELS, others=_OTHERS) -> bool:
    """Remove every cached kernel when any jitted source has changed.

    Numba keys a cached function on its *own* source file only: a cached function that calls a
    jitted function of another file (e.g. :mod:`popdyn._kernels.fused` calling
    :mod:`popdyn._kernels.plmoments`) silently keeps the old callee after that file is edited.
    A digest of all jitted sources is kept beside the caches; when it differs, the cache files
    (``*.nbi``, ``*.nbc``) of these sources are deleted so that everything is recompiled.
    Errors (read-only installs) are ignored: numba then works without these files anyway.
    Returns True when caches were dropped.
    """
    sources = sorted(kernels.glob("*.py")) + [p for p in others if p.exists()]
    h = hashlib.sha256()
    for p in sources:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    digest = h.hexdigest()
    marker = kernels / "__pycache__" / "popdyn-kernels.sha256"
    try:
        if marker.exists() and marker.read_text() == digest:
            return False
        for d in {p.parent / "__pycache__" for p in sources}:
            stems = {p.stem for p in sources if p.parent / "__pycache__" == d}
            if d.is_dir():
                for f in d.iterdir():
                    if f.suffix in (".nbi", ".nbc") and f.name.split(".", 1)[0] in stems:
                        f.unlink(missing_ok=True)
        marker.parent.mkdir(exist_ok=True)
        tmp = marker.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(digest)
        os.replace(tmp, marker)
    except OSError:
        pass
    return True


if _CACHE:
    _drop_stale_caches()


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
