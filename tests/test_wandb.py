"""wandb is best-effort: offline it records the run; failing in init, log or finish (no network,
no key, a crash) it is switched off and training goes on with the same local curves."""

import pytest

from helpers import run_job
from normlab.config import ConfigError
from normlab.loggers.wandb_logger import WandbLogger
from normlab.rundir import read_curves
from wandb_records import offline_run

wandb = pytest.importorskip("wandb")

ARGS = ["task=synthetic_cls", "scale=smoke", "threads=1"]
TIMING = ("examples_per_s",)


def curves(run_dir):
    return [
        {k: v for k, v in r.items() if k not in TIMING}
        for r in read_curves(run_dir / "curves.jsonl")
    ]


@pytest.fixture(autouse=True)
def wandb_home(tmp_path, monkeypatch):
    """Everything wandb writes stays under tmp_path; no key, so nothing is sent anywhere."""
    for var in ("WANDB_DIR", "WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(var, str(tmp_path / "wandb-home"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc: mode=auto picks offline
    yield
    wandb.teardown()  # stop wandb's service process


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return curves(run_job(ARGS, tmp_path_factory.mktemp("ref"))[1])


class FakeRun:
    id = "fake123"

    def __init__(self, fail_log=False, fail_finish=False):
        self.fail_log, self.fail_finish, self.logged = fail_log, fail_finish, []
        self.summary, self.defined = {}, {}

    def define_metric(self, name, summary=None):
        self.defined[name] = summary

    def log(self, metrics, step):
        self.logged.append((step, metrics))
        if self.fail_log:
            raise ConnectionError("network is unreachable")

    def finish(self, exit_code=0):
        if self.fail_finish:
            raise TimeoutError("upload did not finish")


def test_offline_run_is_recorded_beside_the_local_curves(tmp_path, monkeypatch, reference):
    monkeypatch.setenv("WANDB_MODE", "offline")
    summary, run_dir = run_job([*ARGS, "logger=wandb"], tmp_path)
    assert summary["status"] == "completed"
    assert curves(run_dir) == reference  # wandb changes nothing in the source of truth
    (offline,) = (run_dir / "wandb").glob("offline-run-*")
    import torch

    run_id = torch.load(run_dir / "checkpoints" / "last.pt", weights_only=True)["wandb_id"]
    assert offline.name.endswith(run_id) and list(offline.glob("run-*.wandb"))


def test_offline_summary_carries_best_valid_metric_and_summary_json(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    summary, run_dir = run_job(
        [*ARGS, "logger=wandb", "task.train.lr=0.002", "task.train.eval_every=2"], tmp_path
    )
    valid = [r for r in read_curves(run_dir / "curves.jsonl") if r.get("split") == "valid"]
    assert len(valid) >= 2
    best = max(valid, key=lambda r: r["acc"])
    rec = offline_run(run_dir)
    s = rec["summary"]
    # define_metric: the best valid accuracy (not the last) and the step it was reached at
    assert {m.name: (m.summary.max, m.summary.min) for m in rec["metrics"]} == {
        "valid/acc": (True, False),
        "valid/loss": (False, True),
    }
    assert s["valid/acc"] == {"max": best["acc"]} and s["valid/best_step"] == best["step"]
    assert s["valid/loss"] == {"min": min(r["loss"] for r in valid)}
    assert s["last_valid/acc"] == valid[-1]["acc"]
    # the whole summary.json, flattened
    assert s["status"] == summary["status"] == "completed"
    assert s["best_valid_score"] == summary["best_valid_score"] == best["acc"]
    assert s["test/acc"] == summary["test"]["acc"] and s["params"] == summary["params"]
    assert s["wall_time_s"] == summary["wall_time_s"] and s["best_step"] == summary["best_step"]
    assert s["throughput/examples_per_s"] == summary["throughput"]["examples_per_s"]
    run = rec["run"]
    assert run.job_type == "train"
    assert (
        run.display_name == "synthetic_cls-layernorm-eval_every=2-lr=0.002-1"
    )  # the setting, keys sorted
    assert list(run.tags) == ["synthetic_cls", "layernorm", "smoke", "eval_every=2", "lr=0.002"]


def test_setting_argument_names_the_run(tmp_path, monkeypatch):
    from omegaconf import OmegaConf

    from normlab.loggers import make_loggers

    inits = []
    monkeypatch.setattr(wandb, "init", lambda **kw: inits.append(kw) or FakeRun())
    job = OmegaConf.create(
        {
            "task": {"name": "rt"},
            "norm": {"name": "adanorm"},
            "seed": 3,
            "logger": {"wandb": True, "tags": ["rt"]},
        }
    )
    task = type("T", (), {"metric": "bpc", "higher_is_better": False})()
    extra = {}
    lg = make_loggers(job, {}, tmp_path, None, task, None, extra, setting={"C": 2, "lr": 0.001})
    assert inits[0]["name"] == "rt-adanorm-C=2-lr=0.001-3" and inits[0]["tags"] == [
        "rt",
        "C=2",
        "lr=0.001",
    ]
    assert inits[0]["job_type"] == "train" and extra["wandb_id"] == "fake123"
    wl = lg.loggers[1]
    assert wl.run.defined == {"valid/loss": "min", "valid/bpc": "min"}  # bpc: lower is better
    for step, bpc in [(1, 2.0), (2, 1.5), (3, 1.7)]:
        wl.log({"split": "valid", "bpc": bpc, "loss": bpc}, step)
    assert wl.run.summary["valid/best_step"] == 2
    with pytest.raises(ValueError, match="setting must be a dict"):
        make_loggers(job, {}, tmp_path, None, task, None, {}, setting=["C=2"])
    with pytest.raises(ConfigError, match="logger.tensorboard='yes': must be true or false"):
        make_loggers(
            OmegaConf.merge(job, {"logger": {"tensorboard": "yes"}}),
            {},
            tmp_path,
            None,
            task,
            None,
            {},
        )


@pytest.mark.parametrize("failure", ["import", "init", "log", "finish"])
def test_a_failing_wandb_never_stops_training(tmp_path, monkeypatch, capsys, reference, failure):
    runs = []

    def fake_init(**kwargs):
        if failure == "init":
            raise RuntimeError("wandb.init crashed")
        runs.append(FakeRun(fail_log=failure == "log", fail_finish=failure == "finish"))
        return runs[-1]

    monkeypatch.setattr(wandb, "init", fake_init)
    if failure == "import":
        monkeypatch.setitem(__import__("sys").modules, "wandb", None)  # not installed
    summary, run_dir = run_job([*ARGS, "logger=wandb"], tmp_path)
    assert summary["status"] == "completed"
    assert curves(run_dir) == reference
    err = capsys.readouterr().err
    assert (
        f"wandb {failure if failure != 'import' else 'init'} failed; training continues without it"
        in err
    )
    if failure == "log":
        assert (
            len(runs[0].logged) == 1
        )  # switched off after the first failure, not retried per step
    if failure == "finish":  # everything was logged, under wandb's names
        keys = {k for _, m in runs[0].logged for k in m}
        assert {"train/loss", "valid/loss", "valid/acc", "test/acc", "train/lr", "epoch"} <= keys


def test_online_init_failure_falls_back_to_offline_with_capped_waits(tmp_path, monkeypatch, capsys):
    calls = []

    def fake_init(**kwargs):
        calls.append(kwargs)
        if kwargs["mode"] == "online":
            raise wandb.errors.CommError("could not reach api.wandb.ai")
        return FakeRun()

    monkeypatch.setattr(wandb, "init", fake_init)
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    logger = WandbLogger({"mode": "auto"}, {"seed": 1}, str(tmp_path))
    assert [c["mode"] for c in calls] == ["online", "offline"] and logger.run_id == "fake123"
    assert calls[0]["settings"].init_timeout == 30 and calls[0]["settings"].finish_timeout == 60
    assert "wandb init (online) failed" in capsys.readouterr().err


def test_wandbs_console_summary_is_off_where_the_job_prints_no_progress(tmp_path, monkeypatch):
    """A sweep's jobs (progress=false) keep wandb's ~80-line console summary to themselves, the
    summary staying in the wandb run; an interactive run shows it; logger.quiet decides when set."""
    calls = []
    monkeypatch.setattr(wandb, "init", lambda **kw: calls.append(kw) or FakeRun())
    for options, config, expected in [
        ({}, {"progress": False}, True),
        ({}, {"progress": True}, False),
        ({"quiet": False}, {"progress": False}, False),
        ({"quiet": True}, {"progress": True}, True),
    ]:
        WandbLogger({"mode": "offline", **options}, config, str(tmp_path))
        assert calls[-1]["settings"].quiet is expected, (options, config)


def test_metric_names_follow_the_split():
    assert WandbLogger.keys(
        {"epoch": 1, "split": "valid", "loss": 0.5, "acc": 80.0, "grad/all/in_var": 1.0}
    ) == {"epoch": 1, "valid/loss": 0.5, "valid/acc": 80.0, "grad/all/in_var": 1.0}
