"""The family spec, the bound-family base class, capabilities and the registry.

A *family spec* (:class:`FamilySpec`, a frozen dataclass) is what a student family declares once:
its registry name, its hyperparameters (the spec's own dataclass fields), the ``[student]``
configuration keys it accepts (:meth:`FamilySpec.from_config` builds the student of a table),
its learning-rate groups (the parameter fields a multiplier may scale) and the class of its
*bound* family, the object that evaluates moments, loss and gradient for one student
(``student.family``, the protocol of :mod:`popdyn.family`).

Capabilities (a fused kernel, a finite-sample loss, ...) are optional hooks of the bound family
that return a callable or None.  :func:`capability` honours a hook only when the family's *own*
class defines it: a subclass of a family with a fused kernel (a ridge student with a penalty,
say) does not inherit the kernel, which would ignore its loss.

Layering: this module imports nothing of popdyn's but :mod:`popdyn._validate` (so
:mod:`popdyn.models` can import it); the built-in family modules (:mod:`popdyn.families.ridge`,
``.skip``, ``.swiglu``), which import the students, are imported on the first registry lookup.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .. import _validate as V

#: registered family specs: name -> spec
_REGISTRY: dict[str, "FamilySpec"] = {}
#: the modules of the built-in families (imported on the first lookup)
BUILTIN = ("popdyn.families.ridge", "popdyn.families.skip", "popdyn.families.swiglu")
_loaded = False

#: the keywords of :func:`popdyn.train` that name a rate group, and the field each scales (kept
#: for the calls and configurations written before ``rates``)
RATE_KEYWORDS = {"head_lr_mult": "a", "bias_lr_mult": "b", "intercept_lr_mult": "c"}


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        _loaded = True                   # before the imports: they may look families up
        try:
            # literal names (BUILTIN), imported at run time: the family modules import this one
            importlib.import_module("popdyn.families.ridge")
            importlib.import_module("popdyn.families.skip")
            importlib.import_module("popdyn.families.swiglu")
        except BaseException:
            _loaded = False
            raise


def register(spec: "FamilySpec") -> "FamilySpec":
    """Register the family ``spec`` under ``spec.name`` (one line per family); returns ``spec``.

    Raises ``TypeError`` for anything that is not a :class:`FamilySpec` and ``ValueError`` when
    another spec holds the name."""
    if not isinstance(spec, FamilySpec):
        raise TypeError(f"`spec` must be a popdyn.families.FamilySpec, got {type(spec).__name__}")
    if not spec.name:
        raise ValueError(f"`spec` ({type(spec).__name__}) has no `name`")
    old = _REGISTRY.get(spec.name)
    if old is not None and type(old) is not type(spec):
        raise ValueError(f"a student family named {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove the family ``name`` from the registry (a family registered for a while, e.g. by
    a test); the built-in families stay."""
    V.choice("family", name, tuple(sorted(_REGISTRY)))
    if type(_REGISTRY[name]).__module__ in BUILTIN:
        raise ValueError(f"the built-in family {name!r} cannot be unregistered")
    del _REGISTRY[name]


def get(name: str) -> "FamilySpec":
    """The spec registered under ``name`` (``ValueError`` naming the valid names)."""
    _load_builtins()
    V.choice("family", name, tuple(sorted(_REGISTRY)))
    return _REGISTRY[name]


def names() -> tuple:
    """The registered family names, sorted."""
    _load_builtins()
    return tuple(sorted(_REGISTRY))


def of_table(table: dict) -> "FamilySpec":
    """The family of a ``[student]`` table: ``family = <name>`` when given, else (tables written
    before the key) the family whose :attr:`FamilySpec.activations` hold the table's
    ``activation``, else the first that :meth:`FamilySpec.claims` it, else the
    :attr:`FamilySpec.fallback` family (``ridge``)."""
    if "family" in table:
        return get(table["family"])
    _load_builtins()
    specs = [_REGISTRY[k] for k in sorted(_REGISTRY)]
    act = table.get("activation")
    for spec in specs:
        if isinstance(act, str) and act in _own(spec, "activations", ()):
            return spec
    for spec in specs:
        if _own(spec, "claims", None) is not None and spec.claims(table):
            return spec
    return next(spec for spec in specs if _own(spec, "fallback", False))


