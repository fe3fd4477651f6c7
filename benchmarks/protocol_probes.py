"""Protocol probes for the central paper's tables (docs/protocol.md, probes P1-P4).

Short runs, seeds 0-2, one change at a time; printed numbers are the ones quoted in
docs/protocol.md.  Nothing here is tuned: each probe varies one declared reading.

Usage:
    python benchmarks/protocol_probes.py relu SCALING INTERCEPT LR CONVENTION [MAX_UPDATES]
        Table 2 setting (d=64, m=32, s=0.01), the four teachers, seeds 0-2: E under the
        delta=1e-3 and 5% ratio prefixes of MSE/V_Y (and of MSE/E[y^2]); INTERCEPT is
        none | fitted | trained0; CONVENTION norm | entry.
    python benchmarks/protocol_probes.py clock NSEEDS LR [LR ...]
        Table 2 reading (mean-field, no intercept, norm scale, d=64, m=32, s=0.01), the four
        teachers, seeds 0..NSEEDS-1, each step LR: the 5% ratio-prefix endpoint E, the
        mean-field time lr*E, and A_mean, A_min at E (median over the seeds): shows whether the
        step changes only the clock (E*lr and the gains at E fixed) or the dynamics.
    python benchmarks/protocol_probes.py hmax LINK SEED HMAX [HMAX ...]
        Table 6 / Table 3 SwiGLU reading (d=16, m=64, eps=0.05 entry scale, mean-field clock,
        head rate 0.01, tolerance 0.05), rank-one LINK: the exact end of the delta=1e-3 prefix
        (update, mean-field time), A_top and R at 0 and at that update, for each step bound
        HMAX (integrator step convergence; stops at l <= 0.99).
    python benchmarks/protocol_probes.py swiglu SEED SCALE CONVENTION HEAD M CLOCK [MAX_UPDATES]
        h3 rank one at d=16: R_0, A_top(0), t_P (delta=1e-3), t_f, l_f.
    python benchmarks/protocol_probes.py release SETTING SEED LOSS_STOP LOGFILE [train.KEY=VALUE ...]
        Table 3 (data/configs/paper/table3.toml), the run of SETTING (e.g. h3) and SEED exactly
        as the sweep integrates it (the runner's own build(), segments of [store]
        checkpoint_every updates restarted from the last accepted step), but without the
        per-update diagnostics, stopped at the normalized loss LOSS_STOP or the config's
        horizon: writes "n t loss" of every update to LOGFILE as it goes (so a run cut short
        still says how far it got), then t_P, t_f, l_f and the status.  For the paper's
        l_stop = 0.5 of Table 3's h3 rows (Table 5, lines 327-333).  Optional train.KEY=VALUE
        arguments change one [train] reading (e.g. train.head_lr_mult=1.0) for a probe.
    python benchmarks/protocol_probes.py links STORE NSEEDS [SECTION.KEY=VALUE ...]
        Table 6 (data/configs/paper/table6.toml), seeds 0..NSEEDS-1 of the four links, with one
        reading changed (e.g. teachers.normalize=true, train.head_lr_mult=1.0; VALUE in TOML
        syntax), run through the sweep into STORE (runs already there are reused): medians of
        t_P, t(l <= 0.99), A_top(P), R_0, R_P, Delta A_top, Delta R per link, and per seed.
    python benchmarks/protocol_probes.py endpoint var|m2 NSEEDS LR [SCALE [VARIANT]]
        Table 2 reading, the four teachers normalized to unit variance (var) or unit second
        moment (m2), seeds 0..NSEEDS-1: the 5% ratio-prefix endpoint E at step LR, init scale
        SCALE (default 0.01) and VARIANT none | a_fanin | b_zero (probe P10).
    python benchmarks/protocol_probes.py table2|figure1 STORE NSEEDS [SECTION.KEY=VALUE ...]
        Table 2 / Figure 1 (data/configs/paper/table2.toml, figure1.toml), seeds 0..NSEEDS-1,
        one reading changed (e.g. teachers.normalize="second_moment", train.lr=0.025,
        train.max_updates=400 for a probe of the endpoint quantities only; select.labels=[...]
        runs only the teachers of those labels), run through the sweep into STORE: medians
        (and means) of popdyn reproduce's own per-run measures.
    python benchmarks/protocol_probes.py refitparts STORE NSEEDS
        The Table 6 runs of h3 and h3+.3h2 in STORE (seeds 0..NSEEDS-1): the unrestricted refit
        on the frozen features at 0 and at P split into the teacher's parts, y = h3 + 0.3 h2:
        the risks of h3 alone, of h2 alone and of the mixture on the same features, and the
        mixture's residual shares of h3, of 0.3 h2 and their cross term (units of V_Y = 1.09).
    python benchmarks/protocol_probes.py path D NSEEDS LR SCALE VARIANT [LINK ...]
        Probe P11 (docs/protocol.md): the clock-free path of one ReLU-student run under the
        adopted reading (mean-field, no intercept, E[y^2] = 1), D = 64 (Table 2: m = 32) or 16
        (Figure 1 / Table 1: m = 32), seeds 0..NSEEDS-1, step LR, initialization scale SCALE and
        convention VARIANT (norm | entry | a_fanin | b_zero | fanin_b0, see init_variant): the 5%
        ratio-prefix endpoint E, A_min, A_mean and the loss at E, and A_min, loss at update 200
        and the first update where A_min >= 0.986 with the loss there.  Steps only move the
        clock (P6), so what a reading changes on the path shows here.
    python benchmarks/protocol_probes.py force NSEEDS
        Probe P12: the relative initial force rho = m |grad L(theta_0)| / |theta_0| (per unit
        mean-field step; a, W, b) of the Table 2 (d = 64, s = 0.01, four teachers) and Figure 1
        (d = 16, s = 1e-4, raw SiLU) initializations, seeds 0..NSEEDS-1: a step "set from the
        initial force" (relative displacement h per update) would be h / rho.
"""
import sys
import time

