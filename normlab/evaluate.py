"""``normlab-eval RUN_DIR... [--checkpoint best|last|PATH] [--split valid|test] [--out FILE]``:
re-compute a trained run's metrics from a checkpoint, its recorded config and its data.

Each result is set beside what the run recorded for the same weights (curves.jsonl's validation
at the checkpoint's step; summary.json's test where the checkpoint is the one the run tested), so
a reader sees at once whether the numbers come back: losses to 1e-6, counts and accuracies
exactly. Translation runs decode the test set (and, with ``--generate``, the validation set) with
``task.eval``'s search, ``--beam``/``--lenpen`` changing it, and write hypotheses and references,
tokenized and detokenized, under ``--results-path``.
"""

from __future__ import annotations

import argparse
import csv
import glob
import io
import json
import math
import sys
from pathlib import Path

from .commands import version_text
from .errors import CheckpointError, ConfigError, DataError
from .exitcodes import BAD_INPUT, CHECKPOINT

TOLERANCE = 1e-6
SPLITS = ("valid", "test")


def expand(items: list[str]) -> list[Path]:
    """Run directories from paths, quoted globs, and folders searched for run directories."""
    out: list[Path] = []
    for item in items:
        paths = (
            [Path(p) for p in sorted(glob.glob(item))]
            if any(c in item for c in "*?[")
            else [Path(item)]
        )
        if not paths:
            raise ConfigError(f"{item}: the pattern matches nothing")
        for p in paths:
            if p.is_dir() and not (p / "config.yaml").exists():
                found = sorted(
                    c.parent for c in p.rglob("config.yaml") if (c.parent / "checkpoints").is_dir()
                )
                out.extend(found or [p])
            else:
                out.append(p)
    return out


def recorded(run_dir: Path, split: str, step: int) -> dict:
    """What the run recorded for these weights: {} when it recorded nothing for them."""
    from .rundir import read_curves, read_summary

    if split == "valid":
        recs = [
            r
            for r in read_curves(run_dir / "curves.jsonl")
            if r.get("split") == "valid" and r["step"] == step
        ]
        return (
            {k: v for k, v in recs[-1].items() if k not in ("step", "split", "epoch")}
            if recs
            else {}
        )
    summary = read_summary(run_dir / "summary.json")
    return dict(summary.get("test") or {}) if summary.get("best_step") == step else {}


def compare(new: dict, old) -> str:
    """ "yes", "not recorded", or the first key that differs with both values; ``old`` None: the
    overrides change what is computed, so there is nothing to compare with."""
    if old is None:
        return "n/a (the overrides change it)"
    if not old:
        return "not recorded"
    for key, value in new.items():
        if key not in old or key.endswith("_s"):  # seconds are not results
            continue
        ref = old[key]
        if isinstance(value, float) and isinstance(ref, (int, float)):
            if not math.isclose(value, ref, rel_tol=TOLERANCE, abs_tol=TOLERANCE):
                return f"NO: {key} {value:.8g} vs {ref:.8g}"
        elif value != ref:
            return f"NO: {key} {value!r} vs {ref!r}"
    return "yes"


def evaluate_run(run_dir: Path, args, overrides) -> list[dict]:
    import torch

    from .files import remove_empty_dirs
    from .run.restore import changes_numbers, restore
    from .run.runlock import lock_holder

    # read before the checkpoint: a run that ends meanwhile is not "training"
    busy = lock_holder(run_dir)
    r = restore(run_dir, args.checkpoint, overrides)
    if busy:
        print(
            f"normlab-eval: {run_dir} is still training ({busy}): evaluating its {args.checkpoint} "
            f"checkpoint so far, step {r.step} ({r.checkpoint}); evaluate again when it ends for "
            "the final one",
            file=sys.stderr,
        )
    reference = not changes_numbers(overrides, r.recorded)
    task = r.task
    decodes = hasattr(task, "generate")
    out_dir = (
        Path(args.results_path) / _label(run_dir)
        if args.results_path
        else run_dir
        / "eval"
        / (args.checkpoint if args.checkpoint in ("best", "last") else Path(args.checkpoint).stem)
    )
    rows = []
    with torch.no_grad():
        for split in args.split:
            if split == "test":
                out_dir.mkdir(parents=True, exist_ok=True)
                metrics = task.test(r.model, out_dir)
            else:
                metrics = task.evaluate(r.model, split)
                if decodes and args.generate:
                    out_dir.mkdir(parents=True, exist_ok=True)
                    metrics = {**metrics, **task.generate(r.model, split, out_dir)}
            old = recorded(run_dir, split, r.step) if reference else None
            rows.append(
                {
                    "run": str(run_dir),
                    "task": r.job.task.name,
                    "norm": r.job.norm.name,
                    "seed": r.job.seed,
                    "checkpoint": str(r.checkpoint),
                    "step": r.step,
                    "split": split,
                    "metric": task.metric,
                    "value": metrics.get(task.metric),
                    "loss": metrics.get("loss"),
                    "metrics": metrics,
                    "recorded": old or {},
                    "matches_recorded": compare(metrics, old),
                }
            )
    # a task whose test writes no files leaves no folder behind
    remove_empty_dirs(out_dir, Path(args.results_path) if args.results_path else run_dir)
    for row in rows:
        row["outputs"] = str(out_dir) if out_dir.exists() else None
    return rows


