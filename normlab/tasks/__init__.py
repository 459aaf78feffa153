"""Tasks: each one module of this package (or of an installed package's ``normlab.tasks`` entry
point) registered with ``register_task``, plus ``normlab/configs/task/<name>.yaml``."""

from __future__ import annotations

from .base import Task
from .registry import TASKS, discover, get_task_class, register_task

__all__ = ["TASKS", "Task", "discover", "get_task_class", "register_task"]

# Last, once every name above is bound: a task module imports them from this package.
discover()
