"""Sweeps over any key: one run directory per setting, skip on re-run, a point whose config cannot
be composed fails alone, one process per run directory, and an Optuna search that resumes."""

import json
import math
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from helpers import TEST_CACHE, compose_cfg, run_cli
from normlab import setting
from normlab.config import load_job
from normlab.files import read_json
from normlab.run.runlock import RunLock, RunLocked

ROOT = ("runs", "smoke", "default", "synthetic_cls")
BASE = ["task=synthetic_cls", "scale=smoke", "threads=1"]


def test_setting_is_the_diff_against_the_defaults(tmp_path):
    def label(*overrides):
        job = load_job(compose_cfg([*BASE, *overrides], tmp_path))
        return setting.label(job.setting, job.config)

    assert label() == ""
    assert label("task.train.lr=2e-3") == "lr=0.002"
    assert label("task.train.lr=0.001") == ""  # = the task's own lr: not a new setting
    assert label("norm=adanorm", "norm.options.C=2", "task.train.lr=2e-3") == "C=2,lr=0.002"
    assert label("norm=adanorm", "norm.options.C=1") == ""  # 1 == the config file's 1.0
    assert label("task.data.reader={n_train:128}") == "n_train=128"
    assert (
        label("task.train.warmup_init_ratio=0.5") == "warmup_init_ratio=0.5"
    )  # only in TrainConfig
    assert label("~task.model.dropout") == "~dropout"
    assert label("threads=2", "progress=false", "name=x", "seed=3") == ""  # runtime and grid keys
    assert (
        label("task.model.layers=3", "task.model.normalize_before=false")
        == "layers=3,normalize_before=false"
    )


def test_sweep_over_any_key_writes_one_run_per_point_and_skips_on_rerun(tmp_path):
    args = [
        "hydra.mode=MULTIRUN",
        *BASE,
        "norm=adanorm",
        "norm.options.C=1,2",
        "task.train.lr=1e-3,2e-3",
    ]
    out = run_cli(args, tmp_path)
    assert "4 completed" in out.stdout
    root = tmp_path.joinpath(*ROOT, "adanorm")
    dirs = sorted(str(p.parent.relative_to(root)) for p in root.rglob("summary.json"))
    assert dirs == ["C=2,lr=0.002/seed1", "C=2/seed1", "lr=0.002/seed1", "seed1"]
    for d in dirs:
        s = read_json(root / d / "summary.json")
        assert (
            s["status"] == "completed"
            and s["setting"]
            == {
                "C=2,lr=0.002/seed1": {"C": 2, "lr": 0.002},
                "C=2/seed1": {"C": 2},
                "lr=0.002/seed1": {"lr": 0.002},
                "seed1": {},
            }[d]
        )
    out = run_cli(args, tmp_path)
    assert out.stdout.count("already completed, skipped") == 4


def test_a_point_that_cannot_be_composed_fails_alone(tmp_path):
    # Hydra's basic sweeper composes every point first and stops the sweep at the first error
    out = run_cli(
        ["hydra.mode=MULTIRUN", *BASE, "task.train.max_steps=4,many", "task.model.layerz=1,2"],
        tmp_path,
        check=False,
    )
    assert out.returncode == 4, out.stderr[-2000:]
    assert "4 invalid" in out.stdout
    assert re.search(
        r"sweep point not run: .*task.train.max_steps=many task.model.layerz=2\n", out.stderr
    )
    assert "did you mean task.model.layers?" in out.stderr
    out = run_cli(
        ["hydra.mode=MULTIRUN", *BASE, "task.train.max_steps=4,many", "task.model.layers=1"],
        tmp_path,
        check=False,
    )
    assert out.returncode == 1 and "1 completed, 1 invalid" in out.stdout, out.stderr[-2000:]
    # the point that could not be composed counts towards where the sweep is, as a run does
    assert "[normlab] sweep 1/2 done (1 invalid)" in out.stdout
    assert "[normlab] sweep 2/2 done (1 completed, 1 invalid)" in out.stdout
    assert "could not be converted to Integer" in out.stderr
    assert (
        read_json(tmp_path.joinpath(*ROOT, "layernorm", "max_steps=4", "seed1", "summary.json"))[
            "status"
        ]
        == "completed"
    )


def test_second_process_on_the_same_run_directory_stops_with_a_message(tmp_path):
    run_dir = tmp_path.joinpath(*ROOT, "layernorm", "seed1")
    with RunLock(run_dir):
        with pytest.raises(
            RunLocked, match=r"being trained by another process \(pid \d+ on .* since"
        ):
            with RunLock(run_dir):
                pass
        out = run_cli(BASE, tmp_path, check=False)
        assert out.returncode == 4 and "being trained by another process" in out.stderr
        assert (
            list(run_dir.iterdir()) == []
        )  # the refused job wrote nothing (Hydra made the folder)
        assert run_dir.parent.joinpath(".seed1.lock").exists()
    assert not run_dir.parent.joinpath(".seed1.lock").exists()
    with RunLock(run_dir):  # released: a later process gets it
        pass


