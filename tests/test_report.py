"""normlab.report: cells, paper tables, findings, exports and the CLI, on run dirs written here.

The run dirs follow the run-directory contract exactly (config.yaml, summary.json, curves.jsonl),
with chosen values, so every number in the tables can be asserted exactly.
"""

import csv
import functools
import json
import math
import subprocess
import sys

import pytest
import yaml

from normlab.campaigns.xu2019 import CAMPAIGN
from normlab.campaigns.xu2019 import published as P
from normlab.campaigns.xu2019.paper_tables import TABLES, norm_table
from normlab.campaigns.xu2019.protocol import grid as xgrid
from normlab.make_report import main as cli_main
from normlab.report import find_runs
from normlab.report import write_report as generic_report
from normlab.report.axis import setting_axis
from normlab.report.runs import export, load_run
from normlab.report.tables import latex_escape

RT_NOTE = "RT has no official split: seeded 80/10/10 split (split_seed=0)"

# the paper's report: the generic one with the xu2019 campaign's tables, findings and figures
write_report = functools.partial(generic_report, campaign=CAMPAIGN)


def make_run(
    root,
    task,
    norm,
    seed,
    value=None,
    status="completed",
    metric="acc",
    hib=True,
    curves=(),
    options=None,
    lr=1e-3,
    subset=RT_NOTE,
    summary=True,
):
    d = root / task / norm / f"seed{seed}"
    d.mkdir(parents=True)
    options = {"eps": 1e-5} if options is None else options
    cfg = {
        "task": {"name": task, "train": {"lr": lr}},
        "norm": {"name": norm, "options": options},
        "scale": "mini",
        "seed": seed,
        "name": "t",
        "paths": {"root": str(root)},
        "threads": 1,
    }
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    if summary:
        s = {
            "status": status,
            "task": task,
            "norm": norm,
            "norm_options": options,
            "seed": seed,
            "scale": "mini",
            "metric": metric,
            "higher_is_better": hib,
            "test": {metric: value} if value is not None else {},
            "valid": {},
            "data": {
                "source": "real",
                "subset": subset,
                "sizes": {"train": 10, "valid": 2, "test": 3},
            },
            "steps": 100,
            "wall_time_s": 60.0,
            "params": 1000,
            "throughput": {"examples_per_s": 50.0},
        }
        (d / "summary.json").write_text(json.dumps(s))
    (d / "curves.jsonl").write_text("".join(json.dumps(r) + "\n" for r in curves))
    return d


def grid_of(root):
    return xgrid(find_runs([root]))


def row(table, label):
    return next(r for r in table.rows if r[0] == label)


def test_cell_is_mean_sample_std_n_and_diverged_count(tmp_path):
    for seed, v in zip((1, 2, 3), (70.0, 72.0, 74.0)):
        make_run(tmp_path, "rt", "layernorm", seed, v)
    make_run(tmp_path, "rt", "layernorm", 4, status="diverged")
    for seed in (1, 2, 3):
        make_run(tmp_path, "rt", "none", seed, status="diverged")
    make_run(tmp_path, "rt", "layernorm_simple", 1, 71.0)
    make_run(tmp_path, "rt", "layernorm_simple", 2, status="failed")
    make_run(tmp_path, "rt", "layernorm_simple", 3, summary=False)  # killed before its summary
    t = norm_table(grid_of(tmp_path), "table1", *TABLES["table1"])
    assert t.header == ["norm", "rt acc↑", "rt (paper)"]
    assert row(t, "LayerNorm") == ["LayerNorm", "72.00 ± 2.00 (3); Diverge (1/4)", "77.21"]
    assert row(t, "w/o Norm")[1:] == ["Diverge (3/3)", "76.85"]
    assert row(t, "LayerNorm-simple")[1] == "71.00 (1); failed (1/3); unfinished (1/3)"
    assert "72.00 $\\pm$ 2.00 (3); Diverge (1/4)" in t.latex()
    parsed = list(csv.reader(t.csv().splitlines()))
    assert parsed[2] == ["LayerNorm", "72.00 ± 2.00 (3); Diverge (1/4)", "77.21"]
    assert parsed[-1][0] == "caption" and RT_NOTE in parsed[-1][1]


