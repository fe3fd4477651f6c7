"""Figures from stored runs (matplotlib, optional: the ``figures`` extra, ``pip install ".[figures]"``
from the popdyn checkout, or ``pip install matplotlib``).

One column per (setting, teacher) cohort, four rows (Kumar (arXiv 2609.39408), Figures 1 and 2):

1. normalized loss MSE/V_Y (every update);
2. AGOP alignment A_min (solid), A_mean (dashed, with the isotropic reference r/d dotted) and
   A_top (dash-dotted);
3. refit risks in units of V_Y, one line style per recorded kind;
4. neuron angle to the teacher subspace: importance-weighted 5° histograms, normalized per seed
   and averaged over the seeds (colour = mean importance share); for SwiGLU students (whose
   records hold the gate geometry instead) the effective gate angles from the weighted (solid)
   and median (dashed) squared-cosine scores and the weighted value angle (dotted), in degrees,
   as means and bands over seeds like rows 2–3 (Kumar (arXiv 2609.39408), Figures 4 and 18).

Horizontal axis: log(1 + n/100) with ticks labelled in updates n (early time expanded,
initialization and the whole run visible; the same range in every column), or the flow time t
(``x="time"``).  Solid curves are means over seeds and light bands the pointwise 10th–90th
percentiles over ten or more seeds, the minimum–maximum over fewer (percentiles of three seeds
are not percentiles), both on the support shared by all seeds; every seed's own curve is drawn thin over its whole record, so individual tails
stay visible; a cross marks the end of a diverged run.  Grey shading marks the plateau shared by
all seeds (the minimum of the runs' δ-prefix endpoints).  Bands show seed variation, not
confidence intervals.  Rendering uses the Agg canvas directly (no pyplot, no global backend).
"""
from __future__ import annotations

import textwrap
import warnings

import numpy as np

from .store import Store, num
from .tables import groups

_NEED = ("matplotlib is needed for figures: install popdyn's `figures` extra "
         "(pip install '.[figures]' from the popdyn checkout) or pip install matplotlib")


def _mpl():
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(_NEED) from None
    return Figure


def _xmap(kind):
    if kind == "log_updates":
        return lambda n, t: np.log1p(np.asarray(n, dtype=float) / 100.0)
    return lambda n, t: np.asarray(t, dtype=float)


def _series(recs, key):
    return np.array([num(r.get(key)) if r.get(key) is not None else np.nan for r in recs])


#: fewer seeds than this: the band is the minimum–maximum over seeds, not the 10–90 % range
BAND_PERCENTILE_SEEDS = 10


def _band(ax, x, Y, color, label=None):
    Y = np.asarray(Y, dtype=float)
    if Y.ndim != 2 or Y.shape[1] == 0:
        return
    q = (10, 90) if Y.shape[0] >= BAND_PERCENTILE_SEEDS else (0, 100)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # all-NaN columns stay NaN
        lo = np.nanpercentile(Y, q[0], axis=0)
        hi = np.nanpercentile(Y, q[1], axis=0)
        mu = np.nanmean(Y, axis=0)
    ax.fill_between(x, lo, hi, color=color, alpha=0.18, lw=0)
    ax.plot(x, mu, color=color, lw=1.6, label=label)


def _ticks(ax, nmax):
    """Ticks at 0, 10, 100, 1,000, … up to ``nmax`` on the log(1 + n/100) axis, plus ``nmax``
    itself when it does not crowd the last decade; the axis spans [0, log(1 + nmax/100)]."""
    cand = [0, 10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000]
    ticks = [c for c in cand if c <= max(nmax, 1)]
    end = float(np.log1p(max(nmax, 1) / 100.0))
    if nmax not in ticks and end - np.log1p(ticks[-1] / 100.0) > 0.08 * end:
        ticks.append(nmax)
    pos = np.log1p(np.array(ticks, dtype=float) / 100.0)
    keep = [0]
    for i in range(1, len(ticks)):       # avoid overlapping labels
        if pos[i] - pos[keep[-1]] > 0.06 * max(end, 1e-9):
            keep.append(i)
    ax.set_xticks(pos[keep])
    ax.set_xticklabels([f"{ticks[i]:,}" for i in keep], fontsize=7)
    ax.set_xlim(0.0, end * 1.01)


