r"""The 21 baseline teachers of the central paper's Table 1, as teacher tables.

Kumar (arXiv 2609.39408), App. A ("Complete teacher definitions"), eqs. (7), (17), (20), (21).
All use r = 2 coordinate directions u_1 = e_1, u_2 = e_2 (s = x_1, t = x_2) and unit second moment
E[y²] = 1 (``normalize = "second_moment"``, :meth:`popdyn.Teacher.normalized`):

* thirteen additive targets (eq. (17)) y = Σ_{i≤2} q(X_i)/(√r·√(E q² + (r−1)(E q)²)), the mean
  kept — exactly E[y²] = 1 for y = Σ_i q(X_i) — with the raw links q: h_3, g_{2/3}, g_{1/3},
  (g_1 + g_{1/3})/2, g_{1/2}, 0.2g_{0.4} + 0.3g_{0.7} + 0.5g_1, h_3 + 0.1h_5, h_3 + 0.1 sin,
  h_2, h_4, z_+, |z|, sin z (g_v of eq. (7): ``g:<v>`` / ``g_mu(...)`` of :mod:`popdyn.links`);
* six products (eq. (20)) Y_g = g(S)T/√E[g(S)²], g ∈ {SiLU, z_+, zΦ(z), tanh, h_2, z}
  (gated teachers, :mod:`popdyn.teachers.gated`);
* raw additive SiLU (eq. (21)), (SiLU(S) + SiLU(T))/√(2E[SiLU²] + 2(E SiLU)²): the additive
  ``silu`` teacher normalized to E[y²] = 1;
* centered additive SiLU, Σ_i (SiLU(X_i) − E SiLU)/√(2 Var SiLU): the additive
  ``silu_centered`` teacher normalized to E[y²] = 1 (its equation is not printed; App. A.2:
  "No teacher mean is removed except in the explicitly centered SiLU control").

``TABLE1`` lists (label, table) in the printed row order, labels as printed; every table is
accepted by :func:`popdyn.config.teacher_from_table` and may be pasted into a config's
``[[teachers]]``.  :func:`table1_teachers` builds them for a given d.

The additive "h_3 + 0.1h_5" and "h_3 + 0.1sin" links are :func:`popdyn.links.mixture` with the
float64 weight 0.1.
"""
from __future__ import annotations

from .. import _validate as V

_ADD = {"kind": "additive", "rank": 2, "normalize": "second_moment"}
_GATED = {"kind": "gated", "rank": 2, "normalize": "second_moment"}


def _add(label, link):
    return (label, {"label": label, **_ADD, "link": link})


def _gated(label, gate):
    return (label, {"label": label, **_GATED, "gate": gate})


#: (label as printed in Table 1, teacher table), in the printed row order
TABLE1 = (
    _add("|z|", "abs"),
    _gated("st", "id"),
    _add("g_{1/2}", "g:1/2"),
    _add("g_{1/3}", "g:1/3"),
    _add("g_{2/3}", "g:2/3"),
    _gated("GELU(s)t", "gelu"),
    _add("h_2", "h2"),
    _add("h_3", "h3"),
    _add("h_3 + 0.1h_5", "mixture(1.0*h3, 0.1*h5)"),
    _add("h_3 + 0.1sin", "mixture(1.0*h3, 0.1*sin)"),
    _add("h_4", "h4"),
    _add("g_1 + g_{1/3}", "g_mu(1/2*g:1/3, 1/2*g:1)"),
    _gated("h_2(s)t", "h2"),
    _add("ReLU", "relu"),
    _gated("ReLU(s)t", "relu"),
    _add("Raw additive SiLU", "silu"),
    _add("Centered additive SiLU", "silu_centered"),
    _gated("SiLU(s)t", "silu"),
    _add("sin z", "sin"),
    _gated("tanh(s)t", "tanh"),
    _add("Three-scale mixture", "g_mu(1/5*g:2/5, 3/10*g:7/10, 1/2*g:1)"),
)

#: the labels of Table 1 in printed order
LABELS = tuple(label for label, _ in TABLE1)


def table1_table(label: str) -> dict:
    """A copy of the teacher table of the Table 1 row ``label`` (one of :data:`LABELS`)."""
    V.choice("label", label, LABELS)
    return dict(dict(TABLE1)[label])


def table1_teachers(d: int = 16, labels=None) -> dict:
    """{label: Teacher} of Table 1 (or of the given ``labels``) for inputs of dimension ``d``
    (u_1 = e_1, u_2 = e_2; d = 16 in the paper's baseline, 64 in App. A.2)."""
    from ..config import teacher_from_table

    d = V.positive_int("d", d)
    if d < 2:
        raise ValueError(f"`d` must be >= 2 (r = 2 teacher directions), got {d}")
    out = {}
    for label in (LABELS if labels is None else labels):
        out[label] = teacher_from_table(table1_table(label), d)
    return out
