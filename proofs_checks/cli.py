"""``popdyn check``: run registered theorem checks and print their verdicts.

Usage (``argv`` is what follows ``popdyn check``)::

    popdyn check NAME [NAME ...] [--quick | --full] [--method rigorous|numerical] [--brief]
                 [--json PATH] [--strict]
    popdyn check --all [--quick | --full] ...
    popdyn check --list

The default preset is ``--quick`` (CI settings); ``--full`` runs the paper settings.  Each verdict
is printed with its statement, settings, the theorem's constant, the measured bracket and its
provenance, and the margin; a summary table follows.

``--method`` sets the ``method`` setting of the checks that have one (gauge_separation:
"rigorous" validated enclosures, the default, or "numerical" tolerance refinement); naming a
check without that setting together with ``--method`` is a usage error.

Exit status: 0 when every requested check ran to a verdict — a ``fail`` or ``undecided`` verdict
is a result, not a crash; 1 when a check raised an exception (the others still run; the traceback
goes to stderr); 2 for a usage error (unknown check name, nothing requested); with ``--strict``,
3 when all checks ran but some verdict is not ``pass``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._core import Verdict


def _parser():
    p = argparse.ArgumentParser(prog="popdyn check",
                                description="Run theorem checks (proofs_checks) and print verdicts.")
    p.add_argument("names", nargs="*", metavar="NAME", help="check name(s); see --list")
    p.add_argument("--all", action="store_true", help="run every registered check")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", dest="quick", action="store_true", default=True,
                   help="CI settings (default)")
    g.add_argument("--full", dest="quick", action="store_false", help="full (paper) settings")
    p.add_argument("--method", metavar="METHOD", default=None,
                   help="bracket method of the checks that have one (gauge_separation): "
                        "rigorous (default) or numerical")
    p.add_argument("--list", action="store_true", help="list the registered checks and exit")
    p.add_argument("--brief", action="store_true", help="omit the notes (tables, per-run lines)")
    p.add_argument("--json", metavar="PATH", help="also write the verdicts as JSON to PATH")
    p.add_argument("--strict", action="store_true",
                   help="exit with status 3 when a verdict is fail or undecided")
    return p


def _provenance(v) -> str:
    """The summary line's provenance: the verdict's own, or for a composite verdict whose
    claims mix rigorous and numerical brackets, how many of its claims are rigorous (the
    verdict as a whole is only as rigorous as its least rigorous claim)."""
    claims = [p for p in v.parts if p.role == "claim"]
    n_rig = sum(p.provenance == "rigorous" for p in claims)
    if claims and 0 < n_rig < len(claims):
        return f"{v.provenance}: {n_rig} of {len(claims)} claims rigorous"
    return v.provenance


def main(argv=None, *, out=None, err=None) -> int:
    """Entry point of ``popdyn check`` (see the module docstring); returns the exit status."""
    from . import CHECKS, get_check, load_plugins, run_check

    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed the message
        return int(exc.code or 0)
    failed = {k: v for k, v in load_plugins().items() if v is not None}
    if args.list:
        for name, chk in CHECKS.items():
            print(f"{name:<20} {chk.description}", file=out)
        for msg in failed.values():
            print(f"popdyn check: warning: {msg}", file=err)
        return 0
    if args.all and args.names:
        print("popdyn check: error: give check names or --all, not both", file=err)
        return 2
    names = list(CHECKS) if args.all else args.names
    if not names:
        print("popdyn check: error: name a check or use --all (see --list)", file=err)
        return 2
    for n in names:
        try:
            get_check(n)
        except ValueError as exc:
            print(f"popdyn check: error: {exc}", file=err)
            return 2
    overrides = {}
    if args.method is not None:
        from popdyn.gauge import METHODS

        if args.method not in METHODS:
            print(f"popdyn check: error: --method must be one of {', '.join(METHODS)}, got "
                  f"{args.method!r}", file=err)
            return 2
        without = [n for n in names if "method" not in get_check(n).quick]
        if without and not args.all:
            print(f"popdyn check: error: --method applies to checks with a method setting; "
                  f"{', '.join(without)} has none", file=err)
            return 2
        overrides = {n: {"method": args.method} for n in names if n not in without}
    preset = "quick" if args.quick else "full"
    print(f"popdyn check: {len(names)} check(s), {preset} settings", file=out)
    results: list[tuple[str, Verdict | None]] = []
    errors: list[str] = []
    t_all = time.perf_counter()
    v: Verdict | None
    for n in names:
        print("", file=out)
        try:
            v = run_check(n, quick=args.quick, **overrides.get(n, {}))
        except Exception as exc:  # a crashed check is reported and the others still run
            errors.append(n)
            print(f"[ERROR] {n}: {type(exc).__name__}: {exc}", file=out)
            traceback.print_exc(file=err)
            results.append((n, None))
            continue
        results.append((n, v))
        print(v.report(notes=not args.brief), file=out)
        out.flush()
    print("", file=out)
    print(f"summary ({preset} settings, {time.perf_counter() - t_all:.1f} s):", file=out)
    for n, v in results:
        if v is None:
            print(f"  {n:<20} ERROR", file=out)
        else:
            lo, hi = v.bracket
            print(f"  {n:<20} {v.verdict:<10} margin {v.margin:+.3g}  bracket [{lo:.4g}, {hi:.4g}] "
                  f"({_provenance(v)})  {v.elapsed:.1f} s", file=out)
    if args.json:
        doc = [{"name": n, "error": v is None, "verdict": None if v is None else v.to_dict()}
               for n, v in results]
        from ._core import _json_default
        with open(args.json, "w") as fh:
            json.dump(doc, fh, default=_json_default, indent=1)
    if errors:
        return 1
    if args.strict and any(v is not None and v.verdict != "pass" for _, v in results):
        return 3
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
