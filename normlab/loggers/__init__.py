"""Metric loggers. curves.jsonl (LocalLogger) always runs and is the source of truth; wandb and
TensorBoard are optional views of the same records, each switched on by its own boolean in
``normlab/configs/logger/*.yaml`` (``logger=wandb``, ``logger=tensorboard``, ``logger=all``, or
``logger.tensorboard=true`` on top of any of them)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..errors import ConfigError
from .base import LocalLogger, MultiLogger, check_setting, run_name, setting_tags
from .tensorboard import TensorBoardLogger, hparams_of
from .wandb_logger import WandbLogger

__all__ = ["LocalLogger", "MultiLogger", "TensorBoardLogger", "WandbLogger", "make_loggers"]

BACKENDS = ("wandb", "tensorboard")


def make_loggers(
    job,
    config: dict,
    run_dir: Path,
    curves,
    task,
    checkpoint: Optional[dict],
    extra: dict,
    setting: Optional[dict] = None,
) -> MultiLogger:
    """The loggers ``job.logger`` asks for. ``setting``: the job's varied hyperparameters
    ({"C": 2, "lr": 0.001}, normlab.setting) for run names, tags and hparams. ``extra`` is saved
    with each checkpoint, so a resumed job continues the same wandb run."""
    lcfg = dict(job.logger)
    for k in BACKENDS:
        if not isinstance(lcfg.get(k, False), bool):
            raise ConfigError(
                f"logger.{k}={lcfg[k]!r}: must be true or false (normlab/configs/logger/*.yaml)"
            )
    setting = check_setting(setting)
    # a resumed job hides TensorBoard events after its checkpoint, as curves.jsonl drops them
    step = checkpoint["state"]["step"] if checkpoint else 0
    wandb = tb = None
    if lcfg.get("wandb"):
        lcfg.setdefault("run_name", run_name(job.task.name, job.norm.name, job.seed, setting))
        lcfg["tags"] = list(lcfg.get("tags") or []) + setting_tags(setting)
        wandb = WandbLogger(
            lcfg,
            config,
            str(run_dir),
            run_id=(checkpoint or {}).get("wandb_id"),
            metric=task.metric,
            higher_is_better=task.higher_is_better,
        )
        extra["wandb_id"] = wandb.run_id
    if lcfg.get("tensorboard"):
        tb = TensorBoardLogger(run_dir, hparams_of(config, setting), purge_step=step)
    return MultiLogger(LocalLogger(curves), wandb, tb)
