"""Kernel threads (:mod:`popdyn.threads`): the setting, its configuration key, and results that
do not depend on it (the pair moments' parallel chunks against the serial evaluation of the same
pairs, bit for bit)."""
import numpy as np
import pytest

import popdyn
from popdyn import threads as T
from popdyn._kernels.pl_chunks import _CHUNK, _chunk_index, _chunk_starts
from popdyn._kernels.plmoments import pl_pair_moments, pl_self_moments
from popdyn.config import ConfigError, loads
from popdyn.experiments.sweep import plan

CFG = """
name = "t"
[teacher]
link = "h2"
[student]
d = 4
m = 3
[init]
seeds = [0]
scale = 1.0
[train]
max_updates = 2
"""


def test_setting_and_bad_input():
    n0 = T.get_threads()
    with T.threads(1):
        assert T.get_threads() == 1
    assert T.get_threads() == n0
    prev = T.set_threads(1)
    assert T.get_threads() == 1
    T.set_threads(prev)
    for bad in (0, -1, T.max_threads() + 1, 1.5, True, "2"):
        with pytest.raises(ValueError, match=r"`threads` must be an integer in \[1, \d+\]"):
            T.set_threads(bad)
    assert T.per_worker(2, 1) == 1
    assert T.per_worker(10 ** 6) == 1
    assert 1 <= T.per_worker(1) <= T.max_threads()


def test_config_key_is_not_part_of_the_run_key():
    base = loads(CFG)
    with_t = loads(CFG + "[execution]\nthreads = 1\n")
    assert [k for k, _ in plan(base)] == [k for k, _ in plan(with_t)]
    with pytest.raises(ConfigError, match=r"\[execution\] threads must be a positive integer"):
        loads(CFG + "[execution]\nthreads = 0\n")
    with pytest.raises(ConfigError):
        loads(CFG + "[execution]\nworkers = 2\n")


@pytest.mark.parametrize("m1,m2,upper", [(1, 1, True), (45, 45, True), (46, 46, True),
                                         (160, 160, True), (300, 7, False), (33, 97, False),
                                         (1025, 1, False), (1, 1025, False)])
def test_chunk_starts_follow_the_serial_chunking(m1, m2, upper):
    R = np.zeros((m1, m2))
    I, J = np.empty(_CHUNK, np.int64), np.empty(_CHUNK, np.int64)
    RHO, OM, OP = np.empty(_CHUNK), np.empty(_CHUNK), np.empty(_CHUNK)
    DG = np.empty(_CHUNK, np.bool_)
    starts, i, j = [], 0, 0
    while i < m1:
        starts.append((i, j))
        _, i, j = _chunk_index(R, R, R, i, j, 0, m1, 0, m2, upper, I, J, RHO, OM, OP, DG)
    CI, CJ = _chunk_starts(m1, m2, upper)
    assert list(zip(CI.tolist(), CJ.tolist())) == starts


def _units(rng, m, d=5):
    W = rng.standard_normal((m, d))
    W[3] = W[2]                                   # duplicated and antiparallel directions
    W[5] = -W[4]
    al = np.linalg.norm(W, axis=1)
    th = W / al[:, None]
    be = rng.standard_normal(m) * al * rng.choice([0.3, 3.0], m)
    R = th @ th.T
    OMR = 0.5 * ((th[:, None, :] - th[None, :, :]) ** 2).sum(-1)
    OPR = 0.5 * ((th[:, None, :] + th[None, :, :]) ** 2).sum(-1)
    return np.full(m, 0.8), np.full(m, 0.2), al, be, R, OMR, OPR


def test_parallel_chunks_equal_the_serial_pairs_bit_for_bit():
    """m = 160 (13 chunks: the parallel path) on 1 and on every thread: the same bits, and every
    entry equal to the same pair evaluated alone (one chunk: the serial path)."""
    rng = np.random.default_rng(5)
    m = 160
    p, q, al, be, R, OMR, OPR = _units(rng, m)
    outs = []
    for n in sorted({1, T.max_threads()}):
        with T.threads(n):
            C, B, A, D = (np.full((m, m), np.nan) for _ in range(4))
            pl_self_moments(p, q, al, be, R, OMR, OPR, C, B, A, D)
            outs.append((C, B, A, D))
    for X, Y in zip(outs[0], outs[-1]):
        assert np.array_equal(X, Y)
    C, B, A, D = outs[0]
    for i, j in [(0, 1), (2, 3), (4, 5), (7, 150), (159, 3), (80, 81), (100, 20)]:
        c, b, a, dd = (np.full((1, 1), np.nan) for _ in range(4))
        sl = slice(i, i + 1), slice(j, j + 1)
        pl_pair_moments(p[i:i + 1], q[i:i + 1], al[i:i + 1], be[i:i + 1], p[j:j + 1],
                        q[j:j + 1], al[j:j + 1], be[j:j + 1], R[sl], OMR[sl], OPR[sl], c, b, a, dd)
        assert (c[0, 0], b[0, 0], a[0, 0], dd[0, 0]) == (C[i, j], B[i, j], A[i, j], D[i, j])


