"""LOGGERS: the one registry of metric backends beside curves.jsonl. A backend is registered where
it is written, by the name of its flag::

    @register_logger("mylogger")
    def build(run: LoggerRun):  # -> an object with log(metrics, step) and close(exit_code, summary)
        return MyLogger(run.run_dir, **run.options.get("mylogger_options", {}))

with ``normlab/configs/logger/mylogger.yaml`` saying ``mylogger: true`` (and its options): that
file is the flag's one place, and Hydra selects several backends at once
(``'logger=[wandb,mylogger]'``). Backends are found in every module of the ``normlab.loggers``
package and in the ``normlab.loggers`` entry points of installed packages
(``normlab.loggers.discover``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import ConfigError
from ..plugins import qualname

LOGGERS: dict[str, Callable[[LoggerRun], Any]] = {}
ENTRY_POINTS = "normlab.loggers"


@dataclass
class LoggerRun:
    """What a backend may read of the job it logs."""

    job: Any  # normlab.config.Job: job.task.name, job.norm.name, job.seed, ...
    config: dict  # the resolved config (config.yaml)
    run_dir: Path
    task: Any  # the built Task: task.metric, task.higher_is_better
    options: dict  # the logger config section (every backend's flag and options)
    setting: dict  # the varied hyperparameters ({"C": 2}), scalars only
    step: int  # 0, or the step a resumed job continues from
    checkpoint: Optional[dict] = None
    # saved with every checkpoint, so a resumed job can continue e.g. the same wandb run
    extra: dict = field(default_factory=dict)


def register_logger(name: str):
    """Decorator: register ``build(run: LoggerRun) -> logger or None`` as the backend switched on
    by ``logger.<name>: true``. A second, different builder of one name is an error."""

    def add(build):
        old = LOGGERS.get(name)
        if old is not None and qualname(old) != qualname(build):
            raise ValueError(
                f"logger {name!r} is registered twice: {qualname(old)} and {qualname(build)}"
            )
        LOGGERS[name] = build
        return build

    return add


def check_flags(options: dict) -> list[str]:
    """The backends ``options`` (the logger config section) switches on, in name order; a flag
    that is not a boolean is a ConfigError naming it."""
    on = []
    for name in sorted(LOGGERS):
        value = options.get(name, False)
        if not isinstance(value, bool):
            raise ConfigError(
                f"logger.{name}={value!r}: must be true or false (normlab/configs/logger/*.yaml)"
            )
        if value:
            on.append(name)
    return on
