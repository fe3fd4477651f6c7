"""Input checks for the public layer (STYLE item 4): every error names the argument."""
from __future__ import annotations

import difflib
import numbers

import numpy as np


def choice(name: str, value, choices) -> str:
    """Check that ``value`` is one of ``choices``; suggest the closest on failure."""
    if not isinstance(value, str):
        raise TypeError(f"`{name}` must be a string, one of {sorted(choices)}; got {type(value).__name__}")
    if value not in choices:
        close = difflib.get_close_matches(value, list(choices), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"`{name}` must be one of {sorted(choices)}, got {value!r}.{hint}")
    return value


def positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` must be a positive int, got {value!r}")
    if value <= 0:
        raise ValueError(f"`{name}` must be a positive int, got {value}")
    return int(value)


def nonneg_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` must be a non-negative int, got {value!r}")
    if value < 0:
        raise ValueError(f"`{name}` must be a non-negative int, got {value}")
    return int(value)


def real(name: str, value, *, positive=False, nonnegative=False, finite=True, allow_inf=False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a real number, got {value!r}")
    v = float(value)
    if np.isnan(v) or (not allow_inf and finite and not np.isfinite(v)):
        raise ValueError(f"`{name}` must be finite, got {value!r}")
    if positive and not v > 0:
        raise ValueError(f"`{name}` must be > 0, got {value!r}")
    if nonnegative and not v >= 0:
        raise ValueError(f"`{name}` must be >= 0, got {value!r}")
    return v


def array(name: str, value, shape: tuple, *, finite=True) -> np.ndarray:
    """Convert to a float64 array of the given shape (None = any length) and check finiteness."""
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"`{name}` must be an array of real numbers ({exc})") from None
    if arr.ndim != len(shape) or any(s is not None and s != t for s, t in zip(shape, arr.shape)):
        want = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"`{name}` must have shape {want}, got {arr.shape}")
    if finite and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"`{name}` must be finite; entry {tuple(int(i) for i in bad)} is {arr[tuple(bad)]}")
    return arr


def orthonormal_rows(name: str, U: np.ndarray, atol: float = 1e-10) -> np.ndarray:
    r = U.shape[0]
    G = U @ U.T
    err = float(np.max(np.abs(G - np.eye(r)))) if r else 0.0
    if not err <= atol:
        raise ValueError(
            f"`{name}` must have orthonormal rows (U U^T = I within {atol:g}); the deviation is {err:.3g}. "
            "Orthonormalize it (e.g. numpy.linalg.qr) or use Teacher.network for non-orthogonal directions."
        )
    return U
