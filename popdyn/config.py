"""Experiment configurations (TOML): teachers, student, initialization, integrator, diagnostic
schedule, stopping rules, seeds — validated on load with clear errors.

A configuration names one teacher (``[teacher]``) or several (``[[teachers]]``), one student,
an initialization with its declared seeds, an integrator with its stopping rules, a diagnostic
schedule, and optionally several *settings* (``[[settings]]``: labelled overrides of the other
sections).  It expands into the sweep teachers × settings × seeds (:func:`expand`).  Seeds are
declared up front (a list, or ``{start, count}``) and every declared seed is run and kept: a seed
is never selected by its outcome.

Sections and keys (unknown keys raise ``ValueError`` with a did-you-mean)::

    name = "smoke"                      # optional label of the sweep
    [teacher]                           # or [[teachers]] (a list); each may carry a `label`
    kind = "additive"                   # "additive" (default) | "network" | "gated"
    normalize = false                   # true: rescale to unit variance (explicit option);
                                        # "second_moment": to E[y²] = 1 (unit L²(γ) norm)
    link = "h2"; rank = 2; kappa = [...]; U = [[...]]          (additive)
    activation = "relu"; V = [...]; U = [[...]]; bias = [...]    (network)
    gate = "gelu"; kappa = 1.0; rank = 2 or U = [[...], [...]]  (gated)
    [student]   family (a name of popdyn.families; optional: inferred from the keys below), and
                the family's keys (popdyn.families.get(family).config_keys); ridge / skip:
                d, m, activation, negative_slope, bias, intercept, scaling, skip, preset
                (preset = "paper_relu": with d and m only, Kumar's ReLU student
                f = (1/m) Σ A_j relu(W_j·x + B_j), no intercept: popdyn.Student.preset)
                (skip = true: a learned linear skip v·x, popdyn.Student(..., skip=True),
                the ``skip`` family of popdyn.skip; absent or false: no skip, and the run's key
                is that of a config without the key)
                activation = "swiglu": d, m, intercept, clock, biases only   (SwiGLU student;
                clock = "standard" | "mean_field": popdyn.SwiGLUStudent; biases = true: the
                gate/value biases of Kumar eq. (71), with [init] convention = "paper" allowed)
    [init]      scale, seeds (list or {start, count}), fit_intercept,
                convention ("norm": W ~ N(0, s²/d), the default | "entry": IID N(0, s²) entries
                | "iid": every entry of a, W and b IID N(0, s²/d), Kumar §3)
    [train]     method ("flow" | "gd" | "armijo" | "paper_euler"), lr, head_lr_mult,
                bias_lr_mult, intercept_lr_mult, eps, h0, h_min, h_max, max_halvings,
                max_updates, max_time, loss_target, explode   (stopping rules: loss_target,
                max_updates, max_time, explode; "armijo": persistent Armijo from h0 with
                max_halvings, Kumar eq. (19)).  eps, h_min, h_max belong to "flow", h0 to
                "flow" and "armijo", max_halvings to "armijo": an option the method does
                not take is an error (popdyn.dynamics.TrainSettings.from_config)
                method = "paper_euler": the SwiGLU protocol of Kumar App. U.6
                (:func:`popdyn.swiglu.train_paper`) for a biased SwiGLU student
                (``biases = true``, ``intercept = true``); keys dt (a fixed Δt; absent: the
                adaptive step), rel_change (0.01), dt_max (50), rel_norm ("neuron": the
                paper's rule, the default | "global" | "block"), loss_target (ℓ_stop),
                max_time (t_max), max_updates (N_max), explode; the other keys do not apply.
                Such runs need ``[diagnostics] certify = false``.
    [schedule]  every, early                         (diagnostic schedule, in updates)
                kind = "baseline" | "a2": the paper's schedules (popdyn.Schedule.named; no
                every/early then), plateau = a rule of popdyn.plateau.NAMED_RULES whose
                endpoint E and E + 1 are snapshotted ("baseline" for both kinds by default)
    [diagnostics] kinds, budget, geometry, delta, certify, certify_kinds, prec
    [store]     checkpoint_every                     (updates between resumable checkpoints)
    [execution] threads                              (kernel threads per run, popdyn.threads;
                not part of a run's key: results do not depend on it)
    [[settings]] label = "..."; and any of student / init / train / schedule / diagnostics
                 as inline tables of overrides, e.g.  train = { lr = 0.1 }

Teacher subspaces.  ``U`` gives the teacher directions as orthonormal rows; without it the
directions are the first coordinate axes: ``rank`` of them for additive teachers (default 1),
two for gated ones (u_1 = e_1 the gate axis, u_2 = e_2 the value axis; ``rank`` may be given
and must then be 2).  Gated teachers are y = κ·F(u_1·x)(u_2·x) with ``gate`` F in id, gelu,
tanh, relu, silu, h2, or ``rotation`` (the bilinear rotation control), see
:meth:`popdyn.Teacher.gated`; ``kappa`` is a single number there (default 1).  Additive
``link`` names are those of :func:`popdyn.links.get_link`, including the central paper's
``g:<v>``, ``q:<v>``, ``g_mu(<w>*g:<v>, ...)`` (Kumar, arXiv 2609.39408, eq. (7)), signed
``mixture(...)`` and registered ``user:<name>`` links; the paper's 21 Table 1 teachers are the
tables of :data:`popdyn.teachers.paper.TABLE1`.

SwiGLU students.  ``activation = "swiglu"`` builds :class:`popdyn.SwiGLUStudent` (f(x) =
Σ_j a_j SiLU(g_j·x)(v_j·x) + c, intercept fitted exactly when ``intercept = true``, the
default); it takes only ``d``, ``m`` and ``intercept`` -- the relu-family keys
``negative_slope``, ``bias`` and ``scaling`` raise a ``ConfigError`` naming them.  For SwiGLU the
refit kinds are ``unrestricted``, ``same_budget`` and ``bounded`` (``projected`` is rejected),
``[train] head_lr_mult`` is the paper's head-rate multiplier, ``bias_lr_mult`` /
``intercept_lr_mult`` are unused, and the diagnostics' geometry is the gate geometry.
Certification (:mod:`certify`) covers the loss, the AGOP alignment and the refit risks of SwiGLU
students (rigorous against additive polynomial-link teachers, numerical otherwise); a refusal is
recorded as ``refit_<kind>_error`` with certify's message, never as a point value.

References
----------
Kumar (arXiv 2609.39408), App. A and Table 1: declared seeds per teacher, cohorts of teachers ×
seeds; docs/design.md §4 (stopping rules, schedules).
"""
from __future__ import annotations

