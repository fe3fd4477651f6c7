"""The proofs_checks framework: verdicts, decision rules and the registry of named checks.

A *check* is a function of keyword settings returning a :class:`Verdict`.  It is registered with
:func:`register` under a name, with its ``quick`` settings (CI: the whole ``--all --quick`` runs
in well under two minutes on two cores) and its ``full`` settings (for a paper).  A verdict is
always one of ``pass`` / ``fail`` / ``undecided`` (STYLE 7: never a falsy "maybe"); it carries
the theorem's constant, the measured bracket [lo, hi] and how it was obtained (``rigorous`` or
``numerical``), the margin (positive = by how much it passes; negative = by how much it fails),
and the exact settings used.  Composite checks hold their parts in ``parts``; a part with
``role="control"`` is reported but does not enter the verdict.
"""
from __future__ import annotations

import difflib
import json
import math
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence, TypeVar

VERDICTS = ("pass", "fail", "undecided")
PROVENANCES = ("rigorous", "numerical")
ROLES = ("claim", "control")
KINDS = ("at_most", "at_least", "within", "contains")


@dataclass(frozen=True)
class Verdict:
    """The outcome of a check (or of one part of it).

    Attributes
    ----------
    name : str
        Check (or part) name.
    verdict : {"pass", "fail", "undecided"}
    statement : str
        What is being checked, in words, with the decision rule.
    constant : float
        The theorem's constant the bracket is compared with (a tolerance, an exponent, a ratio…).
    bracket : (float, float)
        The measured bracket [lo, hi].
    provenance : {"rigorous", "numerical"}
        How the bracket was obtained (docs/design.md §6): never call a numerical bracket rigorous.
    margin : float
        Signed distance to the decision boundary: > 0 passes by that much, < 0 fails by that
        much; for ``undecided`` the (negative) amount by which the bracket crosses the boundary.
    settings : dict
        The exact settings used (plain data).
    kind : {"at_most", "at_least", "within", "contains"}
        Decision rule: bracket ≤ constant, ≥ constant, within constant ± tol, or the bracket
        contains the constant (a reference value).
    tol : float or None
        Half-width of the band for ``kind="within"``.
    role : {"claim", "control"}
    parts : tuple of Verdict
    notes : tuple of str
        Free-form lines (tables, measured values) printed with the report.
    elapsed : float
        Wall time in seconds.
    """

    name: str
    verdict: str
    statement: str
    constant: float
    bracket: tuple
    provenance: str
    margin: float
    settings: dict = field(default_factory=dict)
    kind: str = "at_most"
    tol: float | None = None
    role: str = "claim"
    parts: tuple = ()
    notes: tuple = ()
    elapsed: float = 0.0

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"`verdict` must be one of {VERDICTS}, got {self.verdict!r}")
        if self.provenance not in PROVENANCES:
            raise ValueError(f"`provenance` must be one of {PROVENANCES}, got {self.provenance!r}")
        if self.role not in ROLES:
            raise ValueError(f"`role` must be one of {ROLES}, got {self.role!r}")
        if self.kind not in KINDS:
            raise ValueError(f"`kind` must be one of {KINDS}, got {self.kind!r}")
        lo, hi = self.bracket
        if not lo <= hi:
            raise ValueError(f"`bracket` must satisfy lo <= hi, got {self.bracket!r}")
        object.__setattr__(self, "bracket", (float(lo), float(hi)))

    def replace(self, **kw: Any) -> "Verdict":
        return replace(self, **kw)

    @property
    def rule(self) -> str:
        if self.kind == "at_most":
            return f"pass iff bracket ⊂ (-inf, {self.constant:.6g}]"
        if self.kind == "at_least":
            return f"pass iff bracket ⊂ [{self.constant:.6g}, inf)"
        if self.kind == "contains":
            return f"pass iff {self.constant:.8g} ∈ bracket"
        assert self.tol is not None          # kind "within" has a tol (make_verdict)
        return f"pass iff bracket ⊂ [{self.constant - self.tol:.6g}, {self.constant + self.tol:.6g}]"

    def report(self, indent: int = 0, *, notes: bool = True) -> str:
        """A printable multi-line report (settings, constant, bracket, margin, parts and — unless
        ``notes`` is False — the notes: tables and measured values)."""
        pad = " " * indent
        lo, hi = self.bracket
        head = f"{pad}[{self.verdict.upper()}] {self.name}"
        if self.role == "control":
            head += "  (control: reported, not part of the verdict)"
        if self.elapsed:
            head += f"  ({self.elapsed:.2f} s)"
        lines = [head, f"{pad}  statement: {self.statement}",
                 f"{pad}  constant: {self.constant:.6g}   rule: {self.rule}",
                 f"{pad}  measured bracket: [{lo:.6g}, {hi:.6g}] ({self.provenance})   "
                 f"margin: {self.margin:+.3g}"]
        if self.settings:
            lines.append(f"{pad}  settings: {_fmt_settings(self.settings)}")
        if notes:
            for n in self.notes:
                for ln in str(n).splitlines():
                    lines.append(f"{pad}  | {ln}")
        for p in self.parts:
            lines.append(p.report(indent + 4, notes=notes))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["parts"] = [p.to_dict() for p in self.parts]
        d["bracket"] = list(self.bracket)
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=_json_default, allow_nan=True)


