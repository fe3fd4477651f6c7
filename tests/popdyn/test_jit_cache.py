"""popdyn._kernels._jit drops numba caches when any jitted source changes.

Numba keys a cached function on its own file only, so a cached caller would keep a stale callee
from another file (this happened: fused.py kept an old plmoments.py).  Exercised on a temporary
directory with fake sources and cache files.
"""
from popdyn._kernels._jit import _drop_stale_caches


def _tree(tmp_path):
    k = tmp_path / "kernels"
    (k / "__pycache__").mkdir(parents=True)
    (k / "a.py").write_text("x = 1\n")
    (k / "b.py").write_text("y = 2\n")
    o = tmp_path / "other"
    (o / "__pycache__").mkdir(parents=True)
    (o / "c.py").write_text("z = 3\n")
    caches = [k / "__pycache__" / "a.f-10.py311.nbi", k / "__pycache__" / "b.g-3.py311.1.nbc",
              o / "__pycache__" / "c.h-1.py311.nbi"]
    keep = [k / "__pycache__" / "a.cpython-311.pyc", o / "__pycache__" / "unrelated.k-1.py311.nbi"]
    return k, (o / "c.py",), caches, keep


def _touch(paths):
    for p in paths:
        p.write_bytes(b"cache")


def test_caches_kept_while_sources_unchanged_and_dropped_after_an_edit(tmp_path):
    k, others, caches, keep = _tree(tmp_path)
    assert _drop_stale_caches(k, others)            # first run: no digest yet
    _touch(caches + keep)
    assert not _drop_stale_caches(k, others)        # unchanged: nothing removed
    assert all(p.exists() for p in caches + keep)
    (k / "b.py").write_text("y = 3\n")              # edit one source
    assert _drop_stale_caches(k, others)
    assert not any(p.exists() for p in caches)      # every kernel's cache goes, not only b's
    assert all(p.exists() for p in keep)
    _touch(caches)
    others[0].write_text("z = 4\n")                 # a jitted source outside the directory
    assert _drop_stale_caches(k, others)
    assert not any(p.exists() for p in caches)
    assert not _drop_stale_caches(k, others)


def test_unwritable_cache_location_is_not_an_error(tmp_path):
    k, others, caches, keep = _tree(tmp_path)
    for f in (k / "__pycache__").iterdir():
        f.unlink()
    (k / "__pycache__").rmdir()
    (k / "__pycache__").write_text("not a directory")   # the digest cannot be written
    assert _drop_stale_caches(k, others)                # ignored (OSError), caches deemed stale
    assert (k / "__pycache__").read_text() == "not a directory"
