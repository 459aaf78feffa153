"""A model as data: the class and its keyword arguments, so a model is rebuilt without its task.

Every task describes the model it trains with :func:`spec` (``Task.model_spec``); training builds
it from that description, and ``normlab-export`` writes the same description to ``model.json``,
so an exported model is rebuilt by this module and the norms alone (:func:`load_export`), with
none of the data, task or training code.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path
from typing import Any, Optional

import torch

from .transformer import NormFactory, TransformerConfig

# Model classes a spec may name: a spec read from disk never imports an arbitrary module.
CLASSES = {
    "TransformerClassifier": "normlab.models.classifier",
    "TransformerLM": "normlab.models.lm",
    "TransformerSeq2Seq": "normlab.models.seq2seq",
    "MNISTCNN": "normlab.models.cnn",
    "MLPParser": "normlab.models.parser",
}


def _known(name: str) -> str:
    if name not in CLASSES:
        raise ValueError(f"unknown model class {name!r}; known: {', '.join(CLASSES)}")
    return name


def spec(cls: str, **kwargs: Any) -> dict:
    """{"class": name, "kwargs": plain data}; a TransformerConfig becomes a dict under its key."""
    _known(cls)
    plain = {
        k: dataclasses.asdict(v) if isinstance(v, TransformerConfig) else v
        for k, v in kwargs.items()
    }
    return {"class": cls, "kwargs": plain}


def build(model_spec: dict, norm: NormFactory) -> torch.nn.Module:
    """The model of ``model_spec`` with freshly initialized weights, its norms made by ``norm``."""
    name = _known(model_spec["class"])
    cls = getattr(importlib.import_module(CLASSES[name]), name)
    kwargs = dict(model_spec["kwargs"])
    if "cfg" in kwargs:
        kwargs["cfg"] = TransformerConfig(**kwargs["cfg"])
    if "channels" in kwargs:
        kwargs["channels"] = tuple(kwargs["channels"])
    return cls(norm=norm, **kwargs)


def load_export(folder: Path, impl: Optional[str] = None, device: str = "cpu") -> torch.nn.Module:
    """The model that ``normlab-export`` wrote to ``folder``, in eval mode: built from model.json,
    weights from model.pt. ``impl="reference"`` runs every norm's plain math instead of the
    native kernels the model was trained with (the same function; nothing to compile)."""
    from ..norms.sites import site_factory

    folder = Path(folder)
    meta = json.loads((folder / "model.json").read_text())
    norm = dict(meta["norm"])
    if impl is not None:  # every site's norm on that path, the run's and the per-site ones
        norm["options"] = {**(norm.get("options") or {}), "impl": impl}
        norm["sites"] = {
            s: {**v, "options": {**(v.get("options") or {}), "impl": impl}}
            for s, v in (norm.get("sites") or {}).items()
        }
    model = build(meta["model"], site_factory(norm))
    model.load_state_dict(torch.load(folder / "model.pt", map_location=device, weights_only=True))
    return model.to(device).eval()
