"""Sweeps over teachers × seeds × settings on any :class:`concurrent.futures.Executor`.

:func:`sweep` expands a configuration (:func:`popdyn.config.expand`), skips the runs already
finished in the store, and submits the others — :func:`popdyn.experiments.runner.run_one`, a
plain function of plain data — to an executor:

* by default a local :class:`concurrent.futures.ProcessPoolExecutor` with ``workers`` processes
  (``workers=1`` runs in the calling process);
* ``scheduler="tcp://host:8786"``: a dask.distributed cluster through
  ``distributed.Client(address).get_executor()`` — the same sweep on a cluster (the store
  directory must be on a file system the workers share);
* any other executor passed as ``executor=``, e.g. MPI::

      from mpi4py.futures import MPIPoolExecutor
      with MPIPoolExecutor() as ex:
          popdyn.experiments.sweep(cfg, "store/", executor=ex)

  (run under ``mpiexec -n N python -m mpi4py.futures script.py``).

Run each dask worker with one thread (``dask worker ADDRESS --nthreads 1``, one worker process
per core): runs in threads of one process execute one at a time
(:func:`popdyn.experiments.runner.run_one` holds a process-wide lock, because python-flint's
working precision in :mod:`certify` is process-global and the compiled kernels hold the GIL), so
extra threads only wait; a thread pool gives the same results as a process pool, not its
speed.  Runs use one BLAS thread each (:mod:`popdyn.experiments._threads`).

Every run writes its own record atomically from the worker, so the results do not depend on the
executor, the number of workers or the completion order, and an interrupted sweep, rerun,
recomputes nothing that was finished and resumes unfinished runs from their checkpoints.
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import signal
import sys
import threading
import time

from .. import threads as _kthreads
from ..config import expand
from .runner import run_one, spec_key
from .store import Store

__all__ = ["SerialExecutor", "SchedulerError", "SweepError", "sweep", "plan", "dask_executor"]


class SweepError(RuntimeError):
    """Some runs of a sweep raised; the others finished and are stored."""


class SchedulerError(ConnectionError):
    """The dask scheduler could not be reached (or dask is not installed)."""


class SerialExecutor(cf.Executor):
    """An executor that runs each task in the calling process when it is submitted."""

    def submit(self, fn, /, *args, **kwargs):
        fut = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001  (delivered through the future)
            if _interrupted(exc):
                raise KeyboardInterrupt from exc
            fut.set_exception(exc)
        # KeyboardInterrupt / SystemExit propagate: Ctrl-C stops a serial sweep at once
        return fut


def _interrupted(exc) -> bool:
    """Whether ``exc`` comes from a Ctrl-C: a KeyboardInterrupt raised while a compiled kernel
    ran reaches Python as the kernel call's SystemError, with the interrupt in its context."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


_PROTOCOLS = ("tcp", "tls", "ucx", "ws", "wss", "inproc")


def _check_address(address):
    """ValueError unless ``address`` looks like a dask scheduler address (``tcp://host:8786``,
    another protocol of :data:`_PROTOCOLS`, or ``host:port``), before dask is asked to connect
    (dask would retry an unparsable address until its timeout)."""
    if not isinstance(address, str):
        raise TypeError(f"`scheduler` must be a string address, got {type(address).__name__}")
    proto, sep, rest = address.partition("://")
    if not sep:
        proto, rest = "tcp", address
    host, colon, port = rest.rpartition(":")
    ok = proto in _PROTOCOLS and (proto == "inproc" or (colon and host and port.isdigit()))
    if not ok or (proto == "inproc" and not rest):
        raise ValueError(f"`scheduler` must be a dask scheduler address such as "
                         f"tcp://host:8786 (protocols {', '.join(_PROTOCOLS)}; the port is "
                         f"required), got {address!r}")


def dask_executor(address: str, *, timeout: float = 10.0):
    """(client, executor) for a dask.distributed scheduler at ``address``.

    Raises :class:`SchedulerError` with the address when dask is missing or the scheduler does
    not answer within ``timeout`` seconds.
    """
    _check_address(address)
    try:
        from distributed import Client
    except ImportError:
        raise SchedulerError("--scheduler needs dask.distributed: pip install dask distributed") from None
    try:
        client = Client(address, timeout=f"{timeout}s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise SchedulerError(f"cannot reach the dask scheduler at {address!r} within {timeout:g} s "
                             f"({type(exc).__name__}: {exc}); check the address and that "
                             "`dask scheduler` is running") from None
    return client, client.get_executor()


