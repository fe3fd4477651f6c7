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
    DIR/runs/<key>/part_<i>.npz     the trajectory of an unfinished run, appended part by part:
                                    part i holds what was computed since part i − 1 (removed
                                    when the run finishes)
    DIR/sweeps/<hash>.json          the ordered run keys of each sweep written to the store

Everything is readable without popdyn: ``json.load`` and ``numpy.load`` (non-finite floats are
stored as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``).  Every file is written to a
temporary file in the same directory, flushed, ``fsync``-ed and moved into place with
``os.replace`` (then the directory is ``fsync``-ed), so a crash leaves either the old file or
the new one, never a torn one.  A store or record written by a newer schema is refused with a
:class:`StoreError`.

Checkpoints (internal state of unfinished runs, never a result) come in two formats, both read:
format 1 keeps everything -- state, trajectory so far and the records (in ``meta``) -- in
``checkpoint.npz``, rewritten whole at every checkpoint (so the work grows quadratically with
the run); format 2 (``meta["format"] = 2``, written now) keeps only the state and ``meta`` there
and appends the trajectory and records computed since the previous checkpoint as a new
``part_<i>.npz`` (written, atomically, before the ``checkpoint.npz`` that counts it in
``meta["parts"]``, so a checkpoint never refers to a missing part).
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import secrets
import socket
import time
from pathlib import Path

import numpy as np

SCHEMA = 1
FORMAT = "popdyn-store"
#: the checkpoint format written (see the module docstring; format 1 is still read)
CHECKPOINT_FORMAT = 2


class StoreError(RuntimeError):
    """The store cannot be used (newer schema, not a store, corrupt record)."""


# ---------------------------------------------------------------------------- JSON
def _clean_scalar(o):
    """The general (isinstance-based) cleaning of one non-container value."""
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


def _clean(o):
    """``o`` as JSON-native data: dicts with str keys, lists, str, int, float, bool, None;
    numpy scalars and arrays as Python numbers and (nested) lists, tuples as lists, and the
    non-finite floats as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.

    The exact built-in types are dispatched first (most of a record), finite float arrays are
    converted in one ``tolist``; everything else goes through the general isinstance chain,
    so the result is the same as a plain recursive conversion.  Cleaning is idempotent and
    ``json.loads(json.dumps(_clean(o)))`` equals ``_clean(o)``.
    """
    t = type(o)
    if t is float:
        return o if o - o == 0.0 else _clean_scalar(o)      # finite floats pass unchanged
    if t is str or t is int or t is bool or o is None:
        return o
    if t is dict:
        return {(k if type(k) is str else str(k)): _clean(v) for k, v in o.items()}
    if t is list or t is tuple:
        return [_clean(v) for v in o]
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    if isinstance(o, np.ndarray):
        if o.ndim and (o.dtype.kind in "biu" or (o.dtype.kind == "f" and np.isfinite(o).all())):
            return o.tolist()                                 # already JSON-native
        return _clean(o.tolist())
    return _clean_scalar(o)


_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def num(x):
    """A stored number back as a float (undoing the non-finite string encoding); None stays."""
    if x is None:
        return None
    if isinstance(x, str):
        return _NONFINITE[x]
    return float(x)


#: the canonical encoder (``json.dumps`` with these arguments builds the same one per call)
_CANONICAL = json.JSONEncoder(sort_keys=True, allow_nan=False, ensure_ascii=False,
                              separators=(",", ":"))


def dumps(obj) -> str:
    """Canonical JSON (sorted keys, no NaN literals)."""
    return _CANONICAL.encode(_clean(obj))


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


_HOST = re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())[:40] or "host"
_TMP = re.compile(r"^\..+\.(?P<host>[A-Za-z0-9_-]+)\.(?P<pid>\d+)\.[0-9a-f]{12}\.tmp$")
#: a temporary file of another machine is removed only when it is this old (seconds): a write
#: takes well under a second, so such a file was left by a writer that died
STALE_TMP_SECONDS = 3600.0


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # alive, another user's
        return True
    return True


def remove_stale_temporaries(root) -> list:
    """Remove the temporary files of :func:`atomic_write` that a killed writer left below
    ``root``: those of this machine whose process is gone, and those of any machine older than
    :data:`STALE_TMP_SECONDS`.  A temporary file of a live writer is never touched.  Returns
    the removed paths."""
    removed, now = [], time.time()
    for p in Path(root).rglob(".*.tmp"):
        m = _TMP.match(p.name)
        if m is None:
            continue
        try:
            age = now - p.stat().st_mtime
        except FileNotFoundError:
            continue
        dead = m["host"] == _HOST and not _pid_alive(int(m["pid"]))
        if dead or age > STALE_TMP_SECONDS:
            try:
                p.unlink()
                removed.append(p)
            except FileNotFoundError:
                pass
    return removed


