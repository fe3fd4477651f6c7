"""The documentation: the Sphinx site builds with warnings as errors, every code block of the
README and of the docs pages runs as written, and the API reference lists every public name.

Code blocks (docs/index.md, "Code blocks on these pages", states the convention):

* fenced ``python`` blocks run, in order, the blocks of one page as one script, in a fresh
  temporary working directory; a block whose first line is ``# not run: <reason>`` is shown
  but not run (e.g. it needs a dask scheduler or an external package);
* ``{exec-python}`` blocks (the tutorial) also run while Sphinx reads the page
  (docs/_ext/execblocks.py); when Sphinx is installed the build test runs them, otherwise this
  module runs them like ``python`` blocks;
* ``console`` / ``bash`` blocks are shell commands (the README's set-up commands are what
  .ci/run and tests/test_wheel.py execute), ``text`` / ``toml`` / ``ini`` / ``json`` blocks are
  output or file contents; neither is run here;
* MyST directives (``{toctree}``, ``{note}``, ...) are markup; any other fence, or a
  ``{code-block}``, is an error, so that no block escapes the rule.
"""
from __future__ import annotations

import importlib.util
import io
import contextlib
import re
import zlib
from pathlib import Path

import pytest

import certify
import popdyn
import proofs_checks

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md"] + sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)
RUN = {"python", "{exec-python}"}
SHOWN = {"console", "bash", "text", "toml", "ini", "json"}
CODE_DIRECTIVES = {"{code-block}", "{code}", "{code-cell}", "{sourcecode}", "{literalinclude}"}
HAVE_SPHINX = all(importlib.util.find_spec(m) is not None
                  for m in ("sphinx", "numpydoc", "myst_parser"))
FENCE = re.compile(r"^(`{3,})\s*(\S*)(?:\s.*)?$")


def fenced_blocks(path: Path):
    """[(info, code, line)] of the fenced code blocks of a Markdown page."""
    out, lines, i = [], path.read_text(encoding="utf-8").splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group(1), m.group(2), i + 1
        j = start
        while j < len(lines) and lines[j].strip() != fence:
            j += 1
        if j == len(lines):
            raise AssertionError(f"{path.name}:{i + 1}: unclosed code fence")
        body = [ln for ln in lines[start:j] if not (info.startswith("{") and ln.startswith(":"))]
        out.append((info, "\n".join(body) + "\n", i + 1))
        i = j + 1
    return out


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_fences_follow_the_convention(page):
    for info, code, line in fenced_blocks(page):
        if info.startswith("{") and info not in RUN:
            assert info not in CODE_DIRECTIVES, f"{_rel(page)}:{line}: use a plain fence, not {info}"
            continue                  # a MyST directive (toctree, note, ...): not code
        assert info in RUN | SHOWN, (f"{_rel(page)}:{line}: fence {info!r} is neither run "
                                     f"({sorted(RUN)}) nor shown ({sorted(SHOWN)})")
        if info == "python" and code.startswith("# not run"):
            assert code.startswith("# not run: ") and len(code.splitlines()[0]) > 12, (
                f"{_rel(page)}:{line}: a block that is not run says why ('# not run: <reason>')")


def _runs_here(info, code):
    if info == "{exec-python}" and HAVE_SPHINX:
        return False                  # run by test_sphinx_build (the build executes them)
    return info in RUN and not code.startswith("# not run")


RUN_PAGES = [p for p in PAGES if any(_runs_here(i, c) for i, c, _ in fenced_blocks(p))]


@pytest.mark.parametrize("page", RUN_PAGES, ids=_rel)
def test_code_blocks_run_as_written(page, tmp_path, monkeypatch):
    """Every runnable block of the page, in order, as one script (tmp working directory)."""
    monkeypatch.chdir(tmp_path)
    ns = {"__name__": "__docs__"}
    for info, code, line in fenced_blocks(page):
        if _runs_here(info, code):
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(code, f"{_rel(page)}:{line}", "exec"), ns)


def test_readme_is_a_landing_page():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 120
    for must in ("Awakening of the Buddha", "arXiv 2609.39408", "LICENSE", "MIT"):
        assert must in text, must
    # the test command .ci/run executes is the README's, byte for byte
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    cmd = next(ln for ln in ci.splitlines() if ln.startswith("python3 -m venv"))
    assert cmd in text.splitlines()


