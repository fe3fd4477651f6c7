"""Where popdyn's embedded data are (the configurations ``configs/**/*.toml`` and the link
tables ``links/*.npz``).

In the repository they live in the top-level ``data/`` directory; setup.cfg maps that directory
into the package as ``popdyn._data`` (``package_dir``), so that a wheel, a non-editable and an
editable install all carry them and they are read with :mod:`importlib.resources`.  The test-only
references (``data/refs``) and the precompute scripts are not part of the package.  A checkout
imported without installation (e.g. ``python -m pytest`` from the checkout root, which puts the
checkout's ``popdyn/`` first on ``sys.path``) reads the checkout's own ``data/``.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent


def data_root():
    """The :class:`importlib.resources.abc.Traversable` of the embedded data."""
    try:
        return resources.files("popdyn._data")
    except ModuleNotFoundError:
        # popdyn imported from a source checkout (not from an install): its data/ is beside it
        if (_CHECKOUT / "setup.cfg").is_file() and (_CHECKOUT / "data" / "configs").is_dir():
            return _CHECKOUT / "data"
        raise FileNotFoundError(
            "popdyn's embedded data (the package popdyn._data) is not installed; reinstall "
            "popdyn (`pip install .` from its checkout, or its wheel)") from None


def data_path(*parts):
    """The embedded data file ``parts`` (e.g. ``data_path("configs", "smoke.toml")``), as a
    Traversable (a :class:`pathlib.Path` for installs on a file system); FileNotFoundError if
    it is missing."""
    p = data_root().joinpath(*parts)
    if not p.is_file():
        raise FileNotFoundError(
            f"popdyn data file {'/'.join(parts)} not found in {data_root()}: the installation is "
            "incomplete; reinstall popdyn (`pip install .` from its checkout, or its wheel)")
    return p