import numpy as np

import popdyn
from popdyn.diagnostics import alignment
from popdyn.plateau import plateau

LINKS = {"raw": "silu", "cen": "silu_centered", "relu": "relu", "sin": "sin"}


def relu_probe(link, seed, scaling, icpt, lr, conv="norm", d=64, m=32, s=0.01, maxu=1500):
    T = popdyn.Teacher.additive(LINKS[link], np.eye(d)[:2]).normalized()
    S = popdyn.Student(d, m, intercept=(icpt != "none"), scaling=scaling)
    p = S.init(seed, s, T if icpt == "fitted" else None, convention=conv)
    tr = popdyn.train(S, p, T, method="gd", lr=lr, max_updates=maxu,
                      schedule=popdyn.Schedule(every=10 ** 9, early=()))
    L = 2 * tr.loss
    V, mu = T.variance, T.mean
    out = {}
    for nm, ell in (("V", L / V), ("Ey2", L / (V + mu ** 2))):
        out[nm + "d3"] = plateau(ell, delta=1e-3).end_n
        out[nm + "r5"] = plateau(ell, ratio=0.05).end_n
    return out, L[-1] / V


def clock_probe(link, seed, lr, d=64, m=32, s=0.01, maxu=1000):
    T = popdyn.Teacher.additive(LINKS[link], np.eye(d)[:2]).normalized()
    S = popdyn.Student(d, m, intercept=False, scaling="mean_field")
    p = S.init(seed, s, None)
    tr = popdyn.train(S, p, T, method="gd", lr=lr, max_updates=maxu,
                      schedule=popdyn.Schedule(every=10 ** 9, early=()))
    E = plateau(2 * tr.loss / T.variance, ratio=0.05).end_n
    trE = popdyn.train(S, p, T, method="gd", lr=lr, max_updates=E,
                       schedule=popdyn.Schedule(every=10 ** 9, early=()))
    a0 = alignment(popdyn.agop(S, p), T.subspace)
    aE = alignment(popdyn.agop(S, trE.final), T.subspace)
    return E, lr * E, aE.a_mean - a0.a_mean, aE.a_min - a0.a_min


