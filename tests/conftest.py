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
