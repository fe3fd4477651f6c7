"""Teacher learnability: success rates of reaching the global minimum.

The teacher-learnability paper (see References) formalizes *learnability* as "the success rate
of converging to the global minimum, as a function of overparameterization, learning algorithm,
student initialization distribution, and teacher geometry"; it contrasts an *easy* teacher
distribution "that maximizes node dissimilarity" with a *hard* one "that minimizes it", sorts the
suboptimal end states into "out-of-bounds (OOB) minima at the edge of the data distribution and
interior minima within", and reports that "differentially increasing the learning rate of the
readout layer and decreasing the learning rate of the inner biases increases success rates".

This module makes those notions concrete on the exact population loss (x ~ N(0, I_d), infinite
data): everything it uses is *declared* in ``data/configs/learnability.toml`` before a census runs
(:func:`load_config`), each item with the sentence of the abstract it reads.

* :func:`teacher` -- the easy (orthonormal rows) and hard (nearly parallel rows) teacher networks;
* :func:`classify` -- an end state as ``global``, ``out_of_bounds``, ``interior`` or
  ``unconverged`` (the numbers it rests on returned with it);
* :func:`run` -- one student (biases, fitted intercept) trained by population gradient flow
  (:func:`popdyn.train`, exact Gaussian expectations), with or without the intervention
  "readout rate up, inner-bias rate down" (``head_lr_mult`` > 1, ``bias_lr_mult`` < 1);
* :func:`census` -- the declared grid (activations × teachers × widths × scales × intervention ×
  seeds) on any number of worker processes (results independent of the worker count);
* :func:`clopper_pearson`, :func:`rate_difference` -- the brackets over seeds;
* :func:`tabulate`, :func:`figure` -- the success-rate table and curves.

References
----------
The teacher-learnability paper (abstract: "Teacher-student systems, in which a teacher neural
network generates training labels so that a student neural network can learn to implement the
same function, are widely used as an abstract setting to study learning"), quoted where used.
C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial limits illustrated in the case
of the binomial", Biometrika 26 (1934) 404-413 (the exact interval of :func:`clopper_pearson`).
"""
from __future__ import annotations

import concurrent.futures as cf
import math
import time
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from . import _validate as V
from ._paths import data_path
from .dynamics import Schedule, train
from .experiments._threads import blas_threads
from .models import Student
from .teachers import Teacher

TEACHERS = ("easy", "hard")
#: activations of the census (teacher and student share it); piecewise-linear and smooth
ACTIVATIONS = ("relu", "leaky_relu", "tanh", "erf")
CLASSES = ("global", "out_of_bounds", "interior", "unconverged")
#: the sections and keys of a learnability configuration (``data/configs/learnability.toml``)
SECTIONS = {
    "teacher": ("k", "d", "hard_angle"),
    "classify": ("success", "z_oob", "dead_w", "tail", "stall"),
    "train": ("method", "eps", "h0", "h_max", "max_time", "max_updates"),
    "intervention": ("head_lr_mult", "bias_lr_mult"),
    "stats": ("level",),
    "quick": ("activations", "widths", "scales", "seeds", "max_time"),
    "full": ("activations", "widths", "scales", "seeds", "max_time"),
}
PRESETS = ("quick", "full")
#: base of the seed sequences of teachers and initializations (any fixed integer; declared)
SEED_BASE = 20_211_204


# ---------------------------------------------------------------------------- configuration
def load_config(path=None) -> dict:
    """The declared learnability configuration: ``data/configs/learnability.toml`` (embedded in
    the package as ``popdyn._data``) or the TOML file ``path``, validated.

    Raises ``ValueError`` naming the section and key for a missing, unknown or invalid entry.
    """
    if path is None:
        text = data_path("configs", "learnability.toml").read_text()
        source = "learnability.toml"
    else:
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"`path`: no configuration file {str(p)!r}")
        text, source = p.read_text(), str(p)
    try:
        cfg = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{source}: not valid TOML ({exc})") from None
    return validate_config(cfg, source=source)


