"""Type aliases of popdyn's public signatures, for annotations in packages built on popdyn.

:class:`AnyStudent` is a student of any family (:mod:`popdyn.family`), :data:`AnyParams` its
parameter container (:class:`popdyn.Params`, :class:`popdyn.SwiGLUParams`, ...), :data:`P` a
type variable bound to the containers.
"""
from ._typing import AnyParams, AnyStudent, P

__all__ = ["AnyParams", "AnyStudent", "P"]
