"""The open logging window of the training loop: the loss and units of the steps since the last
train record, turned into one record (mean loss, lr, throughput) at logging steps, and the
divergence check of the lean CUDA loop, which reads the device-side loss only there."""

from __future__ import annotations

import math

import torch


class Diverged(RuntimeError):
    """The training loss became NaN/inf or passed task.train.diverge_loss."""


class TrainWindow:
    """Mixed into the Trainer: needs ``state``, ``t``, ``opt``, ``task`` and ``logger``."""

    def _check_window(self) -> None:
        """Lean loop: read the open window's device-side loss (one host sync) and stop on NaN/inf
        or a mean above diverge_loss, before anything is logged or checkpointed."""
        st, w = self.state, self.state.window
        if not (torch.is_tensor(w["loss"]) or torch.is_tensor(w["units"])):
            return
        w["loss"], w["units"] = float(w["loss"]), int(w["units"])
        value = w["loss"] / max(w["units"], 1)
        if not math.isfinite(value) or value > self.t.diverge_loss:
            raise Diverged(
                f"mean training loss {value} over steps {st.step - w['steps'] + 1}-{st.step} "
                f"(task.train.diverge_loss={self.t.diverge_loss}; checked at logging steps on CUDA)"
            )

    def _log_train(self, extra: dict) -> None:
        st, w = self.state, self.state.window
        if not w["steps"]:
            return
        self._check_window()
        st.units += w["units"]
        rate = st.units / st.train_time if st.train_time else 0.0
        rec = {
            "epoch": st.epoch,
            "split": "train",
            "loss": w["loss"] / w["units"],
            "lr": self.opt.param_groups[0]["lr"],
            f"{self.task.unit}_per_s": rate,
            **extra,
        }
        self.logger.log(rec, st.step)
        self.last_loss = rec["loss"]
        st.window = {"loss": 0.0, "units": 0, "steps": 0}
