"""The check ``user_link_g_half``: a link written by hand as a Python callable trains exactly
like popdyn's named link.

The link is the damped cubic g_{1/2}(z) = 2^{7/2}(z³ − 3z/2)exp(−z²/2) of Kumar (arXiv
2609.39408), eq. (7) at v = 1/2, written here in numpy and turned into a popdyn link by
:func:`popdyn.links_user.from_callable` (Gauss–Hermite projection with a stated error bound).
The check compares its Hermite coefficients with the closed form of the named link ``g:1/2`` and
trains the same ReLU student against both teachers under the paper's persistent Armijo rule;
the bracket is the largest relative deviation over the coefficients, the losses of every update
and the final parameters, and it passes when that is at most ``tol``.
"""
import numpy as np

import popdyn
from popdyn.links import get_link
from popdyn.links_user import from_callable
from proofs_checks import make_verdict, register


def g_half(z):
    z = np.asarray(z, dtype=float)
    return 2.0 ** 3.5 * (z ** 3 - 1.5 * z) * np.exp(-0.5 * z * z)


@register("user_link_g_half",
          description="a hand-written g_{1/2} link (a callable) trains like popdyn's g:1/2",
          quick={"d": 6, "m": 4, "updates": 150, "seed": 1, "tol": 1e-10},
          full={"d": 16, "m": 32, "updates": 2000, "seed": 1, "tol": 1e-10})
def user_link_g_half(*, d, m, updates, seed, tol):
    user = from_callable(g_half, name="g_half_by_hand", tol=1e-13)
    ref = get_link("g:1/2")
    M = user.N_tab
    c_user, c_ref = user.coefficients_full(M), ref.coefficients_full(M)
    dev_coeff = float(np.max(np.abs(c_user - c_ref)) / np.max(np.abs(c_ref)))
    U = np.eye(d)[:2]
    runs = []
    for link in (user, "g:1/2"):
        T = popdyn.Teacher.additive(link, U).normalized("second_moment")
        S = popdyn.Student.preset("paper_relu", d, m)
        p0 = S.init(seed, 1e-2, T, convention="iid")
        runs.append(popdyn.train(S, p0, T, method="armijo", h0=0.05, max_updates=updates))
    (a, b) = runs
    dev_loss = float(np.max(np.abs(a.loss - b.loss) / np.maximum(np.abs(b.loss), 1e-300)))
    pa, pb = a.final, b.final
    va = np.concatenate([pa.a, pa.W.ravel(), pa.b])
    vb = np.concatenate([pb.a, pb.W.ravel(), pb.b])
    dev_params = float(np.max(np.abs(va - vb)) / np.max(np.abs(vb)))
    dev = max(dev_coeff, dev_loss, dev_params)
    return make_verdict(
        "user_link_g_half",
        "the hand-written link's Hermite coefficients, the loss at every update and the final "
        f"parameters agree with popdyn's g:1/2 to at most tol (relative) over {updates} updates",
        kind="at_most", constant=tol, bracket=(dev, dev), provenance="numerical",
        notes=(f"coefficients {dev_coeff:.2e}, losses {dev_loss:.2e}, parameters "
               f"{dev_params:.2e} (relative, maximum); {len(a.loss)} losses compared",))
