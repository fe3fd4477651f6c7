"""Run from the repository root:  PYTHONPATH=. python benchmarks/soak/float_recheck.py START STOP STEP

The float engine's rtol contract (soak_certify.float_contract: loss and AGOP at rtol 1e-10 and
1e-12, within rtol or warned) on the soak's smooth-student ridge cases, on the code in PYTHONPATH,
with the soak's own references.  Prints one line per case and a summary; stops at --max-cases."""
import collections, sys, time
sys.path.insert(0, "benchmarks"); sys.path.insert(0, "tests/certify"); sys.path.insert(0, "tests")
import mpmath as mp
import soak_certify as SC
SC.OPT.update({'seed': 19000, 'dps': 20, 'rule': 'trapezoid', 'smooth_nets': False,
               'family': 'all', 'reference': 'arb', 'recheck_every': 40})
start, stop, step = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
tot = collections.Counter(); allfails = []
t0 = time.time()
for i in range(start, stop, step):
    if SC.family_of(i) != "ridge":
        continue
    name, act, raw, fam = SC.draw(i, 19000)
    if act in ("relu", "leaky_relu") or raw["teacher"] is None:
        continue
    mp.mp.dps = 60
    vals, _ = SC.reference_ridge(i, 19000, "arb", SC._case_dps(name), {"loss"})
    counts, fails = collections.Counter(), []
    SC.float_contract(i, 19000, vals, counts, fails)
    # classify the loss warnings: err / (rtol |L| + atol) of the warned values
    import warnings, popdyn
    S, p, T = SC._build_ridge(act, raw)
    for rtol in (1e-10, 1e-12):
        if counts.get(f"float loss AccuracyWarning (rtol {rtol:g})"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                Lf, info = popdyn.population_loss(S, p, T, rtol=rtol, full_output=True)
            ref = mp.mpf(vals["loss"].v)
            ratio = float(abs(mp.mpf(Lf) - ref) / (rtol * abs(ref) + mp.mpf(info["atol"])))
            counts[f"warned loss err/target {'<0.01' if ratio < 0.01 else '>=0.01'} (rtol {rtol:g})"] += 1
            print(f"  warned {name} rtol {rtol:g}: err/target {ratio:.3g}", flush=True)
    tot.update(counts); allfails += fails
    tot["cases"] += 1
    print(name, dict(counts), fails, flush=True)
print("SUMMARY", dict(tot), "fails:", allfails, f"{time.time() - t0:.0f} s", flush=True)