def endpoint_probe(link, seed, norm, lr, s=0.01, variant="none", d=64, m=32, maxu=1500):
    """The 5% ratio-prefix endpoint E of one Table 2 run (mean-field, no intercept, norm-scale
    initialization), the teacher normalized to unit variance (``norm`` = "var") or unit second
    moment ("m2"), step ``lr``, scale ``s``; ``variant`` changes one initialization convention:
    "a_fanin" (head drawn at s/sqrt(m)), "b_zero" (zero initial biases), "none"."""
    T = popdyn.Teacher.additive(LINKS[link], np.eye(d)[:2])
    T = T.normalized() if norm == "var" else T.normalized("second_moment")
    S = popdyn.Student(d, m, intercept=False, scaling="mean_field")
    p = S.init(seed, s, None)
    if variant == "a_fanin":
        p = p.replace(a=p.a / np.sqrt(m))
    elif variant == "b_zero":
        p = p.replace(b=0 * p.b)
    elif variant != "none":
        raise ValueError(f"variant must be 'none', 'a_fanin' or 'b_zero', got {variant!r}")
    tr = popdyn.train(S, p, T, method="gd", lr=lr, max_updates=maxu,
                      schedule=popdyn.Schedule(every=10 ** 9, early=()))
    return plateau(2 * tr.loss / T.variance, ratio=0.05).end_n


def hmax_probe(link, seed, hmaxes):
    T = popdyn.Teacher.additive(link, np.eye(16)[:1])
    S = popdyn.SwiGLUStudent(16, 64, clock="mean_field")
    p = S.init(seed, 0.05, T, convention="entry")
    for hmax in hmaxes:
        t0 = time.time()
        tr = popdyn.train(S, p, T, method="flow", eps=0.05, h0=0.05, h_min=1e-6, h_max=hmax,
                          head_lr_mult=0.01, max_updates=20000, loss_target=0.99,
                          schedule=popdyn.Schedule(every=10 ** 9, early=()))
        ell = tr.normalized_loss
        pl = plateau(ell, delta=1e-3, n=tr.n, t=tr.t)
        # state at the exact last admissible update
        tr2 = popdyn.train(S, p, T, method="flow", eps=0.05, h0=0.05, h_min=1e-6, h_max=hmax,
                           head_lr_mult=0.01, max_updates=pl.end_n, loss_target=0.0,
                           schedule=popdyn.Schedule(every=10 ** 9, early=()))
        A0 = alignment(popdyn.agop(S, p), T.subspace).a_top
        AP = alignment(popdyn.agop(S, tr2.final), T.subspace).a_top
        R0 = popdyn.refit_risk(S, p, T).normalized; RP = popdyn.refit_risk(S, tr2.final, T).normalized
        print(f"{link} seed {seed} h_max {hmax}: end_n {pl.end_n} t_end {pl.end_t:.1f} t(0.99) {tr.t[-1]:.1f} "
              f"n {tr.n[-1]} A_top {A0:.3f}->{AP:.3f} R {R0:.3f}->{RP:.3f} [{time.time()-t0:.0f}s]", flush=True)


def swiglu_probe(seed, scale, conv, head, m=64, d=16, clock="standard", maxu=3000, target=0.5):
    T = popdyn.Teacher.additive("h3", np.eye(d)[:1])
    S = popdyn.SwiGLUStudent(d, m, clock=clock)
    p = S.init(seed, scale, T, convention=conv)
    R0 = popdyn.refit_risk(S, p, T).normalized
    A0 = alignment(popdyn.agop(S, p), T.subspace).a_top
    t0 = time.time()
    tr = popdyn.train(S, p, T, method="flow", eps=0.05, h0=0.05, head_lr_mult=head,
                      max_updates=maxu, loss_target=target,
                      schedule=popdyn.Schedule(every=10 ** 9, early=()))
    ell = tr.normalized_loss
    pl = plateau(ell, delta=1e-3, n=tr.n, t=tr.t)
    print(f"seed {seed} scale {scale} {conv} head {head} m {m} clock {clock}: l0 {ell[0]:.7f} "
          f"R0 {R0:.3f} A0 {A0:.3f} tP {pl.end_t:.1f} (n {pl.end_n}) tf {tr.t[-1]:.1f} "
          f"lf {ell[-1]:.4f} {tr.status} n {tr.n[-1]} [{time.time() - t0:.0f}s]", flush=True)


