"""The result store: one directory per run, keyed by a hash of its full configuration and the
library version; plain JSON + npz, written atomically, schema-versioned.

Layout of a store ``DIR``::

    DIR/store.json                  {"format": "popdyn-store", "schema": 1, ...}
    DIR/runs/<key>/record.json      the run's spec, status, plateau, checkpoints, diagnostics
                                    records and certified brackets (written last: its presence
                                    marks a finished run)
    DIR/runs/<key>/arrays.npz       n, t, loss (every update), snap_n, snap_t and the snapshot
                                    parameters a, W, b, c -- or a, G, V, c (gates, values) for
                                    SwiGLU students (spec.student.activation = "swiglu")
    DIR/runs/<key>/checkpoint.npz   state of an unfinished run (removed when it finishes)
    DIR/sweeps/<hash>.json          the ordered run keys of each sweep written to the store

Everything is readable without popdyn: ``json.load`` and ``numpy.load`` (non-finite floats are
stored as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``).  Every file is written to a
temporary file in the same directory, flushed, ``fsync``-ed and moved into place with
``os.replace`` (then the directory is ``fsync``-ed), so a crash leaves either the old file or
the new one, never a torn one.  A store or record written by a newer schema is refused with a
:class:`StoreError`.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np

SCHEMA = 1
FORMAT = "popdyn-store"


class StoreError(RuntimeError):
    """The store cannot be used (newer schema, not a store, corrupt record)."""


# ---------------------------------------------------------------------------- JSON
def _clean(o):
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    if isinstance(o, np.ndarray):
        return _clean(o.tolist())
    if isinstance(o, (bool, np.bool_)):
        return bool(o)
    if isinstance(o, (int, np.integer)):
        return int(o)
    if isinstance(o, (float, np.floating)):
        x = float(o)
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        return x
    return o


_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def num(x):
    """A stored number back as a float (undoing the non-finite string encoding); None stays."""
    if x is None:
        return None
    if isinstance(x, str):
        return _NONFINITE[x]
    return float(x)


def dumps(obj) -> str:
    """Canonical JSON (sorted keys, no NaN literals)."""
    return json.dumps(_clean(obj), sort_keys=True, allow_nan=False, ensure_ascii=False,
                      separators=(",", ":"))


def run_key(spec: dict, version: str) -> str:
    """The run's key: sha256 of its canonical spec, the library version and the schema."""
    h = hashlib.sha256()
    h.update(dumps({"spec": spec, "popdyn": version, "schema": SCHEMA}).encode())
    return h.hexdigest()[:24]


