"""PTB dependency parsing (task ``ptb``): arc-standard MLP parser, metric UAS (and LAS).

Data (``task.data.format``, folder = <data root>/ptb):
- ``dp`` (default): the NLTK dependency treebank, Malt-TAB ``.dp`` files under ``dp_dir``;
- ``mrg``: bracketed trees under ``mrg_dir``, converted with Collins' head rules (data/ptb_heads.py);
- ``conll``: CoNLL-X/U files, one per split (``conll_files``), as converted WSJ is distributed.
``dp``/``mrg`` are split by file name (``split``: auto, sample or wsj; see ptb.split_by_file).

Training examples are the parser configurations on each sentence's static-oracle path (gold POS
tags); the loss is the cross-entropy of the gold transition, per configuration. evaluate() gives
that loss on the split's oracle configurations and parses the split greedily for UAS (LAS when
the data has labels), punctuation tokens (ptb.PUNCT_TAGS, by gold tag) excluded.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import torch
import torch.nn.functional as F

from ..data import ptb
from ..data.batching import LazyBatches, epoch_generator
from ..data.cache import cached
from ..data.text import Ragged
from ..data.transitions import N_LABEL_FEATS, N_WORD_FEATS, oracle_examples
from ..errors import ConfigError, DataError
from ..files import atomic_write_bytes
from ..models.spec import spec
from ..progress import bar
from . import trivial
from .base import Task
from .parse_decode import greedy_parse
from .registry import register_task

SPLITS = ("train", "valid", "test")
NULL, ROOT, UNK = 0, 1, 2  # special ids shared by the word and tag vocabularies
SPECIALS = ["<null>", "<root>", "<unk>"]
GET_DATA = (
    "the NLTK sample unpacks there with `pip install nltk && python -m nltk.downloader -d "
    "<data root>/ptb dependency_treebank treebank` (normlab-data fetch ptb prints it); the licensed "
    "WSJ goes in the same layout"
)


@register_task("ptb")
class PTBParsingTask(Task):
    name, metric, higher_is_better, unit = "ptb", "uas", True, "examples"

    # --- data ------------------------------------------------------------------------------------
    def _files(self) -> tuple[dict[str, list[Path]], str]:
        d, fmt = self.cfg.data, self.cfg.data.format
        if fmt not in ptb.READERS:
            raise ConfigError(f"task.data.format must be one of {sorted(ptb.READERS)}, got {fmt!r}")
        if not self.data_dir.is_dir():
            raise DataError(
                f"data folder {self.data_dir} for task ptb does not exist; set NORMLAB_DATA (or "
                f"paths.data_dir) to the folder that holds ptb/; {GET_DATA}"
            )
        if fmt == "conll":
            files = {s: (d.get("conll_files") or {}).get(s) for s in SPLITS}
            if not all(files.values()):
                raise DataError(
                    "task.data.format=conll needs task.data.conll_files.{train,valid,test}: one "
                    f"CoNLL-X/U file per split (relative to {self.data_dir} or absolute)"
                )
            paths = {s: [self.data_dir / f] for s, f in files.items()}
            for s, (p,) in paths.items():
                if not p.is_file():
                    raise DataError(f"missing CoNLL file {p} (task.data.conll_files.{s})")
            return paths, "CoNLL files: " + ", ".join(f"{s}={f}" for s, f in files.items())
        folder = self.data_dir / d[f"{fmt}_dir"]
        found = sorted(folder.rglob(f"*.{fmt}")) if folder.is_dir() else []
        if not found:
            raise DataError(f"no *.{fmt} files under {folder} (task.data.{fmt}_dir); {GET_DATA}")
        return ptb.split_by_file(found, d.split)

    def setup(self) -> None:
        d = self.cfg.data
        files, note = self._files()
        limit = {s: int((d.get("limit") or {}).get(s) or 0) for s in SPLITS}
        if any(limit.values()):
            note += (
                "; SUBSET: first "
                + ", ".join(f"{n} {s}" for s, n in limit.items() if n)
                + " sentences"
            )
        options = {
            "format": d.format,
            "files": {s: [str(p) for p in f] for s, f in files.items()},
            "lowercase": d.lowercase,
            "min_freq": d.min_freq,
            "limit": limit,
        }
        every = sorted({p for f in files.values() for p in f})
        data = cached(self.cache_dir, "ptb", every, options, lambda: self._build(files, limit))
        self.words, self.tags, self.label_names = data["words"], data["tags"], data["labels"]
        self.labeled = data["labeled"]
        self.splits = data["splits"]
        self._inputs: dict = {}
        self.data_info = {
            "source": "real",
            "subset": note,
            "format": d.format,
            "labeled": self.labeled,
            "sizes": {s: len(v["offsets"]) - 1 for s, v in self.splits.items()},
            "tokens": {s: int(v["offsets"][-1]) for s, v in self.splits.items()},
            "oracle_skipped": {s: v["skipped"] for s, v in self.splits.items()},
            "vocab": {
                "words": len(self.words),
                "tags": len(self.tags),
                "labels": len(self.label_names),
            },
        }

    def _norm_word(self, w: str) -> str:
        return re.sub(r"[0-9]", "0", w.lower()) if self.cfg.data.lowercase else w

    def _build(self, files: dict[str, list[Path]], limit: dict[str, int]) -> dict:
        reader = ptb.READERS[self.cfg.data.format]
        sents = {s: [x for p in f for x in reader(p)] for s, f in files.items()}
        sents = {s: v[: limit[s]] if limit[s] else v for s, v in sents.items()}
        for s, v in sents.items():
            if not v:
                raise DataError(
                    f"the {s} split has no sentences (files: {[str(p) for p in files[s]][:3]} ...)"
                )
        counts = Counter(self._norm_word(w) for x in sents["train"] for w in x.words)
        words = SPECIALS + sorted(w for w, c in counts.items() if c >= self.cfg.data.min_freq)
        tags = SPECIALS + sorted({t for x in sents["train"] for t in x.tags})
        labeled = all(x.labels is not None for v in sents.values() for x in v)
        # The label inventory is the annotation scheme's, so it is read from every split.
        labels = (
            sorted({lb for v in sents.values() for x in v for lb in x.labels}) if labeled else ["_"]
        )
        wid, tid, lid = ({w: i for i, w in enumerate(vs)} for vs in (words, tags, labels))
        out = {"words": words, "tags": tags, "labels": labels, "labeled": labeled, "splits": {}}
        for s, v in sents.items():
            w = [[wid.get(self._norm_word(t), UNK) for t in x.words] for x in v]
            p = [[tid.get(t, UNK) for t in x.tags] for x in v]
            lab = [[lid[lb] for lb in x.labels] if labeled else [0] * len(x.words) for x in v]
            feats, trans, skipped = [], [], 0
            for wi, pi, x, li in zip(w, p, v, lab):
                ex = oracle_examples(
                    [ROOT] + wi + [NULL], [ROOT] + pi + [NULL], x.heads, li, len(labels), labeled
                )
                if ex is None:
                    skipped += 1
                    continue
                feats += ex[0]
                trans += ex[1]
            n_feats = 2 * N_WORD_FEATS + (N_LABEL_FEATS if labeled else 0)
            rag = Ragged.from_lists(w)
            out["splits"][s] = {
                "offsets": rag.offsets,
                "words": rag.flat,
                "tags": Ragged.from_lists(p).flat,
                "heads": torch.tensor([h for x in v for h in x.heads], dtype=torch.int32),
                "labels": torch.tensor([i for li in lab for i in li], dtype=torch.int32),
                "punct": torch.tensor(
                    [t in ptb.PUNCT_TAGS for x in v for t in x.tags], dtype=torch.bool
                ),
                "forms": [x.words for x in v],
                "pos": [x.tags for x in v],
                "feats": torch.tensor(feats, dtype=torch.int32).reshape(-1, n_feats),
                "trans": torch.tensor(trans, dtype=torch.int64),
                "skipped": skipped,
            }
        return out

    # --- model and training ----------------------------------------------------------------------
    def trivial_baselines(self) -> dict:
        sp = self.splits
        return {
            "metric": "uas",
            "rows": {
                "right neighbour (last word → root)": {
                    s: trivial.right_neighbour_uas(v["heads"], v["offsets"], v["punct"])
                    for s, v in sp.items()
                }
            },
            "sizes": {s: int(v["offsets"].numel() - 1) for s, v in sp.items()},
        }

    def model_spec(self) -> dict:
        return spec(
            "MLPParser",
            n_words=len(self.words),
            n_tags=len(self.tags),
            n_labels=len(self.label_names),
            labeled=self.labeled,
            n_word_feats=N_WORD_FEATS,
            n_label_feats=N_LABEL_FEATS,
            **dict(self.cfg.model),
        )

    def _examples(self, split: str, generator=None, batch_size: int = 0) -> LazyBatches:
        sp = self.splits[split]
        n = sp["trans"].numel()
        order = torch.randperm(n, generator=generator) if generator is not None else torch.arange(n)
        idx = list(order.split(batch_size or self.cfg.data.batch_size))
        return LazyBatches(idx, lambda b: (sp["feats"][b].long(), sp["trans"][b]))

    def train_batches(self, epoch: int, seed: int):
        return self._examples("train", epoch_generator(seed, epoch))

    def example_inputs(self, n: int = 8) -> tuple:
        return (self._examples("test", batch_size=n)[0][0],)

    def export_files(self, folder):
        files = {"words.txt": self.words, "tags.txt": self.tags, "labels.txt": self.label_names}
        for name, itos in files.items():
            (folder / name).write_text("\n".join(map(str, itos)) + "\n")
        features = {
            "word_and_tag_features": N_WORD_FEATS,
            "label_features": N_LABEL_FEATS,
            "what": "features of an arc-standard configuration (Chen & Manning 2014), as "
            "normlab/data/transitions.py extracts them; the output scores the transitions",
        }
        (folder / "features.json").write_text(json.dumps(features) + "\n")
        return {
            "words.txt": "word ids, line i = id i",
            "tags.txt": "POS tag ids",
            "labels.txt": "arc label ids",
            "features.json": "the input features and what the output scores",
        }

    def loss(self, model, batch):
        feats, gold = batch
        return F.cross_entropy(model(feats), gold), gold.numel()

    # --- evaluation ------------------------------------------------------------------------------
    def _parse(self, model, split: str):
        if split not in self._inputs:
            sp = self.splits[split]
            words, tags = Ragged(sp["words"], sp["offsets"]), Ragged(sp["tags"], sp["offsets"])
            self._inputs[split] = [
                ([ROOT] + words[i].tolist() + [NULL], [ROOT] + tags[i].tolist() + [NULL])
                for i in range(len(words))
            ]
        return greedy_parse(model, self._inputs[split])

    def evaluate(self, model, split):
        return self._score(model, split)[0]

    def _score(self, model, split: str):
        """(metrics, the final parser configurations of the split's sentences)."""
        device = next(model.parameters()).device
        total, n = 0.0, 0
        for feats, gold in bar(
            self._examples(split, batch_size=4096), f"evaluate {split}", unit="batch"
        ):
            logits = model(feats.to(device))
            total += F.cross_entropy(logits.float(), gold.to(device), reduction="sum").item()
            n += gold.numel()
        configs = self._parse(model, split)
        out = {"loss": total / max(n, 1), **self.attachment_scores(split, configs)}
        return out, configs

    def attachment_scores(self, split: str, configs) -> dict[str, float]:
        """UAS (and LAS) in percent of the split's non-punctuation tokens, for final configurations."""
        sp = self.splits[split]
        heads = torch.tensor([h for c in configs for h in c.heads[1:]], dtype=torch.int32)
        # Configuration.labels holds 1 + label index (0 = no arc).
        labels = torch.tensor([lb - 1 for c in configs for lb in c.labels[1:-1]], dtype=torch.int32)
        keep = ~sp["punct"]
        right_head = (heads == sp["heads"]) & keep
        scored = max(int(keep.sum()), 1)
        out = {"uas": 100.0 * int(right_head.sum()) / scored}
        if self.labeled:
            out["las"] = 100.0 * int((right_head & (labels == sp["labels"])).sum()) / scored
        return out

    def test(self, model, run_dir: Path):
        """Test metrics, and the test parses as CoNLL-X in run_dir/test_predictions.conllx."""
        metrics, configs = self._score(model, "test")
        sp = self.splits["test"]
        lines = []
        for forms, pos, c in zip(sp["forms"], sp["pos"], configs):
            for i, (w, t) in enumerate(zip(forms, pos), 1):
                label = self.label_names[c.labels[i] - 1] if self.labeled else "_"
                lines.append(f"{i}\t{w}\t_\t{t}\t{t}\t_\t{c.heads[i]}\t{label}\t_\t_")
            lines.append("")
        atomic_write_bytes(
            Path(run_dir) / "test_predictions.conllx", ("\n".join(lines) + "\n").encode()
        )
        return metrics
