"""The family of tests Holm adjusts: the primary family, declared in claims.yaml (protocol.py).

The primary family (claims.yaml ``primary``) is every tested claim row of the primary study's
results folder (the fixed-lr study: one row per task and claim). Holm adjusts every hypothesis of
those rows only, and each row's minimum detectable effect is at the family's strictest level,
alpha / (m K). The rows of the
other studies (tuned, pre-norm, placement) and the sign tests across tasks are secondary: their
verdicts are uncorrected and labelled exploratory. A report of runs that belong to no declared
study (a user's own sweep) adjusts its own rows together and says that it is its own family.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ...config_keys import CONFIGS
from ...report import Protocol
from ...report.family import Family, sign_tests
from ...report.family import apply as _apply
from ...report.tables import Table
from .declared import FILES, declared
from .findings import CLAIMS, Finding, look_sizes
from .protocol import SHOWN, settings
from .protocol import protocol as campaign_protocol
from .studies import STUDIES

__all__ = ["Family", "apply", "build", "family_sentence", "family_table", "sign_tests"]


def apply(
    study: str,
    rows: list[Finding],
    primary: bool,
    declared: bool,
    protocol: Optional[Protocol] = None,
) -> Family:
    """The report's family correction (normlab.report.family.apply) with the campaign's looks: a
    primary row may gain seeds, so its MDE is at alpha / (m K) and it has seeds to resolve.
    ``protocol``: the one the rows were tested under (their grid's; None: the campaign's)."""
    keys = [c.key for c in CLAIMS]
    used = protocol or campaign_protocol()
    return _apply(study, rows, used, primary, declared, list(used.looks) or look_sizes(), keys)


def folders(scale: str) -> dict[str, str]:
    """study -> its results folder at ``scale`` (claims.yaml)."""
    return {s: t.format(scale=scale) for s, t in settings()["family"].items()}


def locate(folder: Path) -> Optional[tuple[str, str]]:
    """(study, scale) of a declared study's results folder (studies.py's ``out``, under the folder
    claims.yaml's family lives in), from its name; None otherwise. The longest suffix is tried
    first: results/mini-tuned is the tuned study at mini, not the fixed one at scale "mini-tuned",
    and results/mini-placement the placement study. The scale must be one normlab/configs/scale
    declares: a user's results/my-sweep is no declared study."""
    folder = Path(folder)
    parent = Path(settings()["family"][settings()["primary"]]).parent.name
    if folder.absolute().parent.name != parent:
        return None
    name = folder.name
    for study, spec in sorted(STUDIES.items(), key=lambda kv: -len(kv[1]["out"])):
        head, _, tail = spec["out"].partition("{scale}")
        scale = name[len(head) : len(name) - len(tail)]
        if name.startswith(head) and name.endswith(tail) and scale:
            return (study, scale) if (CONFIGS / "scale" / f"{scale}.yaml").is_file() else None
    return None


def build(
    own: list[Finding],
    folder: Optional[Path],
    study: Optional[str] = None,
    commits: Optional[list[str]] = None,
    protocol: Optional[Protocol] = None,
) -> Family:
    """The family of the report written for results ``folder`` with rows ``own``: the primary
    family when ``folder`` is the primary study's, secondary rows for another declared study's
    (``study`` names it when the folder's name does not), its own family outside them.
    ``commits``: the commits the rows' runs were trained at (else the folder's record's), against
    which the declaration's time is read; ``protocol``: the rows' (None: the campaign's)."""
    where = locate(folder) if folder is not None else None
    # a confirmatory study's rows are the family its declaration (its protocol) names
    declared_study = protocol.study if protocol else ""
    name = study or (where[0] if where else None) or declared_study or None
    if name is None:
        return apply("this report", own, primary=True, declared=False, protocol=protocol)
    primary = name in (settings()["primary"], declared_study or None)
    fam = apply(name, own, primary=primary, declared=True, protocol=protocol)
    if primary and folder is not None:
        # a confirmatory study's declaration is dated by its own file too
        mine = (Path(protocol.declared_in),) if protocol and protocol.declared_in else ()
        fam.when = declared(folder, commits, (*mine, *FILES))
    return fam


def when_text(fam: Family) -> str:
    """When the family was declared against its data (declared.py), as a clause."""
    w = fam.when
    if w is None:
        return "; whether before its runs, git cannot tell here"
    if w.before:
        return f" at {w.declaration}, before the runs it tests (the first at {w.data})"
    return (
        f", last changed at {w.declaration}, after the runs it tests (the first at {w.data}): "
        "exploratory, a test of the rule rather than of a prediction made before the data"
    )


def family_sentence(fam: Family) -> str:
    """Which tests Holm adjusts, in one sentence, for every findings caption."""
    each = (
        f"the {fam.tested_rows} tested rows of the {{}}, each with its support, refutation and "
        f"negligibility hypotheses (m = {fam.size} in all), adjusted by Holm"
    )
    if fam.primary and fam.declared:
        return (
            f"Primary family (declared in {fam.protocol.source or SHOWN}{when_text(fam)}): "
            f"{each.format(fam.study + ' study')}; every other "
            "study's rows and the sign tests across tasks are secondary (exploratory)."
        )
    if fam.primary:
        return (
            "These runs belong to no study of normlab/configs/study/claims.yaml: "
            f"{each.format('report')} as one family."
        )
    return (
        f"Secondary: the {fam.study} study is not the primary study "
        f"({settings()['primary']}), so its verdicts are uncorrected and exploratory; the MDE is "
        "at alpha."
    )


def family_table(fam: Family, data: str = "") -> Table:
    """``data``: the caption sentence naming this report's data (aggregate.data_sentence)."""
    t = Table(
        "family",
        "The family of tests Holm adjusts",
        [
            "study",
            "family",
            "claim rows",
            "tested",
            "untested (did not train, not learning, ...)",
            "hypotheses (m)",
        ],
    )
    tested = [f for f in fam.rows if not f.decided and f.hyps]
    kind = (
        "primary (declared)"
        if fam.primary and fam.declared
        else "this report's own"
        if fam.primary
        else "secondary (exploratory)"
    )
    t.rows.append(
        [
            fam.study,
            kind,
            str(len(fam.rows)),
            str(len(tested)),
            str(len(fam.rows) - len(tested)),
            str(fam.size) if fam.primary else "–",
        ]
    )
    t.caption = family_sentence(fam) + (
        " Rows decided without a test (a cell that did not train, a task not learning, divergence, "
        "fewer than 2 paired seeds) are not in the family."
    )
    t.notes = [data] if data else []
    return t
