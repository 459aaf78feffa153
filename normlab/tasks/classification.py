"""Text classification (RT, SST-2, IMDB, and a generated demo task) with a Transformer encoder."""

from __future__ import annotations

import inspect
import json

import torch
import torch.nn.functional as F

from ..data import classification as readers
from ..data.batching import LazyBatches, bucket_batches, epoch_generator, pad
from ..data.cache import cached
from ..data.subset import check_cap, seeded_subset
from ..data.text import Ragged, Vocab, tokenize
from ..errors import ConfigError, DataError
from ..models.spec import spec
from ..models.transformer import TransformerConfig
from . import trivial
from .base import Task, classification_eval
from .registry import register_task

TOKENIZER = (
    "lowercase; IMDB's <br /> tags become spaces; tokens are the matches of the regular expression "
    "[a-z0-9]+(?:'[a-z]+)?|[^\\sa-z0-9]; inputs longer than max_len tokens are cut (labels.json); "
    "pad a batch with <pad>"
)


class ClassificationTask(Task):
    metric, higher_is_better, unit = "acc", True, "examples"
    files: tuple[str, ...] = ()  # source files that key the cache
    class_names: tuple[str, ...] = ()  # class id -> its name, for an export's labels.json

    def read(self) -> tuple[dict, str]: ...

    def read_with(self, reader, *args) -> tuple[dict, str]:
        """``reader(*args, **task.data.reader)``; an option the reader does not take is a config
        error naming it (a typo, or task.name pointed at another task than its task file's)."""
        options = dict(self.cfg.data.get("reader") or {})
        takes = list(inspect.signature(reader).parameters)[len(args) :]
        unknown = sorted(set(options) - set(takes))
        if unknown:
            raise ConfigError(
                f"task.data.reader.{unknown[0]}: not an option of task {self.name}'s reader "
                f"(it takes {takes}); fix normlab/configs/task/{self.name}.yaml or the command line"
            )
        return reader(*args, **options)

    def _source_files(self) -> list:
        return [self.data_dir / f for f in self.files if (self.data_dir / f).exists()]

    def setup(self) -> None:
        d = self.cfg.data
        if self.files and not self.data_dir.is_dir():
            raise DataError(
                f"data folder {self.data_dir} for task {self.name} does not exist; set "
                f"NORMLAB_DATA (or paths.data_dir) to the folder that holds '{self.name}/'. "
                f"{readers.how(self.name, self.data_dir)}"
            )
        # data.train_limit > 0 trains on a seeded random subset of that many train examples
        # (train_limit_seed picks it: by default the run's seed, the same for every norm); the
        # vocabulary is built from that subset, the only text the model sees.
        limit = d.get("train_limit") or 0
        limit_seed = self.limit_seed() if limit else 0
        options = {
            "task": self.name,
            "reader": dict(d.get("reader") or {}),
            "min_freq": d.min_freq,
            "max_vocab": d.max_vocab,
        }
        if limit:  # only then, so the caches of full-data runs keep their keys
            options.update(train_limit=limit, train_limit_seed=limit_seed)

        def build():
            splits, note = self.read()
            all_texts, all_labels = splits["train"]
            available = len(all_texts)
            cap = check_cap(
                limit, "task.data.train_limit", available, f"{self.name} train examples"
            )
            if cap:
                keep = seeded_subset(available, cap, limit_seed).tolist()
                splits["train"] = ([all_texts[i] for i in keep], [all_labels[i] for i in keep])
                note += (
                    f"; SUBSET: training on a seeded random {cap:,} of the {available:,} train examples "
                    f"(task.data.train_limit={cap}, train_limit_seed={limit_seed})"
                )
            docs = {s: [tokenize(t) for t in texts] for s, (texts, _) in splits.items()}
            vocab = Vocab.build(docs["train"], d.min_freq, d.max_vocab)  # train only
            # One string, not a list: weights_only unpickling of 20k strings costs ~30 ms per start.
            out = {"vocab": "\n".join(vocab.itos), "note": note, "train_available": available}
            for s, (_, labels) in splits.items():
                out[s] = {
                    **Ragged.from_lists([vocab.encode(x) for x in docs[s]]).state(),
                    "labels": torch.tensor(labels, dtype=torch.int64),
                }
            return out

        data = cached(self.cache_dir, self.name, self._source_files(), options, build)
        self.vocab = Vocab(data["vocab"].split("\n"))
        self.splits = {
            s: (Ragged(data[s]["flat"], data[s]["offsets"]), data[s]["labels"])
            for s in ("train", "valid", "test")
        }
        self.classes = int(self.splits["train"][1].max()) + 1
        self.data_info = {
            "source": "generated" if not self.files else "real",
            "subset": data["note"],
            "sizes": {s: len(v[1]) for s, v in self.splits.items()},
            "vocab": len(self.vocab),
        }
        if limit:  # what the cap chose from
            self.data_info["train_available"] = int(data["train_available"])

    def trivial_baselines(self) -> dict:
        return trivial.majority_baseline({s: y for s, (_, y) in self.splits.items()})

    def model_spec(self) -> dict:
        m = dict(self.cfg.model)
        max_positions = m.pop("max_positions", 1024)
        return spec(
            "TransformerClassifier",
            vocab=len(self.vocab),
            classes=self.classes,
            pad=self.vocab.pad,
            cfg=TransformerConfig(**m),
            max_positions=max_positions,
        )

    def _batches(self, split: str, generator=None) -> LazyBatches:
        seqs, labels = self.splits[split]
        d = self.cfg.data
        lengths = seqs.lengths().clamp(max=d.max_len)
        # Evaluation is forward-only: larger batches cost no accuracy and run faster.
        size = d.batch_size if generator is not None else d.get("eval_batch_size", d.batch_size)
        idx = bucket_batches(lengths, batch_size=size, generator=generator)
        return LazyBatches(
            idx,
            lambda b: (pad([seqs[i] for i in b.tolist()], self.vocab.pad, d.max_len), labels[b]),
        )

    def train_batches(self, epoch: int, seed: int):
        return self._batches("train", epoch_generator(seed, epoch))

    def example_inputs(self, n: int = 8) -> tuple:
        return (self._batches("test")[0][0][:n],)

    def export_files(self, folder):
        (folder / "vocab.txt").write_text("\n".join(self.vocab.itos) + "\n")
        names = list(self.class_names) or [f"class {i}" for i in range(self.classes)]
        note = {
            "classes": self.classes,
            "names": {
                str(i): names[i] if i < len(names) else f"class {i}" for i in range(self.classes)
            },
            "max_len": int(self.cfg.data.max_len),
            "ids": "class ids as the task's reader assigns them (normlab/data/classification.py)",
        }
        (folder / "labels.json").write_text(json.dumps(note) + "\n")
        return {
            "vocab.txt": f"the {len(self.vocab):,} tokens, one per line, line i = id i (<pad> {self.vocab.pad}, "
            f"<unk> {self.vocab.unk}); the tokenizer: {TOKENIZER}",
            "labels.json": "each class id's name, the number of classes and the longest input",
        }

    def loss(self, model, batch):
        tokens, labels = batch
        return F.cross_entropy(model(tokens), labels), labels.numel()

    def evaluate(self, model, split):
        return classification_eval(
            model, self._batches(split), next(model.parameters()).device, f"evaluate {split}"
        )


