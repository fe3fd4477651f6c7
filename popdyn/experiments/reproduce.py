"""Reproduce the seed paper's own tables: run a shipped paper configuration, measure the
paper's quantities on the stored runs, and set them beside the paper's numbers cell by cell.

    popdyn reproduce NAME [--seeds N] [--store DIR] [--workers N] [--write FILE]

``NAME`` is one of :data:`EXPERIMENTS` (``table1``, ``table2``, ``table3``, ``table6``,
``figure1``).  The configurations are ``data/configs/paper/<name>.toml``; their comments and
docs/protocol.md state the protocol reading and the sentences it rests on.  The paper's numbers
are transcribed, with line citations, in ``data/configs/paper/paper_values.toml``.

Verdicts.  A cell *matches* when the paper's value lies inside the 95% bootstrap interval of our
statistic over seeds (2000 resamples, fixed generator; the statistic of the paper's caption: a
median, or a mean), widened by half a unit of the paper's last printed digit; a single run (no
seed spread) matches only inside that rounding.  Anything else *differs*.  Where issue 17 states
a goal tolerance (E within 20%, ΔA_mean and ΔR within 0.1, Table 6 within 0.05 / 0.1), the
``goal`` column says whether it is met.  ``--seeds N`` runs the first N declared seeds only and
every report says it is reduced.

References
----------
Seed paper 003 (../shared/seeds/003_40ccf210d3358dbe.txt), Tables 1-3, 6 and Figure 1;
docs/protocol.md; docs/reproduction.md.
"""
from __future__ import annotations

import math
import re
import time
import tomllib
from pathlib import Path

import numpy as np

from .. import _validate as V
from .. import config as _config
from .._paths import data_path
from ..config import make_student, teacher_from_table
from ..diagnostics.budget import fixed_ball_refits
from .runner import params_from
from .store import Store
from .sweep import plan, sweep

__all__ = ["EXPERIMENTS", "paper_values", "reproduce", "measure", "compare", "render",
           "verdict", "write_section"]

#: experiment name → one-line description
EXPERIMENTS = {
    "table1": "ReLU baseline (Table 1 rows in the text): d=16, m=32, s=1e-4",
    "figure1": "Figure 1 SiLU sentence (A_min and refit at 0 and 200): d=16, m=32, s=1e-4",
    "table2": "four-teacher follow-up (Table 2): d=64, m=32, s=0.01",
    "table3": "SwiGLU trajectories (Table 3, delta=1e-3): smokes, h3 seeds 0-2, m=256",
    "table6": "SwiGLU rank-one links (Table 6): d=16, m=64, 20 seeds",
    "plateau_alignment": "the plateau_alignment theorem under the paper's reading: baseline "
                         "d=16, m=32, s=1e-4, damped-cubic teachers g_1/2, g_1/3, g_2/3",
}
_BOOT = 2000


def paper_values(name: str) -> dict:
    """The transcribed paper numbers of experiment ``name`` (``paper_values.toml``)."""
    V.choice("name", name, tuple(EXPERIMENTS))
    with open(data_path("configs", "paper", "paper_values.toml"), "rb") as fh:
        return tomllib.load(fh)[name]


# ---------------------------------------------------------------------------- measuring
def _runs(store, keys):
    for k in keys:
        if store.has(k):
            yield k, store.record(k), store.arrays(k)


def _build(rec):
    spec = rec["spec"]
    S = make_student(spec["student"])
    return S, teacher_from_table(spec["teacher"], S.d)


def _unit(rec, T) -> float:
    """The unit of loss and refit risk of a run: E[y²] for a teacher normalized to unit second
    moment (``normalize = "second_moment"``: the loss is the raw MSE, one for the zero
    predictor), V_Y otherwise (docs/protocol.md, "Units")."""
    if rec["spec"]["teacher"].get("normalize") == "second_moment":
        return float(T.variance) + float(T.mean) ** 2     # = V_Y exactly for a centered teacher
    return float(T.variance)


