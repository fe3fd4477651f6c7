"""The services popdyn uses from the packages built on it, found at run time (docs/design.md §6).

popdyn is the bottom layer: certify (Arb brackets) and proofs_checks (theorem checks) import
popdyn, and popdyn imports neither of them, at any level (tests/test_layers.py).  The few places
where popdyn offers what those packages compute reach them through this registry instead:

* ``checkpoint_certifier`` (entry point ``popdyn.certifiers: checkpoint``, default ``certify``):
  certified brackets of checkpoints during runs (``[diagnostics] certify = true``,
  :mod:`popdyn.experiments.runner`);
* ``gauge_certifier`` (``popdyn.certifiers: gauge``, default ``certify.gauge``): the rigorous
  method of :func:`popdyn.gauge.gauge_sweep` / :func:`popdyn.gauge.regime_table` and the Arb
  arithmetic on rigorous brackets;
* ``check_command`` (``popdyn.check_tools: cli``, default ``proofs_checks.cli:main``): the
  ``popdyn check`` command;
* ``store_verdict`` (``popdyn.check_tools: plateau_alignment``, default
  ``proofs_checks.plateau_alignment``): Theorem 4.1's verdict (paper App. A) on the runs of
  ``popdyn run`` and ``popdyn reproduce``.

:func:`load` returns the object of the installed entry point with the service's group and name
(``importlib.metadata.entry_points``; setup.cfg ``[options.entry_points]`` declares the defaults
for an install of this distribution, and another installed package may declare its own).  When
no such entry point is installed -- a source checkout on ``sys.path``, or an install made before
the entry points were declared -- it imports the default provider named in :data:`SERVICES` with
:func:`importlib.import_module`.  Both are run-time lookups of a module *name* held in data, not
import statements: this module is the only one in popdyn that imports modules by name.

A provider must have the attributes listed in its service's ``provides`` (checked on load); a
missing provider or attribute raises :class:`ServiceUnavailable` (an ``ImportError``) naming the
service, the entry point and the default.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from . import _validate as V

__all__ = ["Service", "SERVICES", "ServiceUnavailable", "load", "provider_name"]


@dataclass(frozen=True)
class Service:
    """One service: its entry point (``group``, ``name``), the default provider (``module`` or
    ``module:attribute``), the attributes a provider must have, and what it is for."""

    group: str
    name: str
    default: str
    provides: tuple[str, ...]
    purpose: str


#: the services popdyn uses (module docstring), by name
SERVICES: dict[str, Service] = {
    "checkpoint_certifier": Service(
        "popdyn.certifiers", "checkpoint", "certify", ("alignment", "loss", "refit_risk"),
        "certified brackets of a checkpoint: AGOP alignment, loss, refit risks"),
    "gauge_certifier": Service(
        "popdyn.certifiers", "gauge", "certify.gauge",
        ("rigorous_specialization_times", "ratio_bracket", "slope_bracket",
         "CertificationError"),
        "rigorous specialization times of the reduced single-neuron flow and Arb arithmetic on "
        "rigorous brackets"),
    "check_command": Service(
        "popdyn.check_tools", "cli", "proofs_checks.cli:main", (),
        "the `popdyn check` command: main(argv) -> exit status"),
    "store_verdict": Service(
        "popdyn.check_tools", "plateau_alignment", "proofs_checks.plateau_alignment",
        ("check_store", "check_store_paper", "family_config", "in_family",
         "theorem_student"),
        "Theorem 4.1's verdict on the runs of a result store"),
}


class ServiceUnavailable(ImportError):
    """No provider of a service could be loaded, or the provider lacks a required attribute."""


_LOADED: dict[str, Any] = {}


def _import(target: str) -> Any:
    """The object named ``module`` or ``module:attr.attr`` (imported by name at run time)."""
    mod, _, attr = target.partition(":")
    obj: Any = importlib.import_module(mod)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


def provider_name(service: str) -> str:
    """Where :func:`load` takes ``service`` from: ``"entry point GROUP:NAME = VALUE"`` or
    ``"default VALUE"``."""
    s = SERVICES[V.choice("service", service, SERVICES)]
    for ep in entry_points(group=s.group):
        if ep.name == s.name:
            return f"entry point {s.group}:{s.name} = {ep.value}"
    return f"default {s.default}"


def load(service: str) -> Any:
    """The provider of ``service`` (one of :data:`SERVICES`): the installed entry point of the
    service's group and name if there is one, else its default provider imported by name; the
    result is kept for the process.

    Raises
    ------
    ValueError
        ``service`` is not one of :data:`SERVICES`.
    ServiceUnavailable
        The provider cannot be imported or lacks an attribute of ``provides``.
    """
    s = SERVICES[V.choice("service", service, SERVICES)]
    if service in _LOADED:
        return _LOADED[service]
    eps = [ep for ep in entry_points(group=s.group) if ep.name == s.name]
    where = (f"entry point {s.group}:{s.name} = {eps[0].value}" if eps
             else f"default provider {s.default!r} (no entry point {s.group}:{s.name} installed)")
    try:
        obj = eps[0].load() if eps else _import(s.default)
    except Exception as exc:
        raise ServiceUnavailable(f"popdyn service {service!r} ({s.purpose}) is unavailable: "
                                 f"{where} failed to load: {type(exc).__name__}: {exc}") from exc
    missing = [a for a in s.provides if not hasattr(obj, a)]
    if missing:
        raise ServiceUnavailable(f"popdyn service {service!r}: {where} lacks "
                                 f"{', '.join(missing)} (required: {', '.join(s.provides)})")
    _LOADED[service] = obj
    return obj