def validate_config(cfg: dict, *, source: str = "<config>") -> dict:
    """Check a configuration dict (as :func:`load_config` reads it); returns a cleaned copy."""
    if not isinstance(cfg, dict):
        raise TypeError(f"`cfg` must be a dict, got {type(cfg).__name__}")
    out: dict[str, Any] = {"name": str(cfg.get("name", "learnability"))}
    for sec, keys in SECTIONS.items():
        tab = cfg.get(sec)
        if not isinstance(tab, dict):
            raise ValueError(f"{source}: missing section [{sec}] (keys {list(keys)})")
        unknown = sorted(set(tab) - set(keys))
        if unknown:
            raise ValueError(f"{source}: unknown key(s) {unknown} in [{sec}]; valid: {list(keys)}")
        missing = [k for k in keys if k not in tab]
        if missing:
            raise ValueError(f"{source}: missing key(s) {missing} in [{sec}]")
        out[sec] = dict(tab)
    t = out["teacher"]
    k = V.positive_int("[teacher] k", t["k"])
    d = V.positive_int("[teacher] d", t["d"])
    if d < k + 1:
        raise ValueError(f"{source}: [teacher] needs d >= k + 1 (the hard teacher uses a (k+1)-frame), "
                         f"got k = {k}, d = {d}")
    ang = V.real("[teacher] hard_angle", t["hard_angle"], positive=True)
    if not ang < math.pi / 4:
        raise ValueError(f"{source}: [teacher] hard_angle must be in (0, pi/4) (nearly parallel rows), got {ang}")
    c = out["classify"]
    for key in ("success", "z_oob", "dead_w", "stall"):
        V.real(f"[classify] {key}", c[key], positive=True)
    if not 0 < c["tail"] < 1:
        raise ValueError(f"{source}: [classify] tail must be in (0, 1), got {c['tail']!r}")
    tr = out["train"]
    V.choice("[train] method", tr["method"], ("flow", "gd"))
    for key in ("eps", "h0", "h_max", "max_time"):
        V.real(f"[train] {key}", tr[key], positive=True)
    V.positive_int("[train] max_updates", tr["max_updates"])
    iv = out["intervention"]
    ha = V.real("[intervention] head_lr_mult", iv["head_lr_mult"], positive=True)
    hb = V.real("[intervention] bias_lr_mult", iv["bias_lr_mult"], nonnegative=True)
    if not (ha > 1 and hb < 1):
        raise ValueError(f"{source}: the intervention is 'readout rate up, inner-bias rate down': "
                         f"need head_lr_mult > 1 and bias_lr_mult < 1, got {ha}, {hb}")
    lev = V.real("[stats] level", out["stats"]["level"], positive=True)
    if not lev < 1:
        raise ValueError(f"{source}: [stats] level must be in (0, 1), got {lev}")
    for pre in PRESETS:
        g = out[pre]
        if not g["activations"] or not all(isinstance(a, str) for a in g["activations"]):
            raise ValueError(f"{source}: [{pre}] activations must be a non-empty list of names")
        for a in g["activations"]:
            V.choice(f"[{pre}] activations", a, ACTIVATIONS)
        for m in g["widths"]:
            V.positive_int(f"[{pre}] widths", m)
            if m < k:
                raise ValueError(f"{source}: [{pre}] widths must be >= k = {k} (a global minimum "
                                 f"must exist), got {m}")
        for s in g["scales"]:
            V.real(f"[{pre}] scales", s, positive=True)
        if not g["widths"] or not g["scales"]:
            raise ValueError(f"{source}: [{pre}] widths and scales must be non-empty")
        V.positive_int(f"[{pre}] seeds", g["seeds"])
        V.real(f"[{pre}] max_time", g["max_time"], positive=True)
    return out


