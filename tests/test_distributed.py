"""DistributedDataParallel through torchrun (gloo on CPU): 2 processes with the same global batch
follow the same curve as 1 process, and only rank 0 writes the run directory."""

import math
import os
import shutil
import socket
import subprocess
import sys
import zlib

import pytest
import torch

from helpers import REPO, TEST_CACHE, run_cli, run_job, run_path
from normlab.files import read_json
from normlab.run.distributed import launcher_env, shard
from normlab.rundir import read_curves

# dropout 0: one process and two draw different dropout masks for the same example.
ARGS = [
    "task=synthetic_cls",
    "scale=smoke",
    "threads=1",
    "task.model.dropout=0",
    "task.train.max_steps=8",
]
RUN = "runs/smoke/default/synthetic_cls/layernorm/dropout=0,max_steps=8/seed1"


def torchrun(tmp_path, args, nproc=2, fault=None):
    env = {**os.environ, "NORMLAB_CACHE": str(TEST_CACHE)}
    env.pop("NORMLAB_FAULT", None)
    if fault:
        env["NORMLAB_FAULT"] = fault
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={nproc}",
        "-m",
        "normlab.train",
        "progress=false",
        f"paths.root={tmp_path / 'runs'}",
        *args,
    ]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def test_shard_splits_every_batch_first_tensor():
    tokens, labels = torch.arange(10).view(5, 2), torch.arange(5)
    (t0, l0, tag), real0 = shard((tokens, labels, "meta"), 0, 2)
    (t1, l1, _), real1 = shard((tokens, labels, "meta"), 1, 2)
    assert real0 and real1 and tag == "meta"
    assert (
        l0.tolist() == [0, 1]
        and l1.tolist() == [2, 3, 4]
        and torch.equal(torch.cat([t0, t1]), tokens)
    )
    batch = {"src": tokens[:2], "lengths": labels[:2], "vocab": torch.zeros(7)}
    parts = [shard(batch, r, 3) for r in range(3)]
    assert [real for _, real in parts] == [True, True, False]  # 2 examples, 3 ranks
    assert parts[2][0]["src"].tolist() == [[0, 1]]  # a stand-in example, weighted 0
    assert parts[1][0]["vocab"].shape == (7,)  # not batch-sized: left whole


def test_slurm_and_submitit_tasks_get_torchrun_variables(monkeypatch):
    port = str(20000 + zlib.crc32(b"123456") % 20000)
    env = {
        "SLURM_PROCID": "3",
        "SLURM_NTASKS": "8",
        "SLURM_LOCALID": "1",
        "SLURM_JOB_ID": "123456",
        "SLURM_LAUNCH_NODE_IPADDR": "10.0.0.7",
    }
    assert launcher_env(env) == {
        "RANK": "3",
        "WORLD_SIZE": "8",
        "LOCAL_RANK": "1",
        "MASTER_ADDR": "10.0.0.7",
        "MASTER_PORT": port,
    }
    assert (
        launcher_env({**env, "WORLD_SIZE": "8"}) == {}
    )  # torchrun inside SLURM: torchrun's values win
    assert launcher_env({**env, "SLURM_NTASKS": "1"}) == {}
    pytest.importorskip("submitit")
    local = {
        "SUBMITIT_EXECUTOR": "local",
        "SUBMITIT_LOCAL_JOB_ID": "123456",
        "SUBMITIT_LOCAL_NTASKS": "2",
        "SUBMITIT_LOCAL_JOB_NUM_NODES": "1",
        "SUBMITIT_LOCAL_NODEID": "0",
        "SUBMITIT_LOCAL_GLOBALID": "1",
        "SUBMITIT_LOCAL_LOCALID": "1",
    }
    for k, v in local.items():
        monkeypatch.setenv(k, v)
    assert launcher_env(local) == {
        "RANK": "1",
        "WORLD_SIZE": "2",
        "LOCAL_RANK": "1",
        "MASTER_ADDR": socket.gethostname(),
        "MASTER_PORT": port,
    }


