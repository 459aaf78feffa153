"""normlab-wandb-dashboard builds the paper's panels as a wandb Report object offline."""

import pytest

from normlab.campaigns.xu2019.paper_tables import TABLES
from normlab.campaigns.xu2019.wandb_dashboard import GROUPBY, build_report, main

wr = pytest.importorskip("wandb_workspaces.reports.v2")
from wandb_workspaces import expr  # noqa: E402


def grids(report):
    return [b for b in report.blocks if isinstance(b, wr.PanelGrid)]


def norms_of(rs):
    """The norm.name list of a run set's filter, parsed back by wandb-workspaces itself."""
    (norm_filter,) = [
        f for f in expr.string_to_filterexpr_list(rs.filters) if f.key.name == "norm.name"
    ]
    return norm_filter.value


def test_report_has_the_papers_panels():
    report = build_report("me", "normlab", group="xu2019", scale="mini", tasks=["rt", "enwik8"])
    assert (report.entity, report.project) == ("me", "normlab")
    by_name = {g.runsets[0].name: g for g in grids(report)}
    for key, (_, norms) in TABLES.items():  # Tables 1-3 and beyond: runs grouped by task, then norm
        rs = by_name[key].runsets[0]
        assert rs.groupby == GROUPBY and norms_of(rs) == norms
        assert "summary:test/bleu" in rs.pinned_columns and "summary:test/bpc" in rs.pinned_columns
        filters = {f.key.name: (f.op, f.value) for f in expr.string_to_filterexpr_list(rs.filters)}
        assert filters["scale"] == ("=", "mini") and filters["Group"] == ("=", "xu2019")
        assert filters["task.name"] == ("IN", ["rt", "enwik8"])
    for task in ("rt", "enwik8"):
        overfit = by_name[f"{task}: Overfitting: LayerNorm vs LayerNorm-simple"]
        assert norms_of(overfit.runsets[0]) == ["layernorm", "layernorm_simple"]
        (plot,) = overfit.panels
        assert (
            plot.y == ["train/loss", "valid/loss"]
            and plot.x == "Step"
            and plot.groupby_rangefunc == "minmax"
        )
        detach = by_name[f"{task}: DetachNorm vs LayerNorm-simple vs w/o Norm"]
        assert norms_of(detach.runsets[0]) == ["none", "detachnorm", "layernorm_simple"]
        grad = by_name[f"{task}: gradient statistics"]
        assert norms_of(grad.runsets[0]) == TABLES["table2"][1]
        assert [p.y for p in grad.panels] == [
            ["grad/all/in_absmean"],
            ["grad/all/in_var"],
            ["grad/all/in_var", "grad/all/out_var"],
        ]
        assert all(p.log_y for p in grad.panels)


def test_without_group_and_scale_no_such_filter():
    every, table1 = [
        g.runsets[0] for g in grids(build_report("me", "p", group=None, tasks=["rt"]))[:2]
    ]
    # without --runs the comparison shows every norm of the project, the paper's grids their own
    assert {f.key.name for f in expr.string_to_filterexpr_list(every.filters)} == {"task.name"}
    assert {f.key.name for f in expr.string_to_filterexpr_list(table1.filters)} == {
        "norm.name",
        "task.name",
    }


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="--entity is required"):
        build_report("", "p")
    with pytest.raises(ValueError, match=r"unknown task\(s\) \['wmt'\]"):
        build_report("me", "p", tasks=["wmt"])


def test_cli_dry_run_and_missing_key(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    assert main(["--entity", "me", "--project", "p", "--tasks", "rt", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "grid [table2] filters: Config('norm.name') in ['none', 'detachnorm'" in out
    assert main(["--entity", "me", "--project", "p"]) == 2
    assert "needs a wandb API key" in capsys.readouterr().err
    # an outline needs no entity; saving one does
    assert main(["--tasks", "rt", "--dry-run"]) == 0
    assert "grid [table2]" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["--tasks", "rt"])
    assert e.value.code == 2 and "--entity and --project" in capsys.readouterr().err


def test_runs_shape_the_report_their_group_norms_and_tasks(tmp_path, capsys):
    """A user's sweep logged to its own group: the run sets filter to that group and the norms it
    ran; a paper section appears only with two of its norms among them."""
    import yaml
    from test_report import make_run

    for norm in ("layernorm", "rmsnorm", "mynorm"):
        d = make_run(tmp_path / "runs", "rt", norm, 2, 70.0)
        cfg = yaml.safe_load((d / "config.yaml").read_text())
        cfg["logger"] = {"name": "wandb", "group": "my_sweep"}
        (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    argv = ["--entity", "me", "--project", "p", "--runs", str(tmp_path / "runs"), "--dry-run"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert (
        "grid [rt: every norm] filters: Config('norm.name') in ['layernorm', 'rmsnorm', 'mynorm']"
        in out
    )
    assert "Metric('Group') == 'my_sweep'" in out
    # the beyond table has LayerNorm and RMSNorm; Tables 1-3 and the paper's curves have one norm
    assert "grid [beyond]" in out and "grid [table1]" not in out and "Overfitting" not in out
    assert "grid [enwik8" not in out  # only the tasks the runs ran
    assert "normlab: runs of group my_sweep" in out and "Xu et al." not in out.splitlines()[0]
    report = build_report("me", "p", group="my_sweep", tasks=["rt"], norms=["layernorm", "mynorm"])
    names = [g.runsets[0].name for g in grids(report)]
    assert names == ["rt: every norm"]
