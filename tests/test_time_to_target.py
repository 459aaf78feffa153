"""Time to target: steps and training seconds to the reference norm's median best validation value,
per task, and the performance profile across tasks, checked against values computed by hand."""

import json
import math
from pathlib import Path

import pytest

from normlab.report import find_runs
from normlab.report.aggregate import Grid
from normlab.report.time_to_target import cells, median_interval, profile, time_to_target_table

# task -> norm -> per seed: (validation values by step 100, 200, ...; training seconds of 200 steps)
RUNS = {
    "rt": {  # accuracy, higher is better: LayerNorm's bests 70, 76, 75 -> target 75
        "layernorm": [([60, 70], 20.0), ([76, 74], 20.0), ([70, 75], 20.0)],
        "rmsnorm": [([78, 79], 60.0), ([74, 77], 60.0), ([80, 80], 60.0)],
    },
    "enwik8": {  # bpc, lower is better: LayerNorm's bests 1.5, 1.7, 1.6 -> target 1.6
        "layernorm": [([1.8, 1.5], 20.0), ([1.7, 1.75], 20.0), ([1.6, 1.65], 20.0)],
        "rmsnorm": [([1.9, 1.8], 10.0), ([1.9, 1.7], 10.0), ([1.9, 1.85], 10.0)],
    },
}
METRIC = {"rt": ("acc", True), "enwik8": ("bpc", False)}


def write_runs(root: Path) -> None:
    for task, norms in RUNS.items():
        metric, higher = METRIC[task]
        for norm, seeds in norms.items():
            for seed, (values, seconds) in enumerate(seeds, start=2):
                d = root / task / norm / f"seed{seed}"
                d.mkdir(parents=True)
                records = [
                    {"step": 100 * (i + 1), "split": "valid", "loss": 1.0, metric: v}
                    for i, v in enumerate(values)
                ]
                (d / "curves.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
                summary = {
                    "status": "completed",
                    "task": task,
                    "norm": norm,
                    "seed": seed,
                    "scale": "smoke",
                    "metric": metric,
                    "higher_is_better": higher,
                    "test": {metric: values[-1]},
                    "steps": 200,
                    "train_time_s": seconds,
                    "device": "cpu",
                }
                (d / "summary.json").write_text(json.dumps(summary))


@pytest.fixture
def grid(tmp_path) -> Grid:
    write_runs(tmp_path / "runs")
    return Grid(find_runs([tmp_path / "runs"]))


def test_steps_and_seconds_to_target_are_the_hand_computed_ones(grid):
    found = cells(grid)
    key, higher, target, rows = found["rt"]
    assert (key, higher, target) == ("acc", True, 75)
    # LayerNorm: seed 2 never reaches 75, seed 3 at step 100, seed 4 at 200
    assert rows["LayerNorm"].steps == [math.inf, 100, 200] and rows["LayerNorm"].reached == 2
    assert rows["LayerNorm"].seconds == [math.inf, 10.0, 20.0]  # 0.1 s per step
    assert rows["RMSNorm"].steps == [100, 200, 100]
    assert rows["RMSNorm"].seconds == [30.0, 60.0, 30.0]  # 0.3 s per step
    key, higher, target, rows = found["enwik8"]
    assert (key, higher, target) == ("bpc", False, 1.6)
    assert rows["LayerNorm"].steps == [200, math.inf, 100]
    assert rows["RMSNorm"].steps == [math.inf, math.inf, math.inf] and rows["RMSNorm"].reached == 0


def test_the_table_gives_medians_intervals_and_not_reached(grid):
    rows = {(r[0], r[1]): r for r in time_to_target_table(grid).rows}
    # three runs: no interval of the median reaches 90% coverage
    assert rows["rt", "LayerNorm"][2:] == ["valid acc 75.00", "2/3", "200", "20.0"]
    assert rows["rt", "RMSNorm"][4:] == ["100", "30.0"]
    assert rows["enwik8", "RMSNorm"][3:] == ["0/3", "not reached", "not reached"]


def test_the_performance_profile_counts_tasks_within_tau_of_the_fastest(grid):
    taus, shares = profile(grid)
    at = {tau: i for i, tau in enumerate(taus)}
    # rt: LayerNorm 20 s (fastest), RMSNorm 30 s (1.5x); enwik8: only LayerNorm reached it
    assert shares["LayerNorm"][at[1.0]] == 1.0
    assert shares["RMSNorm"][at[1.0]] == 0.0 and shares["RMSNorm"][at[1.5]] == 0.5
    assert shares["RMSNorm"][at[4.0]] == 0.5


def test_the_interval_of_a_median_of_five_is_their_range_at_93_75_percent():
    assert median_interval([5, 1, 4, 2, 3]) == (3, (1, 5), 0.9375)
    assert median_interval([1, 2, 3])[1] is None  # 75% at best
    med, ci, _ = median_interval([1, 2, math.inf, math.inf, math.inf])
    assert med == math.inf and ci == (1, math.inf)


def test_the_report_writes_the_table_and_the_profile_figure(tmp_path):
    from normlab.report.report import write_report

    write_runs(tmp_path / "runs")
    written = write_report(find_runs([tmp_path / "runs"]), tmp_path / "out")
    assert (tmp_path / "out" / "time_to_target.md").exists()
    assert (tmp_path / "out" / "figures" / "time_to_target.png").exists()
    assert "time_to_target" in written["captions"]
    assert "time_to_target" in (tmp_path / "out" / "report.md").read_text()


def test_a_smoke_sweep_gets_the_steps_its_own_curves_give(tmp_path):
    from helpers import run_job

    for norm in ("layernorm", "rmsnorm"):
        for seed in (1, 2, 3):
            args = [
                "task=synthetic_cls",
                "scale=smoke",
                "threads=1",
                f"norm={norm}",
                f"seed={seed}",
            ]
            args += ["task.train.max_steps=120", "task.train.eval_every=20"]
            run_job(args, tmp_path, run_dir=tmp_path / "runs" / norm / f"seed{seed}")
    runs = find_runs([tmp_path / "runs"])
    key, higher, target, rows = cells(Grid(runs))["synthetic_cls"]
    assert (key, higher) == ("acc", True)

    def valid(run):
        return [(r["step"], r["acc"]) for r in run.curves if r.get("split") == "valid"]

    ln = sorted((r for r in runs if r.norm == "layernorm"), key=lambda r: r.seed)
    bests = sorted(max(a for _, a in valid(r)) for r in ln)
    assert target == bests[1]  # the median of three
    for label, norm in (("LayerNorm", "layernorm"), ("RMSNorm", "rmsnorm")):
        mine = sorted((r for r in runs if r.norm == norm), key=lambda r: r.seed)
        by_hand = [next((s for s, a in valid(r) if a >= target), math.inf) for r in mine]
        assert rows[label].steps == by_hand
        per_step = [r.summary["train_time_s"] / r.summary["steps"] for r in mine]
        assert rows[label].seconds == [s * t for s, t in zip(by_hand, per_step)]
