"""The package layers point one way: certify and proofs_checks build on popdyn, never back.

* popdyn never imports certify or proofs_checks: no ``import`` / ``from ... import`` of them at
  any level (module, function, ``TYPE_CHECKING`` block), and no dynamic import naming them
  (``importlib.import_module("certify...")``, ``__import__``).  Dynamic imports of a name held in
  data are allowed only in :mod:`popdyn.plugins`, the registry through which popdyn reaches the
  services certify and proofs_checks provide (entry points, else a module name from its table);
  elsewhere only string literals naming popdyn's own modules.
* certify and proofs_checks use only public popdyn names: no module path with a component that
  starts with an underscore (``popdyn._validate``, ``popdyn.gauge._sweep``), no imported object
  whose name starts with one, and no attribute access ``<popdyn module>._name``.

Run as a script with a checkout's root to list the violations there::

    python tests/test_layers.py /path/to/checkout
"""
from __future__ import annotations

import ast
import os
import sys

ROOT = os.environ.get("POPDYN_LAYERS_ROOT") or os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))
HIGH = ("certify", "proofs_checks")
#: the one popdyn module allowed to import modules by name at run time (the plugin registry)
REGISTRY = "popdyn.plugins"
DYNAMIC = ("import_module", "__import__")


def _modules(root: str, pkg: str) -> dict[str, str]:
    """Module name -> file path of every ``.py`` file under ``root/pkg``."""
    out = {}
    for d, _, files in os.walk(os.path.join(root, pkg)):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(d, f)
                rel = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                out[rel[:-9] if rel.endswith(".__init__") else rel] = path
    return out


def _tree(path: str) -> ast.Module:
    with open(path, encoding="utf-8") as fh:
        return ast.parse(fh.read(), filename=path)


def _absolute(mod: str, path: str, node: ast.ImportFrom) -> str:
    """The absolute module of a ``from ... import`` (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    pkg = mod if path.endswith("__init__.py") else mod.rsplit(".", 1)[0]
    parts = pkg.split(".")
    up = parts[: len(parts) - (node.level - 1)]
    return ".".join(up + ([node.module] if node.module else []))


def _dynamic_imports(tree: ast.Module):
    """(line, first argument or None when not a string literal) of every call of a function
    named ``import_module`` or ``__import__``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in DYNAMIC:
                arg = node.args[0] if node.args else None
                lit = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
                yield node.lineno, lit


