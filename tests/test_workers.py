"""A sweep whose jobs run in joblib's worker processes (``experiment=xu2019``'s launcher): a stop
to the sweep's process reaches the workers and ends the sweep with 75; a sweep killed outright
leaves no worker training on (each stops its job with a checkpoint and exits)."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import REPO, TEST_CACHE
from normlab.run.runlock import lock_holder

LONG = ["task.train.max_steps=100000", "task.train.max_epochs=100000"]


def start_sweep(tmp_path: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "normlab.train", "-m", "hydra/launcher=joblib"]
    cmd += [
        "hydra.launcher.n_jobs=2",
        "task=synthetic_cls",
        "scale=smoke",
        "norm=layernorm,rmsnorm",
    ]
    cmd += [f"paths.root={tmp_path / 'runs'}", "task.train.checkpoint_every=50", "threads=1"]
    cmd += ["progress=false", *LONG]
    env = {**os.environ, "NORMLAB_CACHE": str(TEST_CACHE)}
    return subprocess.Popen(
        cmd,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def run_dirs(tmp_path: Path, timeout: float = 180) -> list[Path]:
    """The sweep's two run directories, once both have trained past their first checkpoint."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        dirs = [p.parent.parent for p in (tmp_path / "runs").rglob("checkpoints/last.pt")]
        if len(dirs) == 2:
            return dirs
        time.sleep(0.5)
    raise AssertionError("the workers never wrote their first checkpoints")


def statuses(dirs: list[Path]) -> list[str]:
    return [json.loads((d / "summary.json").read_text())["status"] for d in dirs]


@pytest.mark.slow  # make test-slow: about 40 s
def test_sigterm_to_the_sweep_alone_stops_its_workers_and_exits_75(tmp_path):
    proc = start_sweep(tmp_path)
    dirs = run_dirs(tmp_path)
    os.kill(proc.pid, signal.SIGTERM)  # the sweep's process only, not its group: it died with 143
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 75, out[-3000:]
    assert statuses(dirs) == ["preempted", "preempted"]
    assert "Re-run the same command to resume" in out and "Traceback" not in out
    assert [lock_holder(d) for d in dirs] == [None, None]


@pytest.mark.slow  # make test-slow: about a minute
def test_a_worker_stopped_alone_leaves_the_other_training_and_the_sweep_ends_75(tmp_path):
    """A job that stops in its worker returns to the sweep: a worker's exit there would make
    joblib kill the other worker while it writes its checkpoint (no summary: its run lost). Once
    every job has returned, the sweep says which stopped and exits 75: it is not done."""
    proc = start_sweep(tmp_path)
    first, other = run_dirs(tmp_path)
    pid = int(re.match(r"pid (\d+)", lock_holder(first)).group(1))
    os.kill(pid, signal.SIGTERM)  # the first job's worker alone
    deadline = time.time() + 60
    while time.time() < deadline and not (first / "summary.json").exists():
        time.sleep(0.5)
    assert statuses([first]) == ["preempted"]
    time.sleep(5)  # joblib's abort, had the worker exited, kills the other worker by now
    assert proc.poll() is None and lock_holder(other), proc.poll()
    # the other stopped alone too: the sweep ends on its own, not done, with the stop's code
    os.kill(int(re.match(r"pid (\d+)", lock_holder(other)).group(1)), signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 75, out[-3000:]
    assert statuses([first, other]) == ["preempted", "preempted"] and "Traceback" not in out
    assert "2 point(s) stopped before their end: re-run the same command" in out, out[-3000:]


@pytest.mark.slow  # make test-slow: about 40 s
def test_a_sweep_killed_outright_leaves_no_worker_training(tmp_path):
    proc = start_sweep(tmp_path)
    dirs = run_dirs(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.time() + 60  # the workers trained on for the whole run (22+ minutes seen)
    while time.time() < deadline and any(lock_holder(d) for d in dirs):
        time.sleep(0.5)
    assert [lock_holder(d) for d in dirs] == [None, None]
    assert statuses(dirs) == ["preempted", "preempted"]  # each wrote its checkpoint first
