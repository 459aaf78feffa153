"""A search's trials table (``trials-<study>.md``): each trial's parameters, state, its run's own
status and objective, and the best completed run."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional


def finished(study) -> int:
    """Trials that count toward --trials: finished ones, not those a killed search left behind."""
    return sum(
        1
        for t in study.get_trials(deepcopy=False)
        if t.state.is_finished() and not t.user_attrs.get("stale")
    )


def trial_value(run_dir: Optional[str]) -> tuple[Optional[str], Optional[float]]:
    """(status, objective) from a trial's own summary.json: what its job recorded, also when the
    trial itself was marked failed (a job that finished after its search died)."""
    from .run.runner import objective
    from .rundir import read_summary

    summary = read_summary(Path(run_dir) / "summary.json") if run_dir else {}
    if not summary:  # none yet, or unreadable (named in a warning)
        return None, None
    value = objective(summary)
    return summary.get("status"), None if math.isnan(value) else value


def best_of(study, results: dict) -> Optional[tuple]:
    """(trial, value) of the best completed run among the study's trials; ``results`` maps a trial
    number to its run's (status, objective), read once from the summaries by write_table."""
    maximize = study.direction.name == "MAXIMIZE"
    done = [
        (t, results[t.number][1])
        for t in study.get_trials(deepcopy=False)
        if results[t.number][0] == "completed" and results[t.number][1] is not None
    ]
    # a stale trial and the one that resumed it share a run: name the one that finished it
    return (
        max(done, key=lambda tv: (tv[1] if maximize else -tv[1], not tv[0].user_attrs.get("stale")))
        if done
        else None
    )


def write_table(study, path: Path) -> None:
    params = study.user_attrs.get("params", [])
    rows = [
        "| trial | state | " + " | ".join(params) + " | run status | objective | run |",
        "|---" * (len(params) + 5) + "|",
    ]
    trials = study.get_trials(deepcopy=False)
    results = {t.number: trial_value(t.user_attrs.get("run_dir")) for t in trials}
    for t in trials:
        values = [str(t.user_attrs.get("used", {}).get(k, t.params.get(k, ""))) for k in params]
        state = "stale (stopped; re-queued)" if t.user_attrs.get("stale") else t.state.name.lower()
        status, value = results[t.number]
        shown = "" if value is None else f"{value:.4f}"
        rows.append(
            f"| {t.number} | {state} | "
            + " | ".join(values)
            + f" | {status or ''} | {shown} | {t.user_attrs.get('run_dir', '')} |"
        )
    best = best_of(study, results)
    if best:
        b, value = best
        rows += [
            "",
            f"Best: trial {b.number}, objective {value:.4f} ({study.user_attrs['direction']}), "
            f"{json.dumps(b.user_attrs.get('used', b.params))}",
        ]
    path.write_text("\n".join(rows) + "\n")
