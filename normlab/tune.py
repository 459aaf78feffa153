"""``normlab-tune``: an Optuna search over any config keys, each trial one ``normlab-train`` job.

    normlab-tune --search lr -- task=rt norm=adanorm scale=mini threads=1

Optuna (>= 4) is driven directly: Hydra's Optuna sweeper pins optuna < 3, whose SQLite storage
needs SQLAlchemy < 2. A trial is the same job a sweep runs (its own run directory, named by its
setting, e.g. ``runs/mini/tune_lr/rt/adanorm/lr=0.00141/seed1``), so finished trials are never
trained twice. The job's objective is its selected checkpoint's validation metric in the task's
direction (normlab.runner.objective); a failed or diverged job is a FAIL trial.
The study lives in ``<sweep dir>/optuna.journal`` (one file, safe to copy). A killed search resumes
when the same command runs again: trials the dead process left RUNNING are marked FAIL and their
parameters queued again, so that trial's job resumes from its checkpoint. ``trials.md`` beside the
journal lists the trials; ``optuna-dashboard <journal>`` shows the study interactively.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

import yaml

from .config import CONFIGS
from .errors import ConfigError
from .runlock import RunLock, RunLocked

SEARCHES = CONFIGS / "hparams_search"


def _compose(overrides: list[str], hydra_node: bool = False):
    from hydra import compose, initialize_config_dir
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose("train", overrides=overrides, return_hydra_config=hydra_node)


def load_search(name: str) -> dict:
    path = SEARCHES / f"{name}.yaml"
    if not path.exists():
        raise ConfigError(f"--search {name}: no {path}; presets: {sorted(p.stem for p in SEARCHES.glob('*.yaml'))}")
    spec = yaml.safe_load(path.read_text())
    for key, p in spec["params"].items():
        if p.get("type") not in ("float", "int", "categorical"):
            raise ConfigError(f"{path}: params.{key}.type must be float, int or categorical")
    return spec


def _round(v: float) -> float:
    return float(f"{v:.3g}")   # a readable run folder (lr=0.00141); the value the job ran is recorded


def space(spec: dict, cfg) -> dict:
    """Concrete ranges: a ``factor`` or ``factor_choices`` is relative to the composed value."""
    from omegaconf import OmegaConf
    out = {}
    for key, p in spec["params"].items():
        base = OmegaConf.select(cfg, key)
        if ("factor" in p or "factor_choices" in p) and not isinstance(base, (int, float)):
            raise ConfigError(f"search param {key}: factor needs a number at {key}, the config has {base!r}")
        typ = int if p["type"] == "int" or isinstance(base, int) and p["type"] == "categorical" else float
        if "factor_choices" in p:
            out[key] = {"type": "categorical", "choices": sorted({typ(_round(base * f)) for f in p["factor_choices"]})}
        elif "factor" in p:
            lo, hi = (base * f for f in p["factor"])
            out[key] = {**p, "low": typ(lo), "high": typ(hi)}
        else:
            out[key] = p
    return out


def suggest(trial, key: str, p: dict):
    if p["type"] == "categorical":
        return trial.suggest_categorical(key, p["choices"])
    if p["type"] == "int":
        return trial.suggest_int(key, int(p["low"]), int(p["high"]), log=bool(p.get("log")))
    return _round(trial.suggest_float(key, float(p["low"]), float(p["high"]), log=bool(p.get("log"))))


def run_dir_of(overrides: list[str]) -> Path:
    """The run directory normlab-train will use for these overrides: Hydra's own hydra.run.dir."""
    from . import setting  # noqa: F401  (registers ${normlab.setting:})
    return Path(_compose(overrides, hydra_node=True).hydra.run.dir)


def recover(study) -> int:
    """Fail the trials a killed process left RUNNING and queue their parameters again."""
    from optuna.trial import TrialState
    stale = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    for t in stale:
        study._storage.set_trial_user_attr(t._trial_id, "stale", True)
        study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
        study.enqueue_trial(t.params, user_attrs={"resumes_trial": t.number}, skip_if_exists=False)
    return len(stale)


def finished(study) -> int:
    """Trials that count toward --trials: finished ones, not those a killed search left behind."""
    return sum(1 for t in study.get_trials(deepcopy=False) if t.state.is_finished() and not t.user_attrs.get("stale"))


