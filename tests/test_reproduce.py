"""Experiment sweeps, launchers and `make reproduce-table` (scripts/reproduce.py) end to end."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import data_root

from helpers import REPO, TEST_CACHE, run_cli
from normlab.campaigns.xu2019 import CAMPAIGN
from normlab.campaigns.xu2019.paper_tables import TABLES
from normlab.report.report import own_tables
from normlab.report.runs import PER_LAYER_GRAD
from normlab.report.tables import latex_escape

EXPERIMENTS = REPO / "normlab" / "configs" / "experiment"
TASKS8 = "iwslt14_de_en,iwslt15_en_vi,enwik8,imdb,rt,sst2,mnist,ptb"


@pytest.mark.parametrize("table", list(TABLES))
def test_each_table_experiment_sweeps_exactly_its_norms(table, tmp_path):
    from hydra import compose, initialize_config_dir

    text = (EXPERIMENTS / f"{table}.yaml").read_text()
    assert text.startswith("# @package _global_")
    with initialize_config_dir(config_dir=str(REPO / "normlab" / "configs"), version_base="1.3"):
        cfg = compose(
            "train", overrides=[f"experiment={table}", "paths.root=/r"], return_hydra_config=True
        )
    params = cfg.hydra.sweeper.params
    assert params.norm.split(",") == TABLES[table][1]
    assert params.seed == "1,2,3" and params.task == TASKS8
    assert params.name == "xu2019" and str(params.threads) == "1"
    assert str(cfg.hydra.mode) == "RunMode.MULTIRUN"
    assert cfg.hydra.launcher._target_.endswith("JoblibLauncher")


def test_the_full_grid_is_the_union_of_the_tables(tmp_path):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(REPO / "normlab" / "configs"), version_base="1.3"):
        cfg = compose(
            "train",
            overrides=["experiment=xu2019", "hydra/launcher=submitit_slurm", "paths.root=/r"],
            return_hydra_config=True,
        )
    union = list(dict.fromkeys(n for _, norms in TABLES.values() for n in norms))
    assert cfg.hydra.sweeper.params.norm.split(",") == union
    assert cfg.hydra.launcher._target_.endswith(
        "SlurmLauncher"
    )  # the launcher is a command-line choice


@pytest.mark.slow
def test_submitit_local_mode_runs_the_sweep(tmp_path):
    out = run_cli(
        [
            "experiment=table1",
            "scale=smoke",
            "task=synthetic_cls",
            "norm=layernorm,layernorm_simple",
            "seed=1",
            "hydra/launcher=submitit_local",
            "hydra.launcher.timeout_min=5",
        ],
        tmp_path,
    )
    sweep = tmp_path / "runs" / "smoke" / "xu2019"
    assert (sweep / ".submitit").is_dir()  # the jobs really went through submitit
    for norm in ("layernorm", "layernorm_simple"):
        summary = json.loads(
            (sweep / "synthetic_cls" / norm / "seed1" / "summary.json").read_text()
        )
        assert summary["status"] == "completed" and summary["steps"] == 6
    assert "2 completed" in out.stdout


def reproduce(args, cwd, data_dir, timeout=600):
    env = {**os.environ, "NORMLAB_DATA": str(data_dir), "NORMLAB_CACHE": str(TEST_CACHE)}
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "reproduce.py"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
def test_smoke_reproduction_writes_every_output_and_shows_divergence(tmp_path, data_dir):
    # A run forced to diverge (huge learning rate), placed among the grid's committed run copies
    # (results/smoke/runs): it is restored into the run root, the sweep skips it as finished, and
    # the tables must show it as Diverge, never as a number, in a row of its own (its
    # hyperparameters differ from the grid's).
    run_cli(
        [
            "task=synthetic_cls",
            "norm=layernorm",
            "seed=2",
            "scale=smoke",
            "name=xu2019",
            "task.train.lr=1e6",
            "task.train.diverge_loss=100",
            f"hydra.run.dir={tmp_path}/results/smoke/runs/synthetic_cls/layernorm/seed2",
        ],
        tmp_path,
        data_dir,
    )
    # --working-tree: the code under test, committed or not (the default trains at a clean commit)
    # evaluation seeds (tests/test_study.py: a selection seed is trained, kept and in no table)
    args = [
        "--scale",
        "smoke",
        "--tasks",
        "rt,synthetic_cls",
        "--seeds",
        "2,3",
        "--norms",
        "layernorm,layernorm_simple",
        "--jobs",
        "2",
        "--root",
        str(tmp_path / "runs"),
        "--working-tree",
    ]
    out = reproduce(args, tmp_path, data_dir)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "8 runs, 1 finished, 7 to train" in out.stdout
    assert "[reproduce] 8/8 runs done (7 in this slice, " in out.stdout
    assert "study complete: 8 staged copies replace 1 reported" in out.stdout
    res = tmp_path / "results" / "smoke"

    tables = ["summary", "table1", "table3", "findings", "grad_stats", "data", "runs"]
    for stem in tables:
        for ext in ("md", "csv", "tex"):
            assert (res / f"{stem}.{ext}").stat().st_size > 0, f"{stem}.{ext}"
    # table2 and beyond have one of their norms only: no comparison, no file
    assert not (res / "table2.md").exists() and not (res / "beyond.md").exists()
    for fig in ("curves", "overfitting", "grad_stats"):
        assert (res / "figures" / f"{fig}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (res / "figures" / f"{fig}.pdf").read_bytes()[:5] == b"%PDF-"

    rows = {r[0]: r for r in csv.reader((res / "table1.csv").read_text().splitlines())}
    assert rows["norm"] == ["norm", "rt acc↑", "rt (paper)", "synthetic_cls acc↑"]
    assert rows["LayerNorm"][3].endswith("(1)") and "Diverge" not in rows["LayerNorm"][3]
    assert rows["LayerNorm (diverge_loss=100.0, lr=1000000.0)"][3] == "Diverge (1/1)"
    # seeds 2 and 3; at smoke scale RT stays at its majority class, and the cell says so
    rt_cell = rows["LayerNorm"][1]
    assert rt_cell.endswith("(2); did not train") and " ± " in rt_cell
    assert rows["LayerNorm"][2] == "77.21"
    assert "w/o Norm" not in rows  # a norm not run has no row of "–"
    runs = list(csv.DictReader((res / "runs.csv").read_text().splitlines()))
    assert len([r for r in runs if r["task"] != "caption"]) == 8
    assert sorted(
        r["status"] for r in runs if r["task"] == "synthetic_cls" and r["norm"] == "layernorm"
    ) == ["completed", "diverged"]
    # the data each task used is in every table's caption (LaTeX escapes its underscores)
    rt_note = json.loads(next((res / "runs").glob("rt/*/seed2/summary.json")).read_text())["data"][
        "subset"
    ]
    for stem in ("summary", "table1", "table3", "findings", "grad_stats", "data"):
        assert rt_note in (res / f"{stem}.md").read_text()
        assert latex_escape(rt_note) in (res / f"{stem}.tex").read_text()
    assert "LayerNorm-simple ≥ LayerNorm" in (res / "findings.md").read_text()

    rec = json.loads((res / "reproduce.json").read_text())
    assert rec["make"] == "make reproduce-table SCALE=smoke TASKS=rt,synthetic_cls SEEDS=2,3 JOBS=2"
    (session,) = rec["sessions"]
    assert session["command"].startswith("python -m normlab.campaigns.xu2019 --scale smoke")
    assert len(rec["git_commit"]) == 40 and session["machine"]["cpus"] == os.cpu_count()
    assert rec["run_git_commits"] == {rec["git_commit"]: 8}
    assert (
        rec["runs"] == {"completed": 7, "diverged": 1}
        and session["wall_time_s"] > 0
        and rec["absent"] == []
    )
    assert session["trained"] == 7
    readme = (res / "README.md").read_text()
    assert rec["git_commit"] in readme and "### Table 1: bias and gain" in readme

    # the committed copies are compact and re-create every table byte for byte
    curves = [
        json.loads(x)
        for p in (res / "runs").glob("*/*/*/curves.jsonl")
        for x in p.read_text().splitlines()
    ]
    assert curves and not any(PER_LAYER_GRAD.match(k) for rec_ in curves for k in rec_)
    assert any("grad/all/in_var" in r for r in curves)
    assert not list((res / "runs").glob("**/*.pt"))
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "normlab.make_report",
            str(res / "runs"),
            "--out",
            str(tmp_path / "again"),
            "--no-figures",
            "--campaign",
            "xu2019",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert again.returncode == 0, again.stderr
    for p in res.glob("*.*"):
        if p.stem in own_tables(CAMPAIGN):
            assert p.read_bytes() == (tmp_path / "again" / p.name).read_bytes(), p.name

    # a fresh machine (no run root) continues from the copies alone: nothing to train
    import shutil

    shutil.rmtree(tmp_path / "runs")
    second = reproduce(args + ["--no-figures"], tmp_path, data_dir)
    assert second.returncode == 0 and "8 runs, 8 finished, 0 to train" in second.stdout, (
        second.stdout
    )
    assert not (tmp_path / "results" / "staging").exists()  # a complete study is not staged again
    assert [s["trained"] for s in json.loads((res / "reproduce.json").read_text())["sessions"]] == [
        7,
        0,
    ]


@pytest.mark.slow
def test_logger_wandb_logs_the_results_folder_as_an_artifact(tmp_path, data_dir):
    pytest.importorskip("wandb")
    from wandb_records import offline_run

    args = [
        "--scale",
        "smoke",
        "--tasks",
        "synthetic_cls",
        "--seeds",
        "2",
        "--norms",
        "layernorm,layernorm_simple",
        "--jobs",
        "1",
        "--root",
        str(tmp_path / "runs"),
        "--working-tree",
        "--",
        "logger=wandb",
        "logger.mode=offline",
    ]
    env_home = {"HOME": str(tmp_path), "WANDB_CONFIG_DIR": str(tmp_path / "wandb-home")}
    os.environ.update(
        env_home
    )  # reproduce() copies os.environ; monkeypatch would not reach it here
    try:
        out = reproduce(args, tmp_path, data_dir)
    finally:
        for k in env_home:
            os.environ.pop(k)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "results logged to wandb as artifact normlab-results-smoke" in out.stdout
    (root,) = (tmp_path / "runs").iterdir()  # <HEAD[:12]>[-dirty]: runs of one code version
    report = offline_run(root / "smoke" / "wandb")
    assert report["run"].job_type == "report" and report["run"].run_group == "xu2019"
    (art,) = report["artifacts"]
    assert art.name == "normlab-results-smoke" and art.type == "results"
    files = {c.path for c in art.manifest.contents}
    assert {
        "table1.md",
        "table1.tex",
        "report.md",
        "reproduce.json",
        "figures/overfitting.png",
    } <= files
    for norm in ("layernorm", "layernorm_simple"):  # every training run went to wandb too
        run = offline_run(root / "smoke" / "xu2019" / "synthetic_cls" / norm / "seed2")
        assert run["summary"]["status"] == "completed"


def test_unknown_task_is_refused_before_anything_runs(tmp_path):
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "reproduce.py"), "--tasks", "rt,nope"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "task(s) ['nope'] do not exist" in out.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "results").exists()


COMMITTED = (
    sorted(p.parent for p in (REPO / "results").glob("*/runs"))
    if (REPO / "results").is_dir()
    else []
)


@pytest.mark.skipif(
    not COMMITTED,
    reason="no committed results/<scale>/runs yet (make reproduce-table commits them)",
)
@pytest.mark.parametrize("res", COMMITTED, ids=[p.name for p in COMMITTED])
def test_committed_tables_are_recreated_from_committed_runs(res, tmp_path):
    from normlab.campaigns.xu2019.family import locate
    from normlab.campaigns.xu2019.studies import STUDIES

    where = locate(res)
    if where and STUDIES[where[0]].get("kind") == "tuned":
        # a tuned-lr study's own report (the tuned study, the confirmatory lr selection:
        # normlab/campaigns/xu2019/tuned.py), as its driver writes it
        from normlab.campaigns.xu2019.tuned import recorded_extend, write_tuned_report
        from normlab.report import find_runs
        from normlab.search_space import load_search

        factors = load_search("lr_grid")["params"]["task.train.lr"]["factor_choices"]
        written = write_tuned_report(
            find_runs([res / "runs"]),
            tmp_path,
            factors,
            figures=False,
            extend=recorded_extend(res),
            member=res,
        )
        own = {Path(p).stem for p in written["tables"]}
    else:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "normlab.make_report",
                str(res / "runs"),
                "--out",
                str(tmp_path),
                "--no-figures",
                "--campaign",
                "xu2019",
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        assert out.returncode == 0, out.stderr
        # the baselines are computed from the data files: without them the report says so instead
        own = set(own_tables(CAMPAIGN)) - (set() if data_root().is_dir() else {"baselines"})
    committed = [p for p in res.glob("*.*") if p.stem in own]
    assert committed
    for p in committed:
        assert p.read_bytes() == (tmp_path / p.name).read_bytes(), (
            f"{p} differs from normlab-report's output"
        )


@pytest.mark.parametrize("res", COMMITTED, ids=[p.name for p in COMMITTED])
def test_committed_results_name_their_own_folder(res):
    """Tables written in a scratch copy (scripts/commit_results.sh) still point at the results folder."""
    name = f"results/{res.name}"
    record = (
        json.loads((res / "reproduce.json").read_text())
        if (res / "reproduce.json").exists()
        else {}
    )
    command = (record.get("report") or {}).get("command", "")
    assert "--out" not in command or command.endswith(f"--out {name}"), command
    readme = (res / "README.md").read_text()
    assert "/tmp/tmp" not in readme
    if "normlab-report" in readme:
        assert f"normlab-report {name}/runs" in readme


def test_a_folders_readme_names_the_evaluation_seeds_its_study_ran(tmp_path):
    """The placement study runs seeds 2-4 of the declared evaluation seeds 2-6: its README, and its
    staged copies' while it trains, say 2-4."""
    from normlab.campaigns.xu2019.folder_readme import readme, staged_readme

    roles_ = {"evaluation": [2, 3, 4, 5, 6], "selection": [1]}
    rec = {
        "grid": {"study": "placement", "scale": "mini", "seeds": [2, 3, 4], "seed_roles": roles_},
        "make": "make reproduce-placement",
        "git_commit": "e" * 40,
        "git_dirty": False,
        "run_git_commits": {},
        "report": {},
        "runs": {"completed": 9},
        "runs_wall_time_s": 0.0,
    }
    text = readme(rec, tmp_path)
    assert "selection [1] (they chose" in text and "evaluation [2, 3, 4] (normlab" in text
    staged = staged_readme(
        {**rec, "absent": ["x"]}, tmp_path, "placement", "mini", roles_, tmp_path
    )
    assert "- Seeds: selection [1], evaluation [2, 3, 4] (normlab" in staged
    rec["grid"]["seeds"] = [1, 2, 3, 4, 5, 6]  # the tuned study's: seed 1 is the selection seed
    assert "evaluation [2, 3, 4, 5, 6] (normlab" in readme(rec, tmp_path)
    # the selection seeds' line says what they chose as the study records it: the tuned study's
    # lr-grid table and figure show seed 1, so "their runs are in no table" would be false there
    from normlab.campaigns.xu2019.kinds import Tuned

    rec["selection_record"] = {"seeds": [1], "what": Tuned.selection_what}
    text = readme(rec, tmp_path)
    assert f"selection [1] ({Tuned.selection_what})" in text and "no table" not in text
    # a study that added seeds to its open rows names them, and its command adds them again
    rec["grid"].update(study="fixed", seeds=[2, 3, 4, 5, 6], until_resolved=True, max_seeds=10)
    from types import SimpleNamespace

    from normlab.campaigns.xu2019.kinds import Fixed

    request = SimpleNamespace(
        decl={"make": "make reproduce-table"},
        scale="mini",
        tasks=["rt"],
        seeds=[2, 3, 4, 5, 6],
        jobs=2,
        until_resolved=True,
        max_seeds=10,
        declaration=None,
    )
    rec["make"] = Fixed(request).make_command()  # what the driver records
    text = readme(rec, tmp_path)
    assert "evaluation [2, 3, 4, 5, 6], then 7-11 for the norms of the primary rows" in text
    assert "`make reproduce-table SCALE=mini TASKS=rt SEEDS=2,3,4,5,6 JOBS=2 MAX_SEEDS=10`" in text
    dry = subprocess.run(
        ["make", "-n", "reproduce-table", "MAX_SEEDS=10"], cwd=REPO, capture_output=True, text=True
    )
    assert "--until-resolved --max-seeds 10" in dry.stdout, dry.stdout + dry.stderr
