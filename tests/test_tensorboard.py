"""logger=tensorboard writes the same curves as curves.jsonl (read back with TensorBoard's own
EventAccumulator) and an hparams entry with the final metrics; it combines with wandb."""

import pytest

from helpers import run_job
from normlab.rundir import read_curves

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2  # noqa: E402

ARGS = [
    "task=synthetic_cls",
    "scale=smoke",
    "threads=1",
    "task.train.eval_every=2",
    "task.train.log_every=1",
    "task.train.probe_every=2",
]


def scalars(run_dir):
    acc = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"scalars": 0})
    acc.Reload()
    return acc, {
        tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]
    }


def expected(run_dir, split, key):
    return [
        (r["step"], pytest.approx(r[key], rel=1e-6))
        for r in read_curves(run_dir / "curves.jsonl")
        if r.get("split") == split and key in r
    ]


def test_event_files_hold_the_same_curves(tmp_path):
    summary, run_dir = run_job(
        [*ARGS, "logger=tensorboard", "norm=adanorm", "norm.options.C=2"], tmp_path
    )
    assert summary["status"] == "completed"
    acc, got = scalars(run_dir)
    for split, key in [
        ("train", "loss"),
        ("train", "lr"),
        ("train", "examples_per_s"),
        ("valid", "loss"),
        ("valid", "acc"),
        ("test", "acc"),
        ("train", "grad/all/in_var"),
    ]:
        name = key if "/" in key else f"{split}/{key}"
        want = expected(run_dir, split, key)
        assert want and got[name] == want, name
    # hparams: the run's coordinates and varied options against its final metrics
    assert got["hparam/test/acc"] == [(0, pytest.approx(summary["test"]["acc"]))]
    assert got["hparam/best_valid_score"] == [(0, pytest.approx(summary["best_valid_score"]))]
    content = acc.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    hp = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info.hparams
    assert hp["norm"].string_value == "adanorm" and hp["norm.C"].number_value == 2
    assert hp["C"].number_value == 2 and hp["seed"].number_value == 1


def test_loggers_combine(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    _, run_dir = run_job([*ARGS, "logger=[wandb,tensorboard]"], tmp_path)
    assert list((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))
    _, got = scalars(run_dir)
    assert got["valid/acc"] == expected(run_dir, "valid", "acc")
    import wandb

    wandb.teardown()


def test_missing_tensorboard_never_stops_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(__import__("sys").modules, "torch.utils.tensorboard", None)
    summary, run_dir = run_job([*ARGS, "logger=tensorboard"], tmp_path)
    assert summary["status"] == "completed" and read_curves(run_dir / "curves.jsonl")
    assert "tensorboard init (pip install 'normlab[tensorboard]') failed" in capsys.readouterr().err
