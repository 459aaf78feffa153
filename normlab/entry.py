"""The installed commands' entry points (pyproject.toml [project.scripts]): each imports its
command's module inside a guard, so a Ctrl-C while torch and Hydra load (a second or more before
the command's own handling is in place) ends in one line with exit 130 instead of a traceback.
A leaf: it imports nothing heavy before the command does."""

from __future__ import annotations

import importlib
import signal
import sys

from .commands import COMMANDS
from .exitcodes import INTERRUPTED


def run(target: str, name: str) -> None:
    module, _, func = target.partition(":")
    try:
        main = getattr(importlib.import_module(module), func)
    except KeyboardInterrupt:  # the command's own handling is not in place yet
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut this line
        print(
            f"\n{name}: interrupted (Ctrl-C) while starting; nothing was written", file=sys.stderr
        )
        sys.exit(INTERRUPTED)
    sys.exit(main())


def _entry(name: str, target: str):
    def main() -> None:
        run(target, name)

    main.__name__ = main.__qualname__ = name.replace("-", "_")
    main.__doc__ = f"``{name}``: {target}, its module imported under the Ctrl-C guard."
    return main


# normlab_train, normlab_tune, ...: one per command of normlab.commands.COMMANDS
for _name, _target, _ in COMMANDS:
    globals()[_name.replace("-", "_")] = _entry(_name, _target)
