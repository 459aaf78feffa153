"""Joint BPE in subword-nmt's format, learned and applied with the `tokenizers` library.

fairseq's IWSLT recipe learns 10,000 merges with subword-nmt on the concatenated train sides and
writes pieces with "@@ " continuation marks ("neu@@ ro@@ n"); ``--remove-bpe`` undoes it. This
module produces the same format so that hypotheses, references and a fairseq ``code`` file are
interchangeable:
- learning uses ``tokenizers``' BpeTrainer with subword-nmt's end-of-word marker ``</w>`` (the last
  character of a word is the symbol ``c</w>``), so the merge list is a subword-nmt v0.2 code file;
  vocab_size = initial symbols + merges, which gives exactly ``merges`` merge operations;
- applying uses a BPE model whose vocabulary is the merges plus every character of the text being
  encoded, so a character never seen in training passes through unchanged, as subword-nmt does,
  instead of being dropped.
``tokenizers`` breaks ties between equally frequent pairs in hash order, so two learnings on the
same text can order tied merges differently (and, at the cut-off, pick different last merges).
The learned merges are therefore cached on disk and shared by every run that reads the same
files with the same options; the prepare script writes them as ``code`` for the same reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from ..progress import bars_enabled
from .cache import cached

SUFFIX = "</w>"  # subword-nmt's end-of-word marker
MARK = "@@"  # subword-nmt's continuation mark on every piece but a word's last


def remove_bpe(line: str) -> str:
    """fairseq's ``--remove-bpe`` ("@@ " symbol): pieces back to the tokenized words."""
    return (line + " ").replace(MARK + " ", "").rstrip()


def _symbols(lines: Iterable[str]) -> set[str]:
    """The initial symbols of subword-nmt: every character, and every word-final character + </w>."""
    chars, finals = set(), set()
    for line in lines:
        for word in line.split():
            chars.update(word)
            finals.add(word[-1] + SUFFIX)
    return chars | finals


def _tokenizer(model) -> Tokenizer:
    tok = Tokenizer(model)
    # The text is already Moses-tokenized: words are whitespace-separated, nothing else splits them.
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return tok


class JointBPE:
    """An ordered list of merges (a, b); the rank of a merge is its position."""

    def __init__(self, merges: Sequence[tuple[str, str]]):
        self.merges = [tuple(m) for m in merges]

    def __len__(self) -> int:
        return len(self.merges)

    @classmethod
    def learn(cls, lines: Sequence[str], merges: int, min_frequency: int = 2) -> JointBPE:
        """Learn up to ``merges`` merges on ``lines`` (train only; both languages for joint BPE).
        Fewer are learned when no pair reaches ``min_frequency`` (subword-nmt's default is 2)."""
        if merges < 0:
            raise ValueError(f"task.data.bpe.merges must be >= 0, got {merges}")
        tok = _tokenizer(models.BPE(end_of_word_suffix=SUFFIX))
        trainer = trainers.BpeTrainer(
            vocab_size=len(_symbols(lines)) + merges,
            min_frequency=min_frequency,
            end_of_word_suffix=SUFFIX,
            show_progress=bars_enabled(),
        )
        tok.train_from_iterator(lines, trainer)
        learned = json.loads(tok.to_str())["model"]["merges"]
        return cls([tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in learned])

    def encode(self, lines: Sequence[str]) -> list[list[str]]:
        """Each line as subword-nmt pieces: "@@" on every piece of a word but the last."""
        vocab: dict[str, int] = {}
        for sym in sorted(_symbols(lines)):
            vocab.setdefault(sym, len(vocab))
        for a, b in self.merges:
            for sym in (a, b, a + b):
                vocab.setdefault(sym, len(vocab))
        tok = _tokenizer(
            models.BPE(vocab=vocab, merges=list(self.merges), end_of_word_suffix=SUFFIX)
        )
        out = []
        for enc in tok.encode_batch(list(lines), add_special_tokens=False):
            out.append([p[: -len(SUFFIX)] if p.endswith(SUFFIX) else p + MARK for p in enc.tokens])
        return out

    # --- subword-nmt code files (fairseq's ``code``) ---------------------------------------
    def to_codes(self) -> str:
        return "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in self.merges)

    @classmethod
    def from_codes(cls, text: str, path: str = "<codes>") -> JointBPE:
        merges = []
        for no, line in enumerate(text.split("\n"), start=1):
            if not line.strip() or (no == 1 and line.startswith("#version")):
                continue
            parts = line.rstrip("\r").split(" ")
            if len(parts) != 2:
                raise ValueError(f"{path}:{no}: expected a merge 'a b', got {line!r}")
            merges.append((parts[0], parts[1]))
        return cls(merges)


def learn_cached(
    cache_dir: Path,
    name: str,
    files: list[Path],
    lines: Sequence[str],
    merges: int,
    min_frequency: int = 2,
    extra: dict | None = None,
) -> JointBPE:
    """Learn once per (source files, options); later runs load the merges from ``cache_dir``."""
    options = {
        "merges": merges,
        "min_frequency": min_frequency,
        "lines": len(lines),
        **(extra or {}),
    }
    data = cached(
        cache_dir,
        f"{name}-bpe",
        files,
        options,
        lambda: {"codes": JointBPE.learn(lines, merges, min_frequency).to_codes()},
    )
    return JointBPE.from_codes(data["codes"])
