"""What a run records of the code and software that produced it (summary.json)."""

from __future__ import annotations

import platform
from typing import Optional

import torch

from .. import __version__, gitinfo


def git_commit() -> Optional[str]:
    try:
        return gitinfo.head()
    except Exception:  # not a git checkout (an installed wheel), or no git
        return None


def git_dirty() -> Optional[bool]:
    """Uncommitted changes to the code the run imported (gitinfo.CODE); None outside a git checkout."""
    try:
        return gitinfo.dirty()
    except Exception:
        return None


def versions() -> dict:
    import hydra

    return {
        "normlab": __version__,
        "torch": torch.__version__,
        "hydra": hydra.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
