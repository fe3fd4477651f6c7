"""Where the repository's ``data/`` directory is (the package is installed editable, so it sits
beside the ``popdyn`` package)."""
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"


def data_path(*parts) -> Path:
    p = DATA.joinpath(*parts)
    if not p.exists():
        raise FileNotFoundError(
            f"popdyn data file {p} not found: install popdyn from its checkout with `pip install -e .`"
        )
    return p