def release_probe(setting, seed, loss_stop, logfile, overrides=()):
    from popdyn import config
    from popdyn._paths import data_path
    from popdyn.experiments.runner import build
    from popdyn.experiments.sweep import plan

    cfg = config.load(data_path("configs", "paper", "table3.toml"))
    specs = [s for _, s in plan(cfg) if s["setting"] == setting and s["init"]["seed"] == seed]
    if not specs:
        raise SystemExit(f"no run of setting {setting!r} and seed {seed} in table3.toml")
    spec = specs[0]
    S, T, p, kw, _, _ = build(spec)
    kw["loss_target"] = loss_stop
    for ov in overrides:
        k, v = ov.split("=", 1)
        if not k.startswith("train."):
            raise SystemExit(f"override {ov!r}: only train.KEY=VALUE")
        kw[k[len("train."):]] = float(v)
    K, maxu = int(spec["store"]["checkpoint_every"]), int(kw["max_updates"])
    VY = T.variance
    n0, t0, h0, t_start = 0, 0.0, float(kw["h0"]), time.time()
    ns, ts, ls = [0], [0.0], []
    with open(logfile, "w", buffering=1) as fh:
        fh.write(f"# {setting} seed {seed} loss stop {loss_stop}; spec train {kw}\n")

        def rec(student, params, teacher, *, n, t, loss):
            fh.write(f"{n + n0} {t + t0:.6f} {2 * loss / VY:.8f} {time.time() - t_start:.0f}\n")
            return {}
        while True:
            skw = dict(kw, max_updates=min(K, maxu - n0), h0=min(max(h0, kw["h_min"]), kw["h_max"]))
            skw["max_time"] = kw["max_time"] - t0
            tr = popdyn.train(S, p, T, schedule=popdyn.Schedule(every=1, early=()),
                              recorder=rec, **skw)
            ell = list(tr.normalized_loss)
            ls += ell if not ls else ell[1:]
            ns += [n0 + int(x) for x in tr.n[1:]]
            ts += [t0 + float(x) for x in tr.t[1:]]
            if tr.n[-1] >= 1:
                h0 = float(tr.t[-1] - tr.t[-2])
            p, n0, t0 = tr.final, ns[-1], ts[-1]
            if tr.status in ("converged", "diverged") or n0 >= maxu or tr.n[-1] == 0:
                status = tr.status if tr.status in ("converged", "diverged") else "horizon"
                break
    pl = plateau(np.asarray(ls), delta=spec["diagnostics"]["delta"], n=np.asarray(ns),
                 t=np.asarray(ts))
    print(f"{setting} seed {seed}: t_P(exact prefix end) {pl.end_t:.2f} (n {pl.end_n}) "
          f"t_f {ts[-1]:.2f} l_f {ls[-1]:.4f} n_f {ns[-1]} {status} "
          f"[{time.time() - t_start:.0f}s]", flush=True)


def links_probe(store, nseeds, overrides=()):
    import tomllib

    from popdyn import config
    from popdyn._paths import data_path
    from popdyn.experiments.reproduce import _m_swiglu
    from popdyn.experiments.store import Store
    from popdyn.experiments.sweep import sweep

    cfg = config.load(data_path("configs", "paper", "table6.toml"))
    cfg["init"]["seeds"] = list(range(nseeds))
    for ov in overrides:
        k, v = ov.split("=", 1)
        sec, key = k.split(".")
        val = tomllib.loads(f"x = {v}")["x"]
        for t in (cfg["teachers"] if sec == "teachers" else [cfg.setdefault(sec, {})]):
            t[key] = val
    st = Store(store)
    t0 = time.time()
    res = sweep(cfg, st, workers=1, progress=False)
    rows = {}
    for k in res["keys"]:
        m = _m_swiglu(st.record(k), st.arrays(k))
        rows.setdefault(st.record(k)["label"], []).append(m)
    print(f"links {' '.join(overrides) or '(table6.toml as shipped)'}: seeds 0-{nseeds - 1}, "
          f"{res['ran']} runs computed [{time.time() - t0:.0f}s]")
    qs = ("t_P", "t_f", "A_top_P", "R_0", "R_P", "dA_top", "dR")
    for lab, rs in rows.items():
        print(f"  {lab:8s} " + " ".join(f"{q} {np.median([r[q] for r in rs]):.3f}" for q in qs))
        print("           per seed dA " + " ".join(f"{r['dA_top']:.3f}" for r in rs)
              + " | dR " + " ".join(f"{r['dR']:.3f}" for r in rs), flush=True)