# ---------------------------------------------------------------------------- teachers
def _frame(kind: str, seed: int, k: int, d: int) -> np.ndarray:
    """A uniformly random orthonormal (k+1)-frame in R^d (rows), from the seed sequence
    (SEED_BASE, teacher kind, seed): QR of a Gaussian matrix with the sign of diag(R) fixed."""
    ss = np.random.SeedSequence([SEED_BASE, TEACHERS.index(kind), seed])
    G = np.random.default_rng(ss).standard_normal((d, k + 1))
    Q, R = np.linalg.qr(G)
    Q = Q * np.sign(np.diag(R))
    return np.ascontiguousarray(Q.T)


def teacher_rows(kind: str, seed: int, *, k: int, d: int, hard_angle: float) -> np.ndarray:
    """The unit rows u_1..u_k (k, d) of a teacher of distribution ``kind``.

    ``"easy"`` (maximal node dissimilarity): k orthonormal rows -- pairwise cosine 0.
    ``"hard"`` (minimal node dissimilarity): u_j = cos(angle)·e + sin(angle)·f_j with
    (e, f_1, …, f_k) orthonormal -- nearly parallel, pairwise cosine cos²(angle).
    The frame is random and seeded (:func:`_frame`), so the teachers of a census are IID draws.
    """
    V.choice("kind", kind, TEACHERS)
    seed = V.nonneg_int("seed", seed)
    k, d = V.positive_int("k", k), V.positive_int("d", d)
    if d < k + 1:
        raise ValueError(f"need `d` >= `k` + 1, got k = {k}, d = {d}")
    ang = V.real("hard_angle", hard_angle, positive=True)
    F = _frame(kind, seed, k, d)
    if kind == "easy":
        return F[:k].copy()
    return np.cos(ang) * F[0][None, :] + np.sin(ang) * F[1:]


def teacher(kind: str, seed: int, *, activation: str = "relu", k: int, d: int, hard_angle: float):
    """The teacher network y = Σ_j σ(u_j·x) (output weights 1, biases 0) with the rows of
    :func:`teacher_rows` and the activation ``activation``."""
    V.choice("activation", activation, ACTIVATIONS)
    U = teacher_rows(kind, seed, k=k, d=d, hard_angle=hard_angle)
    return Teacher.network(activation, np.ones(U.shape[0]), U)


# ---------------------------------------------------------------------------- classification
def kink_depths(params) -> np.ndarray:
    """|b_j| / ‖w_j‖ per unit: how many standard deviations of w_j·x (x ~ N(0, I)) the kink
    w_j·x = −b_j lies from the centre of the data (inf for w_j = 0, 0 for b_j = 0 = w_j).
    ‖w_j‖ is :func:`math.hypot` of the row (scaled: no underflow of ‖w_j‖² for tiny w_j, whose
    unscaled square would be subnormal and keep only a few significant bits)."""
    a = np.asarray(params.a)
    wn = np.array([math.hypot(*row) for row in np.asarray(params.W, dtype=float)])
    b = np.abs(np.asarray(params.b))
    out = np.empty(a.shape[0])
    with np.errstate(over="ignore"):           # a depth beyond the float range is inf
        for j in range(a.shape[0]):
            out[j] = (0.0 if b[j] == 0 else math.inf) if wn[j] == 0 else b[j] / wn[j]
    return out


