"""Config resolution: task scales, trainer defaults, and validation with named keys."""
from __future__ import annotations

import difflib
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Optional

import yaml
from omegaconf import DictConfig, OmegaConf

from . import accel
from .norms import norm_factory
from .norms.registry import norm_options
from .schedule import SCHEDULES


# An absolute path: Hydra would resolve "../configs" against the package, not the repository.
CONFIGS = Path(__file__).resolve().parents[1] / "configs"


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
    update_freq: int = 1               # micro-batches per optimizer step (fairseq --update-freq)


def _check_keys(section: dict, valid: list[str], where: str) -> None:
    unknown = sorted(set(section) - set(valid))
    if unknown:
        hints = [f"did you mean {where}.{m[0]}?" for k in unknown if (m := difflib.get_close_matches(k, valid, 1))]
        raise ConfigError(f"unknown key(s) {[f'{where}.{k}' for k in unknown]}; valid keys: {sorted(valid)}"
                          + (f" ({'; '.join(hints)})" if hints else ""))


def _bad(key: str, value, want: str, *related: str) -> ConfigError:
    err = ConfigError(f"{key}={value!r}: {want}")
    err.keys = [key, *related]  # resolve() adds where each value came from
    return err


def _type_ok(value, default) -> bool:
    if isinstance(value, bool):
        return isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    return isinstance(value, type(default))


def train_config(section: dict) -> TrainConfig:
    valid = [f.name for f in fields(TrainConfig)]
    _check_keys(section, valid, "task.train")
    for f in fields(TrainConfig):  # types first, so the range checks below cannot crash
        default = f.default if f.default is not MISSING else f.default_factory()
        if f.name in section and not _type_ok(section[f.name], default):
            raise _bad(f"task.train.{f.name}", section[f.name],
                       f"expected a {type(default).__name__} like {default!r}")
    t = TrainConfig(**section)
    checks = [
        ("lr", t.lr > 0, "the learning rate must be positive, e.g. 5e-4"),
        ("weight_decay", t.weight_decay >= 0, "must be >= 0 (0 = no decay)"),
        ("schedule", t.schedule in SCHEDULES, f"must be one of {list(SCHEDULES)}"),
        ("select", t.select in ("metric", "loss"), "must be 'metric' or 'loss'"),
        ("max_epochs", t.max_epochs >= 0, "must be >= 0"),
        ("max_steps", t.max_steps >= 0, "must be >= 0 (0 = use max_epochs)"),
        ("max_epochs", t.max_epochs > 0 or t.max_steps > 0, "set max_epochs or max_steps to a positive number"),
        ("log_every", t.log_every > 0, "must be a positive number of steps"),
        ("diverge_loss", t.diverge_loss > 0, "must be positive (a train loss above it ends the run)"),
        ("clip_norm", t.clip_norm >= 0, "must be >= 0 (0 = no clipping)"),
        ("update_freq", t.update_freq >= 1, "must be >= 1 micro-batches per optimizer step"),
    ] + [(k, getattr(t, k) >= 0, "must be >= 0 (0 = off)")
         for k in ("eval_every", "checkpoint_every", "patience", "probe_every", "warmup_steps")]
    for key, ok, want in checks:
        if not ok:
            raise _bad(f"task.train.{key}", getattr(t, key), want)
    return t


def check_task(task: dict) -> None:
    """Hyperparameters every task shares, checked before anything is built."""
    def walk(node, where):
        if not isinstance(node, dict):
            return
        d, h = node.get("d_model"), node.get("heads")
        if isinstance(d, int) and isinstance(h, int):
            if h <= 0:
                raise _bad(f"{where}.heads", h, "must be a positive number of attention heads")
            if d <= 0 or d % h:
                divisors = [k for k in range(1, min(d, 16) + 1) if d > 0 and d % k == 0]
                raise _bad(f"{where}.d_model", d, f"must be positive and divisible by {where}.heads={h}; "
                           f"choose heads in {divisors} or another d_model", f"{where}.heads")
        for k, v in node.items():
            walk(v, f"{where}.{k}")
    walk(task.get("model"), "task.model")
    data = task.get("data") or {}
    sizes = {k: data[k] for k in ("batch_size", "max_tokens") if k in data}
    for k, v in sizes.items():
        if not isinstance(v, int) or v < 0:
            raise _bad(f"task.data.{k}", v, "must be a non-negative integer")
    if sizes and not any(sizes.values()):
        key = "batch_size" if "batch_size" in sizes else "max_tokens"
        raise _bad(f"task.data.{key}", sizes[key], "a batch needs a positive size: set task.data.batch_size "
                   "(examples) or task.data.max_tokens (tokens) above 0")