def test_published_improvements_equal_the_posters_printed_rows():
    # Table 2 of the poster (papers.md §1.4), "Improvement" rows as printed
    top = {
        "iwslt14_de_en": -0.1,
        "iwslt15_en_vi": -0.7,
        "enwik8": -0.08,
        "rt": -0.45,
        "sst5": 1.49,
        "mnist": -0.04,
        "ptb": 1.48,
    }
    bottom = {
        "iwslt14_de_en": 1.6,
        "iwslt15_en_vi": 3.9,
        "enwik8": 0.05,
        "rt": 0.26,
        "sst5": 0.50,
        "mnist": -0.01,
        "ptb": -0.60,
    }
    for task, v in top.items():
        assert P.published_improvement(task, "detachnorm", "none") == v, task
    for task, v in bottom.items():
        assert P.published_improvement(task, "layernorm_simple", "detachnorm") == v, task
    assert (
        P.published_improvement("wmt14_en_de", "layernorm_simple", "detachnorm") is None
    )  # Diverge
    assert P.published_text("wmt14_en_de", "none") == "Diverge"
    assert P.published_text("rt", "adanorm") == "77.50" and P.published_text("rt", "rmsnorm") == "–"
    assert not P.has_published("sst2") and not P.has_published("imdb")


def test_table2_improvement_rows_flip_sign_for_bpc(tmp_path):
    for seed in (1, 2):
        make_run(tmp_path, "enwik8", "none", seed, 1.10, metric="bpc", hib=False)
        make_run(
            tmp_path, "enwik8", "detachnorm", seed, 1.20 + 0.01 * seed, metric="bpc", hib=False
        )
        make_run(tmp_path, "enwik8", "layernorm_simple", seed, 1.05, metric="bpc", hib=False)
    t = norm_table(grid_of(tmp_path), "table2", *TABLES["table2"])
    labels = [r[0] for r in t.rows]
    assert labels == [
        "w/o Norm",
        "DetachNorm",
        "Improvement (DetachNorm − w/o Norm)",
        "LayerNorm-simple",
        "Improvement (LayerNorm-simple − DetachNorm)",
    ]  # the detach-mean and detach-variance norms were not run: no rows of "–" for them
    assert t.header == ["norm", "enwik8 bpc↓", "enwik8 (paper)"]
    assert row(t, "Improvement (DetachNorm − w/o Norm)")[1:] == ["-0.115 (2)", "-0.08"]
    assert row(t, "Improvement (LayerNorm-simple − DetachNorm)")[1:] == ["+0.165 (2)", "+0.05"]


def test_improvement_rows_pair_the_seeds_and_compare_no_cell_that_did_not_train(tmp_path):
    """Seeds added to one norm's unresolved rows are set against nothing: the row is the difference
    over the seeds both norms completed, as the findings' paired test reads it, not of the cells'
    means; a cell that did not train gets no difference."""
    for seed, v in zip((2, 3, 4), (75.0, 76.0, 77.0)):
        make_run(tmp_path, "rt", "detachnorm", seed, v)
    for seed, v in zip((2, 3, 4, 5, 6), (75.5, 76.5, 77.5, 80.0, 80.0)):
        make_run(tmp_path, "rt", "layernorm_simple", seed, v)
    make_run(tmp_path, "rt", "layernorm_simple", 7, status="diverged")
    grid = grid_of(tmp_path)
    t = norm_table(grid, "table2", *TABLES["table2"])
    # the cells' means are 76.00 and 77.90; over seeds 2-4 the difference is +0.50
    assert row(t, "Improvement (LayerNorm-simple − DetachNorm)")[1] == "+0.50 (3)"
    assert any("over the seeds both completed (n)" in n for n in t.notes)
    grid.norm_cell("rt", "detachnorm").untrained = "74.0 acc: at the majority-class level"
    t = norm_table(grid, "table2", *TABLES["table2"])
    assert row(t, "Improvement (LayerNorm-simple − DetachNorm)")[1] == "– (did not train)"


