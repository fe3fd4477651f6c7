"""The one jit decorator of popdyn.

Every numba kernel in the project is compiled through :func:`jit`, which is
``numba.njit(cache=True, fastmath=False)``.  ``fastmath`` is never used: it
reorders floating-point operations, which breaks error-free transformations
and makes float64 results a poor input for certification (docs/design.md §6).

Set the environment variable ``POPDYN_NO_CACHE=1`` to disable on-disk caching
(useful when the package directory is read-only).  Caches are dropped whenever any jitted
source changes (:func:`_drop_stale_caches`: numba alone would keep stale callees): the
kernels of this directory when one of them changes (checked on import), and the kernels of a
module elsewhere that compiles through :func:`jit` (a package built on popdyn) when it or one
of popdyn's kernels changes (checked when its first function is decorated, with a digest file
of its own beside its caches).
"""
import hashlib
import os
from pathlib import Path

import numba

_CACHE = os.environ.get("POPDYN_NO_CACHE", "0") not in ("1", "true", "yes")

# The parallel kernels (popdyn.threads) run on numba's built-in "workqueue" threading layer
# unless NUMBA_THREADING_LAYER chooses another: a sweep's process pool forks its workers, and a
# child forked from a process that has used GNU OpenMP (numba's "omp" layer) is terminated
# ("fork() called from a process already using GNU OpenMP").  The kernels that launch parallel
# work hold the GIL, so the layer is never entered by two Python threads at once.
if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
    numba.config.THREADING_LAYER = "workqueue"

# A cached kernel that calls a parallel one (e.g. the fused step calling the parallel pair
# moments) does not start numba's thread pool when it is loaded from the cache; called before
# any parallel function has run in the process, it can crash (numba issue #8578, open).  The
# pool is therefore started here, once per process, as that workaround does.
try:
    from numba.np.ufunc.parallel import _launch_threads
except ImportError:                       # a numba without this private helper
    pass
else:
    _launch_threads()

_KERNELS = Path(__file__).resolve().parent
#: jitted sources outside this directory (they call the kernels here)
#: jitted source files outside the kernels directory already checked in this process
_CHECKED: set = set()


def _drop_stale_caches(kernels: Path = _KERNELS, others=(), *, marker: Path | None = None,
                       drop=None) -> bool:
    """Remove every cached kernel when any jitted source has changed.

    Numba keys a cached function on its *own* source file only: a cached function that calls a
    jitted function of another file (e.g. :mod:`popdyn._kernels.fused` calling
    :mod:`popdyn._kernels.plmoments`) silently keeps the old callee after that file is edited.
    A digest of all jitted sources is kept beside the caches; when it differs, the cache files
    (``*.nbi``, ``*.nbc``) of these sources are deleted so that everything is recompiled.
    Errors (read-only installs) are ignored: numba then works without these files anyway.
    Returns True when caches were dropped.

    ``others`` are jitted sources outside ``kernels`` that enter the digest; ``marker`` is the
    digest file (default ``kernels/__pycache__/popdyn-kernels.sha256``) and ``drop`` the
    sources whose caches are removed (default: every source of the digest).
    """
    sources = sorted(kernels.glob("*.py")) + [p for p in others if p.exists()]
    dropped = sources if drop is None else [p for p in drop if p.exists()]
    h = hashlib.sha256()
    for p in sources:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    digest = h.hexdigest()
    if marker is None:
        marker = kernels / "__pycache__" / "popdyn-kernels.sha256"
    try:
        if marker.exists() and marker.read_text() == digest:
            return False
        for d in {p.parent / "__pycache__" for p in dropped}:
            stems = {p.stem for p in dropped if p.parent / "__pycache__" == d}
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
        return lambda f: numba.njit(**opts)(_check_source(f))
    return numba.njit(**opts)(_check_source(func))


def _check_source(func):
    """Drop the stale caches of ``func``'s source file when it lies outside this directory (a
    kernel of a package built on popdyn, calling popdyn's kernels): its digest covers popdyn's
    kernels and the file, kept in ``<stem>.popdyn-kernels.sha256`` beside the file's caches.
    Returns ``func``."""
    name = getattr(getattr(func, "__code__", None), "co_filename", None)
    if _CACHE and name is not None and name not in _CHECKED:
        _CHECKED.add(name)                 # one check per file, without a path lookup per kernel
        try:
            src = Path(name).resolve()
        except OSError:
            return func
        if src.parent != _KERNELS and src.exists():
            marker = src.parent / "__pycache__" / f"{src.stem}.popdyn-kernels.sha256"
            _drop_stale_caches(_KERNELS, (src,), drop=(src,), marker=marker)
    return func
