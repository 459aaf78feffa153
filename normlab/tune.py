"""``normlab-tune``: an Optuna search over any config keys, each trial one ``normlab-train`` job.

    normlab-tune --search lr -- task=rt norm=adanorm scale=mini threads=1

Optuna (>= 4) is driven directly: Hydra's Optuna sweeper pins optuna < 3, whose SQLite storage
needs SQLAlchemy < 2. A trial is the same job a sweep runs (its own run directory, named by its
setting, e.g. ``runs/mini/tune_lr/rt/adanorm/lr=0.00141/seed1``), so finished trials are never
trained twice. The job's objective is its selected checkpoint's validation metric in the task's
direction (normlab.run.runner.objective); a failed or diverged job is a FAIL trial.
The study lives in ``<sweep dir>/optuna.journal`` (one file, safe to copy) and remembers the fixed
overrides it was started with: the same name with other fixed settings is refused, naming the keys.
A trial's job runs in its own process group and gets SIGTERM when the search dies, even by SIGKILL,
so it writes a checkpoint and stops. Ctrl-C (or SIGTERM) on the search is passed to the running
job, which checkpoints; the search then exits 130 (75). Running the same command again resumes:
trials left RUNNING are marked stale and their parameters queued again, so that trial's job
resumes from its checkpoint (after waiting for a job that still holds its run directory).
``trials.md`` beside the journal lists the trials with each one's objective read from its own
summary.json; ``optuna-dashboard <journal>`` shows the study interactively.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from . import exitcodes
from .commands import version_text
from .config import SAFE_NAME
from .config_keys import compose
from .errors import ComposeError, ConfigError
from .experiment import same_experiment
from .run.runlock import RunLock, RunLocked
from .run.stopsignals import status_of
from .search_space import SEARCHES, load_search, space, suggest
from .trialjob import TrialJob
from .trials_table import finished, trial_value, write_table


def run_dir_of(overrides: list[str]) -> Path:
    """The run directory normlab-train will use for these overrides: Hydra's own hydra.run.dir."""
    from . import setting  # noqa: F401  (registers ${normlab.setting:})

    return Path(compose(overrides, hydra_node=True).hydra.run.dir)


def recover(study) -> int:
    """Fail the trials a killed process left RUNNING and queue their parameters again."""
    from optuna.trial import TrialState

    stale = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    for t in stale:
        requeue(study, t)
    return len(stale)


def requeue(study, t) -> None:
    """A trial whose job stopped with a checkpoint (or whose search died): FAIL, marked stale so it
    does not count, and its parameters queued again, so the same run directory resumes."""
    from optuna.trial import TrialState

    study._storage.set_trial_user_attr(t._trial_id, "stale", True)
    study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
    study.enqueue_trial(t.params, user_attrs={"resumes_trial": t.number}, skip_if_exists=False)


