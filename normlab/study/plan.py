"""``--plan``: every run a study needs, which are done and where, and what the rest will cost.

Cost comes from measured runs: the mean wall time of the task's finished runs (this study's, else
the reference runs given, e.g. the results folder's committed copies and the calibration runs), in
one-thread job hours (a job runs cores/jobs torch threads; on the 2-core machine, one). A reference
run counts only when it was trained at what the study will train (``cost_key``: the data, the
model's size, the steps and the evaluation; not the norm, lr or placement), so a changed preset is
costed by runs of the new preset, and a task with none is said to be unmeasured. Disk: the mean size of the
finished run directories here (one checkpoint each, normlab.study.executor), else 4 bytes per
parameter for best.pt plus the copy, from the reference runs' parameter counts.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from statistics import mean
from typing import Iterable

COST_KEYS = {
    "data": None,  # all of it: what is read, how it is batched
    "model": ("d_model", "ffn_dim", "layers", "decoder_layers", "heads", "max_positions"),
    "train": ("max_steps", "max_epochs", "eval_every", "update_freq", "probe_every"),
    "eval": None,
}


def cost_key(task_cfg: dict) -> str:
    """What a run's cost depends on, from its task config (the norm, lr and placement aside)."""
    out = {}
    for part, keys in COST_KEYS.items():
        sub = task_cfg.get(part) or {}
        out[part] = sub if keys is None else {k: sub.get(k) for k in keys}
    return json.dumps(out, sort_keys=True, default=str)


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def costs(runs: Iterable) -> tuple[dict, dict]:
    """Per task: mean wall time (s) and mean parameter count of finished runs."""
    walls, params = defaultdict(list), defaultdict(list)
    for r in runs:
        s = r.summary if hasattr(r, "summary") else r
        # a run written before durations used a monotonic clock may hold a negative one
        if (s.get("wall_time_s") or 0) > 0:
            walls[s["task"]].append(float(s["wall_time_s"]))
        if s.get("params"):
            params[s["task"]].append(int(s["params"]))
    return {t: mean(v) for t, v in walls.items()}, {t: mean(v) for t, v in params.items()}


def matching(reference: Iterable, presets: dict | None) -> list:
    """The reference runs trained at their task's ``presets`` (task -> cost_key); all of them when
    no presets are given."""
    if presets is None:
        return list(reference)
    return [
        r
        for r in reference
        if r.task in presets and cost_key(r.config.get("task") or {}) == presets[r.task]
    ]


def unmeasured(study, reference: Iterable, presets: dict | None) -> list[str]:
    """The tasks of the study's unfinished jobs with no finished run at their preset to cost them by."""
    jobs = study.jobs()
    measured = {study.summary(j).get("task") for j in jobs if study.summary(j)}
    measured |= {r.task for r in matching(reference, presets)}
    return sorted({j.task for j in jobs if not study.summary(j)} - measured)


def hours_left(
    study, reference: Iterable = (), unnamed: dict | None = None, presets: dict | None = None
) -> float:
    """One-thread job hours of the study's own unfinished jobs (named, plus ``unnamed`` per task):
    each at the mean wall time of its task's finished runs, this study's, else those of the
    ``reference`` runs trained at the task's preset (``presets``: task -> cost_key; None: every
    reference run counts)."""
    jobs = study.jobs()  # names the jobs of this moment, and counts the unnamed ones
    unnamed = study.unnamed if unnamed is None else unnamed
    wall, _ = costs([study.summary(j) for j in jobs if study.summary(j)])
    ref_wall, _ = costs(matching(reference, presets))
    every = list(wall.values()) or list(ref_wall.values()) or [0.0]
    per_task = lambda t: wall.get(t, ref_wall.get(t, mean(every)))  # noqa: E731
    left = [j for j in jobs if not study.is_shared(j) and not study.summary(j)]
    return (
        sum(per_task(j.task) for j in left)
        + sum(n * per_task(t) for t, n in (unnamed or {}).items())
    ) / 3600


def lines(
    study,
    reference: Iterable = (),
    shared_note: str = "",
    unnamed: dict | None = None,
    presets: dict | None = None,
) -> list[str]:
    reference = list(reference)
    jobs = study.jobs()
    done = {j: study.where(j) for j in jobs}
    own = [j for j in jobs if not study.is_shared(j)]
    shared = [j for j in jobs if j not in own]
    _, params = costs([study.summary(j) for j in jobs if done[j]])
    _, ref_params = costs(reference)
    out = []
    for j in jobs:
        tag = f"done ({done[j]})" if done[j] else "to train"
        out.append(f"  {str(j.rel()):<48} {tag}" + ("  [shared]" if j in shared else ""))
    left = [j for j in own if not done[j]]
    unnamed = dict(study.unnamed if unnamed is None else unnamed)  # after jobs(), which counts them
    n_unnamed = sum(unnamed.values())
    hours = hours_left(study, reference, unnamed, presets)
    guessed = unmeasured(study, reference, presets)
    measured = [d for d in (study.run_dir(j) for j in jobs if done[j] == "run root") if d.exists()]
    if measured:
        per_run = {None: mean(dir_bytes(d) for d in measured)}
        how = f"measured on {len(measured)} finished run directories here"
    else:
        per_run = {t: 4 * p + 20_000 for t, p in {**ref_params, **params}.items()}
        how = "4 B per parameter for best.pt, from the parameter counts of the reference runs"
    fallback = mean(per_run.values()) if per_run else 0.0
    disk = sum(per_run.get(None, per_run.get(j.task, fallback)) for j in left)
    by_status = Counter("done" if done[j] else "left" for j in own)
    out += [
        f"[plan] {len(own)} runs of this study: {by_status['done']} done, {by_status['left']} to train"
        + (f", about {n_unnamed} more once their lr is chosen" if n_unnamed else "")
        + (
            f"; {len(shared)} shared {shared_note} ({sum(bool(done[j]) for j in shared)} done)"
            if shared
            else ""
        ),
        f"[plan] about {hours:.1f} one-thread job hours left (mean wall time of the task's finished "
        "runs at its preset)"
        + (
            f"; no run at the preset of {', '.join(guessed)} yet: costed at the other tasks' mean"
            if guessed
            else ""
        ),
        f"[plan] about {disk / 1e9:.2f} GB of run directories left to write ({how})",
    ]
    return out
