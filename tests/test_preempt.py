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
from normlab.files import read_json
from normlab.rundir import read_curves

# 4 batches per epoch, 2 micro-batches per step: steps cross epochs; dropout makes RNG matter
ARGS = [
    "task=synthetic_cls",
    "scale=smoke",
    "threads=1",
    "task.train.update_freq=2",
    "task.train.log_every=1",
    "task.train.eval_every=25",
    "task.train.checkpoint_every=0",
]
TIMING = ("examples_per_s", "tokens_per_s")


def curves(run_dir):
    return [
        {k: v for k, v in r.items() if k not in TIMING}
        for r in read_curves(run_dir / "curves.jsonl")
    ]


def results(run_dir):
    s = read_json(run_dir / "summary.json")
    return {
        k: s[k]
        for k in (
            "status",
            "steps",
            "epochs",
            "best_step",
            "valid",
            "test",
            "best_valid_score",
            "precision",
        )
    }


def last_step(path):
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return 0
    return max(
        (
            int(line.split('"step": ')[1].split(",")[0].split("}")[0])
            for line in lines
            if '"step": ' in line
        ),
        default=0,
    )


def weights(run_dir, name="last.pt"):
    return torch.load(run_dir / "checkpoints" / name, weights_only=True)["model"]


def start(tmp_path, args):
    env = {**os.environ, "NORMLAB_CACHE": str(TEST_CACHE)}
    env.pop("NORMLAB_FAULT", None)
    cmd = [
        sys.executable,
        "-m",
        "normlab.train",
        "progress=false",
        f"paths.root={tmp_path / 'runs'}",
        *args,
    ]
    return subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_for_step(proc, run, step):
    deadline = time.time() + 300
    while last_step(run / "curves.jsonl") < step and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)


# SIGTERM/SIGUSR1 are a scheduler preempting the job, SIGHUP a lost terminal, SIGINT is Ctrl-C: each writes a checkpoint
# at the current step and exits with its own code; a second Ctrl-C right after is ignored.
@pytest.mark.parametrize(
    "sig, code, status, repeat",
    [
        (signal.SIGTERM, 75, "preempted", 1),
        (signal.SIGINT, 130, "interrupted", 2),
        pytest.param(signal.SIGUSR1, 75, "preempted", 1, marks=pytest.mark.slow),
        # the terminal went away: it used to kill the run with no checkpoint (no handler)
        pytest.param(signal.SIGHUP, 75, "preempted", 1, marks=pytest.mark.slow),
    ],
)
@pytest.mark.slow
def test_signal_checkpoints_the_current_step_and_resumes_to_the_same_weights(
    tmp_path, sig, code, status, repeat
):
    args = [*ARGS, "task.train.max_steps=400"]
    ref_dir = tmp_path / "ref" / "run"
    run_job(args, tmp_path / "ref", run_dir=ref_dir)
    run = run_path(tmp_path, args)
    proc = start(tmp_path, args)
    wait_for_step(proc, run, 30)
    for _ in range(repeat):
        os.kill(proc.pid, sig)
        time.sleep(0.005)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == code, err[-2000:]
    assert "Traceback" not in err and f"{status}: {signal.Signals(sig).name} at step" in out
    summary = read_json(run / "summary.json")
    assert summary["status"] == status and "re-run the same command to resume" in summary["error"]
    ck = torch.load(run / "checkpoints" / "last.pt", weights_only=True)
    assert 30 <= ck["state"]["step"] == summary["steps"] < 400
    assert not (run / "traceback.txt").exists()

    done = run_cli(args, tmp_path)  # the same command resumes
    assert "completed, 400 steps" in done.stdout
    assert curves(run) == curves(ref_dir)
    assert results(run) == results(ref_dir)
    for name in ("last.pt", "best.pt"):
        a, b = weights(run, name), weights(ref_dir, name)
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_kill_inside_an_accumulation_window_resumes_equal(tmp_path, monkeypatch):
    args = [
        *ARGS,
        "task.train.max_steps=12",
        "task.train.checkpoint_every=2",
        "task.train.eval_every=5",
    ]
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