def classify(params, loss: float, variance: float, *, losses=None, times=None, success: float,
             z_oob: float, dead_w: float, tail: float, stall: float) -> dict:
    """Classify the end state ``params`` of a run (the teacher-learnability paper's
    "out-of-bounds (OOB) minima at the edge of the data distribution and interior minima within").

    Parameters
    ----------
    params : popdyn.Params
        The end state.
    loss, variance : float
        Its population loss L and the teacher variance V_Y (normalized loss 2L/V_Y).
    losses, times : array_like, optional
        The run's loss and flow-time histories (for the rest test of ``interior``); without them
        a non-global, in-bounds state is ``unconverged``.
    success : float
        Global minimum iff 2L/V_Y ≤ ``success``.
    z_oob, dead_w : float
        Out of bounds iff some unit has |b_j|/‖w_j‖ > ``z_oob`` or ‖w_j‖ ≤ ``dead_w`` (dead).
    tail, stall : float
        At rest iff the loss dropped by at most the fraction ``stall`` over the last ``tail``
        fraction of the run's flow time: (L(t_end − tail·t_end) − L_end)/L_end ≤ stall.

    Returns
    -------
    dict
        ``kind`` (one of :data:`CLASSES`), ``nloss`` (2L/V_Y), ``z`` (the kink depths),
        ``far`` and ``dead`` (unit indices), ``drop`` (the tail's relative loss drop, or None).
        The order of the tests is: global, then out_of_bounds, then interior / unconverged.
    """
    success = V.real("success", success, positive=True)
    z_oob = V.real("z_oob", z_oob, positive=True)
    dead_w = V.real("dead_w", dead_w, nonnegative=True)
    tail = V.real("tail", tail, positive=True)
    stall = V.real("stall", stall, positive=True)
    if not tail < 1:
        raise ValueError(f"`tail` must be in (0, 1), got {tail}")
    variance = V.real("variance", variance, positive=True)
    loss = V.real("loss", loss, nonnegative=True)
    nloss = 2.0 * loss / variance
    z = kink_depths(params)
    wn = np.linalg.norm(np.asarray(params.W), axis=1)
    dead = [int(j) for j in np.flatnonzero(wn <= dead_w)]
    far = [int(j) for j in np.flatnonzero(z > z_oob) if int(j) not in dead]
    drop = None
    if losses is not None:
        if times is None:
            raise ValueError("`times` must be given with `losses`")
        L = np.asarray(losses, dtype=np.float64)
        t = np.asarray(times, dtype=np.float64)
        if L.shape != t.shape or L.ndim != 1 or L.size == 0:
            raise ValueError(f"`losses` and `times` must be 1-d of the same length, got {L.shape}, {t.shape}")
        i = int(np.searchsorted(t, t[-1] * (1.0 - tail), side="right")) - 1
        i = max(i, 0)
        drop = float((L[i] - L[-1]) / L[-1]) if L[-1] > 0 else 0.0
    if nloss <= success:
        kind = "global"
    elif dead or far:
        kind = "out_of_bounds"
    elif drop is not None and drop <= stall:
        kind = "interior"
    else:
        kind = "unconverged"
    return dict(kind=kind, nloss=nloss, z=[float(x) for x in z], far=far, dead=dead, drop=drop)


