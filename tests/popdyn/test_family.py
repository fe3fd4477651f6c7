"""The student-family protocol (issue 18): every registered family implements it, students
carry their family, and no generic module dispatches on module names or parameter attributes."""
import os
import re

import numpy as np
import pytest

import popdyn
from popdyn import family

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
        assert family.get(name) is type(fam)
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


#: the dispatch patterns the protocol replaced (issue 18); a family's own modules may still
#: check their input types (``isinstance(student, SwiGLUStudent)`` in swiglu.py)
FORBIDDEN = [r"__name__\.endswith\(", r"hasattr\(p(arams)?, \"G\"\)",
             r"getattr\(student, \"activation\"[^)]*\) == \"swiglu\"", r"_extension\("]
OUTSIDE_FAMILY = [r"isinstance\(student, (swiglu\.)?SwiGLUStudent\)"]


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
                        if any(re.search(p, line) for p in pats):
                            hits.append(f"{os.path.relpath(path, ROOT)}:{i}: {line.strip()}")
    assert not hits, hits
