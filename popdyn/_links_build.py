"""Building teacher links from canonical names, with caching (:mod:`popdyn.links`).

:func:`_canonical` turns a spec (name, family tuple, mixture text) into its canonical name;
:func:`_link_from_name` builds the link of a canonical name once per process: fixed names and
damped cubics from their Hermite data (:mod:`popdyn._links_hermite`) and evaluators
(:mod:`popdyn._links_eval`), the paper's g_v, g_μ, q_μ (:func:`_build_gmu`), signed mixtures
(:func:`_build_mixture`), registered user links; :func:`_assemble` fills the
:class:`~popdyn._links_link.Link` record.  :func:`_get_link` is :func:`popdyn.links.get_link`.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import math
from fractions import Fraction

import numpy as np

from . import _links_g as _G
from ._links_eval import _base_evaluators
from ._links_hermite import (_BASE_DPS, _ctx, _gmu_evaluators, _HData, _hdata_gmu,
                             _hdata_gmu_uniform, _hdata_gp, _hdata_sin, _hdata_tab, _mp, _nstr,
                             _QUAD_DPS, _to_float, _to_float_up)
from ._links_link import Link
from ._links_names import (_check_a, _check_weight, _flatten, _measure_name, _mixture_name,
                           _parse_a, _parse_measure_items, _USER_LINKS, _valid_names_msg,
                           LINK_NAMES)


def _build_gmu_uniform(name):
    norm = name.startswith("q")
    with _ctx.workdps(_BASE_DPS):
        scale = _ctx.mpf(1)
        if norm:
            hd, mom = _hdata_gmu_uniform(scale)
            scale = 1 / _ctx.sqrt(mom[1])
    hd, mom = _hdata_gmu_uniform(scale)
    nodes = _G.uniform_nodes()
    sf = _to_float(scale)
    af = tuple((sf * w, v) for w, v in nodes)
    evals = (lambda z: _G.np_eval(af, z), lambda z: _G.np_eval(af, z, deriv=True),
             lambda z: scale * _G.mp_eval_uniform(_ctx, z),
             lambda z: scale * _G.mp_eval_uniform(_ctx, z, True))
    return _assemble(name, 0.0, 0.0, hd, mom, evals)


def _build_gmu(name):
    """Links ``g:<v>``, ``q:<v>``, ``g_mu(...)`` and ``q_mu(...)`` (canonical names)."""
    if name in ("g_mu(uniform)", "q_mu(uniform)"):
        return _build_gmu_uniform(name)
    norm = name.startswith("q")
    if name.startswith(("g:", "q:")):
        pairs = ((Fraction(1), _G.as_rational(name[2:], "spec")),)
    else:
        pairs = _parse_measure_items(name[len("g_mu("):-1], name)
    with _ctx.workdps(_BASE_DPS):
        atoms = tuple((_mp(w), v) for w, v in pairs)
        if norm:
            s = 1 / _ctx.sqrt(_G.energy(_ctx, atoms))
            atoms = tuple((w * s, v) for w, v in atoms)
    hd, mom = _hdata_gmu(atoms)
    return _assemble(name, 0.0, 0.0, hd, mom, _gmu_evaluators(hd.gmu))


# --------------------------------------------------------------------------------------------
# building links
# --------------------------------------------------------------------------------------------
def _ro(a):
    a = np.asarray(a, dtype=float)
    a.setflags(write=False)
    return a


def _assemble(name, p, q, hd: _HData, moments_mp, evals, components=()):
    """Build a Link from mpmath Hermite data and moments (mean, E[g²], E[g'²])."""
    nt = hd.nt
    with _ctx.workdps(_BASE_DPS):
        c = list(hd.coeffs[:nt + 2])
        while len(c) < nt + 2:
            c.append(_ctx.mpf(0))
        d = [_ctx.sqrt(n + 1) * c[n + 1] for n in range(nt + 1)]
        if hd.beyond is None:
            b = (_ctx.mpf(0),) * 4
        else:
            b = hd.beyond
        t2, l1, dt2, dl1 = ([0.0] * (nt + 1) for _ in range(4))
        s_t2, s_l1, s_dt2, s_dl1 = b
        # non-polynomial: cover the ~1e-31 relative error of double-double / 50-digit data
        up = 1 if hd.beyond is None else 1 + _ctx.mpf(10) ** -28
        for N in range(nt, -1, -1):
            t2[N], l1[N] = _to_float_up(s_t2 * up), _to_float_up(s_l1 * up)
            dt2[N], dl1[N] = _to_float_up(s_dt2 * up), _to_float_up(s_dl1 * up)
            s_t2 += c[N] ** 2
            s_l1 += abs(c[N])
            s_dt2 += d[N] ** 2
            s_dl1 += abs(d[N])
        mean, second, dsecond = (_ctx.mpf(x) for x in moments_mp)
        var = second - mean ** 2
        f, df, fmp, dfmp = evals
        link = Link(
            name=name, p=float(p), q=float(q),
            coeffs=_ro([_to_float(x) for x in c[:nt + 1]]),
            is_polynomial=hd.beyond is None,
            t2=_ro(t2), l1=_ro(l1),
            dcoeffs=_ro([_to_float(x) for x in d]), dt2=_ro(dt2), dl1=_ro(dl1),
            mean=_to_float(mean), second_moment=_to_float(second), variance=_to_float(var),
            d_second_moment=_to_float(dsecond),
            mean_str=_nstr(mean), second_moment_str=_nstr(second), variance_str=_nstr(var),
            d_second_moment_str=_nstr(dsecond),
            tail_beyond=hd.tail_beyond,
            h_second_moment=_to_float_up(s_t2), h_d_second_moment=_to_float_up(s_dt2),
            components=tuple(components),
            _f=f, _df=df, _fmp=fmp, _dfmp=dfmp, _hdata=hd,
            _mp_moments=(mean, second, dsecond),
        )
    return link


_ZERO_H_ATOMS = ()


def _pl_link(name, p, q, moments):
    hd, _ = _hdata_gp(_ZERO_H_ATOMS)
    return _assemble(name, p, q, hd, moments, _base_evaluators(name))


@functools.lru_cache(maxsize=None)
def _link_from_name(name: str) -> Link:
    """Build the link with canonical name ``name`` (cached)."""
    if name.startswith("mixture("):
        return _build_mixture(name)
    if name.startswith(("g:", "q:", "g_mu(", "q_mu(")):
        return _build_gmu(name)
    if name.startswith("user:"):
        return _USER_LINKS[name]
    with _ctx.workdps(_BASE_DPS):
        pi = _ctx.pi
        if name == "h1":
            return _pl_link(name, 0.0, 1.0, (0, 1, 1))
        if name == "relu":
            return _pl_link(name, 1.0, 0.0,
                            (1 / _ctx.sqrt(2 * pi), _ctx.mpf(1) / 2, _ctx.mpf(1) / 2))
        if name == "abs":
            return _pl_link(name, 2.0, -1.0, (_ctx.sqrt(2 / pi), 1, 1))
    if name.startswith("h") and name[1:].isdigit():
        atoms: tuple[tuple[Fraction, str, int, Fraction], ...] = (
            (Fraction(1), "h", int(name[1:]), Fraction(0)),)
    elif name == "h3+0.3h2":
        atoms = ((Fraction(1), "h", 3, Fraction(0)), (Fraction(3, 10), "h", 2, Fraction(0)))
    elif name == "gaussian_bump":
        atoms = ((Fraction(1), "m", 0, Fraction(1)),)
    elif name.startswith("damped_cubic:"):
        a = float(name.split(":", 1)[1])
        atoms = ((Fraction(1), "m", 3, Fraction(a)),)
        hd, mom = _hdata_gp(atoms)
        return _assemble(name, 0.0, 0.0, hd, mom, _base_evaluators(name, a=a))
    elif name == "sin":
        hd, mom = _hdata_sin()
        return _assemble(name, 0.0, 0.0, hd, mom, _base_evaluators(name))
    elif name == "tanh":
        hd, mom = _hdata_tab("tanh")
        return _assemble(name, 0.0, 0.0, hd, mom, _base_evaluators(name))
    elif name in ("silu", "silu_centered"):
        hd, mom = _hdata_tab("silu")
        mean = mom[0]
        if name == "silu":
            ev = _base_evaluators(name, shift=0.0, mp_shift=_ctx.mpf(0))
        else:
            with _ctx.workdps(_BASE_DPS):
                hd = dataclasses.replace(hd, coeffs=(_ctx.mpf(0),) + hd.coeffs[1:])
                mom = (_ctx.mpf(0), mom[1] - mean ** 2, mom[2])
            ev = _base_evaluators(name, shift=_to_float(mean), mp_shift=mean)
        return _assemble(name, 0.0, 0.0, hd, mom, ev)
    else:
        raise AssertionError(name)
    hd, mom = _hdata_gp(atoms)
    return _assemble(name, 0.0, 0.0, hd, mom, _base_evaluators(name))


def _quad_moments(fmp, dfmp):
    """(E[g²], E[g'²]) by mpmath quadrature at _QUAD_DPS digits (break point at 0)."""
    out = []
    with _ctx.workdps(_QUAD_DPS + 10):
        for f in (fmp, dfmp):
            val, err = _ctx.quad(lambda z: f(z) ** 2 * _ctx.npdf(z), [-_ctx.inf, 0, _ctx.inf],
                                 error=True)
            if err > _ctx.mpf(10) ** (-_QUAD_DPS) * (1 + abs(val)):
                raise ArithmeticError(f"moment quadrature did not converge (error {err})")
            out.append(val)
    return tuple(out)


def _build_mixture(name: str) -> Link:
    comps = _parse_mixture(name)
    p = math.fsum(w * l.p for w, l in comps)
    q = math.fsum(w * l.q for w, l in comps)
    hds = [l._hdata for _, l in comps]

    def f(z):
        return sum(w * l._f(z) for w, l in comps)

    def df(z):
        return sum(w * l._df(z) for w, l in comps)

    def fmp(z):
        return _ctx.fsum(_ctx.mpf(w) * l._fmp(z) for w, l in comps)

    def dfmp(z):
        return _ctx.fsum(_ctx.mpf(w) * l._dfmp(z) for w, l in comps)

    with _ctx.workdps(_BASE_DPS):
        mean = _ctx.fsum(_ctx.mpf(w) * l._mp_moments[0] for w, l in comps)
    if p == 0.0 and q == 0.0 and all(hd.gmu is not None for hd in hds):
        # combinations of eq. (7) links: one (signed) measure, exact closed forms
        with _ctx.workdps(_BASE_DPS):
            atoms: tuple[tuple, ...] = tuple((_ctx.mpf(w) * aw, v) for (w, _), hd in zip(comps, hds)
                          for aw, v in hd.gmu)
        hd, moments = _hdata_gmu(atoms)
        return _assemble(name, 0.0, 0.0, hd, moments, (f, df, fmp, dfmp), comps)
    if all(hd.gp is not None for hd in hds):
        atoms = tuple((Fraction(w) * aw, kind, k, a)
                      for (w, _), hd in zip(comps, hds) for (aw, kind, k, a) in hd.gp)
        hd, (hmean, h2, hd2) = _hdata_gp(atoms)
        if p == 0.0 and q == 0.0:
            moments = (mean, h2, hd2)
        else:
            moments = (mean,) + _quad_moments(fmp, dfmp)
        return _assemble(name, p, q, hd, moments, (f, df, fmp, dfmp), comps)
    # Minkowski path
    nt = max(hd.nt for hd in hds)
    with _ctx.workdps(_BASE_DPS):
        c = [_ctx.mpf(0)] * (nt + 2)
        bt2 = bl1 = bdt2 = bdl1 = _ctx.mpf(0)
        for (w, l), hd in zip(comps, hds):
            wm = _ctx.mpf(w)
            for n, x in enumerate(hd.coeffs[:nt + 2]):
                c[n] += wm * x
            if hd.beyond is not None:
                if hd.nt != nt:
                    raise AssertionError("non-polynomial parts must share N_tab")
                # component tails beyond nt as stored (float64, rounded up)
                # |w|: Minkowski / triangle inequality for signed weights
                bt2 += abs(wm) * _ctx.sqrt(_ctx.mpf(l.t2[nt]))
                bl1 += abs(wm) * _ctx.mpf(l.l1[nt])
                bdt2 += abs(wm) * _ctx.sqrt(_ctx.mpf(l.dt2[nt]))
                bdl1 += abs(wm) * _ctx.mpf(l.dl1[nt])
        hd = _HData(tuple(c), nt, (bt2 ** 2, bl1, bdt2 ** 2, bdl1), None, "minkowski")
    moments = (mean,) + _quad_moments(fmp, dfmp)
    return _assemble(name, p, q, hd, moments, (f, df, fmp, dfmp), comps)


def _canonical(spec) -> str:
    if isinstance(spec, tuple):
        if len(spec) == 2 and spec[0] in ("g", "q"):
            return f"{spec[0]}:{_G.frac_str(_G.check_v(spec[1], 'spec'))}"
        if len(spec) != 2 or spec[0] != "damped_cubic":
            raise ValueError(f"`spec` as a tuple must be ('damped_cubic', a), ('g', v) or "
                             f"('q', v), got {spec!r}")
        return f"damped_cubic:{_check_a(spec[1], 'spec')!r}"
    if not isinstance(spec, str):
        raise TypeError(f"`spec` must be a link name (str), a Link, ('damped_cubic', a) or "
                        f"('g', v), got {type(spec).__name__}")
    s = spec.strip()
    if s in LINK_NAMES:
        return s
    if s.startswith(("g:", "q:")):
        return f"{s[0]}:{_G.frac_str(_G.check_v(s[2:], 'spec'))}"
    if s in ("g_mu(uniform)", "q_mu(uniform)"):
        return s
    if s.startswith(("g_mu(", "q_mu(")) and s.endswith(")"):
        return _measure_name(s[0], _parse_measure_items(s[5:-1], s))
    if s.startswith("user:"):
        if s not in _USER_LINKS:
            raise ValueError(f"`spec`: no user link {s!r} in this process; build it first with "
                             "popdyn.links_user.from_hermite or popdyn.links_user.from_callable "
                             f"(registered: {sorted(_USER_LINKS) or 'none'})")
        return s
    if s.startswith("damped_cubic:"):
        return f"damped_cubic:{_parse_a(s.split(':', 1)[1])!r}"
    if s.startswith("mixture(") and s.endswith(")"):
        return _mixture_name(_parse_mixture_items(s))
    close = difflib.get_close_matches(s, LINK_NAMES + ("damped_cubic:0.5", "g:1/2"), n=3,
                                      cutoff=0.5)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise ValueError(f"`spec`: unknown link name {spec!r}.{hint} "
                     f"Valid names: {_valid_names_msg()}.")


def _parse_mixture_items(s):
    body = s[len("mixture("):-1]
    items = []
    for part in body.split(","):
        part = part.strip()
        if "*" not in part:
            raise ValueError(f"`spec`: cannot parse mixture term {part!r} in {s!r} "
                             "(expected 'w*name')")
        w, nm = part.split("*", 1)
        try:
            w = float(w)
        except ValueError:
            raise ValueError(f"`spec`: bad mixture weight {w!r} in {s!r}") from None
        items.append((_check_weight(w, "spec"), _get_link(nm.strip())))
    if not items:
        raise ValueError(f"`spec`: empty mixture {s!r}")
    return _flatten(items)


def _parse_mixture(name):
    return _parse_mixture_items(name)


def _get_link(spec) -> Link:
    """The link of ``spec`` (:func:`popdyn.links.get_link`): a Link as is, otherwise the cached
    link of its canonical name."""
    if isinstance(spec, Link):
        return spec
    return _link_from_name(_canonical(spec))
