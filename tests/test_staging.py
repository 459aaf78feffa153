"""Which commit a staged study continues at: its own runs decide, not the selection record's
copies staged beside them, nor a staged study of another scale."""

import json
from pathlib import Path

import pytest

from normlab.report import roles
from normlab.study import pin, staging

RECORD = roles.declared()["record_commit"]
STUDY = "f" * 40


def copy(runs: Path, name: str, seed: int, commit: str, role=None) -> None:
    d = runs / name / f"seed{seed}"
    d.mkdir(parents=True)
    s = {"task": name.split("/")[0], "git_commit": commit, "git_dirty": False, "seed": seed}
    if role:
        s["seed_role"] = role
    (d / "summary.json").write_text(json.dumps(s))


def test_selection_copies_of_the_record_do_not_pin_the_study(tmp_path):
    results = tmp_path / "results"
    stage = staging.staging_dir(results / "mini-tuned") / "runs"
    copy(stage, "rt/layernorm/lr=0.001", 1, RECORD)  # the selection record's run, staged with it
    copy(stage, "rt/layernorm/lr=0.001", 2, STUDY, roles.EVALUATION)
    assert staging.staged_commits(results / "mini-tuned") == {stage.parent: STUDY}
    assert staging.staged_commits(results / "mini") == {stage.parent: STUDY}  # same scale: shared
    # all copies counted, the two commits are refused: the filter is what lets the study go on
    with pytest.raises(pin.PinError, match="the runs of task rt come from 2 commits"):
        pin.commit_of_copies(stage)
    copy(stage, "rt/layernorm/lr=0.001", 3, "e" * 40, roles.EVALUATION)
    with pytest.raises(pin.PinError, match="the runs of task rt come from 2 commits"):
        staging.staged_commits(results / "mini-tuned")


def test_a_task_kept_at_its_own_commit_continues_the_study_at_the_newest(tmp_path):
    """A pass that continues a results folder stages each task at the commit the folder reports
    for it: the study goes on at the newest of them and the older tasks are the kept ones; a task
    whose copies mix two commits, a staged task at a commit the folder does not report, or a mix
    with uncommitted code is refused."""
    old, new = pin.git("rev-parse", "HEAD~1"), pin.head()
    results = tmp_path / "results"
    stage = staging.staging_dir(results / "mini") / "runs"
    copy(results / "mini" / "runs", "sst2/layernorm", 2, old, roles.EVALUATION)
    copy(results / "mini" / "runs", "rt/layernorm", 2, new, roles.EVALUATION)
    copy(stage, "sst2/layernorm", 2, old, roles.EVALUATION)
    copy(stage, "sst2/layernorm", 7, old, roles.EVALUATION)  # a seed added to the kept task
    copy(stage, "rt/layernorm", 2, new, roles.EVALUATION)
    assert pin.commit_of_copies(stage) == pin.commit_of_copies(stage.parent.parent) == new
    assert staging.staged_commits(results / "mini") == {stage.parent: new}
    assert staging.kept_tasks(results / "mini", new) == {"sst2": old}
    copy(stage, "mnist/layernorm", 2, old, roles.EVALUATION)
    with pytest.raises(pin.PinError, match=f"task mnist come from {old[:12]}, neither the study"):
        staging.kept_tasks(results / "mini", new)
    copy(stage, "sst2/layernorm", 3, new, roles.EVALUATION)
    with pytest.raises(pin.PinError, match="the runs of task sst2 come from 2 commits"):
        pin.commit_of_copies(stage)
    dirty = tmp_path / "dirty"
    copy(dirty, "sst2/layernorm", 2, old, roles.EVALUATION)
    copy(dirty, "rt/layernorm", 2, new + "-dirty", roles.EVALUATION)
    with pytest.raises(pin.PinError, match="holds runs of 2 commits .* uncommitted code"):
        pin.commit_of_copies(dirty)