def _in_unit(ell, T, unit) -> float:
    """A stored normalized loss (MSE/V_Y) in the run's ``unit`` (unchanged when it is V_Y)."""
    V = float(T.variance)
    return ell if unit == V else ell * V / unit


def _at_or_before(snap_n, n) -> int:
    return int(np.searchsorted(np.asarray(snap_n), n, side="right")) - 1


def _m_table2(rec, arrs):
    """Table 2 quantities of one run (see docs/protocol.md, Table 2 family)."""
    S, T = _build(rec)
    E = int(rec["plateaus"]["ratio=0.05"]["end_n"])
    iE = _at_or_before(arrs["snap_n"], E)
    r0, rE = rec["records"][0], rec["records"][iE]
    p0, pE = params_from(S, arrs, 0), params_from(S, arrs, iE)
    VY = _unit(rec, T)       # V_Y, or E[y²] under the second-moment normalization
    out = {"E": E, "E_delta": int(rec["plateaus"]["delta=0.001"]["end_n"]),
           "E_snapshot": int(arrs["snap_n"][iE]),
           "dA_min": rE["a_min"] - r0["a_min"], "dA_mean": rE["a_mean"] - r0["a_mean"],
           # the stored loss is MSE/V_Y; reported in the run's unit
           "L_20000": _in_unit(float(rec["loss_final"]), T, VY),
           "n_final": int(rec["n_final"])}
    # the two budget readings of "unchanged coefficient budgets" (docs/protocol.md): one ball
    # B = ‖κ‖ of the teacher (declared), and B = the trained head's coefficient norm at E
    # and, beside them, the teacher ball refitted without an intercept (c′ = 0: the mean stays
    # in the risk, as it stays in these students' dynamics)
    for key, B, icpt in (("dR", "teacher", True), ("dR_trained_head", "trained_head", True),
                         ("dR_no_intercept", "teacher", False)):
        try:
            f0, fE = fixed_ball_refits(S, [p0, pE], T, budget=B, features="coefficient",
                                       intercept=icpt)
        except ValueError:      # e.g. no teacher coefficient norm for gated teachers
            continue
        out[key] = (f0.lower - fE.risk) / VY - 1e-5
        out[key.replace("dR", "R_0")], out[key.replace("dR", "R_E")] = f0.risk / VY, fE.risk / VY
    return out


def _m_swiglu(rec, arrs):
    """Table 3 / Table 6 quantities of one SwiGLU run: the delta = 1e-3 prefix (the run's
    ``[diagnostics] delta``), P the last diagnostic inside it."""
    iP = int(rec["index"]["plateau"])
    r0, rP = rec["records"][0], rec["records"][iP]
    out = {"t_P": float(rec["plateau"]["P_t"]), "n_P": int(rec["plateau"]["P_n"]),
           "l_P": float(rP["normalized_loss"]), "l_f": float(rec["loss_final"]),
           "t_f": float(rec["t_final"]), "status": rec["status"],
           "A_top_0": r0["a_top"], "A_top_P": rP["a_top"],
           "R_0": r0["refit_unrestricted"], "R_P": rP["refit_unrestricted"]}
    out["dA_top"] = out["A_top_P"] - out["A_top_0"]
    out["dR"] = out["R_0"] - out["R_P"]
    if rec["r"] >= 2:
        out["A_min_0"], out["A_min_P"] = r0["a_min"], rP["a_min"]
    return out


def _m_table1(rec, arrs):
    """Table 1 quantities: endpoint gains at the 5% ratio prefix endpoint, the same fixed-ball
    coefficient refits as Table 2 (gain R_0 − R_E, both readings), final normalized loss."""
    out = _m_table2(rec, arrs)
    res = {"dA_min": out["dA_min"], "final_mse": out["L_20000"], "E": out["E"]}
    for sfx in ("", "_trained_head"):
        if "R_0" + sfx in out:
            res["refit_decrease" + sfx] = out["R_0" + sfx] - out["R_E" + sfx]
    return res


