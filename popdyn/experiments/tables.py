"""Tables from stored runs: one row per (setting, teacher) cohort, as Markdown, LaTeX or CSV.

Columns (Kumar (arXiv 2609.39408), Tables 1, 2 and 6):

* ``runs`` and the stopping status of each (converged / horizon / diverged);
* ``E``: the plateau endpoint in updates (the δ-prefix of each run's normalized loss, default
  δ = 1e−3), median [min, max];
* ``ΔA_min``, ``ΔA_mean`` = A(P) − A(0) at each run's own plateau checkpoint P (the last
  diagnostic inside its prefix; not at an averaged endpoint), median [min, max];
* ``ΔR`` = R(0) − R(P) of the first recorded refit kind (same-budget when recorded) in units
  of V_Y (positive = lower error), median [min, max];
* certified brackets of the same gains: for each run [lo, hi] = [A_P.lo − A_0.hi,
  A_P.hi − A_0.lo] and [R_0.lo − R_P.hi, R_0.hi − R_P.lo] from :mod:`certify` (an unresolved
  alignment contributes [0, 1] before the difference), shown as the mean lower and mean upper
  bound [lo, hi] with the number of runs where both ends were resolved; the provenance is
  ``rigorous`` unless a run's bracket was numerical (then marked †);
* final normalized loss, mean ± sd over seeds (sample sd, ddof = 1).

Brackets are mean lower and upper bounds, not confidence intervals.  The output depends only on
the stored records, is sorted by the declared order, and is byte-identical across reruns,
worker counts and executors.
"""
from __future__ import annotations

import csv
import io
import math

import numpy as np

from .store import Store, num

FORMATS = ("md", "latex", "csv")


def _runs(store: Store) -> list:
    return [store.record(k) for k in store.keys()]


def groups(store: Store) -> list:
    """[(setting, label, [records sorted by seed])] in declared order."""
    by: dict[tuple[str, str], list[dict]] = {}
    for rec in _runs(store):
        by.setdefault((rec["setting"], rec["label"]), []).append(rec)
    pos = store.key_positions()
    big = (float("inf"), float("inf"))

    def order(item):
        (setting, label), recs = item
        p = min(pos.get(r["key"], big)[0] for r in recs)
        o = min((r["order"][1], r["order"][0]) for r in recs)
        return (p, o, setting, label)
    out = []
    for (setting, label), recs in sorted(by.items(), key=order):
        recs.sort(key=lambda r: (r["seed"], r["key"]))
        out.append((setting, label, recs))
    return out


def _refit_kind(recs) -> str | None:
    kinds = [k[len("refit_"):] for k in recs[0]["checkpoints"]["init"]
             if k.startswith("refit_") and not k.endswith("_lower")]
    if not kinds:
        return None
    return "same_budget" if "same_budget" in kinds else sorted(kinds)[0]


def _cert_kind(recs) -> str | None:
    c = recs[0].get("certified", {}).get("init", {})
    kinds = [k[len("refit_"):] for k in c if k.startswith("refit_") and not k.endswith("_error")]
    if not kinds:
        return None
    return "same_budget" if "same_budget" in kinds else sorted(kinds)[0]


def _gain_bracket(c0, cP, key, sign):
    """Per-run bracket of X(P) − X(0) (sign=+1) or X(0) − X(P) (sign=−1), or None."""
    b0, bP = c0.get(key), cP.get(key)
    if not isinstance(b0, dict) or not isinstance(bP, dict):
        return None
    l0, h0, lP, hP = num(b0["lo"]), num(b0["hi"]), num(bP["lo"]), num(bP["hi"])
    if sign > 0:
        lo, hi = lP - h0, hP - l0
    else:
        lo, hi = l0 - hP, h0 - lP
    resolved = b0["status"] == "resolved" and bP["status"] == "resolved"
    rigorous = b0["provenance"] == "rigorous" and bP["provenance"] == "rigorous"
    return lo, hi, resolved, rigorous


