"""Kill -9 at any moment, re-run the same command: the run resumes from its last complete
checkpoint and ends bitwise equal to a run that was never interrupted (CPU, deterministic)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from helpers import REPO, TEST_CACHE, run_cli, run_job
from normlab.errors import CheckpointError
from normlab.files import read_json
from normlab.rundir import Checkpoints, Curves, read_curves

# 4 batches per epoch: 16 steps cross 3 epoch boundaries; dropout 0.1 makes the RNG state matter.
ARGS = [
    "task=synthetic_cls",
    "scale=smoke",
    "threads=1",
    "task.train.max_steps=16",
    "task.train.checkpoint_every=2",
    "task.train.eval_every=5",
]
# checkpoint_every cannot change a result, so it does not name the folder (config_keys.RESULT_FREE_KEYS)
RUN = "runs/smoke/default/synthetic_cls/layernorm/eval_every=5,max_steps=16/seed1"
TIMING = ("examples_per_s", "tokens_per_s")


def curves(run_dir):
    """Loss/metric records without timing fields, which legitimately differ between runs."""
    return [
        {k: v for k, v in r.items() if k not in TIMING}
        for r in read_curves(run_dir / "curves.jsonl")
    ]


def results(run_dir):
    s = read_json(run_dir / "summary.json")
    return {
        k: s[k]
        for k in ("status", "steps", "epochs", "best_step", "valid", "test", "best_valid_score")
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run (in-process: the same numbers as the CLI, without its start-up)."""
    tmp = tmp_path_factory.mktemp("ref")
    return run_job(ARGS, tmp, run_dir=tmp / RUN)[1]


def cli_with_fault(tmp_path, monkeypatch, fault):
    monkeypatch.setenv("NORMLAB_FAULT", fault)
    out = run_cli(ARGS, tmp_path, check=False)
    monkeypatch.delenv("NORMLAB_FAULT")
    assert out.returncode == -signal.SIGKILL, out.stderr[-2000:]
    return tmp_path / RUN


@pytest.mark.slow
def test_kill_mid_checkpoint_write_mid_eval_mid_step_then_resume_is_bitwise_equal(
    reference, tmp_path, monkeypatch
):
    assert [r["split"] for r in curves(reference)].count("valid") == 3  # steps 5, 10, 15
    run = cli_with_fault(tmp_path, monkeypatch, "kill:save:4")
    ck = run / "checkpoints"
    # Killed between "last.pt -> prev.pt" and "new file -> last.pt": only prev.pt (step 2) is whole.
    assert not (ck / "last.pt").exists() and list(ck.glob(".last.pt.*.tmp"))
    assert torch.load(ck / "prev.pt", weights_only=True)["state"]["step"] == 2

    cli_with_fault(
        tmp_path, monkeypatch, "kill:eval:10"
    )  # resumes at 2; dies after logging valid@10
    got, want = curves(run), curves(reference)
    assert got[-1]["split"] == "valid" and got[-1]["step"] == 10
    assert got == want[: len(got)]  # the same records so far, including the resumed part
    assert not list(ck.glob(".*.tmp"))  # the resumed run cleaned the dead run's temp file
    assert torch.load(ck / "last.pt", weights_only=True)["state"]["step"] == 8

    cli_with_fault(
        tmp_path, monkeypatch, "kill:step:13"
    )  # after the optimizer step, before counting it
    assert torch.load(ck / "last.pt", weights_only=True)["state"]["step"] == 12

    out = run_cli(ARGS, tmp_path)
    assert "completed" in out.stdout
    # the user sees that the run went on, from where, and which file
    assert f"resuming from step 12 (checkpoint {ck / 'last.pt'})" in out.stdout
    assert curves(run) == curves(reference)
    assert results(run) == results(reference)
    assert torch.equal(
        torch.load(ck / "best.pt", weights_only=True)["model"]["head.weight"],
        torch.load(reference / "checkpoints" / "best.pt", weights_only=True)["model"][
            "head.weight"
        ],
    )