def _json_default(o):
    p = _plain(o)
    return p if p is not o else str(o)


def _plain(v):
    """``v`` with numpy scalars and arrays turned into Python numbers and lists (for printing)."""
    try:
        import numpy as np
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, np.ndarray):
            return v.tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_plain(x) for x in v)
    return v


def _fmt_settings(s: dict) -> str:
    """The settings on one line, in plain Python notation; long values (per-point data lists,
    nested tables) are summarized: ``--json`` has them in full."""
    out = []
    for k, v in s.items():
        v = _plain(v)
        r = repr(v)
        if len(r) > 80 and isinstance(v, (list, tuple, dict)):
            what = "entries" if not isinstance(v, dict) else "keys"
            r = f"<{len(v)} {what}, see --json>"
        out.append(f"{k}={r}")
    return ", ".join(out)


def decide(kind: str, lo: float, hi: float, constant: float,
           tol: float | None = None) -> tuple[str, float]:
    """(verdict, margin) of the bracket [lo, hi] against ``constant`` under rule ``kind``.

    * ``at_most``: pass if hi ≤ c (margin c − hi), fail if lo > c (margin c − lo < 0), else
      undecided (margin c − hi < 0);
    * ``at_least``: mirror image;
    * ``within``: band [c − tol, c + tol]: pass if the bracket lies inside (margin = distance of
      the bracket to the band's edge), fail if it is disjoint from the band, else undecided;
    * ``contains``: pass if lo ≤ c ≤ hi (margin = distance of c to the nearer end), else fail.
    A NaN bound makes the verdict undecided.
    """
    if kind not in KINDS:
        raise ValueError(f"`kind` must be one of {KINDS}, got {kind!r}")
    if math.isnan(lo) or math.isnan(hi):
        return "undecided", float("nan")
    if kind == "at_most":
        if hi <= constant:
            return "pass", constant - hi
        if lo > constant:
            return "fail", constant - lo
        return "undecided", constant - hi
    if kind == "at_least":
        if lo >= constant:
            return "pass", lo - constant
        if hi < constant:
            return "fail", hi - constant
        return "undecided", lo - constant
    if kind == "contains":
        if lo <= constant <= hi:
            return "pass", min(constant - lo, hi - constant)
        return "fail", -(lo - constant if constant < lo else constant - hi)
    if tol is None or not tol > 0:
        raise ValueError("`tol` must be > 0 for kind 'within'")
    a, b = constant - tol, constant + tol
    if a <= lo and hi <= b:
        return "pass", min(lo - a, b - hi)
    if hi < a or lo > b:
        return "fail", -(a - hi if hi < a else lo - b)
    return "undecided", min(lo - a, b - hi)


def make_verdict(name: str, statement: str, *, kind: str, constant: float,
                 bracket: Sequence[float], provenance: str, tol: float | None = None,
                 **kw: Any) -> Verdict:
    """A :class:`Verdict` whose verdict and margin follow from :func:`decide`."""
    lo, hi = float(bracket[0]), float(bracket[1])
    v, margin = decide(kind, lo, hi, constant, tol)
    return Verdict(name, v, statement, float(constant), (lo, hi), provenance, float(margin),
                   kind=kind, tol=tol, **kw)


def combine(parts: Iterable[Verdict]) -> str:
    """Overall verdict of the ``claim`` parts: fail if any fails, else undecided if any is
    undecided, else pass (controls are ignored; no claim parts → undecided)."""
    claims = [p.verdict for p in parts if p.role == "claim"]
    if not claims:
        return "undecided"
    if "fail" in claims:
        return "fail"
    if "undecided" in claims:
        return "undecided"
    return "pass"


def summary_verdict(name: str, statement: str, parts: Iterable[Verdict], *,
                    settings: dict | None = None, notes: Sequence[str] = (),
                    headline: Verdict | None = None) -> Verdict:
    """A composite verdict: the combined verdict of ``parts``; constant, bracket and margin are
    those of ``headline`` (default: the claim part with the smallest margin)."""
    parts = tuple(parts)
    claims = [p for p in parts if p.role == "claim"]
    if headline is None:
        pool = claims or list(parts)
        headline = min(pool, key=lambda p: (p.margin if not math.isnan(p.margin) else -math.inf))
    return Verdict(name, combine(parts), statement, headline.constant, headline.bracket,
                   "numerical" if any(p.provenance == "numerical" for p in claims) else headline.provenance,
                   headline.margin, settings=dict(settings or {}), kind=headline.kind,
                   tol=headline.tol, parts=parts, notes=tuple(notes))


