"""The tuned comparison (make reproduce-tuned): each norm's own lr chosen on validation, then seeds."""

import csv
import json
import os
import shutil
import subprocess
import sys

import pytest
from test_reproduce import reproduce

from helpers import REPO, TEST_CACHE
from normlab.campaigns.xu2019.tuned_protocol import grid_lrs, planned_lrs, select
from normlab.report.runs import Run


def run(summary: dict) -> Run:
    return Run(REPO, {}, {"metric": "acc", "higher_is_better": True, **summary})


def test_select_takes_the_best_validation_score_and_breaks_ties_toward_the_preset():
    ok = lambda v: run({"status": "completed", "best_valid": {"acc": v}})  # noqa: E731
    assert select({0.5: ok(70.0), 1.0: ok(71.0), 2.0: ok(72.0)}, 1.0) == 2.0
    assert select({0.5: ok(72.0), 1.0: ok(71.0), 2.0: ok(72.0), 4.0: ok(72.0)}, 1.0) in (0.5, 2.0)
    assert select({0.25: ok(72.0), 1.0: ok(72.0), 4.0: ok(72.0)}, 1.0) == 1.0
    # a diverged run is worse than any completed one; all diverged: no choice
    assert select({1.0: ok(10.0), 2.0: run({"status": "diverged"})}, 1.0) == 1.0
    assert select({1.0: run({"status": "diverged"}), 2.0: run({"status": "failed"})}, 1.0) is None
    # lower-is-better metrics (losses, bpc) are chosen by their minimum
    loss = lambda v: Run(
        REPO,
        {},
        {
            "metric": "loss",
            "higher_is_better": False,
            "status": "completed",  # noqa: E731
            "best_valid": {"loss": v},
        },
    )
    assert select({1.0: loss(5.0), 2.0: loss(4.0)}, 1.0) == 2.0


def test_the_grid_spans_8x_around_the_preset_with_readable_values():
    lrs = planned_lrs(0.002, [0.35355, 0.70711, 1.41421, 2.82843])
    assert lrs == [0.000707, 0.00141, 0.002, 0.00283, 0.00566] and lrs[-1] / lrs[0] > 7.9


def test_the_grid_widens_past_an_edge_choice_until_the_best_is_inside():
    ok = lambda v: run({"status": "completed", "best_valid": {"acc": v}})  # noqa: E731
    factors = [0.5, 2.0]
    assert grid_lrs(1.0, factors, {}.get) == [
        0.5,
        1.0,
        2.0,
    ]  # nothing finished yet: the planned grid
    rising = {0.5: ok(1), 1.0: ok(2), 2.0: ok(3)}
    assert grid_lrs(1.0, factors, rising.get) == [
        0.5,
        1.0,
        2.0,
        4.0,
    ]  # best at the top: one step up
    assert grid_lrs(1.0, factors, {**rising, 4.0: ok(2.5)}.get) == [
        0.5,
        1.0,
        2.0,
        4.0,
    ]  # inside now
    # still rising: at most two steps per side, then the choice stays at the (flagged) edge
    assert grid_lrs(1.0, factors, {**rising, 4.0: ok(4), 8.0: ok(5)}.get) == [
        0.5,
        1.0,
        2.0,
        4.0,
        8.0,
    ]
    assert grid_lrs(1.0, factors, {**rising, 4.0: ok(4), 8.0: ok(5)}.get, extend=1) == [
        0.5,
        1.0,
        2.0,
        4.0,
    ]
    # the step past the top diverged: the best is inside again
    assert grid_lrs(1.0, factors, {**rising, 4.0: run({"status": "diverged"})}.get)[-1] == 4.0
    falling = {0.5: ok(3), 1.0: ok(2), 2.0: ok(1), 0.25: ok(2)}
    assert grid_lrs(0.002, [0.5, 2.0], {k * 0.002: v for k, v in falling.items()}.get) == [
        0.0005,
        0.001,
        0.002,
        0.004,
    ]


