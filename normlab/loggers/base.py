"""The logger protocol (``log(metrics, step)``, ``close(exit_code, summary)``), the local writer,
the fan-out, and the naming shared by every backend (run name, tags, flattened summary)."""
from __future__ import annotations

from typing import Optional

from ..rundir import Curves

# Overrides that pick *what* runs or *where*, not a varied hyperparameter of the experiment: these
# keys exactly (the task/norm groups, seed, ...) and everything under the runtime sections.
NOT_A_SETTING = ("task", "norm", "seed", "scale", "name", "experiment", "threads", "progress", "device",
                 "deterministic")
RUNTIME_SECTIONS = ("paths", "logger", "hydra")


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
    return {(k if split is None or k == "epoch" or "/" in k else f"{split}/{k}"): v
            for k, v in metrics.items() if k != "split"}


def setting_from_overrides(overrides: Optional[list[str]]) -> dict:
    """The varied hyperparameters of a job from its command-line overrides, keyed by their last
    component (``task.train.lr=0.001`` -> {"lr": 0.001}); used until the config provides them."""
    import yaml
    setting = {}
    for o in overrides or []:
        if "=" not in o or o.startswith("~"):
            continue
        key, value = o.lstrip("+~").split("=", 1)
        if key in NOT_A_SETTING or key.split(".")[0].split("/")[0] in RUNTIME_SECTIONS:
            continue
        try:
            setting[key.rsplit(".", 1)[-1]] = yaml.safe_load(value)
        except yaml.YAMLError:
            setting[key.rsplit(".", 1)[-1]] = value
    return setting


def check_setting(setting) -> dict:
    if setting is None:
        return {}
    if not isinstance(setting, dict):
        raise ValueError(f"setting must be a dict of varied hyperparameters like {{'C': 2}}, got {setting!r}")
    bad = {k: v for k, v in setting.items() if not isinstance(v, (str, int, float, bool, type(None)))}
    if bad:
        raise ValueError(f"setting values must be plain scalars (str, int, float, bool), got {bad}")
    return dict(setting)


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
