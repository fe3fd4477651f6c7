"""The popdyn command line.

    popdyn run [CONFIG] [--store DIR] [--workers N] [--threads T] [--out FILE]   sweep + table + figure + check
    popdyn sweep CONFIG --store DIR [--workers N] [--threads T] [--scheduler ADDRESS]
    popdyn configs [show NAME]                list the embedded configurations / print one
    popdyn table --store DIR [--format md|latex|csv]
    popdyn figure --store DIR --out FILE
    popdyn ls --store DIR
    popdyn show --store DIR RUN
    popdyn check NAME... | --all [--quick|--full] | --list
    popdyn reproduce NAME [--seeds N] [--teachers LABEL ...] [--store DIR] [--workers N]
                          [--write FILE] [--json FILE] [--no-run]
    popdyn --version

CONFIG is a TOML file or the name of an embedded configuration (`popdyn configs` lists them,
`popdyn configs show NAME > my.toml` copies one out to edit).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

from . import config as _config
from ._notice import compile_notice
from ._paths import data_path


def _load(path):
    return _config.load(path)


def cmd_sweep(args) -> int:
    from .experiments import sweep

    cfg = _load(args.config)
    compile_notice()
    res = sweep(cfg, args.store, workers=args.workers, scheduler=args.scheduler,
                timeout=args.timeout, progress=not args.quiet, threads=args.threads)
    st = ", ".join(f"{v} {k}" for k, v in sorted(res["statuses"].items()))
    print(f"popdyn sweep: {len(res['keys'])} runs in {args.store}: {res['ran']} computed "
          f"({res['resumed']} resumed from checkpoints), {res['skipped']} already stored; "
          f"{st}; {res['wall']:.1f} s")
    return 0


def _describe(text: str) -> str:
    """The first comment line of a configuration (its description)."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("#"):
            return line.lstrip("#").strip()
        if line:
            break
    return ""


def _count_runs(text: str):
    """teachers × settings × seeds of a sweep configuration read as plain TOML (nothing built),
    or None for a settings file (read by ``popdyn reproduce`` / ``popdyn check``)."""
    import tomllib

    try:
        raw = tomllib.loads(text)
        if "teacher" not in raw and "teachers" not in raw or "student" not in raw:
            return None
        n_teachers = 1 if "teacher" in raw else len(raw["teachers"])
        base = raw.get("init", {}).get("seeds", [0])
        n = 0
        for setting in raw.get("settings", [{}]):
            n += len(_config.seeds_of(setting.get("init", {}).get("seeds", base)))
        return n_teachers * n
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def cmd_configs(args) -> int:
    """List the embedded configurations, or print one (``show NAME``)."""
    from ._paths import config_source, embedded_configs

    if args.action == "show":
        if not args.name:
            print("popdyn configs: error: `show` needs a NAME (see `popdyn configs`)",
                  file=sys.stderr)
            return 2
        label, src = config_source(args.name)
        sys.stdout.write(src.read_text())
        return 0
    if args.action is not None:
        print(f"popdyn configs: error: the action must be `show`, got {args.action!r}",
              file=sys.stderr)
        return 2
    emb = embedded_configs()
    width = max(len(n) for n in emb)
    print("embedded configurations (popdyn run NAME, popdyn sweep NAME --store DIR; "
          "popdyn configs show NAME > my.toml to edit one):")
    for name, src in emb.items():
        text = src.read_text()
        n_runs = _count_runs(text)
        kind = "settings" if n_runs is None else f"{n_runs} runs"
        desc = _describe(text)
        if len(desc) > 72:
            desc = desc[:71] + "…"
        print(f"  {name:<{width}}  {kind:>9}  {desc}")
    return 0


def cmd_table(args) -> int:
    from .experiments import table

    sys.stdout.write(table(args.store, args.format))
    return 0


def cmd_figure(args) -> int:
    from .experiments import figure

    path = figure(args.store, args.out, x=args.x)
    print(f"popdyn figure: wrote {path}")
    return 0


def cmd_ls(args) -> int:
    from .experiments import runs_listing

    sys.stdout.write(runs_listing(args.store))
    return 0


def cmd_show(args) -> int:
    from .experiments import show

    sys.stdout.write(show(args.store, args.run))
    return 0


