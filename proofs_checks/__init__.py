"""proofs_checks: named theorem checks returning pass / fail / undecided verdicts.

Each check is a function of keyword settings returning a :class:`Verdict` (the theorem's
constant, the measured bracket and its provenance, the margin, the settings used), registered
under a name with ``quick`` (CI) and ``full`` (paper) settings.  Run them with
:func:`run_check` or from the command line, ``popdyn check NAME [--quick|--full]`` /
``popdyn check --all`` (:func:`proofs_checks.cli.main`).

Registered checks: ``reaction_transport``, ``balancedness``, ``gauge_separation``, ``ownership``
(the gauge / feature-ownership paper; docs/design.md §7), ``plateau_alignment``
(subspace learning during the loss plateau: Kumar, arXiv 2609.39408, Theorem 4.1, whose
hypotheses :mod:`proofs_checks.theorem41` reports),
``skip_spurious_minima`` (certified spurious minima of bias-free relu students and the learned
skip), ``skip_benign``, ``direction_count``, ``teacher_span`` (skip connections and planar
features), ``learnability`` (teacher learnability), ``linear_target_phases`` (both layers of a
ReLU network learning a linear target: Tinaz, Xie, Soltanolkotabi),
``weight_decay_landscape`` (spurious minima of the weight-decay empirical loss against width and
initialization: Boursier, Bowditch, Englert, Lazić), ``skip_empirical_transfer`` (the skip
student's empirical minima over parameter balls of a fixed radius: arXiv 2610.01728).  Other packages add theirs through the
entry-point group ``popdyn.checks`` (:func:`load_plugins`).
"""
from ._core import (CHECKS, ENTRY_POINT_GROUP, KINDS, PROVENANCES, VERDICTS, Check, Verdict,
                    combine, decide, get_check, load_plugins, make_verdict, register, run_check,
                    summary_verdict)
from . import balancedness, gauge_separation, ownership, reaction_transport  # noqa: F401  (register)
from . import plateau_alignment  # noqa: F401,E402  (register)
from . import skip_spurious  # noqa: F401,E402  (register)
from . import landscape_checks  # noqa: F401,E402  (register: skip_benign, direction_count, teacher_span)
from . import learnability  # noqa: F401,E402  (register)
from . import linear_target_phases  # noqa: F401,E402  (register: Tinaz, Xie, Soltanolkotabi)
from . import skip_empirical_transfer  # noqa: F401,E402  (register: arXiv 2610.01728)
from . import weight_decay_landscape  # noqa: F401,E402  (register: Boursier, Bowditch, Englert, Lazić)

__all__ = [
    "CHECKS", "Check", "ENTRY_POINT_GROUP", "KINDS", "PROVENANCES", "VERDICTS", "Verdict",
    "combine", "decide", "get_check", "load_plugins", "make_verdict", "register", "run_check", "summary_verdict",
]