def atomic_write(path, data: bytes):
    """Write ``data`` to ``path`` atomically (temp file + fsync + os.replace + fsync dir).

    The file is created with mode 0o666 minus the process umask, like any file the user creates
    (``tempfile.mkstemp`` would make it 0o600, unreadable to the colleagues of a shared store).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = str(path.parent / f".{path.name}.{_HOST}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o666)
            break
        except FileExistsError:  # pragma: no cover (48 random bits)
            continue
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


class _NotNative(Exception):
    """A value outside the exact JSON-native types met by :func:`_indent1`."""


try:
    # (ignore[attr-defined]: CPython's C accelerator, not in typeshed's json.encoder)
    from json.encoder import c_encode_basestring as _encode_str  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover  (CPython always has the C accelerator)
    from json.encoder import py_encode_basestring as _encode_str


def _indent1_scalar(o, t):
    if t is str:
        return _encode_str(o)
    if t is float:
        if o - o == 0.0:
            return float.__repr__(o)
        raise ValueError("Out of range float values are not JSON compliant: " + repr(o))
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if t is int:
        return int.__repr__(o)
    raise _NotNative


def _indent1(o, level: int, out: list):
    """Append the text of ``json.dumps(o, sort_keys=True, indent=1, allow_nan=False,
    ensure_ascii=False)`` at nesting ``level`` to ``out`` (exact built-in JSON types only;
    anything else raises :class:`_NotNative`)."""
    t = type(o)
    if t is dict:
        if not o:
            out.append("{}")
            return
        nl = "\n" + " " * (level + 1)
        out.append("{")
        sep = nl
        for k in sorted(o):
            if type(k) is not str:
                raise _NotNative
            v = o[k]
            tv = type(v)
            out.append(sep)
            out.append(_encode_str(k))
            out.append(": ")
            if tv is dict or tv is list or tv is tuple:
                _indent1(v, level + 1, out)
            else:
                out.append(_indent1_scalar(v, tv))
            sep = "," + nl
        out.append("\n" + " " * level + "}")
    elif t is list or t is tuple:
        if not o:
            out.append("[]")
            return
        nl = "\n" + " " * (level + 1)
        out.append("[")
        sep = nl
        for v in o:
            tv = type(v)
            out.append(sep)
            if tv is dict or tv is list or tv is tuple:
                _indent1(v, level + 1, out)
            else:
                out.append(_indent1_scalar(v, tv))
            sep = "," + nl
        out.append("\n" + " " * level + "]")
    else:
        out.append(_indent1_scalar(o, t))


def dumps_indented(obj) -> str:
    """``json.dumps(_clean(obj), sort_keys=True, allow_nan=False, indent=1, ensure_ascii=False)``
    -- the text of the store's JSON files -- by a direct encoder for the JSON-native data that
    :func:`_clean` returns (the standard library's indenting encoder is pure Python and
    generator-based); anything it does not cover goes through ``json.dumps`` itself."""
    obj = _clean(obj)
    out: list[str] = []
    try:
        _indent1(obj, 0, out)
    except (_NotNative, RecursionError):
        return json.dumps(obj, sort_keys=True, allow_nan=False, indent=1, ensure_ascii=False)
    return "".join(out)


def write_json(path, obj):
    atomic_write(path, (dumps_indented(obj) + "\n").encode())


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
            remove_stale_temporaries(self.root)     # left by a writer that was killed
        elif create:
            if self.root.exists() and not self.root.is_dir():
                raise StoreError(f"store path {self.root} exists and is not a directory")
            for parent in self.root.parents:        # the first existing ancestor
                if parent.exists():
                    if not parent.is_dir():
                        raise StoreError(f"store path {self.root}: {parent} is a file, not a "
                                         "directory; give a directory path")
                    break
            if self.root.is_dir() and any(p.name != "store.json" for p in self.root.iterdir()):
                raise StoreError(f"{self.root} is a non-empty directory without store.json: "
                                 "not a popdyn store; give an empty or new directory")
            from .. import __version__
            self.info = {"format": FORMAT, "schema": SCHEMA, "created_by": f"popdyn {__version__}"}
            try:
                write_json(meta, self.info)
            except OSError as exc:
                raise StoreError(f"cannot create the store {self.root}: "
                                 f"{exc.strerror or exc}") from None
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
        drop its checkpoint (and checkpoint parts)."""
        d = self.run_dir(key)
        write_npz(d / "arrays.npz", **arrays)
        write_json(d / "record.json", {**record, "schema": SCHEMA, "key": key})
        stale = [d / "checkpoint.npz"] + sorted(d.glob("part_*.npz"))
        removed = False
        for f in stale:
            if f.exists():
                f.unlink()
                removed = True
        if removed:
            _fsync_dir(d)

    # -- checkpoints
    def write_checkpoint(self, key: str, spec: dict, arrays: dict, meta: dict):
        """Write the state of an unfinished run (atomically replacing the previous one);
        ``meta`` is stored as its canonical JSON (:func:`dumps`).  In checkpoint format 2
        (``meta["format"] = 2``) ``meta["parts"]`` counts the parts written before
        (:meth:`write_checkpoint_part`) that hold the trajectory.
        """
        d = self.run_dir(key)
        d.mkdir(parents=True, exist_ok=True)
        spec_path = d / "spec.json"
        if not spec_path.exists():
            write_json(spec_path, {"schema": SCHEMA, "key": key, "spec": spec})
        write_npz(d / "checkpoint.npz", meta=np.frombuffer(dumps(meta).encode(), dtype=np.uint8),
                  **arrays)

    def write_checkpoint_part(self, key: str, index: int, arrays: dict, records_json: str):
        """Write part ``index`` of an unfinished run's trajectory (checkpoint format 2): the
        arrays computed since the previous part, and their records as the canonical JSON text
        ``records_json`` of a list (see :func:`dumps`).  Parts are written before the
        checkpoint that counts them and are never modified afterwards (a part rewritten after
        a resume has the same content)."""
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ValueError(f"`index` must be an int >= 0, got {index!r}")
        if "records" in arrays:
            raise ValueError("`arrays` must not have a key 'records' (the records are stored "
                             "from `records_json`)")
        d = self.run_dir(key)
        d.mkdir(parents=True, exist_ok=True)
        write_npz(d / f"part_{index}.npz",
                  records=np.frombuffer(records_json.encode(), dtype=np.uint8), **arrays)

    def checkpoint(self, key: str):
        """(arrays, meta) of the run's checkpoint, or None when there is none or it cannot be
        used (unreadable, other schema, a part missing or inconsistent: the run starts over).

        Both checkpoint formats come back in the shape of format 1: the state arrays with the
        whole trajectory so far (format 2: its parts concatenated) and ``meta["records"]``.
        """
        d = self.run_dir(key)
        path = d / "checkpoint.npz"
        if not path.exists():
            return None
        try:
            with np.load(path) as z:
                arrs = {k: z[k] for k in z.files if k != "meta"}
                meta = json.loads(bytes(z["meta"]).decode())
        except (OSError, ValueError, KeyError, EOFError):
            return None              # unreadable checkpoint: start over (never trusted)
        if not isinstance(meta, dict) or meta.get("schema") != SCHEMA:
            return None
        fmt = meta.get("format", 1)
        if fmt == 1:
            return (arrs, meta) if isinstance(meta.get("records"), list) else None
        if fmt != CHECKPOINT_FORMAT:
            return None
        parts = meta.get("parts")
        if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
            return None
        chunks, records = [], []
        try:
            for i in range(parts):
                with np.load(d / f"part_{i}.npz") as z:
                    chunks.append({k: z[k] for k in z.files if k != "records"})
                    recs = json.loads(bytes(z["records"]).decode())
                if not isinstance(recs, list):
                    return None
                records.extend(recs)
        except (OSError, ValueError, KeyError, EOFError):
            return None              # a missing or unreadable part: start over
        names = set(chunks[0])
        if any(set(c) != names for c in chunks) or names & set(arrs):
            return None
        try:
            traj = {k: np.concatenate([c[k] for c in chunks]) for k in names}
        except ValueError:
            return None
        if "snap_n" not in traj or len(records) != len(traj["snap_n"]):
            return None
        arrs.update(traj)
        return arrs, {**meta, "records": records}

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
        pos: dict[str, tuple[int, int]] = {}
        for i, h in enumerate(self.sweep_ids()):
            try:
                keys = read_json(self.root / "sweeps" / f"{h}.json")["keys"]
            except (OSError, ValueError, KeyError):
                continue
            for j, k in enumerate(keys):
                pos.setdefault(k, (i, j))
        return pos
