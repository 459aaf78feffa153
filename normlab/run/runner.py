"""One job: prepare (normlab.run.prepare), build task/model, fit, test, summarise.

Order matters for "bad input loses nothing": every check that can fail on user input (config
keys and values, an existing run directory with another config, the data files, building the
model and the first epoch's batches) runs before the first byte is written to the run directory.
In a multi-process run only rank 0 reads or writes the run directory; it tells the others.
"""

from __future__ import annotations

import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Optional

import torch
from omegaconf import DictConfig

from .. import setting
from ..config import Job
from ..errors import ConfigError
from ..files import atomic_write_bytes, write_json, write_yaml
from ..loggers import make_loggers
from ..norms import native
from ..rundir import Checkpoints, Curves, criterion, read_curves, read_summary
from ..schema import default
from . import accel, distributed, probes, provenance
from .consolelog import ConsoleLog
from .outcome import STOPPED, end_line
from .prepare import prepare
from .runlock import RunLock
from .stopsignals import status_of
from .trainer import Diverged, Preempted, Trainer


def build(job: Job, task, run_dir: Path, ctx: distributed.Dist) -> Trainer:
    """Model, optimizer, scheduler and the first epoch's batches; a ValueError here is a bad
    hyperparameter (e.g. d_model not divisible by heads, batch_size 0), reported as such."""
    accel.set_determinism(job, ctx.device)
    if job.get("compile"):
        accel.compile_cache(Path(job.paths.cache_dir))
    try:
        model = task.build_model(job.make_norm)
        return Trainer(
            task,
            model,
            job.train,
            job.seed,
            run_dir,
            None,
            ctx.device,
            progress=job.progress and ctx.main,
            dist=ctx,
            precision=job.get("precision", default("precision")),
            compile=bool(job.get("compile")),
        )
    except ConfigError:
        raise
    except (MemoryError, RuntimeError) as e:
        if not isinstance(e, MemoryError) and "memory" not in str(e).lower():
            raise
        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise ConfigError(
            f"task {job.task.name}: the model does not fit in memory ({first}); lower "
            f"task.model.d_model or the number of layers, or use a smaller scale= (scale "
            f"{job.scale})"
        ) from None
    except (ValueError, TypeError) as e:
        if isinstance(e, TypeError) and "unexpected keyword" not in str(e):
            raise  # a bug, not a config value
        raise ConfigError(
            f"task {job.task.name} (normlab/configs/task/{job.task.name}.yaml, scale {job.scale}): "
            f"{e}; fix that key in the task file or on the command line"
        ) from None


def _valid_at(run_dir: Path, step: int) -> dict:
    """The validation record of the selected checkpoint, in the metric's own units."""
    recs = [
        r
        for r in read_curves(Path(run_dir) / "curves.jsonl")
        if r.get("split") == "valid" and r["step"] == step
    ]
    return (
        {k: v for k, v in recs[-1].items() if k not in ("step", "split", "epoch")} if recs else {}
    )


def objective(summary: dict) -> float:
    """What a search engine optimises: the validation criterion turned to the task metric's
    direction (summary["higher_is_better"], the study's direction); NaN for a run that did not
    complete, which Optuna counts as a failed trial."""
    if summary.get("status") != "completed":
        return float("nan")
    _, value, higher = criterion(summary)
    if value is None:
        return float("nan")
    return value if higher == summary.get("higher_is_better", True) else -value


def short_setting(job: Job) -> dict:
    """The varied hyperparameters by their short names, e.g. {"C": 2, "lr": 0.001}."""
    return setting.short_names(job.setting, job.config)


class _Silent:
    """The logger of ranks other than 0: they train, but rank 0 alone writes."""

    def log(self, metrics: dict, step: int) -> None:
        pass

    def close(self, exit_code: int = 0, summary: Optional[dict] = None) -> None:
        pass


def run(cfg: DictConfig, run_dir: Path, overrides: Optional[list[str]] = None) -> dict:
    """Train one (task, norm, seed) job in ``run_dir``; returns its summary.

    A completed or diverged run is skipped; an interrupted or failed one resumes from its last
    checkpoint. User errors (ConfigError, DataError) are raised before anything is written.
    """
    start = time.monotonic()  # durations: a wall clock set back mid-run gave negative times
    run_dir = Path(run_dir)
    ctx = distributed.init(cfg.get("device", default("device")))
    # One process trains a run directory at a time: a second one (another sweep, a re-submitted
    # SLURM job) stops here with RunLocked before reading or writing anything in it.
    with (
        RunLock(run_dir, enabled=ctx.main),
        ConsoleLog(run_dir / "train.log", enabled=ctx.main) as console,
    ):
        return _run_locked(cfg, run_dir, overrides, ctx, start, console)


