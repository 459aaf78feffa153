"""Metric loggers. curves.jsonl (LocalLogger) always runs and is the source of truth; every other
backend (wandb, TensorBoard, or one's own: normlab.loggers.registry) is an optional view of the
same records, switched on by its flag in its own ``normlab/configs/logger/<name>.yaml``
(``logger=wandb``, ``logger=all``, ``'logger=[wandb,tensorboard]'``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from .. import plugins
from .base import LocalLogger, MultiLogger, check_setting
from .registry import ENTRY_POINTS, LOGGERS, LoggerRun, check_flags, register_logger

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


def discover() -> list[str]:
    """Import the modules of this package and the ``normlab.loggers`` entry points (a module that
    registers its backends, or a builder registered under the entry point's name; a broken one is
    named on stderr and skipped). Returns the names it added."""
    return plugins.discover(
        sys.modules[__name__],
        LOGGERS,
        register_logger,
        ENTRY_POINTS,
        "logger",
        skip=("base", "registry"),
    )


# Last, once every name above is bound: a backend module imports them from this package.
discover()
