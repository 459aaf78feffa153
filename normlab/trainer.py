"""The training loop: steps, evaluation, best-checkpoint selection, exact resume, divergence.

State that decides the future of a run (model, optimizer, scheduler, RNG, data position, the
open logging window, the best score so far) lives in the checkpoint, so a run killed at any
moment and restarted produces the same curves as one that never stopped (CPU, deterministic).
"""
from __future__ import annotations

import contextlib
import math
import os
import signal
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import torch
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from . import distributed
from .norms import GradProbe
from .rundir import Checkpoints
from .schedule import build_optimizer, build_scheduler
from .tasks.base import Task, to_device


class Diverged(RuntimeError):
    """The training loss became NaN/inf or passed task.train.diverge_loss."""


class InjectedFault(RuntimeError):
    """Raised by a NORMLAB_FAULT ``raise`` spec (tests of the failure path)."""


FAULT_POINTS = ("loss", "step", "save", "eval")


def parse_faults(spec: Optional[str], run_dir: Path) -> dict:
    """Test-only fault injection from ``NORMLAB_FAULT``: comma-separated ``action:point:step[:match]``.

    action: ``kill`` (SIGKILL, a real kill -9 of this process), ``raise`` or ``nan`` (the loss
    becomes NaN); point: ``loss`` (before the divergence check), ``step`` (after the optimizer
    step, before the step is counted), ``save`` (between moving last.pt to prev.pt and moving the
    new file in), ``eval`` (after the valid record is logged, before any checkpoint); step: the
    training step it fires at; match: only in run directories whose path contains this text.
    """
    faults = {}
    for item in filter(None, (spec or "").split(",")):
        action, point, step, *match = item.strip().split(":", 3)
        if action not in ("kill", "raise", "nan") or point not in FAULT_POINTS:
            raise ValueError(f"NORMLAB_FAULT item {item!r}: want kill|raise|nan:{'|'.join(FAULT_POINTS)}:STEP")
        if not match or match[0] in str(run_dir):
            faults[point] = (action, int(step))
    return faults


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
                 device: torch.device, progress: bool = True, dist: Optional[distributed.Dist] = None):
        self.dist = dist or distributed.Dist(device=device)
        self.task, self.t, self.seed = task, t, seed
        self.module = model.to(device)       # the bare model: evaluation, checkpoints, probes
        self.model = self.module             # what the loss calls: DDP-wrapped in multi-process runs
        if self.dist.enabled:
            # static_graph: norms may own parameters the forward never uses (e.g. a disabled
            # gain); DDP learns the used set in the first step instead of erroring or searching.
            self.model = DistributedDataParallel(self.module, device_ids=[device] if device.type == "cuda" else None,
                                                 static_graph=True)
            # Model init used the same seed on every rank; dropout must differ per rank.
            torch.manual_seed(seed * 1_000_003 + self.dist.rank)
        # A task whose batches are not batch-first tensors provides its own shard(batch, rank, world).
        self.shard = getattr(task, "shard", distributed.shard)
        self.logger, self.device, self.progress = logger, device, progress
        self.ckpt = Checkpoints(run_dir)
        self.faults = parse_faults(os.environ.get("NORMLAB_FAULT"), run_dir)
        if "save" in self.faults:
            self.ckpt.before_replace = lambda: self._fault("save", self.state.step)
        self._epoch0 = task.train_batches(0, seed)  # counted here, trained on by fit()
        self.batches_per_epoch = len(self._epoch0)
        if self.batches_per_epoch == 0:
            raise ValueError(f"task {task.name} produced no training batches; check task.data.batch_size "
                             "and the training data")
        self.total_steps = t.max_steps or t.max_epochs * self.batches_per_epoch
        if self.total_steps <= 0:
            raise ValueError("set task.train.max_epochs or task.train.max_steps to a positive number")
        self.opt = build_optimizer(self.module, t)
        self.sched = build_scheduler(self.opt, t, self.total_steps)
        self.state = State()
        self.last_loss = float("nan")
        self.extra: dict = {}                # saved with every checkpoint (e.g. the wandb run id)

    def _fault(self, point: str, step: int, loss: Optional[torch.Tensor] = None):
        action, at = self.faults.get(point, (None, -1))
        if step != at:
            return loss
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if action == "raise":
            raise InjectedFault(f"NORMLAB_FAULT: injected failure at {point} of step {step}")
        return loss * float("nan") if loss is not None else loss

    # --- checkpoints -------------------------------------------------------------------------
    def _rng(self) -> tuple[list, list]:
        """Per-rank CPU and CUDA RNG states (a collective in multi-process runs)."""
        cpu = distributed.gather_cpu(self.dist, torch.get_rng_state())
        if self.device.type != "cuda":
            return cpu, []
        return cpu, distributed.gather_cpu(self.dist, torch.cuda.get_rng_state(self.device))

    def save(self) -> None:
        rng, cuda_rng = self._rng()  # every rank takes part; only rank 0 writes
        if not self.dist.main:
            return
        self.ckpt.save({
            "model": self.module.state_dict(), "optimizer": self.opt.state_dict(),
            "scheduler": self.sched.state_dict(), "state": vars(self.state).copy(),
            "rng": rng, "cuda_rng": cuda_rng, "world": self.dist.world,
            **self.extra,
        })

    def resume(self) -> Optional[dict]:
        """Load the newest complete checkpoint (rank 0 reads it and sends it to the others)."""
        ck = distributed.broadcast_state(self.dist, self.ckpt.load() if self.dist.main else None)
        if ck is None:
            return None
        self.module.load_state_dict(ck["model"])
        self.opt.load_state_dict(ck["optimizer"])
        self.sched.load_state_dict(ck["scheduler"])
        self.state = State(**ck["state"])
        r = self.dist.rank
        if ck.get("world", 1) == self.dist.world:
            torch.set_rng_state(ck["rng"][r])
            if ck["cuda_rng"] and self.device.type == "cuda":
                torch.cuda.set_rng_state(ck["cuda_rng"][r], self.device)
        else:  # a different process count cannot replay the same dropout masks anyway
            warnings.warn(f"checkpoint was written by {ck.get('world', 1)} process(es), this run has "
                          f"{self.dist.world}: resuming with fresh per-rank random streams")
            torch.manual_seed(self.seed * 1_000_003 + r + 7919 * self.state.step)
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
        self.module.eval()
        # Evaluation must not consume the training RNG stream, or resumed runs would differ.
        # Every rank evaluates the bare model on the whole split: the ranks hold identical
        # weights, so they reach the same best/early-stopping decisions without talking.
        rng = torch.get_rng_state()
        metrics = self.task.evaluate(self.module, "valid")
        torch.set_rng_state(rng)
        self.module.train()
        st.last_valid = metrics
        self.logger.log({"epoch": st.epoch, "split": "valid", **metrics}, st.step)
        if self.faults:
            self._fault("eval", st.step)
        score = self._score(metrics)
        if st.best is None or score > st.best:
            st.best, st.best_step, st.bad_evals = score, st.step, 0
            if self.dist.main:
                self.ckpt.save({"model": self.module.state_dict(), "step": st.step}, name="best.pt")
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
        t, st, d = self.t, self.state, self.dist
        probe_now = t.probe_every and (st.step + 1) % t.probe_every == 0
        probe = GradProbe(self.module) if probe_now else None
        batch = to_device(batch, self.device)
        if d.enabled:
            batch, real = self.shard(batch, d.rank, d.world)
        with probe if probe else contextlib.nullcontext():  # hooks only on probed steps
            loss, units = self.task.loss(self.model, batch)
            if self.faults:
                loss = self._fault("loss", st.step + 1, loss)
            if d.enabled:
                # The global mean decides divergence on every rank alike; the weight makes DDP's
                # gradient average equal the gradient of the whole batch's mean loss.
                value, total = distributed.global_loss(d, loss, units if real else 0)
                weight = d.world * units / total if real else 0.0
                units = total
            else:
                value, weight = loss.item(), None  # the one host sync per step
            if not math.isfinite(value) or value > t.diverge_loss:
                self._log_train({})  # keep the curve up to the last finite step
                raise Diverged(f"training loss {value} at step {st.step + 1} (task.train.diverge_loss="
                               f"{t.diverge_loss})")
            self.opt.zero_grad(set_to_none=True)
            (loss if weight is None else loss * weight).backward()
        if t.clip_norm:
            torch.nn.utils.clip_grad_norm_(self.module.parameters(), t.clip_norm)
        self.opt.step()
        self.sched.step()
        if self.faults:
            self._fault("step", st.step + 1)
        st.step += 1
        st.window["loss"] += value * units
        st.window["units"] += units
        st.window["steps"] += 1
        st.units += units
        return probe.pop() if probe else {}

    def fit(self) -> State:
        t, st = self.t, self.state
        self.module.train()
        bar = tqdm(total=self.total_steps, initial=st.step, disable=not self.progress, desc=self.task.name,
                   dynamic_ncols=True, leave=False)
        done = lambda: st.step >= self.total_steps or st.stopped_early  # noqa: E731
        while not done():
            # a pure function of (epoch, seed): epoch 0's batches are the ones __init__ counted
            batches = (self._epoch0 if st.epoch == 0 and self._epoch0 is not None
                       else self.task.train_batches(st.epoch, self.seed))
            self._epoch0 = None
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
