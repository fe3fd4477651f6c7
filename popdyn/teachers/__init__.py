"""Teachers (docs/design.md §3): one protocol (:mod:`popdyn.teachers._base`), one module a kind.

* :mod:`~popdyn.teachers.additive`:    y = Σ_k κ_k g(u_k·x), orthonormal rows, a link g;
* :mod:`~popdyn.teachers.network`:     y = Σ_k v_k σ*(u_k·x + b*_k), arbitrary rows;
* :mod:`~popdyn.teachers.multi_index`: y = κ·G(Ux) from its normalized Hermite tensor;
* :mod:`~popdyn.teachers.gated`:       y = κ·F(u_1·x)·(u_2·x), a multi-index teacher.

Build them with ``Teacher.additive``, ``Teacher.network``, ``Teacher.gated`` and
``Teacher.multi_index``.  Other kinds are registered with :func:`register_kind` (and declared in
the entry-point group ``popdyn.teachers`` to be found from configuration files and by every
worker of a sweep); :func:`kinds` lists them.
"""
from ._base import ENTRY_POINT_GROUP, Teacher, kind_class, kinds, register_kind
from .additive import AdditiveTeacher
from .gated import GATES, GatedTeacher
from .multi_index import HermiteTensor, MultiIndexTeacher
from .network import NetworkTeacher

__all__ = ["Teacher", "register_kind", "kind_class", "kinds", "ENTRY_POINT_GROUP",
           "AdditiveTeacher", "NetworkTeacher", "MultiIndexTeacher", "GatedTeacher",
           "HermiteTensor", "GATES"]