def test_a_sweep_whose_point_another_process_holds_exits_4_after_the_others(tmp_path):
    held = tmp_path.joinpath(*ROOT, "layernorm", "seed1")
    with RunLock(held):
        out = subprocess.run(
            [sys.executable, "-m", "normlab.train", "--multirun", *BASE, "seed=1,2"]
            + ["hydra/launcher=basic", "progress=false"]
            + [f"paths.root={tmp_path / 'runs'}"],
            env={**os.environ, "NORMLAB_CACHE": str(TEST_CACHE)},
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert out.returncode == 4, out.stdout[-2000:] + out.stderr[-2000:]
    assert "1 completed, 1 locked" in out.stdout and "held by another process" in out.stderr
    assert (held.parent / "seed2" / "summary.json").exists()  # the free point trained


def _trials(journal_dir):
    import optuna

    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(journal_dir / "optuna.journal"))
    )
    return optuna.load_study(study_name="synthetic_cls-layernorm-lr", storage=storage).get_trials()


def jobs_under(path) -> list[int]:
    """Live processes whose command line names ``path`` (what ``ps`` would show)."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                cmd = open(f"/proc/{d}/cmdline", "rb").read().decode(errors="replace")
                state = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if str(path) in cmd and state != "Z" and int(d) != os.getpid():
                pids.append(int(d))
    return pids


def wait_gone(path, timeout=60) -> list[int]:
    deadline = time.time() + timeout
    while (left := jobs_under(path)) and time.time() < deadline:
        time.sleep(0.1)
    return left


def tune_cmd(tmp_path, trials, steps):
    return [
        sys.executable,
        "-m",
        "normlab.tune",
        "--search",
        "lr",
        "--trials",
        str(trials),
        "--",
        *BASE,
        "progress=false",
        f"task.train.max_steps={steps}",
        f"paths.root={tmp_path / 'runs'}",
    ]


def run_tune(tmp_path, cmd) -> subprocess.CompletedProcess:
    """A search run to its end in ``tmp_path``, its output captured."""
    env = {**os.environ, "NORMLAB_CACHE": str(TEST_CACHE)}
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def start_tune(tmp_path, cmd):
    env = {**os.environ, "NORMLAB_CACHE": str(TEST_CACHE)}
    return subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def kill_while_training(proc, sweep, n_done, sig):
    """Send ``sig`` to the search while trial ``n_done``'s job trains (its curves, not its summary)."""
    deadline = time.time() + 300
    while proc.poll() is None and time.time() < deadline:
        runs = (
            list(sweep.glob("synthetic_cls/layernorm/*/seed1/curves.jsonl"))
            if sweep.exists()
            else []
        )
        done = (
            list(sweep.glob("synthetic_cls/layernorm/*/seed1/summary.json"))
            if sweep.exists()
            else []
        )
        if (
            len(done) == n_done
            and len(runs) == n_done + 1
            and runs
            and os.path.getsize(max(runs, key=os.path.getmtime))
        ):
            proc.send_signal(sig)
            return
        time.sleep(0.02)
    raise AssertionError("the search ended before it could be stopped")


@pytest.mark.slow
def test_a_killed_search_leaves_no_job_and_its_rerun_adopts_the_stopped_trial(tmp_path):
    pytest.importorskip("optuna")
    cmd = tune_cmd(tmp_path, 3, 400)
    sweep = tmp_path / "runs" / "smoke" / "tune_lr"
    proc = start_tune(tmp_path, cmd)
    kill_while_training(proc, sweep, 2, signal.SIGKILL)
    proc.communicate(timeout=300)  # also closes its pipe
    # its trial's job was told (SIGTERM on the search's death): it checkpoints and stops
    assert wait_gone(tmp_path / "runs") == []
    before = _trials(sweep)
    assert [t.state.name for t in before][:2] == ["COMPLETE", "COMPLETE"] and before[
        2
    ].state.name == "RUNNING"
    killed, killed_dir = before[2].params, before[2].user_attrs["run_dir"]
    assert read_json(os.path.join(killed_dir, "summary.json"))["status"] == "preempted"

    # a process that still holds the stopped trial's run directory is waited for, not failed
    with RunLock(killed_dir):
        rerun = start_tune(tmp_path, cmd)
        time.sleep(8)
        assert rerun.poll() is None
    out, _ = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, out[-3000:]
    assert "resuming: 1 trial(s) of a killed search queued again" in out and "waiting for it" in out
    after = _trials(sweep)
    complete = [t for t in after if t.state.name == "COMPLETE"]
    assert len(complete) == 3 and after[2].user_attrs.get("stale") is True
    assert (
        after[3].params == killed and after[3].user_attrs["resumes_trial"] == 2
    )  # the same point again
    assert after[3].user_attrs["run_dir"] == killed_dir
    runs = {t.user_attrs["run_dir"] for t in complete}
    summaries = {r: read_json(os.path.join(r, "summary.json")) for r in runs}
    assert len(runs) == 3 and all(s["status"] == "completed" for s in summaries.values())
    table = (sweep / "trials-synthetic_cls-layernorm-lr.md").read_text()
    assert "stale (stopped; re-queued)" in table and table.count("| complete |") == 3
    # the best is read from the runs' own summaries
    from normlab.run.runner import objective

    top = max(objective(s) for s in summaries.values())
    number, value = re.search(r"Best: trial (\d+), objective ([\d.]+)", table).groups()
    best = after[int(number)]
    assert (
        float(value) == round(top, 4) == round(objective(summaries[best.user_attrs["run_dir"]]), 4)
    )
    assert best.state.name == "COMPLETE"
    assert json.loads(table.split("higher is better), ")[1]) == best.user_attrs["used"]
    assert jobs_under(tmp_path / "runs") == []