import copy
import difflib
import numbers
import tomllib
from pathlib import Path

import numpy as np

from . import _validate as V
from . import families as _families
from .diagnostics.refit import KINDS
from .family import family_of
from .dynamics import TrainSettings, train as _train
from .models import INIT_CONVENTIONS
from .dynamics import SCHEDULE_KINDS, Schedule
from .plateau import NAMED_RULES
from .teachers import Teacher

#: teacher kinds and the keys that belong to one kind only
TEACHER_KINDS = ("additive", "network", "gated")
from .teachers.gated import GATES  # noqa: E402  (id, gelu, tanh, relu, silu, h2, rotation)
_KIND_ONLY = {"link": "additive", "basis": "additive", "activation": "network",
              "negative_slope": "network", "V": "network", "bias": "network", "gate": "gated"}

TEACHER_KEYS = {"label", "kind", "link", "rank", "kappa", "activation", "negative_slope", "V",
                "U", "bias", "basis", "gate", "normalize"}
_SECTIONS = {
    "name": None,
    "teacher": TEACHER_KEYS,
    "teachers": TEACHER_KEYS,
    #: the keys of every registered family (popdyn.families.config_keys), checked per family
    #: when the student is built (FamilySpec.from_config)
    "student": None,
    "init": {"scale", "seeds", "fit_intercept", "convention"},
    "train": {"method", "lr", "head_lr_mult", "bias_lr_mult", "intercept_lr_mult", "eps", "h0",
              "h_min", "h_max", "max_updates", "max_time", "loss_target", "explode",
              "max_halvings", "dt", "rel_change", "dt_max", "rel_norm"},
    "schedule": {"every", "early", "kind", "plateau"},
    "diagnostics": {"kinds", "budget", "geometry", "delta", "certify", "certify_kinds", "prec"},
    "store": {"checkpoint_every"},
    "execution": {"threads"},
    "settings": None,
}
#: sections a ``[[settings]]`` entry may override
OVERRIDABLE = ("student", "init", "train", "schedule", "diagnostics")

