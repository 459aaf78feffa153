"""Optimizer parameter groups: weight decay only on matrices, never on 1-D tensors or scalars,
except the ones a norm's definition decays.

Gains, biases, DyT's alpha, ScaleNorm's g and every other tensor with dim() < 2 get no decay,
the same rule for every variant, so that the comparison between norms stays fair. A norm whose
paper decays some of its vectors as part of its definition (SeeDNorm's alpha and beta) marks
them with ``decayed``.
"""

from __future__ import annotations

from torch import nn

_MARK = "normlab_weight_decay"


def decayed(*params: nn.Parameter) -> None:
    """Mark vectors of a norm for weight decay (its definition asks for it)."""
    for p in params:
        setattr(p, _MARK, True)


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    decay, no_decay = [], []
    for p in model.parameters():
        if not p.requires_grad:
            continue
        (decay if p.dim() >= 2 or getattr(p, _MARK, False) else no_decay).append(p)
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return [g for g in groups if g["params"]]
