"""TASKS: the one registry of tasks. A task is registered where it is written::

    @register_task("mytask")
    class MyTask(Task): ...

with ``normlab/configs/task/mytask.yaml`` (``name: mytask``) beside it; presets per scale
(``preset/mytask/<scale>.yaml``) are optional. Tasks are found in every module of the
``normlab.tasks`` package and in the ``normlab.tasks`` entry points of installed packages
(``normlab.tasks.discover``), so a task of one's own package runs without editing normlab.
"""

from __future__ import annotations

from ..plugins import qualname

TASKS: dict[str, type] = {}
ENTRY_POINTS = "normlab.tasks"


def register_task(name: str):
    """Decorator: register a Task subclass as ``name`` (its ``name`` attribute is set to it). A
    second, different task of one name is an error (a plugin must not silently replace one)."""

    def add(cls):
        from .base import Task

        if not (isinstance(cls, type) and issubclass(cls, Task)):
            raise TypeError(f"register_task({name!r}): {qualname(cls)} is not a Task subclass")
        if cls.__dict__.get("name") not in (None, "", name):
            raise ValueError(
                f"register_task({name!r}): {qualname(cls)} says its name is {cls.name!r}"
            )
        old = TASKS.get(name)
        if old is not None and qualname(old) != qualname(cls):
            raise ValueError(
                f"task {name!r} is registered twice: {qualname(old)} and {qualname(cls)}"
            )
        cls.name = name
        TASKS[name] = cls
        return cls

    return add


def get_task_class(name: str) -> type:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; valid tasks: {', '.join(sorted(TASKS))}")
    return TASKS[name]