def _m_figure1(rec, arrs):
    """Figure 1 quantities at updates 0 and 200: A_min and the fixed-ball coefficient refit
    (one ball: the coefficient norm of the head at update 200)."""
    S, T = _build(rec)
    i200 = _at_or_before(arrs["snap_n"], 200)
    p0, p2 = params_from(S, arrs, 0), params_from(S, arrs, i200)
    VY = _unit(rec, T)
    r = rec["records"]
    out = {"A_min_0": r[0]["a_min"], "A_min_200": r[i200]["a_min"],
           "loss_0": _in_unit(float(r[0]["normalized_loss"]), T, VY),
           "loss_200": _in_unit(float(r[i200]["normalized_loss"]), T, VY)}
    # both balls, refitted with an intercept (as declared) and without one (c′ = 0, the
    # readout alone, as these students have no intercept; reported beside the table)
    for suffix, B, icpt in (("", "teacher", True), ("_trained_head", "trained_head", True),
                            ("_no_intercept", "teacher", False),
                            ("_trained_head_no_intercept", "trained_head", False)):
        f0, f2 = fixed_ball_refits(S, [p0, p2], T, budget=B, features="coefficient",
                                   intercept=icpt)
        out["refit_0" + suffix], out["refit_200" + suffix] = f0.risk / VY, f2.risk / VY
    return out


def _m_plateau_alignment(rec, arrs):
    """E and the uncertified gains at E of one run (the verdict itself is
    :func:`proofs_checks.plateau_alignment.check_store_paper`)."""
    out = _m_table2(rec, arrs)
    return {k: out[k] for k in ("E", "E_delta", "dA_min", "dA_mean", "dR", "R_0", "R_E") if k in out}


_MEASURE = {"table1": _m_table1, "figure1": _m_figure1, "table2": _m_table2,
            "table3": _m_swiglu, "table6": _m_swiglu,
            "plateau_alignment": _m_plateau_alignment}


def _row_of(name, rec):
    if name == "table3":
        lab = rec["setting"]
        if lab == "default":
            lab = "Smoke r=2"
        return f"{lab} ({rec['seed']})"
    return rec["label"]


def measure(name: str, store, keys) -> dict:
    """Per-row lists of per-run measurements of experiment ``name`` over the stored ``keys``."""
    st = store if isinstance(store, Store) else Store(store)
    rows = {}
    for _, rec, arrs in _runs(st, keys):
        rows.setdefault(_row_of(name, rec), []).append(_MEASURE[name](rec, arrs))
    return rows


# ---------------------------------------------------------------------------- comparing
def _stat(name):
    return np.mean if name in ("table1", "figure1") else np.median


def _boot(x, stat, rng):
    x = np.asarray(x, dtype=float)
    if x.size < 2:
        return float(stat(x)), float(stat(x))
    idx = rng.integers(0, x.size, size=(_BOOT, x.size))
    s = stat(x[idx], axis=1)
    return float(np.quantile(s, 0.025)), float(np.quantile(s, 0.975))


def verdict(paper, ours, lo, hi, digits) -> str:
    """``"matches"`` when ``paper`` lies in [lo − u, hi + u] with u half a unit of the paper's
    last printed digit (``digits`` decimal places), else ``"differs"``.  A bracketed paper value
    (a pair) matches when the two intervals overlap."""
    u = 0.5 * 10.0 ** (-digits)
    if isinstance(paper, (list, tuple)):
        return "matches" if paper[0] <= hi + u and paper[1] >= lo - u else "differs"
    return "matches" if lo - u <= paper <= hi + u else "differs"


