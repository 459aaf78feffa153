"""Penn Treebank dependency data: readers for CoNLL-X/U, Malt-TAB (.dp) and bracketed .mrg trees,
and the train/valid/test splits by file.

Every reader returns ``Sentence``s whose heads were validated (a head outside the sentence, no
root, or a cycle raises DataError naming the file and line). Several roots are allowed by the
readers (some conversions have them); the parser's oracle skips such trees (transitions.py).
``.mrg`` constituency trees become dependencies through Collins' head rules (ptb_heads.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import DataError
from .ptb_heads import HEAD_RULES, head_child, mrg_dependencies  # noqa: F401 (head rules stay importable from here)

# Excluded from UAS/LAS, as in Chen & Manning (2014) and the CoNLL-X English setups: the PTB
# punctuation tags (quotes, comma, period, colon); ``PUNCT`` covers CoNLL-U files with UPOS only.
PUNCT_TAGS = frozenset({"``", "''", ",", ".", ":", "PUNCT"})


@dataclass
class Sentence:
    words: list[str]
    tags: list[str]
    heads: list[int]  # head of token i+1 (1-based positions); 0 = the root
    labels: Optional[list[str]]  # relation labels, None when the source has none
    where: str = ""  # "file:line" of the first token, for messages


def check_heads(heads: list[int], path, lines: list[int]) -> None:
    """Raise DataError for a head outside 0..n, a sentence without a root, or a cycle."""
    n = len(heads)
    for i, h in enumerate(heads):
        if not 0 <= h <= n or h == i + 1:
            raise DataError(
                f"{path}:{lines[i]}: token {i + 1} has head {h}, but heads must lie in 0..{n} "
                f"(0 = root) and differ from the token itself; fix the HEAD column"
            )
    if 0 not in heads:
        raise DataError(
            f"{path}:{lines[0]}: the sentence starting here has no root (no token with head 0)"
        )
    state = [0] * (n + 1)  # 0 unvisited, 1 on the current path, 2 reaches the root
    state[0] = 2
    for start in range(1, n + 1):
        path_nodes, x = [], start
        while state[x] == 0:
            state[x] = 1
            path_nodes.append(x)
            x = heads[x - 1]
        if state[x] == 1:
            raise DataError(
                f"{path}:{lines[x - 1]}: token {x} lies on a head cycle (it does not reach the "
                f"root); fix the HEAD column of that sentence"
            )
        for y in path_nodes:
            state[y] = 2


def _lines(path: Path) -> list[str]:
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise DataError(
            f"{path}: byte {e.start} is not valid UTF-8; re-encode the file as UTF-8"
        ) from None


def _int(value: str, path, line: int, column: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise DataError(
            f"{path}:{line}: {column} column is {value!r}, expected an integer"
        ) from None


def _finish(rows: list, path, out: list[Sentence]) -> None:
    """rows: (line, form, tag, head, label) tuples of one sentence."""
    if not rows:
        return
    lines = [r[0] for r in rows]
    heads = [r[3] for r in rows]
    check_heads(heads, path, lines)
    labels = [r[4] for r in rows]
    labeled = all(lb not in (None, "_") for lb in labels)
    out.append(
        Sentence(
            [r[1] for r in rows],
            [r[2] for r in rows],
            heads,
            labels if labeled else None,
            f"{path}:{lines[0]}",
        )
    )


def _read_sentences(path, row) -> list[Sentence]:
    """The sentences of a file with one token a line and blank lines between sentences.

    ``row(ln, raw, rows)`` turns line ``ln`` into a (line, form, tag, head, label) tuple, or None
    to skip it; ``rows`` holds the rows of the sentence so far.
    """
    out, rows = [], []
    for ln, raw in enumerate(_lines(path), 1):
        if not raw.strip():
            _finish(rows, path, out)
            rows = []
        elif (r := row(ln, raw, rows)) is not None:
            rows.append(r)
    _finish(rows, path, out)
    return out


def read_conll(path) -> list[Sentence]:
    """CoNLL-X or CoNLL-U: ID FORM LEMMA CPOS/UPOS POS/XPOS FEATS HEAD DEPREL ...

    The fine PTB tag (column 5) is used, or column 4 where column 5 is ``_``. CoNLL-U comment
    lines, multiword-token ranges (``3-4``) and empty nodes (``5.1``) are skipped.
    """

    def row(ln: int, raw: str, rows: list):
        if raw.startswith("#") and not rows:
            return None
        cols = raw.split("\t")
        if len(cols) < 8:
            cols = raw.split()
        if len(cols) < 8:
            raise DataError(
                f"{path}:{ln}: {len(cols)} columns, but CoNLL-X/U lines have 10 tab-separated "
                "columns (ID FORM LEMMA CPOS POS FEATS HEAD DEPREL PHEAD PDEPREL)"
            )
        if "-" in cols[0] or "." in cols[0]:
            return None
        idx = _int(cols[0], path, ln, "ID")
        if idx != len(rows) + 1:
            raise DataError(
                f"{path}:{ln}: token ID {idx}, expected {len(rows) + 1} (IDs count 1, 2, ... "
                "within a sentence; is a blank line between sentences missing?)"
            )
        tag = cols[4] if cols[4] != "_" else cols[3]
        return ln, cols[1], tag, _int(cols[6], path, ln, "HEAD"), cols[7]

    return _read_sentences(path, row)


def read_malt_tab(path) -> list[Sentence]:
    """Malt-TAB (the NLTK ``.dp`` files): ``form POS head [label]``, blank line between sentences."""

    def row(ln: int, raw: str, rows: list):
        cols = raw.split("\t")
        if len(cols) not in (3, 4):
            raise DataError(
                f"{path}:{ln}: {len(cols)} tab-separated columns, but Malt-TAB lines have 3 "
                "(form, POS, head) or 4 (plus a relation label)"
            )
        return (
            ln,
            cols[0],
            cols[1],
            _int(cols[2], path, ln, "head"),
            cols[3] if len(cols) == 4 else None,
        )

    return _read_sentences(path, row)


def read_mrg(path) -> list[Sentence]:
    """Bracketed PTB trees (``.mrg``), converted to unlabeled dependencies (ptb_heads.py)."""
    out = []
    for words, tags, heads, line in mrg_dependencies("\n".join(_lines(path)), path):
        sent = Sentence(words, tags, heads, None, f"{path}:{line}")
        check_heads(sent.heads, path, [line] * len(sent.heads))
        out.append(sent)
    return out


READERS = {"dp": read_malt_tab, "conll": read_conll, "mrg": read_mrg}


# --- splits --------------------------------------------------------------------------------------

SAMPLE_SPLIT = {"train": (1, 159), "valid": (160, 179), "test": (180, 199)}  # NLTK sample, by file
WSJ_SPLIT = {"train": (2, 21), "valid": (22, 22), "test": (23, 23)}  # standard, by section


def wsj_number(path: Path) -> int:
    m = re.match(r"wsj_(\d{4})", Path(path).name)
    if not m:
        raise DataError(
            f"{path}: expected a WSJ file name wsj_SSNN.* (SS = section) to split by file; "
            "use data.format=conll with one file per split instead"
        )
    return int(m.group(1))


def split_by_file(paths: list[Path], scheme: str = "auto") -> tuple[dict[str, list[Path]], str]:
    """{split: files} and a note saying which split was used.

    ``sample``: the NLTK 10% sample (wsj_0001-0199), wsj_0001-0159 train, 0160-0179 valid,
    0180-0199 test (no standard split exists for it). ``wsj``: sections 02-21 / 22 / 23 of the
    full treebank; other sections are unused. ``auto``: ``wsj`` when sections 02, 22 and 23 exist.
    """
    numbers = {Path(p): wsj_number(p) for p in paths}
    sections = {n // 100 for n in numbers.values()}
    if scheme == "auto":
        scheme = "wsj" if {2, 22, 23} <= sections else "sample"
    if scheme not in ("sample", "wsj"):
        raise DataError(f"task.data.split must be auto, sample or wsj, got {scheme!r}")
    ranges, key = (
        (SAMPLE_SPLIT, lambda n: n) if scheme == "sample" else (WSJ_SPLIT, lambda n: n // 100)
    )
    out = {
        s: sorted(p for p, n in numbers.items() if lo <= key(n) <= hi)
        for s, (lo, hi) in ranges.items()
    }
    for s, files in out.items():
        if not files:
            raise DataError(
                f"no files for the {s} split of the {scheme} scheme among {len(paths)} files "
                f"(wsj numbers {min(numbers.values(), default=0):04d}-"
                f"{max(numbers.values(), default=0):04d})"
            )
    note = (
        "NLTK 10% PTB sample split by file: wsj_0001-0159 train, wsj_0160-0179 valid, wsj_0180-0199 test"
        if scheme == "sample"
        else "standard WSJ split: sections 02-21 train, 22 valid, 23 test"
    )
    return out, note
