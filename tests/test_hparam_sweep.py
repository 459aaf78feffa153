"""Sweeps over any key: one run directory per setting, skip on re-run, a point whose config cannot
be composed fails alone, one process per run directory, and an Optuna search that resumes."""
import json
import math
import re
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers import TEST_CACHE, compose_cfg, run_cli
from normlab import setting
from normlab.config import load_job
from normlab.rundir import read_json
from normlab.runlock import RunLock, RunLocked

ROOT = ("runs", "smoke", "default", "synthetic_cls")
BASE = ["task=synthetic_cls", "scale=smoke", "threads=1"]


def test_setting_is_the_diff_against_the_defaults(tmp_path):
    def label(*overrides):
        job = load_job(compose_cfg([*BASE, *overrides], tmp_path))
        return setting.label(job.setting, job.config)
    assert label() == ""
    assert label("task.train.lr=2e-3") == "lr=0.002"
    assert label("task.train.lr=0.001") == ""                    # = the task's own lr: not a new setting
    assert label("norm=adanorm", "norm.options.C=2", "task.train.lr=2e-3") == "C=2,lr=0.002"
    assert label("norm=adanorm", "norm.options.C=1") == ""       # 1 == the config file's 1.0
    assert label("task.data.reader={n_train:128}") == "n_train=128"
    assert label("task.train.warmup_init_ratio=0.5") == "warmup_init_ratio=0.5"   # only in TrainConfig
    assert label("~task.model.dropout") == "~dropout"
    assert label("threads=2", "progress=false", "name=x", "seed=3") == ""   # runtime and grid keys
    assert label("task.model.layers=3", "task.model.normalize_before=false") == "layers=3,normalize_before=false"


def test_sweep_over_any_key_writes_one_run_per_point_and_skips_on_rerun(tmp_path):
    args = ["hydra.mode=MULTIRUN", *BASE, "norm=adanorm", "norm.options.C=1,2", "task.train.lr=1e-3,2e-3"]
    out = run_cli(args, tmp_path)
    assert "4 completed" in out.stdout
    root = tmp_path.joinpath(*ROOT, "adanorm")
    dirs = sorted(str(p.parent.relative_to(root)) for p in root.rglob("summary.json"))
    assert dirs == ["C=2,lr=0.002/seed1", "C=2/seed1", "lr=0.002/seed1", "seed1"]
    for d in dirs:
        s = read_json(root / d / "summary.json")
        assert s["status"] == "completed" and s["setting"] == {
            "C=2,lr=0.002/seed1": {"C": 2, "lr": 0.002}, "C=2/seed1": {"C": 2},
            "lr=0.002/seed1": {"lr": 0.002}, "seed1": {}}[d]
    out = run_cli(args, tmp_path)
    assert out.stdout.count("already completed, skipped") == 4


def test_a_point_that_cannot_be_composed_fails_alone(tmp_path):
    # Hydra's basic sweeper composes every point first and stops the sweep at the first error
    out = run_cli(["hydra.mode=MULTIRUN", *BASE, "task.train.max_steps=4,many", "task.model.layerz=1,2"],
                  tmp_path, check=False)
    assert out.returncode == 4, out.stderr[-2000:]
    assert "4 invalid" in out.stdout
    assert re.search(r"sweep point not run: .*task.train.max_steps=many task.model.layerz=2\n", out.stderr)
    assert "did you mean task.model.layers?" in out.stderr
    out = run_cli(["hydra.mode=MULTIRUN", *BASE, "task.train.max_steps=4,many", "task.model.layers=1"],
                  tmp_path, check=False)
    assert out.returncode == 1 and "1 completed, 1 invalid" in out.stdout, out.stderr[-2000:]
    assert "could not be converted to Integer" in out.stderr
    assert read_json(tmp_path.joinpath(*ROOT, "layernorm", "max_steps=4", "seed1", "summary.json"))["status"] == "completed"