def test_loss_and_grad_same_bits_on_any_thread_count():
    rng = np.random.default_rng(2)
    d, m = 8, 200
    S = popdyn.Student(d=d, m=m, activation="relu")
    p = popdyn.Params(rng.standard_normal(m), rng.standard_normal((m, d)) / np.sqrt(d),
                      0.5 * rng.standard_normal(m), 0.0)
    _same_bits_on_1_and_all_threads(S, p, popdyn.Teacher.additive("relu", np.eye(d)[:2]))


def _same_bits_on_1_and_all_threads(S, p, Tt):
    res = []
    for n in sorted({1, T.max_threads()}):
        with T.threads(n):
            L, g = popdyn.loss_and_grad(S, p, Tt)[:2]
            res.append((L, g.a, g.W, g.b))
    assert res[0][0] == res[-1][0]
    for X, Y in zip(res[0][1:], res[-1][1:]):
        assert np.array_equal(X, Y)


def test_tiled_loss_and_grad_same_bits_on_any_thread_count(monkeypatch):
    """The tiled evaluation (more units than the tile): each 128-unit tile's pairs run in
    parallel groups of chunks; the results are the same bits on 1 and on every core, and the
    tile moments equal the serial walk's."""
    from popdyn._kernels import fused as fk
    monkeypatch.setattr(fk, "TILE", 128)
    rng = np.random.default_rng(3)
    d, m = 8, 300
    S = popdyn.Student(d=d, m=m, activation="relu")
    p = popdyn.Params(rng.standard_normal(m), rng.standard_normal((m, d)) / np.sqrt(d),
                      0.5 * rng.standard_normal(m), 0.0)
    assert fk.tile_for(m) == 128
    _same_bits_on_1_and_all_threads(S, p, popdyn.Teacher.additive("h3", np.eye(d)[:2]))
    # one off-diagonal tile in parallel groups against the serial chunk walk
    from popdyn._kernels.pl_chunks import _chunk_arrays
    from popdyn._kernels.pl_pair import pl_units
    from popdyn._kernels.pl_batch import _list_scratch
    from popdyn._kernels.pl_front import _unit_array
    W, b = p.W, p.b
    al = np.linalg.norm(W, axis=1)
    th = W / al[:, None]
    pv, qv = np.ones(m), np.zeros(m)
    U = pl_units(pv, qv, al, b)
    UA = _unit_array(U, pv, qv, al, b)
    i0, i1, j0, j1 = 0, 128, 128, 256
    R = th[i0:i1] @ th[j0:j1].T
    OMR = 0.5 * ((th[i0:i1, None, :] - th[None, j0:j1, :]) ** 2).sum(-1)
    OPR = 0.5 * ((th[i0:i1, None, :] + th[None, j0:j1, :]) ** 2).sum(-1)
    outs = []
    for par in (True, False):
        arrs = [np.full((128, 128), np.nan) for _ in range(6)]
        CI, CJ = _chunk_starts(128, 128, False)
        CI += i0
        CJ += j0
        if par:
            fk._tile_moments_par(U, pv, qv, al, b, UA, i0, i1, j0, j1, R, OMR, OPR, *arrs,
                                 CI, CJ, 4)
        else:
            fk._tile_chunks(U, pv, qv, al, b, UA, i0, i1, j0, j1, R, OMR, OPR, *arrs, CI, CJ, 0,
                            CI.shape[0], 1, *_chunk_arrays(), *_list_scratch())
        outs.append(arrs)
    for X, Y in zip(*outs):
        assert np.all(np.isfinite(X)) and np.array_equal(X, Y)


