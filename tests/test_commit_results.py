"""scripts/commit_results.sh: a results folder committed while its grid runs holds tables written
from exactly the committed run copies."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from helpers import REPO, TEST_CACHE


def sh(args, cwd, env, check=True):
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert not check or out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


@pytest.mark.slow
def test_commit_results_commits_copies_and_their_tables_together(tmp_path, data_dir):
    clone = tmp_path / "clone"
    env = {
        **os.environ,
        "NORMLAB_DATA": str(data_dir),
        "NORMLAB_CACHE": str(TEST_CACHE),
        "PYTHON": sys.executable,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    sh(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(clone)], tmp_path, env)
    for path in ("scripts", "normlab"):  # the checkout under test, uncommitted edits included
        shutil.copytree(
            REPO / path,
            clone / path,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    sh(["git", "add", "-A", "scripts", "normlab"], clone, env)
    sh(["git", "commit", "-qm", "code under test", "--allow-empty"], clone, env)
    grid = [
        sys.executable,
        "scripts/reproduce_tuned.py",
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
        "--jobs",
        "2",
        "--no-figures",
        "--extend",
        "0",
    ]
    first = sh(grid, clone, {**env, "PYTHONPATH": str(clone)}, check=False)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    res = clone / "results" / "smoke-tuned"
    before = {p.name: p.read_bytes() for p in res.glob("*.csv")}
    for p in [*res.glob("*.csv"), *res.glob("*.md")]:  # tables missing, copies all there
        p.unlink()
    # another study of the same scale, in the same family of tests: its tables are re-written with it
    fixed = clone / "results" / "smoke"
    shutil.copytree(res / "runs", fixed / "runs")
    sh(["git", "add", "results/smoke"], clone, env)
    sh(["git", "commit", "-qm", "a fixed-lr study"], clone, env)
    out = sh(
        ["bash", "scripts/commit_results.sh", "results/smoke-tuned", "results: snapshot"],
        clone,
        {**env, "PYTHONPATH": str(clone)},
    )
    assert "committed" in out.stdout
    assert sh(["git", "status", "--short", "results"], clone, env).stdout == ""
    committed = sh(["git", "show", "--stat", "--format=%s", "HEAD"], clone, env).stdout
    assert (
        committed.startswith("results: snapshot")
        and "lr_grid.csv" in committed
        and "summary.json" in committed
    )
    assert (
        "smoke/summary.csv" in committed and "smoke/reproduce.json" in committed
    )  # the sibling's tables
    assert (
        sh(["git", "diff", "HEAD~1", "--stat", "--", "results/smoke/runs"], clone, env).stdout == ""
    )
    assert {p.name: p.read_bytes() for p in res.glob("*.csv")} == before
    record = json.loads((res / "reproduce.json").read_text())
    assert record["report"]["command"].endswith("--report-only --out results/smoke-tuned"), record[
        "report"
    ]


def test_recorded_command_names_the_record_out_folder():
    from normlab.report.record import command

    assert (
        command("s.py", ["--scale", "mini", "--out", "/tmp/x", "--record-out", "results/mini"])
        == "python s.py --scale mini --out results/mini"
    )
    assert (
        command("s.py", ["--out=/tmp/x", "--record-out=results/mini", "--no-train"])
        == "python s.py --no-train --out results/mini"
    )
    assert command("s.py", ["--out", "/tmp/x"]) == "python s.py --out /tmp/x"


def test_staged_copies_are_committed_as_they_come_and_nothing_new_is_not_an_error(tmp_path):
    clone = tmp_path / "clone"
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    sh(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(clone)], tmp_path, env)
    shutil.copy(REPO / "scripts" / "commit_results.sh", clone / "scripts" / "commit_results.sh")
    run = clone / "results" / "staging" / "smoke" / "runs" / "rt" / "layernorm" / "seed2"
    run.mkdir(parents=True)
    (run / "summary.json").write_text('{"status": "completed"}')
    (clone / "unrelated.txt").write_text("not part of the results")
    sh(["git", "add", "unrelated.txt"], clone, env)
    first = sh(
        ["bash", "scripts/commit_results.sh", "results/staging/smoke", "slice 1"], clone, env
    )
    assert "committed" in first.stdout
    files = sh(["git", "show", "--name-only", "--format=", "HEAD"], clone, env).stdout.split()
    assert files == [
        "results/staging/smoke/runs/rt/layernorm/seed2/summary.json"
    ]  # nothing else staged went in
    again = sh(
        ["bash", "scripts/commit_results.sh", "results/staging/smoke", "slice 1 again"], clone, env
    )
    assert again.returncode == 0 and "nothing new in results/staging/smoke" in again.stdout


def test_the_study_of_a_results_folder_comes_from_its_name_and_only_the_familys_folders_join():
    """commit_results.sh reports a folder as the study its name declares: results/mini-placement
    is the placement study at mini, outside the family of tests (the others' tables stay), not the
    fixed study at a scale "mini-placement"; a folder of no declared study is refused."""

    def where(folder):
        return subprocess.run(
            [sys.executable, "scripts/study_of_folder.py", folder],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )

    family = "results/mini results/mini-tuned results/mini-enwik8-prenorm"
    assert (
        where("results/mini-placement").stdout.split()
        == ["placement", "mini", "0"] + family.split()
    )
    assert where("results/mini-tuned").stdout.split()[:3] == ["tuned", "mini", "1"]
    assert where("results/smoke").stdout.split()[:3] == ["fixed", "smoke", "1"]
    bad = where("results/my-sweep")
    assert (
        bad.returncode == 2 and "results/my-sweep: no declared study's results folder" in bad.stderr
    )
