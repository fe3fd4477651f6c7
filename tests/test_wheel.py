"""The wheel, as a user gets it: built from this checkout, installed into a fresh virtual
environment, used from a directory outside the checkout.

* The wheel lists every configuration (``data/configs/**/*.toml``, subdirectories included)
  and link table (``data/links/*.npz``) of the checkout under ``popdyn/_data``, every package
  of the checkout, and no test reference (``data/refs``).
* In the fresh environment ``popdyn`` is imported from that environment's site-packages (never
  from the checkout, which is not on ``sys.path``), its data come from the installed
  ``popdyn/_data``, ``Teacher.additive("tanh", ...)`` reads the installed link table,
  ``popdyn --version`` and ``popdyn run --help`` answer, and ``popdyn run`` of a small
  configuration (one seed, d = m = 4) writes its store, table, figure and check verdict.
* The compile notice: printed by the first ``popdyn run`` (the new environment's numba cache
  is cold).  The two ``popdyn run`` calls run with ``NUMBA_DISABLE_JIT=1``: the kernels as
  plain Python give the same output on this small configuration (checked when this was
  changed) in seconds, where compiling them in the fresh environment took 2.5 to 5 minutes of
  one core — most of the suite's 10-minute budget.  So the cache stays cold and the warm-cache
  half of the notice's behaviour is tested by ``test_cli_usability``'s
  ``test_compile_notice_only_on_a_cold_cache``; the kernels' compilation itself is exercised by
  every other test.

The dependencies (numpy, numba, ...) are not reinstalled: the new environment is created
without them and a ``.pth`` file adds the test interpreter's site-packages directories *after*
its own (a path line of a .pth file adds the directory but does not run the .pth files in it,
so an editable install of the checkout stays invisible).  Cost: a wheel build (~10 s) and two
small runs without JIT (a few seconds each); the test is moved to the front of the collection
(tests/conftest.py) so that it overlaps the rest of the suite on the other xdist worker.
"""
import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SMALL = """\
name = "wheel_smoke"

[teacher]
kind = "additive"
link = "damped_cubic:0.5"
rank = 1

[student]
d = 4
m = 4
activation = "relu"

[init]
scale = 0.01
seeds = [0]

[train]
method = "flow"
loss_target = 0.5
max_updates = 2000

[diagnostics]
kinds = ["same_budget"]
certify = true
certify_kinds = ["same_budget"]
"""


def _run(args, cwd, env, timeout=900):
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.wheel
def test_wheel_installs_and_runs_outside_the_checkout(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR", "POPDYN_NO_CACHE")}
    # -- build (no build isolation: setuptools and wheel of the test environment, no index)
    house = tmp_path / "wheelhouse"
    r = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
              "-w", house, ROOT], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    (whl,) = house.glob("popdyn-*.whl")
    names = set(zipfile.ZipFile(whl).namelist())
    data = ROOT / "data"
    shipped = sorted(data.glob("configs/**/*.toml")) + sorted(data.glob("links/*.npz"))
    assert len(shipped) >= 8
    for p in shipped:
        assert "popdyn/_data/" + p.relative_to(data).as_posix() in names, p
    assert not any("refs/" in n or "_precompute" in n for n in names)
    for init in sorted(ROOT.glob("*/**/__init__.py")):
        rel = init.relative_to(ROOT)
        if rel.parts[0] in ("popdyn", "certify", "proofs_checks"):
            assert rel.as_posix() in names, f"package {rel.parent} missing from setup.cfg"
    # -- a fresh environment: the wheel inside, the dependencies of this one behind it
    envdir = tmp_path / "venv"
    venv.create(envdir, with_pip=False, symlinks=True)
    py = envdir / "bin" / "python"
    purelib = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        cwd=tmp_path, env=env).stdout.strip())
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    assert not any(Path(d).resolve() == ROOT for d in deps)
    # install first, then expose the dependencies (with them visible, pip would find a
    # non-editable popdyn of the test environment "already satisfied" and install nothing)
    r = _run([sys.executable, "-m", "pip", "--python", py, "install", "--no-deps", "--no-index",
              "-q", whl], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert (purelib / "popdyn" / "_data" / "configs" / "smoke.toml").is_file()
    assert (purelib / "popdyn" / "_data" / "configs" / "paper_smoke.toml").is_file()
    (purelib / "_popdyn_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    out = tmp_path / "elsewhere"
    out.mkdir()
    probe = (
        "import sys, numpy as np, popdyn, popdyn._paths as P\n"
        f"root = {str(ROOT)!r}\n"
        "assert not any(p and root == __import__('os').path.realpath(p) for p in sys.path), sys.path\n"
        "print(popdyn.__file__); print(P.data_root())\n"
        "print(popdyn.Teacher.additive('tanh', np.eye(3)[:1]).variance)\n")
    r = _run([py, "-c", probe], cwd=out, env=env)
    assert r.returncode == 0, r.stderr
    mod, root, var = r.stdout.split()
    assert Path(mod).is_relative_to(purelib) and Path(root) == purelib / "popdyn" / "_data"
    assert 0.3 < float(var) < 0.5            # E[tanh(z)²] - E[tanh(z)]² = 0.394...
    popdyn = envdir / "bin" / "popdyn"
    r = _run([popdyn, "--version"], cwd=out, env=env)
    assert r.returncode == 0 and r.stdout.strip().startswith("popdyn ")
    r = _run([popdyn, "run", "--help"], cwd=out, env=env)
    assert r.returncode == 0 and r.stdout.startswith("usage: popdyn run")
    # -- one small configuration, twice (kernels as plain Python: see the module docstring);
    # the compile notice on the fresh environment's cold cache
    (out / "small.toml").write_text(SMALL)
    notice = "compiling numeric kernels once"
    nojit = dict(env, NUMBA_DISABLE_JIT="1")
    for first in (True, False):
        r = _run([popdyn, "run", "small.toml", "--store", "st", "--out", "fig.png",
                  "--workers", "1"], cwd=out, env=nojit)
        assert r.returncode == 0, r.stderr
        if first:
            assert notice in r.stderr, r.stderr
        assert "| damped_cubic:0.5 r=1 |" in r.stdout and "plateau_alignment" in r.stdout
        assert (out / "fig.png").stat().st_size > 0 and (out / "st" / "store.json").is_file()
    assert "1 runs: 0 computed, 1 already stored" in r.stdout
