"""Metric loggers. curves.jsonl (LocalLogger) always runs and is the source of truth; every other
backend (wandb, TensorBoard, or one's own: normlab.loggers.registry) is an optional view of the
same records, switched on by its flag in its own ``normlab/configs/logger/<name>.yaml``
(``logger=wandb``, ``logger=all``, ``'logger=[wandb,tensorboard]'``)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from .base import LocalLogger, MultiLogger, check_setting
from .registry import LOGGERS, LoggerRun, check_flags, discover, register_logger

__all__ = [
    "LOGGERS",
    "LocalLogger",
    "LoggerRun",
    "MultiLogger",
    "discover",
    "make_loggers",
    "register_logger",
]


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
    options = dict(job.logger)
    on = check_flags(options)
    run = LoggerRun(
        job=job,
        config=config,
        run_dir=Path(run_dir),
        task=task,
        options=options,
        setting=check_setting(setting),
        # a resumed job hides TensorBoard events after its checkpoint, as curves.jsonl drops them
        step=checkpoint["state"]["step"] if checkpoint else 0,
        checkpoint=checkpoint,
        extra=extra,
    )
    return MultiLogger(LocalLogger(curves), *(LOGGERS[name](run) for name in on))


# Last, once every name above is bound: a backend module imports them from this package.
discover()
