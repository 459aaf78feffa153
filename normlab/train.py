"""Hydra entry point (``normlab-train``): compose, run one job, report. The loop is trainer.py."""
from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from .runner import USER_ERRORS, run


# An absolute path: Hydra would resolve "../configs" against the package, not the repository.
CONFIGS = str(Path(__file__).resolve().parents[1] / "configs")


@hydra.main(version_base="1.3", config_path=CONFIGS, config_name="train")
def main(cfg: DictConfig) -> str:
    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    run_dir = Path(hc.runtime.output_dir)
    try:
        return run(cfg, run_dir, list(hc.overrides.task))["status"]
    except USER_ERRORS as e:
        print(f"normlab: error: {e}", file=sys.stderr)
        if multirun:  # the sweep goes on; SweepSummary counts this job as failed
            from .callbacks import record_failure
            record_failure(run_dir, cfg, e)
            return "failed"
        sys.exit(2)
    except Exception:
        if multirun:  # run() already wrote status "failed" and traceback.txt where it could
            import traceback
            traceback.print_exc()
            from .callbacks import record_failure
            record_failure(run_dir, cfg, sys.exc_info()[1])
            return "failed"
        raise


if __name__ == "__main__":
    main()
