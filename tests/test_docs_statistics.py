"""The statistics the docs name are the ones the report runs: a guide that says "Welch" where the
report pairs seeds, "one-sided" for a superiority test, or Holm over a secondary study's rows
tells a reader something the numbers do not do."""

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
        if "one-sided" in low:  # only the non-inferiority test is one-sided
            assert re.search(r"non-inferiority|≥|at least|−margin|-margin|against −", low), (
                f"{page.name}: {s}"
            )
        if "holm" in low and re.search(r"placement|tuned|pre-norm", low):
            assert re.search(r"secondary|exploratory|uncorrected|only|not", low), (
                f"{page.name}: {s}"
            )


def test_the_reports_own_description_is_what_the_docs_say():
    """The findings caption names the paired t-test, one-sided non-inferiority and two-sided
    superiority, as docs/statistics.md does."""
    text = method(Family("fixed", [], True, True, 30)) + family_sentence(
        Family("fixed", [], True, True, 30)
    )
    stats_page = (REPO / "docs" / "statistics.md").read_text()
    for phrase in ("non-inferiority, one-sided against −margin", "superiority, two-sided"):
        assert phrase in text
    for phrase in (
        "one-sided, H0: the difference is at most −δ",
        "two-sided so that it can refute",
    ):
        assert phrase in stats_page
    assert "ttest_1samp" in text and "t-test of the n" in stats_page