# ---------------------------------------------------------------------------- runs
def init_seed(seed: int, m: int, scale: float) -> int:
    """The initialization seed of census seed ``seed`` at width ``m`` and scale ``scale`` (the
    same for both teachers and for the intervention and its baseline: paired comparisons)."""
    ss = np.random.SeedSequence([SEED_BASE, 7, seed, m, int(round(scale * 1e6))])
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def run(cfg: dict, *, activation: str, kind: str, m: int, scale: float, seed: int,
        intervention: bool, max_time: float | None = None) -> dict:
    """Train one student and classify its end state.

    The student: ``Student(d, m, activation, bias=True, intercept=True)`` initialized by
    ``Student.init(init_seed(seed, m, scale), scale, teacher)`` (fitted intercept); trained by
    :func:`popdyn.train` with the declared ``[train]`` settings, stopped at the success threshold
    (``loss_target = [classify] success``) or at the horizon ``max_time``; with the declared
    ``[intervention]`` rate multipliers when ``intervention`` is True (baseline: all 1).

    Returns a plain-data record (settings, class, the numbers behind it, counters, wall time).
    """
    V.choice("activation", activation, ACTIVATIONS)
    V.choice("kind", kind, TEACHERS)
    m = V.positive_int("m", m)
    scale = V.real("scale", scale, positive=True)
    seed = V.nonneg_int("seed", seed)
    if not isinstance(intervention, bool):
        raise TypeError(f"`intervention` must be a bool, got {intervention!r}")
    t, c, tr = cfg["teacher"], cfg["classify"], cfg["train"]
    T = teacher(kind, seed, activation=activation, k=t["k"], d=t["d"], hard_angle=t["hard_angle"])
    st = Student(d=t["d"], m=m, activation=activation, bias=True, intercept=True)
    p0 = st.init(init_seed(seed, m, scale), scale, T)
    rates = cfg["intervention"] if intervention else {"head_lr_mult": 1.0, "bias_lr_mult": 1.0}
    horizon = float(tr["max_time"] if max_time is None else max_time)
    kw = dict(eps=tr["eps"], h0=tr["h0"], h_max=tr["h_max"]) if tr["method"] == "flow" else dict(lr=tr["h0"])
    t0 = time.perf_counter()
    traj = train(st, p0, T, method=tr["method"], max_time=horizon, max_updates=int(tr["max_updates"]),
                 loss_target=float(c["success"]), head_lr_mult=float(rates["head_lr_mult"]),
                 bias_lr_mult=float(rates["bias_lr_mult"]), schedule=Schedule(every=10 ** 9, early=()),
                 **kw)
    wall = time.perf_counter() - t0
    cl = classify(traj.final, float(traj.loss[-1]), T.variance, losses=traj.loss, times=traj.t,
                  success=c["success"], z_oob=c["z_oob"], dead_w=c["dead_w"], tail=c["tail"],
                  stall=c["stall"])
    fin = traj.final
    return dict(activation=activation, teacher=kind, m=m, scale=scale, seed=seed,
                intervention=intervention, **cl, status=traj.status, updates=int(traj.n[-1]),
                t_end=float(traj.t[-1]), horizon=horizon, wall=wall,
                a=fin.a.tolist(), W=fin.W.tolist(), b=fin.b.tolist(), c=float(fin.c))


def grid(cfg: dict, preset: str) -> list:
    """The declared runs of ``preset`` ("quick" or "full"), as keyword dicts for :func:`run`,
    in a fixed order with the seed outermost (so that any prefix of the census -- an
    interrupted one -- covers every cell with as many seeds as any other, ±1)."""
    V.choice("preset", preset, PRESETS)
    g = cfg[preset]
    return [dict(activation=a, kind=kd, m=int(m), scale=float(s), seed=i, intervention=iv,
                 max_time=float(g["max_time"]))
            for i in range(int(g["seeds"])) for a in g["activations"] for kd in TEACHERS
            for m in g["widths"] for s in g["scales"] for iv in (False, True)]


def _key(kw) -> str:
    return (f"{kw['activation']}|{kw['kind']}|{kw['m']}|{kw['scale']!r}|{kw['seed']}|"
            f"{int(kw['intervention'])}|{kw['max_time']!r}")


def _run_kw(args):
    cfg, kw = args
    with blas_threads(1):
        return run(cfg, **kw)


def census(cfg: dict, preset: str = "quick", *, workers: int = 1, log=None, limit: int = 0,
           progress=None) -> list:
    """Every run of :func:`grid` (``workers`` processes; 1 = in this process), in grid order;
    with ``limit`` > 0 only its first ``limit`` runs (a prefix: every cell with the same number
    of seeds when ``limit`` is a multiple of the number of cells).

    Each run is a deterministic function of its settings, so the records do not depend on the
    worker count or the completion order (only their ``wall`` times do).  With ``log`` (a path),
    each finished record is appended to that JSON-lines file as it completes, and the runs
    already in it (same settings and configuration) are read back instead of recomputed: an
    interrupted census resumes.
    """
    import json

    workers = V.positive_int("workers", workers)
    limit = V.nonneg_int("limit", limit)
    kws = grid(cfg, preset)
    if limit:
        kws = kws[:limit]
    stamp = json.dumps({s: cfg[s] for s in ("teacher", "classify", "train", "intervention")},
                       sort_keys=True)
    done = {}
    if log is not None:
        log = Path(log)
        if log.is_file():
            for line in log.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:      # a line cut by an interruption
                    continue
                if rec.get("_config") == stamp:
                    done[rec["_key"]] = rec
    out: list[Any] = [done.get(_key(kw)) for kw in kws]     # every entry is set by finish
    todo = [i for i, r in enumerate(out) if r is None]
    fh = None if log is None else open(log, "a")

    def finish(i, rec, n_done):
        rec = dict(rec, _key=_key(kws[i]), _config=stamp)
        out[i] = rec
        if fh is not None:
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
        if progress is not None:
            progress(n_done, len(todo), rec)

    try:
        if workers == 1:
            for n, i in enumerate(todo):
                finish(i, _run_kw((cfg, kws[i])), n + 1)
        else:
            with cf.ProcessPoolExecutor(workers) as ex:
                futs = {ex.submit(_run_kw, (cfg, kws[i])): i for i in todo}
                for n, f in enumerate(cf.as_completed(futs)):
                    finish(futs[f], f.result(), n + 1)
    finally:
        if fh is not None:
            fh.close()
    return [{k: v for k, v in r.items() if not k.startswith("_")} for r in out]