def test_a_staged_study_of_another_scale_does_not_pin_a_new_one(tmp_path):
    results = tmp_path / "results"
    copy(staging.staging_dir(results / "mini-tuned") / "runs", "rt/none", 2, STUDY, "evaluation")
    assert staging.staged_commits(results / "smoke-tuned") == {}
    assert staging.staged_commits(results / "smoke") == {}
    assert list(staging.staged_commits(results / "mini-enwik8-prenorm").values()) == [STUDY]


def test_a_staged_copy_is_complete_or_absent(tmp_path, monkeypatch):
    from test_report import make_run

    import normlab.report.runs as runs_mod

    curves = [{"step": s, "split": "valid", "loss": 1.0 / s, "acc": 50.0 + s} for s in (1, 2)]
    src = make_run(tmp_path / "root", "rt", "layernorm", 2, 70.0, curves=curves)
    dest = tmp_path / "staging" / "rt" / "layernorm" / "seed2"
    write = runs_mod.atomic_write_bytes

    def disk_full_at_curves(path, data):
        if Path(path).name == "curves.jsonl":
            raise OSError(28, "No space left on device")
        write(path, data)

    monkeypatch.setattr(runs_mod, "atomic_write_bytes", disk_full_at_curves)
    with pytest.raises(OSError):
        runs_mod.export_if_changed(src, dest)
    # no summary without its curves: a restart must not take the copy for done
    assert not dest.exists()
    assert runs_mod.find_runs([tmp_path / "staging"]) == []  # the partial folder is no run
    monkeypatch.setattr(runs_mod, "atomic_write_bytes", write)
    assert runs_mod.export_if_changed(src, dest)  # the next slice copies it whole
    assert [json.loads(x)["acc"] for x in (dest / "curves.jsonl").read_text().splitlines()] == [
        51.0,
        52.0,
    ]
    assert sorted(p.name for p in dest.parent.iterdir()) == ["seed2"]  # no leftovers


def test_promotion_replaces_a_re_selected_tasks_selection_copies_and_keeps_the_others(tmp_path):
    """A study re-trained for some tasks at a changed preset re-selects their lr: promoting it
    removes those tasks' selection copies of the older preset (their lrs are not the new grid's,
    so no staged copy overwrites them) and keeps the selection copies still at their preset and
    every copy of the tasks it did not re-train."""
    import yaml

    from normlab.study.fixed_grid import FixedGrid

    out = tmp_path / "results" / "mini-tuned"
    runs, stage = out / "runs", staging.staging_dir(out) / "runs"

    def at(where: Path, name: str, seed: int, role, train_bytes: int) -> None:
        copy(where, name, seed, STUDY, role)
        task = {"name": name.split("/")[0], "data": {"train_bytes": train_bytes}}
        task["train"] = {"lr": 0.001}
        (where / name / f"seed{seed}" / "config.yaml").write_text(yaml.safe_dump({"task": task}))

    at(runs, "rt/layernorm/lr=0.003", 1, roles.SELECTION, 40000)  # the older preset's grid
    at(runs, "rt/layernorm", 2, roles.EVALUATION, 40000)
    at(runs, "sst2/layernorm/lr=0.003", 1, roles.SELECTION, 40000)  # a task not re-trained
    at(runs, "sst2/layernorm", 2, roles.EVALUATION, 40000)
    at(stage, "rt/layernorm/lr=0.002", 1, roles.SELECTION, 0)  # the new preset's grid
    at(stage, "rt/layernorm", 2, roles.EVALUATION, 0)
    kw = dict(scale="mini", name="tuned", root=tmp_path / "runs", copies=stage, commit=STUDY)
    grid = FixedGrid(["rt"], ["layernorm"], [2], dirty=False, code=None, roles={}, **kw)
    grid.presets = {t: {"name": t, "data": {"train_bytes": 0}, "train": {}} for t in ("rt", "sst2")}
    assert staging.promote(out, ["rt"], grid.at_preset) == (2, 2)
    left = sorted(str(p.parent.relative_to(runs)) for p in runs.rglob("summary.json"))
    assert left == [
        "rt/layernorm/lr=0.002/seed1",
        "rt/layernorm/seed2",
        "sst2/layernorm/lr=0.003/seed1",
        "sst2/layernorm/seed2",
    ]


