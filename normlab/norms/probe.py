"""Gradient-statistics probe for Theorem 1 of Xu et al. (2019).

For every norm layer it records, per backward pass, the mean and variance over the hidden
dimension of dl/d(output) and dl/d(input), averaged over tokens. LN-simple should show an input
gradient with zero mean per token ("re-centring") and a smaller variance than D_g / sigma^2
("re-scaling"); DetachNorm shows neither.
"""
from __future__ import annotations

from collections import defaultdict

import torch
from torch import nn

from .registry import NORM_TYPES

STATS = ("mean", "absmean", "var")


def grad_stats(g: torch.Tensor, channels_first: bool = False) -> dict[str, float]:
    """Per-token mean/var over the hidden dim, averaged over tokens (var: population)."""
    g = g.detach().double()
    if channels_first:
        g = g.movedim(1, -1)
    g = g.reshape(-1, g.shape[-1])
    m = g.mean(-1)
    v = g.var(-1, unbiased=False)
    mean, absmean, var = torch.stack([m.mean(), m.abs().mean(), v.mean()]).tolist()  # one sync, not three
    return {"mean": mean, "absmean": absmean, "var": var}


class GradProbe:
    """Context manager: ``with GradProbe(model) as probe: loss.backward(); probe.pop()``."""

    def __init__(self, model: nn.Module):
        self.layers = {n: m for n, m in model.named_modules() if isinstance(m, NORM_TYPES) and n}
        self._handles = []
        self._sums: dict[str, float] = defaultdict(float)
        self._counts: dict[str, int] = defaultdict(int)

    def _hook(self, name, module):
        cf = getattr(module, "channels_first", False)

        def hook(mod, grad_input, grad_output):
            for side, grads in (("out", grad_output), ("in", grad_input)):
                g = grads[0] if grads else None
                if g is None:
                    continue
                for k, v in grad_stats(g, cf).items():
                    key = f"grad/{name}/{side}_{k}"
                    self._sums[key] += v
                    self._counts[key] += 1
        return hook

    def __enter__(self):
        for name, m in self.layers.items():
            self._handles.append(m.register_full_backward_hook(self._hook(name, m)))
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def pop(self) -> dict[str, float]:
        """Averages since the last pop, keyed ``grad/<layer>/<in|out>_<mean|absmean|var>``,
        plus ``grad/all/...`` averaged over layers."""
        out = {k: self._sums[k] / self._counts[k] for k in self._sums}
        agg: dict[str, list[float]] = defaultdict(list)
        for k, v in out.items():
            agg["grad/all/" + k.rsplit("/", 1)[1]].append(v)
        out.update({k: sum(v) / len(v) for k, v in agg.items()})
        self._sums.clear()
        self._counts.clear()
        return out
