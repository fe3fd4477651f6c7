"""Gauge, reaction–transport decomposition and feature ownership (docs/design.md §7).

For a positively homogeneous student (relu, leaky_relu) the scaling gauge
(a, w, b) → (λa, w/λ, b/λ) preserves the function; this module computes

* :func:`decompose` — per-neuron coefficient c = a|ŵ|, direction θ = ŵ/|ŵ| (ŵ = (w, b) ∈ R^{d+1}
  with biases), G, H, ċ, θ̇, reaction mobility a² + |ŵ|², direction speed a/|ŵ|, and the exact
  split of the dissipation −dL/dt = ‖∇L‖² into reaction, transport (and intercept) parts;
* :func:`apply`, :func:`set_ratio` — the gauge in its two parametrizations;
  :func:`conserved`, :func:`conserved_drift` — the invariants a² − |w|² − b² and their drift;
* :func:`specialization_times`, :func:`specialization_time` — bracketed specialization times on
  the update and flow clocks;
* :func:`gauge_sweep`, :func:`regime_table` — opposite-gauge time ratios and local log-log slopes,
  reproducing the table of docs/design.md §7; :func:`reduced_specialization_times` — the exact reduced (c, φ)
  single-neuron flow behind them (rigorous brackets of these times:
  :func:`certify.gauge.rigorous_specialization_times`; ``method="rigorous"`` of the sweeps reaches
  it through :mod:`popdyn.plugins`);
* :func:`ownership` — duplicate-neuron ownership experiments in population and finite-sample
  training.

References
----------
The feature-ownership paper (abstract: "Training changes a network's predictions while
allocating task-relevant structure across its internal units");
docs/design.md §7.
"""
from ._bracket import NumericalBracket, hull, ratio_bracket, slope_bracket
from ._decompose import (Decomposition, Drift, alignment, apply, conserved, conserved_drift,
                         contributions, decompose, group_contribution, identity_residuals,
                         require_homogeneous, set_ratio)
from ._ownership import OTHERS, OwnershipRun, duplicate_start, ownership
from ._reduced import (check_start, check_thresholds, engine_specialization_time, ratio_start,
                       reduced_rhs, reduced_specialization_times, reduced_vs_engine,
                       single_neuron_problem)
from ._slow import slow_manifold
from ._sweep import (MAX_STEPS, METHODS, PARAMETRIZATIONS, STIFF_DELTA, REGIMES, Regime, RegimeResult, Sweep, SweepPoint,
                     format_regime_table, gauge_sweep, regime_table)
from ._times import RefinedTimes, SpecializationTimes, specialization_time, specialization_times

__all__ = [
    "MAX_STEPS", "METHODS", "STIFF_DELTA", "check_start", "hull", "ratio_bracket",
    "slope_bracket", "slow_manifold",
    "Decomposition", "Drift", "NumericalBracket", "OTHERS", "OwnershipRun", "PARAMETRIZATIONS",
    "REGIMES", "RefinedTimes", "Regime", "RegimeResult", "SpecializationTimes", "Sweep",
    "SweepPoint", "alignment", "apply", "check_thresholds", "conserved", "conserved_drift",
    "contributions", "decompose", "duplicate_start", "engine_specialization_time",
    "format_regime_table", "gauge_sweep", "group_contribution", "identity_residuals", "ownership", "ratio_start",
    "reduced_rhs", "reduced_specialization_times", "reduced_vs_engine", "regime_table",
    "require_homogeneous", "set_ratio", "single_neuron_problem", "specialization_time",
    "specialization_times",
]
