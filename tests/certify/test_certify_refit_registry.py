"""certify.refit_risk dispatches through the family registry (certify._families.REFIT): every
family the engine registers has a certified refit builder, the kinds are the family's own (as on the float side), and a
family with no builder is refused with a CertificationError, not a wrong bracket."""
import numpy as np
import pytest

import certify
import popdyn
from certify import _families
from certify.errors import CertificationError
from popdyn import family


def test_every_engine_family_has_a_certified_refit():
    assert set(family.names()) <= set(_families.REFIT)


def test_swiglu_kinds_are_the_familys_own():
    assert _families.REFIT["swiglu"].standalone and not _families.REFIT["ridge"].standalone
    T = popdyn.Teacher.additive("h2", np.eye(4)[:1])
    S = popdyn.SwiGLUStudent(4, 3)
    p = S.init(0, 0.5, T)
    with pytest.raises(ValueError, match="'projected' is not defined for SwiGLU.*'bounded'"):
        certify.refit_risk(S, p, T, kind="projected")
    with pytest.raises(ValueError, match="`U` is only used by kind='projected'"):
        certify.refit_risk(S, p, T, kind="unrestricted", U=np.eye(4)[:1])


def test_unregistered_family_is_refused(monkeypatch):
    T = popdyn.Teacher.additive("h2", np.eye(4)[:1])
    S = popdyn.Student(d=4, m=3, skip=True)
    p = S.init(0, 0.5, T)
    monkeypatch.delitem(_families.REFIT, "skip")
    with pytest.raises(CertificationError, match="not skip students"):
        certify.refit_risk(S, p, T)


def test_alignment_dispatches_through_the_registry(monkeypatch):
    assert {"ridge", "swiglu"} <= set(_families.ALIGNMENT)
    T = popdyn.Teacher.additive("h2", np.eye(4)[:1])
    S = popdyn.SwiGLUStudent(4, 3)
    p = S.init(0, 0.5, T)
    monkeypatch.delitem(_families.ALIGNMENT, "swiglu")
    with pytest.raises(CertificationError, match="not SwiGLU students"):
        certify.alignment(S, p, T)
