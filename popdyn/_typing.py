"""Type aliases of the public signatures (annotations only: nothing here is used at run time).

A student of any family (:mod:`popdyn.family`) -- ridge and skip students are
:class:`popdyn.Student`, SwiGLU students :class:`popdyn.SwiGLUStudent`, other packages register
their own -- and its parameter container (:class:`popdyn.Params`, :class:`popdyn.SwiGLUParams`,
..., all :class:`popdyn.models.ParamArrays`).  Gradients, fitted states and trajectories have
the parameters' type.  (This module imports no other popdyn module at run time, so that every
module may use it.)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeAlias, TypeVar

if TYPE_CHECKING:
    from .family import StudentFamily
    from .models import ParamArrays


class AnyStudent(Protocol):
    """A popdyn student of any family (what the generic layers read off it)."""

    @property
    def d(self) -> int: ...

    @property
    def m(self) -> int: ...

    @property
    def activation(self) -> str: ...

    @property
    def family(self) -> StudentFamily: ...


#: the parameter container (and gradient) of a student of any family
AnyParams: TypeAlias = "ParamArrays"
#: a parameter container, kept by the functions that return one of the same type
P = TypeVar("P", bound="ParamArrays")