def test_which_passes_continue_the_folder_each_task_at_its_own_commit(tmp_path):
    """A pass continues its results folder (each task at the commit the folder reports for it)
    unless it names a commit to re-train at; --until-resolved adds seeds to the folder's rows, so it
    continues even when it names one, as long as it is the folder's."""
    out = tmp_path / "results" / "mini"
    old, new = pin.git("rev-parse", "HEAD~1"), pin.head()
    copy(out / "runs", "sst2/layernorm", 2, old, roles.EVALUATION)
    copy(out / "runs", "rt/layernorm", 2, new, roles.EVALUATION)

    def continues(commit, source="the staged studies", named=False, until_resolved=False):
        return staging.continues_folder(out, commit, source, named, until_resolved)

    assert continues(new, source=f"{staging.REPORTED} mini/runs")
    # a sibling's staged copies pin the folder's own commit: the complete study stays complete
    assert continues(new) and not continues("c" * 40)
    # a plain --commit re-trains the tasks it is given there, even at the folder's commit
    assert not continues(new, named=True)
    # seeds added until rows resolve: at the folder's commits, named (a chain must) or not
    assert continues(new, named=True, until_resolved=True)
    assert continues("c" * 40, until_resolved=True)
    assert not continues("c" * 40, named=True, until_resolved=True)
    # once the study has staged copies, they say which tasks it keeps (staging.kept_tasks)
    copy(staging.staging_dir(out) / "runs", "rt/layernorm", 3, new, roles.EVALUATION)
    assert not continues(new) and not continues(new, until_resolved=True)


def test_promoting_seeds_added_to_a_complete_study_keeps_the_sessions_that_trained_its_runs():
    """A look's staged runs join the folder's (same commit): its record lists the first look's
    sessions, then the look's, each once; a re-run at another commit replaces the folder's."""
    from normlab.report.record import promoted

    def rec(commit, *started):
        return {
            "git_commit": commit,
            "sessions": [{"started_utc": t, "trained": 1} for t in started],
        }

    committed = rec(STUDY, "t1", "t2")
    staged = rec(STUDY, "t2", "t3")  # a slice the committed record already lists is listed once
    assert [s["started_utc"] for s in promoted(committed, staged)["sessions"]] == ["t1", "t2", "t3"]
    assert promoted(rec("e" * 40, "t1"), staged) == staged == promoted({}, staged)


def test_a_study_of_selection_runs_only_continues_at_its_records_commit(tmp_path):
    """An lr selection trains selection runs only, beside the reused ones of other studies: no
    copy's role names its commit, so the staged record's does; a record from uncommitted code
    stays marked so, and a folder with neither pins nothing."""
    results = tmp_path / "results"
    stage = staging.staging_dir(results / "mini-confirm-lr")
    copy(stage / "runs", "rt/detach_mean/lr=0.001", 1, RECORD, roles.SELECTION)
    copy(stage / "runs", "rt/detach_var/lr=0.001", 1, "e" * 40, roles.SELECTION)
    assert staging.staged_commits(results / "mini") == {}
    (stage / "reproduce.json").write_text(json.dumps({"git_commit": STUDY, "git_dirty": False}))
    assert staging.staged_commits(results / "mini") == {stage: STUDY}
    (stage / "reproduce.json").write_text(json.dumps({"git_commit": STUDY, "git_dirty": True}))
    assert staging.staged_commits(results / "mini") == {stage: STUDY + "-dirty"}
    (stage / "reproduce.json").write_text("{not json")
    assert staging.staged_commits(results / "mini") == {}
