"""``make reproduce-table ... logger=wandb``: the results folder (tables, figures, report.md,
reproduce.json and the compact run copies) as one versioned wandb artifact, logged by a run of
job_type "report" in the sweep's group, so a dashboard links each table to the runs it came from."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Optional

from ..loggers.wandb_logger import wandb_mode


def wandb_options(overrides: list[str]) -> Optional[dict]:
    """The wandb settings a sweep's Hydra overrides ask for, or None when they leave wandb off
    (``logger=wandb``, ``logger=[wandb,...]``, ``logger=all`` or ``+logger.wandb=true`` turn it on)."""
    opts, on = {}, False
    for o in overrides:
        key, _, value = o.lstrip("+").partition("=")
        if key == "logger":
            on = bool({"wandb", "all"} & {v.strip() for v in value.strip("[]").split(",")})
        elif key == "logger.wandb":
            on = value.lower() == "true"
        elif key in ("logger.project", "logger.entity", "logger.mode"):
            opts[key.split(".", 1)[1]] = value
    return opts if on else None


def log_results(
    out: Path, scale: str, group: str, opts: dict, work_dir: Path, metadata: dict
) -> Optional[str]:
    """Log ``out`` as artifact ``normlab-results-<scale>``; wandb's own files go to ``work_dir``
    (not into the results folder). Best-effort like the training loggers: returns the run id, or
    None after saying why it failed."""
    try:
        import wandb

        mode = wandb_mode(opts.get("mode"))
        Path(work_dir).mkdir(parents=True, exist_ok=True)
        run = wandb.init(
            project=opts.get("project", "normlab"),
            entity=opts.get("entity") or None,
            group=group,
            job_type="report",
            name=f"results-{scale}",
            dir=str(work_dir),
            mode=mode,
            config={"scale": scale, **{k: v for k, v in metadata.items() if k == "grid"}},
            reinit="finish_previous",
        )
        art = wandb.Artifact(
            f"normlab-results-{scale}",
            type="results",
            metadata=metadata,
            description=f"Tables, figures and report of make reproduce-table (scale {scale})",
        )
        art.add_dir(str(out))
        run.log_artifact(art)
        run.summary.update({f"runs/{k}": v for k, v in metadata.get("runs", {}).items()})
        run_id = run.id
        run.finish()
        return run_id
    except Exception:
        print(
            f"[reproduce] wandb artifact failed; the results folder is complete without it:\n"
            f"{traceback.format_exc(limit=2)}",
            file=sys.stderr,
        )
        return None