def test_option_sets_become_separate_rows_and_mixed_configs_are_flagged(tmp_path):
    make_run(tmp_path, "rt", "adanorm", 1, 70.0, options={"C": 1.0, "k": 0.1})
    make_run(tmp_path, "rt", "adanorm", 2, 71.0, options={"C": 2.0, "k": 0.1})
    make_run(tmp_path, "rt", "layernorm", 1, 70.0, lr=1e-3)
    make_run(tmp_path, "rt", "layernorm", 2, 72.0, lr=5e-4)
    t = norm_table(grid_of(tmp_path), "table3", *TABLES["table3"])
    assert [r[0] for r in t.rows] == ["LayerNorm", "AdaNorm (C=1.0)", "AdaNorm (C=2.0)"]
    assert row(t, "LayerNorm")[1] == "71.00 ± 1.41 (2) †"
    assert "† the cell's runs differ in config beyond the seed." in t.full_caption


def test_seeds_that_differ_only_in_runtime_keys_are_one_config(tmp_path):
    # a resumed seed (resume=...) or one trained compiled computes the same thing
    for seed, extra in (
        (1, {"resume": "auto", "compile": False}),
        (2, {"resume": "never", "compile": True}),
    ):
        make_run(tmp_path, "rt", "layernorm", seed, 70.0 + seed)
        path = tmp_path / "rt" / "layernorm" / f"seed{seed}" / "config.yaml"
        path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), **extra}))
    t = norm_table(grid_of(tmp_path), "table3", *TABLES["table3"])
    assert row(t, "LayerNorm")[1] == "71.50 ± 0.71 (2)"
    make_run(tmp_path, "rt", "layernorm", 3, 73.0, lr=5e-4)  # a config change is still flagged
    t = norm_table(grid_of(tmp_path), "table3", *TABLES["table3"])
    assert row(t, "LayerNorm")[1].endswith("†")


def test_export_drops_per_layer_probe_keys_and_keeps_tables_identical(tmp_path):
    rec = {
        "step": 5,
        "split": "train",
        "loss": 0.123456789012,
        "grad/all/in_var": 1.23456789e-9,
        "grad/encoder.layers.0.final_layer_norm/in_var": 3.0,
    }
    src = make_run(tmp_path / "src", "rt", "layernorm", 1, 70.123456789, curves=[rec])
    (run,) = find_runs([src])
    copy = tmp_path / "copy" / "rt" / "layernorm" / "seed1"
    export(run, copy)
    assert (copy / "summary.json").read_bytes() == (src / "summary.json").read_bytes()
    assert (copy / "config.yaml").read_bytes() == (src / "config.yaml").read_bytes()
    (line,) = (copy / "curves.jsonl").read_text().splitlines()
    assert json.loads(line) == {
        "step": 5,
        "split": "train",
        "loss": 0.1234568,
        "grad/all/in_var": 1.234568e-9,
    }
    a = write_report(find_runs([tmp_path / "src"]), tmp_path / "a", figures=False)
    b = write_report(find_runs([tmp_path / "copy"]), tmp_path / "b", figures=False)
    for p in a["tables"]:
        assert p.read_bytes() == (tmp_path / "b" / p.name).read_bytes(), p.name
    assert len(b["tables"]) == len(a["tables"])


