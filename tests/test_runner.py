"""End to end on the real RT data: every norm variant trains and writes its run directory; a
``-m`` sweep makes one run directory per job; finished runs are skipped; a changed config in an
existing run directory is refused without touching it."""

import math

import pytest
import torch

from helpers import run_cli, run_job
from normlab.config import ConfigError
from normlab.files import read_json, read_yaml
from normlab.norms import NORMS
from normlab.rundir import criterion, read_curves

RT = ["task=rt", "scale=smoke", "threads=1"]


def snapshot(root):
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("norm", sorted(NORMS))
def test_smoke_run_per_norm_on_real_rt(data_dir, tmp_path, norm):
    summary, run_dir = run_job([*RT, f"norm={norm}"], tmp_path, data_dir=data_dir)
    assert summary["status"] == "completed", summary["error"]
    assert summary["norm"] == norm and summary["steps"] == 6
    # RT has no official split: 10,662 sentences, seeded 80/10/10
    assert summary["data"]["source"] == "real"
    assert summary["data"]["sizes"] == {"train": 8530, "valid": 1066, "test": 1066}
    recs = read_curves(run_dir / "curves.jsonl")
    assert [(r["step"], r["split"]) for r in recs if r["split"] != "train"] == [
        (3, "valid"),
        (6, "valid"),
        (6, "test"),
    ]
    assert [r["step"] for r in recs if r["split"] == "train"] == [2, 3, 4, 6]
    assert all(math.isfinite(r["loss"]) for r in recs)
    test = recs[-1]
    assert summary["test"] == {"loss": test["loss"], "acc": test["acc"]}
    assert 0 < test["acc"] < 100 and test["acc"] * 1066 / 100 == pytest.approx(
        round(test["acc"] * 10.66)
    )
    assert read_yaml(run_dir / "config.yaml")["norm"]["name"] == norm
    assert summary["params"] > 0 and summary["versions"]["torch"]
    # the machine: runs of one seed are paired across norms only on one CPU and instruction set
    machine = summary["machine"]
    assert machine["cpu"] and machine["isa"] == torch.backends.cpu.get_cpu_capability()
    assert machine["threads"] >= 1 and machine["native_kernels"]


def test_multirun_over_two_norms_makes_two_run_dirs(data_dir, tmp_path):
    out = run_cli(
        ["hydra.mode=MULTIRUN", *RT, "norm=layernorm,rmsnorm"], tmp_path, data_dir=data_dir
    )
    root = tmp_path / "runs" / "smoke" / "default" / "rt"
    assert sorted(p.name for p in root.iterdir()) == ["layernorm", "rmsnorm"]
    for norm in ("layernorm", "rmsnorm"):
        s = read_json(root / norm / "seed1" / "summary.json")
        assert s["status"] == "completed" and s["norm"] == norm
        assert read_curves(root / norm / "seed1" / "curves.jsonl")[-1]["split"] == "test"
    assert "2 completed" in out.stdout


def test_completed_run_is_skipped_and_changed_config_refused(data_dir, tmp_path, capsys):
    first, run_dir = run_job(RT, tmp_path, data_dir=data_dir)
    before = snapshot(run_dir)
    again, _ = run_job(RT, tmp_path, data_dir=data_dir)
    assert "already completed, skipped" in capsys.readouterr().out
    assert again == first and snapshot(run_dir) == before
    with pytest.raises(
        ConfigError,
        match=r"already holds a run with a different config \(keys "
        r"\['task.model.layers', 'task.train.lr'\]\); use another name=",
    ):
        run_job([*RT, "task.train.lr=0.01", "task.model.layers=2"], tmp_path, data_dir=data_dir)
    assert snapshot(run_dir) == before


@pytest.mark.parametrize("select", ["metric", "loss"])
def test_summary_records_what_selected_the_checkpoint(data_dir, tmp_path, select):
    summary, run_dir = run_job([*RT, f"task.train.select={select}"], tmp_path, data_dir=data_dir)
    valid = {r["step"]: r for r in read_curves(run_dir / "curves.jsonl") if r["split"] == "valid"}
    best = valid[summary["best_step"]]
    expect = ("acc", best["acc"], True) if select == "metric" else ("loss", best["loss"], False)
    assert summary["selected_by"] == expect[0]
    assert criterion(summary) == pytest.approx(expect)
    # a summary written before selected_by existed: read back from its numbers
    old = {k: v for k, v in summary.items() if k != "selected_by"}
    assert criterion(old)[0] == expect[0]


def test_a_recorded_selection_wins_over_a_coincidence():
    # selected on the loss, while the kept score happens to equal the best valid accuracy
    summary = {"metric": "acc", "higher_is_better": True, "best_valid_score": 70.0,
               "best_valid": {"acc": 70.0, "loss": -70.0}}  # fmt: skip
    assert criterion(summary)[0] == "acc"
    assert criterion({**summary, "selected_by": "loss"}) == ("loss", -70.0, False)
