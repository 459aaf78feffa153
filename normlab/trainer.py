"""The training loop: steps, evaluation, best-checkpoint selection, exact resume, divergence.

State that decides the future of a run (model, optimizer, scheduler, RNG, data position, the
open logging window, the best score so far) lives in the checkpoint, so a run killed at any
moment and restarted produces the same curves as one that never stopped (CPU, deterministic).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import torch
from tqdm import tqdm

from .norms import GradProbe
from .rundir import Checkpoints
from .schedule import build_optimizer, build_scheduler
from .tasks.base import Task, to_device


class Diverged(RuntimeError):
    """The training loss became NaN/inf or passed task.train.diverge_loss."""


@dataclass
class State:
    step: int = 0
    epoch: int = 0
    batch: int = 0                       # next batch index within ``epoch``
    window: dict = field(default_factory=lambda: {"loss": 0.0, "units": 0, "steps": 0})
    best: Optional[float] = None         # best selection score (higher is better)
    best_step: int = 0
    bad_evals: int = 0                   # evaluations without improvement (early stopping)
    train_time: float = 0.0
    units: int = 0
    last_valid: dict = field(default_factory=dict)
    stopped_early: bool = False


class Trainer:
    def __init__(self, task: Task, model: torch.nn.Module, t, seed: int, run_dir: Path, logger,
                 device: torch.device, progress: bool = True):
        self.task, self.model, self.t, self.seed = task, model.to(device), t, seed
        self.logger, self.device, self.progress = logger, device, progress
        self.ckpt = Checkpoints(run_dir)
        self.batches_per_epoch = len(task.train_batches(0, seed))
        if self.batches_per_epoch == 0:
            raise ValueError(f"task {task.name} produced no training batches; check task.train.batch_size "
                             "and the training data")
        self.total_steps = t.max_steps or t.max_epochs * self.batches_per_epoch
        if self.total_steps <= 0:
            raise ValueError("set task.train.max_epochs or task.train.max_steps to a positive number")
        self.opt = build_optimizer(self.model, t)
        self.sched = build_scheduler(self.opt, t, self.total_steps)
        self.state = State()
        self.last_loss = float("nan")
        self.extra: dict = {}                # saved with every checkpoint (e.g. the wandb run id)

    # --- checkpoints -------------------------------------------------------------------------
    def save(self) -> None:
        self.ckpt.save({
            "model": self.model.state_dict(), "optimizer": self.opt.state_dict(),
            "scheduler": self.sched.state_dict(), "state": vars(self.state).copy(),
            "rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            **self.extra,
        })

    def resume(self) -> Optional[dict]:
        ck = self.ckpt.load()
        if ck is None:
            return None
        self.model.load_state_dict(ck["model"])
        self.opt.load_state_dict(ck["optimizer"])
        self.sched.load_state_dict(ck["scheduler"])
        self.state = State(**ck["state"])
        torch.set_rng_state(ck["rng"])
        if ck["cuda_rng"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(ck["cuda_rng"])
        return ck

    # --- evaluation --------------------------------------------------------------------------
    def _score(self, metrics: dict) -> float:
        if self.t.select == "loss":
            return -metrics["loss"]
        value = metrics[self.task.metric]
        return value if self.task.higher_is_better else -value

    @torch.no_grad()
    def evaluate(self) -> None:
        st = self.state
        self.model.eval()
        # Evaluation must not consume the training RNG stream, or resumed runs would differ.
        rng = torch.get_rng_state()
        metrics = self.task.evaluate(self.model, "valid")
        torch.set_rng_state(rng)
        self.model.train()
        st.last_valid = metrics
        self.logger.log({"epoch": st.epoch, "split": "valid", **metrics}, st.step)
        score = self._score(metrics)
        if st.best is None or score > st.best:
            st.best, st.best_step, st.bad_evals = score, st.step, 0
            self.ckpt.save({"model": self.model.state_dict(), "step": st.step}, name="best.pt")
        else:
            st.bad_evals += 1
            if self.t.patience and st.bad_evals >= self.t.patience:
                st.stopped_early = True

    # --- training ----------------------------------------------------------------------------
    def _log_train(self, extra: dict) -> None:
        st, w = self.state, self.state.window
        if not w["steps"]:
            return
        rate = st.units / st.train_time if st.train_time else 0.0
        rec = {"epoch": st.epoch, "split": "train", "loss": w["loss"] / w["units"],
               "lr": self.opt.param_groups[0]["lr"], f"{self.task.unit}_per_s": rate, **extra}
        self.logger.log(rec, st.step)
        self.last_loss = rec["loss"]
        st.window = {"loss": 0.0, "units": 0, "steps": 0}

    def _step(self, batch) -> dict:
        t, st = self.t, self.state
        probe_now = t.probe_every and (st.step + 1) % t.probe_every == 0
        probe = GradProbe(self.model) if probe_now else None
        batch = to_device(batch, self.device)
        if probe:
            probe.__enter__()
        try:
            loss, units = self.task.loss(self.model, batch)
            value = loss.item()
            if not math.isfinite(value) or value > t.diverge_loss:
                raise Diverged(f"training loss {value} at step {st.step + 1} (task.train.diverge_loss="
                               f"{t.diverge_loss})")
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
        finally:
            if probe:
                probe.__exit__(None, None, None)
        if t.clip_norm:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), t.clip_norm)
        self.opt.step()
        self.sched.step()
        st.step += 1
        st.window["loss"] += value * units
        st.window["units"] += units
        st.window["steps"] += 1
        st.units += units
        return probe.pop() if probe else {}

    def fit(self) -> State:
        t, st = self.t, self.state
        self.model.train()
        bar = tqdm(total=self.total_steps, initial=st.step, disable=not self.progress, desc=self.task.name,
                   dynamic_ncols=True, leave=False)
        done = lambda: st.step >= self.total_steps or st.stopped_early  # noqa: E731
        while not done():
            batches = self.task.train_batches(st.epoch, self.seed)
            while st.batch < len(batches) and not done():
                t0 = time.perf_counter()
                probe_stats = self._step(batches[st.batch])
                st.train_time += time.perf_counter() - t0
                st.batch += 1
                bar.update(1)
                if st.step % t.log_every == 0 or probe_stats:
                    self._log_train(probe_stats)
                    bar.set_postfix(loss=f"{self.last_loss:.3f}")
                if t.eval_every and st.step % t.eval_every == 0:
                    self._log_train({})
                    self.evaluate()
                    self.save()
                elif t.checkpoint_every and st.step % t.checkpoint_every == 0:
                    self.save()
            if st.batch >= len(batches):
                st.epoch, st.batch = st.epoch + 1, 0
                if not t.eval_every:
                    self._log_train({})
                    self.evaluate()
                    self.save()
        self._log_train({})
        if st.best is None:  # no evaluation happened yet (tiny budgets): evaluate the final model
            self.evaluate()
        self.save()
        bar.close()
        return st
