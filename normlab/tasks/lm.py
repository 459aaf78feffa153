"""Enwiki8 character (byte) language modelling with a decoder-only Transformer; metric BPC.

Training: each epoch cuts the training bytes into non-overlapping windows of ``data.seq_len``
from a seeded random offset in [0, seq_len), shuffles them and batches ``data.batch_size`` at a
time, so an epoch sees every training byte once as a target and window edges move between epochs.

Evaluation: contiguous, non-overlapping windows of ``data.eval_len`` that cover every byte of the
split (or of its first ``data.eval_bytes``, labeled in data_info) exactly once; the last window is
shorter if needed (``normlab.data.enwik8.eval_windows``).
BPC = (sum of the NLL in nats over every byte of the split) / (number of bytes) / ln 2.
Without recurrence memory a byte near a window start has little context, so BPC here is higher
than Transformer-XL's evaluation with a 2,100-byte memory would give the same model.
"""

from __future__ import annotations

import json
import math

import torch
import torch.nn.functional as F

from ..data import enwik8
from ..data.batching import LazyBatches, epoch_generator
from ..data.subset import check_cap
from ..errors import ConfigError
from ..models.spec import spec
from ..models.transformer import TransformerConfig
from ..progress import bar
from . import trivial
from .base import Task
from .registry import register_task

VOCAB = 256  # byte values


