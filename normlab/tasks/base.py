"""The Task interface: what the trainer needs from a task family.

A task knows its data (read from the dataset's released format under ``data_dir``), builds its
model from a norm factory, computes its training loss, and evaluates its metric. Adding a task is
one module implementing this class plus ``normlab/configs/task/<name>.yaml`` and its presets. ``classification_eval``
is the evaluation loop that the text classification and MNIST tasks share.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import ConfigError
from ..models import spec as model_specs
from ..models.transformer import NormFactory
from ..progress import bar


class Task(ABC):
    name: str = ""
    metric: str = ""  # main metric key, e.g. "acc", "bleu", "bpc", "uas"
    higher_is_better: bool = True
    unit: str = "examples"  # what throughput counts: "examples" or "tokens"
    # The run's seed (set by the runner): data.train_limit_seed "run" draws the training subset with it.
    run_seed: Optional[int] = None
    # Why the task has no trivial baseline, said without reading its data (None: it may have one).
    no_trivial_baseline: Optional[str] = None

    def __init__(self, cfg: Any, data_dir: Path, cache_dir: Path):
        self.cfg = cfg  # the resolved ``task`` config section
        self.data_dir = Path(data_dir)
        self.cache_dir = Path(cache_dir)
        # Labels every output with what data was used: {"source": "real"|"generated",
        # "subset": None or a sentence saying which part, "sizes": {split: n}}.
        self.data_info: dict = {}

    def limit_seed(self) -> int:
        """The seed of the training subset (data.train_limit_seed): "run" follows the run's seed, so
        the spread over seeds includes the subset's variance; an integer fixes one subset for all."""
        value = self.cfg.data.get("train_limit_seed")
        if value == "run":
            if self.run_seed is None:
                raise ValueError(
                    f"task.data.train_limit_seed=run: the {self.name} task was built without a run seed"
                )
            return int(self.run_seed)
        if not isinstance(value, (int, type(None))) or (value or 0) < 0:
            raise ConfigError(
                f"task.data.train_limit_seed={value!r}: must be run or an integer >= 0"
            )
        return int(value or 0)

    @abstractmethod
    def setup(self) -> None:
        """Read (or load from cache) the data; raise DataError naming the file on bad input."""
        ...

    def model_spec(self) -> dict:
        """The model this task trains as data (``normlab.models.spec.spec``): what
        ``build_model`` builds and what ``normlab-export`` writes to model.json. Call after setup."""
        raise NotImplementedError(
            f"task {self.name} builds its model in code only (no model_spec): it trains, "
            "but normlab-export cannot describe it"
        )

    def build_model(self, norm: NormFactory) -> nn.Module:
        return model_specs.build(self.model_spec(), norm)

    def example_inputs(self, n: int = 8) -> tuple:
        """The positional inputs of the model's forward for the first ``n`` test examples (what an
        export is checked and traced on)."""
        raise NotImplementedError(f"task {self.name} does not say what its model's inputs are")

    def export_files(self, folder: Path) -> dict[str, str]:
        """Write what the model needs beside its weights to turn raw input into ids (vocabularies,
        BPE codes, preprocessing constants) into ``folder``; returns {file name: what it holds}."""
        return {}

    @abstractmethod
    def train_batches(self, epoch: int, seed: int) -> Sequence[Any]:
        """The epoch's batches, a pure function of (epoch, seed) so a resumed run sees the same."""
        ...

    def batching(self, seed: int) -> dict:
        """What the first epoch's training batches hold, for summary.json (e.g. tokens per batch
        and the padding share); {} where batches have a fixed shape."""
        return {}

    @abstractmethod
    def loss(self, model: nn.Module, batch: Any) -> tuple[torch.Tensor, int]:
        """(mean training loss over the batch's units, number of units)."""
        ...

    @abstractmethod
    def evaluate(self, model: nn.Module, split: str) -> dict[str, float]:
        """{"loss": ..., self.metric: ...} on ``split`` ("valid" or "test")."""
        ...

    def trivial_baselines(self) -> dict:
        """Scores a model-free predictor reaches on this task's data, the levels a trained model is
        read against (call after setup): {"metric", "rows": {name: {split: value}}, "sizes":
        {split: n}}, or {"missing": why} (the default). normlab.tasks.trivial has the math."""
        return {"missing": self.no_trivial_baseline or f"no trivial baseline for task {self.name}"}

    def test(self, model: nn.Module, run_dir: Path) -> dict[str, float]:
        """Final evaluation of the selected checkpoint; tasks may write outputs to run_dir."""
        return self.evaluate(model, "test")


def to_device(batch: Any, device: torch.device) -> Any:
    if torch.is_tensor(batch):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch


def classification_eval(
    model: nn.Module, batches: Iterable, device: torch.device, desc: str = "evaluate"
) -> dict[str, float]:
    """{"loss": mean cross-entropy, "acc": accuracy in %} over (inputs, labels) batches."""
    total, correct, n = 0.0, 0, 0
    for inputs, labels in bar(batches, desc, unit="batch"):
        inputs, labels = inputs.to(device), labels.to(device)
        logits = model(inputs)
        total += F.cross_entropy(logits, labels, reduction="sum").item()
        correct += (logits.argmax(-1) == labels).sum().item()
        n += labels.numel()
    return {"loss": total / n, "acc": 100.0 * correct / n}