def _label(run_dir: Path) -> str:
    parts = Path(run_dir).resolve().parts
    return "_".join(parts[-3:])


def table(rows: list[dict]) -> str:
    head = "| run | checkpoint (step) | split | metric | loss | matches recorded |"
    lines = [head, "|---|---|---|---|---|---|"]
    for r in rows:
        value = "—" if r["value"] is None else f"{r['metric']} {r['value']:.4f}"
        loss = "—" if r["loss"] is None else f"{r['loss']:.6f}"
        lines.append(
            f"| {r['run']} | {Path(r['checkpoint']).name} ({r['step']}) | {r['split']} | {value} | {loss} | "
            f"{r['matches_recorded']} |"
        )
    return "\n".join(lines)


def write(rows: list[dict], path: Path) -> None:
    if path.suffix == ".json":
        text = json.dumps(rows, indent=1, default=str) + "\n"
    elif path.suffix == ".csv":
        buf = io.StringIO()
        keys = [
            "run",
            "task",
            "norm",
            "seed",
            "checkpoint",
            "step",
            "split",
            "metric",
            "value",
            "loss",
            "matches_recorded",
        ]
        w = csv.DictWriter(buf, keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
        text = buf.getvalue()
    else:
        text = table(rows) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="normlab-eval",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Re-compute trained runs' metrics from a checkpoint, their recorded config and data, "
        "each beside what the run recorded for the same weights.",
        epilog="overrides: evaluation keys only, e.g. device=cuda task.data.eval_batch_size=256 task.eval.beam=4\n"
        "exit codes: 0 done, 1 --check found a metric that differs from the record, 2 bad input "
        "(a run directory, key or file), 5 an unreadable checkpoint",
    )
    p.add_argument(
        "items",
        nargs="+",
        metavar="RUN_DIR|key=value",
        help="run directories (or folders holding them, or quoted globs), then evaluation overrides",
    )
    p.add_argument("--version", action="version", version=version_text())
    p.add_argument(
        "--checkpoint", default="best", help="best (the selected one, default), last, or a .pt file"
    )
    p.add_argument(
        "--split", action="append", choices=SPLITS, help="valid or test (repeatable; default both)"
    )
    p.add_argument(
        "--out", type=Path, help="also write the results: .json (every metric), .csv or .md"
    )
    p.add_argument("--beam", type=int, help="translation: beam size (task.eval.beam; 1 = greedy)")
    p.add_argument("--lenpen", type=float, help="translation: length penalty (task.eval.lenpen)")
    p.add_argument(
        "--generate", action="store_true", help="translation: decode the validation split too"
    )
    p.add_argument(
        "--results-path",
        type=Path,
        help="where hypotheses and references go (default RUN_DIR/eval/<checkpoint>)",
    )
    p.add_argument(
        "--check", action="store_true", help="exit 1 unless every result matches its record"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.split = args.split or list(SPLITS)
    runs_given = [i for i in args.items if "=" not in i or Path(i).exists()]
    items = [i for i in args.items if i not in runs_given]
    if args.beam is not None:
        items.append(f"task.eval.beam={args.beam}")
    if args.lenpen is not None:
        items.append(f"task.eval.lenpen={args.lenpen}")
    from .progress import enable_bars
    from .run.restore import parse_overrides

    enable_bars(sys.stderr.isatty())
    try:
        overrides = parse_overrides(items)
        runs = expand(runs_given)
        if not runs:
            raise ConfigError("no run directory given")
    except ConfigError as e:
        print(f"normlab-eval: error: {e}", file=sys.stderr)
        return BAD_INPUT
    rows, code = [], 0
    for run_dir in runs:
        try:
            rows += evaluate_run(run_dir, args, overrides)
        except (ConfigError, DataError) as e:
            print(f"normlab-eval: error: {e}", file=sys.stderr)
            code = code or BAD_INPUT
        except CheckpointError as e:
            print(f"normlab-eval: error: {e}", file=sys.stderr)
            code = code or CHECKPOINT
    if rows:
        print(table(rows))
        if args.out:
            write(rows, args.out)
            print(f"[normlab-eval] {len(rows)} results -> {args.out}")
    if args.check and not code and any(r["matches_recorded"].startswith("NO") for r in rows):
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
