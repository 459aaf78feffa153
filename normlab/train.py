"""Hydra entry point (``normlab-train``): compose, run one job, report. The loop is trainer.py.

Exit status of one job: 0 when it completed or diverged (a result, not an error); 1 when Hydra
cannot compose the config; 2 for bad input (a config or data error, before anything is written);
3 when training crashed (traceback.txt in the run directory); 4 when another process is training
the same run directory; 75 when SIGTERM/SIGUSR1 preempted it (checkpoint written, status
"preempted": re-run the same command to resume). ``--multirun``: the number of failed jobs
(normlab.callbacks). The job's return value is its objective (normlab.runner.objective), so a Hydra
sweeper that optimises (e.g. Optuna's) can use it; it also carries the job's status for the sweep
summary.
Under torchrun, a job that crashed ends the whole process group (its peers could be blocked in a
collective), so a distributed sweep stops at the first crash; bad input still fails just that job.
"""
from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from . import setting  # noqa: F401  (registers ${normlab.setting:} for hydra.run.dir)
from .callbacks import Outcome, record_failure
from .config import CONFIGS
from .hints import explain_unknown_keys
from .runlock import RunLocked
from .runner import USER_ERRORS, objective, run


EXIT_PREEMPTED = 75  # EX_TEMPFAIL: SIGTERM/SIGUSR1 arrived, a checkpoint was written; requeue


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


@hydra.main(version_base="1.3", config_path=str(CONFIGS), config_name="train")
def _main(cfg: DictConfig) -> Outcome:
    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    run_dir = Path(hc.runtime.output_dir)
    try:
        summary = run(cfg, run_dir, list(hc.overrides.task))
        if summary["status"] == "preempted":
            sys.exit(EXIT_PREEMPTED)  # also ends a sweep: the requeued job resumes it
        if summary["status"] == "failed" and not multirun:
            sys.exit(3)  # traceback.txt is in the run directory
        return Outcome(objective(summary), summary["status"])
    except RunLocked as e:
        if _rank() == 0:
            print(f"normlab: {e}", file=sys.stderr)
        if not multirun:
            sys.exit(4)
        return Outcome(float("nan"), "locked")   # the run belongs to the other process: write nothing
    except USER_ERRORS as e:
        if _rank() == 0:
            print(f"normlab: error: {e}", file=sys.stderr)
        if not multirun:
            sys.exit(2)
        error = e
    except Exception as e:
        if not multirun or int(os.environ.get("WORLD_SIZE", "1")) > 1:
            raise
        traceback.print_exc()  # run() already wrote status "failed" and traceback.txt
        error = e
    if _rank() == 0:  # the sweep goes on; SweepSummary counts this job as failed
        record_failure(run_dir, cfg, error)
    return Outcome(float("nan"), "failed")


def main() -> None:
    try:
        _main()
    except SystemExit as e:
        if e.code == 1 and _rank() == 0:  # Hydra could not compose the config: say which keys exist
            for hint in explain_unknown_keys(sys.argv[1:]):
                print(hint, file=sys.stderr)
        raise


if __name__ == "__main__":
    main()
