"""Sweeps and the result store: nothing lost, nothing recomputed, identical across executors.

Tiny configurations (d = 4, m = 4, tens of updates) so the whole file runs in seconds.
"""
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from popdyn import config as C
from popdyn.cli import main
from popdyn.experiments import (SchedulerError, Store, StoreError, run_one, sweep, table)
from popdyn.experiments.runner import spec_key

from _stores import same_run

TINY = """
name = "tiny"
[[teachers]]
link = "h2"
rank = 2
[[teachers]]
link = "damped_cubic:0.5"
rank = 1
[student]
d = 4
m = 4
[init]
scale = 0.1
seeds = [0, 1]
[train]
method = "{method}"
lr = 0.2
max_updates = {updates}
loss_target = 0.05
[schedule]
every = 5
early = [1, 2]
[store]
checkpoint_every = 10
"""


def tiny(method="gd", updates=40, **kw):
    text = TINY.format(method=method, updates=updates)
    if method == "flow":           # the flow's tolerance (an option gd would refuse)
        text = text.replace("lr = 0.2\n", "lr = 0.2\neps = 0.1\n")
    return C.loads(text)


def test_workers_and_rerun_identical(tmp_path):
    cfg = tiny()
    r1 = sweep(cfg, tmp_path / "s1", workers=1, progress=False)
    r2 = sweep(cfg, tmp_path / "s2", workers=2, progress=False)
    assert r1["keys"] == r2["keys"] and r1["ran"] == 4 and r2["ran"] == 4
    s1, s2 = Store(tmp_path / "s1"), Store(tmp_path / "s2")
    for k in r1["keys"]:
        same_run(s1, s2, k)
    for fmt in ("md", "latex", "csv"):
        assert table(s1, fmt) == table(s2, fmt)
    again = sweep(cfg, tmp_path / "s1", workers=2, progress=False)
    assert again["ran"] == 0 and again["skipped"] == 4


@pytest.mark.parametrize("method", ["gd", "flow"])
def test_resume_is_identical(tmp_path, method):
    cfg = tiny(method=method, updates=35)
    spec = C.expand(cfg)[0]
    key = spec_key(spec)
    out = run_one(spec, str(tmp_path / "a"), _stop_after_segments=2)
    assert out["status"] == "interrupted"
    st = Store(tmp_path / "a")
    assert not st.has(key) and (st.run_dir(key) / "checkpoint.npz").exists()
    assert st.unfinished() == [key]
    out = run_one(spec, str(tmp_path / "a"))
    assert out["resumed"] and not (st.run_dir(key) / "checkpoint.npz").exists()
    run_one(spec, str(tmp_path / "b"))
    same_run(st, Store(tmp_path / "b"), key)
    assert st.record(key)["info"]["resumed"] is True


_KILL_SCRIPT = """
import sys
from popdyn import config as C
from popdyn.experiments import sweep
cfg = C.loads(open(sys.argv[1]).read())
sweep(cfg, sys.argv[2], workers=1, progress=False)
"""


