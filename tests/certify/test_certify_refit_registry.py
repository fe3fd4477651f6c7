"""certify.loss, .alignment and .refit_risk dispatch through the certifier registry
(certify._families: one Certifier per family): every family the engine registers has a
certified refit builder, the kinds are the family's own (as on the float side), a family with
no certifier (or a certifier without the operation) is refused with one CertificationError
line, not a wrong bracket, and SwiGLU's gated-teacher moments come from the moment-source
table."""
import dataclasses
import sys
import os

import numpy as np
import pytest

import certify
import popdyn
from certify import _families
from certify.errors import CertificationError
from popdyn import family

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "popdyn"))


def _without(monkeypatch, name, **fields):
    """Replace the certifier of family ``name`` by a copy with ``fields`` changed."""
    monkeypatch.setitem(_families.CERTIFIERS, name,
                        dataclasses.replace(_families.CERTIFIERS[name], **fields))


def test_every_engine_family_has_a_certified_refit():
    assert set(family.names()) <= set(_families.names("refit"))


def test_one_certifier_per_family_with_its_capabilities():
    C = _families.CERTIFIERS
    assert set(C) == {"ridge", "skip", "swiglu"}
    assert all(isinstance(c, _families.Certifier) and c.family == n for n, c in C.items())
    assert _families.names("grad") == ["ridge", "skip"]
    assert _families.names("alignment") == ["ridge", "skip", "swiglu"]
    S = popdyn.SwiGLUStudent(4, 3)
    assert _families.of(S) is C["swiglu"] and _families.of(popdyn.Student(4, 3)) is C["ridge"]
    with pytest.raises(TypeError, match="popdyn student"):
        _families.of("relu")
    with pytest.raises(ValueError, match="`operation` must be one of 'loss', 'grad'"):
        C["ridge"].covers("hessian")


def test_moment_sources_are_named_table_entries():
    """(family, teacher class) -> moment source: SwiGLU's gated teachers give the loss and the
    refit outright; the ridge family's gated teachers and smooth networks (PL students) give
    moments; the skip family has the smooth-network source only (gated: numerical refit)."""
    from certify import gated, pl_smooth
    G = popdyn.Teacher.gated("tanh", np.eye(4)[:2])
    H = popdyn.Teacher.additive("h2", np.eye(4)[:1])
    N = popdyn.Teacher.network("tanh", np.ones(2), np.eye(4)[:2])
    sw, ridge, skip = (popdyn.SwiGLUStudent(4, 3), popdyn.Student(4, 3),
                       popdyn.Student(4, 3, skip=True))
    src = _families.source(sw, G)
    assert isinstance(src, _families.MomentSource) and src.teachers == "gated teachers"
    assert src.loss is not None and src.refit is not None and src.moments is None
    assert _families.source(sw, H) is None and _families.source(ridge, H) is None
    assert _families.source(ridge, G).moments is gated.gated_moments
    assert _families.source(ridge, N).moments is pl_smooth.pl_smooth_moments
    assert _families.source(skip, N).moments is pl_smooth.pl_smooth_moments
    assert _families.source(skip, G) is None and not gated.covers(skip, G)
    assert gated.covers(ridge, G)


def test_swiglu_kinds_are_the_familys_own():
    T = popdyn.Teacher.additive("h2", np.eye(4)[:1])
    S = popdyn.SwiGLUStudent(4, 3)
    p = S.init(0, 0.5, T)
    with pytest.raises(ValueError, match="'projected' is not defined for SwiGLU.*'bounded'"):
        certify.refit_risk(S, p, T, kind="projected")
    with pytest.raises(ValueError, match="`U` is only used by kind='projected'"):
        certify.refit_risk(S, p, T, kind="unrestricted", U=np.eye(4)[:1])


def test_unregistered_refit_is_refused(monkeypatch):
    T = popdyn.Teacher.additive("h2", np.eye(4)[:1])
    S = popdyn.Student(d=4, m=3, skip=True)
    p = S.init(0, 0.5, T)
    _without(monkeypatch, "skip", refit=None)
    with pytest.raises(CertificationError,
                       match=r"certified refit covers the families \['ridge', 'swiglu'\], "
                             r"not skip students"):
        certify.refit_risk(S, p, T)


def test_alignment_dispatches_through_the_registry(monkeypatch):
    T = popdyn.Teacher.additive("h2", np.eye(4)[:1])
    S = popdyn.SwiGLUStudent(4, 3)
    p = S.init(0, 0.5, T)
    _without(monkeypatch, "swiglu", alignment=None)
    with pytest.raises(CertificationError, match="not SwiGLU students"):
        certify.alignment(S, p, T)


def test_gradient_refused_without_the_capability(monkeypatch):
    T = popdyn.Teacher.additive("h2", np.eye(4)[:1])
    S = popdyn.Student(d=4, m=3)
    p = S.init(0, 0.5, T)
    assert certify.loss(S, p, T, grad=True).grad is not None
    _without(monkeypatch, "ridge", grad=False)
    with pytest.raises(CertificationError, match="the gradient of a .* student is not certified"):
        certify.loss(S, p, T, grad=True)


def test_family_without_a_certifier_is_refused():
    """A family defined outside popdyn (tests/popdyn/_l2head_family.py) has no certifier: its
    loss is the float64 engine's (numerical), every certified operation is one refusal line."""
    import _l2head_family
    try:
        S = _l2head_family.SPEC.student(4, 3)
        T = popdyn.Teacher.additive("h2", np.eye(4)[:1])
        p = S.init(0, 0.5, T)
        c = _families.of(S)
        assert c.family == "l2head" and not any(
            c.covers(op) for op in ("loss", "grad", "alignment", "refit"))
        assert certify.loss(S, p, T).provenance == "numerical"
        with pytest.raises(CertificationError, match="gradient of a l2-head relu-family student"):
            certify.loss(S, p, T, grad=True)
        with pytest.raises(CertificationError, match="refit covers the families .*, not l2-head"):
            certify.refit_risk(S, p, T)
        with pytest.raises(CertificationError, match="alignment covers the families .*, not l2"):
            certify.alignment(S, p, np.eye(4)[:1])
    finally:
        popdyn.families.unregister("l2head")
        sys.modules.pop("_l2head_family", None)
