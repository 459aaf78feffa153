"""Which code and machine produced something: the checkout's commit, whether the code has
uncommitted changes, and the machine. A leaf: runs record it in summary.json, reports and
benchmarks in what they write, and a study pins its grid with it."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# The code a run or a report imports; uncommitted changes elsewhere (docs, results being written)
# change neither.
CODE = ("normlab", "hydra_plugins", "scripts")


class GitError(RuntimeError):
    """A git command failed (not a checkout, no git, an unknown commit); the message says which."""


def git(*args: str, cwd: Path = REPO) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if out.returncode:
        raise GitError(f"git {' '.join(args)} failed in {cwd}: {out.stderr.strip()}")
    return out.stdout.strip()


def head() -> str:
    return git("rev-parse", "HEAD")


def dirty(cwd: Path = REPO) -> bool:
    """Uncommitted changes to tracked files under CODE."""
    return bool(git("status", "--porcelain", "--untracked-files=no", "--", *CODE, cwd=cwd))


def machine() -> dict:
    """Where runs were trained: host, CPU, memory, Python, torch and GPU."""
    info = {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    try:
        cpu = [
            ln.split(":", 1)[1].strip()
            for ln in open("/proc/cpuinfo")
            if ln.startswith("model name")
        ]
        info["cpu"] = cpu[0] if cpu else platform.processor()
        mem = [ln.split()[1] for ln in open("/proc/meminfo") if ln.startswith("MemTotal")]
        info["memory_gb"] = round(int(mem[0]) / 2**20, 1) if mem else None
    except OSError:
        info["cpu"] = platform.processor()
    import torch

    info["torch"] = torch.__version__
    info["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return info