def test_the_mechanism_tables_name_a_cell_that_did_not_train(tmp_path):
    """The overfitting, gradient and saturation tables describe every cell, and name the ones that
    did not train as the results tables do."""
    from normlab.report.gradstats import grad_table
    from normlab.report.overfit import overfitting_table
    from normlab.report.saturation import saturation_table

    probe = {"split": "train", "loss": 1.0, "grad/all/in_absmean": 1.0, "grad/all/out_absmean": 2.0}
    probe |= {"grad/all/in_var": 4.0, "grad/all/out_var": 4.0}
    probe |= {"alpha/all/alpha": 0.5, "alpha/all/saturated": 0.25}
    for norm, v in (("layernorm", 75.0), ("dyt", 50.5)):
        make_run(tmp_path, "rt", norm, 2, v, curves=[{"step": s, **probe} for s in (10, 20)])
    grid = grid_of(tmp_path)
    grid.norm_cell("rt", "dyt").untrained = "50.50 acc: at the majority-class level"
    tables = {t.key: t for t in (overfitting_table(grid), grad_table(grid), saturation_table(grid))}
    by_norm = {r[1]: r for r in tables["overfitting"].rows}  # rows: task, norm, ..., regime
    assert by_norm["DyT"][-1] == "did not train" and by_norm["LayerNorm"][-1] != "did not train"
    assert row(tables["grad_stats"], "DyT")[1:] == ["0.5; did not train", "1", "not recorded"]
    assert row(tables["grad_stats"], "LayerNorm")[1:] == ["0.5", "1", "not recorded"]
    assert row(tables["alpha_saturation"], "DyT")[1:] == [
        "0.5 → 0.5",
        "25.0% → 25.0%",
        "1; did not train",
    ]


def test_grad_stats_table_from_probe_records(tmp_path):
    def probe(step, m_in, v_in):
        return {
            "step": step,
            "split": "train",
            "loss": 1.0,
            "grad/all/in_absmean": m_in,
            "grad/all/out_absmean": 2.0,
            "grad/all/in_var": v_in,
            "grad/all/out_var": 4.0,
        }

    make_run(
        tmp_path, "rt", "detachnorm", 1, 70.0, curves=[probe(10, 1.0, 4.0), probe(20, 3.0, 8.0)]
    )
    # LN-simple's probe logged σ (the σ²-normalized ratio); DetachNorm's predates it.
    make_run(
        tmp_path,
        "rt",
        "layernorm_simple",
        1,
        70.0,
        curves=[{**probe(10, 0.0, 2.0), "grad/all/ratio_s2": 0.75}],
    )
    out = write_report(find_runs([tmp_path]), tmp_path / "out", figures=False)
    text = (tmp_path / "out" / "grad_stats.md").read_text()
    assert "| DetachNorm | 1 | 1.5 | not recorded |" in text  # medians of (0.5, 1.5) and (1, 2)
    assert "| LayerNorm-simple | 0 | 0.5 | 0.75 |" in text
    assert "predate" not in text  # one run has σ, so the caption does not say none has
    assert tmp_path / "out" / "grad_stats.csv" in out["tables"]


def test_every_caption_names_the_data_and_figures_are_written(tmp_path):
    curves = [
        {"step": s, "split": sp, "loss": 1.0 / s} for s in (1, 2, 3) for sp in ("train", "valid")
    ]
    for norm in ("layernorm", "layernorm_simple"):
        for seed in (1, 2):
            make_run(tmp_path / "runs", "rt", norm, seed, 70.0 + seed, curves=curves)
    out = write_report(find_runs([tmp_path / "runs"]), tmp_path / "out")
    for p in out["tables"]:
        if p.stem != "runs":
            assert (latex_escape(RT_NOTE) if p.suffix == ".tex" else RT_NOTE) in p.read_text(), (
                p.name
            )
    assert set(out["captions"]) == {"curves", "overfitting"}  # the other figures lack a norm pair
    for key, cap in out["captions"].items():
        assert RT_NOTE in cap and "Scale: mini." in cap
        assert (tmp_path / "out" / "figures" / f"{key}.png").read_bytes()[
            :8
        ] == b"\x89PNG\r\n\x1a\n"
        assert (tmp_path / "out" / "figures" / f"{key}.pdf").read_bytes()[:5] == b"%PDF-"
    index = (tmp_path / "out" / "report.md").read_text()
    assert (
        "![overfitting](figures/overfitting.png)" in index and "### Table 1: bias and gain" in index
    )