DIAGNOSTIC_DEFAULTS = {"kinds": ["unrestricted", "same_budget"], "budget": None,
                       "geometry": True, "delta": 1e-3, "certify": True,
                       "certify_kinds": ["same_budget", "unrestricted"], "prec": 128}
STORE_DEFAULTS = {"checkpoint_every": 1000}
SCHEDULE_DEFAULTS = {"every": 100, "early": []}


class ConfigError(ValueError):
    """A configuration is malformed (the message says where and what to do)."""


def _unknown(where, key, allowed):
    close = difflib.get_close_matches(key, sorted(allowed), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"unknown key {key!r} in {where}; valid keys: {sorted(allowed)}.{hint}")


def _allowed(section):
    """The valid keys of ``section`` (``[student]``: those of the registered families)."""
    return _families.config_keys() if section == "student" else _SECTIONS[section]


def _check_table(where, val, allowed):
    if not isinstance(val, dict):
        raise ConfigError(f"{where} must be a table (key = value pairs), got {type(val).__name__}")
    for k in val:
        if k not in allowed:
            _unknown(where, k, allowed)


def _int(where, v, *, minimum=0):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < minimum:
        raise ConfigError(f"{where} must be an integer >= {minimum}, got {v!r}")
    return int(v)


def seeds_of(spec, where="[init] seeds") -> list:
    """The declared seeds: a list of distinct non-negative ints, or ``{start, count}``."""
    if isinstance(spec, dict):
        _check_table(where, spec, {"start", "count"})
        if "count" not in spec:
            raise ConfigError(f"{where} as a table needs `count` (and optionally `start`)")
        start = _int(f"{where}.start", spec.get("start", 0))
        count = _int(f"{where}.count", spec["count"], minimum=1)
        return list(range(start, start + count))
    if not isinstance(spec, list) or not spec:
        raise ConfigError(f"{where} must be a non-empty list of ints or {{start, count}}, got {spec!r}")
    out = [_int(f"{where}[{i}]", s) for i, s in enumerate(spec)]
    if len(set(out)) != len(out):
        raise ConfigError(f"{where} has duplicate seeds: {out}")
    return out


def _user_kind(kind):
    """The class of a teacher kind registered by other code (None for the built-in kinds)."""
    if not isinstance(kind, str) or kind in TEACHER_KINDS:
        return None
    from .teachers import kind_class
    return kind_class(kind)


def _check_teacher_table(where: str, t) -> None:
    """A teacher table: the built-in kinds' keys, or for a registered kind of another package
    any keys (its ``from_config`` checks them) besides ``label`` and ``normalize``."""
    if isinstance(t, dict) and _user_kind(t.get("kind")) is not None:
        return
    _check_table(where, t, TEACHER_KEYS)


