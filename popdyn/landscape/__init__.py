"""Population loss landscapes (issue 21): exact Hessians, critical points and their classification.

See :mod:`popdyn.landscape._hessian` for the formulas and the flattening order.
"""
from ._hessian import (Layout, flatten, hessian, layout, loss_grad_hessian, pl_kernel,
                       relu_kernel, spectrum, supported, unflatten)

__all__ = ["Layout", "flatten", "hessian", "layout", "loss_grad_hessian", "pl_kernel",
           "relu_kernel", "spectrum", "supported", "unflatten"]
from ._critical import (KINDS, METHODS, Classification, CriticalPoint, Reduced,
                        boundary_derivative, classify, find_critical_points, reduce,
                        reduced_loss_grad_hessian, same_point)

__all__ += ["KINDS", "METHODS", "Classification", "CriticalPoint", "Reduced",
            "boundary_derivative", "classify", "find_critical_points", "reduce",
            "reduced_loss_grad_hessian", "same_point"]
