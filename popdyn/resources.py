"""popdyn's embedded data files (configurations ``configs/**/*.toml``, link tables
``links/*.npz``), read with :mod:`importlib.resources` from an install or from a checkout."""
from ._paths import config_source, data_path, data_root, embedded_configs

__all__ = ["config_source", "data_path", "data_root", "embedded_configs"]
