"""Figures from a store (matplotlib, Agg canvas) and the clear error when matplotlib is missing."""
import builtins

import pytest

from popdyn import config as C
from popdyn.cli import main
from popdyn.experiments import sweep

# its module-scoped fixture is expensive: keep the module on one xdist worker
# (--dist loadfile in pyproject.toml), so the fixture is built once
pytestmark = pytest.mark.xdist_group("figure_store")

CFG = """
[teacher]
link = "h2"
rank = 2
[student]
d = 4
m = 4
[init]
scale = 0.1
seeds = [0, 1]
[train]
method = "flow"
eps = 0.1
max_updates = 30
[schedule]
every = 5
early = [1, 2]
[diagnostics]
certify = false
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("fig") / "s"
    sweep(C.loads(CFG), d, workers=1, progress=False)
    return d


@pytest.mark.parametrize("x", ["log_updates", "time"])
def test_figure_written(store, tmp_path, x):
    pytest.importorskip("matplotlib")
    out = tmp_path / f"f_{x}.png"
    assert main(["figure", "--store", str(store), "--out", str(out), "--x", x]) == 0
    assert out.stat().st_size > 10_000
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_figure_without_matplotlib(store, tmp_path, monkeypatch, capsys):
    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("No module named 'matplotlib'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    assert main(["figure", "--store", str(store), "--out", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "`figures` extra (pip install '.[figures]'" in err and "pip install matplotlib" in err
    assert not (tmp_path / "x.png").exists()


def test_table_without_certification(store):
    from popdyn.experiments import table
    md = table(store, "md")
    assert "| h2 r=2 | 2 |" in md and md.count("\n| ") == 1
    row = next(ln for ln in md.splitlines() if ln.startswith("| h2"))
    assert row.split(" | ")[7:9] == ["–", "–"]           # no certified columns without certify


def test_popdyn_run_end_to_end(tmp_path, capsys):
    """`popdyn run CONFIG`: sweep + table + figure + the plateau_alignment verdict; the config's
    teacher is outside the theorem's family, so the check's cohort is added with the same
    student, initialization and integrator."""
    pytest.importorskip("matplotlib")
    cfg = tmp_path / "c.toml"
    cfg.write_text(CFG.replace("certify = false", "certify = true"))
    out = tmp_path / "run.png"
    assert main(["run", str(cfg), "--store", str(tmp_path / "s"), "--out", str(out),
                 "--workers", "1"]) == 0
    text = capsys.readouterr().out
    assert "| h2 r=2 | 2 |" in text and "damped_cubic:0.5 r=1 (plateau_alignment)" in text
    assert out.exists()
    assert "plateau_alignment" in text and ("[FAIL]" in text or "[PASS]" in text
                                            or "[UNDECIDED]" in text)
    # rerun on the same store: nothing recomputed
    assert main(["run", str(cfg), "--store", str(tmp_path / "s"), "--out", str(out)]) == 0
    assert "0 computed" in capsys.readouterr().out


def test_figure_axes_are_shared_and_labelled(tmp_path, monkeypatch):
    """Two cohorts of different lengths share one updates axis; the r/d line is in the legend;
    two seeds give min–max bands and the note says so; the loss row names MSE = 2L."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from popdyn.experiments import figure

    cfg = CFG.replace('[teacher]\nlink = "h2"\nrank = 2',
                      '[[teachers]]\nlink = "h2"\nrank = 2\n[[teachers]]\nlink = "h3"\nrank = 1')
    d = tmp_path / "s"
    sweep(C.loads(cfg), d, workers=1, progress=False)
    seen = {}
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: seen.setdefault("fig", self))
    figure(d, tmp_path / "f.png")
    fig = seen["fig"]
    axes = fig.axes
    grid = [ax for ax in axes if ax.get_label() != "<colorbar>"]
    lims = {tuple(round(v, 9) for v in ax.get_xlim()) for ax in grid[:8]}
    assert len(lims) == 1
    bottom = next(ax for ax in grid if ax.get_xlabel().startswith("updates n"))
    fig.canvas.draw() if hasattr(fig.canvas, "draw") else None
    labels = [t.get_text() for t in bottom.get_xticklabels()]
    assert labels[0] == "0" and labels[-1] == "30"
    assert "MSE / V_Y" in grid[0].get_ylabel()
    legend_texts = [t.get_text() for ax in grid for leg in [ax.get_legend()] if leg
                    for t in leg.get_texts()]
    assert "r/d (isotropic)" in legend_texts
    assert "min–max bands" in fig._suptitle.get_text()
