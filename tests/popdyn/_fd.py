"""Finite differences of popdyn's exact population gradient, for the Hessian tests of
popdyn.landscape (test_landscape.py, test_landscape_biased.py).  The gradient comes from the
moment engine (``popdyn.loss_and_grad``), a code path independent of the landscape module's
closed-form Hessian."""
import numpy as np

import popdyn
from popdyn import landscape as ls


def fd_hessian(student, p, T, h):
    """Central differences (step ``h`` in every flattened coordinate of ``p``, the layout of
    ``landscape.flatten``) of the engine's exact gradient: column i is
    (∇L(x + h e_i) − ∇L(x − h e_i)) / (2h)."""
    x = ls.flatten(student, p)
    Hf = np.empty((x.size, x.size))
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        gp = popdyn.loss_and_grad(student, ls.unflatten(student, x + e), T)[1]
        gm = popdyn.loss_and_grad(student, ls.unflatten(student, x - e), T)[1]
        Hf[:, i] = (ls.flatten(student, gp) - ls.flatten(student, gm)) / (2 * h)
    return Hf