def cmd_run(args) -> int:
    """Sweep + table + figure + the plateau_alignment check on the stored runs."""
    from .experiments import Store, figure, sweep, table

    if args.config:
        path = args.config
        cfg = _load(path)
    else:
        path = data_path("configs", "paper_smoke.toml")     # the embedded default
        with resources.as_file(path) as fp:
            cfg = _load(fp)
    if args.seeds is not None:
        cfg["init"] = {**cfg["init"], "seeds": list(args.seeds)}
        if "settings" in cfg:
            for s in cfg["settings"]:
                if "init" in s:
                    s["init"].pop("seeds", None)
    compile_notice()
    t0 = time.perf_counter()
    tmp = None
    if args.store is None:
        tmp = tempfile.TemporaryDirectory(prefix="popdyn-run-")
        store_dir = Path(tmp.name) / "store"
        args.temporary_store = True      # main() words an interruption accordingly
    else:
        store_dir = Path(args.store)
    try:
        print(f"popdyn run: {cfg.get('name', path)}  ({path})")
        print(f"  store: {store_dir}" + ("  (temporary; pass --store DIR to keep it)" if tmp else ""))
        res = sweep(cfg, store_dir, workers=args.workers, progress=True, threads=args.threads)
        print(f"  {len(res['keys'])} runs: {res['ran']} computed, {res['skipped']} already stored "
              f"({res['wall']:.1f} s)")
        from .plugins import load as _service   # provided by proofs_checks (popdyn.plugins)

        verdicts = _service("store_verdict")
        check_store, check_store_paper, family_config, in_family = (
            verdicts.check_store, verdicts.check_store_paper, verdicts.family_config,
            verdicts.in_family)

        st = Store(store_dir, create=False)
        students = [cfg["student"]] + [s.get("student", {}) for s in cfg.get("settings", [])]
        # students outside the theorem (a SwiGLU or skip student, a smooth activation)
        others = [t for t in ({**cfg["student"], **s} for s in students)
                  if not verdicts.theorem_student(t)]
        # runs on the paper's protocol (a plateau rule with the exact endpoint E) are decided as
        # the paper decides them, at each run's E (check_store_paper)
        paper = all("plateau_event" in st.record(k) for k in res["keys"] if st.has(k))
        if paper:
            pass
        elif others:
            # the theorem concerns ReLU / leaky-ReLU students: a family cohort "with the same
            # student" does not exist, so these runs are reported as controls only
            st0 = _config.make_student(others[0])
            print("  plateau_alignment: the theorem's family has ReLU / leaky-ReLU students "
                  f"without a skip; this config's {st0.family.label} student "
                  f"(activation {st0.activation!r}) is outside it: its runs are reported as "
                  "controls (no cohort added)")
        elif not any(in_family(st.record(k), 0.05) for k in res["keys"]):
            # the theorem's declared family on the same student, initialization, integrator and
            # seeds: the check then has claims to decide, the config's runs are its controls
            fam = family_config(base=cfg)
            print(f"  plateau_alignment: no run of this config is in the theorem's family; adding "
                  f"the cohort {fam['teachers'][0]['label']} with the same student, init, "
                  "integrator and seeds")
            r2 = sweep(_config.validate(fam), store_dir, workers=args.workers, progress=True,
                       threads=args.threads)
            print(f"  {len(r2['keys'])} runs: {r2['ran']} computed, {r2['skipped']} already "
                  f"stored ({r2['wall']:.1f} s)")
        print("")
        sys.stdout.write(table(store_dir, "md"))
        out = args.out or "popdyn_run.png"
        try:
            p = figure(store_dir, out)
            print(f"\n  figure: {p}")
        except ImportError as exc:
            print(f"\n  figure: skipped ({exc})")
        settings = {"config": str(path), "store": str(store_dir)}
        v = (check_store_paper(st, res["keys"], settings=settings) if paper
             else check_store(st, settings=settings))
        print("")
        print(v.report())
        print(f"\npopdyn run: total wall time {time.perf_counter() - t0:.1f} s")
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


def cmd_reproduce(args) -> int:
    """Run a paper configuration and print the paper's numbers beside ours, cell by cell."""
    from .experiments.reproduce import reproduce, write_section

    from .experiments.cells import write_json

    res = reproduce(args.name, seeds=args.seeds, teachers=args.teachers, store=args.store,
                    workers=args.workers, progress=not args.quiet, run=not args.no_run,
                    threads=args.threads)
    sys.stdout.write(res["text"])
    if args.write:
        print(f"popdyn reproduce: wrote the {args.name} section of {write_section(args.write, args.name, res['text'])}")
    if args.json:
        print(f"popdyn reproduce: wrote {len(res['cells'])} cells to {write_json(args.json, res['cells'])}")
    return 0


