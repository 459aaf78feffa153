"""Penn Treebank dependency data: readers for CoNLL-X/U, Malt-TAB (.dp) and bracketed .mrg trees.

Every reader returns ``Sentence``s whose heads were validated (a head outside the sentence, no
root, or a cycle raises DataError naming the file and line). Several roots are allowed by the
readers (some conversions have them); the parser's oracle skips such trees (transitions.py).

``.mrg`` constituency trees become dependencies in four documented steps:
1. ``-NONE-`` leaves (traces, null elements) are removed, then constituents left empty;
2. function tags and indices are stripped from phrase labels (``NP-SBJ-1`` -> ``NP``,
   ``PP-LOC=2`` -> ``PP``); POS tags such as ``-LRB-`` are kept as they are;
3. each constituent's head child is picked with Collins' (1999, appendix A) head table, including
   his special NP rule and his coordination rule (a head preceded by CC moves to the conjunct
   before the CC); where no rule matches, the first/last non-punctuation child is the head;
4. the head word of every non-head child depends on the head word of its parent constituent.
The result is unlabeled (relation labels are not part of the Collins table) and projective.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..tasks.base import DataError

# Excluded from UAS/LAS, as in Chen & Manning (2014) and the CoNLL-X English setups: the PTB
# punctuation tags (quotes, comma, period, colon); ``PUNCT`` covers CoNLL-U files with UPOS only.
PUNCT_TAGS = frozenset({"``", "''", ",", ".", ":", "PUNCT"})


@dataclass
class Sentence:
    words: list[str]
    tags: list[str]
    heads: list[int]                 # head of token i+1 (1-based positions); 0 = the root
    labels: Optional[list[str]]      # relation labels, None when the source has none
    where: str = ""                  # "file:line" of the first token, for messages


def check_heads(heads: list[int], path, lines: list[int]) -> None:
    """Raise DataError for a head outside 0..n, a sentence without a root, or a cycle."""
    n = len(heads)
    for i, h in enumerate(heads):
        if not 0 <= h <= n or h == i + 1:
            raise DataError(f"{path}:{lines[i]}: token {i + 1} has head {h}, but heads must lie in 0..{n} "
                            f"(0 = root) and differ from the token itself; fix the HEAD column")
    if 0 not in heads:
        raise DataError(f"{path}:{lines[0]}: the sentence starting here has no root (no token with head 0)")
    state = [0] * (n + 1)  # 0 unvisited, 1 on the current path, 2 reaches the root
    state[0] = 2
    for start in range(1, n + 1):
        path_nodes, x = [], start
        while state[x] == 0:
            state[x] = 1
            path_nodes.append(x)
            x = heads[x - 1]
        if state[x] == 1:
            raise DataError(f"{path}:{lines[x - 1]}: token {x} lies on a head cycle (it does not reach the "
                            f"root); fix the HEAD column of that sentence")
        for y in path_nodes:
            state[y] = 2


def _lines(path: Path) -> list[str]:
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: byte {e.start} is not valid UTF-8; re-encode the file as UTF-8") from None


def _int(value: str, path, line: int, column: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise DataError(f"{path}:{line}: {column} column is {value!r}, expected an integer") from None


def _finish(rows: list, path, out: list[Sentence]) -> None:
    """rows: (line, form, tag, head, label) tuples of one sentence."""
    if not rows:
        return
    lines = [r[0] for r in rows]
    heads = [r[3] for r in rows]
    check_heads(heads, path, lines)
    labels = [r[4] for r in rows]
    labeled = all(lb not in (None, "_") for lb in labels)
    out.append(Sentence([r[1] for r in rows], [r[2] for r in rows], heads, labels if labeled else None,
                        f"{path}:{lines[0]}"))


def read_conll(path) -> list[Sentence]:
    """CoNLL-X or CoNLL-U: ID FORM LEMMA CPOS/UPOS POS/XPOS FEATS HEAD DEPREL ...

    The fine PTB tag (column 5) is used, or column 4 where column 5 is ``_``. CoNLL-U comment
    lines, multiword-token ranges (``3-4``) and empty nodes (``5.1``) are skipped.
    """
    out, rows = [], []
    for ln, raw in enumerate(_lines(path), 1):
        if not raw.strip():
            _finish(rows, path, out)
            rows = []
            continue
        if raw.startswith("#") and not rows:
            continue
        cols = raw.split("\t")
        if len(cols) < 8:
            cols = raw.split()
        if len(cols) < 8:
            raise DataError(f"{path}:{ln}: {len(cols)} columns, but CoNLL-X/U lines have 10 tab-separated "
                            "columns (ID FORM LEMMA CPOS POS FEATS HEAD DEPREL PHEAD PDEPREL)")
        if "-" in cols[0] or "." in cols[0]:
            continue
        idx = _int(cols[0], path, ln, "ID")
        if idx != len(rows) + 1:
            raise DataError(f"{path}:{ln}: token ID {idx}, expected {len(rows) + 1} (IDs count 1, 2, ... "
                            "within a sentence; is a blank line between sentences missing?)")
        tag = cols[4] if cols[4] != "_" else cols[3]
        rows.append((ln, cols[1], tag, _int(cols[6], path, ln, "HEAD"), cols[7]))
    _finish(rows, path, out)
    return out


def read_malt_tab(path) -> list[Sentence]:
    """Malt-TAB (the NLTK ``.dp`` files): ``form POS head [label]``, blank line between sentences."""
    out, rows = [], []
    for ln, raw in enumerate(_lines(path), 1):
        if not raw.strip():
            _finish(rows, path, out)
            rows = []
            continue
        cols = raw.split("\t")
        if len(cols) not in (3, 4):
            raise DataError(f"{path}:{ln}: {len(cols)} tab-separated columns, but Malt-TAB lines have 3 "
                            "(form, POS, head) or 4 (plus a relation label)")
        rows.append((ln, cols[0], cols[1], _int(cols[2], path, ln, "head"), cols[3] if len(cols) == 4 else None))
    _finish(rows, path, out)
    return out


# --- bracketed constituency trees ----------------------------------------------------------------

# Collins (1999), appendix A: label -> (search direction, priority list). "left" scans the
# children left to right for the first label of the list, then the second, ...; "right" scans
# right to left. NP has its own rule (_np_head).
HEAD_RULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ADJP": ("left", ("NNS", "QP", "NN", "$", "ADVP", "JJ", "VBN", "VBG", "ADJP", "JJR", "NP", "JJS", "DT",
                      "FW", "RBR", "RBS", "SBAR", "RB")),
    "ADVP": ("right", ("RB", "RBR", "RBS", "FW", "ADVP", "TO", "CD", "JJR", "JJ", "IN", "NP", "JJS", "NN")),
    "CONJP": ("right", ("CC", "RB", "IN")),
    "FRAG": ("right", ()),
    "INTJ": ("left", ()),
    "LST": ("right", ("LS", ":")),
    "NAC": ("left", ("NN", "NNS", "NNP", "NNPS", "NP", "NAC", "EX", "$", "CD", "QP", "PRP", "VBG", "JJ", "JJS",
                     "JJR", "ADJP", "FW")),
    "PP": ("right", ("IN", "TO", "VBG", "VBN", "RP", "FW")),
    "PRN": ("left", ()),
    "PRT": ("right", ("RP",)),
    "QP": ("left", ("$", "IN", "NNS", "NN", "JJ", "RB", "DT", "CD", "NCD", "QP", "JJR", "JJS")),
    "RRC": ("right", ("VP", "NP", "ADVP", "ADJP", "PP")),
    "S": ("left", ("TO", "IN", "VP", "S", "SBAR", "ADJP", "UCP", "NP")),
    "SBAR": ("left", ("WHNP", "WHPP", "WHADVP", "WHADJP", "IN", "DT", "S", "SQ", "SINV", "SBAR", "FRAG")),
    "SBARQ": ("left", ("SQ", "S", "SINV", "SBARQ", "FRAG")),
    "SINV": ("left", ("VBZ", "VBD", "VBP", "VB", "MD", "VP", "S", "SINV", "ADJP", "NP")),
    "SQ": ("left", ("VBZ", "VBD", "VBP", "VB", "MD", "VP", "SQ")),
    "UCP": ("right", ()),
    "VP": ("left", ("TO", "VBD", "VBN", "MD", "VBZ", "VB", "VBG", "VBP", "VP", "ADJP", "NN", "NNS", "NP")),
    "WHADJP": ("left", ("CC", "WRB", "JJ", "ADJP")),
    "WHADVP": ("right", ("CC", "WRB")),
    "WHNP": ("left", ("WDT", "WP", "WP$", "WHADJP", "WHPP", "WHNP")),
    "WHPP": ("right", ("IN", "TO", "FW")),
}
# Punctuation never heads a constituent when the fallback picks the first/last child.
_TREE_PUNCT = frozenset({"``", "''", ",", ".", ":", "-LRB-", "-RRB-"})


class _Node:
    __slots__ = ("label", "children", "index")

    def __init__(self, label: str, children: list, index: int = 0):
        self.label, self.children, self.index = label, children, index  # index: 1-based leaf position


def _parse_trees(path) -> list[tuple[_Node, int]]:
    """(tree, line) for each top-level bracketed tree of the file."""
    text = "\n".join(_lines(path))
    trees, stack, start_line, line = [], [], 0, 1
    for m in re.finditer(r"\(|\)|[^\s()]+|\n", text):
        tok = m.group()
        if tok == "\n":
            line += 1
        elif tok == "(":
            if not stack:
                start_line = line
            stack.append([None, []])
        elif tok == ")":
            if not stack:
                raise DataError(f"{path}:{line}: unbalanced ')' (no open bracket)")
            label, kids = stack.pop()
            words = [k for k in kids if isinstance(k, str)]
            if words and (len(kids) != 1 or label is None):
                raise DataError(f"{path}:{line}: a leaf must look like (TAG word); got ({label} {' '.join(words)})")
            node = _Node(label, kids[0]) if words else _Node(label or "", kids)
            if stack:
                stack[-1][1].append(node)
            else:
                trees.append((node, start_line))
        elif not stack:
            raise DataError(f"{path}:{line}: text {tok!r} outside any bracketed tree")
        elif stack[-1][0] is None and not stack[-1][1]:
            stack[-1][0] = tok
        else:
            stack[-1][1].append(tok)
    if stack:
        raise DataError(f"{path}:{start_line}: the tree starting here is not closed (missing ')')")
    return trees


def _clean(node: _Node) -> Optional[_Node]:
    """Drop -NONE- leaves and emptied constituents; strip function tags from phrase labels."""
    if isinstance(node.children, str):
        return None if node.label == "-NONE-" else node
    kids = [c for c in (_clean(k) for k in node.children) if c is not None]
    if not kids:
        return None
    label = node.label if node.label.startswith("-") else re.split(r"[-=|]", node.label)[0]
    return _Node(label, kids)


def _first(labels: list[str], direction: str, group) -> Optional[int]:
    """The first child (scanning from the left or the right) whose label is in ``group``."""
    order = range(len(labels)) if direction == "left" else range(len(labels) - 1, -1, -1)
    return next((i for i in order if labels[i] in group), None)


def _edge(labels: list[str], direction: str) -> int:
    """The first non-punctuation child from that side (the fallback when no rule matches)."""
    h = _first(labels, direction, set(labels) - _TREE_PUNCT)
    return h if h is not None else (0 if direction == "left" else len(labels) - 1)


_NP_RULE = (("right", {"NN", "NNP", "NNPS", "NNS", "NX", "POS", "JJR"}), ("left", {"NP"}),
            ("right", {"$", "ADJP", "PRN"}), ("right", {"CD"}), ("right", {"JJ", "JJS", "RB", "QP"}))


def head_child(label: str, labels: list[str]) -> int:
    """Index of the head child of a constituent ``label`` with child labels ``labels``."""
    if len(labels) == 1:
        return 0
    if label in ("NP", "NX"):  # Collins' NP rule (NX, a nominal below NP, takes it too)
        last = _edge(labels, "right")
        candidates = [last] if labels[last] == "POS" else [_first(labels, d, g) for d, g in _NP_RULE] + [last]
    else:
        direction, wanted = HEAD_RULES.get(label, ("left", ()))
        candidates = [_first(labels, direction, {w}) for w in wanted] + [_edge(labels, direction)]
    h = next(i for i in candidates if i is not None)
    if h >= 2 and labels[h - 1] == "CC" and labels[h - 2] not in _TREE_PUNCT:
        h -= 2  # Collins' coordination rule: "X CC Y" is headed by X
    return h


def tree_to_sentence(tree: _Node, where: str) -> Sentence:
    """A cleaned tree's dependency tree (heads from head_child)."""
    words, tags, heads = [], [], {}

    def leaves(node: _Node) -> None:
        if isinstance(node.children, str):
            words.append(node.children)
            tags.append(node.label)
            node.index = len(words)
        else:
            for k in node.children:
                leaves(k)

    def lexical_head(node: _Node) -> int:
        if isinstance(node.children, str):
            return node.index
        kid_heads = [lexical_head(k) for k in node.children]
        h = head_child(node.label, [k.label for k in node.children])
        for i, kh in enumerate(kid_heads):
            if i != h:
                heads[kh] = kid_heads[h]
        return kid_heads[h]

    leaves(tree)
    heads[lexical_head(tree)] = 0
    return Sentence(words, tags, [heads[i] for i in range(1, len(words) + 1)], None, where)