def relu_table_probe(name, store, nseeds, overrides=()):
    """Table 2 / Figure 1 quantities (popdyn.experiments.reproduce's own measures) of the
    shipped configuration ``name`` (table2, figure1), seeds 0..nseeds-1, with readings changed
    by SECTION.KEY=VALUE overrides (teachers.* applies to every teacher), run into ``store``."""
    import tomllib

    from popdyn import config
    from popdyn._paths import data_path
    from popdyn.experiments.reproduce import _m_figure1, _m_table2
    from popdyn.experiments.store import Store
    from popdyn.experiments.sweep import sweep

    cfg = config.load(data_path("configs", "paper", f"{name}.toml"))
    cfg["init"]["seeds"] = list(range(nseeds))
    for ov in overrides:
        k, v = ov.split("=", 1)
        sec, key = k.split(".")
        val = tomllib.loads(f"x = {v}")["x"]
        if (sec, key) == ("select", "labels"):        # run only these teachers
            cfg["teachers"] = [t for t in cfg["teachers"] if t["label"] in val]
            continue
        if sec in ("teachers", "teacher"):
            tabs = cfg["teachers"] if "teachers" in cfg else [cfg["teacher"]]
        else:
            tabs = [cfg.setdefault(sec, {})]
        for t in tabs:
            t[key] = val
    st = Store(store)
    t0 = time.time()
    res = sweep(cfg, st, workers=1, progress=False)
    meas = _m_table2 if name == "table2" else _m_figure1
    rows = {}
    for k in res["keys"]:
        rows.setdefault(st.record(k)["label"], []).append(meas(st.record(k), st.arrays(k)))
    print(f"{name} {' '.join(overrides) or '(as shipped)'}: seeds 0-{nseeds - 1}, "
          f"{res['ran']} runs computed [{time.time() - t0:.0f}s]")
    for lab, rs in rows.items():
        qs = [q for q in rs[0] if isinstance(rs[0][q], (int, float))]
        print(f"  {lab}: " + " ".join(f"{q} {np.median([r[q] for r in rs]):.4g}" for q in qs)
              + " | mean " + " ".join(f"{q} {np.mean([r[q] for r in rs]):.4g}" for q in qs
                                      if q.startswith(("A_", "refit", "loss"))), flush=True)


def refitparts_probe(store, nseeds):
    from popdyn.config import make_student, teacher_from_table
    from popdyn.experiments.runner import params_from
    from popdyn.experiments.store import Store

    st = Store(store)
    for k in st.keys():
        rec = st.record(k)
        if (rec["spec"]["name"] != "paper_table6" or rec["label"] not in ("h3", "h3+.3h2")
                or rec["seed"] >= nseeds or rec["spec"]["teacher"].get("normalize")
                or rec["spec"]["train"]["head_lr_mult"] != 0.01):
            continue
        arr = st.arrays(k)
        S = make_student(rec["spec"]["student"])
        T = {nm: teacher_from_table({"link": nm, "rank": 1}, S.d) for nm in ("h3", "h2", "h3+0.3h2")}
        snap = np.asarray(arr["snap_n"])
        out = []
        for n in (0, rec["plateau"]["P_n"]):
            i = int(np.searchsorted(snap, n, side="right")) - 1
            p = params_from(S, arr, i)
            u = {nm: popdyn.refit_risk(S, p, t).risk for nm, t in T.items()}
            u3, u2, um = u["h3"], 0.09 * u["h2"], u["h3+0.3h2"]
            out.append(f"R(h3) {u3:.4f} R(h2) {u['h2']:.4f} R(mix) {um / 1.09:.4f} = h3 share "
                       f"{u3 / 1.09:.4f} + 0.3h2 share {u2 / 1.09:.4f} + cross {(um - u3 - u2) / 1.09:+.4f}")
        print(f"{rec['label']} run, seed {rec['seed']}: at 0: {out[0]}\n    at P: {out[1]}", flush=True)


