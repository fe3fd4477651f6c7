r"""Precompute the Hermite tables of the links without closed-form coefficients: tanh and silu.

Writes ``data/links/links.npz``, read lazily by :mod:`popdyn.links` (``silu_centered`` is derived
from ``silu``: only Ĥ_0 and the moments change).

What is computed (for g in {tanh, silu}; H = g, the links have no piecewise-linear part)
----------------------------------------------------------------------------------------
* Ĥ_n = E[g(Z) h_n(Z)], h_n = He_n/√n!, n = 0..1024, written as
  Ĥ_n = ∫ g(z) ψ_n(z) e^{−z²/4} (2π)^{−1/4} dz with the Hermite functions
  ψ_n(z) = h_n(z) e^{−z²/4} (2π)^{−1/4} (|ψ_n| ≤ 1, stable three-term recurrence
  ψ_{n+1} = (z ψ_n − √n ψ_{n−1})/√(n+1)). The integrand is analytic in a strip (tanh: |Im z| <
  π/2, silu: |Im z| < π) and Gaussian-decaying, so the trapezoidal rule converges geometrically;
  the recurrence runs in B-bit fixed point (Python integers in numpy object arrays, using the
  parity ψ_n(−z) = (−1)^n ψ_n(z) to halve the nodes).
  Two independent schemes: A (step 1/40, |z| ≤ 30, B = 360 bits) and B (step 1/48, |z| ≤ 32,
  B = 400 bits). They must agree to 1e−90 absolute for every n ≤ 1024 (they agree to ~1e−100);
  B is stored. Spot checks against mpmath.quad of g·h_n·φ at 40 digits for n ≤ 12, 20, 30.
* Energies E_k = E[g^{(k)}(Z)²], k = 0..3, and E[g]: trapezoidal rule at 130 digits with the two
  grids of A and B (must agree to 1e−110), cross-checked against mpmath.quad at 60 digits.
  The derivative formulas are checked against mpmath.diff.
* The tails beyond N_tab = 512 with ``popdyn.links._beyond_from_residuals``: explicit sums for
  512 < n ≤ 1024 plus the Parseval residual at the cut 1024 (L² tails; error bound from the A/B
  differences added) and the Sobolev/Cauchy–Schwarz bounds √(R_2/1024), √(R_3/1023) (ℓ¹ tails),
  all in mpmath at 130 digits. These are numerical (validated, not interval) quantities.

Stored per name: ``coeffs_hi``/``coeffs_lo`` (double-double Ĥ_0..Ĥ_513, ~32 digits),
``beyond`` (Σ_{n>512} Ĥ_n², Σ_{n>512}|Ĥ_n|, Σ_{n>512} Ĥ'_n², Σ_{n>512}|Ĥ'_n| as 40-digit strings,
inflated by 1e−35 relative so that they stay upper bounds), ``moments`` (E[g], E[g²], E[g'²],
E_0..E_3 as 40-digit strings) and ``max_abs_diff_AB`` (the A/B agreement).

Runtime: about 35 s of CPU on one core (56 s wall on the shared 2-core dev machine), dominated
by the fixed-point recurrences and the 60-digit mpmath.quad cross-checks. Output: 12 KB.
Run: ``python data/_precompute/links.py`` (prints every check; exits non-zero if one fails).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import importlib.util

import mpmath
import numpy as np

# Load popdyn/links.py by path: it is self-contained, and this keeps the script independent of
# the rest of the package (popdyn/__init__.py imports the numba engine).
_SRC = Path(__file__).resolve().parents[2] / "popdyn" / "links.py"
_spec = importlib.util.spec_from_file_location("_popdyn_links_precompute", _SRC)
L = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = L
_spec.loader.exec_module(L)

OUT = Path(__file__).resolve().parent.parent / "links" / "links.npz"
NEXT = 1024
NT = L.N_TAB

ctx = mpmath.MPContext()


# ------------------------------------------------------------------------------------------
# link definitions and derivatives (mpmath)
# ------------------------------------------------------------------------------------------
def _sig(z):
    return 1 / (1 + ctx.exp(-z))


def tanh_derivs(z):
    t = ctx.tanh(z)
    s = 1 - t * t
    return (t, s, -2 * t * s, s * (6 * t * t - 2))


def silu_derivs(z):
    s = _sig(z)
    s1 = s * (1 - s)
    s2 = s1 * (1 - 2 * s)
    s3 = s1 * (1 - 6 * s + 6 * s * s)
    return (z * s, s + z * s1, 2 * s1 + z * s2, 3 * s2 + z * s3)


LINKS = {"tanh": tanh_derivs, "silu": silu_derivs}


def exact_zero(name, n):
    """Coefficients that vanish by symmetry: tanh is odd; silu(z) − z/2 = (z/2)·tanh(z/2) is
    even, so Ĥ_n = 0 for odd n ≥ 3 (and Ĥ_1 = E[silu'] = 1/2 exactly, z·sigmoid'(z) being odd)."""
    if name == "tanh":
        return n % 2 == 0
    return n % 2 == 1 and n >= 3


EXACT = {"silu": {1: mpmath.mpf(1) / 2}}


# ------------------------------------------------------------------------------------------
# Hermite-function trapezoidal rule in fixed point
# ------------------------------------------------------------------------------------------
def coeffs_fixed(g, D, Lz, B, nmax):
    """Ĥ_0..Ĥ_nmax by the trapezoidal rule with step 1/D on [−Lz, Lz], B-bit fixed point."""
    with ctx.workdps(int(B * 0.30103) + 20):
        K = Lz * D
        one = 1 << B
        c = (2 * ctx.pi) ** (-ctx.mpf(1) / 4)
        F = {}
        for i in range(-K, K + 1):
            z = ctx.mpf(i) / D
            F[i] = int(ctx.nint(g(z) * ctx.exp(-z * z / 4) * c * one))
        psi0 = [int(ctx.nint(c * ctx.exp(-(ctx.mpf(i) / D) ** 2 / 4) * one))
                for i in range(K + 1)]
        S = [int(ctx.nint(ctx.sqrt(n) * one)) for n in range(nmax + 1)]
        R = [int(ctx.nint(one / ctx.sqrt(n))) if n else 0 for n in range(nmax + 1)]
    Gev = np.array([F[0]] + [F[i] + F[-i] for i in range(1, K + 1)], dtype=object)
    God = np.array([0] + [F[i] - F[-i] for i in range(1, K + 1)], dtype=object)
    idx = np.array(range(K + 1), dtype=object)
    p0 = np.array(psi0, dtype=object)
    p1 = (idx * p0) // D
    acc = [np.dot(Gev, p0), np.dot(God, p1)]
    for n in range(1, nmax):
        p2 = ((((idx * p1) // D) - ((S[n] * p0) >> B)) * R[n + 1]) >> B
        acc.append(np.dot(God if (n + 1) % 2 else Gev, p2))
        p0, p1 = p1, p2
    with ctx.workdps(int(B * 0.30103) + 20):
        scale = ctx.mpf(D) * ctx.mpf(2) ** (2 * B)
        return [ctx.mpf(a) / scale for a in acc]


def energies_trap(derivs, D, Lz, dps):
    """(E[g], E_0..E_3) by the trapezoidal rule at ``dps`` digits."""
    with ctx.workdps(dps):
        acc = [ctx.mpf(0)] * 5
        for i in range(-Lz * D, Lz * D + 1):
            z = ctx.mpf(i) / D
            w = ctx.npdf(z)
            d = derivs(z)
            acc[0] += d[0] * w
            for k in range(4):
                acc[k + 1] += d[k] ** 2 * w
        return [a / D for a in acc]


def energies_quad(derivs, dps):
    with ctx.workdps(dps):
        out = [ctx.quad(lambda z: derivs(z)[0] * ctx.npdf(z), [-ctx.inf, 0, ctx.inf])]
        for k in range(4):
            out.append(ctx.quad(lambda z, k=k: derivs(z)[k] ** 2 * ctx.npdf(z),
                                [-ctx.inf, 0, ctx.inf]))
        return out


def check(cond, msg):
    print(("  ok   " if cond else "  FAIL ") + msg)
    if not cond:
        raise SystemExit(f"precompute check failed: {msg}")


def main():
    t_start = time.time()
    out = {"names": np.array(list(LINKS)),
           "meta": np.array([
               "popdyn link tables; see data/_precompute/links.py for method and checks",
               f"N_tab={NT}; coefficients to {NEXT}; double-double storage"])}
    for name, derivs in LINKS.items():
        t0 = time.time()
        print(f"[{name}]")
        g = lambda z: derivs(z)[0]  # noqa: E731
        # derivative formulas vs mpmath.diff
        with ctx.workdps(40):
            for z0 in (ctx.mpf("-2.3"), ctx.mpf("0.7"), ctx.mpf("3.1")):
                d = derivs(z0)
                for k in (1, 2, 3):
                    ref = ctx.diff(g, z0, k)
                    check(abs(d[k] - ref) < ctx.mpf(10) ** -30,
                          f"derivative {k} at {z0} matches mpmath.diff")
        cA = coeffs_fixed(g, 40, 30, 360, NEXT)
        cB = coeffs_fixed(g, 48, 32, 400, NEXT)
        with ctx.workdps(130):
            diff = max(abs(a - b) for a, b in zip(cA, cB))
        print(f"  max |A - B| over n <= {NEXT}: {ctx.nstr(diff, 3)}")
        check(diff < ctx.mpf(10) ** -90, "schemes A and B agree to 1e-90")
        # impose the exact symmetry zeros / values after checking them
        with ctx.workdps(130):
            sym = max(abs(cB[n]) for n in range(NEXT + 1) if exact_zero(name, n))
            check(sym < ctx.mpf(10) ** -90,
                  f"coefficients zero by symmetry are < 1e-90 (max {ctx.nstr(sym, 3)})")
            cB = [ctx.mpf(0) if exact_zero(name, n) else x for n, x in enumerate(cB)]
            for n, v in EXACT.get(name, {}).items():
                check(abs(cB[n] - v) < ctx.mpf(10) ** -90, f"Ĥ_{n} = {v} exactly")
                cB[n] = ctx.mpf(v)
        with ctx.workdps(40):
            for n in list(range(13)) + [20, 30]:
                ref = ctx.quad(lambda z: g(z) * L._mp_hermite(n, z) * ctx.npdf(z),
                               [-ctx.inf, 0, ctx.inf])
                check(abs(ref - cB[n]) < ctx.mpf(10) ** -35,
                      f"Ĥ_{n} = {ctx.nstr(cB[n], 12)} matches mpmath.quad (40 digits)")
        eA = energies_trap(derivs, 40, 30, 130)
        eB = energies_trap(derivs, 48, 32, 130)
        eQ = energies_quad(derivs, 60)
        if name == "tanh":      # odd link: E[g] = 0 exactly
            check(abs(eA[0]) + abs(eB[0]) < ctx.mpf(10) ** -110, "E[tanh] = 0")
            eA[0] = eB[0] = ctx.mpf(0)
        with ctx.workdps(130):
            de = [abs(a - b) for a, b in zip(eA, eB)]
        check(max(de) < ctx.mpf(10) ** -110, "energies on the A and B grids agree to 1e-110")
        with ctx.workdps(60):
            check(max(abs(a - b) for a, b in zip(eB, eQ)) < ctx.mpf(10) ** -50,
                  "energies agree with mpmath.quad at 60 digits to 1e-50")
        # tails beyond N_tab
        with L._ctx.workdps(130):
            c = [L._ctx.mpf(x) for x in cB]
            E = [L._ctx.mpf(x) for x in eB[1:]]
            delta = 10 * L._ctx.mpf(diff) + L._ctx.mpf(10) ** -105
            errs = []
            for k in range(4):
                prop = L._ctx.fsum(L._ff(n, k) * (2 * abs(c[n]) * delta + delta ** 2)
                                   for n in range(NEXT + 1))
                errs.append(10 * L._ctx.mpf(de[k + 1]) + prop + L._ctx.mpf(10) ** -115)
            beyond = L._beyond_from_residuals(c, NT, E, errs)
            for k in range(2):
                s = L._ctx.fsum(L._ff(n, k) * c[n] ** 2 for n in range(NEXT + 1))
                print(f"  Parseval residual R_{k}({NEXT}) = {L._ctx.nstr(E[k] - s, 5)} "
                      f"(error bound {L._ctx.nstr(errs[k], 3)})")
            s512 = L._ctx.fsum(c[n] ** 2 for n in range(NT + 1))
            print(f"  t2 beyond {NT}: {L._ctx.nstr(beyond[0], 8)}  "
                  f"(= E0 - sum_(n<=512) = {L._ctx.nstr(E[0] - s512, 8)})")
            check(abs(beyond[0] - (E[0] - s512)) <= 1e-25 * beyond[0] + errs[0] * 2,
                  "t2 beyond N_tab equals the Parseval residual at N_tab")
            print("  beyond (t2, l1, dt2, dl1):", [L._ctx.nstr(b, 6) for b in beyond])
            up = 1 + L._ctx.mpf(10) ** -35
            out[f"{name}__beyond"] = np.array([L._ctx.nstr(b * up, 40) for b in beyond])
            hi, lo = [], []
            for x in c[:NT + 2]:
                h = L._to_float(x)
                hi.append(h)
                lo.append(L._to_float(x - L._ctx.mpf(h)))
            out[f"{name}__coeffs_hi"] = np.array(hi)
            out[f"{name}__coeffs_lo"] = np.array(lo)
            mom = [eB[0], eB[1], eB[2]] + eB[1:]
            out[f"{name}__moments"] = np.array([L._ctx.nstr(L._ctx.mpf(x), 40) for x in mom])
            out[f"{name}__max_abs_diff_AB"] = np.array(float(diff))
        print(f"  mean {ctx.nstr(eB[0], 30)}  E[g^2] {ctx.nstr(eB[1], 30)}  "
              f"E[g'^2] {ctx.nstr(eB[2], 30)}   ({time.time() - t0:.1f} s)")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes) in {time.time() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
