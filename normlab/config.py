"""Config resolution: task scales, trainer defaults, and validation with named keys."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Optional

from omegaconf import DictConfig, OmegaConf

from .norms import norm_factory
from .schedule import SCHEDULES


class ConfigError(ValueError):
    """A bad config key or value; the message names the key and says how to fix it."""


@dataclass
class TrainConfig:
    optimizer: str = "adam"
    lr: float = 5e-4
    betas: list = field(default_factory=lambda: [0.9, 0.98])
    adam_eps: float = 1e-8
    weight_decay: float = 0.0
    schedule: str = "inverse_sqrt"
    warmup_steps: int = 0
    warmup_init_ratio: float = 0.0     # lr at step 0 as a fraction of the peak (fairseq: 1e-7/lr)
    min_lr_ratio: float = 0.0
    clip_norm: float = 0.0             # 0 = no clipping (the official IWSLT recipe)
    max_epochs: int = 1
    max_steps: int = 0                 # > 0 overrides max_epochs
    eval_every: int = 0                # steps; 0 = at the end of each epoch
    log_every: int = 10
    checkpoint_every: int = 0          # extra checkpoints between evaluations
    patience: int = 0                  # evaluations without improvement before stopping; 0 = off
    select: str = "metric"             # choose the best checkpoint on the valid "metric" or "loss"
    diverge_loss: float = 1e4          # a train loss above this (or NaN/inf) ends the run as diverged
    probe_every: int = 0               # log Theorem-1 gradient statistics every N steps; 0 = off


def _check_keys(section: dict, valid: list[str], where: str) -> None:
    unknown = sorted(set(section) - set(valid))
    if unknown:
        raise ConfigError(f"unknown key(s) {[f'{where}.{k}' for k in unknown]}; valid keys: {sorted(valid)}")


def train_config(section: dict) -> TrainConfig:
    valid = [f.name for f in fields(TrainConfig)]
    _check_keys(section, valid, "task.train")
    t = TrainConfig(**section)
    checks = [
        (t.lr > 0, "task.train.lr must be positive"),
        (t.weight_decay >= 0, "task.train.weight_decay must be >= 0"),
        (t.schedule in SCHEDULES, f"task.train.schedule must be one of {SCHEDULES}"),
        (t.select in ("metric", "loss"), "task.train.select must be 'metric' or 'loss'"),
        (t.max_epochs >= 0 and t.max_steps >= 0, "task.train.max_epochs/max_steps must be >= 0"),
        (t.log_every > 0, "task.train.log_every must be positive"),
        (min(t.eval_every, t.checkpoint_every, t.patience, t.probe_every, t.warmup_steps) >= 0,
         "task.train step counts must be >= 0"),
    ]
    for ok, msg in checks:
        if not ok:
            raise ConfigError(msg)
    return t


def task_overrides(overrides: list[str]) -> list[str]:
    """The command line's ``task.*`` overrides, re-applied after the scale preset so they win."""
    out = []
    for o in overrides:
        o = o.lstrip("+~")
        if o.startswith("task.") and "=" in o:
            out.append(o[len("task."):])
    return out


def resolve(cfg: DictConfig, overrides: Optional[list[str]] = None) -> DictConfig:
    """The job's config with ``task`` = task defaults < task.scales[scale] < command-line task.*."""
    task = OmegaConf.to_container(cfg.task, resolve=True)
    scales = task.pop("scales", None) or {}
    if cfg.scale not in scales:
        raise ConfigError(f"scale={cfg.scale!r} is not defined for task {task.get('name')!r}; "
                          f"valid scales: {sorted(scales)} (configs/task/{task.get('name')}.yaml)")
    merged = OmegaConf.merge(task, scales[cfg.scale] or {},
                             OmegaConf.from_dotlist(task_overrides(overrides or [])))
    out = OmegaConf.to_container(cfg, resolve=True)
    out["task"] = OmegaConf.to_container(merged, resolve=True)
    out["task"]["train"] = vars(train_config(out["task"].get("train", {})))
    try:
        norm_factory(cfg.norm.name, **(cfg.norm.options or {}))
    except ValueError as e:
        raise ConfigError(f"norm: {e}") from None
    if cfg.seed < 0:
        raise ConfigError(f"seed must be >= 0, got {cfg.seed}")
    return OmegaConf.create(out)


# Keys that may differ between an interrupted run and its resumption.
RUNTIME_KEYS = ("paths", "logger", "device", "progress", "threads")


def same_experiment(a: dict, b: dict) -> list[str]:
    """Dotted keys whose values differ, ignoring runtime-only keys."""
    diffs = []

    def walk(x, y, prefix):
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y)):
                if not prefix and k in RUNTIME_KEYS:
                    continue
                walk(x.get(k), y.get(k), f"{prefix}{k}.")
        elif x != y:
            diffs.append(prefix.rstrip("."))
    walk(a, b, "")
    return diffs
