"""certify in threads: python-flint's working precision is process-global, so certify holds a
process-wide lock inside every ``workprec`` (certify._arb).  Two threads certifying at
different precisions must get exactly the brackets they get alone (before the lock, the
thread at 200 bits ran part of its arithmetic at 53 bits and vice versa: both brackets moved)."""
import threading

import numpy as np

import popdyn
import certify
from certify.moments import clear_cache


def _setup(seed=3, m=8, d=6):
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((d, 2)))[0].T
    T = popdyn.Teacher.additive("h2", U, [1.0, 0.5])
    S = popdyn.Student(d=d, m=m, activation="relu")
    return S, S.init(seed, 0.8, T), T


def _job(S, p, T, prec, reps=2):
    out = []
    for _ in range(reps):
        clear_cache()
        r = certify.refit_risk(S, p, T, "same_budget", prec=prec)
        a = certify.alignment(S, p, T.subspace, prec=prec)
        out.append((r.risk.lo, r.risk.hi, a.a_min.lo, a.a_min.hi, a.a_top.lo, a.a_top.hi))
    return out


def test_threads_get_their_own_precision():
    S, p, T = _setup()
    precs = (53, 200)
    alone = {pr: _job(S, p, T, pr) for pr in precs}
    assert alone[53] != alone[200]          # the precision shows in the brackets
    got = {}
    threads = [threading.Thread(target=lambda pr=pr: got.__setitem__(pr, _job(S, p, T, pr)))
               for pr in precs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == alone