def _parser():
    from . import __version__

    parser = argparse.ArgumentParser(prog="popdyn", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"popdyn {__version__}")
    sub = parser.add_subparsers(dest="cmd")
    run = sub.add_parser("run", help="sweep + table + figure + plateau_alignment check "
                                     "(default: the embedded paper_smoke configuration)")
    run.add_argument("config", nargs="?", help="TOML file or embedded configuration name "
                                               "(default: paper_smoke, the paper's protocol)")
    run.add_argument("--store", help="result store directory (default: a temporary one)")
    run.add_argument("--workers", type=int, help="worker processes (default: all cores)")
    run.add_argument("--threads", type=int, help="kernel threads per run (default: the cores divided among the workers; "
                         "results do not depend on it)")
    run.add_argument("--out", help="figure file (default: popdyn_run.png)")
    run.add_argument("--seeds", type=int, nargs="+", help="override the config's seeds")
    run.set_defaults(func=cmd_run)
    cf = sub.add_parser("configs", help="list the embedded configurations, or print one "
                                        "(popdyn configs show NAME)")
    cf.add_argument("action", nargs="?", help="`show` to print the configuration NAME")
    cf.add_argument("name", nargs="?", help="embedded configuration name")
    cf.set_defaults(func=cmd_configs)
    sw = sub.add_parser("sweep", help="run a configuration's teachers × settings × seeds into a store")
    sw.add_argument("config", help="TOML file or embedded configuration name (popdyn configs)")
    sw.add_argument("--store", required=True, help="result store directory")
    sw.add_argument("--workers", type=int, help="local worker processes (default: all cores)")
    sw.add_argument("--threads", type=int, help="kernel threads per run (default: the cores divided among the workers; "
                         "results do not depend on it)")
    sw.add_argument("--scheduler", help="dask.distributed scheduler address, e.g. tcp://host:8786")
    sw.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the scheduler")
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    sw.set_defaults(func=cmd_sweep)
    tb = sub.add_parser("table", help="cohort table of a store")
    tb.add_argument("--store", required=True)
    tb.add_argument("--format", default="md", choices=["md", "latex", "csv"])
    tb.set_defaults(func=cmd_table)
    fg = sub.add_parser("figure", help="cohort figure of a store (needs matplotlib)")
    fg.add_argument("--store", required=True)
    fg.add_argument("--out", required=True, help="output file (.png, .pdf, .svg)")
    fg.add_argument("--x", default="log_updates", choices=["log_updates", "time"],
                    help="horizontal axis: log(1 + n/100) (default) or flow time")
    fg.set_defaults(func=cmd_figure)
    ls = sub.add_parser("ls", help="list the stored runs")
    ls.add_argument("--store", required=True)
    ls.set_defaults(func=cmd_ls)
    sh = sub.add_parser("show", help="show one stored run")
    sh.add_argument("--store", required=True)
    sh.add_argument("run", help="run key (or a unique prefix; see popdyn ls)")
    sh.set_defaults(func=cmd_show)
    from .experiments.reproduce import EXPERIMENTS
    rp = sub.add_parser("reproduce", help="run a seed-paper configuration and compare it with "
                                          "the paper cell by cell")
    rp.add_argument("name", choices=sorted(EXPERIMENTS), help="paper experiment")
    rp.add_argument("--seeds", type=int, help="only the first N declared seeds (a reduced look)")
    rp.add_argument("--teachers", nargs="+", metavar="LABEL",
                    help="only these rows (teacher labels as printed in the paper)")
    rp.add_argument("--json", metavar="FILE", help="write every cell as a JSON object "
                    "(experiment, row, column, paper, popdyn, verdict, reason)")
    rp.add_argument("--store", help="result store directory (default: ./popdyn-reproduce)")
    rp.add_argument("--workers", type=int, help="local worker processes (default: all cores)")
    rp.add_argument("--threads", type=int, help="kernel threads per run (default: the cores divided among the workers; "
                         "results do not depend on it)")
    rp.add_argument("--write", help="markdown file whose NAME section is replaced by the report")
    rp.add_argument("--quiet", action="store_true", help="no progress bar")
    rp.add_argument("--no-run", action="store_true",
                    help="compute nothing: report from the runs already in the store")
    rp.set_defaults(func=cmd_reproduce)
    sub.add_parser("check", help="run theorem checks: popdyn check NAME... | --all [--quick|--full]")
    return parser


def main(argv=None) -> int:
    from .experiments.store import StoreError
    from .experiments.sweep import SchedulerError, SweepError

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "check":
        from .plugins import load as _service   # provided by proofs_checks (popdyn.plugins)

        check_main = _service("check_command")
        if not ({"-h", "--help", "--list"} & set(argv[1:])):
            compile_notice()
        return check_main(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    if args.cmd is None:
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError, StoreError, SchedulerError, KeyError,
            ImportError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"popdyn {args.cmd}: error: {msg}", file=sys.stderr)
        return 2
    except SweepError as exc:
        print(f"popdyn {args.cmd}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if getattr(args, "temporary_store", False):
            print(f"popdyn {args.cmd}: interrupted; the temporary store was deleted with its "
                  "finished runs (pass --store DIR to keep them and resume on a rerun)",
                  file=sys.stderr)
        else:
            print(f"popdyn {args.cmd}: interrupted; finished runs are stored, rerun to resume",
                  file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
