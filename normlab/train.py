"""Hydra entry point (``normlab-train``): compose, run one job, report. The loop is trainer.py.

The exit status of one job is in normlab.exitcodes (also printed by ``--help``): 0 completed or
diverged (a result, not an error), 1 the config cannot be composed, 2 bad input, 3 a crash, 4 a
locked run directory, 5 unreadable checkpoints, 75 preempted, 130 interrupted (Ctrl-C).
``--multirun``: the number of failed jobs (normlab.run.callbacks). The job's return value is its
objective (normlab.run.runner.objective), so a Hydra sweeper that optimises (e.g. Optuna's) can use
it; it also carries the job's status for the sweep summary.
Under torchrun, a job that crashed ends the whole process group (its peers could be blocked in a
collective), so a distributed sweep stops at the first crash; bad input still fails just that job.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from . import (
    exitcodes,
    preflight,
    setting,  # noqa: F401  (registers ${normlab.setting:} for hydra.run.dir)
)
from .commands import version_text
from .config import CONFIGS
from .errors import CheckpointError
from .files import remove_empty_dirs
from .hints import explain_unknown_keys
from .run import workers
from .run.callbacks import Outcome, record_failure
from .run.prepare import USER_ERRORS
from .run.runlock import RunLocked
from .run.runner import objective, run


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


@hydra.main(version_base="1.3", config_path=str(CONFIGS), config_name="train")
def _main(cfg: DictConfig) -> Outcome:
    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    run_dir = Path(hc.runtime.output_dir)
    in_worker = multirun and workers.in_worker(str(hc.launcher.get("_target_", "")))
    if in_worker:
        workers.watch_parent()  # a sweep killed outright leaves no worker training
    try:
        with workers.Busy():
            summary = run(cfg, run_dir, list(hc.overrides.task))
        if summary["status"] in exitcodes.STOPPED and not in_worker:
            sys.exit(
                exitcodes.STOPPED[summary["status"]]
            )  # also ends a sweep: the same command resumes it
        # A stopped job in a worker returns instead: an exit there makes joblib kill the other
        # workers while they write their checkpoints; the sweep exits with the stop's code.
        if summary["status"] == "failed" and not multirun:
            sys.exit(exitcodes.CRASHED)  # traceback.txt is in the run directory
        return Outcome(objective(summary), summary["status"])
    except RunLocked as e:
        if _rank() == 0:
            print(f"normlab: {e}", file=sys.stderr)
        if not multirun:
            sys.exit(exitcodes.LOCKED)
        return Outcome(
            float("nan"), "locked"
        )  # the run belongs to the other process: write nothing
    except CheckpointError as e:
        if _rank() == 0:
            print(f"normlab: error: {e}", file=sys.stderr)
        if not multirun:
            sys.exit(exitcodes.CHECKPOINT)
        error = e
    except USER_ERRORS as e:
        if _rank() == 0:
            print(f"normlab: error: {e}", file=sys.stderr)
        if not multirun:
            remove_empty_dirs(
                run_dir, Path(cfg.paths.root).parent
            )  # nothing was written: no empty folders
            sys.exit(exitcodes.BAD_INPUT)
        error = e
    except OSError as e:  # the run directory cannot be written: a full disk, a read-only mount
        if _rank() == 0:
            print(f"normlab: error: {io_error(e, run_dir)}", file=sys.stderr)
        remove_empty_dirs(run_dir, Path(cfg.paths.root).parent)  # a run refused at its start
        if not multirun:
            sys.exit(exitcodes.CRASHED)
        error = e
    except Exception as e:
        if not multirun or int(os.environ.get("WORLD_SIZE", "1")) > 1:
            raise
        traceback.print_exc()  # run() already wrote status "failed" and traceback.txt
        error = e
    if _rank() == 0:  # the sweep goes on; SweepSummary counts this job as failed
        try:
            record_failure(run_dir, cfg, error)
        except OSError:  # the disk that failed the job: its line above says so
            pass
    return Outcome(float("nan"), "failed")


def io_error(e: OSError, run_dir: Path) -> str:
    """One line for an I/O error while a run writes its directory (summary.json, a checkpoint,
    the log): which file, why, and that re-running resumes."""
    where = e.filename or run_dir
    return (
        f"could not write {where}: {e.strerror or e}; the run's status is recorded only where it "
        "could still be written. Free space or make the run directory writable, then re-run the "
        "same command: it resumes from the last checkpoint"
    )


def main() -> None:
    if "--version" in sys.argv[1:]:  # Hydra's own --version names Hydra only
        print(version_text())
        sys.exit(exitcodes.OK)
    refused = preflight.check(sys.argv[1:])
    if refused:  # a typo: normlab's line, before Hydra's dump
        code, lines = refused
        if _rank() == 0:
            print("\n".join(lines), file=sys.stderr)
        sys.exit(code)
    try:
        _main()
    except KeyboardInterrupt:  # Ctrl-C outside training (data set-up, the final test): no traceback
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut this line
        if _rank() == 0:
            print(
                "\nnormlab: interrupted (Ctrl-C) outside the training loop; what was written is kept: re-run "
                "the same command to go on from the last checkpoint",
                file=sys.stderr,
            )
        sys.exit(exitcodes.INTERRUPTED)
    except SystemExit as e:
        if (
            e.code == exitcodes.COMPOSE and _rank() == 0
        ):  # Hydra could not compose: say which keys exist
            for hint in explain_unknown_keys(sys.argv[1:]):
                print(hint, file=sys.stderr)
        if e.code in (0, None) and any(a in ("--help", "-h") for a in sys.argv[1:]):
            print(exitcodes.help_text())
        raise


if __name__ == "__main__":
    main()