def compare(name: str, rows: dict, pv: dict | None = None) -> list:
    """Cells (dicts) of paper value / ours / difference / verdict / goal, in the paper's order."""
    pv = pv or paper_values(name)
    stat = _stat(name)
    rng = np.random.default_rng(20261201)
    cells = []
    for prow in pv["cells"]:
        runs = rows.get(prow["row"], [])
        for q, ref in prow.items():
            if q == "row":
                continue
            vals = [r[q] for r in runs if q in r and r[q] is not None
                    and not (isinstance(r[q], float) and math.isnan(r[q]))]
            cell = {"row": prow["row"], "quantity": q, "paper": ref["value"],
                    "line": ref["line"], "n": len(vals)}
            if "range" in ref:
                cell["paper_range"] = ref["range"]
            if not vals:
                why = "not run" if not runs else "not measured"   # e.g. no teacher budget
                cells.append({**cell, "ours": None, "verdict": why})
                continue
            ours = float(stat(vals))
            lo, hi = _boot(vals, stat, rng)
            p = ref["value"]
            pmid = 0.5 * (p[0] + p[1]) if isinstance(p, list) else p
            cell.update(ours=ours, lo=lo, hi=hi, diff=ours - pmid,
                        ours_range=[float(min(vals)), float(max(vals))],
                        verdict=verdict(p, ours, lo, hi, int(ref["digits"])))
            if "goal_abs" in ref:
                cell["goal"] = "met" if abs(ours - pmid) <= ref["goal_abs"] else "missed"
                cell["goal_text"] = f"±{ref['goal_abs']:g}"
            elif "goal_rel" in ref:
                cell["goal"] = "met" if abs(ours - pmid) <= ref["goal_rel"] * abs(pmid) else "missed"
                cell["goal_text"] = f"±{100 * ref['goal_rel']:g}%"
            cells.append(cell)
    return cells


def _fmt(x):
    if x is None:
        return "—"
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in x) + "]"
    x = float(x)
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:.1f}"
    if abs(x) < 1e-3:
        return f"{x:.2e}"
    return f"{x:.4f}".rstrip("0").rstrip(".") if abs(x) < 1 else f"{x:.3f}"


def render(name: str, cells: list, *, info: dict) -> str:
    """Markdown section: header (command, seeds, reduced or not, wall time) and the cell table."""
    pv = paper_values(name)
    lines = [f"### `{name}`: {EXPERIMENTS[name]}", ""]
    lines.append(f"- command: `{info['command']}`")
    red = " — **reduced** (the paper: " + pv["statistic"] + ")" if info.get("reduced") else ""
    lines.append(f"- runs: {info['runs']} ({info['seeds_text']}){red}")
    lines.append(f"- wall time: {info['wall']:.0f} s for this command ({info.get('workers', 1)} "
                 f"worker(s); {info['computed']} runs computed, {info['stored']} already stored); "
                 f"the runs themselves took {info.get('run_time', 0.0):.0f} s summed over runs "
                 f"(each run's own wall time)")
    lines.append(f"- paper values: seed 003 lines cited per cell; statistic: {pv['statistic']}")
    lines.append("")
    if cells:
        lines.append("| row | quantity | paper (line) | popdyn [95% CI] | range | diff | verdict "
                     "| goal |")
        lines.append("|---|---|---|---|---|---|---|---|")
    for c in cells:
        pr = _fmt(c["paper"]) + (f" {_fmt(c['paper_range'])}" if "paper_range" in c else "")
        if c.get("ours") is None:
            lines.append(f"| {c['row']} | {c['quantity']} | {pr} ({c['line']}) | — | | | "
                         f"{c['verdict']} | |")
            continue
        ci = "" if c["n"] < 2 else f" [{_fmt(c['lo'])}, {_fmt(c['hi'])}]"
        rg = "" if c["n"] < 2 else _fmt(c["ours_range"])
        goal = f"{c['goal']} ({c['goal_text']})" if "goal" in c else ""
        lines.append(f"| {c['row']} | {c['quantity']} | {pr} ({c['line']}) | {_fmt(c['ours'])}"
                     f"{ci} (n={c['n']}) | {rg} | {_fmt(c['diff'])} | {c['verdict']} | {goal} |")
    extra = info.get("extra") or {}
    if extra:
        lines.append("Measured beside the table (no paper cell; statistic as above, [min, max]):")
        lines.append("")
        for row, qs in extra.items():
            lines.append(f"- {row}: " + "; ".join(f"{q} {_fmt(v)} {_fmt(r)}" for q, (v, r) in qs.items()))
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- running
def _configs(name, seeds):
    out = []
    for fn in paper_values(name)["configs"]:
        cfg = _config.load(data_path("configs", "paper", fn))
        declared = _config.seeds_of(cfg["init"].get("seeds", [0]))
        if seeds is not None:
            cfg["init"]["seeds"] = declared[:seeds]
            for s in cfg.get("settings", []):
                if "init" in s and "seeds" in s["init"]:
                    s["init"]["seeds"] = _config.seeds_of(s["init"]["seeds"])[:seeds]
        out.append(cfg)
    return out


