"""Run configurations (TOML): teacher, student, initialization, integrator, schedule.

A configuration is validated on load; unknown keys raise with a did-you-mean.
"""
from __future__ import annotations

import difflib
import tomllib
from pathlib import Path

import numpy as np

from .dynamics import Schedule
from .models import Student
from .teachers import Teacher

_SECTIONS = {
    "name": None,
    "teacher": {"kind", "link", "rank", "kappa", "activation", "V", "U", "bias", "basis"},
    "student": {"d", "m", "activation", "negative_slope", "bias", "intercept", "scaling"},
    "init": {"scale", "seeds", "fit_intercept"},
    "train": {"method", "lr", "head_lr_mult", "bias_lr_mult", "intercept_lr_mult", "eps", "h0",
              "h_min", "h_max", "max_updates", "max_time", "loss_target", "explode"},
    "schedule": {"every", "early"},
}


def _unknown(where, key, allowed):
    close = difflib.get_close_matches(key, sorted(allowed), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"unknown key {key!r} in {where}; valid keys: {sorted(allowed)}.{hint}")


def validate(cfg: dict) -> dict:
    for key, val in cfg.items():
        if key not in _SECTIONS:
            _unknown("the config", key, _SECTIONS)
        allowed = _SECTIONS[key]
        if allowed is not None:
            if not isinstance(val, dict):
                raise ValueError(f"config section [{key}] must be a table")
            for k in val:
                if k not in allowed:
                    _unknown(f"[{key}]", k, allowed)
    for sec in ("teacher", "student", "init"):
        if sec not in cfg:
            raise ValueError(f"config is missing the [{sec}] section")
    return cfg


def load(path) -> dict:
    """Load and validate a TOML run configuration."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            cfg = tomllib.load(fh)
    except FileNotFoundError:
        raise FileNotFoundError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"config file {path} is not valid TOML: {exc}") from None
    return validate(cfg)


def build_student(cfg: dict) -> Student:
    return Student(**cfg["student"])


def build_teacher(cfg: dict, d: int) -> Teacher:
    t = dict(cfg["teacher"])
    kind = t.pop("kind", "additive")
    if kind == "additive":
        if "U" in t:
            U = np.array(t.pop("U"), dtype=float)
        else:
            r = int(t.pop("rank", 1))
            if not 1 <= r <= d:
                raise ValueError(f"[teacher] rank must be in 1..d = {d}, got {r}")
            U = np.eye(d)[:r]
        t.pop("basis", None)
        return Teacher.additive(t.get("link", "h2"), U, t.get("kappa"))
    if kind == "network":
        return Teacher.network(t["activation"], t["V"], t["U"], t.get("bias"))
    raise ValueError(f"[teacher] kind must be 'additive' or 'network', got {kind!r}")


def train_kwargs(cfg: dict) -> dict:
    kw = dict(cfg.get("train", {}))
    if "schedule" in cfg:
        sc = cfg["schedule"]
        kw["schedule"] = Schedule(every=sc.get("every", 100), early=tuple(sc.get("early", ())))
    return kw
