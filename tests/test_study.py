"""Studies in time-limited slices (normlab.study): a budget, a clean stop on SIGTERM, SIGINT and
SIGKILL with no job left behind, restarts that never re-train a finished run, roles in every
summary, staged copies until the study is complete, and a report of the evaluation seeds only."""

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import REPO, TEST_CACHE

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}
# long enough (~5 s of training a run) for a signal to land while jobs train; checkpoints every 100 steps
LONG = [
    "task.train.max_steps=600",
    "task.train.eval_every=200",
    "task.train.max_epochs=100000",
    "task.train.checkpoint_every=100",
]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A clone whose HEAD is the code under test: studies train from a clean commit (git_dirty false)."""
    tmp = tmp_path_factory.mktemp("study")
    env = {**os.environ, **GIT_ENV}
    repo = tmp / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--no-hardlinks", str(REPO), str(repo)], check=True, env=env
    )
    for path in ("scripts", "normlab", "hydra_plugins"):
        shutil.copytree(
            REPO / path,
            repo / path,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    # the slices of the evaluation grid committed so far would pin these tests' studies to their commit
    shutil.rmtree(repo / "results" / "staging", ignore_errors=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(
        ["git", "commit", "-qm", "code under test", "--allow-empty"], cwd=repo, check=True, env=env
    )
    return repo


def environ(repo: Path, data_dir) -> dict:
    return {
        **os.environ,
        "NORMLAB_DATA": str(data_dir),
        "NORMLAB_CACHE": str(TEST_CACHE),
        "PYTHONPATH": str(repo),
        "PYTHONUNBUFFERED": "1",
    }


# the one study driver; tuned is one of its studies
DRIVER = ["-m", "normlab.campaigns.xu2019"]
TUNED = [*DRIVER, "--study", "tuned"]


def start(repo, data_dir, driver, args) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, *driver, *args],
        cwd=repo,
        env=environ(repo, data_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def run_plan(repo: Path, data_dir, cmd: list[str]) -> subprocess.CompletedProcess:
    """A driver's --plan in ``repo``, its output captured."""
    return subprocess.run(
        cmd, cwd=repo, env=environ(repo, data_dir), capture_output=True, text=True, timeout=120
    )


def wait_for(proc: subprocess.Popen, pattern: str, lines: list, timeout=240) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if re.search(pattern, line):
            return
    raise AssertionError(f"never saw {pattern!r}:\n" + "".join(lines[-40:]))


def finish(proc, lines, timeout=600) -> int:
    out, _ = proc.communicate(timeout=timeout)
    lines.append(out)
    return proc.returncode


def trainers(root: Path) -> list[str]:
    """The normlab-train processes of this test's run root still alive."""
    found = []
    for d in Path("/proc").iterdir():
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "normlab.train" in cmd and str(root) in cmd:
            found.append(f"{d.name}: {cmd}")
    return found


def no_trainers_within(root: Path, seconds: float = 60) -> None:
    deadline = time.time() + seconds
    while trainers(root) and time.time() < deadline:
        time.sleep(0.5)
    assert not trainers(root), trainers(root)


def completions(root: Path) -> dict:
    """How often each run ended completed or diverged, read from the jobs' own logs (every slice
    appends to its job's log): a run trained again after it finished would count twice."""
    done = {}
    for log in root.rglob("logs/*/*.log"):
        done[log.stem] = len(
            re.findall(
                r"^\[normlab\] \S+: (completed, \d+ steps;|diverged at step)", log.read_text(), re.M
            )
        )
    return done


