"""Readers for the text-classification datasets in their released formats.

Each returns ``{split: (texts, labels)}`` for train/valid/test and a note on the split used:
- RT (rt-polarity.pos/.neg, cp1252 bytes): no official split; a seeded 80/10/10 split.
- SST-2 (GLUE train.tsv/dev.tsv): GLUE test has no labels, so dev is our test and a seeded
  hold-out of train (``valid_size`` rows) is our validation set.
- IMDB (aclImdb/ or the .tar.gz): official 25k/25k; a seeded hold-out of train is validation.
"""

from __future__ import annotations

import tarfile
import zlib
from pathlib import Path

import torch

from ..errors import DataError
from .sources import commands

Split = dict[str, tuple[list[str], list[int]]]


def how(task: str, root: Path) -> str:
    """How to lay out ``task``'s folder ``root`` (normlab.data.sources, quoted by every error)."""
    return f"To prepare it: {' && '.join(commands(task, root.parent))} (normlab-data fetch {task} prints it)"


def _need(path: Path, prepare: str) -> Path:
    if not path.exists():
        raise DataError(f"missing data file {path}. {prepare}")
    return path


def _decode(raw: bytes, path, encoding: str = "utf-8") -> str:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in raw[:4096]:
        raise DataError(
            f"{path}: looks like UTF-16/32 (a byte-order mark or NUL bytes); "
            f"re-encode the file as {encoding}, e.g. iconv -f UTF-16 -t UTF-8"
        )
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise DataError(
            f"{path}:{line}: byte {raw[e.start]:#04x} (offset {e.start}) is not valid {encoding} "
            f"({e.reason}); re-encode the file as {encoding}"
        ) from None


def _holdout(texts, labels, n_hold: int, seed: int):
    """Split off ``n_hold`` seeded examples: (kept, held)."""
    perm = torch.randperm(len(texts), generator=torch.Generator().manual_seed(seed)).tolist()
    held, kept = sorted(perm[:n_hold]), sorted(perm[n_hold:])
    pick = lambda idx: ([texts[i] for i in idx], [labels[i] for i in idx])  # noqa: E731
    return pick(kept), pick(held)


