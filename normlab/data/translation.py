"""Parallel corpora in their released layouts, turned into id tensors with a joint BPE or word vocab.

Layouts (under the task's data folder, e.g. ``$NORMLAB_DATA/iwslt14_de_en``):
- ``fairseq``: what ``examples/translation/prepare-iwslt14.sh`` writes. ``tmp/{split}.{lang}`` are
  Moses-tokenized and lowercased, before BPE: the text BLEU is computed on. The BPE'd
  ``{split}.{lang}`` ("@@ " marks) and the ``code`` file sit beside ``tmp/``.
- ``stanford``: the Stanford NMT IWSLT'15 release: ``{train,tst2012,tst2013}.{lang}`` tokenized and
  cased, ``vocab.{lang}`` in tensorflow/nmt format (``<unk>``, ``<s>``, ``</s>`` first).

A split is named by a file stem with an optional line slice, ``tst2012[:1253]``, so that a
documented subset of the real files can stand in for a missing train split (see the task configs).
Reading the files is parallel.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import DataError
from .bpe import learn_cached
from .cache import cached
from .parallel import (
    BOS,
    EOS,
    choose_splits,
    parse_stem,
    read_bpe_split,
    read_split,
    read_vocab_file,
    split_path,
)
from .subset import check_cap
from .text import PAD, UNK, Ragged, Vocab


@dataclass
class Corpus:
    src_vocab: Vocab
    tgt_vocab: Vocab
    splits: dict[
        str, tuple[Ragged, Ragged]
    ]  # split -> (source ids, target ids), each ending in </s>
    refs: dict[str, list[str]]  # tokenized target lines: what BLEU is computed on
    info: dict
    bpe_codes: Optional[str] = None  # learned joint BPE merges (to_codes), when learned here


def _vocab_from(pieces: list[list[list[str]]]) -> list[str]:
    """fairseq-preprocess --joined-dictionary with threshold 0: every train piece, by count."""
    counts: dict[str, int] = {}
    for side in pieces:
        for line in side:
            for p in line:
                counts[p] = counts.get(p, 0) + 1
    return [PAD, UNK, BOS, EOS] + sorted(counts, key=lambda w: (-counts[w], w))


def _segment(
    root: Path,
    d,
    chosen: dict,
    text: dict,
    limit: dict,
    files: list,
    name: str,
    cache_dir: Path,
    how: str,
) -> tuple[dict, list[str], list[str], str, Optional[str]]:
    """(pieces per split and side, source vocab, target vocab, a description of the segmentation,
    the BPE codes when they were learned here)."""
    kind = d.get("vocab", "bpe")
    if (
        kind == "word"
    ):  # the release's own word vocabularies (Luong & Manning 2015), separate per side
        sv, tv = read_vocab_file(root / f"vocab.{d.src}"), read_vocab_file(root / f"vocab.{d.tgt}")
        pieces = {
            s: ([ln.split() for ln in a], [ln.split() for ln in b]) for s, (a, b) in text.items()
        }
        return (
            pieces,
            [PAD] + sv,
            [PAD] + tv,
            f"word vocabularies vocab.{d.src}/vocab.{d.tgt}",
            None,
        )
    if kind != "bpe":
        raise DataError(f"task.data.vocab must be 'bpe' or 'word', got {kind!r}")
    b = d.bpe
    if b.source not in ("auto", "learn", "files"):
        raise DataError(f"task.data.bpe.source must be auto, learn or files, got {b.source!r}")
    bpe_files = [
        root / f"{parse_stem(chosen[s])[0]}.{lang}" for s in chosen for lang in (d.src, d.tgt)
    ]
    use_files = b.source == "files" or (
        b.source == "auto"
        and d.layout == "fairseq"
        and not any(limit.values())
        and all(p.is_file() for p in bpe_files)
    )
    codes = None
    if use_files:  # fairseq's own BPE'd files: exactly its subword-nmt segmentation and dictionary
        pieces = {}
        for s in text:
            a, c = read_bpe_split(root, d, chosen[s], how)
            if len(a) != len(text[s][0]):
                raise DataError(
                    f"{root / parse_stem(chosen[s])[0]}.{d.src} has {len(a):,} lines but the "
                    f"tokenized tmp/ file has {len(text[s][0]):,}; re-run the BPE step. {how}"
                )
            pieces[s] = ([ln.split() for ln in a], [ln.split() for ln in c])
        desc = "fairseq's BPE'd files (subword-nmt code)"
    else:
        train_lines = text["train"][0] + text["train"][1]  # joint: both sides, train only
        bpe = learn_cached(
            cache_dir,
            name,
            files,
            train_lines,
            b.merges,
            b.get("min_frequency", 2),
            extra={"splits": chosen, "limit": limit},
        )
        pieces = {s: (bpe.encode(a), bpe.encode(c)) for s, (a, c) in text.items()}
        desc = f"joint BPE learned on train with tokenizers ({len(bpe):,} merges)"
        codes = bpe.to_codes()
    if d.get("share_vocab", True):
        joint = _vocab_from([pieces["train"][0], pieces["train"][1]])
        return pieces, joint, joint, desc, codes
    return pieces, _vocab_from([pieces["train"][0]]), _vocab_from([pieces["train"][1]]), desc, codes


def _build(
    root: Path, d, chosen: dict, note, files: list, name: str, cache_dir: Path, how: str
) -> dict:
    text = {s: read_split(root, d, chosen[s], how) for s in ("train", "valid", "test")}
    limit = {k: int(v) for k, v in dict(d.get("limit") or {}).items() if v}
    for s, n in limit.items():  # a cap above the split's size is a mistake, not "all"
        check_cap(n, f"task.data.limit.{s}", len(text[s][0]), f"{s} pairs of {chosen[s]!r}")
        text[s] = (text[s][0][:n], text[s][1][:n])
    pieces, svocab, tvocab, desc, codes = _segment(
        root, d, chosen, text, limit, files, name, cache_dir, how
    )
    sv, tv = Vocab(svocab), Vocab(tvocab)
    out = {
        "src_vocab": svocab,
        "tgt_vocab": tvocab,
        "note": note,
        "kind": desc,
        "dropped": 0,
        "limit": limit,
        "bpe_codes": codes,
    }
    for s, (a, c) in pieces.items():
        keep = list(range(len(a)))
        if s == "train":  # an empty side teaches nothing; fairseq's cleaned train split has none
            keep = [i for i in keep if a[i] and c[i]]
            out["dropped"] = len(a) - len(keep)
        out[s] = {
            "src": Ragged.from_lists([sv.encode(a[i]) + [sv.stoi[EOS]] for i in keep]).state(),
            "tgt": Ragged.from_lists([tv.encode(c[i]) + [tv.stoi[EOS]] for i in keep]).state(),
        }
        if s != "train":
            out[s]["refs"] = "\n".join(text[s][1])
    return out


def load_corpus(root: Path, d, name: str, cache_dir: Path, how: str) -> Corpus:
    """Read, segment and index the three splits once; later runs load the tensors from the cache."""
    root = Path(root)
    if not root.is_dir():
        raise DataError(
            f"data folder {root} for task {name} does not exist; set NORMLAB_DATA (or "
            f"paths.data_dir) to the folder that holds '{name}/'. {how}"
        )
    chosen, note = choose_splits(root, d, how)
    stems = {parse_stem(v)[0] for v in chosen.values()}
    candidates = [
        p
        for stem in stems
        for lang in (d.src, d.tgt)
        for p in (split_path(root, d.layout, stem, lang), root / f"{stem}.{lang}")
    ]
    files = sorted(
        {p for p in candidates + [root / f"vocab.{d.src}", root / f"vocab.{d.tgt}"] if p.is_file()}
    )
    options = {"data": _plain(d), "chosen": chosen}
    data = cached(
        cache_dir,
        name,
        files,
        options,
        lambda: _build(root, d, chosen, note, files, name, cache_dir, how),
    )
    splits = {
        s: (
            Ragged(data[s]["src"]["flat"], data[s]["src"]["offsets"]),
            Ragged(data[s]["tgt"]["flat"], data[s]["tgt"]["offsets"]),
        )
        for s in ("train", "valid", "test")
    }
    refs = {s: data[s]["refs"].split("\n") for s in ("valid", "test")}
    subset = data["note"]
    if data["limit"]:
        subset = (
            (subset + "; " if subset else "")
            + "first lines only: "
            + ", ".join(f"{s} {n:,}" for s, n in data["limit"].items())
        )
    info = {
        "source": "real",
        "subset": subset,
        "segmentation": data["kind"],
        "splits": chosen,
        "sizes": {s: len(v[0]) for s, v in splits.items()},
        "train_pairs_dropped_empty": data["dropped"],
        "vocab": {"src": len(data["src_vocab"]), "tgt": len(data["tgt_vocab"])},
    }
    # caches written before the codes were kept lack them: the export then says so
    return Corpus(
        Vocab(data["src_vocab"]),
        Vocab(data["tgt_vocab"]),
        splits,
        refs,
        info,
        data.get("bpe_codes"),
    )


def _plain(d) -> dict:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(d, resolve=True) if OmegaConf.is_config(d) else dict(d)