def _job(seed):
    rng = np.random.default_rng(seed)
    d, m = 6, 160
    S = popdyn.Student(d=d, m=m, activation="relu")
    p = popdyn.Params(rng.standard_normal(m), rng.standard_normal((m, d)) / 3,
                      rng.standard_normal(m), 0.0)
    return popdyn.loss_and_grad(S, p, popdyn.Teacher.additive("h3", np.eye(d)[:2]))[0]


def test_parallel_kernels_survive_a_fork():
    """A process that has run the parallel kernels forks a pool whose workers run them too (the
    sweeps' local pool): the threading layer must be fork-safe (GNU OpenMP terminates such a
    child); the children's values equal the parent's."""
    import concurrent.futures as cf
    import multiprocessing as mp_

    here = [_job(s) for s in (1, 2)]
    with cf.ProcessPoolExecutor(2, mp_context=mp_.get_context("fork")) as ex:
        there = list(ex.map(_job, (1, 2)))
    assert here == there


def test_kernel_blas_single_thread_and_restored():
    """From BLAS_SERIAL_MIN_UNITS units on, the kernels' BLAS runs on one thread and the thread
    counts are restored after (also on an exception); below it nothing is changed."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    ctl = threadpoolctl.ThreadpoolController()
    libs = T._blas_libs()
    assert libs, "no BLAS library found by threadpoolctl"
    with ctl.limit(limits=2, user_api="blas"):
        before = [lc.get_num_threads() for lc in libs]
        if all(n == 1 for n in before):
            pytest.skip("the BLAS runs on one thread here: nothing to pin or restore")
        with T.kernel_blas(T.BLAS_SERIAL_MIN_UNITS):
            assert all(lc.get_num_threads() == 1 for lc in libs)
        assert [lc.get_num_threads() for lc in libs] == before
        with pytest.raises(RuntimeError):
            with T.kernel_blas(10 ** 4):
                raise RuntimeError
        assert [lc.get_num_threads() for lc in libs] == before
        with T.kernel_blas(T.BLAS_SERIAL_MIN_UNITS - 1):
            assert [lc.get_num_threads() for lc in libs] == before


def test_loss_and_grad_same_bits_whatever_the_blas_threads():
    """The fused step of a large student gives the same bits whether the process's BLAS runs on
    one or two threads (kernel_blas pins it to one inside the kernels; a multi-threaded BLAS
    gives other bits for these products)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    rng = np.random.default_rng(3)
    d, m = 16, 300
    S = popdyn.Student(d=d, m=m, activation="relu")
    p = popdyn.Params(rng.standard_normal(m), rng.standard_normal((m, d)) / np.sqrt(d),
                      0.5 * rng.standard_normal(m), 0.1)
    Tt = popdyn.Teacher.network("relu", [1.0, -0.5], np.eye(d)[:2], bias=[0.1, 0.0])
    res = []
    for nb in (1, 2):
        with threadpoolctl.threadpool_limits(limits=nb, user_api="blas"):
            L, g = popdyn.loss_and_grad(S, p, Tt)[:2]
            res.append((L, g.a, g.W, g.b))
    assert res[0][0] == res[1][0]
    for X, Y in zip(res[0][1:], res[1][1:]):
        assert np.array_equal(X, Y)


def test_kernel_blas_sections_nest_across_threads():
    """Sections open in two Python threads at once: the BLAS stays on one thread until the last
    one closes (a threaded executor's runs never see it restored mid-kernel)."""
    import threading

    threadpoolctl = pytest.importorskip("threadpoolctl")
    libs = T._blas_libs()
    inner_open, release = threading.Event(), threading.Event()
    seen = []

    def other():
        with T.kernel_blas(10 ** 4):
            inner_open.set()
            release.wait(10)
            seen.append([lc.get_num_threads() for lc in libs])

    with threadpoolctl.ThreadpoolController().limit(limits=2, user_api="blas"):
        before = [lc.get_num_threads() for lc in libs]
        if all(n == 1 for n in before):
            pytest.skip("the BLAS runs on one thread here: nothing to pin or restore")
        th = threading.Thread(target=other)
        with T.kernel_blas(10 ** 4):
            th.start()
            inner_open.wait(10)
        # this thread's section has closed; the other's is still open
        assert all(lc.get_num_threads() == 1 for lc in libs)
        release.set()
        th.join(10)
        assert seen == [[1] * len(libs)]
        assert [lc.get_num_threads() for lc in libs] == before
