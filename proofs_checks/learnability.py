"""Check ``learnability``: teacher geometry, end-state kinds and the rate intervention
(the teacher-learnability paper).

The census of :mod:`popdyn.learnability` -- every setting declared in
``data/configs/learnability.toml`` before it runs -- trains students with biases by population
gradient flow against "easy" (orthonormal rows: maximal node dissimilarity) and "hard" (nearly
parallel rows: minimal node dissimilarity) teacher networks, over activations, widths,
initialization scales and seeds, with and without the intervention "readout rate up, inner-bias
rate down", and classifies every end state (global / out_of_bounds / interior / unconverged).

Claims (one part each; brackets are Clopper–Pearson intervals on pooled counts, differences by
the Bonferroni combination of two intervals -- :func:`popdyn.learnability.rate_difference` -- at
the declared level; numerical: they bound a sampling error, not a rounding error):

* ``easy > hard [act]`` (the two distributions "induce markedly different success
  rates ... for different activation functions"; easy is the one named easy): per activation, the
  baseline success rate of easy minus that of hard, pooled over widths and scales, is > 0;
* ``hard → OOB`` ("minimally dissimilar teachers induce more OOB minima"): among the
  baseline non-global end states at widths m > k ("larger networks"), the fraction out_of_bounds
  for hard minus that for easy is > 0;
* ``easy → interior`` ("maximally dissimilar teachers induce more interior minima"):
  the same with the fraction interior, easy minus hard;
* ``intervention [act]`` (the intervention "increases success rates"): per
  activation, the success rate with the intervention minus without, pooled over teachers, widths
  and scales, is > 0.

Each part passes when its bracket's lower end is > 0, fails when its upper end is < 0, and is
undecided otherwise (at_least 0 on an interval; a zero-width bracket at 0 is undecided by
construction since no claim can pass on it).  Pooling cells of different true rates gives a
Poisson-binomial count; by Hoeffding's comparison (Ann. Math. Statist. 27 (1956) 713-721) its
tails more than one unit beyond the mean are no heavier than those of the binomial with the same
mean, which is what the pooled interval for the mean rate relies on (stated, not proved here).
Success means reaching the threshold within the declared horizon: a run still converging slowly
at the horizon is not a success.  A control reports the unconverged fraction (runs that neither
reached the threshold nor came to rest within the horizon).

The check writes the success-rate figure, the per-run records (JSON) and the census log
(``census.jsonl``: finished runs, read back on a rerun so that an interrupted census resumes) to
``out`` (default: for ``full`` the directory ``popdyn-learnability-full`` under the system's
temporary directory, for ``quick`` a fresh temporary directory).  A log is read back only for
records of the same configuration sections and run settings; it does not know the code that
produced it: after changing popdyn, delete it or pass a new ``out``.  The reported wall time is
that of the runs computed in this call.

References
----------
The teacher-learnability paper (abstract: "Teacher-student systems, in which a teacher neural
network generates training labels so that a student neural network can learn to implement the
same function, are widely used as an abstract setting to study learning");
popdyn.learnability; data/configs/learnability.toml.
"""
from __future__ import annotations

import json
import os
import tempfile
import time

from popdyn import learnability as L
from popdyn.learnability import rate_difference

from ._core import make_verdict, register, summary_verdict
from pathlib import Path

EPS_MARGIN = 0.0     # the claims are "> 0": constant 0 on the lower end of the bracket


def _diff_part(name, statement, x1, n1, x2, n2, level, *, role="claim", extra=()):

    lo, hi = rate_difference(x1, n1, x2, n2, level)
    note = (f"{x1}/{n1} = {x1 / n1 if n1 else float('nan'):.3f} vs {x2}/{n2} = "
            f"{x2 / n2 if n2 else float('nan'):.3f}; Bonferroni bracket at level {level:g}",) + tuple(extra)
    v = make_verdict(name, statement, kind="at_least", constant=EPS_MARGIN, bracket=(lo, hi),
                     provenance="numerical", role=role, notes=note)
    if v.verdict == "pass" and not lo > 0:      # a bracket touching 0 does not show "> 0"
        v = v.replace(verdict="undecided")
    return v


def _default_out(preset):
    return str(Path(tempfile.gettempdir()) / f"popdyn-learnability-{preset}")


