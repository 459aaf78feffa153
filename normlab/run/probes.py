"""End-of-run probes a run writes beside its curves: the S-curve record and figure of its norm
layers (``task.train.scurve`` layers; normlab.norms.scurve, normlab.run.scurve_figure)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ..files import atomic_write_bytes
from ..norms.scurve import collect


def write_scurve(job, task, model: torch.nn.Module, run_dir: Path) -> Path:
    """scurve.json and figures/scurve.png of ``model`` (the tested, best checkpoint's) on the
    task's example inputs (the first test batch's first rows), ``job.train.scurve`` layers."""
    device = next(model.parameters()).device
    inputs = tuple(x.to(device) for x in task.example_inputs(8))
    norm = job.config["norm"]
    label = (norm.get("display") or {}).get("label") or norm["name"]
    title = f"{job.task.name} / {label} ({job.scale}), seed {job.seed}, best checkpoint"
    record = {"title": title, **collect(model, inputs, job.train.scurve, seed=job.seed)}
    atomic_write_bytes(Path(run_dir) / "scurve.json", json.dumps(record).encode())
    from .scurve_figure import from_run  # matplotlib, only for the runs that ask for the figure

    return from_run(run_dir)
