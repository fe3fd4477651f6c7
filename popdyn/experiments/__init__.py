"""Experiments at paper scale: sweeps over teachers × seeds × settings, a result store that
loses nothing, tables and figures from stored runs.

* :func:`sweep` — run a configuration's runs on any ``concurrent.futures.Executor``
  (local process pool by default, dask.distributed with a scheduler address, MPI through
  ``mpi4py.futures.MPIPoolExecutor``);
* :class:`Store` — JSON + npz records keyed by a hash of the run's full configuration and the
  library version, written atomically, schema-versioned, resumable;
* :func:`table` — per-teacher cohort tables (Markdown, LaTeX booktabs, CSV);
* :func:`figure` — multi-row panels over seeds (matplotlib, optional).
"""
from .runner import run_one, spec_key
from .store import SCHEMA, Store, StoreError
from .sweep import SchedulerError, SerialExecutor, SweepError, plan, sweep
from .tables import FORMATS, rows, runs_listing, show, table


def figure(store, out, **kw):
    """Write the cohort figure of a store to ``out`` (see :mod:`popdyn.experiments.figures`)."""
    from .figures import figure as _figure
    return _figure(store, out, **kw)


__all__ = ["FORMATS", "SCHEMA", "SchedulerError", "SerialExecutor", "Store", "StoreError", "SweepError",
           "figure", "plan", "rows", "run_one", "runs_listing", "show", "spec_key", "sweep",
           "table"]
