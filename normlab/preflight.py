"""What ``normlab-train`` checks on its command line before Hydra composes anything, so that a
typo gets normlab's one line first instead of Hydra's dump with its config search path and its
advice to add a misspelled key with '+':

- a choice of a config group that does not exist (``norm=rmsnrom``, ``task=sst-2``,
  ``scale=smol``, every value of a sweep): one line per choice with the options there are (the
  user's own packages' included, through Hydra's search path) and the closest; exit 2;
- a key no config has (``task.train.lrr=1e-3``) in a single run: normlab's line with the valid keys
  at that level and the closest (hints.explain_unknown_keys); exit 2, as a wrong choice. A sweep's
  keys are left to the sweeper, which reports each point that cannot be composed.
"""

from __future__ import annotations

import difflib
from typing import Optional

from . import exitcodes
from .config_keys import CONFIGS

# the config groups a command line chooses from (hydra/... is Hydra's own)
GROUPS = tuple(sorted(p.name for p in CONFIGS.iterdir() if p.is_dir() and p.name != "hydra"))
HELP = ("--help", "-h", "--hydra-help", "--info", "--cfg", "-c", "--shell-completion")


def _parse(argv: list[str]):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create().parse_overrides([a for a in argv if not a.startswith("-")])


def _values(o) -> list:
    if o.is_sweep_override():
        return list(o.sweep_iterator())
    v = o.value()
    return list(v) if isinstance(v, list) else [v]


def choice_errors(argv: list[str]) -> list[str]:
    """One line per chosen config that its group does not have; [] when every choice exists or
    the line cannot be parsed (Hydra then says why)."""
    wanted = [a for a in argv if a.lstrip("+").split("=", 1)[0] in GROUPS]
    if not wanted:
        return []
    try:
        parsed = _parse(wanted)
    except Exception:
        return []
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    lines = []
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        for o in parsed:
            if o.is_delete():
                continue
            group = o.key_or_group
            options = loader.get_group_options(group)
            for v in _values(o):
                if v is None or str(v) in options:
                    continue
                close = difflib.get_close_matches(str(v), options, 1, cutoff=0.5)
                lines.append(
                    f"normlab: error: {group}={v}: no such {group} config; available: "
                    f"{', '.join(options)}"
                    + (f"; did you mean {group}={close[0]}?" if close else "")
                )
    return lines


def key_errors(argv: list[str]) -> list[str]:
    """normlab's lines for keys no config has, in a single run (no sweep on the line)."""
    keys = [a for a in argv if "=" in a and "." in a.split("=", 1)[0] and not a.startswith("-")]
    if not keys or any(a in ("-m", "--multirun") for a in argv):
        return []
    try:
        if any(o.is_sweep_override() for o in _parse(argv)):
            return []
    except Exception:
        return []
    from . import config  # noqa: F401  (registers the schema the composition needs)
    from .hints import explain_unknown_keys

    return explain_unknown_keys(argv)


def check(argv: list[str]) -> Optional[tuple[int, list[str]]]:
    """(exit code, lines) when the command line names a config or key that does not exist;
    None when it may go on to Hydra."""
    if any(a in HELP or a.startswith("--cfg") for a in argv):
        return None
    if lines := choice_errors(argv):
        return exitcodes.BAD_INPUT, lines
    if lines := key_errors(argv):
        return exitcodes.BAD_INPUT, lines
    return None
