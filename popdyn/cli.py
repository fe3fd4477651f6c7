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
    from .dynamics import train
    from .plateau import plateau

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
    print()
    hdr = (f"{'seed':>4}  {'L0/V_Y':>9}  {'plateau end (1e-3)':>26}  {'final':>9}  "
           f"{'updates':>7}  {'time t':>9}  {'status':>9}  {'wall s':>6}")
    print("  losses are MSE/V_Y = 2L/V_Y; plateau end = last update with |l_n - l_0| <= 1e-3")
    print(hdr)
    t_all = time.perf_counter()
    for seed in seeds:
        p0 = student.init(seed, init["scale"], teacher if init.get("fit_intercept", True) else None)
        tr = train(student, p0, teacher, **kw)
        ell = tr.normalized_loss
        pl = plateau(ell, delta=1e-3, n=tr.n, t=tr.t)
        pe = f"{ell[pl.end]:.6f} @ n={pl.end_n}, t={pl.end_t:.1f}"
        print(f"{seed:>4}  {ell[0]:>9.6f}  {pe:>26}  {ell[-1]:>9.6f}  {tr.n[-1]:>7d}  "
              f"{tr.t[-1]:>9.2f}  {tr.status:>9}  {tr.info['wall_time']:>6.2f}")
    print(f"\n  total wall time {time.perf_counter() - t_all:.1f} s")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="popdyn", description=__doc__)
    sub = parser.add_subparsers(dest="cmd")
    run = sub.add_parser("run", help="run the embedded default (data/configs/smoke.toml) or a config")
    run.add_argument("config", nargs="?", help="TOML run configuration (default: the embedded smoke config)")
    run.add_argument("--seeds", type=int, nargs="+", help="override the config's seeds")
    run.set_defaults(func=cmd_run)
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
