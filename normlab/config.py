"""The job's config: the trainer schema, and the checks Hydra cannot make.

Hydra does the one merge (configs/train.yaml's defaults list: trainer schema < task file <
preset/<task>/<scale>.yaml < command line) and checks key names (every node is in struct mode;
the top level is the typed ``normlab.schema.JobConfig``, ``task.train`` its ``TrainConfig``). What is left for ``load_job`` are value
ranges and cross-key rules (d_model divisible by heads, a positive batch, a valid norm option),
checked once before anything is written; the result is one ``Job`` that every later step takes.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import MISSING, dataclass, fields
from typing import Callable, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from .config_keys import CONFIGS, RUNTIME_KEYS
from .errors import ConfigError
from .models import placement
from .norms.sites import site_factory
from .schema import SCHEDULES, JobConfig, TrainConfig, check_accel, default

__all__ = [
    "CONFIGS",
    "RUNTIME_KEYS",
    "ConfigError",
    "Job",
    "TrainConfig",
    "compose_job",
    "load_job",
    "train_config",
]

# an experiment name is a folder name: no separators or "..", so a run never leaves paths.root
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


# configs/train.yaml: `job_schema` is the first entry of its defaults list, and
# `trainer@task.train: default` composes the trainer's schema under every task.
ConfigStore.instance().store(name="job_schema", node=JobConfig)
ConfigStore.instance().store(group="trainer", name="default", node=TrainConfig)


def _bad(key: str, value, want: str, *related: str) -> ConfigError:
    err = ConfigError(f"{key}={value!r}: {want}")
    err.keys = [key, *related]  # load_job adds where each value came from
    return err


def _type_ok(value, default) -> bool:
    if isinstance(value, bool):
        return isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    return isinstance(value, type(default))


def train_config(section: dict) -> TrainConfig:
    """A checked TrainConfig. Hydra has already checked names and types of a composed config;
    the checks are repeated here for configs read back from a run directory."""
    valid = [f.name for f in fields(TrainConfig)]
    unknown = sorted(set(section) - set(valid))
    if unknown:
        close = [
            f"task.train.{m[0]}" for k in unknown if (m := difflib.get_close_matches(k, valid, 1))
        ]
        raise ConfigError(
            f"unknown key(s) {[f'task.train.{k}' for k in unknown]}; valid keys: {valid}"
            + (f"; did you mean {', '.join(close)}?" if close else "")
        )
    for f in fields(TrainConfig):
        default = f.default if f.default is not MISSING else f.default_factory()
        if f.name in section and not _type_ok(section[f.name], default):
            raise _bad(
                f"task.train.{f.name}",
                section[f.name],
                f"expected a {type(default).__name__} like {default!r}",
            )
    t = TrainConfig(**section)
    # inf passes every "> 0" check and trains nothing; nan fails them (diverge_loss=inf: never)
    for f in fields(TrainConfig):
        v = getattr(t, f.name)
        if isinstance(v, float) and f.name != "diverge_loss" and not math.isfinite(v):
            raise _bad(f"task.train.{f.name}", v, "must be a finite number")
    checks = [
        ("lr", t.lr > 0, "the learning rate must be positive, e.g. 5e-4"),
        ("weight_decay", t.weight_decay >= 0, "must be >= 0 (0 = no decay)"),
        ("schedule", t.schedule in SCHEDULES, f"must be one of {list(SCHEDULES)}"),
        ("select", t.select in ("metric", "loss"), "must be 'metric' or 'loss'"),
        ("max_epochs", t.max_epochs >= 0, "must be >= 0"),
        ("max_steps", t.max_steps >= 0, "must be >= 0 (0 = use max_epochs)"),
        (
            "max_epochs",
            t.max_epochs > 0 or t.max_steps > 0,
            "set max_epochs or max_steps to a positive number",
        ),
        ("log_every", t.log_every > 0, "must be a positive number of steps"),
        (
            "diverge_loss",
            t.diverge_loss > 0,
            "must be positive (a train loss above it ends the run)",
        ),
        ("clip_norm", t.clip_norm >= 0, "must be >= 0 (0 = no clipping)"),
        ("update_freq", t.update_freq >= 1, "must be >= 1 micro-batches per optimizer step"),
    ] + [
        (k, getattr(t, k) >= 0, "must be >= 0 (0 = off)")
        for k in (
            "eval_every",
            "checkpoint_every",
            "patience",
            "probe_every",
            "warmup_steps",
            "scurve",
        )
    ]
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
                raise _bad(
                    f"{where}.d_model",
                    d,
                    f"must be positive and divisible by {where}.heads={h}; "
                    f"choose heads in {divisors} or another d_model",
                    f"{where}.heads",
                )
        for k, v in node.items():
            walk(v, f"{where}.{k}")

    walk(task.get("model"), "task.model")
    model = task.get("model") or {}
    bad = placement.problem(model) if "placement" in model else None
    if bad:
        key, value, want, related = bad
        raise _bad(f"task.model.{key}", value, want, *(f"task.model.{k}" for k in related))
    data = task.get("data") or {}
    sizes = {k: data[k] for k in ("batch_size", "max_tokens") if k in data}
    for k, v in sizes.items():
        if not isinstance(v, int) or v < 0:
            raise _bad(f"task.data.{k}", v, "must be a non-negative integer")
    if sizes and not any(sizes.values()):
        key = "batch_size" if "batch_size" in sizes else "max_tokens"
        raise _bad(
            f"task.data.{key}",
            sizes[key],
            "a batch needs a positive size: set task.data.batch_size "
            "(examples) or task.data.max_tokens (tokens) above 0",
        )


@dataclass
class Job:
    """One job's config, resolved and checked once."""

    cfg: DictConfig  # the composed config, interpolations resolved, read-only
    config: dict  # the same as plain data: what config.yaml holds
    train: TrainConfig
    setting: dict  # hyperparameters that differ from the task/norm/scale defaults
    make_norm: Callable  # the norm factory (dim -> module), its name and options checked once

    def __getattr__(self, key):  # job.task, job.norm, job.seed, ... read through to the config
        if key.startswith("_") or key in ("cfg", "config", "train", "setting", "make_norm"):
            raise AttributeError(key)
        return getattr(self.cfg, key)