@pytest.mark.slow
def test_ctrl_c_on_a_search_checkpoints_its_trial_exits_130_and_the_rerun_resumes_it(tmp_path):
    pytest.importorskip("optuna")
    cmd = tune_cmd(tmp_path, 2, 400)
    sweep = tmp_path / "runs" / "smoke" / "tune_lr"
    proc = start_tune(tmp_path, cmd)
    kill_while_training(proc, sweep, 0, signal.SIGINT)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130, out[-3000:]
    assert "Traceback" not in out and "run the same command again to resume the search" in out
    assert jobs_under(tmp_path / "runs") == []
    first = _trials(sweep)[0]
    summary = read_json(os.path.join(first.user_attrs["run_dir"], "summary.json"))
    assert (
        summary["status"] == "interrupted"
        and 0 < summary["steps"] < 400
        and first.user_attrs["stale"]
    )

    out = subprocess.run(
        cmd,
        cwd=tmp_path,
        env={**os.environ, "NORMLAB_CACHE": str(TEST_CACHE)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    after = _trials(sweep)
    assert after[1].user_attrs["resumes_trial"] == 0 and after[1].state.name == "COMPLETE"
    resumed = read_json(os.path.join(after[1].user_attrs["run_dir"], "summary.json"))
    assert resumed["status"] == "completed" and resumed["steps"] == 400


@pytest.mark.slow
def test_a_search_with_other_fixed_settings_is_refused_naming_the_keys(tmp_path):
    pytest.importorskip("optuna")
    first = run_tune(tmp_path, tune_cmd(tmp_path, 1, 12))
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    other = run_tune(tmp_path, tune_cmd(tmp_path, 2, 13))
    assert other.returncode == 2 and "Traceback" not in other.stderr
    assert (
        "started with other fixed settings: task.train.max_steps (12 there, 13 here)"
        in other.stderr
    )
    assert "name=..." in other.stderr
    assert len(_trials(tmp_path / "runs" / "smoke" / "tune_lr")) == 1  # nothing was added
    # the same fixed settings, or one that only changes how it runs (threads), go on
    same = run_tune(tmp_path, [*tune_cmd(tmp_path, 2, 12), "threads=2"])
    assert same.returncode == 0, same.stdout[-2000:] + same.stderr[-2000:]


def test_the_objective_of_a_task_that_selects_on_the_loss_is_its_validation_loss():
    from normlab.run.runner import objective

    # IWSLT/PTB: BLEU/UAS is not computed on validation; the checkpoint was chosen on the loss
    iwslt = {
        "status": "completed",
        "metric": "bleu",
        "higher_is_better": True,
        "best_valid": {"loss": 5.1},
        "best_valid_score": -5.1,
    }
    assert objective(iwslt) == -5.1  # maximised: the lower loss wins
    assert objective({**iwslt, "best_valid": {"loss": 4.9}, "best_valid_score": -4.9}) > objective(
        iwslt
    )
    rt = {
        "status": "completed",
        "metric": "acc",
        "higher_is_better": True,
        "best_valid": {"acc": 77.5},
    }
    assert objective(rt) == 77.5
    assert math.isnan(objective({**rt, "status": "diverged"}))


def test_a_fixed_override_every_trial_refuses_stops_the_search_and_the_fix_runs(tmp_path):
    pytest.importorskip("optuna")
    bad = run_tune(tmp_path, [*tune_cmd(tmp_path, 3, 12), "norm.options.eps=-1"])
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr[-2000:]
    assert "norm.options.eps=-1 is out of range" in bad.stderr  # the trial job's own line
    assert "trial 0's job refused its configuration" in bad.stderr
    assert bad.stdout.count("[normlab-tune] trial ") == 1  # no second trial was tried
    # the corrected command is not refused for the bad one's fixed settings
    good = run_tune(tmp_path, tune_cmd(tmp_path, 1, 12))
    assert good.returncode == 0, good.stdout[-2000:] + good.stderr[-2000:]


@pytest.mark.parametrize(
    "flags,match",
    [
        (["--trials", "-3"], "--trials -3: the total number of trials must be at least 1"),
        (["--search", "../task/rt"], "--search ../task/rt: no "),
    ],
)
def test_bad_search_arguments_are_one_line_and_write_nothing(tmp_path, flags, match):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "normlab.tune",
            *flags,
            "--",
            *BASE,
            f"paths.root={tmp_path / 'runs'}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2 and match in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert not (tmp_path / "runs").exists()