def test_two_processes_follow_the_one_process_curve(tmp_path):
    _, one = run_job(ARGS, tmp_path / "one")
    out = torchrun(tmp_path / "two", ARGS)
    assert out.returncode == 0, out.stderr[-3000:]
    two = tmp_path / "two" / RUN
    assert out.stdout.count(": completed, ") == 1  # rank 1 trains silently
    a, b = read_curves(one / "curves.jsonl"), read_curves(two / "curves.jsonl")
    assert [(r["step"], r["split"]) for r in a] == [(r["step"], r["split"]) for r in b]
    assert [r["step"] for r in a if r["split"] == "train"] == [2, 3, 4, 6, 8]
    for x, y in zip(a, b):
        for key in ("loss", "acc", "lr"):
            if key in x:
                assert math.isclose(x[key], y[key], rel_tol=1e-5), (x, y)
    s = read_json(two / "summary.json")
    assert s["status"] == "completed" and s["world_size"] == 2 and s["steps"] == 8
    # rank 0 alone wrote the run directory: no second set of files, no temp files
    files = sorted(p.relative_to(two).as_posix() for p in two.rglob("*") if p.is_file())
    assert files == [
        "checkpoints/best.pt",
        "checkpoints/last.pt",
        "checkpoints/prev.pt",
        "config.yaml",
        "curves.jsonl",
        "overrides.yaml",
        "summary.json",
        "train.log",
    ]
    ck = torch.load(two / "checkpoints" / "last.pt", weights_only=True)
    assert (
        ck["world"] == 2
        and len(ck["rng"]) == 2
        and not any(k.startswith("module.") for k in ck["model"])
    )


@pytest.mark.slow
def test_two_process_run_killed_and_resumed_equals_uninterrupted(tmp_path):
    args = [a for a in ARGS if "dropout" not in a] + [
        "task.train.checkpoint_every=2"
    ]  # dropout on: per-rank RNG
    assert torchrun(tmp_path / "ref", args).returncode == 0
    out = torchrun(tmp_path / "cut", args, fault="kill:step:5")
    assert out.returncode != 0 and "SIGKILL" in out.stderr, out.stderr[-3000:]
    out = torchrun(tmp_path / "cut", args)
    assert out.returncode == 0, out.stderr[-3000:]
    drop = lambda recs: [{k: v for k, v in r.items() if k != "examples_per_s"} for r in recs]  # noqa: E731
    assert drop(read_curves(tmp_path / "cut" / RUN / "curves.jsonl")) == drop(
        read_curves(tmp_path / "ref" / RUN / "curves.jsonl")
    )
    shutil.rmtree(tmp_path / "cut")


@pytest.mark.slow
def test_submitit_tasks_train_as_one_ddp_job(tmp_path):
    """Hydra's submitit launcher (local mode: the SLURM code path on this machine), 2 tasks."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    _, one = run_job(ARGS, tmp_path / "one")
    out = run_cli(
        [
            "hydra.mode=MULTIRUN",
            "hydra/launcher=submitit_local",
            "hydra.launcher.tasks_per_node=2",
            "hydra.launcher.timeout_min=10",
            *ARGS,
        ],
        tmp_path / "two",
    )
    assert "1 completed" in out.stdout
    two = tmp_path / "two" / RUN
    assert read_json(two / "summary.json")["world_size"] == 2
    for x, y in zip(
        read_curves(one / "curves.jsonl"), read_curves(two / "curves.jsonl"), strict=True
    ):
        assert (x["step"], x["split"]) == (y["step"], y["split"])
        assert math.isclose(x["loss"], y["loss"], rel_tol=1e-5)


@pytest.mark.slow
def test_two_processes_with_update_freq_follow_the_one_process_curve(tmp_path):
    """no_sync on the first micro-batch, the all-reduce in the last one's backward, and the
    window's units counted over both ranks: the same updates as one process."""
    args = [*ARGS, "task.train.update_freq=2", "task.train.max_steps=4", "task.train.log_every=1"]
    _, one = run_job(args, tmp_path / "one")
    out = torchrun(tmp_path / "two", args)
    assert out.returncode == 0, out.stderr[-3000:]
    two = run_path(tmp_path / "two", args)  # its folder names the keys these args vary
    a, b = read_curves(one / "curves.jsonl"), read_curves(two / "curves.jsonl")
    assert [r["step"] for r in a if r["split"] == "train"] == [1, 2, 3, 4] and b
    for x, y in zip(a, b, strict=True):
        assert (x["step"], x["split"]) == (y["step"], y["split"])
        assert math.isclose(x["loss"], y["loss"], rel_tol=1e-5), (x, y)
