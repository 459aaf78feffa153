"""Everything a job checks before it writes a byte: the config, an earlier run in the same
directory, the folders it writes, the task and its data. A user error here (ConfigError,
DataError) leaves the run directory as it was."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import yaml
from omegaconf import DictConfig

from ..config import load_job
from ..errors import ConfigError, DataError
from ..experiment import same_experiment
from ..files import RefusedYaml, read_yaml
from ..progress import enable_bars
from ..rundir import FINAL, read_summary
from ..tasks import get_task_class
from . import distributed

USER_ERRORS = (ConfigError, DataError)


def check_run_dir(run_dir: Path, config: dict) -> Optional[dict]:
    """The finished run's summary if ``run_dir`` holds one for this config (skip it); raises
    ConfigError if it holds a run with another config; None when there is something to do."""
    old_cfg = run_dir / "config.yaml"
    if old_cfg.exists():
        try:
            old = read_yaml(old_cfg)  # safe YAML: tags that would build Python objects are errors
        except (yaml.YAMLError, RefusedYaml) as e:
            why = str(e) if isinstance(e, RefusedYaml) else type(e).__name__
            raise ConfigError(
                f"{old_cfg} is not a plain YAML config ({why}); it was not written by normlab: "
                "delete that run directory or use another name=..."
            ) from None
        diffs = same_experiment(old if isinstance(old, dict) else {}, config)
        if diffs:
            raise ConfigError(
                f"{run_dir} already holds a run with a different config (keys {diffs}); "
                "use another name=... or paths.root=..., or delete that directory"
            )
    summary = read_summary(run_dir / "summary.json")
    if summary.get("status") in FINAL:
        return summary
    return None


def writable(folder: Path, key: str, env: str) -> None:
    """ConfigError unless ``folder`` exists or can be made, and can be written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(
            f"{key}={folder}: cannot create it ({e.strerror}); set {key}=... or {env} to a folder "
            "you can write"
        ) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(
            f"{key}={folder}: not writable; set {key}=... or {env} to a folder you can write"
        )


def prepare(
    cfg: DictConfig,
    run_dir: Path,
    overrides: Optional[list[str]] = None,
    ctx: Optional[distributed.Dist] = None,
):
    """Everything that can fail on bad input, before anything is written to ``run_dir``.
    Returns (job, task, finished summary or None)."""
    ctx = ctx or distributed.Dist()
    job = load_job(cfg, overrides)
    try:
        task_cls = get_task_class(job.task.name)
    except ValueError as e:
        raise ConfigError(f"task.name: {e} (normlab/configs/task/<name>.yaml)") from None
    enable_bars(
        bool(job.progress) and ctx.main
    )  # evaluation, decoding and BPE bars (normlab/progress.py)
    done = distributed.on_main(ctx, lambda: check_run_dir(run_dir, job.config), USER_ERRORS)
    if done is not None:
        return job, None, done
    writable(Path(job.paths.cache_dir), "paths.cache_dir", "NORMLAB_CACHE")
    data_dir = Path(job.paths.data_dir) / job.task.name
    task = task_cls(job.cfg.task, data_dir, Path(job.paths.cache_dir))
    task.run_seed = job.seed
    distributed.main_first(
        ctx, task.setup, USER_ERRORS
    )  # rank 0 fills the cache, then the others read it
    return job, task, None
