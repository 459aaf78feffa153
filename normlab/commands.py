"""normlab's commands, their one-line purpose, and the version line every one of them prints.

``python -m normlab`` lists the commands; ``<command> --version`` prints :func:`version_text`.
Versions are read from the installed packages' metadata, so ``--version`` does not import torch.
"""

from __future__ import annotations

import platform
from importlib import metadata

from . import __version__

COMMANDS = (
    (
        "normlab-train",
        "normlab.train:main",
        "train one (task, norm, scale, seed) job, or a --multirun sweep",
    ),
    (
        "normlab-tune",
        "normlab.tune:cli",
        "an Optuna search over any config keys, one normlab-train job per trial",
    ),
    (
        "normlab-eval",
        "normlab.evaluate:main",
        "re-compute a trained run's metrics from a checkpoint; translate a test set",
    ),
    (
        "normlab-export",
        "normlab.export:main",
        "a trained model that loads without normlab's training code",
    ),
    (
        "normlab-report",
        "normlab.make_report:main",
        "tables, findings and figures from run directories",
    ),
    (
        "normlab-data",
        "normlab.datacli:main",
        "where each task's data comes from, and a check of it against the reference copy",
    ),
    (
        "normlab-wandb-dashboard",
        "normlab.campaigns.xu2019.wandb_dashboard:main",
        "the paper's panels as a wandb Report, built in code",
    ),
)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def version_text() -> str:
    return (
        f"normlab {__version__} (torch {_version('torch')}, hydra-core {_version('hydra-core')}, "
        f"Python {platform.python_version()})"
    )


def main() -> int:
    width = max(len(name) for name, _, _ in COMMANDS)
    print(version_text())
    print("\ncommands (each has --help and --version):")
    for name, _, what in COMMANDS:
        print(f"  {name:<{width}}  {what}")
    print(
        "\nstart with: normlab-train task=rt norm=adanorm scale=mini   (README.md, docs/running.md)"
    )
    return 0