def test_sigkill_midway_then_rerun(tmp_path):
    text = TINY.format(method="gd", updates=100).replace("seeds = [0, 1]", "seeds = [0, 1, 2]")
    (tmp_path / "c.toml").write_text(text)
    (tmp_path / "k.py").write_text(_KILL_SCRIPT)
    store = tmp_path / "s"
    # the child imports the same popdyn as this process (the checkout under `python -m pytest`,
    # whether the install is editable or not), with the same warm kernel cache
    import popdyn
    src = os.path.dirname(os.path.dirname(popdyn.__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [src] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    proc = subprocess.Popen([sys.executable, str(tmp_path / "k.py"), str(tmp_path / "c.toml"),
                             str(store)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env)
    deadline = time.time() + 240
    try:
        while time.time() < deadline:
            runs = store / "runs"
            if runs.is_dir() and sum((p / "record.json").exists() for p in runs.iterdir()) >= 1:
                break
            if proc.poll() is not None:
                break
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    st = Store(store)
    done = st.keys()
    assert 1 <= len(done) < 6, f"kill came too late or too early: {len(done)} finished"
    # nothing torn: every finished record and its arrays load; no stray temp file is a record
    snap = {}
    for k in done:
        rec = st.record(k)
        assert rec["status"] in ("converged", "horizon", "diverged")
        st.arrays(k)
        snap[k] = (st.run_dir(k) / "record.json").read_bytes()
    cfg = C.loads(text)
    res = sweep(cfg, store, workers=2, progress=False)
    assert res["skipped"] == len(done) and res["ran"] == 6 - len(done)
    for k in done:                                    # finished runs were not recomputed
        assert (st.run_dir(k) / "record.json").read_bytes() == snap[k]
    assert st.unfinished() == []
    sweep(cfg, tmp_path / "fresh", workers=1, progress=False)
    for fmt in ("md", "latex", "csv"):
        assert table(st, fmt) == table(tmp_path / "fresh", fmt)
    for k in st.keys():
        same_run(st, Store(tmp_path / "fresh"), k)


def test_dask_local_cluster_identical(tmp_path):
    distributed = pytest.importorskip("distributed")
    cfg = tiny()
    sweep(cfg, tmp_path / "s1", workers=1, progress=False)
    # one thread per worker: certify's Arb precision context is process-global (see sweep.py)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        res = sweep(cfg, tmp_path / "s2", scheduler=cluster.scheduler_address, progress=False)
    assert res["ran"] == 4
    assert table(tmp_path / "s1", "csv") == table(tmp_path / "s2", "csv")
    for k in res["keys"]:
        same_run(Store(tmp_path / "s1"), Store(tmp_path / "s2"), k)


def test_thread_pool_identical(tmp_path):
    """A thread pool (two threads in one process) gives the same runs as one worker: runs in
    threads of one process execute one at a time (runner.run_one's lock), so certify's
    process-global Arb precision is never shared between two runs."""
    import concurrent.futures as cf

    cfg = tiny()
    sweep(cfg, tmp_path / "s1", workers=1, progress=False)
    with cf.ThreadPoolExecutor(max_workers=2) as ex:
        res = sweep(cfg, tmp_path / "s2", executor=ex, progress=False)
    assert res["ran"] == 4
    assert table(tmp_path / "s1", "csv") == table(tmp_path / "s2", "csv")
    for k in res["keys"]:
        same_run(Store(tmp_path / "s1"), Store(tmp_path / "s2"), k)

def test_unreachable_scheduler(tmp_path):
    pytest.importorskip("distributed")
    t0 = time.time()
    with pytest.raises(SchedulerError, match="cannot reach the dask scheduler at 'tcp://127.0.0.1:9'"):
        sweep(tiny(), tmp_path / "s", scheduler="tcp://127.0.0.1:9", timeout=1.0, progress=False)
    assert time.time() - t0 < 20
    assert Store(tmp_path / "s").keys() == [] and Store(tmp_path / "s").unfinished() == []


def test_newer_schema_store_refused(tmp_path):
    sweep(tiny(updates=5), tmp_path / "s", workers=1, progress=False)
    st = Store(tmp_path / "s")
    k = st.keys()[0]
    rec = json.loads((st.run_dir(k) / "record.json").read_text())
    rec["schema"] = 99
    (st.run_dir(k) / "record.json").write_text(json.dumps(rec))
    with pytest.raises(StoreError, match="schema 99, newer than this popdyn"):
        st.record(k)
    meta = tmp_path / "s" / "store.json"
    info = json.loads(meta.read_text())
    info["schema"] = 7
    meta.write_text(json.dumps(info))
    with pytest.raises(StoreError, match="schema 7, newer"):
        Store(tmp_path / "s")
    assert main(["table", "--store", str(tmp_path / "s")]) == 2
    cfgpath = tmp_path / "c.toml"
    cfgpath.write_text(TINY.format(method="gd", updates=7))
    before = sorted(p.name for p in (tmp_path / "s" / "runs").iterdir())
    assert main(["sweep", str(cfgpath), "--store", str(tmp_path / "s")]) == 2
    assert sorted(p.name for p in (tmp_path / "s" / "runs").iterdir()) == before


def test_not_a_store(tmp_path):
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "file.txt").write_text("x")
    with pytest.raises(StoreError, match="not a popdyn store"):
        Store(tmp_path / "junk")
    with pytest.raises(StoreError, match="no store.json"):
        Store(tmp_path / "nothing", create=False)


@pytest.mark.parametrize("text, match", [
    ('[teacher]\nlink="h2"\n[student]\nd=4\nm=2\nactivaton="relu"\n[init]\nscale=0.1\n',
     "Did you mean 'activation'"),
    ('[teacher]\nlink="h2"\n[studnet]\nd=4\n[init]\nscale=0.1\n', "Did you mean 'student'"),
    ('[[teachers]]\nlnk="h2"\n[student]\nd=4\nm=2\n[init]\nscale=0.1\n', "Did you mean 'link'"),
    ('[teacher]\nlink="h2"\n[student]\nd=4\nm=2\n[init]\nscale=0.1\n[[settings]]\nlabel="a"\n'
     'train={lrr=0.1}\n', "Did you mean 'lr'"),
    ('[teacher]\nlink="h2"\n[student]\nd=4\nm=2\n[init]\nscale=0.1\n[diagnostics]\nkinds=["same_budgt"]\n',
     "Did you mean 'same_budget'"),
    ('[teacher]\nlink="h2"\n[student]\nd=4\nm=2\n[init]\nscale=0.1\nseeds=[0,0]\n', "duplicate seeds"),
    ('[teacher]\nlink="h2"\n[student]\nd=4\nm=2\n[init]\nscale=-1\n', "`scale` must be > 0"),
    ('[teacher]\nlink="h2"\nrank=9\n[student]\nd=4\nm=2\n[init]\nscale=0.1\n', "rank must be"),
    ('[teacher]\nlink="h2"\n[student]\nd=4\nm=2\n[init]\nscale=0.1\n[train]\nmethod="sgd"\n', "`method`"),
    ('[teacher]\nlink="h2"\n[student]\nd=4\nm=2\n[init]\nscale=0.1\n[train]\nmax_updates=-1\n', "max_updates"),
    ('[teacher]\nlink = "h2\n', "not valid TOML"),
    ('[student]\nd=4\nm=2\n[init]\nscale=0.1\n', "missing the \\[teacher\\]"),
])
def test_bad_configs(tmp_path, capsys, text, match):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        C.expand(C.load(path))
    assert main(["sweep", str(path), "--store", str(tmp_path / "s")]) == 2
    assert re.search(match, capsys.readouterr().err)       # the CLI prints the same message
    st = tmp_path / "s"
    assert not st.exists()                  # no store folder for a config that fails validation


def test_seed_range_and_settings(tmp_path):
    text = textwrap.dedent("""
        [teacher]
        link = "h2"
        rank = 1
        [student]
        d = 4
        m = 3
        [init]
        scale = 0.1
        seeds = {start = 5, count = 3}
        [train]
        method = "gd"
        max_updates = 4
        [[settings]]
        label = "slow"
        train = {lr = 0.01}
        [[settings]]
        label = "fast"
        train = {lr = 0.1}
    """)
    runs = C.expand(C.loads(text))
    assert [(r["setting"], r["init"]["seed"]) for r in runs] == [
        ("slow", 5), ("slow", 6), ("slow", 7), ("fast", 5), ("fast", 6), ("fast", 7)]
    assert len({spec_key(r) for r in runs}) == 6


def test_cli_forms(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(TINY.format(method="gd", updates=10))
    st = str(tmp_path / "s")
    assert main(["sweep", str(path), "--store", st, "--workers", "1", "--quiet"]) == 0
    assert "4 computed" in capsys.readouterr().out
    assert main(["table", "--store", st, "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("setting,teacher,runs")
    assert main(["ls", "--store", st]) == 0
    out = capsys.readouterr().out
    key = out.splitlines()[1].split()[0]
    assert "4 finished run(s)" in out
    assert main(["show", "--store", st, key]) == 0
    assert "certified brackets" in capsys.readouterr().out
    assert main(["show", "--store", st, "zzzz"]) == 2
    assert "no finished run" in capsys.readouterr().err
    assert main(["table", "--store", str(tmp_path / "none")]) == 2


# ------------------------------------------------------------------ checkpoint parts, JSON
def _interrupted(tmp_path, name, method="gd", updates=35, segments=2):
    spec = C.expand(tiny(method=method, updates=updates))[0]
    out = run_one(spec, str(tmp_path / name), _stop_after_segments=segments)
    assert out["status"] == "interrupted"
    return spec, spec_key(spec), Store(tmp_path / name)


def test_checkpoint_parts_written_once_and_removed(tmp_path):
    spec, key, st = _interrupted(tmp_path, "a", segments=3)
    d = st.run_dir(key)
    assert sorted(p.name for p in d.glob("part_*.npz")) == ["part_0.npz", "part_1.npz",
                                                            "part_2.npz"]
    arrs, meta = st.checkpoint(key)
    assert meta["format"] == 2 and meta["parts"] == 3
    assert len(meta["records"]) == len(arrs["snap_n"]) and arrs["n"][-1] == meta["n0"]
    # each part holds only what its segment added: the snapshots do not repeat
    assert len(np.unique(arrs["snap_n"])) == len(arrs["snap_n"])
    run_one(spec, str(tmp_path / "a"))
    assert not list(d.glob("part_*.npz")) and not (d / "checkpoint.npz").exists()
    run_one(spec, str(tmp_path / "b"))
    same_run(st, Store(tmp_path / "b"), key)


@pytest.mark.parametrize("method", ["gd", "flow"])
def test_resume_from_format1_checkpoint(tmp_path, method):
    """A checkpoint in the old single-file layout (records in meta) still resumes identically."""
    from popdyn.experiments.store import dumps, write_npz

    spec, key, st = _interrupted(tmp_path, "a", method=method)
    arrs, meta = st.checkpoint(key)
    d = st.run_dir(key)
    for p in d.glob("part_*.npz"):
        p.unlink()
    old = {k: v for k, v in meta.items() if k not in ("format", "parts")}
    write_npz(d / "checkpoint.npz", meta=np.frombuffer(dumps(old).encode(), dtype=np.uint8),
              **arrs)
    out = run_one(spec, str(tmp_path / "a"))
    assert out["resumed"] and not list(d.glob("part_*.npz"))
    run_one(spec, str(tmp_path / "b"))
    same_run(st, Store(tmp_path / "b"), key)


def test_checkpoint_with_missing_or_bad_part_starts_over(tmp_path):
    spec, key, st = _interrupted(tmp_path, "a")
    d = st.run_dir(key)
    run_one(spec, str(tmp_path / "b"))
    (d / "part_1.npz").unlink()
    assert st.checkpoint(key) is None
    out = run_one(spec, str(tmp_path / "a"))
    assert not out["resumed"]
    same_run(st, Store(tmp_path / "b"), key)
    spec, key, st = _interrupted(tmp_path, "c")
    (st.run_dir(key) / "part_0.npz").write_bytes(b"not a zip file")
    assert st.checkpoint(key) is None


def test_part_written_but_checkpoint_not(tmp_path, monkeypatch):
    """A crash between a part and the checkpoint that would count it: the checkpoint still
    refers to the earlier parts; the resumed run rewrites the part and ends identical."""
    spec, key, st = _interrupted(tmp_path, "a")
    calls = []
    real = Store.write_checkpoint

    def failing(self, *a, **kw):
        calls.append(1)
        raise KeyboardInterrupt("simulated crash")

    monkeypatch.setattr(Store, "write_checkpoint", failing)
    with pytest.raises(KeyboardInterrupt):
        run_one(spec, str(tmp_path / "a"))
    monkeypatch.setattr(Store, "write_checkpoint", real)
    d = st.run_dir(key)
    assert calls and (d / "part_2.npz").exists() and st.checkpoint(key)[1]["parts"] == 2
    out = run_one(spec, str(tmp_path / "a"))
    assert out["resumed"]
    run_one(spec, str(tmp_path / "b"))
    same_run(st, Store(tmp_path / "b"), key)


def test_json_writers_match_the_standard_library():
    from popdyn.experiments.store import _clean, dumps, dumps_indented

    rng = np.random.default_rng(1)
    floats = [0.0, -0.0, 1e-320, 1e300, -2.5, float("nan"), float("inf"), -float("inf"), 1 / 3]

    def value(depth):
        r = rng.random()
        if depth > 3 or r < 0.5:
            return [rng.choice(floats), int(rng.integers(-2**62, 2**62)), True, False, None,
                    "é\"\\\n\t\u2028x", np.float64(rng.standard_normal()), np.int64(7),
                    np.bool_(False), np.arange(3.0), np.array([1.0, np.nan])][int(rng.integers(11))]
        if r < 0.7:
            return [value(depth + 1) for _ in range(int(rng.integers(4)))]
        if r < 0.75:
            return tuple(value(depth + 1) for _ in range(int(rng.integers(3))))
        keys = ["a", "B", "é", "_", "aa", 3, 2.5, True, None]
        return {keys[int(rng.integers(len(keys)))]: value(depth + 1)
                for _ in range(int(rng.integers(5)))}

    for _ in range(3000):
        o = value(0)
        c = _clean(o)
        assert _clean(c) == c and json.loads(json.dumps(c)) == c
        assert dumps_indented(o) == json.dumps(c, sort_keys=True, allow_nan=False, indent=1,
                                               ensure_ascii=False)
        assert dumps(o) == json.dumps(c, sort_keys=True, allow_nan=False, ensure_ascii=False,
                                      separators=(",", ":"))
