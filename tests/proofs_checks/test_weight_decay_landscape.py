"""proofs_checks.weight_decay_landscape: registration, declared settings, and a tiny run whose
numbers are checked against the independent facts they rest on (the certified global optimum
brackets the loss of every end state classified global; every certified spurious end state's
loss lies above a certified width-m upper bound)."""
import math

import numpy as np
import pytest

from popdyn.landscape import empirical as E
from proofs_checks import get_check, run_check
from proofs_checks import weight_decay_landscape as W


def test_registered_with_declared_settings():
    chk = get_check("weight_decay_landscape")
    assert set(chk.quick) == set(chk.full)
    assert chk.quick["widths"][-1] >= 2 * (E.activation_patterns(
        E.make_data(*W.parse_dataset(chk.quick["datasets"][0]))[0]).K - 1)
    with pytest.raises(ValueError, match="datasets"):
        W.parse_dataset("uniform:3:2:0")
    with pytest.raises(ValueError, match="kind:n:d:seed"):
        W.parse_dataset("gaussian:3:2")


def test_run_width_classes_are_consistent():
    pb = W._Problem("orthogonal:3:3:3", 1e-2, 128)
    assert pb.P.complete and pb.opt.gap <= 1e-10
    rows = W.run_width(pb, 1, 1.0, starts=5, lr=2.0, steps=2000, zero_tol=1e-6, assoc_tol=1e-2,
                       global_tol=1e-9, seed0=1)
    kinds = [k for k, _, _ in rows]
    assert set(kinds) <= set(E.CLASSES)
    for k, cert, Lend in rows:
        if k == "spurious":
            assert cert.verdict == "local_min" and cert.loss[0] > pb.opt.lower
            assert Lend >= cert.loss[0] * (1 - 1e-12)
        if k == "global":
            assert cert.loss[1] <= pb.opt.lower + 1e-9
    assert "spurious" in kinds          # width 1 on these mixed-sign labels (the quick claim)


def test_tiny_check_runs():
    v = run_check("weight_decay_landscape", quick=True, datasets=("orthogonal:3:3:3",),
                  small_datasets=("orthogonal:3:3:3",), widths=(1, 16), starts=2, steps=800,
                  regions=4)
    names = [p.name for p in v.parts]
    assert names[0] == "global optimum certified" and v.parts[0].verdict == "pass"
    assert v.verdict in ("pass", "fail", "undecided")
    assert any("wall times" in n for n in v.notes)
    assert not math.isnan(v.parts[0].bracket[1])
