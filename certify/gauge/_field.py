"""The reduced single-neuron (c, φ) vector field in Arb, shared by the explicit validated path
(:mod:`certify.gauge._rigorous`) and the slow-manifold tube (:mod:`certify.gauge._slow`); its own
module so that neither of the two imports the other (no import cycle)."""
from __future__ import annotations

from flint import arb

from ..ode import VectorField

__all__ = ["reduced_field"]


def reduced_field(Delta):
    """The :class:`certify.ode.VectorField` of the reduced (c, φ) flow for conserved ``Delta``
    (an ``arb`` or a float, meaning its exact value)."""
    D = arb(Delta)
    neg = bool(D < 0)
    if not (neg or D >= 0):
        raise ValueError("the sign of Delta must be decidable")

    pi = arb.pi()
    tp = 2 * pi

    def f(x):
        c, ph = x
        S = (D * D + 4 * c * c).sqrt()
        rho = 2 * c / (S - D) if neg else (S + D) / (2 * c)
        sn, cs = ph.sin_cos()
        pm = pi - ph
        k = (sn + pm * cs) / tp
        return [-S * (c / 2 - k), -(rho * pm * sn) / tp]

    def fjac(x):
        c, ph = x
        S = (D * D + 4 * c * c).sqrt()
        rho = 2 * c / (S - D) if neg else (S + D) / (2 * c)
        sn, cs = ph.sin_cos()
        pm = pi - ph
        pmc = pm * cs
        k = (sn + pmc) / tp
        kp = -(pm * sn) / tp
        g = c / 2 - k
        kpp = (sn - pmc) / tp
        r2 = rho * rho
        drho = -D * r2 / (c * c * (r2 + 1))
        return ([-S * g, rho * kp],
                [[-(4 * c / S) * g - S / 2, S * kp], [drho * kp, rho * kpp]])

    def jac(x):
        return fjac(x)[1]

    return VectorField(f, jac, 2, "reduced single-neuron (c, φ) flow", fjac=fjac)
