"""Hydra entry point (``normlab-train``): compose, run one job, report. The loop is trainer.py.

Exit status of one job: 0 when it completed or diverged (a result, not an error); 1 when Hydra
cannot compose the config; 2 for bad input (a config or data error, before anything is written);
3 when training crashed (traceback.txt in the run directory); 75 when SIGTERM/SIGUSR1 preempted
it (checkpoint written, status "preempted": re-run the same command to resume). ``--multirun``: the number of
failed jobs.
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

from .config import CONFIGS, explain_unknown_keys
from .runner import USER_ERRORS, run


EXIT_PREEMPTED = 75  # EX_TEMPFAIL: SIGTERM/SIGUSR1 arrived, a checkpoint was written; requeue


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


@hydra.main(version_base="1.3", config_path=str(CONFIGS), config_name="train")
def _main(cfg: DictConfig) -> str:
    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    run_dir = Path(hc.runtime.output_dir)
    try:
        status = run(cfg, run_dir, list(hc.overrides.task))["status"]
        if status == "preempted":
            sys.exit(EXIT_PREEMPTED)  # also ends a sweep: the requeued job resumes it
        if status == "failed" and not multirun:
            sys.exit(3)  # traceback.txt is in the run directory
        return status
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
        from .callbacks import record_failure
        record_failure(run_dir, cfg, error)
    return "failed"


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