def reproduce(name: str, *, seeds: int | None = None, store=None, workers: int | None = None,
              progress: bool = False, run: bool = True) -> dict:
    """Run (or read back) experiment ``name`` and compare it with the paper.

    Parameters
    ----------
    name : str
        One of :data:`EXPERIMENTS`.
    seeds : int, optional
        Run only the first ``seeds`` declared seeds of every cohort (a reduced look; the report
        says so).
    store : str or Path, optional
        Result store (default ``./popdyn-reproduce``); finished runs are reused.
    workers : int, optional
        Processes of the local pool (default: the sweep's default).
    run : bool
        False: compute nothing, report from the runs already in the store (the others are
        "not run"), e.g. for a look at a sweep that is still going.

    Returns
    -------
    dict
        ``cells`` (:func:`compare`), ``rows`` (per-run measurements), ``info`` and ``text``
        (the markdown section, :func:`render`).
    """
    V.choice("name", name, tuple(EXPERIMENTS))
    if seeds is not None:
        seeds = V.positive_int("seeds", seeds)
    st = Store(store or "popdyn-reproduce")
    t0 = time.perf_counter()
    keys, computed, stored, nseeds = [], 0, 0, set()
    for cfg in _configs(name, seeds):
        if run:
            res = sweep(cfg, st, workers=workers, progress=progress)
            keys += res["keys"]
            computed += res["ran"]
            stored += res["skipped"]
        else:
            ks = [k for k, _ in plan(cfg)]
            keys += ks
            stored += sum(1 for k in ks if st.has(k))
        for _, spec in plan(cfg):
            nseeds.add(spec["init"]["seed"])
    wall = time.perf_counter() - t0
    rows = measure(name, st, keys)
    run_cpu = sum(float(st.record(k).get("info", {}).get("wall_time", 0.0))
                  for k in dict.fromkeys(keys) if st.has(k))
    cells = compare(name, rows)
    extra, stat = {}, _stat(name)
    known = {q for prow in paper_values(name)["cells"] for q in prow}
    for row, runs in rows.items():
        qs = {}
        for q in runs[0]:
            vals = [r[q] for r in runs if isinstance(r.get(q), (int, float)) and q not in known]
            if vals and not isinstance(runs[0][q], bool):
                qs[q] = (float(stat(vals)), [float(min(vals)), float(max(vals))])
        if qs:
            extra[row] = qs
    full = _configs(name, None)
    full_n = sum(len(plan(c)) for c in full)
    missing = sum(1 for k in keys if not st.has(k))
    reduced = len(keys) < full_n or missing > 0
    seeds_text = (f"seeds {min(nseeds)}–{max(nseeds)} of every cohort" if len(nseeds) > 1
                  else f"seed {min(nseeds)}")
    cmd = (f"popdyn reproduce {name}" + (f" --seeds {seeds}" if seeds is not None else "")
           + ("" if run else " --no-run"))
    info = {"command": cmd, "runs": len(keys), "full_runs": full_n, "reduced": reduced,
            "seeds_text": seeds_text + (f"; the full configuration has {full_n} runs"
                                        if reduced else "")
                          + (f"; {missing} of them not run (reported from the store only)"
                             if missing else ""),
            "wall": wall, "run_time": run_cpu, "computed": computed, "stored": stored, "workers": workers or "default",
            "store": str(st.root), "extra": extra}
    text = render(name, cells, info=info)
    out = {"cells": cells, "rows": rows, "info": info}
    if name == "plateau_alignment":
        out["verdict"] = _check_paper(st, keys, info)
        text += "\n" + _render_check(out["verdict"], info["check_wall"])
    out["text"] = text
    return out