def init_variant(S, seed, s, variant):
    """Initial parameters of a bias-carrying ReLU student under one initialization convention:
    "norm" (a, b ~ N(0, s^2), W ~ N(0, s^2/d), popdyn's default), "entry" (W ~ N(0, s^2)),
    "a_fanin" (the head drawn at s/sqrt(m), the fan-in of the output layer), "b_zero" (zero
    biases) and "fanin_b0" (both)."""
    conv = "entry" if variant == "entry" else "norm"
    p = S.init(seed, s, None, convention=conv)
    if variant in ("a_fanin", "fanin_b0"):
        p = p.replace(a=p.a / np.sqrt(S.m))
    if variant in ("b_zero", "fanin_b0"):
        p = p.replace(b=0 * p.b)
    if variant not in ("norm", "entry", "a_fanin", "b_zero", "fanin_b0"):
        raise ValueError(f"variant must be norm | entry | a_fanin | b_zero | fanin_b0, got {variant!r}")
    return p


def path_probe(link, seed, d, lr, s, variant, m=32, maxu=None):
    """P11: E (5% ratio prefix), A_min / A_mean / loss (units of E[y^2] = 1) at E, at update
    200, and the first update with A_min >= 0.986 (the Figure 1 value) with the loss there."""
    T = popdyn.Teacher.additive(link, np.eye(d)[:2]).normalized("second_moment")
    S = popdyn.Student(d, m, intercept=False, scaling="mean_field")
    p = init_variant(S, seed, s, variant)
    maxu = maxu or int(round((60 if d <= 16 else 30) / lr))
    tr = popdyn.train(S, p, T, method="gd", lr=lr, max_updates=maxu,
                      schedule=popdyn.Schedule(every=1, early=()))
    ell = 2 * tr.loss
    E = plateau(ell, ratio=0.05).end_n
    n200 = min(200, maxu)
    idx = {int(k): i for i, k in enumerate(tr.snap_n)}
    amin = lambda n: alignment(popdyn.agop(S, tr.snapshot(idx[n])), T.subspace)
    out = {"E": E, "lrE": lr * E}
    for tag, n in (("E", E), ("200", n200)):
        al = amin(n)
        out[f"Amin_{tag}"], out[f"Amean_{tag}"], out[f"loss_{tag}"] = al.a_min, al.a_mean, ell[n]
    out["Amin_0"] = amin(0).a_min
    step = max(1, int(round(0.5 / lr)))
    hit = next((n for n in range(0, maxu + 1, step) if amin(n).a_min >= 0.986), None)
    out["n986"] = hit if hit is not None else -1
    out["loss986"] = ell[hit] if hit is not None else float("nan")
    return out


def force_probe(link, seed, d, s, m=32):
    """P12: m |grad L(theta_0)|_2 / |theta_0|_2 over (a, W, b), E[y^2] = 1, mean-field."""
    T = popdyn.Teacher.additive(link, np.eye(d)[:2]).normalized("second_moment")
    S = popdyn.Student(d, m, intercept=False, scaling="mean_field")
    p = S.init(seed, s, None)
    g = popdyn.population_grad(S, p, T)
    v = lambda q: np.concatenate([np.ravel(q.a), np.ravel(q.W), np.ravel(q.b)])
    return m * np.linalg.norm(v(g)) / np.linalg.norm(v(p))


