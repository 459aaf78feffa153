"""Which seeds select and which evaluate (normlab/configs/study/seeds.yaml), and each run's role.

A run records its role in summary.json (``seed_role``, set by the study drivers with the config
key of the same name). Runs of the selection record were trained before roles were recorded: their
role follows from their seed and the declared lists. A run with neither (a user's own sweep) has no
role and is reported like any other run.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Iterable, Optional

import yaml

# normlab.config's CONFIGS, without importing it: the report reads roles and must start without torch
CONFIGS = Path(__file__).resolve().parents[1] / "configs"
SEEDS_FILE = CONFIGS / "study" / "seeds.yaml"
SELECTION, EVALUATION = "selection", "evaluation"


@functools.lru_cache(maxsize=1)
def declared() -> dict:
    """{"selection": [...], "evaluation": [...], "record_commit": str}"""
    d = yaml.safe_load(SEEDS_FILE.read_text())
    overlap = set(d["selection"]) & set(d["evaluation"])
    if overlap:
        raise ValueError(
            f"{SEEDS_FILE}: seeds {sorted(overlap)} are both selection and evaluation seeds"
        )
    return d


def selection_seeds() -> list[int]:
    return list(declared()["selection"])


def evaluation_seeds() -> list[int]:
    return list(declared()["evaluation"])


def role_for_seed(
    seed: int, selection: Optional[Iterable[int]] = None, evaluation: Optional[Iterable[int]] = None
) -> str:
    """The role a study gives ``seed``; ValueError for a seed in neither list."""
    selection = selection_seeds() if selection is None else list(selection)
    evaluation = evaluation_seeds() if evaluation is None else list(evaluation)
    if seed in selection:
        return SELECTION
    if seed in evaluation:
        return EVALUATION
    raise ValueError(
        f"seed {seed} is neither a selection seed {selection} nor an evaluation seed {evaluation} "
        f"({SEEDS_FILE.relative_to(CONFIGS.parents[1])}); add it to one of them"
    )


def role_of(summary: dict) -> Optional[str]:
    """A run's role: the one it recorded, else (the selection record's runs) the declared one."""
    if summary.get("seed_role"):
        return summary["seed_role"]
    commit = summary.get("git_commit") or ""
    if (
        commit
        and commit == declared().get("record_commit")
        and isinstance(summary.get("seed"), int)
    ):
        return SELECTION if summary["seed"] in selection_seeds() else EVALUATION
    return None


def reported(runs: list) -> list:
    """The runs a report may use: every run but the selection runs."""
    return [r for r in runs if role_of(r.summary) != SELECTION]


def selection_runs(runs: list) -> list:
    return [r for r in runs if role_of(r.summary) == SELECTION]
