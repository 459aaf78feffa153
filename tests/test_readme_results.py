"""The results sections of the README and docs/results.md are generated from the committed tables:
each must equal what scripts/readme_results.py writes from them, and changing any number in a
table must show."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "readme_results.py"
HAS_RESULTS = (REPO / "results" / "mini" / "summary.csv").exists()


def check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--root", str(root)],
        capture_output=True,
        text=True,
    )


@pytest.mark.skipif(not HAS_RESULTS, reason="no committed results/mini tables")
def test_readme_results_section_equals_the_committed_tables():
    out = check(REPO)
    assert out.returncode == 0, out.stderr


@pytest.mark.skipif(not HAS_RESULTS, reason="no committed results/mini tables")
def test_a_number_changed_in_a_table_makes_the_readme_stale(tmp_path):
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / "docs" / "results.md", tmp_path / "docs" / "results.md")
    for src in sorted((REPO / "results").glob("mini*")):  # every folder the README reports
        if src.is_dir():
            dst = tmp_path / "results" / src.name
            dst.mkdir(parents=True)
            for p in src.glob("*.*"):
                if p.suffix in (".csv", ".json", ".md"):
                    shutil.copy(p, dst / p.name)
    assert check(tmp_path).returncode == 0
    summary = tmp_path / "results" / "mini" / "summary.md"
    text = summary.read_text()
    line = next(x for x in text.splitlines() if x.startswith("| LayerNorm |"))
    changed = re.sub(r"\((\d+)\)", lambda m: f"({int(m.group(1)) + 2})", line, count=1)  # one n
    assert changed != line
    summary.write_text(text.replace(line, changed))
    out = check(tmp_path)
    assert out.returncode == 1 and "differs from the committed tables" in out.stderr
    overfit = tmp_path / "results" / "mini" / "overfitting.csv"
    summary.write_text(text)
    rows = overfit.read_text().splitlines()
    i = next(i for i, r in enumerate(rows) if r.startswith("iwslt14_de_en,LayerNorm,"))
    rows[i] = rows[i].replace("%", "0%", 1)  # LayerNorm's valid-loss rise, ten times larger
    overfit.write_text("\n".join(rows) + "\n")
    assert check(tmp_path).returncode == 1


@pytest.mark.skipif(not HAS_RESULTS, reason="no committed results/mini tables")
def test_the_rows_the_statistics_guide_reads_are_the_committed_ones():
    guide = (REPO / "docs" / "statistics.md").read_text().split("## Reading a verdict")[1]
    rows = [r for r in guide.split("\n\n")[2].splitlines()[2:] if r.startswith("| ")]
    findings = (REPO / "results" / "mini" / "findings.md").read_text().splitlines()
    assert len(rows) == 3
    for row in rows:
        cells = [c.strip() for c in row.strip(" |").split("|")]
        match = [f for f in findings if f": {cells[0]} | {cells[1]} |" in f]
        assert len(match) == 1, cells[:2]
        table = [c.strip() for c in match[0].strip(" |").split("|")]
        # ours, 90% CI, margin; MDE; P(resolve); p, p seq, p Holm; and the verdict
        assert cells[2:5] == table[6:9] and cells[5] == table[10], (cells, table)
        assert cells[6] == table[12], (cells, table)
        assert cells[7:10] == table[13:16] and cells[10] == table[3], (cells, table)


@pytest.mark.skipif(not HAS_RESULTS, reason="no committed results/mini tables")
def test_the_readmes_timings_are_the_measured_ones():
    """The README's run time per mini run is the median over the committed evaluation runs, and its
    start-up time is the committed benchmark's: measured numbers, not hoped ones."""
    import json
    import statistics

    readme = " ".join((REPO / "README.md").read_text().split())  # wrapped lines read as one
    walls = [
        s["wall_time_s"]
        for p in (REPO / "results" / "mini" / "runs").rglob("summary.json")
        if (s := json.loads(p.read_text())).get("status") == "completed" and s.get("seed") != 1
    ]
    said = re.search(r"the committed `results/mini` runs, [^:]*: median (\d+) s", readme)
    assert said and int(said.group(1)) == round(statistics.median(walls)), (
        said,
        statistics.median(walls),
    )
    bench = (REPO / "results" / "bench" / "startup.md").read_text()
    first = re.search(r"\| `normlab-train to its first step` \| ([\d.]+) \|", bench).group(1)
    assert f"its first training step {first} s after launch" in readme