def write_table(study, path: Path) -> None:
    rows = ["| trial | state | " + " | ".join(study.user_attrs.get("params", [])) + " | objective | run |",
            "|---" * (len(study.user_attrs.get("params", [])) + 4) + "|"]
    for t in study.get_trials(deepcopy=False):
        values = [str(t.user_attrs.get("used", {}).get(k, t.params.get(k, ""))) for k in study.user_attrs.get("params", [])]
        state = "stale (killed; re-queued)" if t.user_attrs.get("stale") else t.state.name.lower()
        value = "" if t.value is None else f"{t.value:.4f}"
        rows.append(f"| {t.number} | {state} | " + " | ".join(values) + f" | {value} | {t.user_attrs.get('run_dir', '')} |")
    best = [t for t in study.get_trials(deepcopy=False) if t.value is not None]
    if best:
        b = study.best_trial
        rows += ["", f"Best: trial {b.number}, objective {b.value:.4f} ({study.user_attrs['direction']}), "
                     f"{json.dumps(b.user_attrs.get('used', b.params))}"]
    path.write_text("\n".join(rows) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="normlab-tune", description=__doc__.split("\n\n")[0])
    ap.add_argument("--search", default="lr", help=f"a preset in {SEARCHES} (default: lr)")
    ap.add_argument("--trials", type=int, help="total trials (default: the preset's n_trials)")
    ap.add_argument("overrides", nargs="*", help="normlab-train overrides shared by every trial (after --)")
    a = ap.parse_args(argv)
    import optuna

    from .runner import objective
    from .tasks import get_task_class

    spec = load_search(a.search)
    overrides = list(a.overrides)
    if not any(o.startswith("name=") for o in overrides):
        overrides.append(f"name=tune_{a.search}")
    cfg = _compose(overrides)
    ranges = space(spec, cfg)
    sweep_dir = Path(cfg.paths.root) / cfg.scale / cfg.name
    sweep_dir.mkdir(parents=True, exist_ok=True)
    higher = get_task_class(cfg.task.name).higher_is_better
    n_trials = a.trials or spec["n_trials"]
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(sweep_dir / "optuna.journal")))
    name = f"{cfg.task.name}-{cfg.norm.name}-{a.search}"
    # A resumed search must not replay the first process's random numbers (it would propose the
    # same points again): the seed moves on with the number of trials already in the study.
    seed = spec.get("seed", 0) + sum(s.n_trials for s in optuna.get_all_study_summaries(storage)
                                     if s.study_name == name)
    sampler = {"tpe": lambda: optuna.samplers.TPESampler(seed=seed),
               "random": lambda: optuna.samplers.RandomSampler(seed=seed),
               "grid": lambda: optuna.samplers.GridSampler({k: p["choices"] for k, p in ranges.items()},
                                                           seed=seed)}[spec.get("sampler", "tpe")]()
    with RunLock(sweep_dir / f".{name}", what="searched"):
        study = optuna.create_study(study_name=name, storage=storage, sampler=sampler, load_if_exists=True,
                                    direction="maximize" if higher else "minimize")
        study.set_user_attr("params", list(ranges))
        study.set_user_attr("direction", f"{cfg.task.name} {'higher' if higher else 'lower'} is better")
        if (n := recover(study)):
            print(f"[normlab-tune] resuming: {n} trial(s) of a killed search queued again")
        while finished(study) < n_trials:
            trial = study.ask()
            used = {k: suggest(trial, k, p) for k, p in ranges.items()}
            job = overrides + [f"{k}={v}" for k, v in used.items()]
            run_dir = run_dir_of(job)
            trial.set_user_attr("used", used)
            trial.set_user_attr("run_dir", str(run_dir))
            print(f"[normlab-tune] trial {trial.number}: {' '.join(f'{k}={v}' for k, v in used.items())}", flush=True)
            subprocess.run([sys.executable, "-m", "normlab.train", *job], check=False)
            summary_path = run_dir / "summary.json"
            summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
            value = objective(summary)
            trial.set_user_attr("status", summary.get("status", "missing"))
            if math.isnan(value):
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, value)
            write_table(study, sweep_dir / f"trials-{name}.md")
        write_table(study, sweep_dir / f"trials-{name}.md")
    print((sweep_dir / f"trials-{name}.md").read_text())
    return 0


def cli() -> None:
    try:
        sys.exit(main())
    except (ConfigError, RunLocked) as e:
        print(f"normlab-tune: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    cli()