def test_a_run_resumed_with_another_checkpoint_every_resumes_its_own_folder(
    reference, tmp_path, monkeypatch
):
    """Killed after step 9 (its last checkpoint at step 8), re-run with checkpoints every 3 steps
    instead of 2: the same folder resumes from step 8, and the run ends equal to the one never
    interrupted, which wrote its checkpoints at other steps."""
    run = cli_with_fault(tmp_path, monkeypatch, "kill:step:9")
    ck = run / "checkpoints"
    assert torch.load(ck / "last.pt", weights_only=True)["state"]["step"] == 8
    other = [a for a in ARGS if "checkpoint_every" not in a] + ["task.train.checkpoint_every=3"]
    out = run_cli(other, tmp_path)
    assert f"resuming from step 8 (checkpoint {ck / 'last.pt'})" in out.stdout, out.stdout
    assert sorted(p.name for p in (tmp_path / RUN).parent.parent.iterdir()) == [run.parent.name]
    assert curves(run) == curves(reference)
    assert results(run) == results(reference)


def test_sigkill_from_outside_at_an_unplanned_moment(reference, tmp_path):
    """The real path: another process sends SIGKILL while the run is writing curves."""
    env = {**os.environ, "NORMLAB_CACHE": str(TEST_CACHE)}
    env.pop("NORMLAB_FAULT", None)
    cmd = [
        sys.executable,
        "-m",
        "normlab.train",
        "progress=false",
        f"paths.root={tmp_path / 'runs'}",
        *ARGS,
    ]
    run = tmp_path / RUN
    for lines in (6,):
        proc = subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.time() + 120
        while proc.poll() is None and time.time() < deadline:
            if len(read_curves(run / "curves.jsonl")) >= lines:
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.005)
        proc.wait()
    run_cli(ARGS, tmp_path)
    assert curves(run) == curves(reference)
    assert results(run) == results(reference)