# ---------------------------------------------------------------------------- statistics
def clopper_pearson(successes: int, n: int, level: float = 0.95) -> tuple:
    """The two-sided Clopper–Pearson (exact) interval for a binomial proportion.

    lo = B⁻¹(α/2; x, n − x + 1) (0 if x = 0), hi = B⁻¹(1 − α/2; x + 1, n − x) (1 if x = n),
    α = 1 − ``level``, B⁻¹ the beta quantile (Clopper & Pearson 1934).  Its coverage is at least
    ``level`` for every true proportion.  n = 0 gives [0, 1] (nothing observed).
    """
    from scipy.special import betaincinv

    n = V.nonneg_int("n", n)
    x = V.nonneg_int("successes", successes)
    if x > n:
        raise ValueError(f"`successes` must be <= `n`, got {x} > {n}")
    level = V.real("level", level, positive=True)
    if not level < 1:
        raise ValueError(f"`level` must be in (0, 1), got {level}")
    if n == 0:
        return (0.0, 1.0)
    alpha = 1.0 - level
    lo = 0.0 if x == 0 else float(betaincinv(x, n - x + 1, alpha / 2))
    hi = 1.0 if x == n else float(betaincinv(x + 1, n - x, 1 - alpha / 2))
    return (lo, hi)


def rate_difference(x1: int, n1: int, x2: int, n2: int, level: float = 0.95) -> tuple:
    """A bracket on p₁ − p₂ at confidence ≥ ``level``: [lo₁ − hi₂, hi₁ − lo₂] from the two
    Clopper–Pearson intervals at level 1 − (1 − level)/2 each (Bonferroni: valid whatever the
    dependence between the two samples, e.g. paired seeds)."""
    level = V.real("level", level, positive=True)
    if not level < 1:
        raise ValueError(f"`level` must be in (0, 1), got {level}")
    each = 1.0 - (1.0 - level) / 2.0
    l1, h1 = clopper_pearson(x1, n1, each)
    l2, h2 = clopper_pearson(x2, n2, each)
    return (l1 - h2, h1 - l2)


def select(records, **where) -> list:
    """The records whose fields equal ``where`` (a value may be a tuple of allowed values)."""
    out = []
    for r in records:
        ok = True
        for key, val in where.items():
            if key not in r:
                raise ValueError(f"unknown record field {key!r}; valid: {sorted(r)}")
            if isinstance(val, tuple):
                ok &= r[key] in val
            else:
                ok &= r[key] == val
        if ok:
            out.append(r)
    return out


def counts(records) -> dict:
    """Number of records of each class (all of :data:`CLASSES`) and the total ``n``."""
    c = {k: 0 for k in CLASSES}
    for r in records:
        c[r["kind"]] += 1
    c["n"] = len(records)
    return c


def cells(cfg: dict, preset: str) -> int:
    """The number of cells (activation × teacher × width × scale × intervention) of ``preset``:
    the grid has that many runs per seed."""
    V.choice("preset", preset, PRESETS)
    g = cfg[preset]
    return len(g["activations"]) * len(TEACHERS) * len(g["widths"]) * len(g["scales"]) * 2


