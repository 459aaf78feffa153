"""The exit codes of normlab's commands, in one table: the code uses these names, ``--help`` and
docs/exit-codes.md print the table (a test checks the page against it).

A script that drives normlab (a SLURM array, a CI job) decides from the code alone: requeue on 75,
re-run on 130 when it wants the run finished, fix the input on 2, read traceback.txt on 3.
"""

from __future__ import annotations

import textwrap

OK = 0
COMPOSE = 1
BAD_INPUT = 2
CRASHED = 3
LOCKED = 4
CHECKPOINT = 5
PREEMPTED = 75  # EX_TEMPFAIL, what schedulers treat as "requeue"
INTERRUPTED = 130  # 128 + SIGINT, the shell's code for a job stopped by Ctrl-C
# a run's status after a stop signal (normlab.run.stopsignals.status_of) and the code it exits with
STOPPED = {"preempted": PREEMPTED, "interrupted": INTERRUPTED}

TABLE = (
    (OK, 'completed or diverged (a diverged run is a result: status "diverged" in summary.json)'),
    (
        COMPOSE,
        "the config cannot be composed for another reason than a misspelling (Hydra's message, "
        "in one line)",
    ),
    (
        BAD_INPUT,
        "bad input: a config value, a config group choice that does not exist (norm=rmsnrom: the "
        "options and the closest), a key no config has (task.train.lrr: the valid keys at that "
        "level and the closest) or a data file; one line names the key or file and the fix, "
        "nothing is written",
    ),
    (
        CRASHED,
        'training crashed: status "failed", traceback.txt in the run directory; re-running resumes. '
        "Also the run directory could not be written (a full disk, a read-only mount): one line "
        "names the file, the status is recorded where it still could be",
    ),
    (
        LOCKED,
        "another process is training (or searching) the same run directory; wait for it or stop it",
    ),
    (
        CHECKPOINT,
        "every checkpoint of the run is unreadable, or the one there is another run's (written by "
        "another seed, for another config, or a model-only best.pt put in as last.pt: every "
        "checkpoint records its seed and config); the message names the file; resume=restart starts "
        "the run over (the old checkpoints are kept aside)",
    ),
    (
        PREEMPTED,
        'SIGTERM, SIGUSR1 or SIGHUP: a checkpoint was written, status "preempted"; re-run the same command to '
        "resume",
    ),
    (
        INTERRUPTED,
        'Ctrl-C (SIGINT): a checkpoint was written, status "interrupted"; re-run the same command to '
        "resume",
    ),
)
MULTIRUN = (
    "--multirun exits with the number of failed jobs plus points whose config could not be composed "
    "(at most 125); with none, 4 when another process held a point; a preempted or interrupted job "
    "ends the sweep with 75 or 130"
)


def describe(code: int) -> str:
    return dict(TABLE)[code]


def help_text(width: int = 98) -> str:
    """The table as plain text, for ``--help``."""
    rows = [
        textwrap.fill(text, width, initial_indent=f"  {code:<5}", subsequent_indent=" " * 7)
        for code, text in TABLE
    ]
    return (
        "exit codes:\n"
        + "\n".join(rows)
        + "\n"
        + textwrap.fill(MULTIRUN, width, initial_indent="  ", subsequent_indent="  ")
    )


def markdown() -> str:
    """The table as the body of docs/exit-codes.md."""
    rows = ["| code | meaning |", "|---|---|", *(f"| {code} | {text} |" for code, text in TABLE)]
    return "\n".join(rows) + f"\n\n{MULTIRUN[0].upper()}{MULTIRUN[1:]}.\n"
