"""Optimizer parameter groups: weight decay only on matrices, never on 1-D tensors or scalars.

Gains, biases, DyT's alpha, ScaleNorm's g and every other tensor with dim() < 2 get no decay,
the same rule for every variant, so that the comparison between norms stays fair.
"""

from __future__ import annotations

from torch import nn


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    decay, no_decay = [], []
    for p in model.parameters():
        if not p.requires_grad:
            continue
        (decay if p.dim() >= 2 else no_decay).append(p)
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return [g for g in groups if g["params"]]
