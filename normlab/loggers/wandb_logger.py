"""wandb: optional and best-effort; any wandb failure is reported once and disables it, never
stopping training.

What a run carries: the resolved config, the curves under ``<split>/<name>``, ``job_type``, the
varied hyperparameters in its name and tags, each validation metric's *best* value in the summary
(``define_metric`` with the task's direction) with ``valid/best_step``, and at the end the whole
``summary.json`` (status, best score, test metrics, params, wall time, throughput).
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Optional

from .base import run_name, setting_tags, split_keys, summary_for_backends
from .registry import LoggerRun, register_logger


def wandb_mode(mode: Optional[str]) -> str:
    """``auto`` (or unset): online where wandb has credentials (WANDB_API_KEY or ~/.netrc), else
    offline, so a run without an account still logs; any other mode as given."""
    if (mode or "auto") != "auto":
        return mode
    has_key = bool(os.environ.get("WANDB_API_KEY")) or os.path.exists(
        os.path.expanduser("~/.netrc")
    )
    return "online" if has_key else "offline"


def quiet(setting: Optional[bool], config: dict) -> bool:
    """Whether wandb keeps its console summary to itself (the summary stays in the wandb run):
    ``logger.quiet`` when set, else in a job without a progress line (``progress=false``, as
    sweeps and study slices run), where each job's ~80 ``wandb:`` lines would bury the sweep's
    own one line per job."""
    if setting is not None:
        return bool(setting)
    return config.get("progress") is False


class WandbLogger:
    """One wandb run per job; offline automatically when no API key is configured.

    wandb never decides the fate of a run: a failing ``init`` online is retried offline (the
    records stay in the run directory for ``wandb sync``), any other failure disables wandb for
    the rest of the job, and init/finish waits are capped (``init_timeout``/``finish_timeout``
    in the logger config) so an unreachable server costs seconds, not the default minutes.

    ``metric``/``higher_is_better``: the task's validation metric and its direction, for the
    summary's best value.
    """

    def __init__(
        self,
        cfg: dict,
        config: dict,
        run_dir: str,
        run_id: Optional[str] = None,
        metric: Optional[str] = None,
        higher_is_better: bool = True,
    ):
        self.run = None
        self.metric, self.higher = metric, higher_is_better
        self.best: Optional[float] = None
        try:
            import wandb

            mode = wandb_mode(cfg.get("mode"))
            settings = wandb.Settings(
                init_timeout=float(cfg.get("init_timeout", 30)),
                finish_timeout=float(cfg.get("finish_timeout", 60)),
                quiet=quiet(cfg.get("quiet"), config),
            )
            kwargs = dict(
                project=cfg.get("project", "normlab"),
                entity=cfg.get("entity"),
                group=cfg.get("group"),
                job_type=cfg.get("job_type") or "train",
                name=cfg.get("run_name"),
                tags=list(cfg.get("tags") or []),
                config=config,
                dir=run_dir,
                id=run_id,
                resume="allow",
                reinit="finish_previous",
                settings=settings,
            )
        except Exception:
            self._fail("init")
            return
        try:
            self.run = wandb.init(mode=mode, **kwargs)
        except Exception:
            if mode != "online":
                self._fail("init")
                return
            self._fail("init (online)")
            try:
                self.run = wandb.init(mode="offline", **kwargs)
            except Exception:
                self._fail("init (offline)")
        self._define_metrics()

    def _define_metrics(self) -> None:
        if self.run is None or not hasattr(self.run, "define_metric"):
            return
        try:
            self.run.define_metric("valid/loss", summary="min")
            if self.metric and self.metric != "loss":
                self.run.define_metric(
                    f"valid/{self.metric}", summary="max" if self.higher else "min"
                )
        except Exception:
            self._fail("define_metric")

    @property
    def run_id(self) -> Optional[str]:
        return getattr(self.run, "id", None)

    def _fail(self, where: str) -> None:
        print(
            f"[normlab] wandb {where} failed; training continues without it:\n"
            f"{traceback.format_exc(limit=2)}",
            file=sys.stderr,
        )
        self.run = None

    keys = staticmethod(split_keys)

    def _track_best(self, metrics: dict, step: int) -> None:
        """define_metric keeps the best value but not when it happened; the step is recorded here."""
        if metrics.get("split") != "valid" or self.metric not in metrics:
            return
        v = metrics[self.metric]
        if self.best is None or (v > self.best if self.higher else v < self.best):
            self.best = v
            self.run.summary["valid/best_step"] = step

    def log(self, metrics: dict, step: int) -> None:
        if self.run is None:
            return
        try:
            self.run.log(self.keys(metrics), step=step)
            self._track_best(metrics, step)
        except Exception:
            self._fail("log")

    def close(self, exit_code: int = 0, summary: Optional[dict] = None) -> None:
        if self.run is None:
            return
        try:
            if summary:
                self.run.summary.update(summary_for_backends(summary))
            self.run.finish(exit_code=exit_code)
        except Exception:
            self._fail("finish")


@register_logger("wandb")
def build(run: LoggerRun) -> WandbLogger:
    job, options = run.job, dict(run.options)
    options.setdefault("run_name", run_name(job.task.name, job.norm.name, job.seed, run.setting))
    options["tags"] = list(options.get("tags") or []) + setting_tags(run.setting)
    wandb = WandbLogger(
        options,
        run.config,
        str(run.run_dir),
        run_id=(run.checkpoint or {}).get("wandb_id"),
        metric=run.task.metric,
        higher_is_better=run.task.higher_is_better,
    )
    run.extra["wandb_id"] = wandb.run_id
    return wandb
