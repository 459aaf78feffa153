"""The test protocol of the findings, read once from normlab/configs/study/claims.yaml: alpha, the
equivalence margin of each metric, the overfitting regime's threshold, the margin a cell must beat
its trivial baselines by, the tasks declared outside the learning regime, the power of the minimum
detectable effect, and the results folders whose tests form one family."""

from __future__ import annotations

import functools
from typing import Optional

import yaml

from .roles import CONFIGS

CLAIMS_FILE = CONFIGS / "study" / "claims.yaml"


@functools.lru_cache(maxsize=1)
def settings() -> dict:
    d = yaml.safe_load(CLAIMS_FILE.read_text())
    for key in ("alpha", "margins", "regime_rise_pct", "trained_margin", "power", "family"):
        if key not in d:
            raise ValueError(f"{CLAIMS_FILE}: missing key '{key}'")
    return d


def margin(metric: Optional[str]) -> Optional[float]:
    """The margin of ``metric`` (acc, bleu, bpc, uas, loss, gap): the smallest effect of interest;
    None when none is declared."""
    m = settings()["margins"].get(metric or "")
    return None if m is None else float(m)


def trained_margin(metric: Optional[str]) -> float:
    """How much better than the best trivial baseline a cell's mean must be to count as trained."""
    return float(settings()["trained_margin"].get(metric or "", 0.0))


def futility() -> Optional[float]:
    """The declared futility floor (claims.yaml ``sequential.futility``); None: no such rule."""
    floor = (settings().get("sequential") or {}).get("futility")
    return None if floor is None else float(floor)


def not_learning(task: str, scale: str) -> str:
    """Why ``task`` at ``scale`` is declared outside the learning regime (claims.yaml), or ""."""
    return ((settings().get("not_learning") or {}).get(scale) or {}).get(task, "")


def margins_sentence() -> str:
    units = {
        "acc": "accuracy points",
        "bleu": "BLEU",
        "bpc": "bpc",
        "uas": "UAS points",
        "loss": "nats",
        "gap": "nats of generalization gap",
    }
    return (
        "Margins, the smallest effects of interest (normlab/configs/study/claims.yaml, each with "
        "its reason): "
        + ", ".join(f"±{v:g} {units.get(k, k)}" for k, v in settings()["margins"].items())
        + "."
    )