def test_find_runs_ignores_wandb_checkpoint_and_hidden_folders(tmp_path):
    d = make_run(tmp_path, "rt", "layernorm", 1, 70.0)
    for sub in ("wandb/offline-run-1/files", "checkpoints", ".submitit/0"):
        (d / sub).mkdir(parents=True)
        (d / sub / "config.yaml").write_text("wandb_version: 1\n")
    assert [r.path for r in find_runs([tmp_path])] == [d]


def test_runs_are_read_with_safe_yaml_only(tmp_path, capsys):
    d = make_run(tmp_path, "rt", "layernorm", 1, 70.0)
    (d / "config.yaml").write_text("task: !!python/object/apply:os.system ['touch pwned']\n")
    assert find_runs([tmp_path]) == []  # refused by the safe loader: skipped by name, never run
    assert f"{d} skipped" in capsys.readouterr().err and not (tmp_path / "pwned").exists()
    with pytest.raises(yaml.YAMLError):
        load_run(d)


def test_cli_writes_tables_and_rejects_missing_or_empty_input(tmp_path, capsys):
    for norm, v in (("layernorm", 70.0), ("rmsnorm", 71.0)):
        make_run(tmp_path / "runs", "rt", norm, 1, v)
    assert cli_main([str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--no-figures"]) == 0
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| LayerNorm | 70.00 (1) |" in summary and "| RMSNorm | 71.00 (1) |" in summary
    assert "2 runs -> " in capsys.readouterr().out
    for ext in ("md", "csv", "tex"):
        assert (tmp_path / "out" / f"summary.{ext}").stat().st_size > 0
    assert cli_main([str(tmp_path / "nope"), "--out", str(tmp_path / "o2")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli_main([str(tmp_path / "empty"), "--out", str(tmp_path / "o3")]) == 2
    assert "no run directories" in capsys.readouterr().err


def test_published_metrics_cover_every_published_task():
    assert set(P.PUBLISHED) == set(P.METRICS)
    assert all(
        math.isfinite(v) for row in P.PUBLISHED.values() for v in row.values() if v is not None
    )


def test_report_cli_starts_without_torch():
    # reading run directories needs no torch; importing it cost normlab-report about a second
    code = "import sys, normlab.make_report; assert 'torch' not in sys.modules, 'torch imported'"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_data_table_states_a_precision_other_than_fp32(tmp_path):
    for seed, precision in (
        (1, "bf16"),
        (2, None),
    ):  # None: a summary from before precision existed
        make_run(tmp_path / "runs", "rt", "layernorm", seed, 70.0)
        path = tmp_path / "runs" / "rt" / "layernorm" / f"seed{seed}" / "summary.json"
        if precision:
            path.write_text(json.dumps({**json.loads(path.read_text()), "precision": precision}))
    out = write_report(find_runs([tmp_path / "runs"]), tmp_path / "out")
    data = next(p for p in out["tables"] if p.stem == "data" and p.suffix == ".md")
    assert "Precision: bf16, fp32." in data.read_text()


def test_data_note_counts_translation_pairs_used(tmp_path):
    from normlab.report.data_notes import data_note
    from normlab.report.runs import Run

    old = {
        "source": "real",
        "subset": "s",
        "sizes": {"train": 7283, "valid": 887, "test": 1565},
        "train_pairs_over_max_len": 984,
    }  # a summary from before sizes counted pairs used
    new = {**old, "sizes": {**old["sizes"], "train": 6299}, "train_pairs_read": 7283}
    for d in (old, new):
        note = data_note([Run(tmp_path, {}, {"data": d})])
        assert (
            "train 6,299 used (7,283 read, 984 over train_max_len dropped) / valid 887 / test 1,565"
            in note
        )


def test_regime_counts_runs_whose_best_checkpoint_is_the_last(tmp_path):
    from normlab.report.regime import regime_sentence

    for seed, best in ((1, 100), (2, 100), (3, 60)):
        d = make_run(tmp_path, "rt", "layernorm", seed, 70.0)
        s = json.loads((d / "summary.json").read_text())
        (d / "summary.json").write_text(json.dumps({**s, "best_step": best}))  # steps = 100
    make_run(tmp_path, "rt", "adanorm", 1, status="diverged")  # not counted
    text = regime_sentence(grid_of(tmp_path))
    assert "final evaluation in 2 of 3 completed runs (rt 2/3; LayerNorm 2/3)" in text
    assert "measure early training" in text


def test_paper_layout_figures_need_both_norms_and_plot_bits_per_byte(tmp_path, monkeypatch):
    from normlab.campaigns.xu2019 import paper_figures as pf

    train = [{"step": s, "split": "train", "loss": 2.0 * math.log(2)} for s in (10, 20)]
    valid = [{"step": 20, "split": "valid", "loss": 1.0, "bpc": 1.5}]
    make_run(
        tmp_path / "runs",
        "enwik8",
        "layernorm",
        1,
        1.5,
        metric="bpc",
        hib=False,
        curves=train + valid,
    )
    grid = grid_of(tmp_path / "runs")
    assert (
        pf.paper_figure(grid, "paper_overfitting_enwik8", tmp_path / "f") is None
    )  # LN-simple missing
    make_run(
        tmp_path / "runs",
        "enwik8",
        "layernorm_simple",
        1,
        1.4,
        metric="bpc",
        hib=False,
        curves=train + valid,
    )
    plotted = []
    real_series = pf._series
    monkeypatch.setattr(
        pf, "_series", lambda runs, get: plotted.append(real_series(runs, get)) or plotted[-1]
    )
    caption = pf.paper_figure(
        grid_of(tmp_path / "runs"), "paper_overfitting_enwik8", tmp_path / "f"
    )
    assert caption.startswith("Enwiki8: LayerNorm vs LayerNorm-simple (the paper's layout)")
    assert (tmp_path / "f" / "paper_overfitting_enwik8.png").read_bytes()[:4] == b"\x89PNG"
    # train loss in nats -> bits (2 ln 2 nats = 2 bits); valid from the records' bpc
    assert plotted[0][1] == pytest.approx([2.0, 2.0]) and plotted[2][1] == [1.5]
    out = write_report(find_runs([tmp_path / "runs"]), tmp_path / "out")
    assert "paper's layout" in out["index"].read_text()
    assert not (tmp_path / "out" / "figures" / "paper_adanorm_ptb.png").exists()  # no PTB runs


def test_a_setting_several_norms_vary_is_a_column_axis_and_claims_pair_within_it(tmp_path):
    """Two norms at two placements: each placement is a column of its own, and each finding pairs
    the norms within one placement (LayerNorm-simple is behind at post, ahead at pre); AdaNorm's
    C=1/C=2, varied by that norm alone, stays in the row label."""
    for placement, shift in (("post", -1.0), ("pre", 1.0)):
        for seed in (1, 2, 3):
            for norm, value in (
                ("layernorm", 70.0 + 0.1 * seed),
                ("layernorm_simple", 70.0 + shift + 0.13 * seed),
            ):
                d = make_run(tmp_path / "runs" / placement, "rt", norm, seed, value)
                s = json.loads((d / "summary.json").read_text())
                (d / "summary.json").write_text(
                    json.dumps({**s, "setting": {"placement": placement}})
                )
    for seed, c in ((1, 1.0), (2, 2.0)):
        d = make_run(tmp_path / "runs" / "ada", "rt", "adanorm", seed, 70.0, options={"C": c})
        s = json.loads((d / "summary.json").read_text())
        (d / "summary.json").write_text(json.dumps({**s, "setting": {"C": c}}))
    runs = find_runs([tmp_path / "runs"])
    assert setting_axis(runs) == ("placement",)
    write_report(runs, tmp_path / "report", figures=False)
    with open(tmp_path / "report" / "table1.csv", newline="") as f:
        header = next(csv.reader(f))
    assert "rt [placement=post] acc↑" in header and "rt [placement=pre] acc↑" in header, header
    with open(tmp_path / "report" / "findings.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["claim"].startswith("Bias and gain do not help")]
    ours = {r["task"]: float(r["ours"]) for r in rows}
    assert ours["rt [placement=post]"] == pytest.approx(-0.94)
    assert ours["rt [placement=pre]"] == pytest.approx(1.06)
    assert len(ours) == 2  # no finding taken from one placement and labelled "rt"
    with open(tmp_path / "report" / "summary.csv", newline="") as f:
        labels = [r[0] for r in csv.reader(f)]
    assert "AdaNorm (C=1.0)" in labels and "AdaNorm (C=2.0)" in labels
    settings = (tmp_path / "report" / "settings.md").read_text()
    assert "| rt | LayerNorm-simple | (default) | pre |" in settings


def test_the_placement_studys_columns_in_the_models_order_and_its_sign_tests_over_columns(tmp_path):
    """The placement study's axis is two keys (pre with LayerNorm scaling is a setting of its own):
    its columns read in the models' placement order, the scaling next to pre and named after it,
    and a sign test over one task's placements says it counts columns, not tasks."""
    settings = [
        {"placement": "mixln"},
        {"placement": "pre", "layernorm_scaling": True},
        {"placement": "deepnorm"},
        {"placement": "post"},
        {"placement": "peri"},
        {"placement": "pre"},
    ]
    for i, setting in enumerate(settings):
        for seed in (1, 2, 3):
            for norm, value in (
                ("layernorm", 70.0 + 0.1 * seed),
                ("layernorm_simple", 70.5 + 0.13 * seed),
            ):
                d = make_run(tmp_path / "runs" / str(i), "rt", norm, seed, value)
                s = json.loads((d / "summary.json").read_text())
                (d / "summary.json").write_text(json.dumps({**s, "setting": setting}))
    runs = find_runs([tmp_path / "runs"])
    write_report(runs, tmp_path / "report", figures=False)
    with open(tmp_path / "report" / "table1.csv", newline="") as f:
        header = next(csv.reader(f))
    assert [h.split(" [")[1].split("]")[0] for h in header if " [" in h] == [
        "placement=post",
        "placement=pre",
        "placement=pre,layernorm_scaling=true",
        "placement=peri",
        "placement=mixln",
        "placement=deepnorm",
    ]
    with open(tmp_path / "report" / "sign_tests.csv", newline="") as f:
        signs = [r for r in csv.DictReader(f) if r["claim"].startswith("Bias and gain do not help")]
    assert [(r["as claimed"], r["n"], r["over"]) for r in signs] == [
        ("6", "6", "task × setting columns")
    ]
    text = (tmp_path / "report" / "findings.md").read_text()
    assert "as claimed on 6 of 6 task × setting columns" in text and "of 6 tasks" not in text
    from normlab.report.axis import COLUMNS, units

    assert units(["rt", "sst2"]) == "tasks" and units(["rt", "rt@paper"]) == COLUMNS


def test_a_figure_of_axis_columns_wraps_their_titles_and_keeps_its_own(tmp_path, monkeypatch):
    """A placement column's name is long: its panel titles wrap (task, setting, panel on lines of
    their own) while the figure keeps its title; a plain task's titles stay on one line."""
    from normlab.report import figures as F
    from normlab.report.axis import setting_axis

    curves = [{"step": k, "split": "valid", "loss": 1.0 + 0.1 * k} for k in (1, 2)]
    for task, setting in (
        ("rt", {"placement": "pre", "layernorm_scaling": True}),
        ("rt", {"placement": "post"}),
    ):
        for norm in ("layernorm", "layernorm_simple"):
            d = make_run(tmp_path / "runs" / str(len(setting)), task, norm, 1, 70.0, curves=curves)
            s = json.loads((d / "summary.json").read_text())
            (d / "summary.json").write_text(json.dumps({**s, "setting": setting}))
    make_run(tmp_path / "runs" / "plain", "sst2", "layernorm", 1, 80.0, curves=curves)
    make_run(tmp_path / "runs" / "plain", "sst2", "layernorm_simple", 1, 80.0, curves=curves)
    runs = find_runs([tmp_path / "runs"])
    drawn = []
    monkeypatch.setattr(F.plt, "close", drawn.append)
    title = "Overfitting: {norms}"
    assert F.figure(
        xgrid(runs, setting_axis(runs)),
        "o",
        title,
        ["layernorm", "layernorm_simple"],
        [F.RISE_PANEL],
        tmp_path,
        "x",
    )
    (fig,) = drawn
    assert fig._suptitle.get_text() == "Overfitting: LayerNorm vs LayerNorm-simple"
    heads = [ax.get_title() for ax in fig.axes]
    assert "rt\n[placement=pre,layernorm_scaling=true]\nvalid loss above its minimum" in heads
    assert "sst2: valid loss above its minimum" in heads


def test_a_run_with_an_unreadable_summary_is_skipped_by_name(tmp_path, capsys):
    make_run(tmp_path, "rt", "layernorm", 2, 70.0)
    bad = make_run(tmp_path, "rt", "layernorm", 3, 71.0)
    (bad / "summary.json").write_bytes(b'{"status": "completed", "test": {"acc": 7\xff')
    runs = find_runs([tmp_path])
    assert [r.seed for r in runs] == [2]  # the other run's numbers are still reported
    assert (
        f"{bad} skipped: its summary.json or config.yaml is unreadable" in capsys.readouterr().err
    )


def test_a_run_still_training_is_an_unfinished_cell_of_its_own_settings_row(tmp_path):
    """A live run has no summary yet: its row is the one its folder names (the setting its summary
    will record), not its norm options, so a live sweep shows no second row for one norm."""
    import json

    from normlab.report.aggregate import Grid
    from normlab.report.runs import setting_of_path

    for seed, v in ((1, 70.0), (2, 72.0)):  # finished, at the norm's defaults: setting {}
        d = make_run(tmp_path, "rt", "tempnorm", seed, v, options={"t0": 1.0})
        s = json.loads((d / "summary.json").read_text())
        (d / "summary.json").write_text(json.dumps({**s, "setting": {}}))
    make_run(tmp_path, "rt", "tempnorm", 3, options={"t0": 1.0}, summary=False)  # training now
    made = make_run(tmp_path / "made", "rt", "tempnorm", 1, options={"t0": 2.0}, summary=False)
    live = tmp_path / "rt" / "tempnorm" / "t0=2.0,lr=1e-05" / "seed1"
    live.parent.mkdir()
    made.rename(live)
    grid = Grid(find_runs([tmp_path]))
    # the default row (two finished, one unfinished) and the live t0=2.0 run's own
    assert sorted(s for (_, (_, s)) in grid.cells) == ['{"lr": 1e-05, "t0": 2.0}', "{}"]
    (default,) = [c for (_, (n, s)), c in grid.cells.items() if s == "{}"]
    assert sorted(r.status for r in default.runs) == ["completed", "completed", "incomplete"]
    # what the folder names, typed as the summary will record it; a folder it cannot read: None
    assert setting_of_path(tmp_path / "rt/tempnorm/t0=2.0,lr=1e-05/seed1", "tempnorm") == {
        "t0": 2.0, "lr": 1e-05,
    }  # fmt: skip
    assert setting_of_path(tmp_path / "rt/tempnorm/seed3", "tempnorm") == {}
    assert setting_of_path(tmp_path / "rt/tempnorm/opt=adam,~clip_norm/seed1", "tempnorm") == {
        "opt": "adam", "clip_norm": "~",
    }  # fmt: skip
    assert setting_of_path(tmp_path / "rt/tempnorm/C=2,lr=0.0~0123456789/seed1", "tempnorm") is None
