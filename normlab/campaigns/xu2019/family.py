"""One declared family of tests for every finding of a scale's studies.

A reader of the findings scans every claim of every study, so the multiple-comparison corrections
run over all of them together: for each member study of claims.yaml's ``family`` (the fixed-lr
grid, the tuned grid, the pre-norm study), every claim row's two-sided paired t-test and its TOST
equivalence test, and each claim's sign test across tasks. Whichever member's report is written,
the other members' tests are recomputed from their committed run copies, so every findings table
of the scale is adjusted over the same family. A report of runs that belong to no member (a user's
own sweep) is its own family, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from ...report import stats as S
from ...report.claims import settings
from ...report.tables import Table
from .findings import CLAIMS, Finding


@dataclass
class Member:
    study: str
    folder: str  # e.g. results/mini; "" for a report outside the family
    findings: list[Finding]
    signs: dict = field(default_factory=dict)  # claim key -> sign test (wins, n, p, p_holm, p_bh)


@dataclass
class Family:
    members: list[Member]
    declared: bool
    size: int = 0
    absent: list[str] = field(default_factory=list)

    def member(self, study: str) -> Optional[Member]:
        return next((m for m in self.members if m.study == study), None)


def sign_tests(fs: list[Finding]) -> dict[str, dict]:
    """Per claim: the two-sided sign test over tasks of the mean difference (positive = as claimed).
    Rows without a difference (divergence, a cell that did not train) are counted in "skipped";
    rows of a task outside the overfitting or the learning regime are left out."""
    out = {}
    for claim in CLAIMS:
        mine = [
            f
            for f in fs
            if f.claim is claim and f.decided not in ("outside the regime", "not learning")
        ]
        if mine:
            res = S.sign_test([f.diff for f in mine if f.diff is not None])
            res["skipped"] = sum(f.diff is None for f in mine)
            out[claim.key] = res
    return out


def apply(members: list[Member], declared: bool, absent: list[str] = ()) -> Family:
    """Adjust every test of ``members`` together; set each row's MDE at the family's alpha / m."""
    slots: list[tuple[object, str, float]] = []
    for m in members:
        m.signs = sign_tests(m.findings)
        for f in m.findings:
            if f.decided:
                continue
            slots += [(f, "p", f.p)] + ([(f, "tost", f.p_tost)] if f.p_tost is not None else [])
        slots += [(s, "sign", s["p"]) for s in m.signs.values() if s["p"] is not None]
    holm, bh = S.adjust([p for _, _, p in slots])
    for (obj, kind, _), h, b in zip(slots, holm, bh):
        if kind == "p":
            obj.p_holm, obj.p_bh = h, b
        elif kind == "tost":
            obj.tost_holm, obj.tost_bh = h, b
        else:
            obj["p_holm"], obj["p_bh"] = h, b
    size = len(slots)
    cfg = settings()
    for m in members:
        for f in m.findings:
            if not f.decided and size:
                f.mde = S.mde(f.n, f.sd, cfg["alpha"] / size, cfg["power"])
    return Family(members, declared, size, list(absent))


def folders(scale: str) -> dict[str, str]:
    """study -> its results folder at ``scale`` (claims.yaml)."""
    return {s: t.format(scale=scale) for s, t in settings()["family"].items()}


def locate(folder: Path) -> Optional[tuple[str, str]]:
    """(study, scale) of a results folder the family declares, from its name; None otherwise.
    The longest template suffix is tried first: results/mini-tuned is the tuned study at mini, not
    the fixed one at scale "mini-tuned"."""
    folder = Path(folder)
    name = folder.name
    templates = sorted(settings()["family"].items(), key=lambda kv: -len(kv[1]))
    for study, t in templates:
        head, _, tail = Path(t).name.partition("{scale}")
        if Path(t).parent.name != folder.absolute().parent.name:
            continue
        if name.startswith(head) and name.endswith(tail) and len(name) > len(head) + len(tail):
            return study, name[len(head) : len(name) - len(tail)]
    return None


# study, its results folder -> its claim rows from the committed run copies (tuned.member_findings):
# passed in, so this module needs none of the studies' report code
Loader = Callable[[str, Path], list[Finding]]


def build(
    own: list[Finding], folder: Optional[Path], load: Loader, fallback: Optional[dict] = None
) -> Family:
    """The family of the report written for results ``folder`` with rows ``own``. ``fallback``:
    study -> rows to use for a member whose folder has no runs (the tuned report's preset-lr rows
    stand in for the fixed study's)."""
    where = locate(folder) if folder is not None else None
    if where is None:
        return apply([Member("this report", "", own)], declared=False)
    study, scale = where
    members, absent = [], []
    root = Path(folder).parent
    for s, name in folders(scale).items():
        path = root / Path(name).name
        if s == study:
            members.append(Member(s, name, own))
        elif (path / "runs").is_dir():
            members.append(Member(s, name, load(s, path)))
        elif fallback and s in fallback:
            members.append(Member(s, f"{name} (absent: this folder's own runs)", fallback[s]))
        else:
            absent.append(name)
    return apply(members, declared=True, absent=absent)


def family_sentence(fam: Family) -> str:
    """The family's members and size in one sentence, for every findings caption."""

    def tests(m: Member) -> int:
        rows = [f for f in m.findings if not f.decided]
        return (
            len(rows)
            + sum(f.p_tost is not None for f in rows)
            + sum(s["p"] is not None for s in m.signs.values())
        )

    kind = (
        "declared family (normlab/configs/study/claims.yaml)"
        if fam.declared
        else "family (this report only)"
    )
    return (
        f"The {kind}, m = {fam.size} tests: "
        + "; ".join(f"{m.study} ({m.folder or 'these runs'}) {tests(m)}" for m in fam.members)
        + (f"; absent: {', '.join(fam.absent)}" if fam.absent else "")
        + " (family table)."
    )


def family_table(fam: Family, data: str = "") -> Table:
    """``data``: the caption sentence naming this report's data (aggregate.data_sentence)."""
    t = Table(
        "family",
        "The family of tests every correction runs over",
        [
            "study",
            "folder",
            "claim rows",
            "paired t-tests",
            "TOST tests",
            "sign tests",
            "rows without a test",
        ],
    )
    for m in fam.members:
        tested = [f for f in m.findings if not f.decided]
        t.rows.append(
            [
                m.study,
                m.folder or "–",
                str(len(m.findings)),
                str(len(tested)),
                str(sum(f.p_tost is not None for f in tested)),
                str(sum(s["p"] is not None for s in m.signs.values())),
                str(len(m.findings) - len(tested)),
            ]
        )
    t.rows.append(
        [
            "all",
            "",
            str(sum(len(m.findings) for m in fam.members)),
            "",
            "",
            "",
            f"m = {fam.size} tests",
        ]
    )
    how = (
        "declared in normlab/configs/study/claims.yaml (family): every study's tests are recomputed from its "
        "committed run copies whichever member's report is written"
        if fam.declared
        else "these runs belong to no study of normlab/configs/study/claims.yaml, so the family is this report's "
        "own tests"
    )
    t.caption = (
        f"Holm and Benjamini-Hochberg adjust all m = {fam.size} tests together: {how}. "
        "Rows decided without a test (divergence, a cell that did not train, outside the overfitting "
        "or the learning regime, fewer than 2 paired "
        "seeds) are not in the family."
        + (f" Absent members (no runs yet): {', '.join(fam.absent)}." if fam.absent else "")
    )
    t.notes = [data] if data else []
    return t