def yaml_line(path: Path, keys: list[str]) -> Optional[int]:
    """The 1-based line of the dotted ``keys`` in a YAML file, or None."""
    try:
        node = yaml.compose(path.read_text())
    except (OSError, yaml.YAMLError):
        return None
    line = None
    for k in keys:
        if not isinstance(node, yaml.MappingNode):
            return None
        for kn, vn in node.value:
            if kn.value == k:
                line, node = kn.start_mark.line + 1, vn
                break
        else:
            return None
    return line


def origin(key: str, task_name: str, scale: str, overrides: list[str]) -> str:
    """Where a ``task.*`` value came from: the command line, the task file's scale preset, the
    task file, or the trainer defaults (file:line)."""
    for o in overrides:
        if o.lstrip("+~").split("=", 1)[0] == key:
            return f"set on the command line: {o}"
    sub = key.split(".")[1:]
    path = CONFIGS / "task" / f"{task_name}.yaml"
    for where, keys in ((path, ["scales", scale, *sub]), (path, sub),
                        (CONFIGS / "trainer" / "default.yaml", sub[1:] if sub[:1] == ["train"] else None)):
        line = yaml_line(where, keys) if keys else None
        if line:
            return f"set in {where.relative_to(CONFIGS.parent)}:{line}"
    return "not set in any config file"


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
    overrides = list(overrides or [])
    task = OmegaConf.to_container(cfg.task, resolve=True)
    scales = task.pop("scales", None) or {}
    if cfg.scale not in scales:
        raise ConfigError(f"scale={cfg.scale!r} is not defined for task {task.get('name')!r}; "
                          f"valid scales: {sorted(scales)} (configs/task/{task.get('name')}.yaml)")
    merged = OmegaConf.merge(task, scales[cfg.scale] or {}, OmegaConf.from_dotlist(task_overrides(overrides)))
    out = OmegaConf.to_container(cfg, resolve=True)
    out["task"] = OmegaConf.to_container(merged, resolve=True)
    try:
        out["task"]["train"] = vars(train_config(out["task"].get("train", {})))
        check_task(out["task"])
    except ConfigError as e:
        if getattr(e, "keys", None):
            where = "; ".join(f"{k} {origin(k, task.get('name'), cfg.scale, overrides)}" for k in e.keys)
            raise ConfigError(f"{e} ({where})") from None
        raise
    try:
        norm_factory(cfg.norm.name, **(cfg.norm.options or {}))
    except ValueError as e:
        raise ConfigError(f"norm={cfg.norm.name}: {e}; see configs/norm/{cfg.norm.name}.yaml") from None
    try:
        accel.check(cfg.get("precision", "fp32"), cfg.get("compile", False), cfg.get("deterministic", True))
    except ValueError as e:
        raise ConfigError(f"{e} (configs/train.yaml or the command line)") from None
    if not isinstance(cfg.seed, int) or cfg.seed < 0:
        raise ConfigError(f"seed={cfg.seed!r}: must be an integer >= 0")
    return OmegaConf.create(out)


def explain_unknown_keys(argv: list[str]) -> list[str]:
    """Hints for command-line keys Hydra refused as 'not in struct': the valid keys at that
    level and the closest one. Runs only after Hydra has already failed, so it costs nothing."""
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides([a for a in argv if not a.startswith("-")])
        simple, dotted = [], []
        for o in parsed:
            if o.is_add() or o.is_delete() or o.key_or_group.startswith("hydra"):
                continue
            value = next(iter(o.sweep_string_iterator())) if o.is_sweep_override() else o.get_value_element_as_str()
            (dotted if "." in o.key_or_group else simple).append((o.key_or_group, value))
        with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
            cfg = compose("train", overrides=[f"{k}={v}" for k, v in simple])
    except Exception:
        return []  # nothing to add to Hydra's own message
    hints = []
    for key, _ in dotted:
        parent, leaf = key.rsplit(".", 1)
        node = OmegaConf.select(cfg, parent)
        if not isinstance(node, DictConfig) or leaf in node:
            continue
        valid = set(node.keys())
        if parent == "norm.options":  # options the norm accepts but its config file leaves out
            valid |= set(norm_options(cfg.norm.name)) - {"channels_first"}
        if leaf in valid:
            hints.append(f"normlab: {key} is valid but not in the config file; add it with +{key}=...")
            continue
        close = difflib.get_close_matches(leaf, sorted(valid), 1)
        hints.append(f"normlab: {key} is not a config key; valid keys under {parent}: {sorted(valid)}"
                     + (f"; did you mean {parent}.{close[0]}?" if close else ""))
    return hints


# Keys that may differ between an interrupted run and its resumption.
RUNTIME_KEYS = ("paths", "logger", "device", "progress", "threads", "compile")


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