@register_task("rt")
class RTTask(ClassificationTask):
    name, files = "rt", ("rt-polarity.pos", "rt-polarity.neg")
    class_names = ("negative", "positive")  # rt-polarity.neg is 0, .pos is 1

    def read(self):
        return self.read_with(readers.read_rt, self.data_dir)


@register_task("sst2")
class SST2Task(ClassificationTask):
    name, files = "sst2", ("train.tsv", "dev.tsv")
    class_names = ("negative", "positive")  # GLUE's label column

    def read(self):
        return self.read_with(readers.read_sst2, self.data_dir)


@register_task("imdb")
class IMDBTask(ClassificationTask):
    name, files = "imdb", ("aclImdb.tar.gz", "aclImdb_v1.tar.gz", "aclImdb/README")
    class_names = ("negative", "positive")  # aclImdb/*/neg is 0, pos is 1

    def read(self):
        return self.read_with(readers.read_imdb, self.data_dir)


@register_task("synthetic_cls")
class SyntheticTask(ClassificationTask):
    """GENERATED data for the out-of-the-box demo and fast tests; labeled so in every output."""

    name, files = "synthetic_cls", ()
    no_trivial_baseline = "none (generated data)"
    class_names = ("not more first-quarter tokens", "more first-quarter tokens")

    def read(self):
        return self.read_with(readers.synthetic)
