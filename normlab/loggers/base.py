"""The logger protocol (``log(metrics, step)``, ``close(exit_code, summary)``), the local writer,
the fan-out, and the naming shared by every backend (run name, tags, flattened summary)."""

from __future__ import annotations

import json
from typing import Optional

from ..rundir import Curves


class LocalLogger:
    """curves.jsonl: always on, the source of truth for the report's tables and figures."""

    def __init__(self, curves: Curves):
        self.curves = curves

    def log(self, metrics: dict, step: int) -> None:
        self.curves.append({"step": step, **metrics})

    def close(self, exit_code: int = 0, summary: Optional[dict] = None) -> None:
        pass


class MultiLogger:
    def __init__(self, *loggers):
        self.loggers = [lg for lg in loggers if lg is not None]

    def log(self, metrics: dict, step: int) -> None:
        for lg in self.loggers:
            lg.log(metrics, step)

    def close(self, exit_code: int = 0, summary: Optional[dict] = None) -> None:
        for lg in self.loggers:
            lg.close(exit_code, summary)


def split_keys(metrics: dict) -> dict:
    """Curve records to the names every backend shows: {"split": "valid", "loss": x} -> {"valid/loss": x}."""
    split = metrics.get("split")
    return {
        (k if split is None or k == "epoch" or "/" in k else f"{split}/{k}"): v
        for k, v in metrics.items()
        if k != "split"
    }


def check_setting(setting) -> dict:
    if setting is None:
        return {}
    if not isinstance(setting, dict):
        raise ValueError(
            f"setting must be a dict of varied hyperparameters like {{'C': 2}}, got {setting!r}"
        )
    # lists and dicts (task.model.channels=[4,8]) become their JSON text: tags and hparams are scalars
    return {
        k: v
        if isinstance(v, (str, int, float, bool, type(None)))
        else json.dumps(v, separators=(",", ":"))
        for k, v in setting.items()
    }


def run_name(task: str, norm: str, seed: int, setting: dict) -> str:
    """``rt-adanorm-1``, or with varied hyperparameters ``rt-adanorm-C=2-lr=0.001-1``: the seed stays
    last so that a sorted run list puts the seeds of one setting together."""
    return "-".join([task, norm, *(f"{k}={v}" for k, v in setting.items()), str(seed)])


def setting_tags(setting: dict) -> list[str]:
    return [f"{k}={v}"[:64] for k, v in setting.items()]  # wandb refuses tags over 64 characters


def flatten(summary: dict, prefix: str = "") -> dict:
    """summary.json as flat scalar keys: {"throughput": {"tokens_per_s": 3.0}} -> {"throughput/tokens_per_s": 3.0};
    lists become one string, so that every value can be a wandb/TensorBoard summary scalar."""
    out = {}
    for k, v in summary.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "/"))
        elif isinstance(v, (list, tuple)):
            out[key] = " ".join(map(str, v))
        else:
            out[key] = v
    return out


def summary_for_backends(summary: dict) -> dict:
    """The flat summary for wandb/TensorBoard. The last validation record goes under ``last_valid/``
    so it never overwrites ``valid/<metric>``, which holds the *best* value (define_metric)."""
    s = dict(summary)
    s["last_valid"] = s.pop("valid", None) or {}
    return flatten(s)
