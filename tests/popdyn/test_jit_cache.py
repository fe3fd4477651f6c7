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


def test_a_kernel_outside_popdyn_has_its_own_digest(tmp_path):
    """A jitted module of another package (certify's kernels) keeps its own digest: an edit of
    popdyn's kernels or of the module drops the module's caches only, and the kernels' own
    digest is not disturbed (popdyn names no other package's files)."""
    k, others, caches, keep = _tree(tmp_path)
    src = others[0]
    marker = src.parent / "__pycache__" / "c.popdyn-kernels.sha256"
    main_marker = k / "__pycache__" / "popdyn-kernels.sha256"
    assert _drop_stale_caches(k)                                     # popdyn's own digest
    assert _drop_stale_caches(k, others, drop=others, marker=marker)
    assert marker.exists() and main_marker.exists()
    _touch(caches + keep)
    assert not _drop_stale_caches(k, others, drop=others, marker=marker)
    assert not _drop_stale_caches(k)
    (k / "a.py").write_text("x = 2\n")                               # a popdyn kernel changes
    assert _drop_stale_caches(k, others, drop=others, marker=marker)
    assert not caches[2].exists()                                    # the module's cache goes
    assert caches[0].exists() and caches[1].exists()                 # popdyn's stay for its check
    assert _drop_stale_caches(k)
    assert not caches[0].exists() and not caches[1].exists()
    assert all(p.exists() for p in keep)


def test_jit_checks_a_foreign_source_once(tmp_path, monkeypatch):
    """The decorator runs the check for a function defined outside popdyn's kernels once per
    file; popdyn's kernel directory names no other package's files."""
    import inspect

    from popdyn._kernels import _jit

    calls = []
    monkeypatch.setattr(_jit, "_CACHE", True)
    monkeypatch.setattr(_jit, "_CHECKED", set())
    monkeypatch.setattr(_jit, "_drop_stale_caches", lambda *a, **kw: calls.append((a, kw)))
    mod = tmp_path / "foreign_kernels.py"
    mod.write_text("def f(x):\n    return x + 1\n\ndef g(x):\n    return 2 * x\n")
    ns = {}
    exec(compile(mod.read_text(), str(mod), "exec"), ns)
    assert _jit._check_source(ns["f"]) is ns["f"] and _jit._check_source(ns["g"]) is ns["g"]
    assert len(calls) == 1
    (args, kw), = calls
    assert args[1] == (mod.resolve(),) and kw["drop"] == (mod.resolve(),)
    assert kw["marker"].name == "foreign_kernels.popdyn-kernels.sha256"
    assert "certify" not in inspect.getsource(_jit)
