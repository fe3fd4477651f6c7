"""The student-family protocol: every registered family implements it, students
carry their family, and no generic module dispatches on module names or parameter attributes."""
import os
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popdyn
from popdyn import families, family

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _students():
    return {"ridge": popdyn.Student(3, 2), "skip": popdyn.Student(3, 2, skip=True),
            "swiglu": popdyn.SwiGLUStudent(3, 2)}


def test_registry_and_protocol():
    assert family.names() == ("ridge", "skip", "swiglu")
    T = popdyn.Teacher.additive("h2", np.eye(3)[:1])
    for name, S in _students().items():
        fam = family.family_of(S)
        assert fam.name == name and fam.student is S
        assert isinstance(fam, family.StudentFamily)
        assert family.get(name) is fam.spec and isinstance(fam.spec, families.FamilySpec)
        assert fam.fields[-1] == "c" and set(fam.shapes()) == set(fam.fields)
        p = S.init(0, 0.5, T)
        for f, shape in fam.shapes().items():
            assert np.shape(getattr(p, f)) == shape, (name, f)
        M = fam.moments(p, T, need="grad")
        L = fam.loss(p, T, M)
        assert L == popdyn.population_loss(S, p, T)
        assert fam.agop(p, fam.moments(p, None, need="student")).shape == (3, 3)
        assert fam.refit_problem(p, T, fam.moments(p, T, need="values")).m == 2


def test_family_errors_name_the_choices():
    with pytest.raises(ValueError, match="ridge"):
        family.get("resnet")
    with pytest.raises(TypeError, match="popdyn student"):
        family.family_of("relu")


#: the dispatch patterns the protocol replaced; a family's own modules may still
#: check their input types (``isinstance(student, SwiGLUStudent)`` in swiglu.py)
FORBIDDEN = [r"__name__\.endswith\(", r"hasattr\(p(arams)?, \"G\"\)",
             r"getattr\(student, \"activation\"[^)]*\) == \"swiglu\"", r"_extension\("]
#: a family-name test (the generic dispatchers look families up in their registries, and
#: popdyn's generic layers ask a family's capabilities, popdyn.families.capability)
NAME_TEST = [r"\b(family|fam)\.name (==|!=) ", r"\)\.name (==|!=) ",
             r"getattr\((family|fam), \"name\"", r"\.name (not )?in \(\"(ridge|skip|swiglu)\"",
             r"\b(fused|finite_sample) = True"]
#: a family looked up by a literal name outside the family modules and the students' own
#: modules (models.py: ``skip`` selects the skip family; swiglu.py)
LITERAL_GET = r"(_?famil(y|ies))\.get\(\"(ridge|skip|swiglu)\"\)"
STUDENT_MODULES = {os.path.join("popdyn", "models.py"), os.path.join("popdyn", "swiglu.py")}
OUTSIDE_FAMILY = [r"isinstance\(student, (swiglu\.)?SwiGLUStudent\)"]
#: certify modules exempt from the family-name scan: none (every certifier asks
#: certify._families for its domain)
PAIR_CERTIFIERS: set = set()


@pytest.mark.parametrize("pkg", ["popdyn", "certify"])
def test_no_dispatch_on_module_names_or_attributes(pkg):
    hits = []
    for root, _, files in os.walk(os.path.join(ROOT, pkg)):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(root, f)
                with open(path, encoding="utf-8") as fh:
                    for i, line in enumerate(fh, 1):
                        pats = FORBIDDEN + ([] if f == "swiglu.py" else OUTSIDE_FAMILY)
                        rel = os.path.relpath(path, ROOT)
                        if rel not in PAIR_CERTIFIERS:
                            pats = pats + NAME_TEST
                        if (rel not in STUDENT_MODULES
                                and not rel.startswith(os.path.join("popdyn", "families"))):
                            pats = pats + [LITERAL_GET]
                        if any(re.search(p, line) for p in pats):
                            hits.append(f"{os.path.relpath(path, ROOT)}:{i}: {line.strip()}")
    assert not hits, hits


#: teacher dispatch the teacher protocol replaced: the engine, families and
#: diagnostics ask a teacher (``units``, ``cross``, ``hermite_terms``, ``ridge``), never its kind
#: string, and never write a cache into it
TEACHER_FORBIDDEN = [r"\bteacher\.kind\b", r"\bT\.kind\b", r"kind == \"multi_index\"",
                     r"\.kind (==|!=|in|not in) \(?\"(additive|network|multi_index)\"",
                     r"getattr\(teacher, \"kind\"", r"teacher\._cache", r"\._cache\["]


@pytest.mark.parametrize("pkg", ["popdyn", "certify"])
def test_no_dispatch_on_teacher_kinds(pkg):
    """popdyn and certify ask a teacher through its protocol or its class."""
    hits = []
    for root, _, files in os.walk(os.path.join(ROOT, pkg)):
        for f in files:
            path = os.path.join(root, f)
            if not f.endswith(".py") or os.sep + "teachers" + os.sep in path:
                continue      # a kind's own module may name its kind
            with open(path, encoding="utf-8") as fh:
                for i, line in enumerate(fh, 1):
                    if any(re.search(p, line) for p in TEACHER_FORBIDDEN):
                        hits.append(f"{os.path.relpath(path, ROOT)}:{i}: {line.strip()}")
    assert not hits, hits


