"""Faults around a run that is otherwise fine: the wall clock set back while it trains, its console
going away (a closed pipe), a run directory that cannot be written (a full disk)."""

import errno
import json
import os
import subprocess
import sys
import time as real_time
from pathlib import Path

import pytest
import torch

from helpers import REPO, TEST_CACHE, run_job

SYNTH = ["task=synthetic_cls", "scale=smoke", "threads=1"]


class ClockSetBack:
    """The time module, but its wall clock goes back an hour at every reading (NTP stepping it,
    a suspended laptop's clock corrected)."""

    def __init__(self):
        self.calls = 0

    def time(self) -> float:
        self.calls += 1
        return 2e9 - 3600.0 * self.calls

    def __getattr__(self, name):
        return getattr(real_time, name)


def test_a_wall_clock_set_back_mid_run_gives_no_negative_time(tmp_path, monkeypatch):
    from normlab.run import runner

    monkeypatch.setattr(runner, "time", ClockSetBack())
    summary, _ = run_job([*SYNTH, "task.train.max_steps=20"], tmp_path)
    assert summary["status"] == "completed"
    assert 0 <= summary["wall_time_s"] < 600, summary["wall_time_s"]


def test_a_negative_wall_time_on_disk_does_not_cost_a_study():
    from normlab.study.plan import costs

    walls, _ = costs([{"task": "rt", "wall_time_s": -3500.0}, {"task": "rt", "wall_time_s": 80.0}])
    assert walls == {"rt": 80.0}


def test_a_closed_stdout_does_not_stop_training(tmp_path):
    # `normlab-train ... 2>&1 | head -1`: the pipe closes after the first progress line; the run
    # used to end "failed" with BrokenPipeError at its next one
    cmd = [sys.executable, "-m", "normlab.train", *SYNTH, f"paths.root={tmp_path / 'runs'}"]
    cmd += ["task.train.max_steps=300"]
    env = {**os.environ, "NORMLAB_CACHE": str(TEST_CACHE)}
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=300) == 0
    (summary,) = (tmp_path / "runs").rglob("summary.json")
    assert json.loads(summary.read_text())["status"] == "completed"
    log = (summary.parent / "train.log").read_text()
    assert "completed, 300 steps" in log, log[-2000:]  # the console's lines went on to the file
    assert "Traceback" not in log and "BrokenPipe" not in log


# --- the run directory cannot be written (a full disk, a read-only mount) ---


def full_disk(write, name: str):
    """``write`` (normlab.files' atomic writer or write_json) failing with ENOSPC for ``name``."""

    def wrapped(path, *args, **kw):
        if Path(path).name == name:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return write(path, *args, **kw)

    return wrapped


def train_main(tmp_path, monkeypatch, capfd, args) -> tuple[int, str]:
    from normlab import train

    argv = ["progress=false", f"paths.root={tmp_path / 'runs'}", *SYNTH, *args]
    monkeypatch.setattr(sys, "argv", ["normlab-train", *argv])
    threads, code = torch.get_num_threads(), 0
    try:
        train.main()
    except SystemExit as e:
        code = e.code
    finally:
        torch.set_num_threads(threads)
    return code, capfd.readouterr().err


def test_a_summary_the_full_disk_refused_is_one_line_exit_3_and_the_rerun_finishes(
    tmp_path, monkeypatch, capfd
):
    from normlab.run import runner

    args = ["task.train.max_steps=20", "task.train.checkpoint_every=10"]
    monkeypatch.setattr(runner, "write_json", full_disk(runner.write_json, "summary.json"))
    rc, err = train_main(tmp_path, monkeypatch, capfd, args)
    lines = [ln for ln in err.splitlines() if ln.startswith("normlab:")]
    assert rc == 3 and "Traceback" not in err, err[-3000:]
    assert "summary.json: No space left on device" in lines[-1] and "re-run" in lines[-1]
    assert not list((tmp_path / "runs").rglob(".*.lock"))  # no stale lock
    (run,) = [p.parent for p in (tmp_path / "runs").rglob("config.yaml")]
    assert not (run / "summary.json").exists() and (run / "checkpoints" / "last.pt").exists()
    monkeypatch.undo()
    rc, err = train_main(tmp_path, monkeypatch, capfd, args)
    assert rc == 0, err[-3000:]
    assert json.loads((run / "summary.json").read_text())["status"] == "completed"


def test_a_crash_whose_traceback_cannot_be_written_prints_it_and_records_failed(
    tmp_path, monkeypatch, capfd
):
    from normlab.run import runner

    monkeypatch.setenv("NORMLAB_FAULT", "raise:step:5")
    monkeypatch.setattr(
        runner, "atomic_write_bytes", full_disk(runner.atomic_write_bytes, "traceback.txt")
    )
    rc, err = train_main(tmp_path, monkeypatch, capfd, ["task.train.max_steps=20"])
    assert rc == 3 and "InjectedFault" in err, err[-3000:]  # the traceback, on the console
    (summary,) = (tmp_path / "runs").rglob("summary.json")
    assert json.loads(summary.read_text())["status"] == "failed"
    assert not (summary.parent / "traceback.txt").exists()


def test_a_run_lock_taken_on_a_full_disk_holds_and_leaves_no_file(tmp_path, monkeypatch):
    import os as real_os

    from normlab.run import runlock

    class FullDisk:
        def write(self, fd, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(real_os, name)

    monkeypatch.setattr(runlock, "os", FullDisk())
    lock = runlock.RunLock(tmp_path / "run")
    with lock:
        with pytest.raises(runlock.RunLocked):
            with runlock.RunLock(tmp_path / "run"):
                pass
    assert not lock.path.exists() and lock.fd is None
