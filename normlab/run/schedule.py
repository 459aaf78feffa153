"""Optimizer and learning-rate schedules (fairseq's inverse_sqrt among them)."""

from __future__ import annotations

import math

import torch

from ..norms import param_groups
from ..schema import SCHEDULES


def build_optimizer(model: torch.nn.Module, t) -> torch.optim.Optimizer:
    """Adam or AdamW with weight decay only on matrices (normlab.norms.param_groups)."""
    if t.lr <= 0:
        raise ValueError(f"task.train.lr must be positive, got {t.lr}")
    if t.weight_decay < 0:
        raise ValueError(f"task.train.weight_decay must be >= 0, got {t.weight_decay}")
    groups = param_groups(model, t.weight_decay)
    kinds = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}
    if t.optimizer not in kinds:
        raise ValueError(f"task.train.optimizer must be one of {list(kinds)}, got {t.optimizer!r}")
    return kinds[t.optimizer](groups, lr=t.lr, betas=tuple(t.betas), eps=t.adam_eps)


def lr_lambda(kind: str, warmup: int, total: int, warmup_init: float = 0.0, min_ratio: float = 0.0):
    """Multiplier of the peak lr at optimizer step ``s`` (LambdaLR counts from 0)."""
    if kind not in SCHEDULES:
        raise ValueError(f"task.train.schedule must be one of {SCHEDULES}, got {kind!r}")

    def f(s: int) -> float:
        s = s + 1
        if warmup and s <= warmup:  # linear warm-up from warmup_init (a fraction of the peak)
            return warmup_init + (1.0 - warmup_init) * s / warmup
        if kind == "constant":
            return 1.0
        if kind == "inverse_sqrt":  # fairseq: lr * sqrt(warmup / step) after warm-up
            return max(min_ratio, math.sqrt(max(warmup, 1) / s))
        frac = min(1.0, (s - warmup) / max(1, total - warmup))
        if kind == "linear":
            return max(min_ratio, 1.0 - frac)
        return max(min_ratio, 0.5 * (1.0 + math.cos(math.pi * frac)))

    return f


def build_scheduler(opt: torch.optim.Optimizer, t, total_steps: int):
    return torch.optim.lr_scheduler.LambdaLR(
        opt, lr_lambda(t.schedule, t.warmup_steps, total_steps, t.warmup_init_ratio, t.min_lr_ratio)
    )