@pytest.mark.slow  # make test-slow: about 2 minutes
def test_fixed_study_in_slices_stopped_by_signals_and_budget(clone, data_dir, tmp_path):
    root = tmp_path / "runs"
    args = [
        "--scale",
        "smoke",
        "--tasks",
        "synthetic_cls,rt",
        "--norms",
        "layernorm,layernorm_simple",
        "--seeds",
        "1,2,3",
        "--evaluation-seeds",
        "2,3",
        "--jobs",
        "2",
        "--root",
        str(root),
        "--no-figures",
        "--",
        *LONG,
    ]
    log: list = []
    plan = subprocess.run(
        [sys.executable, *DRIVER, "--plan", *args],
        cwd=clone,
        env=environ(clone, data_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert plan.returncode == 0 and "12 runs of this study: 0 done, 12 to train" in plan.stdout, (
        plan.stdout + plan.stderr
    )

    # 1. SIGTERM while two jobs train: both write a checkpoint and stop; the driver exits 0
    p = start(clone, data_dir, DRIVER, args)
    wait_for(p, r"start .*seed2", log)
    time.sleep(5)
    p.send_signal(signal.SIGTERM)
    assert finish(p, log) == 0, "".join(log[-30:])
    assert "SIGTERM: starting no more jobs" in "".join(log)
    no_trainers_within(root, 5)
    stage = clone / "results" / "staging" / "smoke"
    assert not (clone / "results" / "smoke").exists()  # nothing reported while the study is partial

    # 2. SIGKILL: the driver dies without a word; its jobs still stop (PR_SET_PDEATHSIG)
    p = start(clone, data_dir, DRIVER, args)
    wait_for(p, r"start ", log)
    time.sleep(5)
    p.kill()
    log.append(p.communicate()[0])
    no_trainers_within(root, 60)

    # 3. a budget: what started finishes, nothing more starts, exit 0 saying what is left
    p = start(clone, data_dir, DRIVER, ["--budget-min", "0.02", *args])
    assert finish(p, log) == 0, "".join(log[-30:])
    assert "stopped: budget" in log[-1] and "left" in log[-1], log[-1]
    record = json.loads((stage / "reproduce.json").read_text())
    assert record["absent"] and record["grid"]["seed_roles"] == {
        "selection": [1],
        "evaluation": [2, 3],
    }

    # 4. SIGINT (Ctrl-C) reaches the driver only (jobs have their own process group): a clean stop too
    p = start(clone, data_dir, DRIVER, args)
    wait_for(p, r"start ", log)
    time.sleep(3)
    p.send_signal(signal.SIGINT)
    assert finish(p, log) == 0, "".join(log[-30:])
    no_trainers_within(root, 5)

    # 5. the rest: every run trained exactly once, then promoted and reported
    p = start(clone, data_dir, DRIVER, args)
    assert finish(p, log) == 0, "".join(log[-40:])
    text = "".join(log)
    assert "study complete: 12 staged copies" in text
    done = completions(root)
    assert len(done) == 12 and set(done.values()) == {1}, done
    res = clone / "results" / "smoke"
    assert not stage.exists()
    for f in (res / "runs").rglob("summary.json"):
        s = json.loads(f.read_text())
        assert s["git_dirty"] is False and s["seed_role"] == (
            "selection" if s["seed"] == 1 else "evaluation"
        ), f
    # one checkpoint per finished run
    assert sorted({p.name for p in root.rglob("checkpoints/*")}) == ["best.pt"]
    table = (res / "table1.csv").read_text()
    assert "(2)" in table and "(3)" not in table  # the evaluation seeds only
    assert "Left out: 4 selection run(s) (seed 1" in (res / "report.md").read_text()
    record = json.loads((res / "reproduce.json").read_text())
    assert (
        len(record["sessions"]) == 4
        and record["git_dirty"] is False
        and record["selection_record"]["seeds"] == [1]
    )
    no_trainers_within(root, 5)

    # nothing left to do: a restart trains nothing, and commit_results finds nothing new once committed
    again = subprocess.run(
        [sys.executable, *DRIVER, *args],
        cwd=clone,
        env=environ(clone, data_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0 and "12 finished, 0 to train" in again.stdout, (
        again.stdout + again.stderr
    )


@pytest.mark.slow  # make test-slow
def test_tuned_study_stopped_and_restarted_reports_evaluation_seeds_only(clone, data_dir, tmp_path):
    root = tmp_path / "runs"
    args = [
        "--scale",
        "smoke",
        "--tasks",
        "synthetic_cls",
        "--norms",
        "layernorm",
        "--selection-seeds",
        "1",
        "--evaluation-seeds",
        "2,3",
        "--jobs",
        "2",
        "--root",
        str(root),
        "--no-figures",
        "--extend",
        "0",
        "--out",
        str(tmp_path / "results" / "smoke-tuned"),
    ]
    log: list = []
    p = start(clone, data_dir, TUNED, args)
    wait_for(p, r"start .*lr=", log)
    p.send_signal(signal.SIGTERM)
    assert finish(p, log) == 0, "".join(log[-30:])
    no_trainers_within(root, 30)
    assert (tmp_path / "results" / "staging" / "smoke-tuned" / "reproduce.json").exists()
    p = start(clone, data_dir, TUNED, args)
    assert finish(p, log) == 0, "".join(log[-40:])
    text = "".join(log)
    assert "study complete" in text, text[-3000:]
    done = completions(root)
    assert set(done.values()) == {1} and len(done) >= 7, (
        done
    )  # 5 lrs of seed 1, seeds 2-3 at the choice
    res = tmp_path / "results" / "smoke-tuned"
    rows = (res / "tuned.csv").read_text().splitlines()
    assert any(r.startswith("synthetic_cls,LayerNorm,") and "(2)" in r for r in rows), rows
    for f in (res / "runs").rglob("summary.json"):
        s = json.loads(f.read_text())
        assert s["git_dirty"] is False and s["seed_role"] == (
            "selection" if s["seed"] == 1 else "evaluation"
        )
    no_trainers_within(root, 5)


def test_prenorm_is_a_study_of_its_own(clone, data_dir, tmp_path):
    plan = [
        sys.executable,
        *DRIVER,
        "--study",
        "prenorm",
        "--scale",
        "mini",
        "--plan",
        "--root",
        str(tmp_path / "runs"),
    ]
    out = run_plan(clone, data_dir, plan + ["--commit", "HEAD"])
    assert out.returncode == 0, out.stderr
    assert (
        "45 runs of this study: 0 done, 45 to train" in out.stdout
    )  # a new study: the evaluation seeds 2-6
    # without --commit it continues the grid results/mini-enwik8-prenorm reports: the committed
    # study, complete at its commit, has nothing left to train
    found = run_plan(clone, data_dir, plan)
    assert (
        found.returncode == 0
        and "at commit e74a48389835" in found.stdout
        and "45 done, 0 to train" in found.stdout
    ), found.stdout
    assert "enwik8/adanorm/seed6" in out.stdout and "one-thread job hours left" in out.stdout


PLACEMENTS = {  # run-directory segment -> the setting its summary must record
    "placement=post": {"placement": "post"},
    "placement=pre": {"placement": "pre"},
    "layernorm_scaling=true,placement=pre": {"placement": "pre", "layernorm_scaling": True},
    "placement=peri": {"placement": "peri"},
    "placement=mixln": {"placement": "mixln"},
    "placement=deepnorm": {"placement": "deepnorm"},
}


def test_the_placement_study_plans_every_placement_of_each_norm(clone, data_dir, tmp_path):
    # the clone has no staged copies (its fixture drops them), so the study is new at its HEAD
    out = run_plan(
        clone,
        data_dir,
        [sys.executable, *DRIVER, "--study", "placement", "--plan"]
        + ["--root", str(tmp_path / "runs"), "--commit", "HEAD"],
    )
    assert out.returncode == 0, out.stderr
    # 2 tasks x 3 norms x 6 placements x the study's evaluation seeds 2-4, none trained yet
    assert "108 runs of this study: 0 done, 108 to train" in out.stdout, out.stdout[-2000:]
    assert "2 tasks x 3 norms x 6 variants x seeds 2,3,4 " in out.stdout
    for task in ("iwslt14_de_en", "enwik8"):
        for norm in ("layernorm", "layernorm_simple", "dyt"):
            for seg in PLACEMENTS:
                assert f"  {task}/{norm}/{seg}/seed4 " in out.stdout, (task, norm, seg)
    # costed by the runs at the presets (250-330 s alone in calibration, 430-530 s two at a time
    # in the fixed study), not by those of the earlier presets (about 120 s)
    hours = float(re.search(r"about ([\d.]+) one-thread job hours left", out.stdout).group(1))
    assert 108 * 250 / 3600 < hours < 108 * 600 / 3600, out.stdout[-500:]
    assert "no run at the preset" not in out.stdout


@pytest.mark.slow  # make test-slow: about a minute
def test_the_placement_study_trains_and_reports_a_row_per_placement(clone, data_dir, tmp_path):
    res = tmp_path / "results" / "smoke-placement"
    args = ["--study", "placement", "--scale", "smoke", "--tasks", "enwik8", "--norms", "dyt"]
    args += ["--seeds", "2", "--jobs", "2", "--root", str(tmp_path / "runs"), "--out", str(res)]
    proc = start(clone, data_dir, DRIVER, [*args, "--no-figures"])
    lines = []
    assert finish(proc, lines) == 0, "".join(lines)[-3000:]
    for seg, setting in PLACEMENTS.items():
        s = json.loads(
            (res / "runs" / "enwik8" / "dyt" / seg / "seed2" / "summary.json").read_text()
        )
        assert s["status"] == "completed" and s["setting"] == setting, (seg, s["setting"])
        assert s["git_dirty"] is False and s["seed_role"] == "evaluation"
    with open(res / "settings.csv", newline="") as f:
        rows = [r for r in csv.reader(f) if r and r[0] == "enwik8"]
    placements = sorted(r[3] + ("+lns" if r[2] == "True" else "") for r in rows)
    assert placements == ["deepnorm", "mixln", "peri", "post", "pre", "pre+lns"], rows
    rec = json.loads((res / "reproduce.json").read_text())
    assert len(rec["grid"]["variants"]) == 6 and rec["make"].startswith("make reproduce-placement")


@pytest.mark.slow  # make test-slow: three driver passes, about a minute
def test_a_study_finished_in_its_run_root_alone_is_staged_and_reported(clone, data_dir, tmp_path):
    # a slice killed after its last run finished, or runs trained by hand into the run root: the
    # driver finds nothing to train and no staged copy; it used to say "nothing to report"
    res, stage = tmp_path / "results" / "smoke", tmp_path / "results" / "staging" / "smoke"
    args = ["--study", "fixed", "--scale", "smoke", "--tasks", "rt", "--norms", "layernorm"]
    args += ["--seeds", "2", "--root", str(tmp_path / "runs"), "--out", str(res), "--no-figures"]
    lines = []
    assert finish(start(clone, data_dir, DRIVER, args), lines) == 0, "".join(lines)[-3000:]
    shutil.rmtree(res)
    assert not stage.exists() and list((tmp_path / "runs").rglob("rt/layernorm/seed2/summary.json"))
    lines = []
    assert finish(start(clone, data_dir, DRIVER, args), lines) == 0, "".join(lines)[-3000:]
    out = "".join(lines)
    assert "1 finished, 0 to train" in out and "study complete: 1 staged copies" in out, out[-2000:]
    s = json.loads((res / "runs" / "rt" / "layernorm" / "seed2" / "summary.json").read_text())
    assert s["status"] == "completed" and (res / "reproduce.json").exists()
    # once reported, a third pass finds the study complete as its folder reports it: nothing staged
    lines = []
    assert finish(start(clone, data_dir, DRIVER, args), lines) == 0
    assert not stage.exists() and "study complete" not in "".join(lines)


@pytest.mark.slow  # make test-slow: four driver passes, about 2 minutes
def test_a_study_retrained_for_some_tasks_keeps_the_others_at_their_commit(
    clone, data_dir, tmp_path
):
    repo = tmp_path / "repo"  # its own clone: this test adds a commit
    subprocess.run(["git", "clone", "-q", str(clone), str(repo)], check=True)
    res = repo / "results" / "smoke"
    base = ["--study", "fixed", "--scale", "smoke", "--norms", "layernorm", "--seeds", "2"]
    base += ["--root", str(tmp_path / "runs"), "--no-figures"]

    def drive(*args) -> str:
        lines = []
        assert finish(start(repo, data_dir, DRIVER, [*base, *args]), lines) == 0, "".join(lines)
        return "".join(lines)

    def commit_of(task, seed=2) -> str:
        path = res / "runs" / task / "layernorm" / f"seed{seed}" / "summary.json"
        return json.loads(path.read_text())["git_commit"]

    drive("--tasks", "rt,sst2")
    first = commit_of("rt")
    assert commit_of("sst2") == first
    subprocess.run(
        ["git", "commit", "-qm", "a changed preset", "--allow-empty"],
        cwd=repo,
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    # re-train rt alone at the new commit: its promotion replaced every reported copy, sst2's too
    out = drive("--tasks", "rt", "--commit", "HEAD")
    assert "study complete: 1 staged copies replace 1 reported ones" in out, out[-2000:]
    second = commit_of("rt")
    assert second != first and commit_of("sst2") == first
    rec = json.loads((res / "reproduce.json").read_text())
    assert rec["task_commits"] == {"rt": second, "sst2": first}
    assert f"sst2 `{first[:12]}`" in (res / "README.md").read_text()
    # continuing the folder: each task at its own commit, nothing to train
    out = drive("--tasks", "rt,sst2")
    assert "2 finished, 0 to train" in out and f"at commit {second[:12]}" in out, out[-2000:]
    # a seed added to both tasks (as --until-resolved adds them) trains at each task's own commit,
    # from its own checkout and run root, over two slices: the first stages the reported copies
    # (each at its task's commit) and trains nothing, the second goes on from those staged copies
    out = drive("--tasks", "rt,sst2", "--seeds", "2,3", "--budget-min", "0")
    assert "2 finished, 2 to train" in out and f"sst2 at {first[:12]}" in out, out[-2000:]
    assert not list((res / "runs").rglob("seed3"))
    out = drive("--tasks", "rt,sst2", "--seeds", "2,3")
    assert f"at commit {second[:12]}: " in out and "the commit is the staged studies" in out, out
    assert "study complete: 4 staged copies replace 2 reported ones" in out, out[-2000:]
    assert f"at {second[:12]}, tasks kept at {first[:12]}) ->" in out, out[-2000:]
    assert (commit_of("rt", 3), commit_of("sst2", 3)) == (second, first)
    assert list((tmp_path / "runs" / first[:12]).rglob("sst2/layernorm/seed3/summary.json"))
    rec = json.loads((res / "reproduce.json").read_text())
    assert rec["task_commits"] == {"rt": second, "sst2": first}
    # --until-resolved naming the folder's commit (a chained study must name one) continues it too;
    # it used to re-train the kept task's reported seeds at the named commit
    look = ["--tasks", "rt,sst2", "--seeds", "2,3,4,5,6", "--until-resolved"]
    out = drive(*look, "--plan", "--commit", second[:12])
    assert "10 runs of this study: 4 done, 6 to train" in out, out
    assert f"sst2 at {first[:12]}" in out, out
    # a complete study stays complete while a sibling's staged copies pin the same commit: it used
    # to take the kept task for unfinished and re-train its seeds there
    sibling = repo / "results" / "staging" / "smoke-enwik8-prenorm" / "runs" / "enwik8" / "none"
    (sibling / "seed2").mkdir(parents=True)
    summary = {"task": "enwik8", "status": "completed", "git_commit": second, "git_dirty": False}
    (sibling / "seed2" / "summary.json").write_text(json.dumps(summary))
    out = drive("--tasks", "rt,sst2", "--seeds", "2,3", "--plan")
    assert "the commit is the staged studies" in out, out
    assert "4 runs of this study: 4 done, 0 to train" in out, out
    # --until-resolved (its first look: seeds 2-6) continues the folder even while a sibling's
    # staged copies pin the commit: sst2's copies count at their own commit, its new seeds train there
    out = drive(*look)
    assert "the commit is the staged studies: 10 runs, 4 finished, 6 to train" in out, out[-2000:]
    assert f"sst2 at {first[:12]}" in out and "study complete" in out, out[-2000:]
    assert (commit_of("rt", 6), commit_of("sst2", 6)) == (second, first)


def test_a_task_whose_runs_mix_two_commits_is_refused(tmp_path):
    from normlab.study import pin

    for seed, commit in ((2, "a" * 40), (3, "b" * 40)):
        d = tmp_path / "rt" / "layernorm" / f"seed{seed}"
        d.mkdir(parents=True)
        (d / "summary.json").write_text(json.dumps({"task": "rt", "git_commit": commit}))
    d = tmp_path / "sst2" / "layernorm" / "seed2"
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps({"task": "sst2", "git_commit": "c" * 40}))
    with pytest.raises(pin.PinError, match="the runs of task rt come from 2 commits"):
        pin.task_commits(tmp_path)
    shutil.rmtree(tmp_path / "rt" / "layernorm" / "seed3")
    assert pin.task_commits(tmp_path) == {"rt": "a" * 40, "sst2": "c" * 40}


def test_a_seed_with_no_role_is_refused(tmp_path):
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "reproduce.py"), "--seeds", "7", "--plan"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "seed 7 is neither a selection seed" in out.stderr, out.stderr


def test_per_seed_subsets_are_one_data_note_naming_the_seeds():
    from normlab.report.data_notes import data_note
    from normlab.report.runs import Run

    def run(seed, drawn=None):
        drawn = seed if drawn is None else drawn
        subset = f"SUBSET: training on a seeded random 4,000 (task.data.train_limit=4000, train_limit_seed={drawn})"
        # each seed's subset builds its own vocabulary: a size the note does not print
        data = {"source": "real", "subset": subset, "sizes": {"train": 4000}, "vocab": 6600 + drawn}
        return Run(Path("."), {"seed": seed}, {"data": data})

    note = data_note([run(3), run(2), run(3)])
    assert note.count("SUBSET") == 1 and "train_limit_seed=the run's seed: 2, 3)" in note
    assert "train_limit_seed=0)" in data_note([run(1, 0), run(2, 0)])
    # seed 1's selection runs on a fixed subset 0 beside evaluation seeds that draw their own: the
    # note must not read 0 as a run's seed
    note = data_note([run(2), run(1, 0), run(3)])
    assert "train_limit_seed=the run's seed: 2, 3; 0 for seed 1)" in note, note


@pytest.mark.slow  # make test-slow
def test_grid_sh_runs_a_slice_detached_and_stops_it_cleanly(clone, data_dir, tmp_path):
    env = {**environ(clone, data_dir), "PYTHON": sys.executable, "GRID_DIR": str(tmp_path / "grid")}
    root = tmp_path / "runs"
    study = [
        "--scale",
        "smoke",
        "--tasks",
        "synthetic_cls",
        "--norms",
        "layernorm,layernorm_simple",
        "--seeds",
        "2,3",
        "--root",
        str(root),
        "--out",
        str(tmp_path / "results" / "smoke"),
    ]
    sh = lambda *a: subprocess.run(
        ["bash", "scripts/grid.sh", *a],
        cwd=clone,
        env=env,
        capture_output=True,  # noqa: E731
        text=True,
        timeout=300,
    )
    refused = sh("start", "fixed", "30", *study)
    assert refused.returncode == 2 and "the first slice names the commit" in refused.stderr, (
        refused.stderr
    )
    started = sh("start", "fixed", "30", *study, "--commit", "HEAD", "--", *LONG)
    assert started.returncode == 0 and "started fixed (pid" in started.stdout, (
        started.stdout + started.stderr
    )
    assert (
        sh("start", "fixed", "30", *study, "--commit", "HEAD").returncode == 1
    )  # one slice of a study at a time
    log = tmp_path / "grid" / "fixed.log"
    deadline = time.time() + 120
    while "start synthetic_cls" not in log.read_text() and time.time() < deadline:
        time.sleep(0.5)
    status = sh("status", "fixed", *study)
    assert "fixed: running" in status.stdout and "[plan] 4 runs of this study" in status.stdout, (
        status.stdout
    )
    stopped = sh("stop", "fixed")
    assert stopped.returncode == 0 and "fixed stopped" in stopped.stdout, (
        stopped.stdout + stopped.stderr
    )
    assert "stopped: SIGTERM" in log.read_text()
    no_trainers_within(root, 5)
    assert "fixed: not running" in sh("status", "fixed", *study).stdout


@pytest.mark.parametrize(
    "flags,match",
    [
        (["--scale", "bogus"], "--scale bogus: no such scale; scales: mini, paper, smoke"),
        (["--budget-min", "-5"], "--budget-min -5: minutes after which no job starts"),
        (["--jobs", "0"], "--jobs 0: jobs at a time, at least 1"),
        (["--study", "tuned", "--seeds", "2"], "--seeds: the tuned study trains its selection"),
    ],
)
def test_the_driver_refuses_bad_arguments_in_one_line(flags, match, capsys):
    from normlab.campaigns.xu2019.request import parse

    with pytest.raises(SystemExit) as e:
        parse([*flags, "--plan"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and match in err.splitlines()[-1], err


def test_a_run_root_with_a_comma_reaches_the_job_as_one_path(tmp_path):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from normlab.study.fixed_grid import FixedGrid
    from normlab.study.grid import Job

    root = tmp_path / "my runs, v2"
    grid = FixedGrid(
        ["rt"], ["layernorm"], [2], scale="smoke", name="xu2019", root=root,
        copies=tmp_path / "copies", commit="c", dirty=False, code=None, roles={},
    )  # fmt: skip
    cmd = grid.command(Job("rt", "layernorm", None, 2))
    overrides = OverridesParser.create().parse_overrides(cmd[3:])
    (path,) = [o for o in overrides if o.key_or_group == "paths.root"]
    assert not path.is_sweep_override() and path.value() == str(root)


def test_a_selection_run_of_an_older_preset_chooses_nothing(tmp_path):
    # the tuned grid's seed-1 runs are a record across commits, but only at the preset they were
    # trained at: a changed preset trains the selection again. The lr is a selection run's own,
    # except the preset-lr run's, which must be at the preset's lr (it centres the lr grid).
    import json

    import yaml

    from normlab.study.fixed_grid import FixedGrid
    from normlab.study.grid import Job

    old = {"data": {"train_bytes": 40000, "train_limit_seed": 0}, "model": {"layers": 12},
           "train": {"lr": 3e-3}}  # fmt: skip
    at_preset, own = Job("enwik8", "layernorm", None, 1), Job("enwik8", "layernorm", 1e-3, 1)
    for job in (at_preset, own):
        d = tmp_path / "committed" / job.rel()
        d.mkdir(parents=True)
        task = old if job.lr is None else {**old, "train": {"lr": job.lr}}
        (d / "config.yaml").write_text(yaml.safe_dump({"task": task}))
        summary = {"status": "completed", "git_commit": "old", "seed_role": "selection"}
        (d / "summary.json").write_text(json.dumps(summary))

    def grid(preset):
        g = FixedGrid(
            ["enwik8"], ["layernorm"], [1], scale="mini", name="xu2019",
            root=tmp_path / "runs", copies=tmp_path / "copies", commit="new", dirty=False,
            code=None, roles={1: "selection"}, committed=tmp_path / "committed",
        )  # fmt: skip
        if preset is not None:
            g.presets = {"enwik8": preset}
        return g

    new = {"data": {"train_bytes": 0}, "model": {"layers": 4}, "train": {"lr": 2e-3}}
    lr_only = {**old, "train": {"lr": 2e-3}}  # a preset that changed its lr alone
    # the subset's draw is a seed: a preset that draws each run's own keeps the choice made on
    # another draw; one that trains on more or fewer examples does not
    draw = {**old, "data": {**old["data"], "train_limit_seed": "run"}}
    limit = {**old, "data": {**old["data"], "train_limit": 4000}}
    for preset, accepted in ((None, {at_preset, own}), (old, {at_preset, own}), (new, set()),
                             (lr_only, {own}), (draw, {at_preset, own}),
                             (limit, set())):  # fmt: skip
        g = grid(preset)
        assert {j for j in (at_preset, own) if g.summary(j)} == accepted, preset


def test_the_tuned_lr_grid_is_centred_on_the_preset_the_study_trains_at(tmp_path):
    # an older preset's seed-1 run (committed, lr 3e-3) must not set the grid's centre, neither
    # before the study's own preset-lr run has finished nor after it, in the same driver session
    import json

    import yaml

    from normlab.campaigns.xu2019.request import parse
    from normlab.campaigns.xu2019.tuned_grid import Grid

    out, root = tmp_path / "results" / "mini-tuned", tmp_path / "runs"
    r = parse(["--study", "tuned", "--tasks", "enwik8", "--norms", "layernorm", "--out", str(out),
               "--root", str(root)])  # fmt: skip
    old = {"data": {"train_bytes": 40000}, "model": {"layers": 12}, "train": {"lr": 3e-3}}
    new = {"data": {"train_bytes": 0}, "model": {"layers": 4}, "train": {"lr": 2e-3}}

    def put(where: Path, task: dict, commit: str) -> None:
        where.mkdir(parents=True)
        (where / "config.yaml").write_text(yaml.safe_dump({"task": task}))
        summary = {"status": "completed", "git_commit": commit, "seed_role": "selection",
                   "metric": "bpc", "higher_is_better": False, "best_valid": {"bpc": 2.917}}  # fmt: skip
        (where / "summary.json").write_text(json.dumps(summary))

    put(out / "runs" / "enwik8" / "layernorm" / "seed1", old, "old")
    put(tmp_path / "results" / "mini" / "runs" / "enwik8" / "layernorm" / "seed1", old, "old")
    grid = Grid(r, None, "new", False)
    grid.presets = {"enwik8": new}
    assert [j.lr for j in grid.jobs()] == [None] and grid.preset("enwik8", "layernorm") is None
    put(grid.run_dir(grid.jobs()[0]), new, "new")  # the study's own preset-lr run finishes
    lrs = sorted(j.lr for j in grid.jobs() if j.lr is not None)
    assert lrs == pytest.approx([2e-3 * f for f in sorted(r.factors) if f != 1.0], rel=5e-3)
    # what --plan shows of it: the preset's lr and criterion, the rest to train, no choice yet
    (line,) = grid.choice_lines()
    assert "enwik8/layernorm, valid bpc: 0.000707 to train" in line
    assert "0.002 (preset) 2.917" in line and line.endswith("; chosen pending")


@pytest.mark.slow  # make test-slow: about two minutes
def test_until_resolved_adds_the_next_looks_seeds_to_unresolved_rows(clone, data_dir, tmp_path):
    from normlab.campaigns.xu2019.family import apply
    from normlab.campaigns.xu2019.findings import findings
    from normlab.campaigns.xu2019.protocol import grid as xgrid
    from normlab.report import find_runs

    res = tmp_path / "results" / "smoke"
    args = ["--scale", "smoke", "--tasks", "synthetic_cls", "--norms", "layernorm,adanorm"]
    args += ["--until-resolved", "--max-seeds", "10", "--jobs", "2"]
    args += ["--root", str(tmp_path / "runs"), "--out", str(res), "--no-figures"]
    proc = start(clone, data_dir, DRIVER, args)
    lines = []
    assert finish(proc, lines) == 0, "".join(lines)[-3000:]
    runs = find_runs([res / "runs"])
    first = [r for r in runs if r.seed <= 6]
    rows = findings(xgrid(first))
    apply("fixed", rows, primary=True, declared=True)
    # the norms of the rows the first look left unresolved and the futility rule did not stop, and
    # only those, gained seeds 7-11
    open_ = {
        n
        for f in rows
        if f.verdict() == "unresolved" and not f.stopped
        for n in (f.claim.a, f.claim.b)
    }
    added = {(r.norm, r.seed) for r in runs if r.seed > 6}
    assert added == {(n, s) for n in open_ for s in range(7, 12)}, (open_, added)
    assert all(r.summary["seed_role"] == "evaluation" for r in runs)
    rec = json.loads((res / "reproduce.json").read_text())
    assert rec["grid"]["until_resolved"] is True and rec["grid"]["max_seeds"] == 10
    # at smoke AdaNorm and LayerNorm tie within noise: the row stays open and gains its seeds, and
    # the report tests it on every seed it has
    assert open_ == {"adanorm", "layernorm"}
    row = next(r for r in (res / "findings.md").read_text().splitlines() if "AdaNorm > " in r)
    assert "| A > B | " in row and "| 10 |" in row
    # a study ended at a look (--max-seeds) is reported; a later pass with the declared looks
    # continues the folder from its copies alone (another run root, as on a fresh clone): the
    # seeds of the looks made never train again, and the row the second look left open gains the
    # third look's seeds (12-16) or is stopped for futility
    more = [a for a in args if a not in ("--max-seeds", "10")] + ["--plan"]
    more[more.index("--root") + 1] = str(tmp_path / "other-runs")
    lines = []
    assert finish(start(clone, data_dir, DRIVER, more), lines) == 0, "".join(lines)[-3000:]
    out = "".join(lines)
    found = re.search(r"(\d+) runs of this study: 20 done, (\d+) to train", out)
    assert found, out[-3000:]
    total, left = map(int, found.groups())
    assert total == 20 + left, out[-3000:]
    seeds = {int(m) for m in re.findall(r"seed(\d+) +to train", out)}
    if left:
        assert left == 10 and seeds == set(range(12, 17)), out[-3000:]
    else:
        assert "gain no more seeds" in out and "adanorm_improves on synthetic_cls" in out, out
