"""Machine translation (IWSLT14 De-En, IWSLT15 En-Vi) with a Transformer encoder-decoder.

Training follows fairseq's IWSLT recipe: token-budget batches of length-bucketed pairs
(``--max-tokens``), label-smoothed cross-entropy (fairseq's form, eps_i = eps / (V - 1)),
throughput in target tokens. Validation gives the label-smoothed loss (what fairseq selects
``checkpoint_best`` on), the NLL and perplexity, and greedy BLEU when ``eval.valid_bleu`` is set.
The test decodes the best checkpoint (``eval.beam``: 5 at paper scale, greedy at mini), writes the
hypotheses to the run directory and reports BLEU tokenized (fairseq's) and detokenized (bleu.py).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from ..data.batching import (
    LazyBatches,
    bucket_batches,
    epoch_generator,
    pad,
    padding_record,
    token_batches,
)
from ..data.bpe import remove_bpe
from ..data.parallel import EOS
from ..data.subset import check_cap
from ..data.translation import load_corpus
from ..errors import ConfigError, DataError
from ..files import atomic_write_bytes
from ..models.search import SearchConfig, decode
from ..models.spec import spec
from ..models.transformer import TransformerConfig
from ..progress import bar
from .base import Task
from .bleu import score_both, tokenized_bleu
from .registry import register_task

MODEL_KEYS = (
    "share_all_embeddings",
    "share_decoder_input_output",
    "decoder_layers",
    "max_positions",
)


class TranslationTask(Task):
    metric, higher_is_better, unit = "bleu", True, "tokens"
    how = ""  # how to prepare the data (named in every DataError)

    def setup(self) -> None:
        c = self.cfg
        if c.train.get("select") == "metric" and not c.eval.valid_bleu:
            raise ConfigError(
                "task.train.select=metric selects on validation BLEU; set task.eval.valid_bleu=true "
                "or task.train.select=loss (fairseq's checkpoint_best uses the loss)"
            )
        # data.limit.{train,valid,test} > 0 keeps the first N pairs of a split (mini: a train-pair cap
        # so the model passes over the same pairs often enough to overfit them); labeled in data_info.
        for split, n in dict(c.data.get("limit") or {}).items():
            if split not in ("train", "valid", "test"):
                raise ConfigError(
                    f"task.data.limit.{split}: unknown split; use train, valid or test"
                )
            check_cap(n, f"task.data.limit.{split}", sys.maxsize, f"{split} pairs")
        self.corpus = load_corpus(self.data_dir, c.data, self.name, self.cache_dir, self.how)
        sv, tv = self.corpus.src_vocab, self.corpus.tgt_vocab
        if (sv.pad, sv.stoi[EOS]) != (tv.pad, tv.stoi[EOS]):
            raise DataError(
                f"source and target vocabularies must agree on <pad> and </s> ids for {self.name}"
            )
        self.pad, self.eos = tv.pad, tv.stoi[EOS]
        if c.model.get("share_all_embeddings") and sv.itos != tv.itos:
            raise ConfigError(
                f"task.model.share_all_embeddings=true needs one joint vocabulary, but {self.name} has "
                f"{len(sv):,} source and {len(tv):,} target entries; set it to false or use "
                "task.data.vocab=bpe with task.data.share_vocab=true"
            )
        self.bpe = c.data.get("vocab", "bpe") == "bpe"
        self.data_info = self.corpus.info
        self.max_pos = int(c.model.get("max_positions", 1024))
        if c.data.get("train_max_len"):  # drop, never cut, over-long training pairs
            src, tgt = self.corpus.splits["train"]
            keep = torch.maximum(src.lengths(), tgt.lengths()) <= int(c.data.train_max_len)
            self.train_index = keep.nonzero().view(-1)
            # sizes count the pairs training uses; what was read is kept beside it.
            read = len(keep)
            self.data_info = {
                **self.data_info,
                "train_pairs_over_max_len": int((~keep).sum()),
                "train_pairs_read": read,
                "sizes": {**self.data_info.get("sizes", {}), "train": int(keep.sum())},
            }
        else:
            self.train_index = torch.arange(len(self.corpus.splits["train"][0]))

    def model_spec(self) -> dict:
        m = dict(self.cfg.model)
        extra = {k: m.pop(k) for k in MODEL_KEYS if k in m}
        return spec(
            "TransformerSeq2Seq",
            src_vocab=len(self.corpus.src_vocab),
            tgt_vocab=len(self.corpus.tgt_vocab),
            pad=self.pad,
            eos=self.eos,
            cfg=TransformerConfig(**m),
            **extra,
        )

    # --- batches -------------------------------------------------------------------------------
    def _collate(self, split: str, idx: torch.Tensor):
        src, tgt = self.corpus.splits[split]
        L = self.max_pos  # sequences beyond the model's positions are cut (none in IWSLT at 1024)
        s = [src[i].long() for i in idx.tolist()]
        t = [tgt[i].long() for i in idx.tolist()]
        prev = [torch.cat([t_.new_tensor([self.eos]), t_[:-1]]) for t_ in t]  # </s> starts decoding
        return pad(s, self.pad, L), pad(prev, self.pad, L), pad(t, self.pad, L)

    def _lengths(self, split: str, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        src, tgt = self.corpus.splits[split]
        return src.lengths()[index], tgt.lengths()[index]

    def _token_batches(self, split, index, max_tokens, generator=None) -> list[torch.Tensor]:
        multiple = int(self.cfg.data.get("batch_multiple", 1))
        batches = token_batches(*self._lengths(split, index), max_tokens, generator, multiple)
        return [index[b] for b in batches]

    def example_inputs(self, n: int = 8) -> tuple:
        src, prev, _ = self._eval_batches("test")[0]
        return src[:n], prev[:n]

    def export_files(self, folder):
        sv, tv = self.corpus.src_vocab, self.corpus.tgt_vocab
        (folder / "src_vocab.txt").write_text("\n".join(sv.itos) + "\n")
        (folder / "tgt_vocab.txt").write_text("\n".join(tv.itos) + "\n")
        files = {
            "src_vocab.txt": f"source pieces, line i = id i (<pad> {self.pad}, </s> {self.eos}, which also "
            "starts decoding)",
            "tgt_vocab.txt": "target pieces",
        }
        if self.corpus.bpe_codes:
            (folder / "bpe.codes").write_text(self.corpus.bpe_codes)
            files["bpe.codes"] = (
                "the joint BPE merges (subword-nmt format, '</w>' ends a word), applied to "
                "Moses-tokenized text; '@@ ' joins the pieces of a word in the output"
            )
        elif self.bpe:
            (folder / "segmentation.txt").write_text(
                f"{self.data_info.get('segmentation')}: the BPE codes are not in this export (fairseq's BPE'd files, "
                "or a data cache written before normlab kept the codes); segment input with the same codes\n"
            )
            files["segmentation.txt"] = (
                "how the input was segmented, where the codes are not included"
            )
        return files

    def train_batches(self, epoch: int, seed: int):
        batches = self._token_batches(
            "train", self.train_index, self.cfg.data.max_tokens, epoch_generator(seed, epoch)
        )
        return LazyBatches(batches, lambda b: self._collate("train", b))

    def batching(self, seed: int) -> dict:
        src, tgt = self._lengths("train", torch.arange(len(self.corpus.splits["train"][0])))
        first = self.train_batches(0, seed).index_batches
        return {
            "max_tokens": int(self.cfg.data.max_tokens),
            "batch_multiple": int(self.cfg.data.get("batch_multiple", 1)),
            **padding_record(first, src, tgt),
        }

    def _eval_batches(self, split: str) -> LazyBatches:
        n = len(self.corpus.splits[split][0])
        batches = self._token_batches(split, torch.arange(n), self.cfg.data.eval_max_tokens)
        return LazyBatches(batches, lambda b: self._collate(split, b))

    # --- loss ----------------------------------------------------------------------------------
    def _loss_sums(self, model, batch) -> tuple[torch.Tensor, torch.Tensor, int]:
        src, prev, tgt = batch
        lprobs = F.log_softmax(model(src, prev).float(), dim=-1)  # (B, T, V)
        keep = tgt.ne(self.pad)
        nll = -lprobs.gather(-1, tgt.unsqueeze(-1)).squeeze(-1)[keep]
        smooth = -lprobs.sum(-1)[keep]
        eps = float(self.cfg.criterion.label_smoothing)
        eps_i = eps / (lprobs.size(-1) - 1)
        loss = (1.0 - eps - eps_i) * nll + eps_i * smooth  # fairseq's label smoothing
        return loss.sum(), nll.sum(), keep.sum()  # a tensor: the lean GPU loop reads it lazily

    def loss(self, model, batch):
        total, _, n = self._loss_sums(model, batch)
        return total / n.clamp_min(1), n

    # --- evaluation ----------------------------------------------------------------------------
    def _search(self) -> SearchConfig:
        e = self.cfg.eval
        return SearchConfig(
            beam=int(e.beam),
            lenpen=float(e.lenpen),
            max_len_a=float(e.max_len_a),
            max_len_b=int(e.max_len_b),
            max_len=min(int(e.max_len), self.max_pos - 1),
        )

    def _text(self, ids: list[int], vocab=None) -> str:
        line = " ".join((vocab or self.corpus.tgt_vocab).itos[i] for i in ids)
        return remove_bpe(line) if self.bpe else line

    def trivial_baselines(self) -> dict:
        """BLEU of copying the source sentence as its translation, scored as the models' greedy
        and beam output is (tokenized BLEU on the same references): names, numbers and
        punctuation carry over between the languages, so a model that learned little beyond
        copying sits near it (about 1 BLEU on the IWSLT mini test sets), not at 0."""
        scores, sizes = {}, {"train": len(self.train_index)}
        for split in ("valid", "test"):
            src = self.corpus.splits[split][0]
            copies = [
                self._text(src[i].tolist()[:-1], self.corpus.src_vocab)  # without its </s>
                for i in range(len(src))
            ]
            refs = self.corpus.refs[split]
            scores[split] = tokenized_bleu(copies, refs, self.cfg.eval.lowercase)[0].score
            sizes[split] = len(src)
        return {
            "metric": "bleu",
            "rows": {"copy-source (the source sentence in the model's subwords)": scores},
            "sizes": sizes,
        }

    def translate(self, model, split: str, search: SearchConfig) -> list[str]:
        """Hypotheses (tokenized, BPE removed) for every sentence of ``split``, in file order."""
        src = self.corpus.splits[split][0]
        device = next(model.parameters()).device
        out: list[str] = [""] * len(src)
        batches = bucket_batches(src.lengths(), batch_size=int(self.cfg.eval.batch_size))
        for b in bar(batches, f"decode {split} (beam {search.beam})", unit="batch"):
            tokens = pad([src[i].long() for i in b.tolist()], self.pad, self.max_pos).to(device)
            for i, hyp in zip(b.tolist(), decode(model, tokens, search)):
                out[i] = self._text(hyp)
        return out

    def evaluate(self, model, split):
        device = next(model.parameters()).device
        total, nll, n = 0.0, 0.0, 0
        for batch in bar(self._eval_batches(split), f"evaluate {split}", unit="batch"):
            t, nl, k = self._loss_sums(model, tuple(x.to(device) for x in batch))
            total, nll, n = total + t.item(), nll + nl.item(), n + int(k)
        out = {"loss": total / n, "nll": nll / n, "ppl": math.exp(min(nll / n, 50.0))}
        if split == "valid" and self.cfg.eval.valid_bleu:
            greedy = SearchConfig(**{**vars(self._search()), "beam": 1})
            hyps = self.translate(model, "valid", greedy)
            refs = self.corpus.refs["valid"]
            out["bleu"] = tokenized_bleu(hyps, refs, self.cfg.eval.lowercase)[0].score
        return out

    def test(self, model, run_dir: Path):
        return {**self.evaluate(model, "test"), **self.generate(model, "test", Path(run_dir))}

    def generate(self, model, split: str, out_dir: Path) -> dict:
        """Decode ``split`` as task.eval says (beam, lenpen, lengths), write the hypotheses and
        references, tokenized and detokenized, as ``<split>.{hyp,ref}[.detok].txt`` in ``out_dir``,
        and score them both ways, each BLEU with its sacreBLEU signature."""
        t0 = time.perf_counter()
        search = self._search()
        hyps = self.translate(model, split, search)
        seconds = time.perf_counter() - t0
        refs = self.corpus.refs[split]
        scored = score_both(hyps, refs, self.cfg.data.tgt, self.cfg.eval.lowercase)
        for kind, lines in scored.pop("lines").items():
            atomic_write_bytes(out_dir / f"{split}.{kind}.txt", ("\n".join(lines) + "\n").encode())
        return {
            **scored,
            "decode": f"beam={search.beam} lenpen={search.lenpen} max_len=min({search.max_len_a}*src+"
            f"{search.max_len_b}, {search.max_len})",
            "decode_s": round(seconds, 2),
        }


IWSLT14_HOW = (
    "Prepare it with `normlab-data prepare iwslt14_de_en --out <data_dir>/iwslt14_de_en` (fairseq's "
    "prepare-iwslt14.sh steps; add --archive de-en.tgz to use a downloaded copy; normlab-data fetch "
    "iwslt14_de_en prints it)."
)
IWSLT15_HOW = (
    "Fetch it with `normlab-data prepare iwslt15_en_vi --out <data_dir>/iwslt15_en_vi` (the Stanford "
    "NMT release; --from DIR uses a downloaded copy; normlab-data fetch iwslt15_en_vi prints it)."
)


@register_task("iwslt14_de_en")
class IWSLT14DeEnTask(TranslationTask):
    name, how = "iwslt14_de_en", IWSLT14_HOW


@register_task("iwslt15_en_vi")
class IWSLT15EnViTask(TranslationTask):
    name, how = "iwslt15_en_vi", IWSLT15_HOW