def _run_locked(cfg, run_dir: Path, overrides, ctx, start: float, console: ConsoleLog) -> dict:
    job, task, done = prepare(cfg, run_dir, overrides, ctx)
    if done is not None:
        if ctx.main:
            print(f"[normlab] {run_dir}: already {done['status']}, skipped")
        return done
    trainer = build(job, task, run_dir, ctx)
    config = job.config
    # --- from here on the run directory is written (rank 0 only) ---
    if ctx.main:
        run_dir.mkdir(parents=True, exist_ok=True)
        console.open()  # before resume: its warnings (a checkpoint it skipped) belong in the log
        if (
            job.get("resume", default("resume")) == "restart"
            and (
                aside := trainer.ckpt.set_aside(run_dir / "curves.jsonl", run_dir / "summary.json")
            )
            is not None
        ):
            print(
                f"[normlab] resume=restart: {run_dir} starts over from step 0; the old attempt's "
                f"checkpoints, curves and summary are in {aside}"
            )
    trainer.run_config = config
    ck = trainer.resume()  # CheckpointError when every checkpoint is unreadable or another run's
    if ck is not None and ctx.main:
        where = trainer.ckpt.loaded or trainer.ckpt.last
        print(f"[normlab] {run_dir}: resuming from step {trainer.state.step} (checkpoint {where})")
    summary_path = run_dir / "summary.json"
    previous = read_summary(summary_path) if ctx.main else {}
    curves = Curves(run_dir / "curves.jsonl")
    if ctx.main:
        write_yaml(run_dir / "config.yaml", config)
        write_yaml(
            run_dir / "overrides.yaml", list(overrides or [])
        )  # this invocation's command line
        trainer.ckpt.remove_temp()
        curves.truncate_after(trainer.state.step if ck else 0)
        trainer.logger = make_loggers(
            job, config, run_dir, curves, task, ck, trainer.extra, setting=short_setting(job)
        )
    else:
        trainer.logger = _Silent()
    finish = lambda status, error, test: _finish(
        job,
        task,
        trainer,
        run_dir,
        status,
        error,
        test,  # noqa: E731
        previous,
        start,
    )
    status, error = "completed", None
    with trainer.stop:  # a stop signal while the summary is written waits for it
        try:
            trainer.fit()
        except Diverged as e:
            status, error = "diverged", str(e)
        except Preempted as e:  # neither final nor failed: the next run of this command resumes
            status, error = e.status, str(e)
        except Exception as e:
            status, error = "failed", f"{type(e).__name__}: {e}"
            if ctx.main:
                try:
                    atomic_write_bytes(run_dir / "traceback.txt", traceback.format_exc().encode())
                except OSError:  # the disk that failed the run: the console gets it instead
                    traceback.print_exc()
            if ctx.enabled:  # the other ranks may be blocked in a collective: end the whole job
                _summarise(job, task, trainer, run_dir, status, error, {}, previous, start)
                trainer.logger.close(1)
                raise
        if (
            status == "completed" and trainer.stop.signum is not None
        ):  # it came during the last step
            status = status_of(trainer.stop.signum)
            error = (
                f"{signal.Signals(trainer.stop.signum).name} after the last step ({trainer.state.step}): "
                "checkpoint written; re-run the same command to run the final test"
            )
        if status != "completed":
            return finish(status, error, {})
    test = {}
    if ctx.main:
        best = Checkpoints(run_dir).load("best.pt")
        if best is not None:
            trainer.module.load_state_dict(best["model"])
        trainer.module.eval()
        with torch.no_grad():
            test = task.test(trainer.module, run_dir)
        trainer.logger.log(
            {"epoch": trainer.state.epoch, "split": "test", **test}, trainer.state.step
        )
        if job.train.scurve:
            probes.write_scurve(job, task, trainer.module, run_dir)
    return finish(status, error, test)


def _finish(
    job, task, trainer, run_dir: Path, status: str, error, test: dict, previous: dict, start: float
) -> dict:
    if status != "failed" and (run_dir / "traceback.txt").exists() and trainer.dist.main:
        (run_dir / "traceback.txt").unlink()  # a resumed run that now succeeded
    summary = _summarise(job, task, trainer, run_dir, status, error, test, previous, start)
    trainer.logger.close(0 if status == "completed" or status in STOPPED else 1, summary)
    if trainer.dist.main:
        print(end_line(summary, run_dir))
    return summary


def _summarise(job, task, trainer, run_dir, status, error, test, previous, start) -> dict:
    st = trainer.state
    summary = {
        "status": status,
        "error": error,
        "task": job.task.name,
        "norm": job.norm.name,
        "norm_options": job.config["norm"].get("options") or {},
        "seed": job.seed,
        "seed_role": job.config.get("seed_role"),
        "declaration": job.config.get("declaration"),
        "scale": job.scale,
        "setting": short_setting(job),
        "name": job.name,
        "metric": task.metric,
        "higher_is_better": task.higher_is_better,
        "data": task.data_info,
        "batching": task.batching(job.seed),
        "steps": st.step,
        "epochs": st.epoch,
        "best_step": st.best_step,
        "stopped_early": st.stopped_early,
        "valid": st.last_valid,
        "test": test,
        "best_valid_score": st.best,
        # what chose the checkpoint (task.train.select): the loss, or the task's metric
        "selected_by": "loss" if job.train.select == "loss" else task.metric,
        "best_valid": _valid_at(run_dir, st.best_step)
        if trainer.dist.main
        else {},  # rank 0 writes the curves
        # a first run on a machine may build the native kernels: that is set-up, not this run's time
        "wall_time_s": (
            previous.get("wall_time_s", 0.0)
            + time.monotonic()
            - start
            - native.build_seconds(since=start)
        ),
        "native_build_s": round(native.build_seconds(since=start), 1),
        "train_time_s": st.train_time,
        "throughput": {f"{task.unit}_per_s": st.units / st.train_time if st.train_time else 0.0},
        "params": sum(p.numel() for p in trainer.module.parameters()),
        "versions": provenance.versions(),
        "machine": provenance.machine(),
        "git_commit": provenance.git_commit(),
        "git_dirty": provenance.git_dirty(),
        "device": str(trainer.device),
        "world_size": trainer.dist.world,
        "precision": trainer.precision,
        "compile": trainer.forward_model is not trainer.model,
        "argv": sys.argv,
    }
    if trainer.dist.main:
        write_json(Path(run_dir) / "summary.json", summary)
    return summary