def read_mrg(path) -> list[Sentence]:
    """Bracketed PTB trees (``.mrg``), converted to unlabeled dependencies (module docstring)."""
    out = []
    for tree, line in _parse_trees(path):
        # PTB files wrap each tree in an unlabeled bracket: ( (S ...) ).
        while not tree.label and not isinstance(tree.children, str) and len(tree.children) == 1:
            tree = tree.children[0]
        cleaned = _clean(tree)
        if cleaned is None:
            continue  # a tree of empty elements only has no words to parse
        sent = tree_to_sentence(cleaned, f"{path}:{line}")
        check_heads(sent.heads, path, [line] * len(sent.heads))
        out.append(sent)
    return out


READERS = {"dp": read_malt_tab, "conll": read_conll, "mrg": read_mrg}


# --- splits --------------------------------------------------------------------------------------

SAMPLE_SPLIT = {"train": (1, 159), "valid": (160, 179), "test": (180, 199)}     # NLTK sample, by file
WSJ_SPLIT = {"train": (2, 21), "valid": (22, 22), "test": (23, 23)}            # standard, by section


def wsj_number(path: Path) -> int:
    m = re.match(r"wsj_(\d{4})", Path(path).name)
    if not m:
        raise DataError(f"{path}: expected a WSJ file name wsj_SSNN.* (SS = section) to split by file; "
                        "use data.format=conll with one file per split instead")
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
    ranges, key = (SAMPLE_SPLIT, lambda n: n) if scheme == "sample" else (WSJ_SPLIT, lambda n: n // 100)
    out = {s: sorted(p for p, n in numbers.items() if lo <= key(n) <= hi) for s, (lo, hi) in ranges.items()}
    for s, files in out.items():
        if not files:
            raise DataError(f"no files for the {s} split of the {scheme} scheme among {len(paths)} files "
                            f"(wsj numbers {min(numbers.values(), default=0):04d}-"
                            f"{max(numbers.values(), default=0):04d})")
    note = ("NLTK 10% PTB sample split by file: wsj_0001-0159 train, wsj_0160-0179 valid, wsj_0180-0199 test"
            if scheme == "sample" else "standard WSJ split: sections 02-21 train, 22 valid, 23 test")
    return out, note
