"""Extension points used from outside the package: embedded configurations by name
(``popdyn configs``, ``popdyn run NAME``) and theorem checks registered by another installed
package through the entry-point group ``popdyn.checks``.

The external package is tests/_extpkg (a pyproject with the entry point, a hand-written link and
its check).  It is installed the way a wheel installer lays a pure-Python package out: the
package directory and a ``<name>-<version>.dist-info`` with METADATA and entry_points.txt, here
written into a temporary site directory put on PYTHONPATH of a subprocess (no network, no build
backend needed).
"""
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from popdyn import config as C
from popdyn._paths import config_source, data_path, embedded_configs
from popdyn.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXT = ROOT / "tests" / "_extpkg"


def _install(site: Path, project: Path, entry_points: dict | None = None) -> None:
    """Install the pure-Python project ``project`` into ``site`` as an installer would."""
    meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    eps = entry_points if entry_points is not None else meta.get("entry-points", {})
    for pkg in project.iterdir():
        if pkg.is_dir() and (pkg / "__init__.py").is_file():
            shutil.copytree(pkg, site / pkg.name, ignore=shutil.ignore_patterns("__pycache__"))
    di = site / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    di.mkdir(parents=True)
    (di / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {meta['name']}\n"
                                 f"Version: {meta['version']}\n")
    lines = []
    for group, items in eps.items():
        lines.append(f"[{group}]")
        lines += [f"{k} = {v}" for k, v in items.items()]
    (di / "entry_points.txt").write_text("\n".join(lines) + "\n")
    (di / "RECORD").write_text("")


def _popdyn(args, site, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    return subprocess.run([sys.executable, "-m", "popdyn.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_external_check_is_listed_and_runs(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _install(site, EXT)
    r = _popdyn(["check", "--list"], site, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "user_link_g_half" in r.stdout and "plateau_alignment" in r.stdout
    assert "warning" not in r.stderr
    r = _popdyn(["check", "user_link_g_half", "--brief"], site, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "[PASS] user_link_g_half" in r.stdout
    # the hand-written link agrees with the closed form far inside the check's 1e-10
    line = next(ln for ln in r.stdout.splitlines() if "measured bracket" in ln)
    dev = float(line.split("[")[1].split(",")[0])
    assert 0 <= dev <= 1e-12


def test_broken_plugin_is_reported_not_fatal(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _install(site, EXT, {"popdyn.checks": {"ext_demo": "popdyn_ext_demo.checks",
                                           "broken": "popdyn_ext_demo.no_such_module"}})
    r = _popdyn(["check", "--list"], site, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "user_link_g_half" in r.stdout
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and "entry point broken = popdyn_ext_demo.no_such_module" in err[0]
    assert "ModuleNotFoundError" in err[0]


def test_embedded_configs_listed_and_shown_outside_the_checkout(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "popdyn.cli", "configs"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    names = set(embedded_configs())
    assert {"paper_smoke", "h3_rank1", "paper/table1", "paper/table2"} <= names
    listed = {ln.split()[0] for ln in r.stdout.splitlines()[1:]}
    assert listed == names
    assert any(ln.split()[:3] == ["paper/table1", "1050", "runs"] for ln in r.stdout.splitlines())
    # the listed counts (read from the plain TOML) are the sweeps' sizes
    counts = {ln.split()[0]: ln.split()[1] for ln in r.stdout.splitlines()[1:]}
    for name in ("h3_rank1", "paper_smoke", "paper/table3_rank2", "paper/table6_links"):
        assert counts[name] == str(len(C.expand(C.load(name))))
    assert counts["paper/paper_values"] == "settings"
    r = subprocess.run([sys.executable, "-m", "popdyn.cli", "configs", "show", "paper_smoke"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout == data_path("configs", "paper_smoke.toml").read_text()


def test_config_names_resolve_and_bad_names_say_the_choices(tmp_path, capsys):
    by_name = C.load("h3_rank1")
    by_path = C.load(ROOT / "data" / "configs" / "h3_rank1.toml")
    assert by_name == by_path
    assert C.load("paper/table2.toml") == C.load(ROOT / "data" / "configs" / "paper" / "table2.toml")
    # an existing file wins over an embedded name
    (tmp_path / "h3_rank1").write_text('name = "local"\n' + (ROOT / "data" / "configs"
                                                             / "smoke.toml").read_text()
                                       .replace('name = "smoke"', ""))
    assert config_source(tmp_path / "h3_rank1")[0] == str(tmp_path / "h3_rank1")
    with pytest.raises(FileNotFoundError, match="Did you mean 'h3_rank1'"):
        C.load("h3_rank")
    assert main(["sweep", "h3_rank", "--store", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "embedded:" in err and "paper_smoke" in err
    assert main(["configs", "show"]) == 2
    assert main(["configs", "bogus"]) == 2


def test_run_accepts_an_embedded_name(monkeypatch, capsys):
    seen = {}

    def stop(cfg, *a, **k):
        seen["name"] = cfg["name"]
        raise KeyboardInterrupt

    monkeypatch.setattr("popdyn.experiments.sweep", stop)
    assert main(["run", "h3_rank1"]) == 130
    assert seen["name"] == "h3_rank1"
    assert "popdyn run: h3_rank1  (h3_rank1)" in capsys.readouterr().out


RAMP_CFG = """
name = "ramp_demo"
[teacher]
kind = "ramp"
V = [1.0, 0.5]
rank = 2
[student]
d = 4
m = 4
[init]
scale = 0.1
seeds = [0]
[train]
method = "gd"
lr = 0.5
max_updates = 20
[diagnostics]
certify = false
"""


def test_external_teacher_kind_from_a_configuration(tmp_path):
    """A teacher kind of another package (entry point popdyn.teachers) is named in a
    configuration and swept by worker processes that did not import it themselves."""
    site = tmp_path / "site"
    site.mkdir()
    _install(site, EXT)
    (tmp_path / "ramp.toml").write_text(RAMP_CFG)
    r = _popdyn(["sweep", "ramp.toml", "--store", "st", "--workers", "2", "--quiet"], site,
                tmp_path)
    assert r.returncode == 0, r.stderr
    assert "1 runs in st: 1 computed" in r.stdout and "horizon" in r.stdout
    # its exact moments against Monte Carlo, in a process that has the plugin installed
    code = ("import numpy as np, popdyn.config as C\n"
            "T = C.teacher_from_table({'kind': 'ramp', 'V': [1.0, 0.5], 'rank': 2}, 4)\n"
            "X = np.random.default_rng(0).standard_normal((400000, 4)); y = T(X)\n"
            "print((y.mean() - T.mean) / (y.std() / 400000 ** 0.5), T.describe()['kind'])\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    z, kind = r.stdout.split()
    assert kind == "ramp" and abs(float(z)) < 5


def test_unknown_teacher_kind_names_the_choices():
    # (kinds registered by other tests of the same process, e.g. the docs' ramp, follow)
    with pytest.raises(C.ConfigError, match=r"kind must be one of \['additive', 'network', "
                                            r"'gated'.*Did you mean 'gated'"):
        C.expand(C.loads(RAMP_CFG.replace('kind = "ramp"', 'kind = "gatd"')
                         .replace("V = [1.0, 0.5]\n", "")))