# ---------------------------------------------------------------------------- stopping
def _watch_parent(parent: int, period: float) -> None:
    while True:
        time.sleep(period)
        if os.getppid() != parent:       # re-parented: the sweep's process is gone
            os._exit(1)


def _worker_init(parent: int, period: float = 0.25) -> None:
    """Initializer of the local pool's worker processes.

    * SIGINT is ignored: a Ctrl-C at the terminal reaches the whole process group, and the
      sweep's own process decides (it stops the workers, :func:`_stop_pool`);
    * a daemon thread exits the worker within ``period`` seconds once its parent is gone
      (killed by a batch scheduler's time limit, say), so no worker outlives the sweep or
      waits forever on the pipe of a dead parent.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent, period), daemon=True,
                     name="popdyn-parent-watch").start()


def _stop_pool(ex: cf.ProcessPoolExecutor) -> None:
    """Stop a local pool now: cancel the queued runs and terminate the running ones (their
    last checkpoint stays in the store; a rerun resumes from it, bit-identical)."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        with contextlib.suppress(Exception):
            p.terminate()
    deadline = time.monotonic() + 3.0
    for p in procs:
        with contextlib.suppress(Exception):
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """Within the block, SIGTERM (``kill PID``, a scheduler's cancel) raises KeyboardInterrupt in
    the main thread, so that a sweep stops the same way as on Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def plan(cfg: dict) -> list:
    """The sweep's runs as (key, spec) in declared order (teachers × settings × seeds)."""
    return [(spec_key(s), s) for s in expand(cfg)]


class _Progress:
    """A one-line progress bar on stderr.

    On a terminal the line is redrawn at every finished run.  When stderr is not a terminal (a
    log file, a batch job) a plain line is written at the start, at every 10% of the runs, at
    the end, and otherwise at least every ``every`` seconds while the sweep runs (at the first
    finished run after that, or by :meth:`tick` when none finishes), so a long sweep never
    looks stuck.
    """

    def __init__(self, total, done, stream=None, enabled=True, every=10.0):
        self.total, self.done, self.t0 = total, done, time.perf_counter()
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled and total > 0
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.last = -1.0
        self.every, self.last_t = every, float("-inf")
        self.skipped = done
        self.lock = threading.Lock()
        if self.enabled:
            from .._notice import quiet
            quiet()          # the bar now says that the sweep is alive
        self.show()

    def show(self, final=False):
        if not self.enabled:
            return
        frac = self.done / self.total
        now = time.perf_counter()
        if not (self.tty or final or frac - self.last >= 0.1 or self.done == self.total
                or now - self.last_t >= self.every):
            return
        self.last, self.last_t = frac, now
        width = 28
        fill = int(round(width * frac))
        el = time.perf_counter() - self.t0
        ran = self.done - self.skipped
        left = (el / ran) * (self.total - self.done) if ran else float("nan")
        eta = f", ~{_hms(left)} left" if ran and self.done < self.total else ""
        msg = (f"[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} runs"
               f" ({self.skipped} already stored), {_hms(el)} elapsed{eta}")
        self.stream.write(("\r" + msg) if self.tty else (msg + "\n"))
        if self.tty and (final or self.done == self.total):
            self.stream.write("\n")
        self.stream.flush()

    def step(self):
        with self.lock:
            self.done += 1
            self.show()

    def start_ticker(self):
        """Tick from a daemon thread every ``every``/2 seconds (for a sweep whose runs execute
        in the calling thread); returns the function that stops it."""
        stop = threading.Event()

        def run():
            while not stop.wait(self.every / 2):
                self.tick()

        if self.enabled:
            threading.Thread(target=run, name="popdyn-progress", daemon=True).start()
        return stop.set

    def tick(self):
        """A line (or a redraw on a terminal, with the elapsed time) if none was written for
        ``every`` seconds."""
        with self.lock:
            if self.enabled and time.perf_counter() - self.last_t >= self.every:
                self.show()


def _hms(s):
    s = int(round(s))
    return f"{s // 60:02d}:{s % 60:02d}"


