"""The study executor's waiting: a run another process holds is waited for, and the wait ends when
that process finishes the run (it is no longer planned), not at the budget. Its failures: a job
that cannot start is a failed job with a line in its log, not a driver's traceback, and jobs failing
one after another stop the slice, whether or not one finished before them."""

import json
import signal
import sys
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
    t0 = time.time()
    out, lines = run_guarded(study, seconds=30)
    assert time.time() - t0 < 15
    assert any("is held by" in line for line in lines), lines
    assert not any(" start " in line for line in lines), lines
    assert out.trained == 0 and not out.failed and out.stopped is None


def run_guarded(study, jobs: int = 1, seconds: int = 60) -> tuple:
    """The executor in the main thread (it handles stop signals), an alarm ending a hang."""
    lines: list[str] = []

    def hung(signum, frame):
        raise TimeoutError(f"the executor still runs after {seconds} s: {lines}")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        out = Executor(study, jobs, say=lines.append).run()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return out, lines


class Jobs(OneRun):
    """A study of several runs in order, each run with its own command line; None: a job that
    finishes, writing its summary as a run does."""

    def __init__(self, root: Path, commands: list):
        super().__init__(root)
        self.all = [Job(f"job{i}/seed1") for i in range(len(commands))]
        self.commands = {j: c or self.finishes(j) for j, c in zip(self.all, commands)}
        self.started: list = []

    def finishes(self, job) -> list[str]:
        summary = self.run_dir(job) / "summary.json"
        summary.parent.mkdir(parents=True)
        write = f"open({str(summary)!r}, 'w').write('{{\"status\": \"completed\"}}')"
        return [sys.executable, "-c", write]

    def log(self, job):
        return self.root / "logs" / f"{job.name.split('/')[0]}.log"

    def plan(self):
        return [j for j in self.all if self.summary(j).get("status") != "completed"]

    def jobs(self):
        return self.all

    def command(self, job):
        self.started.append(job)
        return self.commands[job]

    def copy(self, job):
        pass


def test_a_job_whose_interpreter_cannot_start_fails_with_its_reason_in_its_log(tmp_path, capsys):
    missing = str(tmp_path / "venv" / "bin" / "python")  # a venv removed mid-study
    study = Jobs(tmp_path, [[missing, "-m", "normlab.train"]] * 4)
    out, lines = run_guarded(study)
    assert out.failed == study.all[:3] and out.trained == 0 and out.stopped == "failures"
    assert study.started == study.all[:3]  # the fourth is never started
    log = study.log(study.all[0]).read_text()
    assert log.startswith(f"normlab: could not start {missing}") and "No such file" in log, log
    assert log.rstrip().endswith(f": {missing}") and len(log.splitlines()) == 1, log
    assert any("job0/seed1: failed (could not start" in line for line in lines), lines
    assert "the first 3 jobs of this slice all failed" in capsys.readouterr().err


def test_a_job_whose_checkout_is_gone_names_the_missing_folder(tmp_path):
    study = Jobs(tmp_path, [[sys.executable, "-c", "pass"]])
    gone = tmp_path / "code" / "e74a48389835"  # a pinned checkout removed mid-study
    study.cwd_for = lambda job: gone
    out, lines = run_guarded(study)
    assert out.failed == study.all and out.trained == 0
    log = study.log(study.all[0]).read_text()
    assert log.rstrip().endswith(f"No such file or directory: {gone}"), log


def test_jobs_failing_in_a_row_after_one_finished_stop_the_slice(tmp_path, capsys):
    study = Jobs(tmp_path, [None] + [["false"]] * 5)
    out, lines = run_guarded(study)
    assert out.trained == 1 and out.failed == study.all[1:4] and out.stopped == "failures"
    assert study.started == study.all[:4], lines
    err = capsys.readouterr().err
    assert "3 jobs in a row failed (after 1 finished)" in err and "job3.log" in err, err


def test_a_job_that_finishes_between_failures_breaks_the_streak(tmp_path):
    study = Jobs(tmp_path, [["false"], ["false"], None, ["false"], ["false"]])
    out, lines = run_guarded(study)
    assert out.trained == 1 and len(out.failed) == 4 and out.stopped is None, lines


def test_past_the_budget_only_the_pairs_begun_in_the_slice_are_completed(tmp_path):
    """A seed's norms train in one slice on one machine: once the budget is spent, a job still
    starts when it completes a pair (``pair_of``) a job of this slice began, and no other does."""

    class Paired(Jobs):
        def pair_of(self, job):
            return {"job0": "a", "job1": "a", "job2": "b", "job3": "b"}[job.name.split("/")[0]]

    study = Paired(tmp_path, [None] * 4)
    slow = study.commands[study.all[0]]
    study.commands[study.all[0]] = [slow[0], "-c", "import time; time.sleep(3); " + slow[2]]
    lines: list = []
    out = Executor(study, 1, budget_min=0.02, say=lines.append).run()
    assert study.started == study.all[:2], lines
    assert out.trained == 2 and out.stopped == "budget"
