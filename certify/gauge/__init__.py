"""Rigorous timescales of the gauge experiments (docs/design.md §6 "Timescales", §7).

The float side (decomposition, reduced flow, numerical brackets, sweeps, regimes) is
:mod:`popdyn.gauge`; this package holds what is rigorous:

* :func:`rigorous_specialization_times` -- brackets tagged ``rigorous`` of the specialization
  times of the exact reduced single-neuron (c, φ) flow: validated Taylor–Lohner integration
  (:mod:`certify.ode`) of :func:`reduced_field`, and for the stiff opposite gauges
  (Δ ≤ −:data:`popdyn.gauge.STIFF_DELTA`) the verified slow-manifold tube
  (:func:`slow_tube_times`, :class:`SlowTube`);
* :func:`ratio_bracket`, :func:`slope_bracket` -- Arb arithmetic on rigorous brackets.

``popdyn.gauge.gauge_sweep(..., method="rigorous")`` and ``popdyn.gauge.regime_table(...,
method="rigorous")`` use this package through the ``gauge_certifier`` service of
:mod:`popdyn.plugins` (the attributes it needs: ``rigorous_specialization_times``,
``ratio_bracket``, ``slope_bracket``, ``CertificationError``).

References
----------
The feature-ownership paper (abstract: "Training changes a network's predictions while
allocating task-relevant structure across its internal units"); docs/design.md §7.
"""
from ..errors import CertificationError
from ._bracket import ratio_bracket, slope_bracket
from ._field import reduced_field
from ._rigorous import rigorous_specialization_times, start_angle
from ._slow import SlowTube, slow_tube_times

__all__ = ["CertificationError", "SlowTube", "ratio_bracket", "reduced_field",
           "rigorous_specialization_times", "slope_bracket", "slow_tube_times", "start_angle"]
