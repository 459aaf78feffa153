"""make reproduce-table ... logger=wandb: which sweep overrides turn the results artifact on, and
the results folder logged as one artifact by a "report" run (offline here, read back from its
transaction log); a wandb failure leaves the folder as it was and says so."""

import pytest

from normlab.integrations.wandb_results import log_results, wandb_options
from wandb_records import offline_run

wandb = pytest.importorskip("wandb")


@pytest.fixture(autouse=True)
def wandb_home(tmp_path, monkeypatch):
    for var in ("WANDB_DIR", "WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(var, str(tmp_path / "wandb-home"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc: mode auto is offline
    yield
    wandb.teardown()


@pytest.mark.parametrize(
    "overrides,expected",
    [
        ([], None),
        (["logger=tensorboard"], None),
        (["logger=wandb", "logger.project=p"], {"project": "p"}),
        (["logger=[tensorboard, wandb]"], {}),
        (["logger=all", "logger.mode=offline"], {"mode": "offline"}),
        (["+logger.wandb=true", "logger.entity=lab"], {"entity": "lab"}),
        (["logger=wandb", "+logger.wandb=false"], None),
    ],
)
def test_the_sweeps_overrides_say_whether_and_where_results_go(overrides, expected):
    assert wandb_options(overrides) == expected


def results_folder(tmp_path):
    out = tmp_path / "results" / "mini"
    (out / "tables").mkdir(parents=True)
    (out / "tables" / "final_metric.md").write_text("| norm | bpc |\n")
    (out / "report.md").write_text("# report\n")
    return out


def test_the_results_folder_is_one_artifact_of_a_report_run(tmp_path):
    out, work = results_folder(tmp_path), tmp_path / "work"
    meta = {"grid": "fixed", "runs": {"completed": 3, "diverged": 1}, "commit": "abc"}
    run_id = log_results(out, "mini", "xu2019-fixed", {}, work, meta)
    assert run_id
    wandb.teardown()  # wandb's service writes the transaction log; stopping it flushes the file
    rec = offline_run(work)
    assert rec["run"].run_id == run_id and rec["run"].run_group == "xu2019-fixed"
    assert rec["run"].job_type == "report" and rec["run"].display_name == "results-mini"
    assert rec["summary"]["runs/completed"] == 3 and rec["summary"]["runs/diverged"] == 1
    (art,) = rec["artifacts"]
    assert (art.name, art.type) == ("normlab-results-mini", "results")
    assert sorted(c.path for c in art.manifest.contents) == ["report.md", "tables/final_metric.md"]
    assert sorted(p.name for p in out.rglob("*")) == ["final_metric.md", "report.md", "tables"]


def test_a_wandb_failure_returns_none_and_leaves_the_folder(tmp_path, monkeypatch, capsys):
    out = results_folder(tmp_path)

    def refuse(**kwargs):
        raise wandb.errors.CommError("could not reach api.wandb.ai")

    monkeypatch.setattr(wandb, "init", refuse)
    assert log_results(out, "mini", "g", {"mode": "online"}, tmp_path / "work", {}) is None
    assert (
        "wandb artifact failed; the results folder is complete without it"
        in capsys.readouterr().err
    )
    assert (out / "report.md").read_text() == "# report\n"
