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
    """One wandb run per job; offline automatically when no API key is configured."""

    def __init__(self, cfg: dict, config: dict, run_dir: str, run_id: Optional[str] = None):
        self.run = None
        try:
            import wandb

            mode = cfg.get("mode") or "auto"
            if mode == "auto":
                has_key = bool(os.environ.get("WANDB_API_KEY")) or os.path.exists(os.path.expanduser("~/.netrc"))
                mode = "online" if has_key else "offline"
            self.run = wandb.init(
                project=cfg.get("project", "normlab"), entity=cfg.get("entity"), group=cfg.get("group"),
                name=cfg.get("run_name"), tags=list(cfg.get("tags") or []), config=config, dir=run_dir,
                mode=mode, id=run_id, resume="allow", reinit="finish_previous")
        except Exception:
            self._fail("init")

    @property
    def run_id(self) -> Optional[str]:
        return getattr(self.run, "id", None)

    def _fail(self, where: str) -> None:
        print(f"[normlab] wandb {where} failed; continuing without wandb:\n{traceback.format_exc(limit=2)}",
              file=sys.stderr)
        self.run = None

    def log(self, metrics: dict, step: int) -> None:
        if self.run is None:
            return
        try:
            self.run.log(metrics, step=step)
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
