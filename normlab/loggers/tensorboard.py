"""TensorBoard: the same curves as curves.jsonl and wandb, as scalars under the same names
(``train/loss``, ``valid/acc``, ``train/lr``, ``train/examples_per_s``, ``grad/all/in_var``, ...)
in ``<run_dir>/tensorboard/``, and at the end an hparams entry (the run's task, norm, seed, scale
and varied hyperparameters against its best/test metrics) for TensorBoard's HPARAMS tab.

Like wandb it is best-effort: a missing ``tensorboard`` package or a failing write is reported
once and switches TensorBoard off; training goes on.
"""

from __future__ import annotations

import math
import sys
import traceback
from pathlib import Path
from typing import Optional

from .base import split_keys
from .registry import LoggerRun, register_logger


class TensorBoardLogger:
    def __init__(self, run_dir: Path, hparams: dict, purge_step: Optional[int] = None):
        """``purge_step``: on a resumed run, events at or after this step (written after the last
        checkpoint by the interrupted attempt) are hidden, as curves.jsonl drops them."""
        self.writer, self.hparams = None, hparams
        self.log_dir = Path(run_dir) / "tensorboard"
        try:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(log_dir=str(self.log_dir), purge_step=purge_step)
        except Exception:
            self._fail("init (pip install 'normlab[tensorboard]')")

    def _fail(self, where: str) -> None:
        print(
            f"[normlab] tensorboard {where} failed; training continues without it:\n"
            f"{traceback.format_exc(limit=2)}",
            file=sys.stderr,
        )
        self.writer = None

    def log(self, metrics: dict, step: int) -> None:
        if self.writer is None:
            return
        try:
            for k, v in split_keys(metrics).items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    self.writer.add_scalar(k, v, step)
        except Exception:
            self._fail("log")

    def close(self, exit_code: int = 0, summary: Optional[dict] = None) -> None:
        if self.writer is None:
            return
        try:
            if summary:
                self.writer.add_hparams(self.hparams, final_metrics(summary), run_name=".")
            self.writer.close()
        except Exception:
            self._fail("close")


def final_metrics(summary: dict) -> dict:
    """The numbers the HPARAMS tab compares runs on; prefixed ``hparam/`` so they never share a tag
    with the curves (``test/acc`` the curve point vs ``hparam/test/acc`` the table cell)."""
    out = {
        "hparam/best_valid_score": summary.get("best_valid_score"),
        "hparam/completed": 1.0 if summary.get("status") == "completed" else 0.0,
        "hparam/params": summary.get("params"),
        "hparam/wall_time_s": summary.get("wall_time_s"),
    }
    out.update({f"hparam/test/{k}": v for k, v in (summary.get("test") or {}).items()})
    return {
        k: float(v)
        for k, v in out.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }


def hparams_of(config: dict, setting: dict) -> dict:
    """TensorBoard accepts str/int/float/bool hparams only; norm options (C, k, ...) and the
    varied setting are flattened beside the run's coordinates."""
    hp = {
        "task": config["task"]["name"],
        "norm": config["norm"]["name"],
        "seed": config["seed"],
        "scale": config.get("scale"),
        "lr": config["task"].get("train", {}).get("lr"),
    }
    hp.update({f"norm.{k}": v for k, v in (config["norm"].get("options") or {}).items()})
    hp.update(setting)
    return {k: v for k, v in hp.items() if isinstance(v, (str, int, float, bool))}


@register_logger("tensorboard")
def build(run: LoggerRun) -> TensorBoardLogger:
    return TensorBoardLogger(run.run_dir, hparams_of(run.config, run.setting), purge_step=run.step)