def load_settings(name: str) -> dict:
    """The declared ``quick`` and ``full`` settings of check ``name`` from
    ``data/configs/<name>.toml`` (embedded as ``popdyn._data``; read from the checkout's
    ``data/`` when this module runs from a checkout against an installed popdyn without it);
    TOML arrays become tuples."""
    import tomllib
    from pathlib import Path

    from popdyn.resources import data_path

    try:
        text = data_path("configs", f"{name}.toml").read_text()
    except FileNotFoundError:
        text = (Path(__file__).resolve().parent.parent / "data" / "configs"
                / f"{name}.toml").read_text()
    cfg = tomllib.loads(text)
    return {p: {k: tuple(v) if isinstance(v, list) else v for k, v in cfg[p].items()}
            for p in ("quick", "full")}


# ---------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class Check:
    """A registered check: ``func(**settings) -> Verdict`` with its quick and full settings."""

    name: str
    func: Callable
    description: str
    quick: dict
    full: dict

    def settings(self, quick: bool = True, **overrides: Any) -> dict:
        s = dict(self.quick if quick else self.full)
        for k in overrides:
            if k not in s:
                close = difflib.get_close_matches(k, list(s), n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise ValueError(f"unknown setting {k!r} for check {self.name!r}; valid: {sorted(s)}.{hint}")
        s.update(overrides)
        return s


CHECKS: dict = {}


#: a check function, ``func(**settings) -> Verdict``
_CheckFunc = TypeVar("_CheckFunc", bound=Callable[..., Verdict])


def register(name: str, *, description: str, quick: dict,
             full: dict) -> Callable[[_CheckFunc], _CheckFunc]:
    """Decorator registering ``func(**settings) -> Verdict`` as the check ``name``."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"`name` must be an identifier-like string, got {name!r}")
    if set(quick) != set(full):
        raise ValueError(f"check {name!r}: quick and full settings must have the same keys")

    def deco(func: _CheckFunc) -> _CheckFunc:
        if name in CHECKS:
            raise ValueError(f"a check named {name!r} is already registered")
        CHECKS[name] = Check(name, func, description, dict(quick), dict(full))
        return func

    return deco


#: the entry-point group through which other packages register their checks
ENTRY_POINT_GROUP = "popdyn.checks"
_PLUGINS: dict = {}        # entry-point name -> None (loaded) or the error message


def load_plugins() -> dict:
    """Load the checks that installed packages declare in the entry-point group
    ``popdyn.checks`` (once per process; later calls return the same record).

    A package registers its checks without editing popdyn by declaring, in its own metadata,
    e.g. in ``pyproject.toml``::

        [project.entry-points."popdyn.checks"]
        my_theorem = "my_package.checks"

    The object an entry point names is loaded: a module is imported (its :func:`register`
    decorators run), a callable that is not itself a registered check is called once with no
    arguments (a registration function).  A plugin that fails to load does not break the
    others or popdyn: its error is recorded and ``popdyn check --list`` prints it.

    Returns
    -------
    dict
        ``{entry-point name: None}`` for each loaded plugin, the one-line error otherwise.
    """
    if _PLUGINS.get("__loaded__") is not None:
        return {k: v for k, v in _PLUGINS.items() if k != "__loaded__"}
    _PLUGINS["__loaded__"] = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
            if callable(obj) and not isinstance(obj, type) and not any(
                    c.func is obj for c in CHECKS.values()):
                obj()
            _PLUGINS[ep.name] = None
        except Exception as exc:  # a broken plugin is reported, not fatal
            _PLUGINS[ep.name] = (f"entry point {ep.name} = {ep.value} (group "
                                 f"{ENTRY_POINT_GROUP}) failed to load: {type(exc).__name__}: "
                                 f"{exc}")
    return {k: v for k, v in _PLUGINS.items() if k != "__loaded__"}


def get_check(name: str) -> Check:
    """The registered :class:`Check` called ``name`` (``ValueError`` with a suggestion otherwise);
    the checks of installed packages (:func:`load_plugins`) are included."""
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a string, got {type(name).__name__}")
    load_plugins()
    if name not in CHECKS:
        close = difflib.get_close_matches(name, list(CHECKS), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"no check named {name!r}; registered checks: {sorted(CHECKS)}.{hint}")
    return CHECKS[name]


def run_check(name: str, quick: bool = True, **overrides: Any) -> Verdict:
    """Run the check ``name`` with its quick (default) or full settings, optionally overriding
    individual settings; the returned verdict records the settings and the wall time."""
    chk = get_check(name)
    settings = chk.settings(quick, **overrides)
    t0 = time.perf_counter()
    v = chk.func(**settings)
    if not isinstance(v, Verdict):
        raise TypeError(f"check {name!r} returned {type(v).__name__}, not a Verdict")
    full_settings = {"preset": "quick" if quick else "full", **settings}
    return v.replace(settings=full_settings, elapsed=time.perf_counter() - t0)