def validate(cfg: dict) -> dict:
    """Check the structure of a configuration dict (unknown keys, missing sections, types).

    The values themselves are checked when the sweep is expanded (:func:`expand`), which builds
    every student and teacher once; both steps run before anything is computed or stored.
    """
    if not isinstance(cfg, dict):
        raise ConfigError("a configuration must be a table")
    for key, val in cfg.items():
        if key not in _SECTIONS:
            _unknown("the config", key, _SECTIONS)
        allowed = _allowed(key)
        if key == "name":
            if not isinstance(val, str):
                raise ConfigError(f"`name` must be a string, got {val!r}")
        elif key == "teachers":
            if not isinstance(val, list) or not val:
                raise ConfigError("[[teachers]] must be a non-empty array of tables")
            for i, t in enumerate(val):
                _check_teacher_table(f"[[teachers]] #{i + 1}", t)
        elif key == "settings":
            if not isinstance(val, list) or not val:
                raise ConfigError("[[settings]] must be a non-empty array of tables")
            for i, s in enumerate(val):
                where = f"[[settings]] #{i + 1}"
                _check_table(where, s, {"label", *OVERRIDABLE})
                for sec in OVERRIDABLE:
                    if sec in s:
                        _check_table(f"{where} {sec}", s[sec], _allowed(sec))
        elif key == "teacher":
            _check_teacher_table("[teacher]", val)
        else:
            _check_table(f"[{key}]", val, allowed)
            if key == "execution" and "threads" in val:
                t = val["threads"]
                if isinstance(t, bool) or not isinstance(t, int) or t < 1:
                    raise ConfigError(f"[execution] threads must be a positive integer, "
                                      f"got {t!r}")
    if "teacher" in cfg and "teachers" in cfg:
        raise ConfigError("give either [teacher] or [[teachers]], not both")
    if "teacher" not in cfg and "teachers" not in cfg:
        raise ConfigError("config is missing the [teacher] section (or [[teachers]])")
    for sec in ("student", "init"):
        if sec not in cfg:
            raise ConfigError(f"config is missing the [{sec}] section")
    if "scale" not in cfg["init"]:
        raise ConfigError("[init] needs `scale` (the initialization scale)")
    return cfg


def loads(text: str, *, source: str = "<string>") -> dict:
    """Parse and validate a TOML configuration given as text."""
    try:
        cfg = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config {source} is not valid TOML: {exc}") from None
    return validate(cfg)


