"""Gradient-statistics probe for Theorem 1 of Xu et al. (2019).

For every norm layer it records, per backward pass, the mean and variance over the hidden
dimension of dl/d(output) and dl/d(input), averaged over tokens. LN-simple should show an input
gradient with zero mean per token ("re-centring") and a smaller variance than D_g / sigma^2
("re-scaling"); DetachNorm shows neither.

Theorem 1's variance statement is about Var(dl/dx) against D_g / sigma^2, where sigma is the norm's
input standard deviation per token. Var(dl/dx) / Var(dl/dy) alone mostly measures 1/sigma^2 (the
input scale), so the probe also records sigma (a forward hook on the same layers) and the
sigma^2-weighted input-gradient variance mean_t(Var_t(dl/dx) * sigma_t^2): its ratio to the output
gradient's variance ("ratio_s2") is exactly 1 for DetachNorm (up to eps) and <= 1 for
LayerNorm-simple, token by token, whatever the input scale.

For the norms that squash their input by a scale alpha (DyT's tanh(alpha x), Derf's
erf(alpha x + s), BHyT's tanh(lambda x / (kappa RMS(x)))) it also records, per layer, alpha (BHyT:
lambda) and the share of the layer's input elements whose argument u is past the knee,
|u| > KNEE: there tanh' < 0.071 (erf' < 0.021), so those elements pass almost no gradient (the
saturation that DyT's issue #6 reports).
"""

from __future__ import annotations

from collections import defaultdict

import torch
from torch import nn

from ..schema import SATURATION_KNEE
from .registry import NORM_TYPES

STATS = ("mean", "absmean", "var")
KNEE = SATURATION_KNEE


def saturation(module: nn.Module, x: torch.Tensor) -> tuple[float, float] | None:
    """(alpha, share of input elements whose squashing function's argument is past the knee,
    |u| > KNEE) of a norm with a scalar ``alpha`` and a ``squash_input(x) -> u`` (DyT: alpha x;
    Derf: alpha x + s; BHyT: lambda x / (kappa RMS(x)), alpha its lambda), None for any other."""
    alpha = getattr(module, "alpha", None)
    squash = getattr(module, "squash_input", None)
    if not isinstance(alpha, torch.Tensor) or alpha.numel() != 1 or squash is None:
        return None
    x = x.detach().double()
    if getattr(module, "channels_first", False):  # the norm's features last, as its math sees them
        x = x.movedim(1, -1)
    with torch.no_grad():
        u = squash(x)
        share = (u.abs() > KNEE).double().mean()
        a_val, share = torch.stack([alpha.detach().double().reshape(()), share]).tolist()
    return a_val, share


def _tokens(t: torch.Tensor, channels_first: bool) -> torch.Tensor:
    """(tokens, hidden) in float64: the per-token view every statistic here is taken over."""
    t = t.detach().double()
    if channels_first:
        t = t.movedim(1, -1)
    return t.reshape(-1, t.shape[-1])


def token_sigma(x: torch.Tensor, channels_first: bool = False) -> torch.Tensor:
    """The population std over the hidden dim of each token: Theorem 1's sigma (no eps)."""
    return _tokens(x, channels_first).var(-1, unbiased=False).sqrt()


def grad_stats(
    g: torch.Tensor, channels_first: bool = False, sigma: torch.Tensor | None = None
) -> dict[str, float]:
    """Per-token mean/var over the hidden dim, averaged over tokens (var: population). With the
    input's per-token ``sigma``, also "var_s2" = mean over tokens of var * sigma^2 and "sigma"."""
    g = _tokens(g, channels_first)
    m = g.mean(-1)
    v = g.var(-1, unbiased=False)
    parts = [m.mean(), m.abs().mean(), v.mean()]
    if sigma is not None:
        parts += [(v * sigma**2).mean(), sigma.mean()]
    vals = torch.stack(parts).tolist()  # one sync, not five
    out = {"mean": vals[0], "absmean": vals[1], "var": vals[2]}
    if sigma is not None:
        out["var_s2"], out["sigma"] = vals[3], vals[4]
    return out


class GradProbe:
    """Context manager: ``with GradProbe(model) as probe: loss.backward(); probe.pop()``."""

    def __init__(self, model: nn.Module):
        self.layers = {n: m for n, m in model.named_modules() if isinstance(m, NORM_TYPES) and n}
        self._handles = []
        self._sigma: dict[str, list[torch.Tensor]] = defaultdict(
            list
        )  # forward pushes, backward pops
        self._sums: dict[str, float] = defaultdict(float)
        self._counts: dict[str, int] = defaultdict(int)

    def _forward_hook(self, name, module):
        cf = getattr(module, "channels_first", False)

        def hook(mod, inputs, output):
            # A stack, since a module called twice in one forward is backpropagated in reverse order.
            if torch.is_grad_enabled() and inputs and isinstance(inputs[0], torch.Tensor):
                self._sigma[name].append(token_sigma(inputs[0], cf))
                sat = saturation(mod, inputs[0])
                if sat is not None:
                    for k, v in zip(("alpha", "saturated"), sat):
                        self._sums[f"alpha/{name}/{k}"] += v
                        self._counts[f"alpha/{name}/{k}"] += 1

        return hook

    def _hook(self, name, module):
        cf = getattr(module, "channels_first", False)

        def hook(mod, grad_input, grad_output):
            sigma = self._sigma[name].pop() if self._sigma[name] else None
            for side, grads in (("out", grad_output), ("in", grad_input)):
                g = grads[0] if grads else None
                if g is None:
                    continue
                s = (
                    sigma
                    if side == "in"
                    and sigma is not None
                    and sigma.numel() * g.shape[1 if cf else -1] == g.numel()
                    else None
                )
                for k, v in grad_stats(g, cf, s).items():
                    key = f"grad/{name}/{side}_{k}"
                    self._sums[key] += v
                    self._counts[key] += 1

        return hook

    def __enter__(self):
        for name, m in self.layers.items():
            self._handles.append(m.register_forward_hook(self._forward_hook(name, m)))
            self._handles.append(m.register_full_backward_hook(self._hook(name, m)))
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles.clear()
        self._sigma.clear()

    def pop(self) -> dict[str, float]:
        """Averages since the last pop, keyed ``grad/<layer>/<in|out>_<mean|absmean|var>``, the
        input's ``in_sigma`` and ``in_var_s2``, the per-layer ``ratio_s2`` = in_var_s2 / out_var
        (Theorem 1's sigma^2-normalized variance ratio), plus ``grad/all/...`` averaged over layers;
        for DyT-like layers ``alpha/<layer>/alpha`` and ``alpha/<layer>/saturated`` (the share past
        the knee), and their means over layers under ``alpha/all/``."""
        out = {k: self._sums[k] / self._counts[k] for k in self._sums}
        for k in [k for k in out if k.endswith("/in_var_s2")]:
            out_var = out.get(k[: -len("in_var_s2")] + "out_var")
            if out_var:
                out[k[: -len("in_var_s2")] + "ratio_s2"] = out[k] / out_var
        agg: dict[str, list[float]] = defaultdict(list)
        for k, v in out.items():
            kind = k.split("/", 1)[0]
            agg[f"{kind}/all/" + k.rsplit("/", 1)[1]].append(v)
        out.update({k: sum(v) / len(v) for k, v in agg.items()})
        self._sums.clear()
        self._counts.clear()
        return out
