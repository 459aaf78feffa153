"""Hydra callback: after a multirun, count job outcomes and exit non-zero if any job failed."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from .rundir import read_json, write_json


def record_failure(run_dir: Path, cfg: DictConfig, error: BaseException) -> None:
    """Mark a job that failed before training as failed, unless its directory already holds a run
    (that run's files stay untouched)."""
    run_dir = Path(run_dir)
    if (run_dir / "config.yaml").exists() or (run_dir / "summary.json").exists():
        return
    write_json(run_dir / "summary.json", {"status": "failed", "error": f"{type(error).__name__}: {error}",
                                          "task": cfg.task.name, "norm": cfg.norm.name, "seed": cfg.seed,
                                          "scale": cfg.scale, "name": cfg.name, "before_training": True})


class SweepSummary(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        self.start = time.time()

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        root = Path(config.hydra.sweep.dir)
        counts: dict[str, int] = {}
        failed = []
        for path in root.glob("**/summary.json"):
            if path.stat().st_mtime < getattr(self, "start", 0) - 1:
                continue  # skipped runs from earlier sweeps are not re-counted
            status = read_json(path).get("status", "unknown")
            counts[status] = counts.get(status, 0) + 1
            if status == "failed":
                failed.append(str(path.parent))
        print(f"[normlab] sweep {root}: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
        for f in failed:
            print(f"[normlab]   failed: {f}", file=sys.stderr)
        if failed:
            sys.exit(min(len(failed), 125))  # the exit status is the number of failed jobs
