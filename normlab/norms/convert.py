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
        raise ValueError(f"convert_norms handles norms over one dimension, got normalized_shape={shape}")
    return shape[0]


def convert_norms(model: nn.Module, name: str, **options) -> nn.Module:
    """Replace every norm in ``model`` with ``build_norm(name, dim, **options)``, in place.

    Call it before building the optimizer or loading a checkpoint (parameters change).
    The new module is placed on the old one's device and dtype.
    """
    if isinstance(model, NORM_TYPES):
        raise ValueError("convert_norms needs a model that contains norms; build_norm replaces a bare norm")
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
    return model
