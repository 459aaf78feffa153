"""Checkpoint save and resume of the Trainer: everything that decides a run's future (model,
optimizer, scheduler, loss scale, RNG per rank, data position, open logging window, best score),
so a resumed run equals one that never stopped (CPU, deterministic)."""

from __future__ import annotations

import warnings
from typing import Optional

import torch

from ..errors import CheckpointError
from ..experiment import same_experiment
from . import distributed


class CheckpointMixin:
    def _rng(self) -> tuple[list, list]:
        """Per-rank CPU and CUDA RNG states (a collective in multi-process runs)."""
        cpu = distributed.gather_cpu(self.dist, torch.get_rng_state())
        if self.device.type != "cuda":
            return cpu, []
        return cpu, distributed.gather_cpu(self.dist, torch.cuda.get_rng_state(self.device))

    def save(self) -> None:
        self._check_window()  # never checkpoint past an unchecked NaN (lean loop)
        rng, cuda_rng = self._rng()  # every rank takes part; only rank 0 writes
        if not self.dist.main:
            return
        state = vars(self.state).copy()
        state["window"] = {
            k: float(v) if torch.is_tensor(v) else v for k, v in state["window"].items()
        }
        self.ckpt.save(
            {
                # whose checkpoint this is: a resume refuses another run's (seed, config)
                "provenance": {
                    "seed": self.seed,
                    "step": self.state.step,
                    "config": self.run_config,
                },
                "model": self.module.state_dict(),
                "optimizer": self.opt.state_dict(),
                "scheduler": self.sched.state_dict(),
                "state": state,
                "rng": rng,
                "cuda_rng": cuda_rng,
                "world": self.dist.world,
                **({"scaler": self.scaler.state_dict()} if self.scaler else {}),
                **self.extra,
            }
        )

    def _check_provenance(self, ck: dict, where) -> None:
        """CheckpointError, one line, for a checkpoint that cannot be this run's: a model-only one
        (best.pt's kind), or one written by another seed or for another config. Checkpoints
        written before they recorded this are checked by their weights only."""
        if "optimizer" not in ck or "state" not in ck:
            raise CheckpointError(
                f"{where}: a model-only checkpoint (best.pt's kind) cannot resume training: move "
                f"it out of {self.ckpt.dir}, or re-run with resume=restart"
            )
        prov = ck.get("provenance") or {}
        if "seed" in prov and prov["seed"] != self.seed:
            raise CheckpointError(
                f"{where}: written by a run of seed {prov['seed']}, this run is seed {self.seed}: "
                "move it away, or re-run with resume=restart"
            )
        if prov.get("config") and self.run_config:
            diffs = same_experiment(prov["config"], self.run_config)
            if diffs:
                raise CheckpointError(
                    f"{where}: written for another config (keys {diffs[:4]}): move it away, or "
                    "re-run with resume=restart"
                )

    def resume(self) -> Optional[dict]:
        """Load the newest complete checkpoint (rank 0 reads it and sends it to the others)."""
        ck = distributed.broadcast_state(self.dist, self.ckpt.load() if self.dist.main else None)
        if ck is None:
            return None
        where = self.ckpt.loaded or self.ckpt.last
        self._check_provenance(ck, where)
        try:
            self.module.load_state_dict(ck["model"])
        except RuntimeError as e:
            raise CheckpointError(
                f"{where}: its weights do not fit this run's model ({str(e).splitlines()[0]}); it "
                "belongs to another norm or size: move it away, or re-run with resume=restart"
            ) from None
        self.opt.load_state_dict(ck["optimizer"])
        self.sched.load_state_dict(ck["scheduler"])
        if self.scaler and ck.get("scaler"):
            self.scaler.load_state_dict(ck["scaler"])
        self.state = type(self.state)(**ck["state"])
        r = self.dist.rank
        if ck.get("world", 1) == self.dist.world:
            torch.set_rng_state(ck["rng"][r])
            if ck["cuda_rng"] and self.device.type == "cuda":
                torch.cuda.set_rng_state(ck["cuda_rng"][r], self.device)
        else:  # a different process count cannot replay the same dropout masks anyway
            warnings.warn(
                f"checkpoint was written by {ck.get('world', 1)} process(es), this run has "
                f"{self.dist.world}: resuming with fresh per-rank random streams",
                stacklevel=2,
            )
            torch.manual_seed(self.seed * 1_000_003 + r + 7919 * self.state.step)
        return ck
