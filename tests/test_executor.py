"""The study executor's waiting: a run another process holds is waited for, and the wait ends when
that process finishes the run (it is no longer planned), not at the budget."""

import json
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from normlab.run.runlock import RunLock
from normlab.study.executor import Executor


@dataclass(frozen=True)
class Job:
    name: str

    def rel(self) -> Path:
        return Path(self.name)


class OneRun:
    """A study of one run, whose summary another process writes."""

    def __init__(self, root: Path):
        self.root, self.job = root, Job("held/seed1")

    def cwd_for(self, job):
        return None

    def env_for(self, job):
        return None

    def run_dir(self, job):
        return self.root / job.name

    def log(self, job):
        return self.root / "logs" / "held.log"

    def summary(self, job) -> dict:
        try:
            return json.loads((self.run_dir(job) / "summary.json").read_text())
        except OSError:
            return {}

    def plan(self):
        return [] if self.summary(self.job).get("status") == "completed" else [self.job]

    def jobs(self):
        return [self.job]

    def command(self, job):
        return ["false"]  # never started while held


def test_a_wait_on_a_held_run_ends_when_its_holder_finishes_it(tmp_path):
    study = OneRun(tmp_path)
    run_dir = study.run_dir(study.job)
    run_dir.mkdir(parents=True)
    lock = RunLock(run_dir)
    lock.__enter__()  # another process trains it (a lock is per open file: same process is enough)

    def finish():
        time.sleep(1.0)
        (run_dir / "summary.json").write_text(json.dumps({"status": "completed"}))
        lock.__exit__(None, None, None)

    threading.Thread(target=finish, daemon=True).start()
    lines: list[str] = []

    def hung(signum, frame):
        raise TimeoutError(f"the executor still waits after 30 s: {lines}")

    # the executor handles stop signals, so it runs in the main thread; an alarm ends a hang
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    t0 = time.time()
    try:
        out = Executor(study, 1, say=lines.append).run()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert time.time() - t0 < 15
    assert any("is held by" in line for line in lines), lines
    assert not any(" start " in line for line in lines), lines
    assert out.trained == 0 and not out.failed and out.stopped is None