def load(path) -> dict:
    """Load and validate a TOML run configuration, given as a file path or as the name of an
    embedded configuration (``"h3_rank1"``, ``"paper/table1"``; ``popdyn configs`` lists them;
    an existing file wins over a name)."""
    from ._paths import config_source

    if not Path(path).is_file() and not Path(path).is_dir():
        path = config_source(path)[1]      # FileNotFoundError names the embedded choices
    else:
        path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise FileNotFoundError(f"config file {path} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"config path {path} is a directory, not a TOML file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text") from None
    return loads(text, source=str(path))


def make_student(table: dict):
    """The student of a ``[student]`` table, built by its family
    (``popdyn.families.get(name).from_config(table)``): ``family = <name>``, or for tables
    without the key the family :func:`popdyn.families.of_table` infers (``activation =
    "swiglu"``: :class:`popdyn.SwiGLUStudent`; ``skip = true``: the skip family; else
    :class:`popdyn.Student`).  Bad keys raise a :class:`ConfigError` naming them."""
    t = dict(table)
    if "family" in t:
        name = t.pop("family")
        if name not in _families.names():
            close = difflib.get_close_matches(str(name), _families.names(), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"[student] family must be one of {list(_families.names())}, got "
                              f"{name!r}.{hint}")
        spec = _families.get(name)
    else:
        spec = _families.of_table(t)
    try:
        return spec.from_config(t, error=ConfigError)
    except ValueError as exc:
        if isinstance(exc, ConfigError) or not isinstance(t.get("activation"), str) \
                or "activation" not in str(exc):
            raise
        others = {a: sp for n in _families.names() for sp in [_families.get(n)]
                  for a in sp.activations}
        close = difflib.get_close_matches(t["activation"], list(others), n=1, cutoff=0.7)
        if close:
            raise ValueError(f"{exc} (or {close[0]!r} for a {others[close[0]].label} student)") \
                from None
        raise


def build_student(cfg: dict):
    return make_student(cfg["student"])


def build_teacher(cfg: dict, d: int) -> Teacher:
    """The teacher of a single-teacher config (``[teacher]``) or of a teacher table itself."""
    t = cfg.get("teacher", cfg) if isinstance(cfg.get("teacher"), dict) else cfg
    return teacher_from_table(t, d)


def teacher_from_table(table: dict, d: int) -> Teacher:
    """Build a teacher from its table; ``normalize = true`` rescales it to unit variance,
    ``normalize = "second_moment"`` to E[y²] = 1 (explicit, never silent: docs/design.md §2)."""
    t = dict(table)
    norm = t.pop("normalize", False)
    if not (isinstance(norm, bool) or norm == "second_moment"):
        raise ConfigError(f"[teacher] normalize must be true, false or 'second_moment', "
                          f"got {norm!r}")
    T = _teacher(t, d)
    if norm == "second_moment":
        return T.normalized("second_moment")
    return T.normalized() if norm else T


def _rank(t: dict, d: int, default: int) -> int:
    r = t.pop("rank", default)
    if isinstance(r, bool) or not isinstance(r, numbers.Integral) or not 1 <= int(r) <= d:
        raise ConfigError(f"[teacher] rank must be an int in 1..d = {d}, got {r!r}")
    return int(r)


def _teacher(t: dict, d: int) -> Teacher:
    t.pop("label", None)
    kind = t.pop("kind", "additive")
    user = _user_kind(kind)
    if user is not None:
        if not hasattr(user, "from_config"):
            raise ConfigError(f"[teacher] kind = {kind!r} ({user.__module__}.{user.__name__}) "
                              "has no classmethod from_config(table, d): it cannot be built "
                              "from a configuration")
        T = user.from_config(t, d)
        if not isinstance(T, Teacher):
            raise ConfigError(f"[teacher] kind = {kind!r}: from_config returned "
                              f"{type(T).__name__}, not a popdyn Teacher")
        return T
    if kind not in TEACHER_KINDS:
        from .teachers import kinds
        valid = [k for k in kinds() if k != "multi_index"]
        close = difflib.get_close_matches(str(kind), valid, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"[teacher] kind must be one of {valid} (other kinds: "
                          f"popdyn.teachers.register_kind), got {kind!r}.{hint}")
    foreign = sorted(k for k in t if k in _KIND_ONLY and _KIND_ONLY[k] != kind)
    if foreign:
        raise ConfigError(f"[teacher] kind = {kind!r} does not take "
                          + ", ".join(f"`{k}` (kind = {_KIND_ONLY[k]!r})" for k in foreign))
    if kind == "gated":
        if "gate" not in t:
            raise ConfigError(f"[teacher] kind = 'gated' needs `gate` ({', '.join(GATES)})")
        gate = t.pop("gate")
        if gate not in GATES:
            close = difflib.get_close_matches(str(gate), GATES, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"[teacher] unknown gate {gate!r}; valid: {list(GATES)}.{hint}")
        if "U" in t:
            U = np.array(t.pop("U"), dtype=float)
            if "rank" in t:
                r = _rank(t, d, 2)
                if U.ndim != 2 or U.shape[0] != r:
                    rows = U.shape[0] if U.ndim else 0
                    raise ConfigError(f"[teacher] rank = {r} does not match the {rows} rows of U")
        else:
            if d < 2:
                raise ConfigError(f"[teacher] kind = 'gated' needs d >= 2, got d = {d}")
            r = _rank(t, d, 2)
            if r != 2:
                raise ConfigError(f"[teacher] kind = 'gated' has rank 2 (u_1 the gate axis, u_2 the "
                                  f"value axis), got rank = {r}")
            U = np.eye(d)[:2]
        return Teacher.gated(gate, U, t.get("kappa", 1.0))
    if kind == "additive":
        if "U" in t:
            U = np.array(t.pop("U"), dtype=float)
        else:
            U = np.eye(d)[:_rank(t, d, 1)]
        t.pop("basis", None)
        return Teacher.additive(t.get("link", "h2"), U, t.get("kappa"))
    for k in ("activation", "V", "U"):
        if k not in t:
            raise ConfigError(f"[teacher] kind = 'network' needs `{k}`")
    return Teacher.network(t["activation"], t["V"], t["U"], t.get("bias"),
                           negative_slope=t.get("negative_slope", 0.01))


def teacher_label(table: dict) -> str:
    """Display label of a teacher table: its ``label`` or a description from its keys."""
    if "label" in table:
        return str(table["label"])
    if table.get("kind", "additive") == "gated":
        return f"gated {table.get('gate', '?')}"
    if table.get("kind", "additive") == "additive":
        r = table.get("rank", len(table["U"]) if "U" in table else 1)
        return f"{table.get('link', 'h2')} r={r}"
    if table.get("kind") == "network" and "activation" in table and "V" in table:
        return f"{table['activation']} network k={len(table['V'])}"
    return f"{table.get('kind', '?')} teacher"


def train_kwargs(cfg: dict) -> dict:
    kw = dict(cfg.get("train", {}))
    if "schedule" in cfg:
        kw["schedule"] = schedule_of(cfg["schedule"])
    return kw


def _named_choice(key: str, value, choices: list, where: str):
    """``value`` if it is one of ``choices``, else one ConfigError line naming ``key``, the
    choices and the closest one."""
    if value not in choices:
        close = difflib.get_close_matches(str(value), choices, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"{key} must be one of {choices} in {where}, got {value!r}.{hint}")
    return value


def schedule_of(sc: dict, where: str = "the config") -> Schedule:
    """The :class:`popdyn.Schedule` of a ``[schedule]`` table: ``every``/``early``, or a named
    ``kind`` (:meth:`popdyn.Schedule.named`), with an optional named plateau ``rule``
    (:data:`popdyn.plateau.NAMED_RULES`) whose endpoint and successor are snapshotted."""
    if "kind" in sc:
        kind = _named_choice("[schedule] kind", sc["kind"], list(SCHEDULE_KINDS), where)
        base = Schedule.named(kind)
    else:
        base = Schedule(every=sc.get("every", 100), early=tuple(sc.get("early", ())))
    if "plateau" in sc:
        name = _named_choice("[schedule] plateau", sc["plateau"], sorted(NAMED_RULES), where)
        base = Schedule(every=base.every, early=base.early, dense=base.dense,
                        plateau=NAMED_RULES[name])
    return base


def teachers_of(cfg: dict) -> list:
    """The teacher tables of a config, in declared order."""
    return [cfg["teacher"]] if "teacher" in cfg else list(cfg["teachers"])


def settings_of(cfg: dict) -> list:
    """The setting override tables (``[{"label": "default"}]`` when none are declared)."""
    return list(cfg.get("settings", [{"label": "default"}]))


def _merged(cfg: dict, setting: dict) -> dict:
    out = {}
    for sec in OVERRIDABLE:
        base = copy.deepcopy(cfg.get(sec, {}))
        base.update(copy.deepcopy(setting.get(sec, {})))
        out[sec] = base
    return out


def expand(cfg: dict) -> list:
    """Expand a validated configuration into its runs: teachers × settings × seeds, in that
    (declared) order.

    Each run is a plain-data dict: ``teacher`` (the table, with ``label``), ``setting``
    (label), ``student``, ``init`` (with the single ``seed``), ``train``, ``schedule``,
    ``diagnostics``, ``store`` (all defaults filled in) and ``order`` (teacher index, setting
    index, seed index).  Every student, teacher, schedule and train setting is built and checked
    here, so a malformed value raises before any run starts.
    """
    runs = []
    teachers = teachers_of(cfg)
    settings = settings_of(cfg)
    labels = [teacher_label(t) for t in teachers]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"teacher labels must be distinct (add `label = ...`): {labels}")
    slabels = [str(s.get("label", f"setting{i + 1}")) for i, s in enumerate(settings)]
    if len(set(slabels)) != len(slabels):
        raise ConfigError(f"setting labels must be distinct: {slabels}")
    for si, setting in enumerate(settings):
        sec = _merged(cfg, setting)
        where = f"setting {slabels[si]!r}" if "settings" in cfg else "the config"
        try:
            student = make_student(sec["student"])
        except ConfigError as exc:
            raise ConfigError(f"{exc} (in {where})") from None
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"[student] in {where}: {exc}") from None
        init = dict(sec["init"])
        seeds = seeds_of(init.pop("seeds", [0]))
        try:
            V.real("scale", init.get("scale"), positive=True)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"[init] in {where}: {exc}") from None
        init.setdefault("fit_intercept", True)
        if not isinstance(init["fit_intercept"], bool):
            raise ConfigError(f"[init] fit_intercept must be true or false in {where}")
        if "convention" in init:
            # "paper": Kumar eq. (73) init of the biased SwiGLU student (popdyn.swiglu)
            conventions = INIT_CONVENTIONS + (("paper",) if getattr(student, "biases", False)
                                              else ())
            if init["convention"] not in conventions:
                close = difflib.get_close_matches(str(init["convention"]), conventions, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"[init] convention must be one of {list(conventions)} in "
                                  f"{where}, got {init['convention']!r}.{hint}")
        if "kind" in sec["schedule"]:
            fixed = sorted(k for k in ("every", "early") if k in sec["schedule"])
            if fixed:
                raise ConfigError(f"[schedule] kind = {sec['schedule']['kind']!r} fixes the grid; "
                                  f"remove {fixed} (in {where})")
        sched = {**SCHEDULE_DEFAULTS, **sec["schedule"]}
        try:
            schedule_of(sched, where)
        except ConfigError:
            raise
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"[schedule] in {where}: {exc}") from None
        diag = {**DIAGNOSTIC_DEFAULTS, **sec["diagnostics"]}
        for k in ("kinds", "certify_kinds"):
            if isinstance(diag[k], str):
                diag[k] = [diag[k]]
            for kind in diag[k]:
                if kind not in KINDS:
                    close = difflib.get_close_matches(str(kind), KINDS, n=1)
                    hint = f" Did you mean {close[0]!r}?" if close else ""
                    raise ConfigError(f"[diagnostics] {k}: unknown refit kind {kind!r}; valid: "
                                      f"{list(KINDS)}.{hint}")
        fam = student.family
        bad = [k for k in diag["kinds"] if k not in fam.refit_kinds]
        if bad:
            raise ConfigError(f"[diagnostics] kinds {bad} are not defined for {fam.label} "
                              f"students (in {where}); use {list(fam.refit_kinds)}")
        for k in ("geometry", "certify"):
            if not isinstance(diag[k], bool):
                raise ConfigError(f"[diagnostics] {k} must be true or false, got {diag[k]!r}")
        if sec["train"].get("method") == PAPER_EULER and diag["certify"]:
            raise ConfigError(f"[diagnostics] certify must be false for [train] method = "
                              f"'paper_euler' (in {where}): certify does not cover the biased "
                              f"SwiGLU student")
        store = {**STORE_DEFAULTS, **cfg.get("store", {})}
        _int("[store] checkpoint_every", store["checkpoint_every"], minimum=1)
        train = dict(sec["train"])
        for ti, tt in enumerate(teachers):
            try:
                teacher = teacher_from_table(tt, student.d)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"teacher {labels[ti]!r}: {exc}") from None
            if ti == 0:
                _check_train(student, teacher, train, where)
            for ki, seed in enumerate(seeds):
                runs.append({
                    "name": cfg.get("name", ""),
                    "teacher": {**tt, "label": labels[ti]},
                    "setting": slabels[si],
                    "student": _student_spec(sec["student"]),
                    "init": {**init, "seed": seed},
                    "train": train,
                    "schedule": sched,
                    "diagnostics": diag,
                    "store": store,
                    "order": [ti, si, ki],
                })
    return runs


