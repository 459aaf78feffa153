"""Finding what registers itself: every module of a package, and the installed packages' entry
points. Norms, tasks and loggers are each found this way, so one of the user's own package runs
without editing normlab."""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import pkgutil
import sys
from types import ModuleType
from typing import Callable


def import_modules(package: ModuleType, skip: tuple[str, ...] = ()) -> None:
    """Import every module of ``package`` (its registrations run on import), in name order."""
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name not in skip:
            importlib.import_module(f"{package.__name__}.{info.name}")


def load_entry_points(group: str, kind: str, register: Callable[[str, object], None]) -> None:
    """Load the ``group`` entry points of installed packages. One naming a module registers on
    import; one naming an object is passed to ``register(entry point name, object)``. A plugin
    that fails is named on stderr and skipped: one broken plugin does not stop the shipped ones."""
    for ep in sorted(importlib.metadata.entry_points(group=group), key=lambda e: e.name):
        try:
            obj = ep.load()
            if not inspect.ismodule(obj):
                register(ep.name, obj)
        except Exception as e:  # a plugin's own bug: name it, keep the rest usable
            print(
                f"normlab: {kind} plugin {ep.name!r} ({ep.value}) is skipped: "
                f"{type(e).__name__}: {e}",
                file=sys.stderr,
            )


def qualname(obj) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def discover(
    package: ModuleType,
    registry: dict,
    register: Callable,
    group: str,
    kind: str,
    skip: tuple[str, ...] = (),
) -> list[str]:
    """Import ``package``'s modules and the ``group`` entry points into ``registry``; an entry point
    naming an object is added by ``register(name)(object)`` unless the name is taken. Returns the
    names it added."""
    before = set(registry)
    import_modules(package, skip)

    def add(name, obj):
        if name not in registry:
            register(name)(obj)

    load_entry_points(group, kind, add)
    return sorted(set(registry) - before)
