"""A trained run back in memory: its recorded config (evaluation keys may be overridden), its task
and data, and its model with one checkpoint's weights. What ``normlab-eval`` and ``normlab-export``
start from; every failure on user input is a ConfigError or DataError naming the file or key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import torch
import yaml
from omegaconf import OmegaConf

from ..config import Job, load_job
from ..errors import CheckpointError, ConfigError
from ..files import RefusedYaml, read_yaml
from ..rundir import Checkpoints
from ..schema import default

# Keys that change how a run is evaluated, never what was trained. The first group changes no
# number beyond float rounding (where the run is evaluated, how big its batches are).
NEUTRAL_KEYS = (
    "device",
    "threads",
    "progress",
    "paths.data_dir",
    "paths.cache_dir",
    "task.data.eval_batch_size",
    "task.data.eval_max_tokens",
    "task.eval.batch_size",
)
EVAL_KEYS = NEUTRAL_KEYS + ("task.eval.", "task.data.eval_len")
CHECKPOINTS = ("best", "last")


def parse_overrides(items: Sequence[str]) -> list[tuple[str, Any]]:
    """[(key, value)] of ``key=value`` items (values parsed as YAML, as Hydra does); ConfigError for
    a training key or a malformed item."""
    out = []
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip().lstrip("+")
        if not sep or not key:
            raise ConfigError(f"{item!r}: an override is key=value, e.g. task.eval.beam=4")
        if not any(key == k or (k.endswith(".") and key.startswith(k)) for k in EVAL_KEYS):
            allowed = ", ".join(k + "*" if k.endswith(".") else k for k in EVAL_KEYS)
            raise ConfigError(
                f"{key}: a training key; only evaluation keys may change ({allowed}); to change "
                "training, train a new run"
            )
        try:
            value = yaml.safe_load(text) if text else None
        except yaml.YAMLError:
            value = text
        out.append((key, value))
    return out


def changes_numbers(overrides: Sequence[tuple[str, Any]], config: dict) -> bool:
    """Whether the overrides change what is computed from the run's recorded ``config`` (another
    beam, context length), so that the run's recorded metrics are no reference for them."""
    cfg = OmegaConf.create(config)
    return any(
        key not in NEUTRAL_KEYS and OmegaConf.select(cfg, key, default=None) != value
        for key, value in overrides
    )


def read_config(run_dir: Path) -> dict:
    path = Path(run_dir) / "config.yaml"
    if not Path(run_dir).is_dir():
        raise ConfigError(
            f"{run_dir}: not a directory; give a run directory "
            "(runs/<scale>/<name>/<task>/<norm>/seed<N>)"
        )
    if not path.is_file():
        raise ConfigError(f"{path}: missing; {run_dir} is not a normlab run directory")
    try:
        config = read_yaml(path)
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ConfigError(
            f"{path}: cannot be read as YAML ({type(e).__name__}); restore the file"
        ) from None
    except RefusedYaml as e:  # anchors and aliases: refused before they expand
        raise ConfigError(str(e)) from None
    if (
        not isinstance(config, dict)
        or not isinstance(config.get("task"), dict)
        or "norm" not in config
    ):
        raise ConfigError(
            f"{path}: not a normlab run config (no task or norm section); restore the file"
        )
    return config


def apply(config: dict, overrides: Sequence[tuple[str, Any]], run_dir: Path) -> dict:
    """``config`` with each override set; the key must exist in the run's config."""
    config = OmegaConf.create(config)
    for key, value in overrides:
        if OmegaConf.select(config, key, default=KeyError) is KeyError:
            task = OmegaConf.select(config, "task.name")
            raise ConfigError(
                f"{key}: run {run_dir} (task {task}) has no such key; see its config.yaml"
            )
        OmegaConf.update(config, key, value, merge=False)
    return OmegaConf.to_container(config)


def default_paths(config: dict, overrides: Sequence[tuple[str, Any]]) -> dict:
    """The data and cache folders as this machine has them: a recorded folder that is not here
    (a run trained elsewhere) gives way to $NORMLAB_DATA / $NORMLAB_CACHE, else ./data and ./.cache."""
    given = {k for k, _ in overrides}
    paths = dict(config.get("paths") or {})
    defaults = {
        "data_dir": os.environ.get("NORMLAB_DATA", "data"),
        "cache_dir": os.environ.get("NORMLAB_CACHE", ".cache/normlab"),
    }
    for key, fallback in defaults.items():
        if f"paths.{key}" not in given and (not paths.get(key) or not Path(paths[key]).exists()):
            paths[key] = str(Path(fallback).resolve())
    return {**config, "paths": paths}


def checkpoint_file(run_dir: Path, which: str) -> Path:
    """The file of ``--checkpoint best|last|PATH``; ConfigError naming what is missing."""
    if which not in CHECKPOINTS:
        path = Path(which)
        if not path.is_file():
            raise ConfigError(
                f"--checkpoint {which}: no such file; use best, last or a checkpoint file"
            )
        return path
    path = Checkpoints(run_dir).dir / f"{which}.pt"
    if not path.is_file():
        found = sorted(p.name for p in path.parent.glob("*.pt")) if path.parent.is_dir() else []
        there = "found " + ", ".join(found) if found else "no checkpoints/ folder"
        raise ConfigError(
            f"{run_dir}: no checkpoint {path.name} ({there}"
            "); committed run copies keep none: evaluate the run directory that trained it"
        )
    return path


def load_weights(path: Path) -> tuple[dict, int]:
    """(model state dict, step) of a checkpoint file: best.pt holds {model, step}, last.pt the full state."""
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise CheckpointError(
            f"{path}: unreadable ({type(e).__name__}); restore it or use another --checkpoint"
        ) from None
    if not isinstance(ck, dict) or "model" not in ck:
        raise CheckpointError(f"{path}: not a normlab checkpoint (no 'model' entry)")
    step = ck.get("step", (ck.get("state") or {}).get("step", -1))
    return ck["model"], int(step)


@dataclass
class Restored:
    run_dir: Path
    job: Job
    task: Any
    model: torch.nn.Module
    checkpoint: Path
    step: int
    device: torch.device
    recorded: dict  # config.yaml as the run wrote it, before the overrides


def restore(
    run_dir: Path,
    which: str = "best",
    overrides: Sequence[tuple[str, Any]] = (),
    device: Optional[str] = None,
) -> Restored:
    """The run's task (data set up) and model (eval mode, on its device) with the checkpoint's weights."""
    from ..tasks import get_task_class
    from . import accel, distributed

    run_dir = Path(run_dir)
    recorded = read_config(run_dir)
    config = default_paths(apply(recorded, overrides, run_dir), overrides)
    job = load_job(OmegaConf.create(config))
    path = checkpoint_file(run_dir, which)
    state, step = load_weights(path)
    dev = distributed.pick_device(device or job.get("device", default("device")))
    task = get_task_class(job.task.name)(
        job.cfg.task, Path(job.paths.data_dir) / job.task.name, Path(job.paths.cache_dir)
    )
    task.run_seed = job.seed
    task.setup()
    accel.set_determinism(job, dev)
    model = task.build_model(job.make_norm)
    try:
        model.load_state_dict(state)
    except RuntimeError as e:
        raise CheckpointError(
            f"{path}: its weights do not fit the model of {run_dir / 'config.yaml'} "
            f"({str(e).splitlines()[0][:200]})"
        ) from None
    return Restored(run_dir, job, task, model.to(dev).eval(), path, step, dev, recorded)
