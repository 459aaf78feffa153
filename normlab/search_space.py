"""A search's space: the presets in normlab/configs/hparams_search, made concrete against the
composed config (a ``factor`` is relative to the composed value), and what a trial suggests."""

from __future__ import annotations

import yaml

from .config import CONFIGS
from .errors import ConfigError

SEARCHES = CONFIGS / "hparams_search"


def load_search(name: str) -> dict:
    path = SEARCHES / f"{name}.yaml"
    if "/" in name or "\\" in name or name.startswith(".") or not path.exists():
        raise ConfigError(
            f"--search {name}: no {path}; presets: {sorted(p.stem for p in SEARCHES.glob('*.yaml'))}"
        )
    spec = yaml.safe_load(path.read_text())
    for key, p in spec["params"].items():
        if p.get("type") not in ("float", "int", "categorical"):
            raise ConfigError(f"{path}: params.{key}.type must be float, int or categorical")
    return spec


def _round(v: float) -> float:
    return float(
        f"{v:.3g}"
    )  # a readable run folder (lr=0.00141); the value the job ran is recorded


def space(spec: dict, cfg) -> dict:
    """Concrete ranges: a ``factor`` or ``factor_choices`` is relative to the composed value."""
    from omegaconf import OmegaConf

    out = {}
    for key, p in spec["params"].items():
        base = OmegaConf.select(cfg, key)
        if ("factor" in p or "factor_choices" in p) and not isinstance(base, (int, float)):
            raise ConfigError(
                f"search param {key}: factor needs a number at {key}, the config has {base!r}"
            )
        typ = (
            int
            if p["type"] == "int" or isinstance(base, int) and p["type"] == "categorical"
            else float
        )
        if "factor_choices" in p:
            out[key] = {
                "type": "categorical",
                "choices": sorted({typ(_round(base * f)) for f in p["factor_choices"]}),
            }
        elif "factor" in p:
            lo, hi = (base * f for f in p["factor"])
            out[key] = {**p, "low": typ(lo), "high": typ(hi)}
        else:
            out[key] = p
    return out


def suggest(trial, key: str, p: dict):
    if p["type"] == "categorical":
        return trial.suggest_categorical(key, p["choices"])
    if p["type"] == "int":
        return trial.suggest_int(key, int(p["low"]), int(p["high"]), log=bool(p.get("log")))
    return _round(
        trial.suggest_float(key, float(p["low"]), float(p["high"]), log=bool(p.get("log")))
    )
