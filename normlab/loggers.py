"""Metric loggers: ``log(metrics, step)`` and ``close()``.

The local JSONL writer always runs and is the source of truth for tables. wandb is optional and
best-effort: any wandb failure is reported once and disables it, never stopping training.
"""
from __future__ import annotations

import os
import sys
import traceback
from typing import Optional

from .rundir import Curves


class LocalLogger:
    def __init__(self, curves: Curves):
        self.curves = curves

    def log(self, metrics: dict, step: int) -> None:
        self.curves.append({"step": step, **metrics})

    def close(self) -> None:
        pass


class WandbLogger:
    """One wandb run per job; offline automatically when no API key is configured.

    wandb never decides the fate of a run: a failing ``init`` online is retried offline (the
    records stay in the run directory for ``wandb sync``), any other failure disables wandb for
    the rest of the job, and init/finish waits are capped (``init_timeout``/``finish_timeout``
    in the logger config) so an unreachable server costs seconds, not the default minutes.
    """

    def __init__(self, cfg: dict, config: dict, run_dir: str, run_id: Optional[str] = None):
        self.run = None
        try:
            import wandb

            mode = cfg.get("mode") or "auto"
            if mode == "auto":
                has_key = bool(os.environ.get("WANDB_API_KEY")) or os.path.exists(os.path.expanduser("~/.netrc"))
                mode = "online" if has_key else "offline"
            settings = wandb.Settings(init_timeout=float(cfg.get("init_timeout", 30)),
                                      finish_timeout=float(cfg.get("finish_timeout", 60)))
            kwargs = dict(project=cfg.get("project", "normlab"), entity=cfg.get("entity"), group=cfg.get("group"),
                          name=cfg.get("run_name"), tags=list(cfg.get("tags") or []), config=config, dir=run_dir,
                          id=run_id, resume="allow", reinit="finish_previous", settings=settings)
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

    @property
    def run_id(self) -> Optional[str]:
        return getattr(self.run, "id", None)

    def _fail(self, where: str) -> None:
        print(f"[normlab] wandb {where} failed; training continues without it:\n"
              f"{traceback.format_exc(limit=2)}", file=sys.stderr)
        self.run = None

    @staticmethod
    def keys(metrics: dict) -> dict:
        """Curve records to wandb's names: {"split": "valid", "loss": x} -> {"valid/loss": x}."""
        split = metrics.get("split")
        return {(k if split is None or k == "epoch" or "/" in k else f"{split}/{k}"): v
                for k, v in metrics.items() if k != "split"}

    def log(self, metrics: dict, step: int) -> None:
        if self.run is None:
            return
        try:
            self.run.log(self.keys(metrics), step=step)
        except Exception:
            self._fail("log")

    def close(self, exit_code: int = 0) -> None:
        if self.run is None:
            return
        try:
            self.run.finish(exit_code=exit_code)
        except Exception:
            self._fail("finish")


class MultiLogger:
    def __init__(self, *loggers):
        self.loggers = [lg for lg in loggers if lg is not None]

    def log(self, metrics: dict, step: int) -> None:
        for lg in self.loggers:
            lg.log(metrics, step)

    def close(self, exit_code: int = 0) -> None:
        for lg in self.loggers:
            lg.close(exit_code) if isinstance(lg, WandbLogger) else lg.close()