# torch's generators take seeds below 2**64 and runs derive theirs as seed * 1_000_003 + ...
MAX_SEED = 2**32 - 1


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def check_int_sizes(node, where: str = "") -> None:
    """ConfigError for an integer that does not fit 64 bits (a 400-digit count reached torch as
    an overflow traceback)."""
    if isinstance(node, dict):
        for k, v in node.items():
            check_int_sizes(v, f"{where}.{k}" if where else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            check_int_sizes(v, f"{where}[{i}]")
    elif isinstance(node, int) and not isinstance(node, bool) and abs(node) >= 2**63:
        raise ConfigError(
            f"{where}={_short(node)}: larger than a 64-bit integer; fix it in the config file or "
            "on the command line"
        )


def load_job(cfg: DictConfig, overrides: Optional[list[str]] = None) -> Job:
    """Resolve and check ``cfg``; ConfigError names the key, where its value came from and the fix."""
    from .hints import origin
    from .loggers import check_flags
    from .setting import varied
    from .tasks import TASKS

    config = OmegaConf.to_container(cfg, resolve=True)
    check_int_sizes(config)
    task = config["task"]
    if task.get("name") not in TASKS:
        raise ConfigError(
            f"task.name: unknown task {task.get('name')!r}; valid tasks: {', '.join(sorted(TASKS))} "
            "(normlab/configs/task/<name>.yaml)"
        )
    try:
        train = train_config(task.get("train") or {})
        check_task(task)
    except ConfigError as e:
        if getattr(e, "keys", None):
            where = "; ".join(
                f"{k} {origin(k, task.get('name'), config.get('scale'), overrides or [])}"
                for k in e.keys
            )
            raise ConfigError(f"{e} ({where})") from None
        raise
    norm = config["norm"]
    try:
        make_norm = site_factory(norm)
    except ValueError as e:
        raise ConfigError(
            f"norm={norm['name']}: {e}; see "
            + (
                f"normlab/configs/norm/{norm['name']}.yaml"
                if norm["name"] in {f.stem for f in (CONFIGS / "norm").glob("*.yaml")}
                else "normlab/configs/norm/ and docs/norms.md"
            )
        ) from None
    try:
        check_accel(
            config.get("precision", default("precision")),
            config.get("compile", default("compile")),
            config.get("deterministic", default("deterministic")),
        )
    except ValueError as e:
        raise ConfigError(f"{e} (normlab/configs/train.yaml or the command line)") from None
    check_flags(config.get("logger") or {})  # each backend's flag, in its own logger/*.yaml
    name = config.get("name")
    if not isinstance(name, str) or not SAFE_NAME.fullmatch(name):
        raise ConfigError(
            f"name={_short(name)}: the experiment name is one folder of the run root "
            "(<paths.root>/<scale>/<name>/): letters, digits, '.', '_' and '-', at most 100, "
            "starting with a letter or digit"
        )
    seed = config.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"seed={_short(seed)}: must be an integer from 0 to {MAX_SEED}")
    threads = config.get("threads", 0)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise ConfigError(
            f"threads={threads!r}: must be an integer >= 1, or 0 for torch's default "
            "(normlab/configs/train.yaml or the command line)"
        )
    if config.get("resume", default("resume")) not in ("auto", "restart"):
        raise ConfigError(
            f"resume={config.get('resume')!r}: must be auto (go on from the newest readable checkpoint) "
            "or restart (an unfinished run starts over from step 0)"
        )
    if config.get("seed_role") not in (None, "selection", "evaluation"):
        raise ConfigError(
            f"seed_role={config.get('seed_role')!r}: must be selection, evaluation or null "
            "(normlab/configs/study/seeds.yaml)"
        )
    decl = config.get("declaration")
    if decl is not None and not (isinstance(decl, str) and re.fullmatch(r"[0-9a-f]{64}", decl)):
        raise ConfigError(
            f"declaration={decl!r}: the sha256 of a study's declaration (64 hex digits), set by "
            "the study driver (normlab/study/declaration.py), or null"
        )
    job_cfg = OmegaConf.create(config)
    OmegaConf.set_readonly(job_cfg, True)
    return Job(job_cfg, config, train, varied(config), make_norm)


def compose_job(overrides: list[str]) -> DictConfig:
    """The checked config normlab-train would run with these overrides, outside a Hydra app (a
    script, a benchmark). Importing this module registers the trainer schema that
    configs/train.yaml's defaults list names, which config_keys.compose alone cannot find."""
    from .config_keys import compose

    return load_job(compose(overrides), overrides).cfg
