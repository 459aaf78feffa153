"""The statistics the docs name are the ones the report runs: a guide that says "Welch" where the
report pairs seeds, "two-sided" for a claim's test, or Holm over a secondary study's rows tells a
reader something the numbers do not do."""

import re
from pathlib import Path

import pytest

from normlab.campaigns.xu2019.family import family_sentence
from normlab.campaigns.xu2019.findings_text import method
from normlab.report.family import Family

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def sentences(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", " ", path.read_text(), flags=re.S)  # code blocks say no statistics
    return [" ".join(s.split()) for s in re.split(r"(?<=[.;:])\s+(?=[A-Z*(`\"])", text)]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_the_docs_name_the_tests_the_report_runs(page):
    for s in sentences(page):
        low = s.lower()
        if "welch" in low:  # the report uses Welch only for seeds that do not pair
            assert re.search(r"unpaired|no seed|do not pair|independent", low), f"{page.name}: {s}"
        if "two-sided" in low:  # a claim's hypotheses are one-sided; only the sign test is not
            assert re.search(
                r"sign test|as claimed on|fairseq|adastop|earlier|was|were|a two-sided test would"
                r"|agree",  # the agreement with the paper: a test of the difference's sign
                low,
            ), f"{page.name}: {s}"
        if "holm" in low and re.search(r"placement|tuned|pre-norm", low):
            assert re.search(r"secondary|exploratory|uncorrected|only|not", low), (
                f"{page.name}: {s}"
            )


def test_the_reports_own_description_is_what_the_docs_say():
    """The findings caption names the hypotheses every verdict class comes from, in one Holm
    family, as docs/statistics.md does."""
    fam = Family("fixed", [], True, True, 90, tested_rows=30)
    text = method(fam) + family_sentence(fam)
    stats_page = " ".join((REPO / "docs" / "statistics.md").read_text().split())
    for phrase in (
        "one hypothesis per way it can be decided",
        "negligible when |A − B| < margin (TOST)",
        "both one-sided tests reject: fitting faster alone never supports it",
        "no verdict is read from a raw CI",
        "m = 90 in all",
    ):
        assert phrase in text
    for phrase in (
        "one hypothesis per way it can be decided",
        '*non-inferior* when H0 "A − B ≤ −δ" is rejected',
        "an intersection-union test",
        "No verdict is read from a raw CI",
        "Holm adjusts every hypothesis of those rows together",
    ):
        assert phrase in stats_page
