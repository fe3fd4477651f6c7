"""popdyn's embedded data, installed as the package ``popdyn._data`` (setup.cfg ``package_dir``):
run configurations ``configs/**/*.toml`` and link tables ``links/*.npz``, read at run time with
importlib.resources (see popdyn/_paths.py).  ``refs/`` (test references) and ``_precompute/``
(the scripts that produce ``links/`` and ``refs/``) stay in the repository only."""