def test_second_process_on_the_same_run_directory_stops_with_a_message(tmp_path):
    run_dir = tmp_path.joinpath(*ROOT, "layernorm", "seed1")
    with RunLock(run_dir):
        with pytest.raises(RunLocked, match=r"being trained by another process \(pid \d+ on .* since"):
            with RunLock(run_dir):
                pass
        out = run_cli(BASE, tmp_path, check=False)
        assert out.returncode == 4 and "being trained by another process" in out.stderr
        assert list(run_dir.iterdir()) == []        # the refused job wrote nothing (Hydra made the folder)
        assert run_dir.parent.joinpath(".seed1.lock").exists()
    assert not run_dir.parent.joinpath(".seed1.lock").exists()
    with RunLock(run_dir):     # released: a later process gets it
        pass


def _trials(journal_dir):
    import optuna
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(journal_dir / "optuna.journal")))
    return optuna.load_study(study_name="synthetic_cls-layernorm-lr", storage=storage).get_trials()


def test_optuna_search_is_killed_then_resumes(tmp_path):
    pytest.importorskip("optuna")
    env = {**os.environ, "NORMLAB_CACHE": str(TEST_CACHE)}
    cmd = [sys.executable, "-m", "normlab.tune", "--search", "lr", "--trials", "6", "--", *BASE,
           "progress=false", "task.train.max_steps=12", f"paths.root={tmp_path / 'runs'}"]
    sweep = tmp_path / "runs" / "smoke" / "tune_lr"
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 300
    # kill the search while trial 2's job is training (its curves exist, its summary does not)
    while proc.poll() is None and time.time() < deadline:
        runs = list(sweep.glob("synthetic_cls/layernorm/*/seed1/curves.jsonl")) if sweep.exists() else []
        done = list(sweep.glob("synthetic_cls/layernorm/*/seed1/summary.json")) if sweep.exists() else []
        if len(done) == 2 and len(runs) == 3:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.02)
    proc.wait()
    time.sleep(1)   # the orphaned trial job (its own process) finishes or dies on its own
    before = _trials(sweep)
    assert [t.state.name for t in before][:2] == ["COMPLETE", "COMPLETE"] and before[2].state.name == "RUNNING"
    killed = before[2].params

    out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "resuming: 1 trial(s) of a killed search queued again" in out.stdout
    after = _trials(sweep)
    complete = [t for t in after if t.state.name == "COMPLETE"]
    assert len(complete) == 6 and after[2].user_attrs.get("stale") is True
    assert after[3].params == killed and after[3].user_attrs["resumes_trial"] == 2   # the same point again
    runs = {t.user_attrs["run_dir"] for t in complete}
    assert len(runs) == 6 and all(read_json(os.path.join(r, "summary.json"))["status"] == "completed"
                                  for r in (tmp_path / d if not os.path.isabs(d) else d for d in runs))
    table = (sweep / "trials-synthetic_cls-layernorm-lr.md").read_text()
    assert "stale (killed; re-queued)" in table and table.count("| complete |") == 6 and "Best: trial" in table
    best = max(complete, key=lambda t: t.value)
    assert json.loads(table.split("higher is better), ")[1]) == best.user_attrs["used"]


def test_the_objective_of_a_task_that_selects_on_the_loss_is_its_validation_loss():
    from normlab.runner import objective
    # IWSLT/PTB: BLEU/UAS is not computed on validation; the checkpoint was chosen on the loss
    iwslt = {"status": "completed", "metric": "bleu", "higher_is_better": True,
             "best_valid": {"loss": 5.1}, "best_valid_score": -5.1}
    assert objective(iwslt) == -5.1   # maximised: the lower loss wins
    assert objective({**iwslt, "best_valid": {"loss": 4.9}, "best_valid_score": -4.9}) > objective(iwslt)
    rt = {"status": "completed", "metric": "acc", "higher_is_better": True, "best_valid": {"acc": 77.5}}
    assert objective(rt) == 77.5
    assert math.isnan(objective({**rt, "status": "diverged"}))