def _check_paper(st, keys, info):
    from proofs_checks.plateau_alignment import check_store_paper

    t0 = time.perf_counter()
    v = check_store_paper(st, [k for k in dict.fromkeys(keys) if st.has(k)],
                          settings={"command": info["command"], "store": info["store"]})
    info["check_wall"] = time.perf_counter() - t0
    return v


def _render_check(v, wall=None) -> str:
    """The verdict block of ``plateau_alignment``: overall verdict, headline margin, and per
    teacher and claim the pass / fail / undecided counts with the lower bracket ends."""
    lines = [f"**Verdict: {v.verdict}** ({v.provenance}); headline part `{_headline(v)}`: "
             f"bracket [{v.bracket[0]:.4f}, {v.bracket[1]:.4f}] against {v.constant:g}, "
             f"margin {v.margin:+.4f}."
             + ("" if wall is None else f" The check itself took {wall:.0f} s (certified "
                f"alignments at 0 and E, fixed-ball refits)."), ""]
    groups = {}
    for p in v.parts:
        claim, _, rest = p.name.partition(" ")
        teacher = rest.rsplit(" seed ", 1)[0]
        groups.setdefault((teacher, claim, p.role), []).append(p)
    lines.append("| teacher | claim | role | pass / fail / undecided | lower ends: median [min, max] "
                 "| smallest margin |")
    lines.append("|---|---|---|---|---|---|")
    for (teacher, claim, role), ps in groups.items():
        cnt = {k: sum(p.verdict == k for p in ps) for k in ("pass", "fail", "undecided")}
        lo = np.array([p.bracket[0] for p in ps])
        lines.append(f"| {teacher} | {claim} ≥ {ps[0].constant:g} | {role} | {cnt['pass']} / "
                     f"{cnt['fail']} / {cnt['undecided']} | {np.median(lo):.4f} [{lo.min():.4f}, "
                     f"{lo.max():.4f}] | {min(p.margin for p in ps):+.4f} |")
    lines.append("")
    lines += [f"- {n}" for n in v.notes if n.startswith("reading") or "no run" in n]
    return "\n".join(lines) + "\n"


def _headline(v):
    for p in v.parts:
        if p.bracket == v.bracket and p.margin == v.margin:
            return p.name
    return "?"


_BEGIN = "<!-- reproduce:{name} begin -->"
_END = "<!-- reproduce:{name} end -->"


def write_section(path, name: str, text: str) -> Path:
    """Replace (or append) the generated section of ``name`` in the markdown file ``path``,
    between ``<!-- reproduce:NAME begin -->`` and ``<!-- reproduce:NAME end -->``; the rest of
    the file (the hand-written reasons) is kept."""
    path = Path(path)
    V.choice("name", name, tuple(EXPERIMENTS))
    old = path.read_text() if path.exists() else ""
    b, e = _BEGIN.format(name=name), _END.format(name=name)
    block = f"{b}\n{text.rstrip()}\n{e}"
    if b in old and e in old:
        new = re.sub(re.escape(b) + r".*?" + re.escape(e), lambda _: block, old, flags=re.S)
    else:
        new = old.rstrip() + ("\n\n" if old else "") + block + "\n"
    path.write_text(new)
    return path