def copy_family_tables(root: Path) -> None:
    """The fixed-lr family's committed folders under ``root``, without their runs and figures."""
    for folder in ("mini", "mini-tuned", "mini-enwik8-prenorm"):
        shutil.copytree(
            REPO / "results" / folder,
            root / "results" / folder,
            ignore=shutil.ignore_patterns("runs", "figures"),
        )


@pytest.mark.skipif(not HAS_RESULTS, reason="no committed results/mini tables")
def test_a_committed_study_outside_the_family_joins_the_results_as_exploratory(tmp_path):
    """The placement study is no member of the family of tests; once its folder is committed its
    provenance and claim rows join the generated results, and before that nothing names it."""
    from normlab.campaigns.xu2019.readme import section

    copy_family_tables(tmp_path)
    before = section(tmp_path)
    assert "mini-placement" not in before
    # a placement folder with the pre-norm study's rows and record stands in for the real one
    place = tmp_path / "results" / "mini-placement"
    shutil.copytree(tmp_path / "results" / "mini-enwik8-prenorm", place)
    after = section(tmp_path)
    assert "- `results/mini-placement`: " in after
    rows = [x for x in after.splitlines() if x.startswith("| results/mini-placement | ")]
    prenorm = [x for x in after.splitlines() if x.startswith("| results/mini-enwik8-prenorm | ")]
    assert len(rows) == len(prenorm) > 0
    assert "`results/mini-placement` " in section(tmp_path, full=False)
    # nothing else moved: the family's lines are as they were
    assert [x for x in after.splitlines() if "mini-placement" not in x] == before.splitlines()


@pytest.mark.skipif(not HAS_RESULTS, reason="no committed results/mini tables")
def test_the_overfitting_timing_the_statistics_guide_quotes_is_the_committed_runs():
    """docs/statistics.md says the head start of LayerNorm's minimum did not drive the comparison;
    its counts and correlations are what scripts/overfit_timing.py reads from the committed runs."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "scripts/overfit_timing.py", "results/mini"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    first, tasks, n, rise, gap = re.search(
        r"came first on (\d+) of (\d+) tasks.* over the (\d+) seed pairs .* rise difference is"
        r" (\S+) and with the gap difference (\S+)",
        out,
    ).groups()
    guide = " ".join((REPO / "docs" / "statistics.md").read_text().split())
    assert f"earlier than LayerNorm-simple's on {first} of {tasks} tasks" in guide, out
    assert (
        f"over the {n} seed pairs the within-task correlation of that head start with the rise"
        f" difference is {rise} and with the gap difference {gap}"
    ) in guide, out


@pytest.mark.skipif(not HAS_RESULTS, reason="no committed results/mini tables")
def test_the_confirmatory_study_leads_the_results_once_committed(tmp_path):
    """With the confirmatory folder committed, the generated results lead with it: its provenance
    first, its test metric table, its claim rows before the fixed-lr family's, which reads as the
    exploratory record beside it; the declaration is dated against the folder's runs."""
    import json

    from normlab.campaigns.xu2019.declared import FILES
    from normlab.campaigns.xu2019.readme import section
    from normlab.gitinfo import git

    copy_family_tables(tmp_path)
    before = section(tmp_path)
    assert "mini-confirm" not in before and "`results/mini` is the primary family" in before
    # the fixed-lr folder's tables stand in for the confirmatory ones, its runs trained at the
    # commit that declares the study as it stands
    confirm = tmp_path / "results" / "mini-confirm"
    shutil.copytree(tmp_path / "results" / "mini", confirm)
    (confirm / "summary.md").write_text(
        (confirm / "summary.md").read_text().replace("| LayerNorm |", "| LayerNorm (confirm) |")
    )
    decl = "normlab/campaigns/xu2019/confirm.yaml"
    commit = git("log", "-1", "--format=%H", "--", decl, *map(str, FILES))
    record = json.loads((confirm / "reproduce.json").read_text())
    record["run_git_commits"] = {commit: 245}
    (confirm / "reproduce.json").write_text(json.dumps(record))
    for full in (True, False):
        after = section(tmp_path, full=full)
        provenance = [x for x in after.splitlines() if x.startswith("- `results/")]
        assert provenance[0].startswith("- `results/mini-confirm`: ")
        assert f"`results/mini-confirm` is the confirmatory family (declared in {decl} at " in after
        assert ", before its runs); `results/mini` is the fixed-lr family" in after
        assert "(`results/mini-confirm/summary.md`;" in after and "LayerNorm (confirm)" in after
    claims = [x for x in after.splitlines() if x.startswith("- *")]
    assert claims and all(
        x.index("`results/mini-confirm`") < x.index("`results/mini`") for x in claims
    )
