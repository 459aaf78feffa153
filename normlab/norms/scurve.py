"""The S-curve probe of DyT's Figure 2 (Zhu et al. 2025): what a trained model's norm layers do
to their inputs, element by element, input against output.

For ``layers`` norm layers spread over the depth (the first, the last and evenly between, in the
order the forward pass calls them), a forward pass of the model on fixed inputs records each
layer's input and output; a sample of
``channels`` channels (the same for every layer, seeded) keeps up to ``points`` (input, output)
pairs per layer, spread over the channels. The output is the module's, gain and bias included,
so a LayerNorm's curve shows its learned affine and a DyT's is exactly gamma_c tanh(alpha x) +
beta_c. ``normlab.run.scurve_figure`` draws the record; the runner writes both at the end of a
run with ``task.train.scurve`` > 0.
"""

from __future__ import annotations

import torch
from torch import nn

from .registry import NORM_TYPES


def spread(names: list[str], layers: int) -> list[str]:
    """``layers`` of ``names`` (in the order of depth), evenly spaced, first and last kept."""
    if layers >= len(names):
        return list(names)
    if layers == 1:
        return [names[-1]]
    step = (len(names) - 1) / (layers - 1)
    return [names[round(i * step)] for i in range(layers)]


def _run(model: nn.Module, inputs: tuple, hooks: dict) -> None:
    modules = dict(model.named_modules())
    handles = [modules[n].register_forward_hook(h) for n, h in hooks.items()]
    was = model.training
    model.eval()
    try:
        model(*inputs)
    finally:
        model.train(was)
        for h in handles:
            h.remove()


def call_order(model: nn.Module, inputs: tuple) -> list[str]:
    """The norm layers in the order the forward pass calls them first: the order of depth (a
    module's registration order is not: a layer registers its FFN norm before its attention's)."""
    order: list[str] = []

    def hook(name):
        return lambda mod, args, out: order.append(name) if name not in order else None

    names = [n for n, m in model.named_modules() if isinstance(m, NORM_TYPES) and n]
    _run(model, inputs, {n: hook(n) for n in names})
    return order


@torch.no_grad()
def collect(
    model: nn.Module,
    inputs: tuple,
    layers: int,
    points: int = 2000,
    channels: int = 8,
    seed: int = 0,
) -> dict:
    """{"layers": [{"name", "index", "of", "x", "y", "channel"}], "channels": [...]} for one
    forward pass of ``model(*inputs)`` in eval mode (no dropout); x, y, channel are lists."""
    every = call_order(model, inputs)
    names = spread(every, layers)
    seen: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    def hook(name):
        def fn(mod, args, out):
            if name not in seen and args and isinstance(args[0], torch.Tensor):
                cf = getattr(mod, "channels_first", False)
                x, y = (t.detach().float() for t in (args[0], out))
                if cf:
                    x, y = x.movedim(1, -1), y.movedim(1, -1)
                seen[name] = (x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1]))

        return fn

    _run(model, inputs, {n: hook(n) for n in names})
    g = torch.Generator().manual_seed(seed)
    out, picked = [], None
    for n in names:
        if n not in seen:
            continue
        x, y = seen[n]
        if picked is None:
            picked = torch.randperm(x.shape[1], generator=g)[: min(channels, x.shape[1])].sort()[0]
        per = max(1, points // len(picked))
        xs, ys, cs = [], [], []
        for c in picked.tolist():
            rows = torch.randperm(x.shape[0], generator=g)[:per]
            xs += x[rows, c].tolist()
            ys += y[rows, c].tolist()
            cs += [c] * len(rows)
        out.append(
            {"name": n, "index": every.index(n), "of": len(every), "x": xs, "y": ys, "channel": cs}
        )
    return {"layers": out, "channels": [] if picked is None else picked.tolist()}