def _own(obj, attr, default):
    """``attr`` of ``type(obj)``'s own class body, else ``default`` (declarations that select a
    family from a table are not inherited: a subclass of the ridge spec is no fallback)."""
    return type(obj).__dict__.get(attr, default)


def config_keys() -> set:
    """Every ``[student]`` key some registered family accepts, and ``family``."""
    _load_builtins()
    return {"family"}.union(*(spec.config_keys for spec in _REGISTRY.values()))


def capability(fam, hook: str):
    """What the capability ``hook`` of the bound family ``fam`` returns, or None.

    The hook is honoured only when ``type(fam)`` defines it itself (in its class body): a
    capability is never inherited, so a new family gets none unless it declares one."""
    fn = type(fam).__dict__.get(hook)
    return None if fn is None else fn(fam)


@dataclass(frozen=True)
class FamilySpec:
    """A student family's declaration (subclass it as a frozen dataclass; its dataclass fields
    are the family's hyperparameters, e.g. a penalty weight).

    Class attributes
    ----------------
    name : str
        Registry name (the ``[student] family`` of a configuration).
    label : str
        Name used in messages.
    config_keys : tuple of str
        The ``[student]`` keys :meth:`from_config` accepts (besides ``family``).
    rate_groups : tuple of str
        The parameter fields trained by the integrators, each with a learning-rate multiplier
        (default 1); a field not listed (a fitted intercept) is left as it is by a step.
    bound : type
        The bound family class (``bound(student, spec)`` is ``student.family``).
    """

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    config_keys: ClassVar[tuple] = ()
    rate_groups: ClassVar[tuple] = ()
    bound: ClassVar[type]
    #: ``activation`` values of a ``[student]`` table that select this family (:func:`of_table`;
    #: like :attr:`fallback` and :meth:`claims`, read from the spec's own class body only)
    activations: ClassVar[tuple] = ()
    #: the family of a table that no family claims (one registered family: ``ridge``)
    fallback: ClassVar[bool] = False
    #: ``[student]`` entries dropped from a run's spec when present with this value (a key
    #: added after runs were stored, at its default: the run keys stay those of the old tables)
    key_defaults: ClassVar[dict] = {}

    def claims(self, table: dict) -> bool:
        """Whether a ``[student]`` table without ``family`` declares this family (besides
        :attr:`activations`)."""
        return False

    def bind(self, student):
        """The bound family of ``student`` (its ``student.family``)."""
        return self.bound(student, self)

    def from_config(self, table: dict, error: type = ValueError):
        """The student of a ``[student]`` table (keys :attr:`config_keys`; ``family`` removed);
        bad keys or values raise ``error`` (one line naming them)."""
        raise NotImplementedError(f"the {self.name!r} family builds no student from a config")

    def check_config_keys(self, table: dict, error=ValueError) -> None:
        """Raise ``error`` (one line naming the keys) for keys not in :attr:`config_keys`; a key
        of another registered family is named with that family."""
        extra = sorted(k for k in table if k not in self.config_keys)
        for k in extra:
            owners = [sp for sp in _REGISTRY.values() if k in sp.config_keys]
            if owners:
                raise error(f"[student] {k} applies to "
                            f"{' and '.join(sp.label for sp in owners)} students (family = "
                            f"{' | '.join(repr(sp.name) for sp in owners)}); a {self.label} "
                            f"student takes {sorted(self.config_keys)}")
        if extra:
            raise error(f"[student] family = {self.name!r} takes only "
                        f"{sorted(self.config_keys)}; got {extra}: remove "
                        + ("it" if len(extra) == 1 else "them"))

    def multipliers(self, rates=None, *, groups=None, **keywords) -> dict:
        """Validated learning-rate multipliers {field: float ≥ 0} of every rate group.

        ``rates`` maps fields to multipliers; ``keywords`` are :data:`RATE_KEYWORDS`
        (``head_lr_mult`` → ``a``, ``bias_lr_mult`` → ``b``, ``intercept_lr_mult`` → ``c``),
        None meaning "not given".  A multiplier for a field that is not a rate group of the
        family (or of ``groups``, a student's own groups) raises ``ValueError`` naming the
        argument and the groups."""
        groups = self.rate_groups if groups is None else groups
        out = dict.fromkeys(groups, 1.0)
        given = {}
        for kw, val in keywords.items():
            if kw not in RATE_KEYWORDS:
                raise TypeError(f"unknown rate keyword `{kw}`; valid: {sorted(RATE_KEYWORDS)}")
            if val is not None:
                given[RATE_KEYWORDS[kw]] = (kw, val)
        if rates is not None:
            if not isinstance(rates, dict):
                raise TypeError(f"`rates` must be a dict {{field: multiplier}}, got "
                                f"{type(rates).__name__}")
            for f, val in rates.items():
                if f in given:
                    raise ValueError(f"`rates[{f!r}]` and `{given[f][0]}` both set the "
                                     f"multiplier of field {f!r}: give one")
                given[f] = (f"rates[{f!r}]", val)
        for f, (arg, val) in given.items():
            if f not in out:
                raise ValueError(f"`{arg}` sets a learning rate of field {f!r}, which {self.label} "
                                 f"students do not train; their rate groups are {list(groups)}")
            out[f] = V.real(arg, val, nonnegative=True)
        return out