def figure(store, out, *, x: str = "log_updates", max_columns: int = 8, dpi: int = 110):
    """Draw the cohort figure of ``store`` to the file ``out`` (format from its suffix).

    Returns the path written.  Raises ``ImportError`` with an install hint when matplotlib is
    missing, ``ValueError`` for an empty store or a bad ``x``.
    """
    from pathlib import Path

    from .. import _validate as V

    V.choice("x", x, ("log_updates", "time"))
    Figure = _mpl()
    st = store if isinstance(store, Store) else Store(store, create=False)
    gs = groups(st)
    if not gs:
        raise ValueError(f"store {st.root} has no finished runs: nothing to draw")
    gs = gs[:max_columns]
    X = _xmap(x)
    ncol = len(gs)
    fig = Figure(figsize=(3.1 * ncol + 0.8, 9.2), dpi=dpi, layout="constrained")
    axes = fig.subplots(4, ncol, squeeze=False, sharex="all" if x == "log_updates" else "col")
    # one horizontal range for every column (updates axis): the longest run's
    nmax_all = max(max(int(st.arrays(r["key"])["n"][-1]) for r in recs) for _, _, recs in gs)
    n_seeds = [len(recs) for _, _, recs in gs]
    colors = {"a_min": "#1b7f79", "a_mean": "#1b7f79", "a_top": "#1b7f79"}
    rcol = ["#6a3d9a", "#b15928", "#33a02c", "#e31a1c"]
    gcol = {"gate_weighted_angle": "#8c510a", "gate_median_angle": "#8c510a",
            "value_weighted_angle": "#01665e"}
    gate_rows = [False] * ncol
    for j, (setting, label, recs) in enumerate(gs):
        runs = [(r, st.arrays(r["key"])) for r in recs]
        title = label if setting == "default" else f"{label} · {setting}"
        axes[0, j].set_title(f"{title}\n{len(recs)} seed{'s' if len(recs) != 1 else ''}",
                             fontsize=9)
        # shared plateau
        end_n = min(r["plateau"]["end_n"] for r in recs)
        end_t = min(num(r["plateau"]["end_t"]) for r in recs)
        xs = float(X(end_n, end_t))
        for i in range(4):
            axes[i, j].axvspan(float(X(0, 0.0)), xs, color="0.85", lw=0, zorder=0)
        # 1: loss at every update
        ax = axes[0, j]
        nmin = min(int(a["n"][-1]) for _, a in runs)
        L = []
        for r, a in runs:
            ell = 2.0 * a["loss"] / num(r["variance"])
            ax.plot(X(a["n"], a["t"]), ell, color="#1f3b73", lw=0.5, alpha=0.45)
            if r["status"] == "diverged":
                ax.plot(X(a["n"][-1:], a["t"][-1:]), ell[-1:], "x", color="red", ms=5)
            L.append(ell[: nmin + 1])
        if x == "log_updates":
            _band(ax, X(np.arange(nmin + 1), None), np.array(L), "#1f3b73")
        else:
            tg = np.linspace(0.0, min(float(a["t"][-1]) for _, a in runs), 300)
            _band(ax, tg, [np.interp(tg, a["t"], 2 * a["loss"] / num(r["variance"])) for r, a in runs],
                  "#1f3b73")
        # shared diagnostic grid
        common = sorted(set.intersection(*[set(np.asarray(a["snap_n"]).tolist()) for _, a in runs]))
        def on_common(r, a, key):
            idx = {int(n): i for i, n in enumerate(a["snap_n"])}
            return np.array([num(r["records"][idx[n]].get(key)) for n in common])
        def xgrid(key_t=None):
            if x == "log_updates":
                return X(common, None)
            return None
        tgrid = None
        if x == "time":
            tgrid = np.linspace(0.0, min(float(a["snap_t"][-1]) for _, a in runs), 200)
        def seeds_and_band(ax, key, col, label, ls="-"):
            """Every seed's series of record ``key`` (thin), the 10–90 % band and the mean."""
            for r, a in runs:
                ax.plot(X(a["snap_n"], a["snap_t"]), _series(r["records"], key), color=col,
                        lw=0.4, alpha=0.3, ls=ls)
            if x == "log_updates":
                Y = [on_common(r, a, key) for r, a in runs]
                gx = xgrid()
            else:
                Y = [np.interp(tgrid, a["snap_t"], _series(r["records"], key)) for r, a in runs]
                gx = tgrid
            _band(ax, gx, Y, col, label=label)
            ax.lines[-1].set_linestyle(ls)

        # 2: alignment
        ax = axes[1, j]
        for key, ls, lab in (("a_min", "-", "A_min"), ("a_mean", "--", "A_mean"),
                             ("a_top", "-.", "A_top")):
            seeds_and_band(ax, key, colors[key], lab, ls)
        rr = recs[0]["r"] / recs[0]["d"]
        ax.axhline(rr, color="0.4", ls=":", lw=0.8, label="r/d (isotropic)")
        ax.set_ylim(-0.03, 1.03)
        # 3: refit risks
        ax = axes[2, j]
        kinds = [k for k in recs[0]["checkpoints"]["init"]
                 if k.startswith("refit_") and not k.endswith("_lower")]
        for c, key in enumerate(kinds):
            seeds_and_band(ax, key, rcol[c % len(rcol)], key[len("refit_"):].replace("_", "-"))
        # 4: angle heatmap (ordinary students) or gate angles (SwiGLU)
        ax = axes[3, j]
        if "hist_subspace" not in recs[0]["records"][0] and \
                "gate_weighted_angle" in recs[0]["records"][0]:
            gate_rows[j] = True
            for key, ls, lab in (("gate_weighted_angle", "-", "gate (weighted)"),
                                 ("gate_median_angle", "--", "gate (median)"),
                                 ("value_weighted_angle", ":", "value (weighted)")):
                seeds_and_band(ax, key, gcol[key], lab, ls)
            ax.set_ylim(0, 90)
            ax.legend(fontsize=7, loc="upper right", frameon=False)
        elif "hist_subspace" in recs[0]["records"][0] and common:
            H = []
            for r, a in runs:
                idx = {int(n): i for i, n in enumerate(a["snap_n"])}
                H.append([[num(v) for v in r["records"][idx[n]]["hist_subspace"]] for n in common])
            H = np.nanmean(np.array(H, dtype=float), axis=0)          # (len(common), bins)
            nb = H.shape[1]
            edges_y = np.linspace(0.0, 90.0, nb + 1)
            if x == "log_updates":
                cx = np.asarray(X(common, None), dtype=float)
            else:
                t_by_n = {int(n): float(t) for n, t in zip(runs[0][1]["snap_n"], runs[0][1]["snap_t"])}
                cx = np.array([t_by_n[n] for n in common])
            if cx.size > 1:
                mids = 0.5 * (cx[1:] + cx[:-1])
                ex = np.concatenate([[cx[0] - (mids[0] - cx[0])], mids, [cx[-1] + (cx[-1] - mids[-1])]])
            else:
                ex = np.array([cx[0] - 0.5, cx[0] + 0.5])
            im = ax.pcolormesh(ex, edges_y, H.T, cmap="magma_r", vmin=0.0,
                               vmax=max(float(np.nanmax(H)), 1e-12), shading="flat")
            if j == ncol - 1:
                fig.colorbar(im, ax=ax, fraction=0.05, pad=0.02).set_label("importance share", fontsize=7)
            ax.set_ylim(0, 90)
        else:
            ax.text(0.5, 0.5, "no geometry recorded", ha="center", va="center",
                    transform=ax.transAxes, fontsize=8, color="0.4")
        for i in range(4):
            axes[i, j].tick_params(labelsize=7)
            if x == "log_updates":
                _ticks(axes[i, j], nmax_all)
        axes[3, j].set_xlabel("updates n (axis: log(1 + n/100))" if x == "log_updates"
                              else "flow time t", fontsize=8)
    axes[0, 0].set_ylabel("MSE / V_Y  (= 2L / V_Y)", fontsize=8)
    axes[1, 0].set_ylabel("AGOP alignment", fontsize=8)
    axes[2, 0].set_ylabel("refit risk / V_Y", fontsize=8)
    for j in range(ncol):
        if gate_rows[j]:
            axes[3, j].set_ylabel("effective angle to subspace (°)", fontsize=8)
        elif j == 0:
            axes[3, 0].set_ylabel("angle to subspace (°)", fontsize=8)
    for ax in (axes[1, 0], axes[2, 0]):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best", frameon=True, framealpha=0.85, edgecolor="none")
    # the note wrapped to the figure's width (a single cohort's figure is 3.9 in wide: one line
    # would be clipped at both sides); the constrained layout puts the panels right under it
    w_in, _ = fig.get_size_inches()
    chars = max(30, int(w_in * 72 / (8 * 0.62)))          # 8 pt characters < 0.62 em wide
    band = ("10–90% bands" if min(n_seeds) >= BAND_PERCENTILE_SEEDS else
            "min–max bands" if max(n_seeds) < BAND_PERCENTILE_SEEDS else
            f"10–90% bands (min–max below {BAND_PERCENTILE_SEEDS} seeds)")
    note = textwrap.wrap(f"means and {band} over seeds (shared support); thin lines: every "
                         "seed; grey: plateau shared by all seeds", chars)
    fig.suptitle("\n".join(note), fontsize=8)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    kw = {"metadata": {"Software": None}} if out.suffix.lower() == ".png" else {}
    fig.savefig(out, **kw)
    return out