def check_fixed(study, fixed: dict, searched: list[str], journal: Path) -> None:
    """Refuse to add trials to a study started with other fixed settings: its trials would be
    ranked against ones trained differently (e.g. another max_steps)."""
    old = study.user_attrs.get("fixed")
    if old is None:
        study.set_user_attr("fixed", fixed)
        return
    diffs = [
        k
        for k in same_experiment(old, fixed)
        if not any(k == p or k.startswith(p + ".") for p in searched)
    ]
    if diffs:

        def get(d, key):
            for part in key.split("."):
                d = d.get(part) if isinstance(d, dict) else None
            return d

        shown = ", ".join(f"{k} ({get(old, k)!r} there, {get(fixed, k)!r} here)" for k in diffs)
        raise ConfigError(
            f"study {study.study_name!r} in {journal} was started with other fixed settings: {shown}; "
            "start a new study with another name=... (its own folder), or delete that journal "
            "to start this one over"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="normlab-tune",
        description=__doc__.split("\n\n")[0],
        epilog=exitcodes.help_text() + "\n  (normlab-tune: 2 also for a study started with "
        "other fixed settings)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action="version", version=version_text())
    ap.add_argument("--search", default="lr", help=f"a preset in {SEARCHES} (default: lr)")
    ap.add_argument("--trials", type=int, help="total trials (default: the preset's n_trials)")
    ap.add_argument(
        "overrides", nargs="*", help="normlab-train overrides shared by every trial (after --)"
    )
    a = ap.parse_args(argv)
    if a.trials is not None and a.trials < 1:
        raise ConfigError(f"--trials {a.trials}: the total number of trials must be at least 1")
    import optuna
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from .hints import composition_error
    from .preflight import choice_errors
    from .tasks import get_task_class

    spec = load_search(a.search)
    overrides = list(a.overrides)
    if not any(o.startswith("name=") for o in overrides):
        overrides.append(f"name=tune_{a.search}")
    if lines := choice_errors(overrides):  # norm=rmsnrom: the one line normlab-train prints
        raise ComposeError(lines, exitcodes.BAD_INPUT)
    try:
        cfg = compose(overrides)
    except (HydraException, OmegaConfBaseException) as e:
        lines = composition_error(e, overrides)
        # a key no config has is bad input, as a wrong choice is; Hydra's other refusals stay 1
        keyed = any(line.startswith("normlab: error: ") for line in lines)
        raise ComposeError(lines, exitcodes.BAD_INPUT if keyed else exitcodes.COMPOSE) from None
    if not SAFE_NAME.fullmatch(str(cfg.name)):
        raise ConfigError(f"name={cfg.name!r}: the search's folder name: {SAFE_NAME.pattern}")
    ranges = space(spec, cfg)
    sweep_dir = Path(cfg.paths.root) / cfg.scale / cfg.name
    sweep_dir.mkdir(parents=True, exist_ok=True)
    higher = get_task_class(cfg.task.name).higher_is_better
    n_trials = a.trials or spec["n_trials"]
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(sweep_dir / "optuna.journal"))
    )
    name = f"{cfg.task.name}-{cfg.norm.name}-{a.search}"
    # A resumed search must not replay the first process's random numbers (it would propose the
    # same points again): the seed moves on with the number of trials already in the study.
    seed = spec.get("seed", 0) + sum(
        s.n_trials for s in optuna.get_all_study_summaries(storage) if s.study_name == name
    )
    sampler = {
        "tpe": lambda: optuna.samplers.TPESampler(seed=seed),
        "random": lambda: optuna.samplers.RandomSampler(seed=seed),
        "grid": lambda: optuna.samplers.GridSampler(
            {k: p["choices"] for k, p in ranges.items()}, seed=seed
        ),
    }[spec.get("sampler", "tpe")]()
    fixed = OmegaConf.to_container(
        cfg, resolve=False
    )  # paths need a running Hydra app; they do not count
    journal = sweep_dir / "optuna.journal"
    with RunLock(sweep_dir / f".{name}", what="searched"), TrialJob() as runner:
        study = optuna.create_study(
            study_name=name,
            storage=storage,
            sampler=sampler,
            load_if_exists=True,
            direction="maximize" if higher else "minimize",
        )
        check_fixed(study, fixed, list(ranges), journal)
        study.set_user_attr("params", list(ranges))
        study.set_user_attr(
            "direction", f"{cfg.task.name} {'higher' if higher else 'lower'} is better"
        )
        if n := recover(study):
            print(f"[normlab-tune] resuming: {n} trial(s) of a killed search queued again")
        table = sweep_dir / f"trials-{name}.md"
        while finished(study) < n_trials and runner.signum is None:
            trial = study.ask()
            used = {k: suggest(trial, k, p) for k, p in ranges.items()}
            job = overrides + [f"{k}={v}" for k, v in used.items()]
            run_dir = run_dir_of(job)
            trial.set_user_attr("used", used)
            trial.set_user_attr("run_dir", str(run_dir))
            print(
                f"[normlab-tune] trial {trial.number}: {' '.join(f'{k}={v}' for k, v in used.items())}",
                flush=True,
            )
            rc = runner.run(job, run_dir)
            if rc == exitcodes.BAD_INPUT:  # every trial would be refused the same way
                refused(study, trial, storage, name)
            if rc in exitcodes.STOPPED.values():  # stopped with a checkpoint
                requeue(study, study.get_trials(deepcopy=False)[trial.number])
                break
            status, value = trial_value(str(run_dir))
            trial.set_user_attr("status", status or "missing")
            if value is None or status != "completed":
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, value)
            write_table(study, table)
        write_table(study, table)
    print(table.read_text())
    if runner.signum is not None:
        code = exitcodes.STOPPED[status_of(runner.signum)]
        print(
            f"[normlab-tune] stopped by {signal.Signals(runner.signum).name}: run the same command again to "
            "resume the search (the stopped trial resumes from its checkpoint)",
            file=sys.stderr,
        )
        return code
    return 0


def refused(study, trial, storage, name: str) -> None:
    """A trial's job refused its configuration (exit 2, its one-line error above): stop the search.
    A study with no completed trial is removed from the journal, so the corrected command starts
    afresh instead of being refused for its other fixed settings."""
    import optuna

    study.tell(trial, state=optuna.trial.TrialState.FAIL)
    done = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if not done:
        optuna.delete_study(study_name=name, storage=storage)
    raise ConfigError(
        f"trial {trial.number}'s job refused its configuration (exit 2, its error is above): correct "
        "the overrides and run the command again"
        + ("" if done else " (the search had no completed trial: its study was removed)")
    )


def cli() -> None:
    try:
        sys.exit(main())
    except ComposeError as e:
        print("\n".join(e.lines), file=sys.stderr)
        sys.exit(e.code)
    except (ConfigError, RunLocked) as e:
        print(f"normlab-tune: error: {e}", file=sys.stderr)
        sys.exit(exitcodes.LOCKED if isinstance(e, RunLocked) else exitcodes.BAD_INPUT)
    except KeyboardInterrupt:  # before or between trials: nothing is running
        print(
            "\nnormlab-tune: interrupted; run the same command again to resume the search",
            file=sys.stderr,
        )
        sys.exit(exitcodes.INTERRUPTED)


if __name__ == "__main__":
    cli()
