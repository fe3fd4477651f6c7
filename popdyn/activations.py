"""Student activations and their moment families.

Every activation is either *piecewise linear* (PL) -- σ(t) = p·relu(t) + q·t, whose pair moments
have closed forms through the bivariate normal CDF (docs/design.md §3) -- or *smooth*, handled by Hermite
series with an adaptive truncation order and a tail estimate.

Names mean exactly (docs/design.md §2): ``relu`` max(t, 0); ``leaky_relu`` max(t, s·t) with
``negative_slope`` s (so (p, q) = (1 − s, s)); ``silu`` t·sigmoid(t); ``gelu`` the exact t·Φ(t);
``tanh``; ``erf`` erf(t) (not erf(t/√2)).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from . import _validate as V

PL_ACTIVATIONS = ("relu", "leaky_relu")
SMOOTH_ACTIVATIONS = ("silu", "gelu", "tanh", "erf")
ACTIVATIONS = PL_ACTIVATIONS + SMOOTH_ACTIVATIONS
# integer codes shared with popdyn._kernels.hermite
SMOOTH_CODES = {"silu": 1, "gelu": 2, "tanh": 3, "erf": 4}


@dataclass(frozen=True)
class Activation:
    """A resolved activation: ``name``, ``kind`` ("pl" or "smooth") and its parameters.

    For PL activations ``p``, ``q`` give σ(t) = p·relu(t) + q·t; for smooth ones ``code`` is the
    kernel code.  ``positively_homogeneous`` is True for relu and leaky_relu.
    """

    name: str
    kind: str
    p: float = 0.0
    q: float = 0.0
    code: int = 0
    negative_slope: float = 0.0

    @property
    def positively_homogeneous(self) -> bool:
        return self.kind == "pl"

    def __call__(self, t):
        t = np.asarray(t, dtype=np.float64)
        if self.kind == "pl":
            return self.p * np.maximum(t, 0.0) + self.q * t
        if self.name == "silu":
            return t * special.expit(t)
        if self.name == "gelu":
            return t * special.ndtr(t)
        if self.name == "tanh":
            return np.tanh(t)
        return special.erf(t)

    def derivative(self, t):
        t = np.asarray(t, dtype=np.float64)
        if self.kind == "pl":
            return self.p * (t > 0) + self.q
        if self.name == "silu":
            sg = special.expit(t)
            return sg * (1.0 + t * (1.0 - sg))
        if self.name == "gelu":
            return special.ndtr(t) + t * np.exp(-0.5 * t * t) / np.sqrt(2 * np.pi)
        if self.name == "tanh":
            return 1.0 - np.tanh(t) ** 2
        return 2.0 / np.sqrt(np.pi) * np.exp(-t * t)


def get_activation(name, negative_slope: float = 0.01, *, argname: str = "activation") -> Activation:
    """Resolve an activation name (or pass an :class:`Activation` through)."""
    if isinstance(name, Activation):
        return name
    V.choice(argname, name, ACTIVATIONS)
    if name == "relu":
        return Activation("relu", "pl", p=1.0, q=0.0)
    if name == "leaky_relu":
        s = V.real("negative_slope", negative_slope)
        if not 0.0 <= s < 1.0:
            raise ValueError(f"`negative_slope` must be in [0, 1), got {negative_slope!r}")
        return Activation("leaky_relu", "pl", p=1.0 - s, q=s, negative_slope=s)
    return Activation(name, "smooth", code=SMOOTH_CODES[name])