@register_task("enwik8")
class Enwik8Task(Task):
    name, metric, higher_is_better, unit = "enwik8", "bpc", False, "tokens"

    def setup(self) -> None:
        d = self.cfg.data
        for key in ("seq_len", "eval_len", "batch_size", "eval_batch_size"):
            if int(d[key]) <= 0:
                raise ConfigError(f"task.data.{key} must be positive, got {d[key]}")
        longest = max(int(d.seq_len), int(d.eval_len))
        max_positions = self.cfg.model.get("max_positions", 1024)
        if longest > max_positions:  # checked here so a bad config fails before the run starts
            raise ConfigError(
                f"task.model.max_positions={max_positions} is shorter than the longest window "
                f"({longest}, task.data.seq_len/eval_len); raise it"
            )
        self.corpus = enwik8.load(self.data_dir)
        # data.eval_bytes > 0 scores only the first eval_bytes of valid/test (a budget for small
        # scales on the full 5M-byte splits); 0 scores the whole split.
        cap = int(d.get("eval_bytes") or 0)
        self.eval_bounds = {
            s: (a, min(b, a + cap) if cap else b) for s, (a, b) in self.corpus.bounds.items()
        }
        notes = [self.corpus.note] if self.corpus.note else []
        if any(self.eval_bounds[s] != self.corpus.bounds[s] for s in ("valid", "test")):
            notes.append(
                f"valid/test BPC over the first {cap:,} bytes of each split only "
                "(task.data.eval_bytes)"
            )
        # data.train_bytes > 0 trains on the first train_bytes of the train split only, so that a
        # mini budget passes over the same bytes several times (and can overfit them); the
        # valid/test splits are unchanged. At least two training windows are needed.
        start, end = self.corpus.bounds["train"]
        available = end - start
        train_cap = check_cap(
            d.get("train_bytes"),
            "task.data.train_bytes",
            available,
            "enwik8 train bytes",
            minimum=2 * int(d.seq_len) + 1,
        )
        self.train_end = start + train_cap if train_cap else end
        sizes = self.corpus.sizes()
        if train_cap:
            sizes["train"] = train_cap
            notes.append(
                f"SUBSET: training on the first {sizes['train']:,} of the split's {available:,} train "
                f"bytes (task.data.train_bytes)"
            )
        self.data_info = {
            "source": "real",
            "subset": "; ".join(notes) or None,
            "file": str(self.corpus.source),
            "sizes": sizes,
            "vocab": VOCAB,
            "unit": "bytes",
            "eval_bytes": {
                s: self.eval_bounds[s][1] - self.eval_bounds[s][0] for s in ("valid", "test")
            },
        }
        if train_cap:  # what the cap chose from
            self.data_info["train_available"] = available

    def trivial_baselines(self) -> dict:
        # fitted on the bytes the models train on (the first data.train_bytes when capped)
        bounds = {
            "train": (self.corpus.bounds["train"][0], self.train_end),
            **{s: self.eval_bounds[s] for s in ("valid", "test")},
        }
        res = trivial.bits_per_byte(self.corpus.data, bounds)
        alpha = res["bigram_valid"].pop("alpha")
        return {
            "metric": "bpc",
            "rows": {
                "unigram (add-one, fitted on train)": res["unigram"],
                "bigram (add-one, fitted on train)": res["bigram"],
                f"smoothed bigram (add-α, α = {alpha:.3g} chosen on valid)": res["bigram_valid"],
            },
            "sizes": {s: hi - lo for s, (lo, hi) in bounds.items()},
        }

    def model_spec(self) -> dict:
        m = dict(self.cfg.model)
        max_positions = m.pop("max_positions", 1024)
        return spec(
            "TransformerLM", vocab=VOCAB, cfg=TransformerConfig(**m), max_positions=max_positions
        )

    def _window(self, starts: torch.Tensor, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Windows reading bytes a .. a+length: (inputs, targets), each (B, length) int64."""
        idx = starts[:, None] + torch.arange(length + 1)
        seq = self.corpus.data[idx].long()
        return seq[:, :-1], seq[:, 1:]

    def train_batches(self, epoch: int, seed: int):
        d = self.cfg.data
        g = epoch_generator(seed, epoch)
        L = int(d.seq_len)
        offset = int(torch.randint(L, (1,), generator=g))
        starts = enwik8.train_starts(self.train_end, L, offset)
        starts = starts[torch.randperm(len(starts), generator=g)]
        return LazyBatches(list(starts.split(int(d.batch_size))), lambda b: self._window(b, L))

    def example_inputs(self, n: int = 8) -> tuple:
        return (self.eval_batches("test")[0][0][:n],)

    def export_files(self, folder):
        (folder / "vocab.json").write_text(json.dumps({"tokens": "bytes", "size": VOCAB}) + "\n")
        return {
            "vocab.json": f"token id = byte value (0-{VOCAB - 1}); the input is the raw file's bytes"
        }

    def eval_batches(self, split: str) -> LazyBatches:
        """Batches of (inputs, targets) whose targets, in order, are exactly the split's bytes."""
        d = self.cfg.data
        windows = enwik8.eval_windows(*self.eval_bounds[split], int(d.eval_len))
        full = [a for a, b in windows if b - a == int(d.eval_len)]
        groups = [
            (torch.tensor(full[i : i + int(d.eval_batch_size)]) - 1, int(d.eval_len))
            for i in range(0, len(full), int(d.eval_batch_size))
        ]
        if len(full) < len(windows):  # the shorter last window, alone in its batch
            a, b = windows[-1]
            groups.append((torch.tensor([a - 1]), b - a))
        return LazyBatches(groups, lambda grp: self._window(*grp))

    def loss(self, model, batch):
        inputs, targets = batch
        logits = model(inputs)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten()), targets.numel()

    def evaluate(self, model, split):
        device = next(model.parameters()).device
        total, n = 0.0, 0
        for inputs, targets in bar(self.eval_batches(split), f"evaluate {split}", unit="window"):
            logits = model(inputs.to(device))
            nll = F.cross_entropy(
                logits.flatten(0, 1), targets.to(device).flatten(), reduction="none"
            )
            total += (
                nll.double().sum().item()
            )  # float32 sums over 10^4+ bytes drift in the 7th digit
            n += targets.numel()
        expected = self.eval_bounds[split][1] - self.eval_bounds[split][0]
        if n != expected:  # the windows must score every byte exactly once
            raise RuntimeError(f"evaluated {n} bytes of {split}, expected {expected}")
        loss = total / n
        return {"loss": loss, "bpc": loss / math.log(2)}
