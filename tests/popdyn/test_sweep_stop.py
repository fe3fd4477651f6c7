"""A sweep stops when told: Ctrl-C (SIGINT to the process group) and SIGTERM stop a two-worker
pool within seconds, no worker outlives a SIGKILLed sweep process, a killed writer's temporary
files are removed on the next open of the store, and the resumed sweep is bit-identical.

Linux only (the worker processes are found through /proc)."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from popdyn import config as C
from popdyn.experiments import Store, sweep
from popdyn.experiments import store as store_mod

from _stores import same_run

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

CFG = """
name = "stop"
[teacher]
link = "h2"
rank = 2
[student]
d = 6
m = 8
[init]
scale = 0.1
seeds = [0, 1, 2, 3]
[train]
method = "gd"
lr = 0.01
max_updates = {updates}
[schedule]
every = 2000
early = [1]
[store]
checkpoint_every = 1000
"""

_SCRIPT = """
import sys
from popdyn import config as C
from popdyn.experiments import sweep
sweep(C.loads(open(sys.argv[1]).read()), sys.argv[2], workers=2, progress=False)
"""


def _children(pid):
    out = []
    for st in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = st.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            out.append(int(st.parent.name))
    return out


def _alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start(tmp_path, updates=20000):
    (tmp_path / "c.toml").write_text(CFG.format(updates=updates))
    (tmp_path / "k.py").write_text(_SCRIPT)
    import popdyn
    src = os.path.dirname(os.path.dirname(popdyn.__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [src] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    store = tmp_path / "s"
    # as a shell starts a foreground job: SIGINT with its default action (a pytest-xdist worker
    # ignores SIGINT, and an ignored signal would be inherited by the child)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "k.py"), str(tmp_path / "c.toml"),
                             str(store)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # wait until both workers are inside a run (a first checkpoint exists) and are children
    deadline = time.time() + 300
    workers = []
    while time.time() < deadline and proc.poll() is None:
        workers = _children(proc.pid)
        runs = store / "runs"
        if len(workers) >= 2 and runs.is_dir() and any(runs.rglob("checkpoint*")):
            break
        time.sleep(0.05)
    assert proc.poll() is None and len(workers) >= 2, "the sweep did not start its two workers"
    return proc, workers, store


def _gone_within(pids, seconds):
    t0 = time.time()
    while time.time() - t0 < seconds:
        if not any(_alive(p) for p in pids):
            return time.time() - t0
        time.sleep(0.05)
    return None


def test_sigkill_of_the_sweep_process_leaves_no_worker(tmp_path):
    proc, workers, _ = _start(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    took = _gone_within(workers, 5.0)
    if took is None:                              # do not leave them running after a failure
        for p in workers:
            if _alive(p):
                os.kill(p, signal.SIGKILL)
    assert took is not None, "a worker outlived the killed sweep by more than 5 s"


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_interrupt_stops_a_two_worker_sweep_quickly_and_resumes_identically(tmp_path, how):
    proc, workers, store = _start(tmp_path)
    t0 = time.time()
    if how == "ctrl-c":                           # the terminal sends SIGINT to the group
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"the sweep did not stop within 5 s of {how}")
    stopped = time.time() - t0
    assert _gone_within(workers, 2.0) is not None, "a worker survived the stop"
    assert stopped < 5.0
    if how != "ctrl-c":
        return                                    # resume is checked once
    cfg = C.loads(CFG.format(updates=20000))
    st = Store(store)                             # reopening removes the stopped writers' temps
    assert not list(Path(store).rglob(".*.tmp"))
    res = sweep(cfg, st, workers=1, progress=False)
    assert res["ran"] + res["skipped"] == 4 and st.unfinished() == []
    fresh = tmp_path / "fresh"
    sweep(cfg, fresh, workers=1, progress=False)
    for k in st.keys():
        same_run(st, Store(fresh), k)


def test_stale_temporaries_removed_on_open_live_ones_kept(tmp_path):
    st = Store(tmp_path / "s")
    d = st.root / "runs" / "x"
    d.mkdir(parents=True)
    host = store_mod._HOST
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = d / f".record.json.{host}.{dead.pid}.0123456789ab.tmp"
    live = d / f".record.json.{host}.{os.getpid()}.0123456789ab.tmp"
    other = d / f".record.json.otherhost.{dead.pid}.0123456789ab.tmp"
    unrelated = d / ".notes.tmp"
    for p in (stale, live, other, unrelated):
        p.write_text("x")
    Store(st.root)
    assert not stale.exists()
    assert live.exists() and other.exists() and unrelated.exists()
    old = time.time() - store_mod.STALE_TMP_SECONDS - 10
    os.utime(other, (old, old))
    Store(st.root)
    assert not other.exists() and live.exists()


def test_atomic_write_temporaries_carry_host_and_pid(tmp_path, monkeypatch):
    seen = []
    real = os.replace

    def spy(a, b):
        seen.append(Path(a).name)
        return real(a, b)

    monkeypatch.setattr(os, "replace", spy)
    store_mod.atomic_write(tmp_path / "f.json", b"{}")
    (name,) = seen
    m = store_mod._TMP.match(name)
    assert m and m["host"] == store_mod._HOST and int(m["pid"]) == os.getpid()


def test_ctrl_c_stops_a_serial_sweep_at_once(tmp_path):
    """workers = 1 runs in the calling process: a Ctrl-C inside a run stops the sweep there
    (it is not taken for that run's failure while the next runs go on)."""
    import threading

    st = Store(tmp_path / "s")

    def interrupt():
        deadline = time.time() + 300
        while time.time() < deadline and not any(Path(st.root).rglob("checkpoint*")):
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    # Ctrl-C's default handler in this process (a pytest-xdist worker ignores SIGINT)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt, daemon=True).start()
        t0 = time.time()
        with pytest.raises(KeyboardInterrupt):
            sweep(C.loads(CFG.format(updates=20000)), st, workers=1, progress=False)
    finally:
        signal.signal(signal.SIGINT, old)
    assert len(st.keys()) == 0 and time.time() - t0 < 120
