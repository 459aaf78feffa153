"""Tasks: each one module of this package (or of an installed package's ``normlab.tasks`` entry
point) registered with ``register_task``, plus ``normlab/configs/task/<name>.yaml``."""

from __future__ import annotations

import sys

from .. import plugins
from .base import Task
from .registry import ENTRY_POINTS, TASKS, get_task_class, register_task

__all__ = ["TASKS", "Task", "discover", "get_task_class", "register_task"]


def discover() -> list[str]:
    """Import the modules of this package and the ``normlab.tasks`` entry points (a module that
    registers its tasks, or a Task class registered under the entry point's name; a broken one is
    named on stderr and skipped). Returns the names it added."""
    return plugins.discover(
        sys.modules[__name__], TASKS, register_task, ENTRY_POINTS, "task", skip=("base", "registry")
    )


# Last, once every name above is bound: a task module imports them from this package.
discover()