if __name__ == "__main__":
    a = sys.argv
    if a[1] == "force":
        nseeds = int(a[2])
        for d, sc, links in ((64, 0.01, ["silu", "silu_centered", "relu", "sin"]), (16, 1e-4, ["silu"])):
            for link in links:
                r = [force_probe(link, sd, d, sc) for sd in range(nseeds)]
                print(f"force d={d} s={sc:g} {link}: rho {np.round(r, 4).tolist()} -> step h/rho "
                      f"= {0.05 / np.median(r):.3f} (adopted: 0.05)", flush=True)
        raise SystemExit(0)
    if a[1] == "path":
        d, nseeds, lr, sc, variant = int(a[2]), int(a[3]), float(a[4]), float(a[5]), a[6]
        links = a[7:] or (["silu", "silu_centered", "relu", "sin"] if d == 64 else ["silu"])
        for link in links:
            t0 = time.time()
            rows = [path_probe(link, sd, d, lr, sc, variant) for sd in range(nseeds)]
            med = {k: float(np.median([r[k] for r in rows])) for k in rows[0]}
            mean = {k: float(np.mean([r[k] for r in rows])) for k in ("Amin_200", "loss_200", "Amin_E")}
            print(f"path d={d} lr={lr:g} s={sc:g} {variant} {link}: seeds 0-{nseeds - 1} means "
                  + " ".join(f"{k} {v:.4g}" for k, v in mean.items()) + "; medians "
                  + " ".join(f"{k} {v:.4g}" for k, v in med.items())
                  + f" | per seed E {[r['E'] for r in rows]} Amin_E "
                  + str([round(r['Amin_E'], 3) for r in rows]) + " Amin_200 "
                  + str([round(r['Amin_200'], 3) for r in rows]) + " n986 "
                  + str([r['n986'] for r in rows]) + f" [{time.time() - t0:.0f}s]", flush=True)
        raise SystemExit(0)
    if a[1] == "links":
        links_probe(a[2], int(a[3]), a[4:])
        raise SystemExit(0)
    if a[1] == "endpoint":
        norm, nseeds, lr = a[2], int(a[3]), float(a[4])
        sc = float(a[5]) if len(a) > 5 else 0.01
        variant = a[6] if len(a) > 6 else "none"
        for link in LINKS:
            t0 = time.time()
            E = np.array([endpoint_probe(link, sd, norm, lr, sc, variant) for sd in range(nseeds)])
            print(f"endpoint {norm} lr={lr:.6g} s={sc:g} {variant} {link:5s} seeds 0-{nseeds - 1}: "
                  f"median E {np.median(E):.1f} [{E.min()}, {E.max()}] [{time.time() - t0:.0f}s]",
                  flush=True)
        raise SystemExit(0)
    if a[1] in ("table2", "figure1"):
        relu_table_probe(a[1], a[2], int(a[3]), a[4:])
        raise SystemExit(0)
    if a[1] == "refitparts":
        refitparts_probe(a[2], int(a[3]))
        raise SystemExit(0)
    if a[1] == "release":
        release_probe(a[2], int(a[3]), float(a[4]), a[5], a[6:])
        raise SystemExit(0)
    if a[1] == "relu":
        scaling, icpt, lr, conv = a[2], a[3], float(a[4]), a[5]
        maxu = int(a[6]) if len(a) > 6 else 1500
        for link in LINKS:
            rows = [relu_probe(link, sd, scaling, icpt, lr, conv, maxu=maxu) for sd in range(3)]
            keys = rows[0][0].keys()
            print(f"{scaling} {icpt} lr={lr} {conv} {link:5s} "
                  + " ".join(f"{k}:{[r[0][k] for r in rows]}" for k in keys)
                  + f" L_end {[round(float(r[1]), 4) for r in rows]}", flush=True)
    elif a[1] == "hmax":
        hmax_probe(a[2], int(a[3]), [float(x) for x in a[4:]])
    elif a[1] == "clock":
        nseeds = int(a[2])
        for lr in map(float, a[3:]):
            for link in LINKS:
                t0 = time.time()
                rows = np.array([clock_probe(link, sd, lr) for sd in range(nseeds)])
                med = np.median(rows, axis=0)
                print(f"clock lr={lr} {link:5s} seeds 0-{nseeds - 1}: median E {med[0]:.1f} "
                      f"[{rows[:, 0].min():.0f}, {rows[:, 0].max():.0f}]  lr*E {med[1]:.2f}  "
                      f"dA_mean {med[2]:.4f}  dA_min {med[3]:.4f}  [{time.time() - t0:.0f}s]",
                      flush=True)
    else:
        seed, scale, conv, head, m, clock = int(a[2]), float(a[3]), a[4], float(a[5]), int(a[6]), a[7]
        maxu = int(a[8]) if len(a) > 8 else 3000
        swiglu_probe(seed, scale, conv, head, m=m, clock=clock, maxu=maxu,
                     target=0.5 if m == 64 else 0.9)
