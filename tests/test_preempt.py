"""Preemption with a real signal, and kills inside an accumulation window: the resumed run equals
an uninterrupted one (CPU, deterministic), and a preempted run is neither completed nor failed."""
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from helpers import REPO, TEST_CACHE, run_cli, run_job, run_path
from normlab.rundir import read_curves, read_json

# 4 batches per epoch, 2 micro-batches per step: steps cross epochs; dropout makes RNG matter
ARGS = ["task=synthetic_cls", "scale=smoke", "threads=1", "task.train.update_freq=2", "task.train.log_every=1",
        "task.train.eval_every=25", "task.train.checkpoint_every=0"]
TIMING = ("examples_per_s", "tokens_per_s")


def curves(run_dir):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in read_curves(run_dir / "curves.jsonl")]


def results(run_dir):
    s = read_json(run_dir / "summary.json")
    return {k: s[k] for k in ("status", "steps", "epochs", "best_step", "valid", "test", "best_valid_score",
                              "precision")}


def last_step(path):
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return 0
    return max((int(line.split('"step": ')[1].split(",")[0].split("}")[0]) for line in lines
                if '"step": ' in line), default=0)


@pytest.mark.parametrize("sig", [signal.SIGTERM, pytest.param(signal.SIGUSR1, marks=pytest.mark.slow)])
def test_signal_checkpoints_the_current_step_exits_75_and_resumes_equal(tmp_path, sig):
    args = [*ARGS, "task.train.max_steps=400"]
    ref = run_job(args, tmp_path / "ref", run_dir=tmp_path / "ref" / "run")[1]
    env = {**os.environ, "NORMLAB_CACHE": str(TEST_CACHE)}
    env.pop("NORMLAB_FAULT", None)
    cmd = [sys.executable, "-m", "normlab.train", "progress=false", f"paths.root={tmp_path / 'runs'}", *args]
    run = run_path(tmp_path, args)
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while last_step(run / "curves.jsonl") < 30 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, sig)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 75, err[-2000:]
    summary = read_json(run / "summary.json")
    assert summary["status"] == "preempted" and "signal" in summary["error"]
    ck = torch.load(run / "checkpoints" / "last.pt", weights_only=True)
    assert 30 <= ck["state"]["step"] == summary["steps"] < 400
    assert not (run / "traceback.txt").exists()

    done = run_cli(args, tmp_path)  # the same command resumes
    assert "completed" in done.stdout
    assert curves(run) == curves(ref)
    assert results(run) == results(ref)


def test_kill_inside_an_accumulation_window_resumes_equal(tmp_path, monkeypatch):
    args = [*ARGS, "task.train.max_steps=12", "task.train.checkpoint_every=2", "task.train.eval_every=5"]
    ref = run_job(args, tmp_path / "ref", run_dir=tmp_path / "ref" / "run")[1]
    monkeypatch.setenv("NORMLAB_FAULT", "kill:loss:7")  # the first micro-batch of step 7
    out = run_cli(args, tmp_path, check=False)
    monkeypatch.delenv("NORMLAB_FAULT")
    assert out.returncode == -signal.SIGKILL
    run = run_path(tmp_path, args)
    assert torch.load(run / "checkpoints" / "last.pt", weights_only=True)["state"]["step"] == 6
    run_cli(args, tmp_path)
    assert curves(run) == curves(ref)
    assert results(run) == results(ref)
