"""One job: resolve config, prepare the run directory, build task/model, fit, test, summarise."""
from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Optional

import torch
from omegaconf import DictConfig, OmegaConf

from . import __version__
from .config import ConfigError, resolve, same_experiment, train_config
from .loggers import LocalLogger, MultiLogger, WandbLogger
from .norms import norm_factory
from .rundir import Checkpoints, Curves, read_json, read_yaml, write_json, write_yaml
from .tasks import get_task_class
from .tasks.base import DataError
from .trainer import Diverged, Trainer

USER_ERRORS = (ConfigError, DataError)
FINAL = ("completed", "diverged")


def git_commit() -> Optional[str]:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                             text=True, timeout=5)
        return out.stdout.strip() or None
    except Exception:
        return None


def versions() -> dict:
    import hydra
    return {"normlab": __version__, "torch": torch.__version__, "hydra": hydra.__version__,
            "python": platform.python_version(), "platform": platform.platform()}


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def set_determinism(cfg: DictConfig) -> None:
    torch.manual_seed(cfg.seed)
    if cfg.get("threads"):
        torch.set_num_threads(int(cfg.threads))
    if cfg.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)


def prepare(cfg: DictConfig, run_dir: Path, overrides: Optional[list[str]] = None):
    """Everything that can fail on bad input, before anything is written to ``run_dir``."""
    job = resolve(cfg, overrides)
    task_cls = get_task_class(job.task.name)
    config = OmegaConf.to_container(job, resolve=True)
    old_cfg = run_dir / "config.yaml"
    if old_cfg.exists():
        diffs = same_experiment(read_yaml(old_cfg), config)
        if diffs:
            raise ConfigError(f"{run_dir} already holds a run with a different config (keys {diffs}); "
                              "use another name=... or paths.root=..., or delete that directory")
    data_dir = Path(job.paths.data_dir) / job.task.name
    task = task_cls(job.task, data_dir, Path(job.paths.cache_dir))
    task.setup()
    return job, config, task


def run(cfg: DictConfig, run_dir: Path, overrides: Optional[list[str]] = None) -> dict:
    """Train one (task, norm, seed) job in ``run_dir``; returns its summary.

    A completed or diverged run is skipped; an interrupted or failed one resumes from its last
    checkpoint. User errors (ConfigError, DataError) are raised before anything is written.
    """
    start = time.time()
    run_dir = Path(run_dir)
    summary_path = run_dir / "summary.json"
    if summary_path.exists() and read_json(summary_path).get("status") in FINAL:
        summary = read_json(summary_path)
        print(f"[normlab] {run_dir}: already {summary['status']}, skipped")
        return summary
    job, config, task = prepare(cfg, run_dir, overrides)
    set_determinism(job)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_yaml(run_dir / "config.yaml", config)
    curves = Curves(run_dir / "curves.jsonl")
    model = task.build_model(norm_factory(job.norm.name, **(job.norm.options or {})))
    trainer = Trainer(task, model, train_config(config["task"]["train"]), job.seed, run_dir, None,
                      pick_device(job.device), progress=job.progress)
    ck = trainer.resume()
    curves.truncate_after(trainer.state.step if ck else 0)
    wandb = None
    if job.logger.get("wandb"):
        wcfg = dict(job.logger)
        wcfg.setdefault("run_name", f"{job.task.name}-{job.norm.name}-{job.seed}")
        wandb = WandbLogger(wcfg, config, str(run_dir), run_id=(ck or {}).get("wandb_id"))
        trainer.extra["wandb_id"] = wandb.run_id
    trainer.logger = MultiLogger(LocalLogger(curves), wandb)
    status, error = "completed", None
    try:
        trainer.fit()
    except Diverged as e:
        status, error = "diverged", str(e)
    except Exception as e:
        status, error = "failed", f"{type(e).__name__}: {e}"
        (run_dir / "traceback.txt").write_text(traceback.format_exc())
    test = {}
    if status == "completed":
        best = Checkpoints(run_dir).load("best.pt")
        if best is not None:
            trainer.model.load_state_dict(best["model"])
        trainer.model.eval()
        with torch.no_grad():
            test = task.test(trainer.model, run_dir)
        trainer.logger.log({"epoch": trainer.state.epoch, "split": "test", **test}, trainer.state.step)
    st = trainer.state
    summary = {
        "status": status, "error": error, "task": job.task.name, "norm": job.norm.name,
        "norm_options": config["norm"].get("options") or {}, "seed": job.seed, "scale": job.scale,
        "name": job.name, "metric": task.metric, "higher_is_better": task.higher_is_better,
        "data": task.data_info, "steps": st.step, "epochs": st.epoch, "best_step": st.best_step,
        "stopped_early": st.stopped_early, "valid": st.last_valid, "test": test,
        "best_valid_score": st.best, "wall_time_s": (read_json(summary_path)["wall_time_s"]
                                                     if summary_path.exists() else 0.0) + time.time() - start,
        "train_time_s": st.train_time, "throughput": {f"{task.unit}_per_s": st.units / st.train_time
                                                      if st.train_time else 0.0},
        "params": sum(p.numel() for p in trainer.model.parameters()), "versions": versions(),
        "git_commit": git_commit(), "device": str(trainer.device), "argv": sys.argv,
    }
    write_json(summary_path, summary)
    if wandb is not None:
        wandb.log({f"summary/{k}": v for k, v in test.items()}, st.step)
    trainer.logger.close(0 if status == "completed" else 1)
    print(f"[normlab] {run_dir}: {status}; valid={st.last_valid} test={test}")
    return summary