def upward_imports(root: str = ROOT) -> list[str]:
    """Every place where a popdyn module imports certify or proofs_checks."""
    bad = []
    for mod, path in _modules(root, "popdyn").items():
        tree = _tree(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [_absolute(mod, path, node)]
            else:
                continue
            for n in names:
                if n.split(".")[0] in HIGH:
                    bad.append(f"{mod}:{node.lineno}: imports {n}")
        for line, lit in _dynamic_imports(tree):
            if lit is not None and lit.split(".")[0] in HIGH:
                bad.append(f"{mod}:{line}: imports {lit!r} by name")
            elif lit is not None and lit.split(".")[0] == "popdyn":
                continue              # a literal name of popdyn's own module: no layer crossed
            elif mod != REGISTRY:
                bad.append(f"{mod}:{line}: dynamic import outside {REGISTRY}")
    return bad


def _private(dotted: str) -> bool:
    return any(p.startswith("_") and not (p.startswith("__") and p.endswith("__"))
               for p in dotted.split("."))


def private_uses(root: str = ROOT) -> list[str]:
    """Every place where certify or proofs_checks uses a private popdyn name."""
    bad = []
    for pkg in HIGH:
        for mod, path in _modules(root, pkg).items():
            tree = _tree(path)
            aliases: dict[str, str] = {}       # local name -> popdyn module it is bound to
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    for a in node.names:
                        if a.name.split(".")[0] == "popdyn":
                            if _private(a.name):
                                bad.append(f"{mod}:{node.lineno}: imports {a.name}")
                            aliases[a.asname or "popdyn"] = a.name if a.asname else "popdyn"
                elif isinstance(node, ast.ImportFrom):
                    base = _absolute(mod, path, node)
                    if base.split(".")[0] != "popdyn":
                        continue
                    if _private(base):
                        bad.append(f"{mod}:{node.lineno}: imports from {base}")
                    for a in node.names:
                        if _private(a.name):
                            bad.append(f"{mod}:{node.lineno}: imports {base}.{a.name}")
                        aliases[a.asname or a.name] = f"{base}.{a.name}"
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and _private(node.attr):
                    v = node.value
                    chain = [node.attr]
                    while isinstance(v, ast.Attribute):
                        chain.append(v.attr)
                        v = v.value
                    if isinstance(v, ast.Name) and v.id in aliases:
                        bad.append(f"{mod}:{node.lineno}: uses "
                                   f"{aliases[v.id]}.{'.'.join(reversed(chain))}")
            for line, lit in _dynamic_imports(tree):
                if lit is not None and lit.split(".")[0] == "popdyn" and _private(lit):
                    bad.append(f"{mod}:{line}: imports {lit!r} by name")
    return sorted(set(bad))


def test_popdyn_never_imports_certify_or_proofs_checks():
    bad = upward_imports()
    assert not bad, "popdyn reaches up a layer:\n" + "\n".join(bad)


def test_certify_and_proofs_checks_use_public_popdyn_names():
    bad = private_uses()
    assert not bad, "private popdyn names used from above:\n" + "\n".join(bad)


def test_detectors_are_not_vacuous(tmp_path):
    """Each kind of violation in a small synthetic tree is reported, and clean code is not."""
    (tmp_path / "popdyn" / "sub").mkdir(parents=True)
    (tmp_path / "certify").mkdir()
    (tmp_path / "proofs_checks").mkdir()
    (tmp_path / "popdyn" / "__init__.py").write_text("from . import sub\nimport numpy\n")
    (tmp_path / "popdyn" / "sub" / "__init__.py").write_text("")
    (tmp_path / "popdyn" / "sub" / "a.py").write_text(
        "def f():\n    from certify import loss\n    return loss\n")
    (tmp_path / "popdyn" / "sub" / "b.py").write_text(
        "import typing\nif typing.TYPE_CHECKING:\n    import proofs_checks.cli\n")
    (tmp_path / "popdyn" / "sub" / "c.py").write_text(
        "import importlib\nm = importlib.import_module('certify.gauge')\n")
    (tmp_path / "popdyn" / "sub" / "d.py").write_text(
        "import importlib\nname = 'x'\nm = importlib.import_module(name)\n")
    (tmp_path / "popdyn" / "plugins.py").write_text(
        "import importlib\nname = 'x'\nm = importlib.import_module(name)\n")
    (tmp_path / "certify" / "__init__.py").write_text(
        "from popdyn import _validate as V\nfrom popdyn.gauge._sweep import MAX\n"
        "from popdyn.objective import _check, population_loss\nimport popdyn.gauge as G\n"
        "x = G._slow\ny = G.decompose\nimport popdyn\nz = popdyn.__version__\n")
    (tmp_path / "proofs_checks" / "__init__.py").write_text(
        "from popdyn.gauge import decompose\nfrom popdyn import gauge\n"
        "def f():\n    from popdyn.links import _hermite_monomials\n    return gauge._bracket\n")
    up = upward_imports(str(tmp_path))
    assert up == ["popdyn.sub.a:2: imports certify", "popdyn.sub.b:3: imports proofs_checks.cli",
                  "popdyn.sub.c:2: imports 'certify.gauge' by name",
                  "popdyn.sub.d:3: dynamic import outside popdyn.plugins"]
    assert private_uses(str(tmp_path)) == [
        "certify:1: imports popdyn._validate",
        "certify:2: imports from popdyn.gauge._sweep",
        "certify:3: imports popdyn.objective._check",
        "certify:5: uses popdyn.gauge._slow",
        "proofs_checks:4: imports popdyn.links._hermite_monomials",
        "proofs_checks:5: uses popdyn.gauge._bracket",
    ]


if __name__ == "__main__":  # pragma: no cover
    root = sys.argv[1] if len(sys.argv) > 1 else ROOT
    found = upward_imports(root) + private_uses(root)
    print("\n".join(found) if found else "no violation")
    sys.exit(1 if found else 0)
