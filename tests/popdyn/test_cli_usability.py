"""What a new user meets at the command line and in a store: version and help, one-line errors
for bad store paths and scheduler addresses, no store folder for bad input, the wording of an
interrupted run, file modes, progress on non-terminal streams, the compile notice, and the
table / show output ("no store folder for a config that fails validation" is in
test_sweep_store.py::test_bad_configs)."""
import io
import os
import stat

import pytest

from popdyn import _notice
from popdyn import config as C
from popdyn.cli import main
from popdyn.experiments import sweep
from popdyn.experiments.store import Store, atomic_write

sweep_mod = __import__("popdyn.experiments.sweep", fromlist=["_Progress"])   # the module

CFG = """
[teacher]
link = "h2"
rank = 2
[student]
d = 4
m = 4
[init]
scale = 0.1
seeds = [0]
[train]
method = "flow"
eps = 0.1
max_updates = 20
[diagnostics]
certify = false
"""


def test_version_and_plain_help(capsys):
    from popdyn import __version__
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"popdyn {__version__}"
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    desc = out.split("\n\n")[1]
    assert desc == "The popdyn command line." and "``" not in out


def test_store_path_under_a_file_is_one_line(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    (tmp_path / "c.toml").write_text(CFG)
    assert main(["sweep", str(tmp_path / "c.toml"), "--store", str(f / "sub")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file, not a directory" in err and "Traceback" not in err


@pytest.mark.parametrize("address", ["nonsense", "tcp://host", "http://host:8786", "host:port"])
def test_bad_scheduler_address_fails_at_once(tmp_path, capsys, address):
    import time
    (tmp_path / "c.toml").write_text(CFG)
    t0 = time.perf_counter()
    assert main(["sweep", str(tmp_path / "c.toml"), "--store", str(tmp_path / "s"),
                 "--scheduler", address]) == 2
    assert time.perf_counter() - t0 < 2.0              # no connection attempt, no dask retry
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "`scheduler` must be a dask scheduler address" in err
    assert repr(address) in err and not (tmp_path / "s").exists()


def test_interrupted_temporary_store_says_it_was_deleted(monkeypatch, capsys, tmp_path):
    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr("popdyn.experiments.sweep", boom)
    (tmp_path / "c.toml").write_text(CFG)
    assert main(["run", str(tmp_path / "c.toml")]) == 130
    err = capsys.readouterr().err
    assert "temporary store was deleted" in err and "--store DIR" in err
    assert "rerun to resume" not in err
    assert main(["run", str(tmp_path / "c.toml"), "--store", str(tmp_path / "kept")]) == 130
    assert "finished runs are stored, rerun to resume" in capsys.readouterr().err


def test_store_files_honour_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "a.json", b"{}")
        assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644
        os.umask(0o077)
        atomic_write(tmp_path / "b.json", b"{}")
        assert stat.S_IMODE((tmp_path / "b.json").stat().st_mode) == 0o600
    finally:
        os.umask(old)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_progress_on_a_non_terminal_stream(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(sweep_mod.time, "perf_counter", lambda: clock[0])
    buf = io.StringIO()
    bar = sweep_mod._Progress(1000, 0, stream=buf, every=10.0)
    assert buf.getvalue().count("\n") == 1                 # the start line
    clock[0] = 5.0
    bar.step()
    bar.tick()
    assert buf.getvalue().count("\n") == 1                 # < 10 s and < 10%: quiet
    clock[0] = 10.5
    bar.tick()                                              # no run finished, 10 s passed
    assert buf.getvalue().count("\n") == 2 and "1/1000 runs" in buf.getvalue()
    clock[0] = 21.0
    bar.step()                                              # a run finished after 10 s
    assert buf.getvalue().count("\n") == 3 and "2/1000 runs" in buf.getvalue()


def test_compile_notice_only_on_a_cold_cache(tmp_path, monkeypatch):
    kernels = tmp_path / "_kernels"
    (kernels / "__pycache__").mkdir(parents=True)
    (kernels / "fused.py").write_text("")
    monkeypatch.setattr(_notice, "_KERNELS", kernels)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.delenv("POPDYN_NO_CACHE", raising=False)
    assert _notice.cache_is_cold()
    monkeypatch.setattr(_notice, "_done", False)
    buf = io.StringIO()
    assert _notice.compile_notice(buf) and "compiling numeric kernels once" in buf.getvalue()
    _notice.quiet()
    assert not _notice.compile_notice(buf)                  # once per process
    (kernels / "__pycache__" / "other.f-1.py311.nbi").write_text("")
    assert _notice.cache_is_cold()                          # not one of popdyn's kernels
    (kernels / "__pycache__" / "fused.pl_gd-10.py311.nbi").write_text("")
    assert not _notice.cache_is_cold()
    monkeypatch.setattr(_notice, "_done", False)
    assert not _notice.compile_notice(io.StringIO())
    monkeypatch.setenv("POPDYN_NO_CACHE", "1")
    assert _notice.cache_is_cold()


def test_compile_heartbeat_until_quiet():
    """While kernels compile, a line every period; none after quiet() (the progress bar's)."""
    import time

    buf = io.StringIO()
    _notice._start_heartbeat(buf, every=0.05)
    time.sleep(0.6)
    _notice.quiet()
    time.sleep(0.1)
    n = buf.getvalue().count("still compiling numeric kernels")
    assert n >= 3
    time.sleep(0.3)
    assert buf.getvalue().count("still compiling numeric kernels") == n


def test_progress_redraws_a_terminal_line_with_the_elapsed_time():
    from popdyn.experiments.sweep import _Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    buf = Tty()
    p = _Progress(3, 0, stream=buf, every=0.05)
    first = buf.getvalue()
    assert first.startswith("\r[") and "0/3 runs" in first
    import time
    time.sleep(0.1)
    p.tick()                                  # no run finished: the line is redrawn anyway
    assert buf.getvalue().count("\r") == 2


def test_serial_sweep_steps_the_bar_after_each_run(tmp_path):
    """workers = 1 runs each run inside submit: the bar counts them one by one."""
    from popdyn import config as C
    from popdyn.experiments.sweep import sweep

    (tmp_path / "c.toml").write_text(CFG.replace("seeds = [0]", "seeds = [0, 1, 2]"))
    cfg = C.load(tmp_path / "c.toml")
    n = len(C.expand(cfg))
    buf = io.StringIO()
    import contextlib
    with contextlib.redirect_stderr(buf):
        sweep(cfg, tmp_path / "s", workers=1, progress=True)
    lines = [ln for ln in buf.getvalue().splitlines() if " runs (" in ln]
    assert [ln.split()[1] for ln in lines][:n + 1] == [f"{i}/{n}" for i in range(n + 1)]


def test_table_caption_defines_E_and_show_keeps_headers(tmp_path):
    from popdyn.experiments import show, table
    st = tmp_path / "s"
    cfg = C.loads(CFG.replace("certify = false", 'certify = false\nkinds = ["unrestricted", "same_budget"]'))
    sweep(cfg, st, workers=1, progress=False)
    md = table(st, "md")
    assert "E: plateau endpoint, the last update of each run's δ-prefix" in md
    tex = table(st, "latex")
    assert "δ" not in tex and "ℓ" not in tex
    key = Store(st, create=False).keys()[0]
    header = show(st, key).splitlines()
    cols = next(line for line in header if line.strip().startswith("n ")).split()
    assert len(cols) == len(set(cols)) and "R_same_budget_lo" in cols and "R_same_budget" in cols