def read_rt(root: Path, split_seed: int = 0) -> tuple[Split, str]:
    how_ = how("rt", root)
    texts, labels = [], []
    for name, label in (("rt-polarity.neg", 0), ("rt-polarity.pos", 1)):
        path = _need(root / name, how_)
        raw = path.read_bytes()
        if not raw.strip():
            raise DataError(f"{path} is empty. {how_}")
        # The released files are cp1252 bytes; a UTF-8 re-encoding (as in some mirrors) decodes
        # to the same text. Try UTF-8 first: cp1252 would silently turn UTF-8 into mojibake.
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = _decode(raw, path, "cp1252")
        if "\x00" in text[:4096]:
            _decode(raw, path)  # raises the UTF-16 message
        # Split on "\n" only: the cp1252 files contain 0x85, which str.splitlines() treats as a newline.
        lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
        texts += lines
        labels += [label] * len(lines)
    n = len(texts)
    rest, test = _holdout(texts, labels, n // 10, split_seed)
    train, valid = _holdout(*rest, n // 10, split_seed + 1)
    note = f"RT has no official split: seeded 80/10/10 split (split_seed={split_seed})"
    return {"train": train, "valid": valid, "test": test}, note


def _read_tsv(path: Path) -> tuple[list[str], list[int]]:
    lines = _decode(path.read_bytes(), path).split("\n")
    if not lines or not lines[0].strip():
        raise DataError(
            f"{path} is empty; expected a GLUE SST-2 TSV with header 'sentence<TAB>label'"
        )
    header = [h.strip() for h in lines[0].rstrip("\r").split("\t")]
    if "label" not in header or "sentence" not in header:
        raise DataError(
            f"{path}:1: header {header} has no 'sentence' and 'label' columns; "
            "use the labeled GLUE train.tsv/dev.tsv (test.tsv has no labels)"
        )
    si, li = header.index("sentence"), header.index("label")
    texts, labels = [], []
    for no, line in enumerate(lines[1:], start=2):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) != len(header):
            raise DataError(
                f"{path}:{no}: expected {len(header)} tab-separated columns {header}, got "
                f"{len(cols)}; the GLUE format has exactly one tab per line: fix or delete that line"
            )
        if cols[li].strip() not in ("0", "1"):
            raise DataError(
                f"{path}:{no}: label {cols[li]!r} is not 0 or 1 (SST-2 is binary: 0 negative, "
                "1 positive); fix or delete that line"
            )
        texts.append(cols[si].strip())
        labels.append(int(cols[li]))
    if not texts:
        raise DataError(f"{path} has a header but no rows; use the full GLUE SST-2 file")
    return texts, labels


def read_sst2(root: Path, valid_size: int = 872, split_seed: int = 0) -> tuple[Split, str]:
    train = _read_tsv(_need(root / "train.tsv", how("sst2", root)))
    test = _read_tsv(_need(root / "dev.tsv", how("sst2", root)))
    train, valid = _holdout(*train, valid_size, split_seed)
    note = (
        f"SST-2: GLUE test is unlabeled, so GLUE dev is reported as test; validation is a seeded "
        f"hold-out of {valid_size} train rows (split_seed={split_seed})"
    )
    return {"train": train, "valid": valid, "test": test}, note


def _imdb_members(root: Path) -> list[tuple[str, bytes]]:
    """(relative path, bytes) of aclImdb/{train,test}/{pos,neg}/*.txt, from the folder or tarball."""
    folder = root / "aclImdb"
    if folder.is_dir():
        return [
            (p.relative_to(root).as_posix(), p.read_bytes())
            for p in sorted(folder.glob("*/*/*.txt"))
        ]
    for name in ("aclImdb.tar.gz", "aclImdb_v1.tar.gz"):
        path = root / name
        if not path.exists():
            continue
        try:
            with tarfile.open(path, "r:gz") as tar:
                members = [
                    (m.name, tar.extractfile(m).read())
                    for m in tar
                    if m.isfile() and m.name.endswith(".txt")
                ]
                # tarfile stops quietly at a damaged header; reading the gzip stream to its end
                # makes gzip check its length and CRC, so damage anywhere is an error.
                while tar.fileobj.read(1 << 20):
                    pass
        except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
            raise DataError(
                f"{path} is truncated or corrupt ({type(e).__name__}: {e}); delete it and "
                f"download it again. {how('imdb', root)}"
            ) from None
        return members
    raise DataError(f"no aclImdb/ folder or aclImdb.tar.gz in {root}. {how('imdb', root)}")


def read_imdb(root: Path, valid_size: int = 2500, split_seed: int = 0) -> tuple[Split, str]:
    found: dict[str, list[tuple[str, str, int]]] = {"train": [], "test": []}
    for name, raw in _imdb_members(root):
        parts = name.split("/")
        if len(parts) != 4 or parts[1] not in found or parts[2] not in ("pos", "neg"):
            continue  # unsup/, urls, README
        found[parts[1]].append((name, _decode(raw, f"{root}/{name}"), int(parts[2] == "pos")))
    for split, items in found.items():
        if not items:
            raise DataError(f"{root}: no aclImdb/{split}/{{pos,neg}}/*.txt reviews found")
    out = {}
    for split, items in found.items():
        items.sort()
        out[split] = ([t for _, t, _ in items], [y for _, _, y in items])
    out["train"], out["valid"] = _holdout(*out["train"], valid_size, split_seed)
    note = f"IMDB: official 25k test; validation is a seeded hold-out of {valid_size} train reviews"
    return out, note


def synthetic(
    n_train: int = 4000, n_eval: int = 500, vocab: int = 64, length: int = 24, seed: int = 0
) -> tuple[Split, str]:
    """GENERATED data: label = 1 iff tokens from the first quarter of the vocabulary outnumber
    those from the second quarter. Needs attention over the whole sequence; no download."""
    g = torch.Generator().manual_seed(seed)

    def make(n):
        toks = torch.randint(0, vocab, (n, length), generator=g)
        a = (toks < vocab // 4).sum(1)
        b = ((toks >= vocab // 4) & (toks < vocab // 2)).sum(1)
        keep = a != b
        toks, labels = toks[keep], (a > b)[keep].long()
        return [" ".join(f"w{t}" for t in row.tolist()) for row in toks], labels.tolist()

    note = "GENERATED synthetic counting task (not a real dataset)"
    return {"train": make(n_train), "valid": make(n_eval), "test": make(n_eval)}, note
