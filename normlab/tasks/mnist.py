"""MNIST digit classification with the paper's 3-layer CNN (normlab/models/cnn.py); metric accuracy %.

Images are kept as uint8 (N, 28, 28) and standardized per batch with the training set's pixel
mean and std (0.1307, 0.3081, the usual MNIST constants; recomputed by the tests). No augmentation.
"""

from __future__ import annotations

import json

import torch
import torch.nn.functional as F

from ..data import mnist
from ..data.batching import LazyBatches, epoch_generator
from ..data.cache import cached
from ..data.subset import check_cap, seeded_subset
from ..errors import ConfigError
from ..models.spec import spec
from . import trivial
from .base import Task, classification_eval
from .registry import register_task

MEAN, STD = 0.1307, 0.3081


@register_task("mnist")
class MNISTTask(Task):
    name, metric, higher_is_better, unit = "mnist", "acc", True, "examples"

    def setup(self) -> None:
        d = self.cfg.data
        for key in ("batch_size", "eval_batch_size", "valid_size"):
            if int(d[key]) <= 0:
                raise ConfigError(f"task.data.{key} must be positive, got {d[key]}")
        if int(d.valid_size) >= mnist.COUNTS["train"]:
            raise ConfigError(
                f"task.data.valid_size={d.valid_size} must be below {mnist.COUNTS['train']}"
            )
        n_train = mnist.COUNTS["train"] - int(d.valid_size)
        limit = check_cap(
            d.get("train_limit"), "task.data.train_limit", n_train, "MNIST training images"
        )
        files = [p for pair in mnist.files(self.data_dir).values() for p in pair]  # keys the cache

        def build():
            splits = mnist.load(self.data_dir, int(d.valid_size))
            return {s: {"images": x, "labels": y} for s, (x, y) in splits.items()}

        data = cached(self.cache_dir, self.name, files, {"valid_size": int(d.valid_size)}, build)
        self.splits = {s: (v["images"], v["labels"]) for s, v in data.items()}
        note = (
            f"MNIST: official {mnist.COUNTS['t10k']:,} test images; validation is the last "
            f"{int(d.valid_size):,} of the {mnist.COUNTS['train']:,} training images (train keeps the "
            f"first {n_train:,})"
        )
        # data.train_limit > 0 trains on a seeded random subset of that many of the training images
        # (train_limit_seed picks it: by default the run's seed, the same for every norm): 55,000 images do not
        # overfit this CNN within a CPU budget, a few thousand do.
        if limit:
            seed = self.limit_seed()
            keep = seeded_subset(n_train, limit, seed)
            x, y = self.splits["train"]
            self.splits["train"] = (x[keep], y[keep])
            note += (
                f"; SUBSET: training on a seeded random {limit:,} of those {n_train:,} images "
                f"(task.data.train_limit={limit}, train_limit_seed={seed})"
            )
        # data.eval_size > 0 evaluates only the first eval_size images of valid and test (smoke runs);
        # it is stated in every output.
        cap = int(d.get("eval_size") or 0)
        if cap:
            self.splits = {
                s: (x, y) if s == "train" else (x[:cap], y[:cap])
                for s, (x, y) in self.splits.items()
            }
            note += (
                f"; valid/test accuracy on their first {cap:,} images only (task.data.eval_size)"
            )
        self.data_info = {
            "source": "real",
            "sizes": {s: len(v[1]) for s, v in self.splits.items()},
            "subset": note,
        }
        if limit:  # what the cap chose from
            self.data_info["train_available"] = n_train

    def trivial_baselines(self) -> dict:
        return trivial.majority_baseline({s: y for s, (_, y) in self.splits.items()})

    def model_spec(self) -> dict:
        m = self.cfg.model
        return spec(
            "MNISTCNN",
            channels=[int(c) for c in m.channels],
            kernel=int(m.kernel),
            dropout=float(m.dropout),
        )

    def _batches(self, split: str, batch_size: int, generator=None) -> LazyBatches:
        images, labels = self.splits[split]
        n = len(labels)
        order = torch.randperm(n, generator=generator) if generator is not None else torch.arange(n)
        return LazyBatches(
            list(order.split(batch_size)),
            lambda b: ((images[b].float().unsqueeze(1) / 255.0 - MEAN) / STD, labels[b]),
        )

    def example_inputs(self, n: int = 8) -> tuple:
        return (self._batches("test", n)[0][0],)

    def export_files(self, folder):
        (folder / "preprocessing.json").write_text(
            json.dumps(
                {"input": "(B, 1, 28, 28) float", "scale": "pixel / 255", "mean": MEAN, "std": STD}
            )
            + "\n"
        )
        return {"preprocessing.json": "(pixel / 255 - mean) / std, the images as (B, 1, 28, 28)"}

    def train_batches(self, epoch: int, seed: int):
        return self._batches("train", int(self.cfg.data.batch_size), epoch_generator(seed, epoch))

    def loss(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y), y.numel()

    def evaluate(self, model, split):
        batches = self._batches(split, int(self.cfg.data.eval_batch_size))
        return classification_eval(
            model, batches, next(model.parameters()).device, f"evaluate {split}"
        )