def _student_spec(table: dict) -> dict:
    """The run spec's student table without the entries its family drops at their defaults
    (:attr:`popdyn.families.FamilySpec.key_defaults`, e.g. ``skip = false``), so that the run
    keys of configs with and without such a key agree with those stored before it existed."""
    drop = _families.of_table(table).key_defaults
    return {k: v for k, v in table.items()
            if not (k in drop and type(v) is type(drop[k]) and v == drop[k])}


#: [train] method of the SwiGLU experimental protocol (Kumar App. U.6; popdyn.swiglu.train_paper)
PAPER_EULER = "paper_euler"
#: [train] keys of ``method = "paper_euler"``
PAPER_EULER_KEYS = ("method", "dt", "rel_change", "dt_max", "rel_norm", "loss_target",
                    "max_time", "max_updates", "explode")
#: [train] keys of the other methods only
_PAPER_ONLY = ("dt", "rel_change", "dt_max", "rel_norm")


def paper_euler_kwargs(train: dict) -> dict:
    """The :func:`popdyn.swiglu.train_paper` keywords of a ``method = "paper_euler"`` [train]
    table: ``loss_target`` is the paper's ℓ_stop, ``max_time`` its t_max and ``max_updates``
    its N_max (Kumar App. U.6, "Loss stopping thresholds and observation ceilings"); defaults
    are those of ``train_paper`` (adaptive step, cap 0.01, Δt ≤ 50, no loss stop, t_max = ∞,
    N_max = 20000)."""
    kw = {"dt": train.get("dt"), "rel_change": train.get("rel_change", 0.01),
          "dt_max": train.get("dt_max", 50.0), "rel_norm": train.get("rel_norm", "neuron"),
          "loss_stop": train.get("loss_target", 0.0),
          "t_max": train.get("max_time", float("inf")),
          "n_max": train.get("max_updates", 20000), "explode": train.get("explode", 1e6)}
    return kw