def rows(store: Store) -> list:
    """One dict of statistics per cohort (the data behind every format)."""
    out = []
    for setting, label, recs in groups(store):
        E = np.array([r["plateau"]["end_n"] for r in recs], dtype=float)
        ck = [r["checkpoints"] for r in recs]
        dAmin = np.array([num(c["plateau"]["a_min"]) - num(c["init"]["a_min"]) for c in ck])
        dAmean = np.array([num(c["plateau"]["a_mean"]) - num(c["init"]["a_mean"]) for c in ck])
        kind = _refit_kind(recs)
        dR = (np.array([num(c["init"][f"refit_{kind}"]) - num(c["plateau"][f"refit_{kind}"])
                        for c in ck]) if kind else np.array([]))
        final = np.array([num(r["loss_final"]) for r in recs])
        st = {s: sum(r["status"] == s for r in recs) for s in ("converged", "horizon", "diverged")}
        row = {"setting": setting, "teacher": label, "runs": len(recs), **st,
               "E": _mmm(E), "dA_min": _mmm(dAmin), "dA_mean": _mmm(dAmean),
               "refit_kind": kind, "dR": _mmm(dR) if kind else None,
               "final_mean": float(np.mean(final)),
               "final_sd": float(np.std(final, ddof=1)) if len(final) > 1 else 0.0}
        ckind = _cert_kind(recs)
        for name, key, sign in (("cert_dA_min", "a_min", 1),
                                ("cert_dR", f"refit_{ckind}" if ckind else None, -1)):
            brs = []
            if key is not None:
                for r in recs:
                    c = r.get("certified")
                    if c:
                        g = _gain_bracket(c["init"], c["plateau"], key, sign)
                        if g is not None:
                            brs.append(g)
            if brs:
                row[name] = {"lo": float(np.mean([b[0] for b in brs])),
                             "hi": float(np.mean([b[1] for b in brs])),
                             "resolved": sum(b[2] for b in brs), "count": len(brs),
                             "rigorous": all(b[3] for b in brs)}
            else:
                row[name] = None
        row["cert_kind"] = ckind
        out.append(row)
    return out


def _mmm(x):
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return None
    return {"median": float(np.median(x)), "min": float(np.min(x)), "max": float(np.max(x))}


def _f(x, nd=3):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    v = round(float(x), nd)
    if v == 0:
        v = 0.0                      # no "-0.000"
    return f"{v:.{nd}f}"


def _e(x):
    return f"{x:g}" if float(x) != int(x) else str(int(x))


def _cells(row, latex=False):
    sep = (r"\,[" if latex else " [")
    def mmm(s, e=False):
        if s is None:
            return "–"
        fmt = _e if e else _f
        return f"{fmt(s['median'])}{sep}{fmt(s['min'])}, {fmt(s['max'])}]"
    def cert(c):
        if c is None:
            return "–"
        mark = "" if c["rigorous"] else ("$^\\dagger$" if latex else "†")
        res = f" ({c['resolved']}/{c['count']})" if c["resolved"] < c["count"] else ""
        return f"[{_f(c['lo'])}, {_f(c['hi'])}]{mark}{res}"
    label = row["teacher"] if row["setting"] == "default" else f"{row['teacher']} · {row['setting']}"
    pm = r" $\pm$ " if latex else " ± "
    status = f"{row['converged']}/{row['horizon']}/{row['diverged']}"
    return [label, str(row["runs"]), status, mmm(row["E"], True), mmm(row["dA_min"]),
            mmm(row["dA_mean"]), mmm(row["dR"]), cert(row["cert_dA_min"]), cert(row["cert_dR"]),
            f"{_f(row['final_mean'])}{pm}{_f(row['final_sd'])}"]


def _headers(rows_, latex=False):
    kind = next((r["refit_kind"] for r in rows_ if r["refit_kind"]), "refit")
    ckind = next((r["cert_kind"] for r in rows_ if r["cert_kind"]), kind)
    if latex:
        return ["Teacher", "Runs", "conv/hor/div", r"$E$ [range]", r"$\Delta A_{\min}$",
                r"$\Delta A_{\rm mean}$", rf"$\Delta R$ ({kind.replace('_', '-')})",
                r"cert.\ $\Delta A_{\min}$", rf"cert.\ $\Delta R$ ({ckind.replace('_', '-')})",
                "Final loss"]
    return ["Teacher", "Runs", "conv/hor/div", "E [range]", "ΔA_min", "ΔA_mean",
            f"ΔR ({kind})", "cert. ΔA_min", f"cert. ΔR ({ckind})", "Final loss"]