def test_truncated_checkpoint_falls_back_to_the_previous_one_with_a_warning(tmp_path, monkeypatch):
    ref, ref_dir = run_job(ARGS, tmp_path / "a")
    monkeypatch.setenv("NORMLAB_FAULT", "raise:step:7")
    failed, run_dir = run_job(ARGS, tmp_path / "b")
    monkeypatch.delenv("NORMLAB_FAULT")
    assert (
        failed["status"] == "failed" and "InjectedFault" in (run_dir / "traceback.txt").read_text()
    )
    last = run_dir / "checkpoints" / "last.pt"
    assert torch.load(last, weights_only=True)["state"]["step"] == 6
    data = last.read_bytes()
    last.write_bytes(data[: len(data) // 2])  # e.g. a disk that filled up
    with pytest.warns(
        UserWarning, match=r"last.pt \(.*\) in .* is unreadable; falling back to prev.pt \(step 5\)"
    ):
        ck = Checkpoints(run_dir).load()
    assert ck["state"]["step"] == 5  # prev.pt: the checkpoint of the evaluation at step 5
    with pytest.warns(UserWarning, match="unreadable"):
        summary, _ = run_job(ARGS, tmp_path / "b")
    assert summary["status"] == "completed"
    assert not (run_dir / "traceback.txt").exists()
    assert curves(run_dir) == curves(ref_dir)
    assert results(run_dir) == results(ref_dir)


def test_the_run_directory_keeps_the_command_and_a_log_of_the_console_across_invocations(
    reference, tmp_path, monkeypatch
):
    run_dir = cli_with_fault(tmp_path, monkeypatch, "kill:step:9")
    last = run_dir / "checkpoints" / "last.pt"
    last.write_bytes(last.read_bytes()[:100])
    done = run_cli([*ARGS, "threads=2"], tmp_path)
    from normlab.files import read_yaml

    assert read_yaml(run_dir / "overrides.yaml") == [
        "progress=false",
        f"paths.root={tmp_path / 'runs'}",
        *ARGS,
        "threads=2",
    ]
    log = (run_dir / "train.log").read_text()
    assert log.count("\n--- ") + log.startswith("--- ") == 2  # one header per invocation
    assert "is unreadable; falling back to prev.pt" in log  # a warning, from stderr
    assert done.stdout.strip().splitlines()[-1] in log  # the end-of-run line, from stdout
    assert "\r" not in log


def test_every_checkpoint_unreadable_stops_with_exit_5_and_restarts_only_when_asked(
    reference, tmp_path, monkeypatch
):
    run_dir = cli_with_fault(tmp_path, monkeypatch, "kill:step:9")
    ckdir = run_dir / "checkpoints"
    for name in ("last.pt", "prev.pt"):
        data = (ckdir / name).read_bytes()
        (ckdir / name).write_bytes(data[: len(data) // 3])
    before = {p.name: p.read_bytes() for p in ckdir.iterdir()}
    curves_before = (run_dir / "curves.jsonl").read_text()
    out = run_cli(ARGS, tmp_path, check=False)
    assert out.returncode == 5, out.stderr[-2000:]
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert "every checkpoint is unreadable: last.pt (" in lines[0] and "; prev.pt (" in lines[0]
    assert "resume=restart" in lines[0]
    # nothing was touched: no silent restart from step 0
    assert {p.name: p.read_bytes() for p in ckdir.iterdir()} == before
    assert (run_dir / "curves.jsonl").read_text() == curves_before

    done = run_cli([*ARGS, "resume=restart"], tmp_path)
    assert "starts over from step 0" in done.stdout
    aside = list(run_dir.glob("checkpoints.old-*"))
    assert len(aside) == 1
    kept = {p.name: p.read_bytes() for p in aside[0].iterdir()}
    assert kept.pop("curves.jsonl").decode() == curves_before  # the old attempt's curves, whole
    kept.pop("summary.json", None)
    assert kept == before
    assert curves(run_dir) == curves(reference)
    assert results(run_dir) == results(reference)


def test_resume_drops_records_after_the_checkpoint_and_a_torn_last_line(tmp_path):
    path = tmp_path / "curves.jsonl"
    recs = [
        {"step": 2, "split": "train", "loss": 1.0},
        {"step": 3, "split": "valid", "loss": 0.9},
        {"step": 4, "split": "train", "loss": 0.8},
        {"step": 4, "split": "test", "loss": 0.7},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs) + '{"step": 6, "spl')
    assert read_curves(path) == recs
    Curves(path).truncate_after(4)  # a checkpoint at step 4 of a run killed during its final test
    assert read_curves(path) == recs[:3]
    assert path.read_text().endswith("\n")


# --- security: nothing from a run directory can run code ------------------------------------------


class Planted:
    """Unpickling this would create a file (stands in for arbitrary code)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (type(self.marker).touch, (self.marker,))


def test_checkpoint_with_a_pickled_object_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    ck = Checkpoints(tmp_path / "run")
    ck.dir.mkdir(parents=True)
    torch.save({"model": {}, "payload": Planted(marker)}, ck.last)
    with pytest.raises(
        CheckpointError,
        match=r"every checkpoint is unreadable: last.pt \(.*Weights only load failed",
    ):
        ck.load()
    assert not marker.exists()


def test_config_yaml_with_python_tags_is_refused(tmp_path):
    from normlab.config import ConfigError
    from normlab.run.prepare import check_run_dir

    marker = tmp_path / "pwned"
    (tmp_path / "config.yaml").write_text(
        f"seed: !!python/object/apply:pathlib.Path.touch ['{marker}']\n"
    )
    with pytest.raises(ConfigError, match="is not a plain YAML config .*delete that run directory"):
        check_run_dir(tmp_path, {"seed": 1})
    assert not marker.exists()


def test_no_unsafe_deserialisation_in_normlab():
    """Every torch.load is weights_only; no pickle/marshal, no unsafe YAML, no object collectives."""
    import re

    for path in (REPO / "normlab").rglob("*.py"):
        src = path.read_text()
        for call in re.findall(r"torch\.load\(.*", src):  # to the end of the line
            assert "weights_only=True" in call, f"{path}: {call}"
        for bad in (
            "import pickle",
            "pickle.load",
            "import marshal",
            "import dill",
            "yaml.load(",
            "yaml.unsafe_load",
            "yaml.full_load",
            "_object_list(",
            "all_gather_object(",
            "Loader=yaml.Loader",
        ):
            assert bad not in src, f"{path}: {bad}"


def test_a_run_written_before_a_key_existed_is_the_same_experiment_at_the_old_behaviour():
    from normlab.experiment import same_experiment

    old = {"seed": 1, "task": {"name": "rt", "train": {"lr": 0.002}}}
    new = {
        "seed": 1,
        "precision": "fp32",
        "task": {"name": "rt", "train": {"lr": 0.002, "update_freq": 1}},
    }
    assert same_experiment(old, new) == []
    # a new value of an added key is another experiment; so is any other key the old run lacks
    assert same_experiment(old, {**new, "precision": "bf16"}) == ["precision"]
    assert same_experiment(
        old, {**new, "task": {"name": "rt", "train": {"lr": 0.002, "update_freq": 2}}}
    ) == ["task.train.update_freq"]
    assert same_experiment(old, {**new, "extra": 3}) == ["extra"]
    assert same_experiment(new, old) == [
        "precision",
        "task.train.update_freq",
    ]  # a key the job no longer has


def test_a_damaged_line_is_skipped_by_name_and_the_records_after_it_are_kept(tmp_path, capsys):
    path = tmp_path / "curves.jsonl"
    good = [{"step": s, "split": "train", "loss": 1.0 / s} for s in (1, 2, 3)]
    rows = [json.dumps(r).encode() for r in good]
    path.write_bytes(b"\n".join([rows[0], b"null", rows[1], b"\xff\xfe{", rows[2]]) + b"\n")
    assert read_curves(path) == good  # before: the records after the damaged line were lost
    err = capsys.readouterr().err
    assert f"{path}:2: not a JSON record" in err and f"{path}:4: not a JSON record" in err


def test_an_unreadable_summary_is_taken_as_none(tmp_path, capsys):
    from normlab.rundir import read_summary

    bad = tmp_path / "summary.json"
    bad.write_bytes(b'{"status": "compl\xff')
    assert read_summary(bad) == {} and f"{bad} is unreadable" in capsys.readouterr().err
    bad.write_text("null")
    assert read_summary(bad) == {}


def test_a_checkpoint_of_another_run_is_refused_with_one_line(tmp_path, monkeypatch):
    """A checkpoint records whose it is (seed, config): another seed's last.pt, a best.pt put in as
    last.pt, or another norm's are refused (exit 5, one line) instead of resumed or a traceback."""
    run_dir = cli_with_fault(tmp_path, monkeypatch, "kill:step:9")
    ck = run_dir / "checkpoints"
    other = tmp_path / "other"
    for args, tag in ((["seed=2"], "seed"), (["norm=rmsnorm"], "norm")):
        monkeypatch.setenv("NORMLAB_FAULT", "kill:step:9")
        run_cli([*ARGS, *args, f"paths.root={other / tag}"], tmp_path, check=False)
        monkeypatch.delenv("NORMLAB_FAULT")
    mine = (ck / "last.pt").read_bytes()

    def resume_with(source):
        (ck / "last.pt").write_bytes(source.read_bytes())
        (ck / "prev.pt").unlink(missing_ok=True)
        out = run_cli(ARGS, tmp_path, check=False)
        lines = [line for line in out.stderr.splitlines() if line.strip()]
        assert out.returncode == 5 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
        return lines[0]

    seed2 = next((other / "seed").rglob("checkpoints/last.pt"))
    assert "written by a run of seed 2, this run is seed 1" in resume_with(seed2)
    rms = next((other / "norm").rglob("checkpoints/last.pt"))
    assert "written for another config (keys ['norm" in resume_with(rms)
    assert "a model-only checkpoint (best.pt's kind) cannot resume" in resume_with(ck / "best.pt")
    # its own checkpoint resumes as before
    (ck / "last.pt").write_bytes(mine)
    assert run_cli(ARGS, tmp_path).returncode == 0


def test_only_a_key_that_cannot_change_a_result_is_ignored_by_resume_and_by_a_table_cell(tmp_path):
    from normlab.experiment import same_experiment
    from normlab.report.runs import Run

    def cfg(lr=0.002, every=0, label="LayerNorm"):
        train = {"lr": lr, "checkpoint_every": every}
        return {"seed": 1, "task": {"name": "rt", "train": train}, "norm": {"display": label}}

    assert same_experiment(cfg(), cfg(every=50, label="LN")) == []
    assert same_experiment(cfg(), cfg(lr=0.004, every=50)) == ["task.train.lr"]
    kept = cfg(every=50)
    one, other = Run(tmp_path, cfg(), {}), Run(tmp_path, kept, {})
    assert (
        one.fingerprint() == other.fingerprint() != Run(tmp_path, cfg(lr=0.004), {}).fingerprint()
    )
    assert kept == cfg(every=50)  # the run's config is left as it was