def _check_paper_euler(student, teacher, train, where):
    from .swiglu import train_paper

    extra = sorted(k for k in train if k not in PAPER_EULER_KEYS)
    if extra:
        raise ConfigError(f"[train] method = 'paper_euler' takes only {list(PAPER_EULER_KEYS)} "
                          f"(in {where}); {extra} belong to the other methods: remove them")
    if _families.capability(family_of(student), "paper_step") is None:
        raise ConfigError(f"[train] method = 'paper_euler' is the protocol of the biased SwiGLU "
                          f"student (Kumar App. U.6): set [student] activation = 'swiglu', "
                          f"biases = true, intercept = true (in {where})")
    try:
        if "max_updates" in train:
            V.nonneg_int("max_updates", train["max_updates"])
        kw = paper_euler_kwargs(train)
        kw["n_max"] = 0
        train_paper(student, student.init(0, 0.1, teacher, convention="paper"), teacher, **kw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[train] in {where}: {exc}") from None


def _check_train(student, teacher, train, where):
    """Validate [train] by a zero-update call of the integrator (same checks as a real run)."""
    if "schedule" in train:
        raise ConfigError("[train] has no `schedule` key; use the [schedule] section")
    if train.get("method") == PAPER_EULER:
        return _check_paper_euler(student, teacher, train, where)
    bad = sorted(k for k in train if k in _PAPER_ONLY)
    if bad:
        raise ConfigError(f"[train] {bad} apply to method = 'paper_euler' only (in {where})")
    try:
        if "max_updates" in train:
            V.nonneg_int("max_updates", train["max_updates"])
        TrainSettings.from_config(train)      # an option of another method is refused here
        _train(student, student.init(0, 1.0), teacher, **{**train, "max_updates": 0})
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[train] in {where}: {exc}") from None
