"""Swap every norm of an existing model (normlab's, nn.LayerNorm, nn.RMSNorm) for one variant."""

from __future__ import annotations

from torch import nn

from .layers import Norm
from .registry import NORM_TYPES, build_norm


def _features(module: nn.Module) -> int:
    if isinstance(module, Norm):
        return module.dim
    shape = module.normalized_shape
    if len(shape) != 1:
        raise ValueError(
            f"convert_norms handles norms over one dimension, got normalized_shape={shape}"
        )
    return shape[0]


def convert_norms(model: nn.Module, name: str, **options) -> nn.Module:
    """Replace every norm in ``model`` with ``build_norm(name, dim, **options)``, in place.

    Call it before building the optimizer or loading a checkpoint (parameters change).
    The new module is placed on the old one's device and dtype.
    """
    if isinstance(model, NORM_TYPES):
        raise ValueError(
            "convert_norms needs a model that contains norms; build_norm replaces a bare norm"
        )
    build_norm(name, 4, **options)  # validate before touching the model
    for parent in list(model.modules()):
        for child_name, child in list(parent.named_children()):
            if isinstance(child, NORM_TYPES):
                kwargs = dict(options)
                if getattr(child, "channels_first", False):
                    kwargs["channels_first"] = True
                new = build_norm(name, _features(child), **kwargs)
                ref = next(iter(child.parameters()), None)
                if ref is not None:
                    new = new.to(device=ref.device, dtype=ref.dtype)
                setattr(parent, child_name, new)
    for module in model.modules():
        _disable_fast_path(module)
    return model


def _disable_fast_path(module: nn.Module) -> None:
    """Keep torch's Transformer encoder off its inference fast path once its norms are replaced.

    In eval mode nn.TransformerEncoderLayer's fast path reads ``norm1.eps/weight/bias`` and runs
    torch's fused LayerNorm kernel, so a converted layer would crash (no ``eps``, ``weight=None``)
    or silently compute LayerNorm instead of the new variant. ``activation_relu_or_gelu`` is only
    consulted to pick that path (the slow path calls ``self.activation``) and is checked before
    the norms. nn.TransformerEncoder would also feed nested tensors (padding masks) to the layers,
    which our norms cannot take.
    """
    if isinstance(module, nn.TransformerEncoderLayer):
        module.activation_relu_or_gelu = 0
    elif isinstance(module, nn.TransformerEncoder):
        module.use_nested_tensor = False