class BoundFamily:
    """Generic parts of a bound family (:mod:`popdyn.family` protocol) built from the spec:
    the per-field update, the step-doubling norm and the rates of the integrators."""

    #: stored parameter fields in order, intercept last (set by each family)
    fields: tuple = ()
    #: the parameter container (a :class:`popdyn.models.ParamArrays` dataclass)
    params_type: Any

    def __init__(self, student, spec: FamilySpec):
        self.student = student
        self.spec = spec

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def label(self) -> str:
        return self.spec.label

    def shapes(self) -> dict:
        """Per-state shape of each field (the container's ``_DIMS`` in the student's sizes;
        ``c``: ``()``)."""
        st, dims = self.student, self.params_type._DIMS
        return {f: () if f == "c" else tuple(getattr(st, n) for n in dims[f])
                for f in self.fields}

    @property
    def rate_groups(self) -> tuple:
        """The trained fields of this student (the spec's, unless the family narrows them)."""
        return self.spec.rate_groups

    def multipliers(self, rates=None, **keywords) -> dict:
        """:meth:`FamilySpec.multipliers` on this student's rate groups."""
        return self.spec.multipliers(rates, groups=self.rate_groups, **keywords)

    # -- dynamics (popdyn.dynamics): per-field rates, the update and the step-doubling norm
    def clock(self):
        """(κ, time scale): parameter-space rate factor and the factor between the
        integration clock and the reported clock (1, 1 unless a family says otherwise)."""
        return 1.0, 1.0

    def frozen(self) -> tuple:
        """Rate groups held fixed by this student's settings (their rate is 0)."""
        return ()

    def rates(self, mult: dict) -> dict:
        """{field: rate multiplier} of the integrators from validated multipliers ``mult``
        (:meth:`FamilySpec.multipliers`): 0 for the groups :meth:`frozen` fixes."""
        off = self.frozen()
        return {f: (0.0 if f in off else r) for f, r in mult.items()}

    def train_info(self, cfg, rates) -> dict:
        """The rate multipliers in the trajectory's ``info``, under their keyword names."""
        return {kw: rates[f] for kw, f in RATE_KEYWORDS.items() if f in rates}

    def axpy(self, p, g, h, rates):
        """p − h·(rates ∘ g) field by field (fields outside ``rates`` unchanged)."""
        return type(p)(**{f: (getattr(p, f) - (h * rates[f]) * getattr(g, f)) if f in rates
                          else getattr(p, f) for f in self.fields})

    def diff_norm(self, p, q) -> float:
        """Euclidean distance over the trained fields (the keys of the rate groups)."""
        return float(np.sqrt(sum(np.sum((getattr(p, f) - getattr(q, f)) ** 2)
                                 for f in self.fields if f in self.rate_groups)))


__all__ = ["BUILTIN", "BoundFamily", "FamilySpec", "RATE_KEYWORDS", "capability",
           "config_keys", "get", "names", "of_table", "register", "unregister"]
