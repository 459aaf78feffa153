"""The trivial baselines table: where each norm's test score sits among the scores of model-free
predictors (unigram and bigram bits per byte, the majority class, the right-neighbour parse), so
that "at the unigram level" is a number, not a guess.

The baselines themselves come from each task (``Task.trivial_baselines``, computed from the data
by normlab.make_report, which passes them in as a provider); this module only places the runs among
them.
"""

from __future__ import annotations

import json
import math
from typing import Callable, Optional

from .axis import task_of

SPLITS = ("train", "valid", "test")
# (task name, the task config the runs recorded) -> {"metric", "rows", "sizes"} or {"missing": why}
Provider = Callable[[str, dict], dict]
NOT_COMPUTED = "not computed (normlab-report computes them from the data files)"


def level(
    value: float, rows: dict, hib: bool, split: str = "test", tol: float = 0.05
) -> Optional[str]:
    """Where a test score sits among the baselines: "at the unigram level" (within ``tol`` of it, in
    the metric's units), "between the unigram and bigram levels", "better than the bigram level",
    "worse than ...". None when there is no baseline for the split."""
    pts = sorted(
        (
            (r[split], name.split(" (")[0])
            for name, r in rows.items()
            if split in r and math.isfinite(r[split])
        ),
        reverse=not hib,
    )  # from the worst baseline to the best
    if not pts:
        return None
    for v, name in pts:
        if abs(value - v) <= tol:
            return f"at the {name} level"
    better = [name for v, name in pts if (value > v if hib else value < v)]
    if not better:
        return f"worse than the {pts[0][1]} level"
    if len(better) == len(pts):
        return f"better than the {pts[-1][1]} level"
    return f"between the {better[-1]} and {pts[len(better)][1]} levels"


def compute_all(grid, provider: Optional[Provider]) -> dict[str, dict]:
    """column -> baselines, with the task config of the column's first run that has one."""
    out = {}
    for c in grid.columns:
        runs = grid.column_runs(c)
        cfg = next((r.config["task"] for r in runs if isinstance(r.config.get("task"), dict)), None)
        task = task_of(c)
        if cfg is None:
            out[c] = {"missing": "the runs carry no task config (config.yaml)"}
        else:
            out[c] = provider(task, cfg) if provider else {"missing": NOT_COMPUTED}
    return out


def level_sentences(grid, base: dict[str, dict]) -> list[str]:
    """Per task with baselines: each norm's mean test score placed among them, grouped by level."""
    lines = []
    for c, b in base.items():
        if "rows" not in b or not b["rows"]:
            continue
        metric, hib = grid.metric(c)
        # how close to a baseline counts as "at" it: the margin a trained cell must beat it by
        tol = grid.protocol.trained_by(b["metric"])
        groups: dict[str, list[str]] = {}
        for v in grid.variants():
            mean = grid.cell(c, v).mean
            if mean is not None and (where := level(mean, b["rows"], hib, "test", tol)):
                groups.setdefault(where, []).append(
                    f"{grid.label(v)} ({mean:.3f})"
                    if metric == "bpc"
                    else f"{grid.label(v)} ({mean:.2f})"
                )
        refs = ", ".join(
            f"{name.split(' (')[0]} {r['test']:.3f}"
            if metric == "bpc"
            else f"{name.split(' (')[0]} {r['test']:.2f}"
            for name, r in b["rows"].items()
        )
        if len(groups) == 1 and len(next(iter(groups.values()))) > 1:
            # one level for every norm: say so, with the range, not nine names
            ((where, names),) = groups.items()
            vals = sorted((n.rsplit("(", 1)[1].rstrip(")") for n in names), key=float)
            body = f"every norm ({len(names)}) is {where} ({vals[0]}–{vals[-1]})"
        else:
            body = "; ".join(f"{where}: {', '.join(names)}" for where, names in groups.items())
        lines.append(f"{c} (test {refs} {b['metric']}; 'at' = within {tol:g}): {body}.")
    return lines


def baselines_table(grid, base: dict[str, dict]):
    """The table of ``base`` (column -> baselines, compute_all) with each norm placed among them."""
    from .aggregate import data_sentence
    from .tables import Table

    t = Table(
        "baselines",
        "Trivial baselines computed from the data",
        ["task", "baseline", "metric", "train", "valid", "test", "split sizes"],
    )
    mismatch = []
    for c, b in base.items():
        if "missing" in b:
            t.rows.append([c, b["missing"], "–", "–", "–", "–", "–"])
            continue
        sizes = " / ".join(f"{b['sizes'][s]:,}" if s in b["sizes"] else "–" for s in SPLITS)
        run_sizes = {
            json.dumps({s: (r.data.get("sizes") or {}).get(s) for s in ("valid", "test")})
            for r in grid.column_runs(c)
            if r.data
        }
        if run_sizes and run_sizes != {json.dumps({s: b["sizes"][s] for s in ("valid", "test")})}:
            mismatch.append(c)
        for name, r in b["rows"].items():
            d = 3 if b["metric"] == "bpc" else 2
            cells = (f"{r[s]:.{d}f}" if s in r else "–" for s in SPLITS)
            t.rows.append([c, name, b["metric"], *cells, sizes])
    t.caption = (
        "Computed by the report from the data files with each task's own pipeline and the runs' task "
        "config (same subset and splits): enwik8 unigram/bigram bits per byte of each split, fitted on "
        "the train split with add-one smoothing (the train column is in-sample), and the bigram with "
        "add-α smoothing, α chosen on the valid split (so its valid column is not held out; its test "
        "column is); classification: "
        "accuracy of always predicting the train split's majority class; PTB: UAS of attaching every "
        "word to its right neighbour (last word to the root), punctuation excluded as in the parser's "
        "score. Translation: BLEU of copying each source sentence as its translation, through the "
        "model's subwords and scored as its output is (valid and test only). Cached under the cache folder; rows say when the data is absent."
    )
    t.notes = level_sentences(grid, base) + [data_sentence(grid)]
    if mismatch:
        t.notes.append(
            f"Valid/test sizes differ from the runs' for {', '.join(mismatch)}: these baselines "
            "describe other data than the runs used."
        )
    return t
