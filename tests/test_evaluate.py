"""normlab-eval re-computes every task's recorded metrics from its checkpoints; translation decodes
greedy and with a beam; bad input is one line and exit 2."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import pytest
from conftest import REPO, SMOKE_RUNS

from normlab.evaluate import main
from normlab.rundir import read_curves

TRANSLATION = ("iwslt14_de_en", "iwslt15_en_vi")


def evaluate(args, tmp_path, name="out.json") -> list[dict]:
    out = tmp_path / name
    assert main([*map(str, args), "--out", str(out)]) == 0
    return json.loads(out.read_text())


def assert_same(new: dict, old: dict) -> None:
    """Every recorded key comes back: floats to 1e-6, everything else (counts, strings) exactly."""
    assert old, "nothing recorded to compare with"
    for key, ref in old.items():
        if key.endswith("_s"):  # decoding seconds
            continue
        if isinstance(ref, float):
            assert math.isclose(new[key], ref, rel_tol=1e-6, abs_tol=1e-6), (key, new[key], ref)
        else:
            assert new[key] == ref, (key, new[key], ref)


@pytest.mark.parametrize("key", list(SMOKE_RUNS))
def test_best_checkpoint_gives_the_recorded_valid_and_test_metrics(smoke_runs, key, tmp_path):
    summary, run_dir = smoke_runs[key]
    rows = evaluate([run_dir], tmp_path)
    by_split = {r["split"]: r for r in rows}
    assert by_split["valid"]["step"] == summary["best_step"]
    assert_same(by_split["valid"]["metrics"], summary["best_valid"])
    assert_same(by_split["test"]["metrics"], summary["test"])
    assert all(r["matches_recorded"] == "yes" for r in rows)


@pytest.mark.parametrize("key", list(SMOKE_RUNS))
def test_last_checkpoint_gives_the_last_validation(smoke_runs, key, tmp_path):
    summary, run_dir = smoke_runs[key]
    last_valid = [r for r in read_curves(run_dir / "curves.jsonl") if r["split"] == "valid"][-1]
    (row,) = evaluate([run_dir, "--checkpoint", "last", "--split", "valid"], tmp_path)
    assert row["step"] == summary["steps"] == last_valid["step"]
    assert_same(row["metrics"], summary["valid"])
    if summary["best_step"] == summary["steps"]:  # the same weights were tested
        (test,) = evaluate(
            [run_dir, "--checkpoint", "last", "--split", "test"], tmp_path, "test.json"
        )
        assert_same(test["metrics"], summary["test"])


def test_a_last_checkpoint_that_is_not_the_best_is_told_apart(smoke_runs, tmp_path):
    summary, run_dir = smoke_runs["rt_late"]
    assert summary["best_step"] < summary["steps"]  # the fixture's premise
    best, last = (
        evaluate([run_dir, "--checkpoint", c, "--split", "valid"], tmp_path, f"{c}.json")[0]
        for c in ("best", "last")
    )
    assert (best["step"], last["step"]) == (summary["best_step"], summary["steps"])
    assert best["metrics"] != last["metrics"]
    assert_same(last["metrics"], summary["valid"])
    (test,) = evaluate([run_dir, "--checkpoint", "last", "--split", "test"], tmp_path, "t.json")
    assert test["matches_recorded"] == "not recorded"  # the run tested its best checkpoint only


def test_several_runs_and_a_glob_give_one_table(smoke_runs, tmp_path, capsys):
    root = smoke_runs["rt"][1].parent
    rows = evaluate([str(root / "rt*"), smoke_runs["mnist"][1], "--split", "valid"], tmp_path)
    assert [r["task"] for r in rows] == ["rt", "rt", "mnist"]
    table = capsys.readouterr().out
    assert table.count("| valid |") == 3 and "matches recorded" in table
    main([str(smoke_runs["rt"][1]), "--split", "valid", "--out", str(tmp_path / "t.csv")])
    assert (
        (tmp_path / "t.csv")
        .read_text()
        .splitlines()[0]
        .startswith("run,task,norm,seed,checkpoint,step")
    )


@pytest.mark.parametrize("key", TRANSLATION)
def test_translation_decodes_greedy_and_with_a_beam(smoke_runs, key, tmp_path):
    summary, run_dir = smoke_runs[key]
    n_test = summary["data"]["sizes"]["test"]
    for beam in (1, 4):
        out = tmp_path / f"beam{beam}"
        (row,) = evaluate(
            [run_dir, "--split", "test", "--beam", beam, "--results-path", out],
            tmp_path,
            f"{beam}.json",
        )
        m = row["metrics"]
        assert m["decode"].startswith(f"beam={beam} ")
        assert "tok:none" in m["bleu_signature"] and "tok:13a" in m["sacrebleu_signature"]
        assert 0 <= m["bleu"] <= 100 and 0 <= m["sacrebleu"] <= 100
        assert math.isclose(
            m["loss"], summary["test"]["loss"], rel_tol=1e-6
        )  # the loss ignores the search
        files = {p.name: p.read_text().splitlines() for p in (out / os.listdir(out)[0]).iterdir()}
        assert sorted(files) == [
            "test.hyp.detok.txt",
            "test.hyp.txt",
            "test.ref.detok.txt",
            "test.ref.txt",
        ]
        assert all(len(lines) == n_test for lines in files.values())
        recorded_beam = int(summary["test"]["decode"].split()[0].removeprefix("beam="))
        assert row["matches_recorded"] == (
            "yes" if beam == recorded_beam else "n/a (the overrides change it)"
        )


def test_generate_decodes_the_validation_split(smoke_runs, tmp_path):
    _, run_dir = smoke_runs["iwslt14_de_en"]
    (row,) = evaluate(
        [run_dir, "--split", "valid", "--generate", "--results-path", tmp_path / "gen"], tmp_path
    )
    assert (
        "bleu_signature" in row["metrics"] and row["matches_recorded"] == "yes"
    )  # loss and nll as recorded
    assert any(p.name == "valid.hyp.detok.txt" for p in (tmp_path / "gen").rglob("*"))


def run_eval(args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "normlab.evaluate", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        **kw,
    )


@pytest.mark.parametrize(
    "case", ["no_checkpoint", "bad_config", "training_key", "unknown_key", "not_a_dir"]
)
def test_bad_input_is_one_line_and_exit_2(smoke_runs, tmp_path, case):
    _, run_dir = smoke_runs["rt"]
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    args, expect = {
        "no_checkpoint": ([copy], "no checkpoint best.pt"),
        "bad_config": ([copy], "config.yaml: cannot be read as YAML"),
        "training_key": ([copy, "task.train.lr=0.1"], "task.train.lr: a training key"),
        "unknown_key": ([copy, "--beam", 4], "task.eval.beam: run"),
        "not_a_dir": ([tmp_path / "nope"], "not a directory"),
    }[case]
    if case == "no_checkpoint":
        shutil.rmtree(copy / "checkpoints")
    if case == "bad_config":
        (copy / "config.yaml").write_text("task: [unclosed\n")
    before = sorted(p.relative_to(copy) for p in copy.rglob("*"))
    out = run_eval(args)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and lines[0].startswith("normlab-eval: error: ") and expect in lines[0]
    ), out.stderr
    assert "Traceback" not in out.stderr
    assert sorted(p.relative_to(copy) for p in copy.rglob("*")) == before  # nothing written


def test_help_and_version():
    for flag in ("--help", "--version"):
        out = run_eval([flag])
        assert out.returncode == 0 and "normlab" in out.stdout


def test_a_run_still_training_is_evaluated_at_its_best_checkpoint_so_far_and_says_so(
    smoke_runs, tmp_path, capsys
):
    from normlab.run.runlock import RunLock, lock_holder

    summary, run_dir = smoke_runs["rt"]
    assert lock_holder(run_dir) is None
    assert not (run_dir.parent / f".{run_dir.name}.lock").exists()  # asking creates no lock file
    with RunLock(run_dir):  # what a training process holds
        assert lock_holder(run_dir).startswith("pid ")
        rows = evaluate([run_dir, "--split", "valid"], tmp_path)
    err = capsys.readouterr().err
    assert f"{run_dir} is still training (pid " in err
    assert f"evaluating its best checkpoint so far, step {summary['best_step']}" in err
    assert rows[0]["step"] == summary["best_step"]
