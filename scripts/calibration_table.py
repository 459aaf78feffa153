#!/usr/bin/env python
"""The calibration table: each candidate preset's selection run against its task's trivial
baselines, with what it cost.

    python scripts/calibration_table.py                                   # results/calibration/candidates
    python scripts/calibration_table.py DIR --out results/calibration/candidates/README-table.md

A row per run copy under DIR (one per candidate and norm, seed 1, the selection seed): the
candidate (the run's experiment name), the test metric of the selected checkpoint and the valid
score that selected it, the best step of all steps, the training and wall minutes (the runs use
one thread, so wall minutes are CPU-minutes), and the trivial baselines' test levels computed from
the data with the run's own task config (normlab-report's baselines: the same subset and
splits). For runs that scored BLEU on valid at each evaluation, the valid-BLEU frontier: BLEU
against the minutes spent to that step (steps x the run's minutes per step).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from normlab.make_report import baselines, default_dirs  # noqa: E402
from normlab.report import find_runs  # noqa: E402
from normlab.rundir import criterion  # noqa: E402


def _fmt(v, digits=3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def rows(runs, data_dir, cache_dir) -> tuple[list[list[str]], list[str]]:
    table, frontiers = [], []
    for r in sorted(runs, key=lambda r: (r.task, r.config.get("name", ""), r.norm)):
        s = r.summary
        metric = s.get("metric")
        by, value, _ = criterion(s)
        base = baselines(r.task, r.config.get("task") or {}, data_dir, cache_dir)
        levels = "; ".join(
            f"{name.split(' (')[0]} {row['test']:.3f}"
            for name, row in (base.get("rows") or {}).items()
            if "test" in row
        ) or base.get("missing", "–")
        per_step = s["wall_time_s"] / 60 / max(1, s.get("steps", 1))
        table.append(
            [
                r.config.get("name", "?"),
                r.task,
                r.norm,
                s.get("status", "?"),
                f"{metric} {_fmt((s.get('test') or {}).get(metric))}",
                f"{by} {_fmt(value)}",
                f"{s.get('best_step')} / {s.get('steps')}",
                f"{s.get('train_time_s', 0) / 60:.1f} / {s['wall_time_s'] / 60:.1f}",
                f"{s.get('params', 0):,}",
                levels,
            ]
        )
        bleu = [c for c in r.curves if c.get("split") == "valid" and "bleu" in c]
        if bleu:
            frontiers.append(
                f"- {r.config.get('name')} ({r.norm}): "
                + ", ".join(f"{c['bleu']:.2f} at {c['step'] * per_step:.1f} min" for c in bleu)
            )
    return table, frontiers


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("folder", nargs="?", type=Path, default=REPO / "results/calibration/candidates")
    p.add_argument("--out", type=Path, help="also write the table here (Markdown)")
    a = p.parse_args(argv)
    runs = find_runs([a.folder])
    data_dir, cache_dir = default_dirs(runs)
    table, frontiers = rows(runs, data_dir, cache_dir)
    header = [
        "candidate", "task", "norm", "status", "test (best checkpoint)", "valid that selected it",
        "best step / steps", "train / wall min", "params", "trivial baselines (test)",
    ]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in table]
    if frontiers:
        lines += [
            "",
            "Valid BLEU (greedy) at each evaluation, against the minutes to that step:",
            "",
        ]
        lines += frontiers
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        a.out.write_text(text)
        print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