def test_teacher_kinds_implement_the_protocol():
    import numpy as np
    from popdyn import Teacher
    from popdyn._moments import _TEACHER_CACHE, student_units
    U = np.eye(4)[:2]
    kinds = [Teacher.additive("h2", U), Teacher.network("tanh", np.ones(2), 1.5 * U),
             Teacher.gated("relu", U), Teacher.multi_index({(1, 1): 1.0}, U)]
    S = popdyn.Student(4, 3, activation="relu")
    su = student_units(S, S.init(0, 0.5, kinds[0]))
    for T in kinds:
        assert "_cache" not in vars(T)
        assert T.ridge == (T.units() is not None)
        Ct = T.cross(su, 1e-10)[0]
        assert Ct.shape[0] == 3 and np.all(np.isfinite(Ct))
        assert T.variance > 0 and T in _TEACHER_CACHE        # the engine holds the cache
        terms = T.hermite_terms(8)
        assert terms and all(B.shape[1] == 4 for _, B, _ in terms)
        assert type(T.normalized()) is type(T)
        assert T.normalized().describe()["kind"] == T.describe()["kind"] == T.kind


def test_finite_sample_reads_the_family_capability():
    """popdyn.finite asks the family (its own ``finite_sample_loss`` hook), not its name."""
    from popdyn import finite
    T = popdyn.Teacher.additive("h2", np.eye(3)[:1])
    for name, S in _students().items():
        if name == "swiglu":
            continue             # popdyn.finite takes popdyn.Student (a TypeError otherwise)
        p = S.init(0, 0.5, T)
        X, y = finite.draw(T, 8, 0)
        if families.capability(family.family_of(S), "finite_sample_loss") is not None:
            assert np.isfinite(finite.empirical_loss(S, p, X, y))
        else:
            with pytest.raises(ValueError, match=f"a {family.family_of(S).label} student is not"):
                finite.empirical_loss(S, p, X, y)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 2 ** 32 - 1),
       st.sampled_from(["ridge", "nobias", "skip", "swiglu", "swiglu_biased"]))
def test_generic_update_norm_and_flattening(m, d, seed, kind):
    """The generic per-field update p − h(rates ∘ g), the step norm over the rate groups and
    from_flat ∘ flat = id, against the per-field formulas written out."""
    S = {"ridge": lambda: popdyn.Student(d, m), "nobias": lambda: popdyn.Student(d, m, bias=False,
                                                                                 intercept=False),
         "skip": lambda: popdyn.Student(d, m, skip=True),
         "swiglu": lambda: popdyn.SwiGLUStudent(d, m),
         "swiglu_biased": lambda: popdyn.SwiGLUStudent(d, m, biases=True)}[kind]()
    fam = S.family
    rng = np.random.default_rng(seed)
    shapes = fam.shapes()

    def draw():
        return fam.params_type(**{f: (float(rng.normal()) if f == "c" else rng.normal(size=s))
                                  for f, s in shapes.items()})
    p, g, q = draw(), draw(), draw()
    mult = fam.multipliers(head_lr_mult=0.5)
    rates = fam.rates(mult)
    h = 0.125
    out = fam.axpy(p, g, h, rates)
    trained = set(fam.rate_groups)
    for f in fam.fields:
        if f in trained:
            r = 0.5 if f == "a" else (0.0 if (f == "b" and not getattr(S, "bias", True)) or
                                      (f == "c" and not S.intercept) else 1.0)
            assert np.array_equal(getattr(out, f), getattr(p, f) - (h * r) * getattr(g, f)), f
        else:
            assert np.array_equal(getattr(out, f), getattr(p, f)), f
    ref = np.sqrt(sum(float(np.sum((np.asarray(getattr(p, f)) - getattr(q, f)) ** 2))
                      for f in fam.fields if f in trained))
    assert fam.diff_norm(p, q) == pytest.approx(ref, rel=1e-15)
    r = type(p).from_flat(p.flat(), m, d)
    assert np.array_equal(r.flat(), p.flat())


def test_param_container_gives_storage_and_checks():
    from popdyn.models import param_container

    P = param_container("P", {"a": ("m",), "U": ("m", "d"), "e": ("d",)})
    p = P([1.0, 2.0], np.arange(6.0).reshape(2, 3), [0.5, 0.5, 0.5], 0.25)
    assert (p.m, p.d) == (2, 3) and p.U.dtype == np.float64 and p.is_finite()
    assert np.array_equal(P.from_flat(p.flat(), 2, 3).flat(), p.flat())
    assert p.to_dict()["e"] == [0.5, 0.5, 0.5] and p.copy().flat().tolist() == p.flat().tolist()
    with pytest.raises(ValueError, match=r"`U` must have shape \(m, d\) with m = 2"):
        P([1.0, 2.0], np.zeros((3, 3)), np.zeros(3))
    with pytest.raises(ValueError, match="must start with the head"):
        param_container("Q", {"W": ("m", "d")})
