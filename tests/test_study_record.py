"""scripts/study_record.py: a study's runs by status, the cells that did not train, commits and
hours, read from a folder's reproduce.json and main table as the report writes them."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "study_record.py"), *map(str, args)],
        capture_output=True,
        text=True,
    )


def folder(path: Path, table: str, rows: list[list[str]], **record) -> Path:
    path.mkdir(parents=True)
    (path / "reproduce.json").write_text(json.dumps(record))
    with open(path / table, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    return path


def test_counts_cells_and_hours_of_a_fixed_and_a_tuned_folder(tmp_path):
    fixed = folder(
        tmp_path / "mini",
        "summary.csv",
        [
            ["norm", "enwik8 bpc↓", "rt acc↑"],
            ["LayerNorm", "2.610 ± 0.017 (5)", "74.82 ± 1.89 (5)"],
            ["DyT", "5.583 ± 0.024 (5); did not train", "70.1 ± 1.0 (4); diverge 1/5"],
            # the caption names the rule in words: not a cell
            ["caption", 'These cells are labelled "did not train" (5); did not train in words'],
        ],
        runs={"completed": 9, "diverged": 1},
        run_git_commits={"e74a483898353098e5041f4f3566f907d0d954ec": 10},
        runs_wall_time_s=7200,
        sessions=[{"wall_time_s": 1800}, {"wall_time_s": 3600}],
    )
    tuned = folder(
        tmp_path / "mini-tuned",
        "tuned.csv",
        [
            ["task", "norm", "chosen lr", "fixed lr: mean ± std (n)", "own lr: mean ± std (n)"],
            [
                "iwslt14_de_en",
                "DetachNorm",
                "0.008",
                "1.10 ± 0.21 (5); did not train",
                "3.0 ± 0.1 (5)",
            ],
        ],
        runs={"completed": 4, "failed": 1},
        run_git_commits={"f1046b7783ba2a06fa802daab573b0af0dff08f7": 5},
        runs_wall_time_s=1800,
        sessions=[{"wall_time_s": 900}],
    )
    out = run(fixed, tuned)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert (
        lines[2] == f"| `{fixed}` | 9 / 1 / 0 | 1: enwik8 DyT | `e74a483` (10) | 2.0 | 2, 1.5 h |"
    )
    assert lines[3] == (
        f"| `{tuned}` | 4 / 0 / 1 | 1: iwslt14_de_en DetachNorm (fixed lr) | `f1046b7` (5) | 0.5 | "
        "1, 0.2 h |"
    )


def test_a_folder_without_a_record_is_refused(tmp_path):
    out = run(tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert (
        out.stderr.strip()
        == f"study_record: {tmp_path}/reproduce.json: no such file (a results folder)"
    )
