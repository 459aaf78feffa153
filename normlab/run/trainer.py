"""The training loop: steps, evaluation, best-checkpoint selection, exact resume, divergence.

State that decides the future of a run (model, optimizer, scheduler, RNG, data position, the
open logging window, the best score so far) lives in the checkpoint, so a run killed at any
moment and restarted produces the same curves as one that never stopped (CPU, deterministic).

A step is one optimizer update over ``task.train.update_freq`` consecutive micro-batches
(fairseq's gradient accumulation). Checkpoints are written only between steps, so a run stopped
inside an accumulation window resumes from the step before it and replays the whole window:
exact, with nothing of a half-accumulated gradient to save.
On CUDA the loop is lean: the loss stays on the device and the host reads it (and checks it for
NaN/inf and ``diverge_loss``) at logging steps, evaluations and checkpoints only.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import torch
from torch.nn.parallel import DistributedDataParallel

from ..norms import GradProbe, native
from ..progress import training_bar
from ..rundir import Checkpoints
from ..schema import default
from ..tasks.base import Task, to_device
from . import accel, distributed
from .checkpointing import CheckpointMixin
from .faults import InjectedFault, fire, parse_faults  # noqa: F401  (InjectedFault: re-exported)
from .schedule import build_optimizer, build_scheduler
from .stopsignals import StopSignals, status_of
from .window import Diverged, TrainWindow  # noqa: F401  (Diverged: re-exported)


class Preempted(RuntimeError):
    """A stop signal arrived and a checkpoint at the current step was written: ``status`` is
    "preempted" (SIGTERM/SIGUSR1: requeue the job) or "interrupted" (Ctrl-C)."""

    def __init__(self, message: str, status: str = "preempted"):
        super().__init__(message)
        self.status = status


@dataclass
class State:
    step: int = 0
    epoch: int = 0
    batch: int = 0  # next batch index within ``epoch``
    window: dict = field(default_factory=lambda: {"loss": 0.0, "units": 0, "steps": 0})
    best: Optional[float] = None  # best selection score (higher is better)
    best_step: int = 0
    bad_evals: int = 0  # evaluations without improvement (early stopping)
    train_time: float = 0.0
    units: int = 0
    last_valid: dict = field(default_factory=dict)
    stopped_early: bool = False


class Trainer(CheckpointMixin, TrainWindow):
    def __init__(
        self,
        task: Task,
        model: torch.nn.Module,
        t,
        seed: int,
        run_dir: Path,
        logger,
        device: torch.device,
        progress: bool = True,
        dist: Optional[distributed.Dist] = None,
        precision: str = default("precision"),
        compile: bool = False,
    ):
        self.dist = dist or distributed.Dist(device=device)
        self.task, self.t, self.seed = task, t, seed
        self.module = model.to(device)  # the bare model: evaluation, checkpoints, probes
        self.model = self.module  # what the loss calls: DDP-wrapped in multi-process runs
        if self.dist.enabled:
            # static_graph: norms may own parameters the forward never uses (e.g. a disabled
            # gain); DDP learns the used set in the first step instead of erroring or searching.
            self.model = DistributedDataParallel(
                self.module,
                device_ids=[device] if device.type == "cuda" else None,
                static_graph=True,
            )
            # Model init used the same seed on every rank; dropout must differ per rank.
            torch.manual_seed(seed * 1_000_003 + self.dist.rank)
        self.forward_model = accel.compile_model(self.model) if compile else self.model
        self.precision = precision
        self.scaler = accel.grad_scaler(precision, device)
        # one host sync per step is free on CPU and keeps its exact divergence step; not on CUDA
        self.lean = device.type == "cuda" and not self.dist.enabled
        self.prefetch = accel.Prefetch(lambda b: to_device(b, device), device)
        # A task whose batches are not batch-first tensors provides its own shard(batch, rank, world).
        self.shard = getattr(task, "shard", distributed.shard)
        self.logger, self.device, self.progress = logger, device, progress
        self.ckpt = Checkpoints(run_dir)
        self.faults = parse_faults(os.environ.get("NORMLAB_FAULT"), run_dir)
        if "save" in self.faults:
            self.ckpt.before_replace = lambda: fire(self.faults, "save", self.state.step)
        self._epoch0 = task.train_batches(0, seed)  # counted here, trained on by fit()
        self.batches_per_epoch = len(self._epoch0)
        if self.batches_per_epoch == 0:
            raise ValueError(
                f"task {task.name} produced no training batches; check task.data.batch_size "
                "and the training data"
            )
        self.steps_per_epoch = -(-self.batches_per_epoch // t.update_freq)  # a short last window
        self.total_steps = t.max_steps or t.max_epochs * self.steps_per_epoch
        if self.total_steps <= 0:
            raise ValueError(
                "set task.train.max_epochs or task.train.max_steps to a positive number"
            )
        self.opt = build_optimizer(self.module, t)
        self.sched = build_scheduler(self.opt, t, self.total_steps)
        self.state = State()
        self.last_loss = float("nan")
        self.extra: dict = {}  # saved with every checkpoint (e.g. the wandb run id)
        self.run_config: Optional[dict] = None  # config.yaml's content: a checkpoint's provenance
        self.stop = StopSignals(announce=self.dist.main)
        self._synced_once = False

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
            fire(self.faults, "eval", st.step)
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
    def _micro(self, batch):
        """(loss, value, units, local units) of one micro-batch, its backward not yet run: value
        and units are the global mean loss and unit count in multi-process runs."""
        d = self.dist
        real = True
        if d.enabled:
            batch, real = self.shard(batch, d.rank, d.world)
        with accel.autocast(self.precision, self.device):
            loss, units = self.task.loss(self.forward_model, batch)
        if self.faults:
            loss = fire(self.faults, "loss", self.state.step + 1, loss)
        if d.enabled:
            # The global mean decides divergence on every rank alike; the weight (world x local
            # units) makes DDP's gradient average the gradient of the window's mean loss.
            value, total = distributed.global_loss(d, loss, int(units) if real else 0)
            return loss, value, total, d.world * int(units) if real else 0.0
        if self.lean:
            return loss, loss.detach().double(), units, units
        units = int(units)
        return loss, loss.item(), units, units  # the one host sync per step

    def _step(self, *micro) -> dict:
        """One optimizer update over the micro-batches ``micro``: the gradient of the summed loss
        over their units divided by the units of all of them (fairseq's --update-freq)."""
        t, st, d = self.t, self.state, self.dist
        probe_now = t.probe_every and (st.step + 1) % t.probe_every == 0
        probe = GradProbe(self.module) if probe_now else None
        self.opt.zero_grad(set_to_none=True)
        ref = loss_sum = units_sum = 0
        with probe if probe else contextlib.nullcontext():  # hooks only on probed steps
            for i, batch in enumerate(micro):
                # DDP all-reduces gradients in the last micro-batch's backward only; static_graph
                # DDP must see one fully synchronised step of this process before any no_sync
                skip_sync = d.enabled and i < len(micro) - 1 and self._synced_once
                with self.model.no_sync() if skip_sync else contextlib.nullcontext():
                    loss, value, units, local = self._micro(to_device(batch, self.device))
                    if not self.lean and (not math.isfinite(value) or value > t.diverge_loss):
                        self._log_train({})  # keep the curve up to the last finite step
                        raise Diverged(
                            f"training loss {value} at step {st.step + 1} (task.train.diverge_loss="
                            f"{t.diverge_loss})"
                        )
                    # gradients are accumulated relative to the first micro-batch's units
                    if i == 0:
                        ref = units * len(micro)
                        ref = ref.clamp_min(1) if torch.is_tensor(ref) else max(ref, 1)
                    if len(micro) > 1 or d.enabled:
                        loss = loss * (local / ref)
                    (self.scaler.scale(loss) if self.scaler else loss).backward()
                loss_sum, units_sum = loss_sum + value * units, units_sum + units
        factor = None
        if len(micro) > 1:  # sum_i n_i L_i / ref  ->  sum_i n_i L_i / sum_i n_i
            factor = ref / (
                units_sum.clamp_min(1) if torch.is_tensor(units_sum) else max(units_sum, 1)
            )
        if self.scaler and (t.clip_norm or factor is not None):
            self.scaler.unscale_(self.opt)
        if factor is not None:
            torch._foreach_mul_(
                [p.grad for p in self.module.parameters() if p.grad is not None], factor
            )
        if t.clip_norm:
            torch.nn.utils.clip_grad_norm_(self.module.parameters(), t.clip_norm)
        if self.scaler:  # skips the update when the scaled gradients overflowed
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            self.opt.step()
        self.sched.step()
        if self.faults:
            fire(self.faults, "step", st.step + 1)
        st.step += 1
        self._synced_once = True
        st.window["loss"] += loss_sum
        st.window["units"] += units_sum
        st.window["steps"] += 1
        return probe.pop() if probe else {}

    def _on_signal(self, signum, frame) -> None:
        self.stop.handle(signum, frame)  # acted on after the current optimizer step

    def fit(self) -> State:
        t, st = self.t, self.state
        self.module.train()
        bar = training_bar(self.total_steps, st.step, self.task.name, self.progress)
        done = lambda: st.step >= self.total_steps or st.stopped_early  # noqa: E731
        with self.stop, contextlib.closing(bar):  # the handlers stay while a checkpoint is written
            while not done():
                # a pure function of (epoch, seed): epoch 0's batches are the ones __init__ counted
                batches = (
                    self._epoch0
                    if st.epoch == 0 and self._epoch0 is not None
                    else self.task.train_batches(st.epoch, self.seed)
                )
                self._epoch0 = None
                while st.batch < len(batches) and not done():
                    t0, built = time.perf_counter(), native.build_seconds()
                    end = min(st.batch + t.update_freq, len(batches))
                    probe_stats = self._step(
                        *(self.prefetch.get(batches, i) for i in range(st.batch, end))
                    )
                    # the first step on a machine may build the native kernels: set-up, not training
                    st.train_time += time.perf_counter() - t0 - (native.build_seconds() - built)
                    st.batch = end
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
                    if distributed.any_rank(self.dist, self.stop.signum is not None):
                        self.save()
                        sig = (
                            signal.Signals(self.stop.signum).name
                            if self.stop.signum
                            else "a signal on another rank"
                        )
                        raise Preempted(
                            f"{sig} at step {st.step}: checkpoint written; re-run the same command to "
                            "resume",
                            status_of(self.stop.signum),
                        )
                if st.batch >= len(batches):
                    st.epoch, st.batch = st.epoch + 1, 0
                    if not t.eval_every:
                        self._log_train({})
                        self.evaluate()
                        self.save()
            self._log_train({})
            # no evaluation happened yet (tiny budgets): evaluate the final model
            if st.best is None:
                self.evaluate()
            self.save()
        return st
