"""A study's own axis among the runs' settings, e.g. the placement: a key that several norms ran
at several values of, in one task. Comparing norms is only fair within one value of such a key, so
the report gives each value a column of its own (``enwik8 [placement=peri]``) instead of taking
one value of it for "the" norm. A key only one norm varies (AdaNorm's C=1 and C=2, each norm at
its own tuned lr) is not an axis: it stays in the row label."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Iterable

from .runs import Run


def setting_axis(runs: Iterable[Run]) -> tuple[str, ...]:
    """The keys that at least two norms of one task (at one scale) each ran at two or more values of
    (a key a run does not set counts as its default value)."""
    runs = list(runs)
    keys = sorted({k for r in runs for k in r.setting})
    values: dict[tuple, set] = defaultdict(set)  # (task, scale, key, norm) -> values
    for r in runs:
        for k in keys:
            values[(r.task, r.scale, k, r.norm)].add(json.dumps(r.setting.get(k)))
    varied = defaultdict(int)  # (task, scale, key) -> norms that ran at two or more values
    for (task, scale, k, _), vs in values.items():
        varied[(task, scale, k)] += len(vs) > 1
    return tuple(sorted({k for (_, _, k), n in varied.items() if n >= 2}))


# what a study's axis makes of its tasks: a task at one setting, a column of its own
COLUMNS = "task × setting columns"


def units(columns: Iterable[str]) -> str:
    """What report columns count as in words: "tasks", or, where a study's axis (or a second
    scale) splits a task into several, its columns, which share the task's data and are not
    independent units."""
    return "tasks" if all(c == task_of(c) for c in columns) else COLUMNS


def axis_label(setting: dict, axis: tuple[str, ...]) -> str:
    """``layernorm_scaling=true,placement=pre``: the run's values of the axis keys it sets."""
    return ",".join(f"{k}={value_text(setting[k])}" for k in axis if k in setting)


def task_of(column: str) -> str:
    """The task of a report column (``enwik8``, ``enwik8@mini``, ``enwik8 [placement=peri]``)."""
    return column.split(" [", 1)[0].split("@", 1)[0]


def value_text(v) -> str:
    """A setting's value as the report prints it (true, null, 0.001, post)."""
    return json.dumps(v) if isinstance(v, (bool, type(None))) else str(v)


# The order a swept setting's values are read in (and drawn in): the models' own order for the
# placement (normlab.models.placement.PLACEMENTS; a test holds them equal), numbers by value, else
# by name.
NATURAL = {"placement": ("post", "pre", "peri", "mixln", "deepnorm", "reorder", "hybrid")}


def value_rank(key: str, text: str) -> tuple:
    """Where the value ``text`` of setting ``key`` sorts: known values in their declared order,
    then numbers by value, then names."""
    known = NATURAL.get(key, ())
    if text in known:
        return (0, known.index(text), 0.0, text)
    try:
        return (1, 0, float(text), text)
    except ValueError:
        return (2, 0, 0.0, text)


def axis_order(key: str, values) -> list[str]:
    """The value texts ``values`` of the axis ``key`` in their natural order."""
    return sorted(values, key=lambda v: value_rank(key, v))


def axis_rank(setting: dict, keys: tuple[str, ...]) -> tuple:
    """A column's place among its task's: by each axis key in ``keys``' order (major first), a key
    the run does not set (its default) before every value it is set to."""
    return tuple(
        (1, value_rank(k, value_text(setting[k]))) if k in setting else (0, ()) for k in keys
    )


def major_first(axis: tuple[str, ...], settings: Iterable[dict]) -> tuple[str, ...]:
    """The axis keys, the one with the most values first: the placement (six) before the LayerNorm
    scaling that one placement adds, so pre + scaling sorts next to pre, not before post."""
    settings = list(settings)
    count = {k: len({value_text(s[k]) for s in settings if k in s}) for k in axis}
    return tuple(sorted(axis, key=lambda k: (-count[k], k)))


def setting_rank(setting: dict) -> tuple:
    """A setting's place among its norm's settings: the default ({}) first, then by each key's
    values in their natural order (lr 1e-4 before 1e-3, placement post before pre)."""
    return tuple((k, value_rank(k, value_text(setting[k]))) for k in sorted(setting))
