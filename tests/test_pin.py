"""A grid pinned to one commit (normlab.study.pin): trained from a clean worktree, never mixed with runs
of other code, continued from committed copies on a fresh machine."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from test_reproduce import reproduce

from helpers import REPO

GRID = [
    "--scale",
    "smoke",
    "--tasks",
    "synthetic_cls",
    "--seeds",
    "1,2",
    "--norms",
    "layernorm",
    "--jobs",
    "1",
    "--no-figures",
]


def head() -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()


def fake_copy(tmp_path, norm: str, commit: str):
    d = tmp_path / "results" / "staging" / "smoke" / "runs" / "synthetic_cls" / norm / "seed2"
    d.mkdir(parents=True)
    summary = {"status": "completed", "task": "synthetic_cls", "git_commit": commit}
    (d / "summary.json").write_text(json.dumps(summary))


@pytest.mark.slow
def test_the_grid_is_trained_from_a_clean_checkout_of_its_commit(tmp_path, data_dir):
    commit = head()
    out = reproduce(
        GRID + ["--root", str(tmp_path / "runs"), "--commit", "HEAD"], tmp_path, data_dir
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert f".cache/code/{commit[:12]}" in out.stdout
    summary = json.loads(
        (
            tmp_path
            / "runs"
            / commit[:12]
            / "smoke"
            / "xu2019"
            / "synthetic_cls"
            / "layernorm"
            / "seed2"
            / "summary.json"
        ).read_text()
    )
    assert summary["git_commit"] == commit and summary["git_dirty"] is False
    rec = json.loads((tmp_path / "results" / "smoke" / "reproduce.json").read_text())
    assert (
        rec["git_commit"] == commit
        and rec["git_dirty"] is False
        and rec["run_git_commits"] == {commit: 2}
    )

    # a fresh machine: the tuned grid at the same commit takes the preset-lr run from the fixed
    # grid's committed copies instead of training it again, and copies it into its own results
    shutil.rmtree(tmp_path / "runs")
    tuned = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "reproduce_tuned.py"),
            "--scale",
            "smoke",
            "--tasks",
            "synthetic_cls",
            "--norms",
            "layernorm",
            "--selection-seeds",
            "1",
            "--evaluation-seeds",
            "2",
            "--root",
            str(tmp_path / "runs"),
            "--budget-min",
            "0",
            "--no-figures",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "NORMLAB_DATA": str(data_dir)},
        timeout=600,
    )
    assert tuned.returncode == 0 and "4 jobs left (stopped: budget)" in tuned.stdout, (
        tuned.stdout + tuned.stderr
    )
    copied = (
        tmp_path
        / "results"
        / "staging"
        / "smoke-tuned"
        / "runs"
        / "synthetic_cls"
        / "layernorm"
        / "seed1"
        / "summary.json"
    )
    assert json.loads(copied.read_text())["git_commit"] == commit


def test_copies_of_another_commit_are_never_mixed_in(tmp_path, data_dir):
    fake_copy(tmp_path, "layernorm", "0" * 40)
    out = reproduce(
        GRID + ["--root", str(tmp_path / "runs"), "--commit", "HEAD"], tmp_path, data_dir
    )
    assert (
        out.returncode == 2
        and "come from 000000000000" in out.stderr
        and "--discard-staging" in out.stderr
    )
    assert not (tmp_path / "runs").exists()
    fake_copy(tmp_path, "layernorm_simple", "1" * 40)
    out = reproduce(GRID + ["--root", str(tmp_path / "runs")], tmp_path, data_dir)
    assert out.returncode == 2 and "task synthetic_cls come from 2 commits" in out.stderr
    assert "--discard-staging" in out.stderr


def test_copies_from_uncommitted_code_are_not_continued_as_a_commit(tmp_path, data_dir):
    d = (
        tmp_path
        / "results"
        / "staging"
        / "smoke"
        / "runs"
        / "synthetic_cls"
        / "layernorm"
        / "seed2"
    )
    d.mkdir(parents=True)
    (d / "summary.json").write_text(
        json.dumps({"status": "completed", "git_commit": head(), "git_dirty": True})
    )
    out = reproduce(GRID + ["--root", str(tmp_path / "runs")], tmp_path, data_dir)
    assert out.returncode == 2 and "uncommitted code" in out.stderr


def test_jobs_run_in_the_worktree_read_the_callers_data_folder(tmp_path, monkeypatch):
    """A job's cwd is the worktree, where the config's default ``<cwd>/data`` does not exist: the
    caller's default is handed on, and an explicit NORMLAB_DATA is left as it is."""
    from normlab.study import pin

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NORMLAB_DATA", raising=False)
    env = pin.environ(tmp_path / "code")
    assert env["NORMLAB_DATA"] == str(tmp_path / "data")
    assert env["PYTHONPATH"].split(":")[0] == str(tmp_path / "code")
    monkeypatch.setenv("NORMLAB_DATA", "/elsewhere")
    assert pin.environ(tmp_path / "code")["NORMLAB_DATA"] == "/elsewhere"


def test_a_fresh_clone_continues_the_reported_grid_and_a_new_study_names_its_commit(
    tmp_path, data_dir
):
    older = subprocess.run(
        ["git", "rev-parse", "HEAD~1"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    d = tmp_path / "results" / "smoke" / "runs" / "synthetic_cls" / "layernorm" / "seed2"
    d.mkdir(parents=True)
    (d / "summary.json").write_text(
        json.dumps(
            {
                "status": "completed",
                "git_commit": older,
                "git_dirty": False,
                "seed": 2,
                "task": "synthetic_cls",
            }
        )
    )
    plan = GRID[: GRID.index("--no-figures")] + [
        "--seeds",
        "2",
        "--root",
        str(tmp_path / "runs"),
        "--plan",
    ]
    found = reproduce(plan, tmp_path, data_dir)
    assert found.returncode == 0 and f"at commit {older[:12]}" in found.stdout, (
        found.stdout + found.stderr
    )
    assert (
        "the runs reported in smoke/runs" in found.stdout
        and "1 runs of this study: 1 done" in found.stdout
    )
    new = reproduce(plan + ["--commit", "HEAD"], tmp_path, data_dir)
    assert (
        new.returncode == 0
        and f"at commit {head()[:12]}" in new.stdout
        and "1 runs of this study: 0 done" in new.stdout
    )
