"""Shared pytest configuration: a hypothesis profile without deadlines (the first call of a
numba kernel pays its compile time) and with derandomized, reproducible examples."""
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "popdyn",
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("popdyn")


@pytest.fixture(autouse=True)
def _mpmath_precision_restored():
    """Tests that set ``mpmath.mp.dps`` in their body must not change the precision later tests
    (of any module on the same xdist worker) read references at: the global precision is restored
    after every test.  (A test reading a 50-digit reference after one that had left dps = 40 saw
    it rounded to ~1e−32 and failed only in CI's test order.)"""
    import mpmath

    prec = mpmath.mp.prec
    yield
    mpmath.mp.prec = prec


def pytest_collection_modifyitems(config, items):
    """The wheel test (minutes of numba compilation in a fresh environment) goes first, so that
    under ``-n 2`` it overlaps the rest of the suite instead of running alone at the end."""
    items.sort(key=lambda it: it.get_closest_marker("wheel") is None)


# ------------------------------------------------------------------ one compile per kernel
# In a fresh environment (CI) the numba caches are empty and every kernel is compiled on first
# use.  Under ``-n 2`` both xdist workers meet the same kernels early and each compiled them: the
# same minutes of LLVM work twice.  Here a jitted function's compilation is serialised across
# processes by a lock file named after the function; the process that waits then finds the
# other one's result in numba's on-disk cache (``Dispatcher.compile`` looks there before
# compiling).  Nothing about what is compiled or computed changes.  Locks are taken in call order
# (a caller's lock before its callees'), and the call graph of the kernels is acyclic, so two
# processes cannot wait on each other; a process re-entering a lock it holds does not wait.
# ``POPDYN_TEST_COMPILE_LOCK=0`` turns this off.
def _install_compile_lock():
    import os
    import tempfile

    try:
        import fcntl
    except ImportError:  # not POSIX: compile as numba does by default
        return
    if os.environ.get("POPDYN_TEST_COMPILE_LOCK", "1") in ("0", "false", "no"):
        return
    from numba.core import dispatcher, sigutils
    from numba.core.caching import NullCache

    original = dispatcher.Dispatcher.compile
    if getattr(original, "_popdyn_locked", False):
        return
    lockdir = os.path.join(tempfile.gettempdir(), f"popdyn-numba-locks-{os.getuid()}")
    os.makedirs(lockdir, exist_ok=True)
    held = set()

    def compile(self, sig):
        args, _ = sigutils.normalize_signature(sig)
        if self.overloads.get(tuple(args)) is not None or isinstance(self._cache, NullCache):
            return original(self, sig)
        fn = self.py_func
        name = f"{fn.__module__}.{fn.__qualname__}"
        if name in held:
            return original(self, sig)
        with open(os.path.join(lockdir, name.replace("<", "_").replace(">", "_")), "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            held.add(name)
            try:
                return original(self, sig)
            finally:
                held.discard(name)
                fcntl.flock(fh, fcntl.LOCK_UN)

    compile._popdyn_locked = True
    dispatcher.Dispatcher.compile = compile


_install_compile_lock()