def tuned(args, cwd, data_dir):
    env = {**os.environ, "NORMLAB_DATA": str(data_dir), "NORMLAB_CACHE": str(TEST_CACHE)}
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "reproduce_tuned.py"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_lr_figure_has_one_legend_naming_every_norm_drawn_in_any_panel():
    # a task re-run for some norms only (the first panel here) holds fewer lines than the others:
    # the legend used to be the first panel's, and left out the norms only the others drew
    import matplotlib.pyplot as plt

    from normlab.campaigns.xu2019.tuned_figure import figure_legend

    fig, (first, second) = plt.subplots(1, 2)
    first.plot([1, 2], [1, 2], label="LayerNorm")
    first.plot([1], [2], marker="o")  # a ring: no legend entry
    second.plot([1, 2], [2, 1], label="DyT")
    second.plot([1, 2], [1, 2], label="LayerNorm")
    figure_legend(fig, ["layernorm", "dyt", "layernorm"])
    assert not first.get_legend() and len(fig.legends) == 1
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["LayerNorm", "DyT"]
    plt.close(fig)


@pytest.mark.slow  # make test-slow: about 80 s
def test_tuned_comparison_end_to_end_and_continued_from_copies(tmp_path, data_dir):
    args = [
        "--scale",
        "smoke",
        "--tasks",
        "synthetic_cls",
        "--norms",
        "layernorm,layernorm_simple",
        "--selection-seeds",
        "1",
        "--evaluation-seeds",
        "2",
        "--jobs",
        "2",
        "--root",
        str(tmp_path / "runs"),
        "--working-tree",
    ]
    stopped = tuned(args + ["--budget-min", "0", "--no-figures"], tmp_path, data_dir)
    assert stopped.returncode == 0 and "2 jobs left (stopped: budget)" in stopped.stdout, (
        stopped.stdout + stopped.stderr
    )
    # the fixed-lr study trains the preset-lr runs of seed 1; the tuned study shares (and copies) them
    fixed = reproduce(
        [
            "--scale",
            "smoke",
            "--tasks",
            "synthetic_cls",
            "--seeds",
            "1",
            "--norms",
            "layernorm,layernorm_simple",
            "--jobs",
            "2",
            "--root",
            str(tmp_path / "runs"),
            "--working-tree",
            "--no-figures",
        ],
        tmp_path,
        data_dir,
    )
    assert fixed.returncode == 0, fixed.stdout[-2000:] + fixed.stderr[-2000:]
    out = tuned(args, tmp_path, data_dir)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "study complete" in out.stdout
    res = tmp_path / "results" / "smoke-tuned"
    assert not (tmp_path / "results" / "staging" / "smoke-tuned").exists()
    copies = res / "runs" / "synthetic_cls"
    rows = {(r[0], r[1]): r for r in csv.reader((res / "lr_grid.csv").read_text().splitlines())}
    expected = 0
    for norm, label in (("layernorm", "LayerNorm"), ("layernorm_simple", "LayerNorm-simple")):
        vals = {
            d: json.loads((d / "summary.json").read_text())["best_valid"]["acc"]
            for d in (copies / norm).rglob("seed1")
        }
        row = rows[("synthetic_cls", label)]
        # the preset lr, four factors (+ widening); then the chosen lr and the other criterion's
        assert len(vals) == sum(1 for c in row[3:-2] if c) >= 5
        chosen, preset = float(row[-2].split()[0]), float(row[2])
        chosen_dir = copies / norm / ("seed1" if chosen == preset else f"lr={chosen:g}/seed1")
        expected += len(vals) + (1 if chosen == preset else 2)
        assert vals[chosen_dir] == max(vals.values())  # the best validation score was chosen
        # the evaluation seed at the chosen lr, and at the preset lr (the fixed-lr comparison)
        assert (chosen_dir.parent / "seed2" / "summary.json").exists()
        assert (copies / norm / "seed2" / "summary.json").exists()
    table = {(r[0], r[1]): r for r in csv.reader((res / "tuned.csv").read_text().splitlines())}
    assert table[("synthetic_cls", "LayerNorm")][4].endswith(
        "(1)"
    )  # own lr: the evaluation seed only
    test_acc = lambda d: json.loads((d / "seed2" / "summary.json").read_text())["test"]["acc"]  # noqa: E731
    for norm, label in (("layernorm", "LayerNorm"), ("layernorm_simple", "LayerNorm-simple")):
        row, preset = table[("synthetic_cls", label)], float(rows[("synthetic_cls", label)][2])
        chosen = float(row[2].split()[0])
        if (
            chosen != preset
        ):  # seed 2 at the own lr against seed 2 at the preset: seed 1 chose, it is in no mean
            assert (
                row[5].split()[0]
                == f"{test_acc(copies / norm / f'lr={chosen:g}') - test_acc(copies / norm):+.2f}"
            )
    assert (res / "figures" / "lr_sensitivity.png").read_bytes()[:4] == b"\x89PNG"
    report = (res / "report.md").read_text()
    assert "Seed 1, the selection seed, is in no mean here" in report
    rec = json.loads((res / "reproduce.json").read_text())
    assert rec["absent"] == [] and rec["runs"] == {"completed": expected}
    assert [s["trained"] for s in rec["sessions"]] == [
        0,
        expected - 2,
    ]  # 2 came from the fixed-lr study

    # a fresh machine: the copies alone give the same tables, and nothing is trained again
    before = {p.name: p.read_bytes() for p in res.glob("*.csv")}
    shutil.rmtree(tmp_path / "runs")
    again = tuned(args, tmp_path, data_dir)
    assert again.returncode == 0 and "0 trained this slice" in again.stdout, again.stdout[-2000:]
    assert {p.name: p.read_bytes() for p in res.glob("*.csv")} == before


