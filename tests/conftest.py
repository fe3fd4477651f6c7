"""Shared pytest configuration: a hypothesis profile without deadlines (the first call of a
numba kernel pays its compile time) and with derandomized, reproducible examples."""
from hypothesis import HealthCheck, settings

settings.register_profile(
    "popdyn",
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("popdyn")


def pytest_collection_modifyitems(config, items):
    """The wheel test (minutes of numba compilation in a fresh environment) goes first, so that
    under ``-n 2`` it overlaps the rest of the suite instead of running alone at the end."""
    items.sort(key=lambda it: it.get_closest_marker("wheel") is None)
