"""The teacher kind ``ramp``: y = Σ_k v_k clip(u_k·x, 0, 1) = Σ_k v_k [relu(u_k·x) − relu(u_k·x − 1)],
a ReLU network with two units per direction, so popdyn's exact network moments apply.

Registered with :func:`popdyn.teachers.register_kind` and declared in the entry-point group
``popdyn.teachers``, so a configuration can say ``[teacher] kind = "ramp"`` (keys ``V``, and
``U`` or ``rank``).
"""
import numpy as np

from popdyn.activations import get_activation
from popdyn.teachers import register_kind
from popdyn.teachers.network import NetworkTeacher


@register_kind("ramp")
class RampTeacher(NetworkTeacher):
    """y = Σ_k v_k clip(u_k·x, 0, 1)."""

    @classmethod
    def build(cls, V_, U):
        U = np.atleast_2d(np.asarray(U, dtype=float))
        v = np.asarray(V_, dtype=float)
        if v.shape != (U.shape[0],):
            raise ValueError(f"`V` must have one weight per row of U ({U.shape[0]}), got {v.shape}")
        return cls("ramp", np.vstack([U, U]), np.concatenate([v, -v]),
                   np.concatenate([np.zeros(len(v)), -np.ones(len(v))]),
                   activation=get_activation("relu"))

    @classmethod
    def from_config(cls, table, d):
        t = dict(table)
        V = t.pop("V")
        U = t.pop("U") if "U" in t else np.eye(d)[:int(t.pop("rank", len(V)))]
        if t:
            raise ValueError(f"[teacher] kind = 'ramp' takes V and U or rank, not {sorted(t)}")
        return cls.build(V, U)

    def describe(self):
        k = self.k // 2
        return {"kind": "ramp", "V": self.weights[:k].tolist(), "U": self.U[:k].tolist()}
