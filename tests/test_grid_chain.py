"""scripts/grid.sh's chains (`start A budget ... --then B ...`) against a stand-in driver: the next
study starts only once the one before completed, with the minutes left of the one budget, and a
stop ends the chain. The real driver in a detached slice: tests/test_study.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Prints what the real driver prints at the end of a slice, as the study's STUB_<study> says:
# "complete", "left" (the budget stopped it with jobs left), "fail" (exit 1) or "wait" (runs
# until SIGTERM, then exits 0 complete: the stop came as its last job finished).
STUB = r"""#!/usr/bin/env bash
study=$4
echo "$study $*" >> "$STUB_CALLS"
case $(eval echo "\$STUB_$study") in
  complete) echo "[reproduce] study complete: 3 staged copies replace 0 reported ones" ;;
  left) echo "[reproduce] 5/9 runs finished (5 trained this slice), 4 jobs left (stopped: budget)" ;;
  fail) echo "[reproduce] 8/9 runs finished, 1 jobs left; 1 failed: x"; exit 1 ;;
  wait) trap 'echo "[reproduce] SIGTERM; study complete: 9 staged copies"; exit 0' TERM
        echo "[reproduce] start x"; while :; do sleep 0.1; done ;;
esac
"""


@pytest.fixture()
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "grid.sh", root / "scripts" / "grid.sh")
    (root / "results" / "staging" / "mini-placement" / "runs").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    stub = tmp_path / "python"
    stub.write_text(STUB)
    stub.chmod(0o755)
    return root


def grid(repo: Path, *args, **stubs) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHON": str(repo.parent / "python"),
        "GRID_DIR": str(repo / "runs" / "grid"),
        "STUB_CALLS": str(repo / "calls"),
        "GRID_STOP_WAIT": "20",
        **{f"STUB_{k}": v for k, v in stubs.items()},
    }
    return subprocess.run(
        ["bash", "scripts/grid.sh", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def calls(repo: Path, n: int) -> list[str]:
    """The stand-in driver's slices once the chain has ended (its last pid file gone); `status`
    asks for the plan too."""
    deadline = time.time() + 30
    while time.time() < deadline:
        done = not any((repo / "runs" / "grid").glob("*.pid"))
        if done and (repo / "calls").exists():
            break
        time.sleep(0.1)
    lines = [x for x in (repo / "calls").read_text().splitlines() if "--plan" not in x]
    assert len(lines) == n, lines
    return lines


def budget_of(call: str) -> float:
    words = call.split()
    return float(words[words.index("--budget-min") + 1])


CHAIN = ["start", "placement", "60", "--jobs", "2", "--then", "tuned", "--tasks", "enwik8"]


def test_a_completed_study_hands_the_rest_of_the_budget_to_the_next(repo):
    out = grid(repo, *CHAIN, "--commit", "abc", "--", "x=1", placement="complete", tuned="left")
    assert out.returncode == 0 and "started placement then tuned (pid" in out.stdout, out.stderr
    first, second = calls(repo, 2)
    assert first.startswith("placement ") and "--jobs 2" in first and "tuned" not in first
    assert second.endswith("--tasks enwik8 --commit abc -- x=1")
    assert 59 <= budget_of(second) <= budget_of(first) <= 60
    log = (repo / "runs" / "grid" / "tuned.log").read_text()
    assert "--study tuned --budget-min" in log and "4 jobs left" in log


@pytest.mark.parametrize("how", ["left", "fail"])
def test_a_study_that_did_not_complete_ends_the_chain(repo, how):
    out = grid(repo, *CHAIN, "--commit", "abc", placement=how, tuned="complete")
    assert out.returncode == 0, out.stderr
    (call,) = calls(repo, 1)
    assert call.startswith("placement ")
    log = (repo / "runs" / "grid" / "placement.log").read_text()
    code = 1 if how == "fail" else 0
    assert f"placement did not complete (exit {code}): the studies after it wait" in log


def test_a_stop_reaches_the_running_study_and_starts_no_later_one(repo):
    assert grid(repo, *CHAIN, "--commit", "abc", placement="wait", tuned="complete").returncode == 0
    log = repo / "runs" / "grid" / "placement.log"
    deadline = time.time() + 20
    while "start x" not in (log.read_text() if log.exists() else "") and time.time() < deadline:
        time.sleep(0.1)
    assert "placement: running" in grid(repo, "status", "placement").stdout
    assert grid(repo, "start", "fixed", "5").returncode == 1  # one study at a time
    stopped = grid(repo, "stop", "placement")
    assert stopped.returncode == 0 and "placement stopped" in stopped.stdout, stopped.stderr
    assert "SIGTERM" in log.read_text()
    calls(repo, 1)
    assert not (repo / "runs" / "grid" / "tuned.log").exists()


@pytest.mark.parametrize(
    "args,message",
    [
        (CHAIN, "--then tuned: a chained study names its commit (--commit <sha>"),
        (CHAIN[:6], "--then needs a study"),
        ([*CHAIN[:6], "tunde", "--commit", "x"], "unknown study 'tunde'"),
        ([*CHAIN, "--commit", "x", "--then", "placement", "--commit", "x"], "appears twice"),
    ],
)
def test_a_chain_that_cannot_run_is_refused_before_anything_starts(repo, args, message):
    out = grid(repo, *args, placement="complete", tuned="complete")
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert not (repo / "calls").exists() and not (repo / "runs" / "grid").exists()
