"""Bracketed PTB constituency trees (``.mrg``) to unlabeled dependencies, in four steps:
1. ``-NONE-`` leaves (traces, null elements) are removed, then constituents left empty;
2. function tags and indices are stripped from phrase labels (``NP-SBJ-1`` -> ``NP``,
   ``PP-LOC=2`` -> ``PP``); POS tags such as ``-LRB-`` are kept as they are;
3. each constituent's head child is picked with Collins' (1999, appendix A) head table, including
   his special NP rule and his coordination rule (a head preceded by CC moves to the conjunct
   before the CC); where no rule matches, the first/last non-punctuation child is the head;
4. the head word of every non-head child depends on the head word of its parent constituent.
The result is unlabeled (relation labels are not part of the Collins table) and projective.
``ptb.read_mrg`` wraps the result in validated ``Sentence``s.
"""

from __future__ import annotations

import re
from typing import Iterator, Optional

from ..errors import DataError

# Collins (1999), appendix A: label -> (search direction, priority list). "left" scans the
# children left to right for the first label of the list, then the second, ...; "right" scans
# right to left. NP has its own rule (_NP_RULE).
HEAD_RULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ADJP": (
        "left",
        (
            "NNS",
            "QP",
            "NN",
            "$",
            "ADVP",
            "JJ",
            "VBN",
            "VBG",
            "ADJP",
            "JJR",
            "NP",
            "JJS",
            "DT",
            "FW",
            "RBR",
            "RBS",
            "SBAR",
            "RB",
        ),
    ),
    "ADVP": (
        "right",
        ("RB", "RBR", "RBS", "FW", "ADVP", "TO", "CD", "JJR", "JJ", "IN", "NP", "JJS", "NN"),
    ),
    "CONJP": ("right", ("CC", "RB", "IN")),
    "FRAG": ("right", ()),
    "INTJ": ("left", ()),
    "LST": ("right", ("LS", ":")),
    "NAC": (
        "left",
        (
            "NN",
            "NNS",
            "NNP",
            "NNPS",
            "NP",
            "NAC",
            "EX",
            "$",
            "CD",
            "QP",
            "PRP",
            "VBG",
            "JJ",
            "JJS",
            "JJR",
            "ADJP",
            "FW",
        ),
    ),
    "PP": ("right", ("IN", "TO", "VBG", "VBN", "RP", "FW")),
    "PRN": ("left", ()),
    "PRT": ("right", ("RP",)),
    "QP": ("left", ("$", "IN", "NNS", "NN", "JJ", "RB", "DT", "CD", "NCD", "QP", "JJR", "JJS")),
    "RRC": ("right", ("VP", "NP", "ADVP", "ADJP", "PP")),
    "S": ("left", ("TO", "IN", "VP", "S", "SBAR", "ADJP", "UCP", "NP")),
    "SBAR": (
        "left",
        ("WHNP", "WHPP", "WHADVP", "WHADJP", "IN", "DT", "S", "SQ", "SINV", "SBAR", "FRAG"),
    ),
    "SBARQ": ("left", ("SQ", "S", "SINV", "SBARQ", "FRAG")),
    "SINV": ("left", ("VBZ", "VBD", "VBP", "VB", "MD", "VP", "S", "SINV", "ADJP", "NP")),
    "SQ": ("left", ("VBZ", "VBD", "VBP", "VB", "MD", "VP", "SQ")),
    "UCP": ("right", ()),
    "VP": (
        "left",
        ("TO", "VBD", "VBN", "MD", "VBZ", "VB", "VBG", "VBP", "VP", "ADJP", "NN", "NNS", "NP"),
    ),
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
        self.label, self.children, self.index = (
            label,
            children,
            index,
        )  # index: 1-based leaf position


def _parse_trees(text: str, path) -> list[tuple[_Node, int]]:
    """(tree, line) for each top-level bracketed tree of ``text``, the contents of ``path``."""
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
                raise DataError(
                    f"{path}:{line}: a leaf must look like (TAG word); got ({label} {' '.join(words)})"
                )
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


_NP_RULE = (
    ("right", {"NN", "NNP", "NNPS", "NNS", "NX", "POS", "JJR"}),
    ("left", {"NP"}),
    ("right", {"$", "ADJP", "PRN"}),
    ("right", {"CD"}),
    ("right", {"JJ", "JJS", "RB", "QP"}),
)


def head_child(label: str, labels: list[str]) -> int:
    """Index of the head child of a constituent ``label`` with child labels ``labels``."""
    if len(labels) == 1:
        return 0
    if label in ("NP", "NX"):  # Collins' NP rule (NX, a nominal below NP, takes it too)
        last = _edge(labels, "right")
        candidates = (
            [last]
            if labels[last] == "POS"
            else [_first(labels, d, g) for d, g in _NP_RULE] + [last]
        )
    else:
        direction, wanted = HEAD_RULES.get(label, ("left", ()))
        candidates = [_first(labels, direction, {w}) for w in wanted] + [_edge(labels, direction)]
    h = next(i for i in candidates if i is not None)
    if h >= 2 and labels[h - 1] == "CC" and labels[h - 2] not in _TREE_PUNCT:
        h -= 2  # Collins' coordination rule: "X CC Y" is headed by X
    return h


def tree_to_dependencies(tree: _Node) -> tuple[list[str], list[str], list[int]]:
    """A cleaned tree's (words, tags, heads); heads as in ``Sentence``, from head_child."""
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
    return words, tags, [heads[i] for i in range(1, len(words) + 1)]


def mrg_dependencies(text: str, path) -> Iterator[tuple[list[str], list[str], list[int], int]]:
    """(words, tags, heads, line) for each tree of the ``.mrg`` contents ``text`` of ``path``."""
    for tree, line in _parse_trees(text, path):
        # PTB files wrap each tree in an unlabeled bracket: ( (S ...) ).
        while not tree.label and not isinstance(tree.children, str) and len(tree.children) == 1:
            tree = tree.children[0]
        cleaned = _clean(tree)
        if cleaned is None:
            continue  # a tree of empty elements only has no words to parse
        yield (*tree_to_dependencies(cleaned), line)
