"""popdyn.plugins: the registry through which popdyn reaches certify and proofs_checks.

The provider of a service is its installed entry point if there is one, else its default module
imported by name; either way the object must have the service's attributes.  Entry points are
substituted here through ``popdyn.plugins.entry_points`` (the name the registry calls).
"""
import configparser
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from popdyn import plugins

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(plugins, "_LOADED", {})
    return plugins


def _eps(*items):
    def entry_points(group):
        return [EntryPoint(n, v, g) for g, n, v in items if g == group]
    return entry_points


def test_defaults_without_entry_points(fresh, monkeypatch):
    """No entry point installed: each service is its default provider, imported by name."""
    import certify
    import certify.gauge
    import proofs_checks.cli
    import proofs_checks.plateau_alignment

    monkeypatch.setattr(fresh, "entry_points", _eps())
    assert fresh.load("checkpoint_certifier") is certify
    assert fresh.load("gauge_certifier") is certify.gauge
    assert fresh.load("check_command") is proofs_checks.cli.main
    assert fresh.load("store_verdict") is proofs_checks.plateau_alignment
    assert fresh.provider_name("check_command") == "default proofs_checks.cli:main"


def test_entry_point_takes_precedence(fresh, monkeypatch):
    """An installed entry point of the service's group and name is used instead of the
    default; entry points of other names in the group are ignored."""
    monkeypatch.setattr(fresh, "entry_points", _eps(
        ("popdyn.check_tools", "other", "json:loads"),
        ("popdyn.check_tools", "cli", "json:dumps")))
    import json

    assert fresh.load("check_command") is json.dumps
    assert fresh.provider_name("check_command") == "entry point popdyn.check_tools:cli = json:dumps"


def test_setup_cfg_declares_the_defaults():
    """The entry points declared for an install name the same providers as the fallback
    table, so an install and a checkout resolve every service to the same object."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    declared = {}
    for group in {s.group for s in plugins.SERVICES.values()}:
        for line in cfg["options.entry_points"][group].strip().splitlines():
            name, value = (t.strip() for t in line.split("="))
            declared[(group, name)] = value
    assert declared == {(s.group, s.name): s.default for s in plugins.SERVICES.values()}


def test_missing_provider_and_attribute_are_clear(fresh, monkeypatch):
    monkeypatch.setattr(fresh, "entry_points", _eps(
        ("popdyn.certifiers", "checkpoint", "no_such_module_xyz")))
    with pytest.raises(plugins.ServiceUnavailable, match=r"'checkpoint_certifier'.*"
                       r"entry point popdyn.certifiers:checkpoint = no_such_module_xyz failed "
                       r"to load: ModuleNotFoundError"):
        fresh.load("checkpoint_certifier")
    monkeypatch.setattr(fresh, "entry_points", _eps(
        ("popdyn.certifiers", "gauge", "json")))
    with pytest.raises(ImportError, match="lacks rigorous_specialization_times, ratio_bracket, "
                                          "slope_bracket, CertificationError"):
        fresh.load("gauge_certifier")


def test_unknown_service():
    with pytest.raises(ValueError, match=r"`service` must be one of \['check_command', "
                                         r"'checkpoint_certifier', 'gauge_certifier', "
                                         r"'store_verdict'\], got 'certify'"):
        plugins.load("certify")