CAPTION = ("E: plateau endpoint, the last update of each run's δ-prefix (|ℓ_n − ℓ_0| ≤ δ "
           "at every update n ≤ E, ℓ the normalized loss, δ the config's [diagnostics] delta, "
           "default 1e-3; update E + 1 is the first with |ℓ_n − ℓ_0| > δ), median [min, max] "
           "over seeds. "
           "Median [min, max] over seeds of the endpoint changes at each run's own plateau "
           "checkpoint P (last diagnostic inside |ℓ_n − ℓ_0| ≤ δ); ΔA = A(P) − A(0), "
           "ΔR = R(0) − R(P) in units of V_Y (positive = lower error). Certified columns: mean "
           "lower and upper bounds of the per-run gain brackets (unresolved alignments count as "
           "[0, 1]); (k/n) = runs resolved at both ends when fewer than all; † = numerical. "
           "Final loss: normalized MSE, mean ± sd over seeds.")


def table(store, fmt: str = "md") -> str:
    """The cohort table of a store as Markdown (``md``), LaTeX booktabs (``latex``) or CSV."""
    from .. import _validate as V

    V.choice("fmt", fmt, FORMATS)
    st = store if isinstance(store, Store) else Store(store, create=False)
    rs = rows(st)
    if fmt == "csv":
        return _csv(rs)
    if not rs:
        return "(no finished runs in the store)\n"
    if fmt == "md":
        hd = _headers(rs)
        lines = ["| " + " | ".join(hd) + " |",
                 "|" + "|".join(["---"] + ["--:"] * (len(hd) - 1)) + "|"]
        for r in rs:
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in _cells(r)) + " |")
        return "\n".join(lines) + "\n\n" + CAPTION + "\n"
    hd = _headers(rs, latex=True)
    esc = lambda s: s.replace("_", r"\_").replace("%", r"\%").replace("&", r"\&")  # noqa: E731
    lines = [r"\begin{table}[t]", r"\centering", r"\small",
             r"\begin{tabular}{l" + "r" * (len(hd) - 1) + "}", r"\toprule",
             " & ".join(hd) + r" \\", r"\midrule"]
    for r in rs:
        cells = _cells(r, latex=True)
        cells[0] = esc(cells[0]).replace("·", r"$\cdot$")
        lines.append(" & ".join(c.replace("–", "--") for c in cells) + r" \\")
    cap = (CAPTION.replace("ℓ_n − ℓ_0", r"$\ell_n-\ell_0$").replace("≤ δ", r"$\le\delta$")
           .replace("ΔA", r"$\Delta A$").replace("ΔR", r"$\Delta R$").replace("V_Y", r"$V_Y$")
           .replace("†", r"$\dagger$").replace("−", "-").replace("±", r"$\pm$")
           .replace("> δ", r"$>\delta$").replace("n ≤ E", r"$n\le E$").replace("δ", r"$\delta$")
           .replace("ℓ", r"$\ell$"))
    lines += [r"\bottomrule", r"\end{tabular}", r"\caption{" + cap + "}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def _csv(rs) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = ["setting", "teacher", "runs", "converged", "horizon", "diverged"]
    stats = ["E", "dA_min", "dA_mean", "dR"]
    hdr = cols + [f"{s}_{q}" for s in stats for q in ("median", "min", "max")]
    hdr += ["refit_kind", "cert_kind"]
    hdr += [f"{c}_{q}" for c in ("cert_dA_min", "cert_dR") for q in ("lo", "hi", "resolved", "count", "rigorous")]
    hdr += ["final_mean", "final_sd"]
    w.writerow(hdr)
    for r in rs:
        line = [r[c] for c in cols]
        for s in stats:
            line += ([repr(r[s][q]) for q in ("median", "min", "max")] if r[s] else ["", "", ""])
        line += [r["refit_kind"] or "", r["cert_kind"] or ""]
        for c in ("cert_dA_min", "cert_dR"):
            v = r[c]
            line += ([repr(v["lo"]), repr(v["hi"]), v["resolved"], v["count"], v["rigorous"]]
                     if v else ["", "", "", "", ""])
        line += [repr(r["final_mean"]), repr(r["final_sd"])]
        w.writerow(line)
    return buf.getvalue()


def runs_listing(store) -> str:
    """One line per finished run (``popdyn ls``), in declared order."""
    st = store if isinstance(store, Store) else Store(store, create=False)
    lines = [f"{'key':<12} {'teacher':<22} {'setting':<12} {'seed':>5} {'status':<10} "
             f"{'updates':>8} {'E':>7} {'final loss':>11}"]
    for setting, label, recs in groups(st):
        for r in recs:
            lines.append(f"{r['key'][:12]:<12} {label[:22]:<22} {setting[:12]:<12} "
                         f"{r['seed']:>5} {r['status']:<10} {r['n_final']:>8} "
                         f"{r['plateau']['end_n']:>7} {_f(num(r['loss_final']), 6):>11}")
    unf = st.unfinished()
    lines.append(f"{len(lines) - 1} finished run(s)" + (f", {len(unf)} unfinished (rerun the "
                                                          "sweep to resume them)" if unf else ""))
    return "\n".join(lines) + "\n"


def show(store, run: str) -> str:
    """A readable account of one stored run (``popdyn show``)."""
    import json

    st = store if isinstance(store, Store) else Store(store, create=False)
    key = st.resolve(run)
    r = st.record(key)
    pl = r["plateau"]
    out = [f"run {key}", f"  teacher {r['label']}, setting {r['setting']}, seed {r['seed']}; "
           f"popdyn {r['popdyn']}, schema {r['schema']}",
           f"  status {r['status']} after {r['n_final']} updates, t = {num(r['t_final']):.4g}; "
           f"final normalized loss {num(r['loss_final']):.6g}",
           f"  plateau ({pl['rule']}): ends at n = {pl['end_n']}, t = {num(pl['end_t']):.4g}; "
           f"P = n {pl['P_n']}, loss change at P {num(pl['P_loss_change']):+.3e}",
           "  checkpoints (losses and refit risks in units of V_Y):"]
    keys = [k for k in r["checkpoints"]["init"] if k not in ("n", "t", "gap")]
    short = {"normalized_loss": "loss", "resolved": "resolved",
             "gate_weighted_angle": "gate_w_angle", "gate_median_angle": "gate_med_angle",
             "value_weighted_angle": "value_w_angle", "frac_gates_near_axis": "gates_near_ax",
             "frac_axes_covered": "axes_covered"}
    names = [short.get(k, k.replace("refit_", "R_").replace("_lower", "_lo")) for k in keys]
    # every header in full (a column is as wide as its name, at least 14): truncated names
    # collide, e.g. R_same_budget and R_same_budget_lo
    wd = [max(14, len(k)) for k in names]
    out.append("    " + f"{'':>8} {'n':>7} {'t':>9} "
               + " ".join(f"{k:>{w}}" for k, w in zip(names, wd)))
    for name in ("init", "plateau", "final"):
        c = r["checkpoints"][name]
        vals = []
        for k, w in zip(keys, wd):
            v = c.get(k)
            vals.append(f"{str(v):>{w}}" if isinstance(v, bool) else f"{_f(num(v), 6):>{w}}")
        out.append("    " + f"{name:>8} {c['n']:>7} {num(c['t']):>9.4g} " + " ".join(vals))
    if "certified" in r:
        out.append("  certified brackets (certify):")
        for name in ("init", "plateau"):
            c = r["certified"][name]
            for k, v in sorted(c.items()):
                if isinstance(v, dict):
                    out.append(f"    {name:>8} {k:<22} [{num(v['lo']):.9g}, {num(v['hi']):.9g}] "
                               f"{v['provenance']}, {v['status']}")
                elif k != "n":
                    out.append(f"    {name:>8} {k:<22} {v}")
    out.append("  spec: " + json.dumps(r["spec"], sort_keys=True))
    return "\n".join(out) + "\n"
