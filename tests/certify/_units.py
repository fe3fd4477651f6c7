"""Degenerate units for the hypothesis strategies of the certified quantities.

``degenerate(W, b, i, mode)`` rewrites row ``i`` of (W, b) in place:

* ``"tiny"``       |w| = 1e−9 beside b = ±0.6: nearly constant (affine to e^(−1e17));
* ``"tiny3"``      |w| = 1e−3 beside b = ±0.9;
* ``"collinear"``  w = w_0 (1 + 1e−7 e_last), b = b_0: nearly collinear with row 0;
* ``"huge"``       b = −1e4 |w|: a threshold 1e4 standard deviations out (a dead unit);
* ``"random"``     unchanged.
"""
import numpy as np

MODES = ("random", "tiny", "tiny3", "collinear", "huge")


def degenerate(W, b, i, mode):
    w0 = W[0] if i != 0 else W[1]
    n0 = float(np.linalg.norm(w0)) or 1.0
    sign = 1.0 if b[i] >= 0 else -1.0
    if mode == "tiny":
        W[i] = 1e-9 * w0 / n0
        b[i] = 0.6 * sign
    elif mode == "tiny3":
        W[i] = 1e-3 * w0 / n0
        b[i] = 0.9 * sign
    elif mode == "collinear":
        e = np.zeros(W.shape[1])
        e[-1] = 1e-7 * n0
        W[i] = w0 + e
        b[i] = b[0] if i != 0 else b[1]
    elif mode == "huge":
        b[i] = -1e4 * float(np.linalg.norm(W[i]))
    elif mode != "random":
        raise ValueError(mode)
    return W, b