def verdict_of(records, cfg, *, preset="?", wall=None, out=None) -> object:
    """The composite verdict on census ``records`` (list of :func:`popdyn.learnability.run`
    records) under configuration ``cfg``."""

    level = float(cfg["stats"]["level"])
    k = int(cfg["teacher"]["k"])
    base = L.select(records, intervention=False)
    acts = sorted({r["activation"] for r in records})
    parts = []
    for a in acts:
        e = L.counts(L.select(base, activation=a, teacher="easy"))
        h = L.counts(L.select(base, activation=a, teacher="hard"))
        parts.append(_diff_part(f"easy > hard [{a}]", "baseline success rate, easy minus hard "
                                "teachers, pooled over widths and scales, is > 0",
                                e["global"], e["n"], h["global"], h["n"], level))
    big = [r for r in base if r["m"] > k]
    fe = [r for r in L.select(big, teacher="easy") if r["kind"] != "global"]
    fh = [r for r in L.select(big, teacher="hard") if r["kind"] != "global"]
    ce, ch = L.counts(fe), L.counts(fh)
    rest = [r for r in fe + fh if r["kind"] == "out_of_bounds"]
    n_rest = sum(1 for r in rest if r["drop"] is not None and r["drop"] <= cfg["classify"]["stall"])
    kinds = (f"easy failures {ce['out_of_bounds']} OOB / {ce['interior']} interior / "
             f"{ce['unconverged']} unconverged; hard failures {ch['out_of_bounds']} / {ch['interior']} / "
             f"{ch['unconverged']}; of these {len(rest)} out-of-bounds end states, {n_rest} at rest "
             f"(relative loss drop <= {cfg['classify']['stall']:g} over the last "
             f"{cfg['classify']['tail']:g} of the horizon)",)
    if big:
        parts.append(_diff_part("hard → OOB", f"among baseline non-global end states at m > k = {k}, "
                                "the out-of-bounds fraction, hard minus easy, is > 0",
                                ch["out_of_bounds"], ch["n"], ce["out_of_bounds"], ce["n"], level,
                                extra=kinds))
        parts.append(_diff_part("easy → interior", f"among baseline non-global end states at m > k = {k}, "
                                "the interior fraction, easy minus hard, is > 0",
                                ce["interior"], ce["n"], ch["interior"], ch["n"], level, extra=kinds))
    else:
        for nm in ("hard → OOB", "easy → interior"):
            parts.append(make_verdict(nm, f"no widths m > k = {k} in this preset: not tested",
                                      kind="at_least", constant=EPS_MARGIN, bracket=(-1.0, 1.0),
                                      provenance="numerical"))
    for a in acts:
        w = L.counts(L.select(records, activation=a, intervention=True))
        wo = L.counts(L.select(records, activation=a, intervention=False))
        parts.append(_diff_part(f"intervention [{a}]", "success rate with head_lr_mult = "
                                f"{cfg['intervention']['head_lr_mult']:g}, bias_lr_mult = "
                                f"{cfg['intervention']['bias_lr_mult']:g} minus without, pooled over "
                                "teachers, widths and scales (paired seeds), is > 0",
                                w["global"], w["n"], wo["global"], wo["n"], level))
    allc = L.counts(records)
    parts.append(make_verdict("control: unconverged fraction", "fraction of runs neither at the "
                              "success threshold nor at rest at the horizon (reported)",
                              kind="at_most", constant=0.1,
                              bracket=L.clopper_pearson(allc["unconverged"], allc["n"], level),
                              provenance="numerical", role="control"))
    rows = L.tabulate(records, level)
    notes = [L.format_table(rows)]
    if out is not None:
        notes.append(f"figure: {out['figure']}; records: {out['records']}")
    if wall is not None:
        notes.append(f"census: {len(records)} runs, wall {wall:.1f} s")
    return summary_verdict(
        "learnability", "teacher-learnability paper: easy teachers are learned more often than hard "
        "ones; hard teachers' failures are more often out-of-bounds and easy teachers' more often "
        "interior; readout rate up / inner-bias rate down raises the success rate", parts,
        notes=notes)


@register("learnability",
          description="teacher learnability: easy vs hard teachers, OOB vs interior end states, "
                      "the readout-up / bias-down rate intervention (teacher-learnability paper)",
          quick=dict(census="quick", config="", workers=1, out="", seeds=0),
          full=dict(census="full", config="", workers=2, out="", seeds=0))
def check(*, census: str, config: str, workers: int, out: str, seeds: int):
    """Run the declared census ``census`` ("quick" or "full") of ``config`` (a TOML path; empty:
    the embedded ``learnability.toml``) on ``workers`` processes, write the figure and the
    records to ``out`` (empty: a temporary directory) and decide the claims.  ``seeds`` > 0
    takes only the first ``seeds`` seeds of every cell (0: the declared number); the runs
    already in ``out``'s census log are read back, not recomputed."""

    cfg = L.load_config(config or None)
    L.grid(cfg, census)          # validates `census` (names the argument and the choices)
    if not out and census == "quick":
        # a fresh directory, deleted afterwards: CI never reads back an earlier run's log and
        # nothing is left behind (pass `out` to keep the figure and the records)
        with tempfile.TemporaryDirectory(prefix="popdyn-learnability-quick-") as tmp:
            v = _census_verdict(cfg, census, Path(tmp), workers, seeds)
        return v.replace(notes=tuple(n for n in v.notes if not n.startswith("figure: "))
                         + ("figure and records not kept (pass out=DIR to keep them)",))
    return _census_verdict(cfg, census, Path(out) if out else Path(_default_out(census)),
                           workers, seeds)


def _census_verdict(cfg, census, outdir, workers, seeds):
    outdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 0:
        raise ValueError(f"`seeds` must be a non-negative int (0: the declared count), got {seeds!r}")
    if seeds > int(cfg[census]["seeds"]):
        raise ValueError(f"`seeds` = {seeds} exceeds the declared [{census}] seeds = {cfg[census]['seeds']}")
    recs = L.census(cfg, census, workers=workers, log=outdir / "census.jsonl",
                    limit=seeds * L.cells(cfg, census))
    wall = time.perf_counter() - t0
    fig = L.figure(recs, outdir / "learnability.png", level=float(cfg["stats"]["level"]))
    rec_path = outdir / "records.json"
    tmp = rec_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"config": cfg, "preset": census, "wall": wall, "records": recs}))
    os.replace(tmp, rec_path)
    return verdict_of(recs, cfg, preset=census, wall=wall,
                      out={"figure": str(fig), "records": str(rec_path)})
