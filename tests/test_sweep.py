"""A sweep keeps going: a diverged job ends as "diverged" with its curve so far, a crashed job as
"failed" with traceback.txt, bad input fails only its own job, and the multirun's exit status is
the number of failed jobs. Re-running the sweep skips finished jobs and retries failed ones."""

import math
import os
import subprocess
import sys

from helpers import TEST_CACHE, run_cli
from normlab.files import read_json
from normlab.rundir import read_curves

SWEEP = [
    "hydra.mode=MULTIRUN",
    "task=synthetic_cls",
    "scale=smoke",
    "threads=1",
    "norm=layernorm,rmsnorm,dyt",
    "seed=1,-1",
]
# rmsnorm crashes at step 2; dyt's loss turns NaN at step 4 (after the evaluation at step 3).
FAULTS = "raise:step:2:/rmsnorm/,nan:loss:4:/dyt/"


def test_sweep_survives_crash_divergence_and_bad_input(tmp_path, monkeypatch):
    monkeypatch.setenv("NORMLAB_FAULT", FAULTS)
    out = run_cli(SWEEP, tmp_path, check=False)
    root = tmp_path / "runs" / "smoke" / "default" / "synthetic_cls"
    assert out.returncode == 4, out.stderr[-3000:]  # rmsnorm + the three seed=-1 jobs
    assert "1 completed, 1 diverged, 4 failed" in out.stdout
    # one line per finished job says where the sweep is, with progress=false as sweeps run
    lines = [
        x for x in out.stdout.splitlines() if x.startswith("[normlab] sweep ") and " done (" in x
    ]
    assert [x.split(" done")[0] for x in lines] == [f"[normlab] sweep {k}/6" for k in range(1, 7)]
    assert (
        "left: " in lines[0] and "sweep 6/6 done (1 completed, 1 diverged, 4 failed)" in lines[-1]
    )

    ok = read_json(root / "layernorm" / "seed1" / "summary.json")
    assert ok["status"] == "completed" and ok["test"]["acc"] > 0

    crashed = root / "rmsnorm" / "seed1"
    s = read_json(crashed / "summary.json")
    assert s["status"] == "failed" and s["error"].startswith("InjectedFault: NORMLAB_FAULT")
    tb = (crashed / "traceback.txt").read_text()
    assert tb.startswith("Traceback") and "normlab/run/trainer.py" in tb and "InjectedFault" in tb

    diverged = root / "dyt" / "seed1"
    s = read_json(diverged / "summary.json")
    assert s["status"] == "diverged" and "training loss nan at step 4" in s["error"]
    assert s["steps"] == 3 and s["valid"]["acc"] > 0 and s["test"] == {}
    recs = read_curves(diverged / "curves.jsonl")
    assert [(r["step"], r["split"]) for r in recs] == [(2, "train"), (3, "train"), (3, "valid")]
    assert all(math.isfinite(r["loss"]) for r in recs)
    assert not (diverged / "traceback.txt").exists()

    for norm in ("layernorm", "rmsnorm", "dyt"):
        bad = read_json(root / norm / "seed-1" / "summary.json")
        assert bad["status"] == "failed" and bad["before_training"]
        assert "seed=-1: must be an integer from 0 to 4294967295" in bad["error"]
        assert sorted(p.name for p in (root / norm / "seed-1").iterdir()) == ["summary.json"]

    # Again, without the faults: finished jobs are skipped, the crashed one runs to the end.
    monkeypatch.delenv("NORMLAB_FAULT")
    before = {n: (root / n / "seed1" / "summary.json").read_bytes() for n in ("layernorm", "dyt")}
    out = run_cli(SWEEP, tmp_path, check=False)
    assert out.returncode == 3, out.stderr[-3000:]
    assert "already completed, skipped" in out.stdout and "already diverged, skipped" in out.stdout
    assert {
        n: (root / n / "seed1" / "summary.json").read_bytes() for n in ("layernorm", "dyt")
    } == before
    assert read_json(crashed / "summary.json")["status"] == "completed"
    assert not (crashed / "traceback.txt").exists()


def test_a_single_crashed_job_exits_3_with_its_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("NORMLAB_FAULT", "raise:step:2")
    out = run_cli(["task=synthetic_cls", "scale=smoke", "threads=1"], tmp_path, check=False)
    run_dir = tmp_path / "runs" / "smoke" / "default" / "synthetic_cls" / "layernorm" / "seed1"
    assert out.returncode == 3 and "failed" in out.stdout
    assert read_json(run_dir / "summary.json")["status"] == "failed"
    assert "InjectedFault" in (run_dir / "traceback.txt").read_text()


def test_multirun_with_default_paths(tmp_path):
    # the README's and `make sweep`'s command: no paths.root, so run directories land under the
    # working directory (the default root once interpolated ${hydra:runtime.cwd}, which the
    # sweeper cannot resolve: every plain --multirun failed before launching a job)
    env = {**os.environ, "NORMLAB_CACHE": str(TEST_CACHE)}
    cmd = [
        sys.executable,
        "-m",
        "normlab.train",
        "--multirun",
        "task=synthetic_cls",
        "scale=smoke",
        "norm=layernorm,dyt",
        "seed=1",
        "threads=1",
        "progress=false",
    ]
    out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    for norm in ("layernorm", "dyt"):
        summary = read_json(
            tmp_path
            / "runs"
            / "smoke"
            / "default"
            / "synthetic_cls"
            / norm
            / "seed1"
            / "summary.json"
        )
        assert summary["status"] == "completed"