# ---------------------------------------------------------------------------- atomic writes
def _fsync_dir(path: Path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover  (platforms without directory fds)
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def atomic_write(path, data: bytes):
    """Write ``data`` to ``path`` atomically (temp file + fsync + os.replace + fsync dir)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(path.parent)


def write_json(path, obj):
    atomic_write(path, (json.dumps(_clean(obj), sort_keys=True, allow_nan=False, indent=1,
                                   ensure_ascii=False) + "\n").encode())


def write_npz(path, **arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write(path, buf.getvalue())


def read_json(path):
    with open(path, "rb") as fh:
        return json.loads(fh.read().decode())


# ---------------------------------------------------------------------------- the store
class Store:
    """A result store rooted at ``root`` (created on first use unless ``create=False``).

    Examples
    --------
    >>> import tempfile
    >>> st = Store(tempfile.mkdtemp())
    >>> st.keys()
    []
    """

    def __init__(self, root, *, create: bool = True):
        self.root = Path(root).absolute()
        meta = self.root / "store.json"
        if meta.exists():
            try:
                info = read_json(meta)
            except (OSError, ValueError) as exc:
                raise StoreError(f"{meta} is not readable JSON ({exc}); is {self.root} a popdyn store?") from None
            if not isinstance(info, dict) or info.get("format") != FORMAT:
                raise StoreError(f"{self.root} is not a popdyn store ({meta} has no format "
                                 f"{FORMAT!r})")
            self._check_schema(info.get("schema"), str(meta))
            self.info = info
        elif create:
            if self.root.exists() and not self.root.is_dir():
                raise StoreError(f"store path {self.root} exists and is not a directory")
            if self.root.is_dir() and any(p.name != "store.json" for p in self.root.iterdir()):
                raise StoreError(f"{self.root} is a non-empty directory without store.json: "
                                 "not a popdyn store; give an empty or new directory")
            from .. import __version__
            self.info = {"format": FORMAT, "schema": SCHEMA, "created_by": f"popdyn {__version__}"}
            write_json(meta, self.info)
        else:
            raise StoreError(f"{self.root} is not a popdyn store (no store.json); run "
                             "`popdyn sweep CONFIG --store DIR` first")

    @staticmethod
    def _check_schema(schema, where):
        if not isinstance(schema, int) or isinstance(schema, bool):
            raise StoreError(f"{where}: missing or invalid schema version {schema!r}")
        if schema > SCHEMA:
            raise StoreError(f"{where} was written with store schema {schema}, newer than this "
                             f"popdyn understands (schema {SCHEMA}); upgrade popdyn to read it")

    # -- paths
    def run_dir(self, key: str) -> Path:
        return self.root / "runs" / key

    def has(self, key: str) -> bool:
        """True when the run ``key`` is finished (its record.json exists)."""
        return (self.run_dir(key) / "record.json").exists()

    def keys(self) -> list:
        """Keys of the finished runs, sorted."""
        runs = self.root / "runs"
        if not runs.is_dir():
            return []
        return sorted(p.name for p in runs.iterdir() if (p / "record.json").exists())

    def unfinished(self) -> list:
        runs = self.root / "runs"
        if not runs.is_dir():
            return []
        return sorted(p.name for p in runs.iterdir()
                      if p.is_dir() and not (p / "record.json").exists())

    # -- records
    def record(self, key: str) -> dict:
        path = self.run_dir(key) / "record.json"
        if not path.exists():
            raise KeyError(f"no finished run {key!r} in {self.root}")
        try:
            rec = read_json(path)
        except (OSError, ValueError) as exc:
            raise StoreError(f"{path} is not readable JSON: {exc}") from None
        self._check_schema(rec.get("schema"), str(path))
        return rec

    def arrays(self, key: str) -> dict:
        with np.load(self.run_dir(key) / "arrays.npz") as z:
            return {k: z[k] for k in z.files}

    def resolve(self, prefix: str) -> str:
        """The full key of the finished run whose key starts with ``prefix``."""
        hits = [k for k in self.keys() if k.startswith(prefix)]
        if not hits:
            raise KeyError(f"no finished run with key starting {prefix!r} in {self.root} "
                           "(see `popdyn ls --store DIR`)")
        if len(hits) > 1:
            raise KeyError(f"run prefix {prefix!r} is ambiguous: {hits[:5]}")
        return hits[0]

    def write_run(self, key: str, record: dict, arrays: dict):
        """Write a finished run: arrays first, then the record (the completion marker), then
        drop its checkpoint."""
        d = self.run_dir(key)
        write_npz(d / "arrays.npz", **arrays)
        write_json(d / "record.json", {**record, "schema": SCHEMA, "key": key})
        ck = d / "checkpoint.npz"
        if ck.exists():
            ck.unlink()
            _fsync_dir(d)

    # -- checkpoints
    def write_checkpoint(self, key: str, spec: dict, arrays: dict, meta: dict):
        d = self.run_dir(key)
        d.mkdir(parents=True, exist_ok=True)
        spec_path = d / "spec.json"
        if not spec_path.exists():
            write_json(spec_path, {"schema": SCHEMA, "key": key, "spec": spec})
        write_npz(d / "checkpoint.npz", meta=np.frombuffer(dumps(meta).encode(), dtype=np.uint8),
                  **arrays)

    def checkpoint(self, key: str):
        """(arrays, meta) of the run's checkpoint, or None."""
        path = self.run_dir(key) / "checkpoint.npz"
        if not path.exists():
            return None
        try:
            with np.load(path) as z:
                arrs = {k: z[k] for k in z.files if k != "meta"}
                meta = json.loads(bytes(z["meta"]).decode())
        except (OSError, ValueError, KeyError, EOFError):
            return None              # unreadable checkpoint: start over (never trusted)
        if meta.get("schema") != SCHEMA:
            return None
        return arrs, meta

    # -- sweeps
    def write_sweep(self, name: str, keys: list, cfg: dict):
        """Record a sweep's ordered run keys (sweeps/<hash>.json) and append its id to
        sweeps/index.json (first-write order: tables list cohorts in that order)."""
        h = hashlib.sha256(dumps({"keys": keys}).encode()).hexdigest()[:16]
        write_json(self.root / "sweeps" / f"{h}.json",
                   {"schema": SCHEMA, "name": name, "keys": keys, "config": cfg})
        idx = self.sweep_ids()
        if h not in idx:
            write_json(self.root / "sweeps" / "index.json", {"schema": SCHEMA, "sweeps": idx + [h]})

    def sweep_ids(self) -> list:
        path = self.root / "sweeps" / "index.json"
        if not path.exists():
            return []
        try:
            return list(read_json(path)["sweeps"])
        except (OSError, ValueError, KeyError):
            return []

    def key_positions(self) -> dict:
        """key → (sweep position, index in that sweep) of its first sweep."""
        pos = {}
        for i, h in enumerate(self.sweep_ids()):
            try:
                keys = read_json(self.root / "sweeps" / f"{h}.json")["keys"]
            except (OSError, ValueError, KeyError):
                continue
            for j, k in enumerate(keys):
                pos.setdefault(k, (i, j))
        return pos
