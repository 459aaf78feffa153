"""Reading parallel corpora as released: the split files of the fairseq and Stanford layouts,
aligned line by line, a split named by its file stem with an optional line slice, and the
Stanford vocabulary files. Each fault is a DataError that names the file and the fix.

Lines are split on "\\n" only (never ``str.splitlines``, which also breaks at U+2028 and U+0085);
a UTF-8 byte-order mark is stripped and a missing final newline keeps the last line.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import DataError
from .text import UNK

BOS, EOS = "<s>", "</s>"
_STEM = re.compile(r"^([^\[\]]+)(?:\[(-?\d*):(-?\d*)\])?$")


def read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file, without BOM, "\\r" or the final newline."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(
            f"{path}: byte {e.start} is not valid UTF-8 ({e.reason}); the corpus must be "
            "UTF-8 as released"
        ) from None
    text = text.removeprefix("\ufeff")
    lines = text.split("\n")
    if lines[-1] == "":  # the final newline ends the last line; without it the last line stays
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def read_parallel(src: Path, tgt: Path, how: str = "") -> tuple[list[str], list[str]]:
    """Both sides of a parallel corpus; DataError naming the files on a missing side, an empty
    file, or different line counts."""
    missing = [p for p in (src, tgt) if not Path(p).is_file()]
    if missing:
        have = [str(p) for p in (src, tgt) if p not in missing]
        raise DataError(
            f"missing {', '.join(map(str, missing))}"
            + (f" (its other side {have[0]} exists)" if have else "")
            + f". {how}".rstrip()
        )
    a, b = read_lines(src), read_lines(tgt)
    for path, lines in ((src, a), (tgt, b)):
        if not lines:
            raise DataError(f"{path} is empty. {how}".rstrip())
    if len(a) != len(b):
        raise DataError(
            f"{src} has {len(a):,} lines but {tgt} has {len(b):,}; the two sides of a parallel "
            f"corpus must align line by line. {how}".rstrip()
        )
    return a, b


def parse_stem(spec: str) -> tuple[str, slice]:
    """ "tst2012[:1253]" -> ("tst2012", slice(None, 1253))."""
    m = _STEM.match(spec.strip())
    if not m:
        raise DataError(
            f"bad split name {spec!r} in task.data.splits/subset; use 'stem' or 'stem[a:b]'"
        )
    to_int = lambda s: int(s) if s not in (None, "") else None  # noqa: E731
    return m.group(1), slice(to_int(m.group(2)), to_int(m.group(3)))


def split_path(root: Path, layout: str, stem: str, lang: str) -> Path:
    if layout == "fairseq":
        return root / "tmp" / f"{stem}.{lang}"
    if layout == "stanford":
        return root / f"{stem}.{lang}"
    raise DataError(f"task.data.layout must be 'fairseq' or 'stanford', got {layout!r}")


def choose_splits(root: Path, d, how: str) -> tuple[dict[str, str], str | None]:
    """The standard splits when the train files exist; otherwise the configured documented
    subset of the real files (mini), announced in the returned note; otherwise a DataError."""
    train = [
        split_path(root, d.layout, parse_stem(d.splits["train"])[0], lang)
        for lang in (d.src, d.tgt)
    ]
    if all(p.is_file() for p in train):
        return dict(d.splits), None
    if not d.get("subset"):
        raise DataError(f"missing {train[0]} / {train[1]} (the train split). {how}")
    listing = f"train={d.subset['train']}, valid={d.subset['valid']}, test={d.subset['test']}"
    note = (
        f"{d.get('subset_note') or 'subset ' + listing} [no {train[0].relative_to(root)}: "
        "not comparable with published numbers]"
    )
    return dict(d.subset), note


def _read_part(
    src: Path, tgt: Path, part: slice, spec: str, how: str
) -> tuple[list[str], list[str]]:
    a, b = read_parallel(src, tgt, how)
    a, b = a[part], b[part]
    if not a:
        raise DataError(
            f"split {spec!r} selects no lines of {src} ({len(read_lines(src)):,} lines)"
        )
    return a, b


def read_split(root: Path, d, spec: str, how: str) -> tuple[list[str], list[str]]:
    """The (source, target) lines of split ``spec``, e.g. "valid" or "tst2012[1253:]"."""
    stem, part = parse_stem(spec)
    return _read_part(
        split_path(root, d.layout, stem, d.src),
        split_path(root, d.layout, stem, d.tgt),
        part,
        spec,
        how,
    )


def read_bpe_split(root: Path, d, spec: str, how: str) -> tuple[list[str], list[str]]:
    """fairseq's BPE'd ``{stem}.{lang}`` beside ``tmp/`` (subword-nmt "@@ " format)."""
    stem, part = parse_stem(spec)
    return _read_part(root / f"{stem}.{d.src}", root / f"{stem}.{d.tgt}", part, spec, how)


def read_vocab_file(path: Path) -> list[str]:
    """tensorflow/nmt vocabulary: one token a line, ``<unk> <s> </s>`` first."""
    if not path.is_file():
        raise DataError(
            f"missing vocabulary {path}; the Stanford IWSLT'15 release has vocab.en/vocab.vi "
            "(normlab-data prepare iwslt15_en_vi fetches them), or set task.data.vocab=bpe"
        )
    words = [w.strip() for w in read_lines(path) if w.strip()]
    if words[:3] != [UNK, BOS, EOS]:
        raise DataError(
            f"{path}: expected '<unk>', '<s>', '</s>' as the first three lines, got {words[:3]}"
        )
    return words