def tabulate(records, level: float = 0.95) -> list:
    """One row per cell (activation, teacher, intervention, m, scale): the class counts, the
    success rate and its Clopper–Pearson interval at ``level``."""
    keys = sorted({(r["activation"], r["teacher"], r["intervention"], r["m"], r["scale"])
                   for r in records})
    rows = []
    for a, kd, iv, m, s in keys:
        c = counts(select(records, activation=a, teacher=kd, intervention=iv, m=m, scale=s))
        lo, hi = clopper_pearson(c["global"], c["n"], level)
        rows.append(dict(activation=a, teacher=kd, intervention=iv, m=m, scale=s, **c,
                         rate=c["global"] / c["n"], lo=lo, hi=hi))
    return rows


def format_table(rows) -> str:
    """The rows of :func:`tabulate` as a fixed-width text table."""
    head = (f"{'act':<10} {'teacher':<5} {'interv':<6} {'m':>3} {'scale':>6} {'n':>4} "
            f"{'glob':>4} {'oob':>4} {'int':>4} {'unc':>4}  rate  [CP interval]")
    lines = [head]
    for r in rows:
        lines.append(f"{r['activation']:<10} {r['teacher']:<5} {('yes' if r['intervention'] else 'no'):<6} "
                     f"{r['m']:>3} {r['scale']:>6g} {r['n']:>4} {r['global']:>4} "
                     f"{r['out_of_bounds']:>4} {r['interior']:>4} {r['unconverged']:>4}  "
                     f"{r['rate']:.2f}  [{r['lo']:.2f}, {r['hi']:.2f}]")
    return "\n".join(lines)


def figure(records, out, *, level: float = 0.95, dpi: int = 110) -> Path:
    """Success-rate curves against width: one panel per (activation, initialization scale), one
    curve per teacher distribution × intervention, Clopper–Pearson error bars; written to ``out``
    (PNG)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = tabulate(records, level)
    acts = sorted({r["activation"] for r in rows})
    scales = sorted({r["scale"] for r in rows})
    fig, axes = plt.subplots(len(acts), len(scales), figsize=(3.6 * len(scales), 3.0 * len(acts)),
                             squeeze=False, sharey=True)
    styles = {("easy", False): ("tab:blue", "-"), ("easy", True): ("tab:blue", "--"),
              ("hard", False): ("tab:red", "-"), ("hard", True): ("tab:red", "--")}
    for i, a in enumerate(acts):
        for j, s in enumerate(scales):
            ax = axes[i][j]
            for (kd, iv), (col, ls) in styles.items():
                rr = sorted((r for r in rows if r["activation"] == a and r["scale"] == s
                             and r["teacher"] == kd and r["intervention"] == iv), key=lambda r: r["m"])
                if not rr:
                    continue
                x = np.array([r["m"] for r in rr], dtype=float) + (0.06 if iv else -0.06)
                y = np.array([r["rate"] for r in rr])
                err = np.array([[r["rate"] - r["lo"] for r in rr], [r["hi"] - r["rate"] for r in rr]])
                ax.errorbar(x, y, yerr=err, color=col, ls=ls, marker="o", ms=3, capsize=2,
                            label=f"{kd}{' + intervention' if iv else ''}")
            ax.set_title(f"{a}, init scale {s:g}", fontsize=9)
            ax.set_xticks(sorted({r["m"] for r in rows}))
            ax.set_ylim(-0.05, 1.05)
            ax.set_xlabel("student width m")
            if j == 0:
                ax.set_ylabel("success rate")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="lower right")
    n0, n1 = min(r["n"] for r in rows), max(r["n"] for r in rows)
    ns = f"{n0}" if n0 == n1 else f"{n0}-{n1}"
    fig.suptitle(f"teacher learnability: success rate (2L/V_Y reached the threshold within the horizon), "
                 f"{level:.0%} Clopper-Pearson bars, {ns} seeds per point", fontsize=9)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out