def sweep(cfg: dict, store, *, workers: int | None = None, scheduler: str | None = None,
          executor: cf.Executor | None = None, progress: bool = True, timeout: float = 10.0,
          name: str | None = None, threads: int | None = None) -> dict:
    """Run every run of ``cfg`` (teachers × settings × seeds) that the store does not hold yet.

    Parameters
    ----------
    cfg : dict
        A validated configuration (:func:`popdyn.config.load`).
    store : str, Path or Store
        The result store directory.
    workers : int, optional
        Processes of the default local pool (default: ``os.cpu_count()``; 1 = in-process).
    scheduler : str, optional
        Address of a dask.distributed scheduler; the runs go to its workers.
    executor : concurrent.futures.Executor, optional
        Any executor (MPIPoolExecutor, a prepared dask executor, ...); not shut down here.
    progress : bool
        Progress bar on stderr.
    timeout : float
        Seconds to wait for the dask scheduler.
    threads : int, optional
        Kernel threads per run (:mod:`popdyn.threads`; results do not depend on it).  Default:
        ``[execution] threads`` of ``cfg``, else, for the local pool, the cores divided among
        its workers (:func:`popdyn.threads.per_worker`: two workers on two cores run one
        thread each, one worker all of them); other executors keep their workers' setting.

    Returns
    -------
    dict
        ``keys`` (declared order), ``ran``, ``skipped``, ``resumed`` (counts), ``statuses``
        and ``wall`` (seconds).
    """
    if sum(x is not None for x in (scheduler, executor)) > 1:
        raise ValueError("give at most one of `scheduler` and `executor`")
    if workers is not None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"`workers` must be a positive int, got {workers!r}")
    if scheduler is not None:
        _check_address(scheduler)
    if threads is None:
        threads = (cfg.get("execution") or {}).get("threads")
    if threads is not None:
        _kthreads.check_threads(threads)
    runs = plan(cfg)                       # validates every value before anything runs
    client = None
    if scheduler is not None:              # reach the scheduler before creating anything
        client, ex = dask_executor(scheduler, timeout=timeout)
    try:
        st = store if isinstance(store, Store) else Store(store)  # no folder for bad input
    except BaseException:
        if client is not None:
            client.close()
        raise
    keys = [k for k, _ in runs]
    todo, seen = [], set()
    for k, s in runs:
        if not st.has(k) and k not in seen:
            todo.append((k, s))
            seen.add(k)
    t0 = time.perf_counter()
    own = None
    if executor is not None:
        ex = executor
    elif scheduler is None:
        w = workers or os.cpu_count() or 1
        w = min(w, max(1, len(todo)))
        ex = own = SerialExecutor() if w == 1 else cf.ProcessPoolExecutor(
            max_workers=w, initializer=_worker_init, initargs=(os.getpid(),))
        threads = _kthreads.per_worker(w, threads)
    results, errors = [], []
    interrupted = False
    guard = contextlib.ExitStack()
    try:
        guard.enter_context(_sigterm_as_interrupt())
        st.write_sweep(name or cfg.get("name", ""), keys, cfg)
        bar = _Progress(len(keys), len(keys) - len(todo), enabled=progress)
        if isinstance(ex, SerialExecutor):
            # each run finishes inside submit: step the bar after each, and let a ticker
            # thread show the elapsed time while one runs
            guard.callback(bar.start_ticker())
            for k, s in todo:
                f = ex.submit(run_one, s, str(st.root), threads=threads)
                try:
                    results.append(f.result())
                except Exception as exc:  # one failed run does not stop the others
                    errors.append((k, s, exc))
                bar.step()
            futs = {}
        else:
            futs = {ex.submit(run_one, s, str(st.root), threads=threads): (k, s) for k, s in todo}
        pending = set(futs)
        while pending:
            done, pending = cf.wait(pending, timeout=bar.every, return_when=cf.FIRST_COMPLETED)
            for f in done:
                try:
                    results.append(f.result())
                except Exception as exc:  # one failed run does not stop the others
                    k, s = futs[f]
                    errors.append((k, s, exc))
                bar.step()
            bar.tick()
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        guard.close()
        if isinstance(own, cf.ProcessPoolExecutor) and interrupted:
            _stop_pool(own)
        elif own is not None:
            own.shutdown(wait=True, cancel_futures=True)
        if client is not None:
            client.close()
    if errors:
        k, s, first = errors[0]
        raise SweepError(f"{len(errors)} of {len(todo)} run(s) raised (the others are stored; "
                         f"nothing was written for the failed ones): first: teacher "
                         f"{s['teacher']['label']!r}, setting {s['setting']!r}, seed "
                         f"{s['init']['seed']}: {type(first).__name__}: {first}") from first
    statuses: dict = {}
    for k in keys:
        if st.has(k):
            s = st.record(k)["status"]
            statuses[s] = statuses.get(s, 0) + 1
    return {"keys": keys, "ran": sum(1 for r in results if not r["skipped"]),
            "skipped": len(keys) - len(todo) + sum(1 for r in results if r["skipped"]),
            "resumed": sum(1 for r in results if r["resumed"]), "statuses": statuses,
            "wall": time.perf_counter() - t0}
