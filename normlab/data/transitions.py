"""Arc-standard transition system, its static oracle, and Chen & Manning (2014) features.

Positions: 0 is the artificial ROOT, 1..n the words. Transition ids: 0 = SHIFT, 1 + l =
LEFT-ARC(l), 1 + L + l = RIGHT-ARC(l) for label l of L (unlabeled data uses L = 1), so there
are 2L + 1 transitions. As in Chen & Manning's parser, ROOT takes a dependent only when the
buffer is empty, so every parse has exactly one root word.

The static oracle reaches exactly the projective single-root trees. Other gold trees (non-
projective, or several roots) have no transition sequence: they are left out of training (the
task reports how many) and still count in evaluation, where the parser must guess them.
"""

from __future__ import annotations

from typing import Optional, Sequence

SHIFT = 0
N_WORD_FEATS = 18  # s1-s3, b1-b3, lc1/rc1/lc2/rc2 of s1 and s2, lc1(lc1) and rc1(rc1) of s1 and s2
N_LABEL_FEATS = 12  # labels of the 12 child positions among them


class Configuration:
    """Stack, buffer (the next word ``i``), and the arcs built so far."""

    __slots__ = ("n", "stack", "i", "heads", "labels", "left", "right")

    def __init__(self, n: int):
        self.n, self.stack, self.i = n, [0], 1
        self.heads = [-1] * (n + 1)
        # Index -1 (position n + 1) is a sentinel with no children and the NULL label, so feature
        # lookups of "no such token" (-1) need no branches.
        self.labels = [0] * (n + 2)  # feature id of the arc label; 0 = none
        self.left = [[] for _ in range(n + 2)]  # left children, nearest first (leftmost last)
        self.right = [[] for _ in range(n + 2)]  # right children, nearest first (rightmost last)

    def terminal(self) -> bool:
        return self.i > self.n and len(self.stack) == 1

    def legal(self) -> tuple[bool, bool, bool]:
        """(SHIFT, LEFT-ARC, RIGHT-ARC) allowed now."""
        k = len(self.stack)
        buffer_empty = self.i > self.n
        return not buffer_empty, k > 2, k > 2 or (k == 2 and buffer_empty)

    def apply(self, t: int, n_labels: int) -> None:
        if t == SHIFT:
            self.stack.append(self.i)
            self.i += 1
            return
        s1 = self.stack.pop()
        s2 = self.stack.pop()
        left = t <= n_labels
        head, dep = (s1, s2) if left else (s2, s1)
        self.heads[dep] = head
        self.labels[dep] = 1 + (t - 1) % n_labels
        # Arc-standard attaches left dependents right to left and right dependents left to right,
        # so appending keeps the outermost child last in both lists.
        (self.left if left else self.right)[head].append(dep)
        self.stack.append(head)

    def features(self, words: Sequence[int], tags: Sequence[int], labeled: bool) -> list[int]:
        """Chen & Manning's 18 word + 18 tag (+ 12 label) feature ids.

        ``words``/``tags`` hold the ids of ROOT, the n words, then NULL (read by position -1).
        """
        st, i, n, L, R = self.stack, self.i, self.n, self.left, self.right
        k = len(st)
        s1 = st[-1]
        s2 = st[-2] if k > 1 else -1
        s3 = st[-3] if k > 2 else -1
        pos = [
            s1,
            s2,
            s3,
            i if i <= n else -1,
            i + 1 if i + 1 <= n else -1,
            i + 2 if i + 2 <= n else -1,
        ]
        for s in (s1, s2):
            lk, rk = L[s], R[s]
            pos += [
                lk[-1] if lk else -1,
                rk[-1] if rk else -1,
                lk[-2] if len(lk) > 1 else -1,
                rk[-2] if len(rk) > 1 else -1,
            ]
        for s in (s1, s2):
            lc, rc = L[L[s][-1]] if L[s] else (), R[R[s][-1]] if R[s] else ()
            pos += [lc[-1] if lc else -1, rc[-1] if rc else -1]
        # pos order: s1 s2 s3 b1 b2 b3 | lc1 rc1 lc2 rc2 (s1) | same (s2) | lc1lc1 rc1rc1 (s1) | (s2)
        out = [words[x] for x in pos] + [tags[x] for x in pos]
        if labeled:
            lab = self.labels
            out += [lab[x] for x in pos[6:]]
        return out


def oracle(heads: Sequence[int], labels: Sequence[int], n_labels: int) -> Optional[list[int]]:
    """The static arc-standard oracle's transitions for gold ``heads`` (1-based list, 0 = root)
    with label indices ``labels`` (0..n_labels-1); None if the tree is not reachable."""
    n = len(heads)
    gold = [-1] + list(heads)
    missing = [0] * (n + 1)  # gold dependents not attached yet
    for h in heads:
        missing[h] += 1
    c, out = Configuration(n), []
    while not c.terminal():
        st = c.stack
        shift_ok, left_ok, right_ok = c.legal()
        s1, s2 = st[-1], st[-2] if len(st) > 1 else -1
        if left_ok and gold[s2] == s1:
            t = 1 + labels[s2 - 1]
        elif right_ok and gold[s1] == s2 and missing[s1] == 0:
            t = 1 + n_labels + labels[s1 - 1]
        elif shift_ok:
            t = SHIFT
        else:
            return None
        if t != SHIFT:
            missing[s1 if t <= n_labels else s2] -= 1
        out.append(t)
        c.apply(t, n_labels)
    return out if c.heads[1:] == list(heads) else None


def oracle_examples(
    words: Sequence[int],
    tags: Sequence[int],
    heads: Sequence[int],
    labels: Sequence[int],
    n_labels: int,
    labeled: bool,
) -> Optional[tuple[list[list[int]], list[int]]]:
    """(features of each configuration on the oracle path, its gold transition), or None."""
    seq = oracle(heads, labels, n_labels)
    if seq is None:
        return None
    c, feats = Configuration(len(heads)), []
    for t in seq:
        feats.append(c.features(words, tags, labeled))
        c.apply(t, n_labels)
    return feats, seq


def is_projective(heads: Sequence[int]) -> bool:
    """No two arcs cross (the artificial root arc included)."""
    arcs = [(min(d, h), max(d, h)) for d, h in enumerate(heads, 1)]
    for a, b in arcs:
        for c, d in arcs:
            if a < c < b < d:
                return False
    return True
