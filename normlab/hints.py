"""Messages that point at the fix: where a value came from (file:line or the command line), and
for a key Hydra refused, the valid keys at that level and the closest one."""

from __future__ import annotations

import difflib
import re
from typing import Iterator, Optional

import yaml
from omegaconf import DictConfig, OmegaConf

from .config_keys import CONFIGS
from .norms.registry import norm_options


def yaml_line(path, keys: list[str]) -> Optional[int]:
    """The 1-based line of the dotted ``keys`` in a YAML file, or None."""
    try:
        node = yaml.compose(path.read_text())
    except (OSError, yaml.YAMLError):
        return None
    line = None
    for k in keys:
        if not isinstance(node, yaml.MappingNode):
            return None
        for kn, vn in node.value:
            if kn.value == k:
                line, node = kn.start_mark.line + 1, vn
                break
        else:
            return None
    return line


def origin(key: str, task_name: str, scale: str, overrides: list[str]) -> str:
    """Where a ``task.*`` value came from, in Hydra's merge order read backwards: the command line,
    the scale preset, the task file, or the trainer schema's default."""
    for o in reversed(overrides):  # the last one wins, in Hydra as here
        if o.lstrip("+~").split("=", 1)[0] == key:
            return f"set on the command line: {o}"
    sub = key.split(".")[1:]
    for where in (
        CONFIGS / "preset" / str(task_name) / f"{scale}.yaml",
        CONFIGS / "task" / f"{task_name}.yaml",
    ):
        line = yaml_line(where, sub)
        if line:
            return f"set in {where.relative_to(CONFIGS.parent.parent)}:{line}"
    if sub[:1] == ["train"]:
        return "the default in normlab.schema.TrainConfig"
    return "not set in any config file"


def _leaves(key: str, value) -> Iterator[tuple[str, object]]:
    """A dict override names keys at several levels: task.data.reader={split_sed: 7}."""
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from _leaves(f"{key}.{k}", v)
    else:
        yield key, value


def explain_unknown_keys(argv: list[str]) -> list[str]:
    """Hints for command-line keys Hydra refused as 'not in struct': the valid keys at that
    level and the closest one. Runs only after Hydra has already failed, so it costs nothing."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from .config_keys import compose

    try:
        parsed = OverridesParser.create().parse_overrides(
            [a for a in argv if not a.startswith("-")]
        )
        groups, keys = [], []
        for o in parsed:
            if o.is_delete() or o.key_or_group.startswith("hydra"):
                continue
            value = next(iter(o.sweep_iterator())) if o.is_sweep_override() else o.value()
            if "." not in o.key_or_group and not isinstance(value, dict):
                groups.append(f"{o.key_or_group}={value}")  # task=rt, norm=adanorm, scale=smoke
            elif not o.is_add():
                keys.extend(_leaves(o.key_or_group, value))
        cfg = compose(groups)
    except Exception:
        return []  # nothing to add to Hydra's own message
    hints = []
    for key, _ in keys:
        parts = key.split(".")
        for depth in range(1, len(parts)):
            parent, leaf = ".".join(parts[:depth]), parts[depth]
            node = OmegaConf.select(cfg, parent)
            if not isinstance(node, DictConfig) or leaf in node:
                continue
            valid = set(node.keys())
            if parent == "norm.options":  # options the norm accepts but its config file leaves out
                valid |= set(norm_options(cfg.norm.name)) - {"channels_first"}
            full = f"{parent}.{leaf}"
            if leaf in valid:
                hints.append(
                    f"normlab: error: {full} is valid but not in the config file; add it with "
                    f"+{full}=..."
                )
            else:
                # a looser cutoff than difflib's: lr_max is closest to lr, and a name is offered
                close = difflib.get_close_matches(leaf, sorted(valid), 1, cutoff=0.4)
                hints.append(
                    f"normlab: error: {full} is not a config key; valid keys under {parent}: "
                    f"{', '.join(sorted(valid))}"
                    + (f"; did you mean {parent}.{close[0]}?" if close else "")
                )
            break
    return hints


def composition_error(error: Exception, overrides: list[str]) -> list[str]:
    """What a command that composes the config itself prints when Hydra cannot: normlab's key
    hints first, then Hydra's message in one line (its options listed, the closest named)
    without its config search path or its advice to add a misspelled key with '+'."""
    hints = explain_unknown_keys([o for o in overrides if "=" in o])
    text = str(error).split("Config search path")[0]
    lines = [ln for ln in text.splitlines() if ln.strip()] or [type(error).__name__]
    first, options = lines[0].strip(), [ln.strip() for ln in lines[1:] if ln[:1] in "\t "]
    line = f"normlab: could not compose the config: {first}"
    if options:
        line += f"; available: {', '.join(options)}"
        missing = re.search(r"Could not find '([^/']+)/([^']+)'", first)
        close = missing and difflib.get_close_matches(missing.group(2), options, 1)
        if close:
            line += f"; did you mean {missing.group(1)}={close[0]}?"
    return hints + [line]
