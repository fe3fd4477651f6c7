"""proofs_checks: named theorem checks returning pass / fail / undecided verdicts.

Each check is a function of keyword settings returning a :class:`Verdict` (the theorem's
constant, the measured bracket and its provenance, the margin, the settings used), registered
under a name with ``quick`` (CI) and ``full`` (paper) settings.  Run them with
:func:`run_check` or from the command line, ``popdyn check NAME [--quick|--full]`` /
``popdyn check --all`` (:func:`proofs_checks.cli.main`).

Registered checks: ``reaction_transport``, ``balancedness``, ``gauge_separation``, ``ownership``
(the gauge / feature-ownership seed paper; docs/design.md §7), and ``plateau_alignment`` (subspace
learning during the loss plateau; seed paper 003), ``skip_spurious_minima`` (certified spurious
minima of bias-free relu students and the learned skip), ``skip_benign``, ``direction_count``,
``teacher_span`` (skip connections and planar features; seed 004 title paper, issue 21),
``learnability`` (teacher learnability; seed 004, second abstract).
"""
from ._core import (CHECKS, KINDS, PROVENANCES, VERDICTS, Check, Verdict, combine, decide,
                    get_check, make_verdict, register, run_check, summary_verdict)
from . import balancedness, gauge_separation, ownership, reaction_transport  # noqa: F401  (register)
from . import plateau_alignment  # noqa: F401,E402  (register)
from . import skip_spurious  # noqa: F401,E402  (register; issue 21)
from . import landscape_checks  # noqa: F401,E402  (register: skip_benign, direction_count, teacher_span)
from . import learnability  # noqa: F401,E402  (register; seed 004, issue 21)

__all__ = [
    "CHECKS", "Check", "KINDS", "PROVENANCES", "VERDICTS", "Verdict", "combine", "decide",
    "get_check", "make_verdict", "register", "run_check", "summary_verdict",
]
