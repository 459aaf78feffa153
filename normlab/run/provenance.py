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


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux, else what platform knows)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    """Which machine trained the run: the same commit, seed and config train to different numbers
    on CPUs whose kernels use other instruction sets (AVX2 against AVX-512), so a claim's paired
    runs must share one, and the report checks that they do."""
    from ..norms import native

    return {
        "cpu": cpu_model(),
        "isa": torch.backends.cpu.get_cpu_capability(),
        "native_kernels": native.describe(),
        "threads": torch.get_num_threads(),
    }