# ------------------------------------------------------------------- the API reference
def _public():
    return ([("popdyn", n) for n in popdyn.__all__] + [("certify", n) for n in certify.__all__]
            + [("proofs_checks", n) for n in proofs_checks.__all__])


_DIRECTIVE = re.compile(r"^\.\. auto(?:class|function|data|exception)::\s+(\S+)", re.M)
_MODULE = re.compile(r"^\.\. module::\s+(\S+)", re.M)


def test_api_reference_source_lists_every_public_name():
    documented = set()
    for rst in (DOCS / "reference").glob("*.rst"):
        text = rst.read_text(encoding="utf-8")
        mod = _MODULE.search(text)
        for name in _DIRECTIVE.findall(text):
            documented.add(name if "." in name or mod is None else f"{mod.group(1)}.{name}")
    missing = [f"{m}.{n}" for m, n in _public() if f"{m}.{n}" not in documented]
    assert not missing, f"not in docs/reference/*.rst: {missing}"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``python -m sphinx -W --keep-going -b html docs OUT``, run in this process: the numba
    kernels this test process has compiled (and tests/conftest.py's compile lock) serve the
    tutorial's blocks too.  Returns (out, exit status, Sphinx's warnings, Python warnings
    raised by the code of this checkout)."""
    if not HAVE_SPHINX:
        pytest.skip("sphinx, numpydoc and myst-parser are not installed (the `test` extra has them)")
    import warnings

    from sphinx.cmd.build import build_main

    out = tmp_path_factory.mktemp("html")
    warnfile = out.parent / "sphinx-warnings.txt"
    with warnings.catch_warnings(record=True) as caught, \
            contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("always")
        status = build_main(["-W", "--keep-going", "-q", "-E", "-b", "html", "-w", str(warnfile),
                             str(DOCS), str(out)])
    # the checkout's own code (CI's virtual environment lives inside the checkout: its
    # site-packages are not ours)
    mine = tuple(str(ROOT / d) for d in ("popdyn", "certify", "proofs_checks", "docs"))
    ours = [f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}" for w in caught
            if str(w.filename).startswith(mine) or issubclass(w.category, popdyn.AccuracyWarning)]
    text = warnfile.read_text(encoding="utf-8") if warnfile.exists() else ""
    return out, status, text, ours


def test_sphinx_build(built):
    """The build passes with warnings as errors, and the tutorial ran (what it printed is on
    the page) without a Python warning from popdyn, certify or proofs_checks."""
    out, status, text, ours = built
    assert status == 0 and text.strip() == "", text[-4000:]
    assert not ours, ours
    html = (out / "tutorial.html").read_text(encoding="utf-8")
    assert html.count("exec-output") >= 5          # what the tutorial printed when it ran
    assert "plateau endpoint E =" in html


def _inventory(path: Path) -> set:
    raw = path.read_bytes()
    for _ in range(4):              # four header lines, then zlib-compressed entries
        raw = raw[raw.index(b"\n") + 1:]
    names = set()
    for line in zlib.decompress(raw).decode("utf-8").splitlines():
        name, role = line.split(" ", 2)[:2]
        if role.startswith("py:"):
            names.add(name)
    return names


def test_api_reference_lists_every_public_name(built):
    out, status, text, _ = built
    assert status == 0, text[-4000:]
    objects = _inventory(out / "objects.inv")
    missing = [f"{m}.{n}" for m, n in _public() if f"{m}.{n}" not in objects]
    assert not missing, f"documented objects missing from the built reference: {missing}"


# ------------------------------------------------------------------- licence and typing
def test_license_and_typed_markers():
    """LICENSE (MIT, as setup.cfg declares) and the PEP 561 ``py.typed`` markers, shipped as
    package data (tests/test_wheel.py builds the wheel; this checks the declarations)."""
    import configparser

    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg", encoding="utf-8")
    assert cfg["metadata"]["license"] == "MIT"
    data = cfg["options.package_data"]
    for pkg in ("popdyn", "certify", "proofs_checks"):
        assert (ROOT / pkg / "py.typed").is_file(), pkg
        assert "py.typed" in data.get(pkg, "").split(), pkg
    extra = cfg["options.extras_require"]["test"]
    for req in ("sphinx", "numpydoc", "myst-parser"):
        assert re.search(rf"^\s*{re.escape(req)}\b", extra, re.M), req
