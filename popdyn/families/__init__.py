"""Student families: one module per family and the registry of their specs.

A family is declared once, by a frozen spec (:class:`FamilySpec`) registered with
:func:`register`: its name, hyperparameters, ``[student]`` configuration keys
(``get(name).from_config(table)`` builds the student of a table), learning-rate groups
(:meth:`FamilySpec.multipliers`) and bound-family class (``student.family``, the protocol of
:mod:`popdyn.family`).  Capabilities -- a fused kernel, a finite-sample loss -- are optional
hooks of the bound family that a family's own class must define (:func:`capability`); none is
inherited.

Built-in families (imported on the first :func:`get` / :func:`names`):

* ``ridge`` (:mod:`popdyn.families.ridge`): f(x) = s Σ_j a_j σ(w_j·x + b_j) + c;
* ``skip`` (:mod:`popdyn.families.skip`): the ridge student plus a learned linear skip v·x;
* ``swiglu`` (:mod:`popdyn.families.swiglu`): f(x) = Σ_j a_j SiLU(g_j·x)(v_j·x) + c (and the
  biased student of Kumar (arXiv 2609.39408) eq. (71)).
"""
from ._base import (BUILTIN, RATE_KEYWORDS, BoundFamily, FamilySpec, capability, config_keys,
                    get, names, of_table, register, unregister)

__all__ = ["BUILTIN", "BoundFamily", "FamilySpec", "RATE_KEYWORDS", "capability",
           "config_keys", "get", "names", "of_table", "register", "unregister"]
