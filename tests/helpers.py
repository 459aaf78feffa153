"""Shared test helpers: compose the real Hydra config, run a job in-process or through the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir

from normlab.config import CONFIGS

REPO = Path(__file__).resolve().parents[1]
# Preprocessed-data cache shared by all tests: keys include the source files and options, so
# sharing is safe, and it keeps IMDB's tokenization from running once per test.
TEST_CACHE = Path(os.environ.get("NORMLAB_TEST_CACHE", REPO / ".cache" / "tests"))


def compose_cfg(overrides: list[str], tmp_path: Path, data_dir: Path | None = None):
    """The composed train config with run/cache paths under tmp_path (no Hydra runtime needed)."""
    paths = [
        f"paths.root={tmp_path / 'runs'}",
        f"paths.cache_dir={TEST_CACHE}",
        f"paths.data_dir={data_dir or tmp_path / 'data'}",
    ]
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose("train", overrides=["progress=false", *paths, *overrides])


def run_job(
    overrides: list[str], tmp_path: Path, data_dir: Path | None = None, run_dir: Path | None = None
):
    """Run one job in-process; returns (summary, run_dir)."""
    from normlab.run.runner import run

    cfg = compose_cfg(overrides, tmp_path, data_dir)
    run_dir = run_dir or tmp_path / "runs" / "job"
    return run(cfg, run_dir, overrides), run_dir


def run_cli(
    args: list[str],
    tmp_path: Path,
    data_dir: Path | None = None,
    timeout: int = 600,
    check: bool = True,
) -> subprocess.CompletedProcess:
    """``python -m normlab.train ARGS`` with paths under tmp_path; output captured."""
    env = {**os.environ, "NORMLAB_CACHE": str(TEST_CACHE)}
    if data_dir is not None:
        env["NORMLAB_DATA"] = str(data_dir)
    cmd = [
        sys.executable,
        "-m",
        "normlab.train",
        "progress=false",
        f"paths.root={tmp_path / 'runs'}",
        *args,
    ]
    out = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    if check and out.returncode != 0:
        raise AssertionError(
            f"{cmd} exited {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        )
    return out


def run_path(tmp_path: Path, overrides: list[str]) -> Path:
    """The run directory ``normlab-train`` picks for ``overrides`` under ``tmp_path/runs``: the
    setting segment (normlab.setting) names what the overrides vary."""
    from normlab.tune import run_dir_of

    return run_dir_of([f"paths.root={tmp_path / 'runs'}", *overrides])
