"""Shared pytest configuration: hypothesis profiles without deadlines (the first call of a
numba kernel pays its compile time) and with derandomized, reproducible examples.

Profiles (``HYPOTHESIS_PROFILE`` selects one; default ``popdyn``):

* ``popdyn`` -- each test's own ``@settings(max_examples=...)`` (hypothesis' 100 without one);
* ``soak`` -- the nightly size: 25 times each test's examples (:data:`SOAK_FACTOR`; 2500 for a
  test without its own ``max_examples``), no deadline.  A profile only sets the default that a
  test's own ``@settings`` overrides, so the scaling is applied per test at collection
  (:func:`_scale_examples`): the settings attached to every collected hypothesis test are
  replaced by the same settings with ``max_examples`` multiplied and ``deadline=None`` (the
  profile itself keeps the default 100, so that nothing is multiplied twice).

``python -m pytest --hypothesis-soak tests/certify tests/popdyn`` selects the ``soak`` profile and
runs only the hypothesis tests (the others are deselected); ``HYPOTHESIS_PROFILE=soak`` alone
scales the property tests of whatever is collected.  benchmarks/soak_certify.py
``--with-hypothesis`` runs the former after its cases.
"""
import os

import pytest
from hypothesis import HealthCheck, settings

#: how many times each test's examples the ``soak`` profile runs
SOAK_FACTOR = 25

settings.register_profile(
    "popdyn",
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
# the soak profile keeps the default max_examples: the factor is applied once, per test, by
# _scale_examples (a test without its own @settings inherits the profile's default, which would
# otherwise be multiplied twice)
settings.register_profile(
    "soak",
    parent=settings.get_profile("popdyn"),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "popdyn"))


def pytest_addoption(parser):
    parser.addoption("--hypothesis-soak", action="store_true", default=False,
                     help="the nightly property-test run: the 'soak' hypothesis profile (25x "
                          "each test's examples, no deadline), hypothesis tests only")


def _soak(config) -> bool:
    return bool(config.getoption("--hypothesis-soak", False)) or \
        os.environ.get("HYPOTHESIS_PROFILE") == "soak"


def _is_property_test(item) -> bool:
    return bool(getattr(getattr(item, "function", None), "is_hypothesis_test", False))


def _scale_examples(items):
    """Under the soak profile: every hypothesis test's own settings with ``max_examples``
    times :data:`SOAK_FACTOR` and no deadline (once per test function; parametrized tests
    share it)."""
    for it in items:
        fn = getattr(it, "function", None)
        if not _is_property_test(it) or getattr(fn, "_popdyn_soak_scaled", False):
            continue
        own = getattr(fn, "_hypothesis_internal_use_settings", None) or settings.default
        fn._hypothesis_internal_use_settings = settings(
            parent=own, max_examples=SOAK_FACTOR * own.max_examples, deadline=None)
        fn._popdyn_soak_scaled = True


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


# ------------------------------------------------------------------ xdist balance (-n 2)
# Under ``--dist loadfile`` every module is one unit of work, handed to whichever worker runs
# low.  The suite ends when the later worker finishes, so the longest units must start first:
# a long unit started last runs alone on one core.  pytest-xdist's default order of the units
# is by *number of tests*, which put the one-test wheel module and the few-test but long modules
# (the ``--all --quick`` checks, the stiff gauge references, ...) at the very end.  So the
# scheduler keeps the collection order (``loadscopereorder`` off, below) and the collection is
# sorted here: the wheel test first (it runs in subprocesses beside the numba compilation of the
# other worker), then the modules of MODULE_SECONDS by their cost, longest first, then the rest
# by their number of tests (xdist's own rule; they are short).  Only the order changes.
#: approximate wall seconds of the longest modules on an idle core (per-test ``--durations`` of
#: ``python -m pytest -q -n 2`` summed per module, from runs on a loaded machine scaled to the
#: CI run's total); only their order matters: refresh them when a module becomes much longer
MODULE_SECONDS = {
    "tests/proofs_checks/test_checks.py": 60,
    "tests/test_mpref_selfcheck.py": 32,
    "tests/certify/test_certify_smooth.py": 30,
    "tests/popdyn/test_engine_refs.py": 30,
    "tests/certify/test_certify_swiglu.py": 30,
    "tests/popdyn/test_bvn.py": 28,
    "tests/certify/test_certify_gated_rigorous.py": 26,
    "tests/popdyn/test_arccos.py": 25,
    "tests/popdyn/test_vmath.py": 25,
    "tests/popdyn/test_gauge_slow.py": 22,
    "tests/popdyn/test_plmoments_estimates.py": 24,
    "tests/popdyn/test_plmoments_front.py": 23,
    "tests/certify/test_certify_phi2.py": 20,
    "tests/popdyn/test_fused.py": 20,
    "tests/certify/test_certify_refit.py": 17,
    "tests/certify/test_certify_tiny.py": 15,
    "tests/popdyn/test_plmoments.py": 14,
    "tests/popdyn/test_record.py": 11,
    "tests/popdyn/test_experiments_swiglu.py": 12,
    "tests/popdyn/test_sweep_store.py": 12,
    "tests/popdyn/test_experiments_figures.py": 11,
}


def pytest_configure(config):
    if config.getoption("--hypothesis-soak", False):
        settings.load_profile("soak")
    if hasattr(config.option, "loadscopereorder"):      # pytest-xdist: keep our order (above)
        config.option.loadscopereorder = False


def _module_of(item):
    return item.nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config, items):
    """The order of the modules (see MODULE_SECONDS): the wheel test first, so that under
    ``-n 2`` it overlaps the rest of the suite instead of running alone at the end; then the
    longest modules; the order of the tests inside a module is kept.  Under the soak profile
    the property tests' examples are scaled (:func:`_scale_examples`), and with
    ``--hypothesis-soak`` the other tests are deselected."""
    if _soak(config):
        if config.getoption("--hypothesis-soak", False):
            keep = [it for it in items if _is_property_test(it)]
            drop = [it for it in items if not _is_property_test(it)]
            if drop:
                config.hook.pytest_deselected(items=drop)
            items[:] = keep
        _scale_examples(items)
    count, first = {}, {}
    for i, it in enumerate(items):
        mod = _module_of(it)
        count[mod] = count.get(mod, 0) + 1
        first.setdefault(mod, i)
    wheel = {_module_of(it) for it in items if it.get_closest_marker("wheel") is not None}

    def key(mod):
        if mod in wheel:
            return (0, 0, first[mod])
        if mod in MODULE_SECONDS:
            return (1, -MODULE_SECONDS[mod], first[mod])
        return (2, -count[mod], first[mod])

    rank = {mod: key(mod) for mod in count}
    items.sort(key=lambda it: rank[_module_of(it)])


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
    # one lock directory per checkout: numba's cache lies beside each checkout's package, so a
    # process of another checkout (another worktree on the same machine) holding the lock of a
    # kernel would only make this one wait and then compile all the same
    import hashlib

    here = hashlib.sha1(os.path.dirname(os.path.abspath(__file__)).encode()).hexdigest()[:12]
    lockdir = os.path.join(tempfile.gettempdir(), f"popdyn-numba-locks-{os.getuid()}-{here}")
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
