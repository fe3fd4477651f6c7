"""The ``popdyn`` command line."""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from . import config as _config
from ._paths import data_path


def _fmt(x, nd=6):
    return "—" if x is None else f"{x:.{nd}f}"


def cmd_run(args) -> int:
    from .diagnostics import checkpoints, recorder
    from .dynamics import train

    path = args.config or data_path("configs", "smoke.toml")
    cfg = _config.load(path)
    student = _config.build_student(cfg)
    teacher = _config.build_teacher(cfg, student.d)
    init = cfg["init"]
    seeds = args.seeds if args.seeds is not None else init.get("seeds", [0])
    kw = _config.train_kwargs(cfg)
    print(f"popdyn run: {cfg.get('name', path)}  ({path})")
    print(f"  student: {student.activation}, d={student.d}, m={student.m}, bias={student.bias}, "
          f"scaling={student.scaling}; init scale {init['scale']}")
    tdesc = teacher.link.name if teacher.kind == "additive" else teacher.activation.name
    print(f"  teacher: {teacher.kind} {tdesc}, rank {teacher.k}; E[y] = {teacher.mean:.6g}, "
          f"V_Y = {teacher.variance:.6g}")
    print(f"  integrator: {kw.get('method', 'flow')}; loss target {kw.get('loss_target', 0)} (units of V_Y)")
    print("  losses and refit risks are MSE/V_Y; P = last diagnostic inside the plateau "
          "|l_n - l_0| <= 1e-3 (DESIGN §5)")
    rec = recorder(teacher.subspace, kinds=("unrestricted", "same_budget"))
    t_all = time.perf_counter()
    rows = []
    for seed in seeds:
        p0 = student.init(seed, init["scale"], teacher if init.get("fit_intercept", True) else None)
        tr = train(student, p0, teacher, recorder=rec, **kw)
        ck = checkpoints(tr, delta=1e-3)
        pl = ck["plateau"]
        ell = tr.normalized_loss
        print(f"\n  seed {seed}: {tr.status} after {tr.n[-1]} updates, t = {tr.t[-1]:.2f}, "
              f"wall {tr.info['wall_time']:.2f} s")
        print(f"    plateau (1e-3) ends at n = {pl.end_n}, t = {pl.end_t:.2f}; loss change at P: "
              f"{ck['loss_change']:+.2e}")
        print(f"    {'':>6} {'n':>6} {'t':>8} {'loss':>9} {'A_top':>6} {'A_min':>6} {'A_mean':>6} "
              f"{'R_unres':>8} {'R_same':>8}")
        for key, lab in (("init", "init"), ("plateau", "P"), ("final", "finish")):
            r = ck["record"][key]
            print(f"    {lab:>6} {r['n']:>6d} {r['t']:>8.2f} {r['normalized_loss']:>9.6f} "
                  f"{r['a_top']:>6.3f} {r['a_min']:>6.3f} {r['a_mean']:>6.3f} "
                  f"{r['refit_unrestricted']:>8.4f} {r['refit_same_budget']:>8.4f}")
        rows.append((seed, ell[0], ell[-1]))
    print(f"\n  isotropic reference for A_mean: r/d = {teacher.subspace.shape[0] / student.d:.3f}; "
          f"total wall time {time.perf_counter() - t_all:.1f} s")
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "check":
        from proofs_checks.cli import main as check_main
        return check_main(argv[1:])
    parser = argparse.ArgumentParser(prog="popdyn", description=__doc__)
    sub = parser.add_subparsers(dest="cmd")
    run = sub.add_parser("run", help="run the embedded default (data/configs/smoke.toml) or a config")
    run.add_argument("config", nargs="?", help="TOML run configuration (default: the embedded smoke config)")
    run.add_argument("--seeds", type=int, nargs="+", help="override the config's seeds")
    run.set_defaults(func=cmd_run)
    sub.add_parser("check", help="run theorem checks: popdyn check NAME... | --all [--quick|--full]")
    args = parser.parse_args(argv)
    if args.cmd is None:
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(f"popdyn {args.cmd}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
