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


def embedded_configs() -> dict:
    """The embedded configurations by name: ``{"h3_rank1": Traversable, "paper/table1": …}``
    (the path under ``configs/`` without ``.toml``), sorted by name."""
    root = data_root().joinpath("configs")
    out = {}

    def walk(node, prefix):
        for child in node.iterdir():
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            elif child.name.endswith(".toml"):
                out[prefix + child.name[:-5]] = child
    walk(root, "")
    return dict(sorted(out.items()))


def config_source(name_or_path):
    """``(label, Traversable or Path)`` of a configuration given as a TOML file path or as the
    name of an embedded configuration (``popdyn configs`` lists them); a path that exists wins
    over a name.  ``FileNotFoundError`` names the valid choices otherwise."""
    import difflib

    p = Path(name_or_path)
    if p.is_file():
        return str(p), p
    name = str(name_or_path)
    name = name[:-5] if name.endswith(".toml") else name
    emb = embedded_configs()
    if name.startswith("configs/"):
        name = name[len("configs/"):]
    if name in emb:
        return name, emb[name]
    close = difflib.get_close_matches(name, list(emb), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise FileNotFoundError(
        f"config {name_or_path!r} is neither a TOML file nor an embedded configuration; "
        f"embedded: {', '.join(emb)} (`popdyn configs` describes them).{hint}")