@pytest.mark.slow
def test_a_session_whose_first_jobs_all_fail_stops_and_says_where_to_look(tmp_path):
    """A missing data folder fails every job within seconds; the driver stops after three instead of
    marking the whole grid failed, and points at a job's log."""
    (tmp_path / "empty").mkdir()
    out = tuned(
        [
            "--scale",
            "smoke",
            "--tasks",
            "rt",
            "--norms",
            "layernorm,layernorm_simple,detachnorm,adanorm",
            "--jobs",
            "1",
            "--root",
            str(tmp_path / "runs"),
            "--working-tree",
            "--no-figures",
        ],
        tmp_path,
        tmp_path / "empty",
    )
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]
    assert "the first 3 jobs of this slice all failed" in out.stderr, out.stderr[-2000:]
    logs = list((tmp_path / "runs").rglob("logs/*/*.log"))
    assert len(logs) == 3 and "does not exist" in logs[0].read_text()


@pytest.mark.slow
def test_the_confirmatory_lr_selection_trains_seed_one_only_and_reuses_the_tuned_choice(
    tmp_path, data_dir
):
    # confirm-lr chooses each norm's lr for a later study and reports nothing: no evaluation seed
    # is trained, and the tuned study's selection runs at the same preset count as its own
    args = ["--study", "confirm-lr", "--scale", "smoke", "--tasks", "synthetic_cls"]
    args += ["--norms", "layernorm", "--jobs", "2", "--root", str(tmp_path / "runs")]
    args += ["--working-tree", "--no-figures"]
    env = {**os.environ, "NORMLAB_DATA": str(data_dir), "NORMLAB_CACHE": str(TEST_CACHE)}
    driver = [sys.executable, "-m", "normlab.campaigns.xu2019", *args]

    def select():
        return subprocess.run(
            driver, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )

    out = select()
    assert out.returncode == 0 and "study complete" in out.stdout, out.stdout[-2000:] + out.stderr
    res = tmp_path / "results" / "smoke-confirm-lr"
    seeds = {d.name for d in (res / "runs").rglob("seed*")}
    assert seeds == {"seed1"}
    n = len(list((res / "runs").rglob("summary.json")))
    assert n >= 5  # the preset and its four factors at least
    # the same choice, made by the tuned study: moved to its folder, it is read, not re-trained
    tuned_runs = tmp_path / "results" / "smoke-tuned" / "runs"
    tuned_runs.parent.mkdir(parents=True)
    shutil.move(res / "runs", tuned_runs)
    shutil.rmtree(res)
    shutil.rmtree(tmp_path / "runs")
    again = select()
    assert again.returncode == 0 and "0 trained this slice" in again.stdout, again.stdout[-2000:]
    assert len(list((res / "runs").rglob("summary.json"))) == n
    refused = subprocess.run(
        [*driver, "--evaluation-seeds", "2"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert refused.returncode == 2 and "selection seed only" in refused.stderr
