"""scripts/findings_diff.py: a folder's findings before and after, from a committed findings.csv
and the working tree's, as the closing note of a re-run or of added seeds reports them."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "findings_diff.py"
COLUMNS = ["claim", "task", "form", "verdict", "uncorrected", "n", "ours"]
ADA = "AdaNorm improves on LayerNorm: AdaNorm > LayerNorm"
SIMPLE = "Bias and gain do not help: LayerNorm-simple ≥ LayerNorm"


def write(folder: Path, rows: list[list[str]], table: str = "findings.csv") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / table, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        w.writerows(rows)
        w.writerow(["caption", "Method: ... a caption row, not a finding", "", "", "", "", ""])


def run(cwd: Path, *args) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True
    )


BEFORE = [
    [ADA, "rt", "A > B", "unresolved", "unresolved", "5", "+0.30"],
    [ADA, "ptb", "A > B", "did not train", "did not train", "0", "–"],
    [SIMPLE, "rt", "A ≥ B", "non-inferior", "non-inferior", "5", "+0.10"],
    [SIMPLE, "mnist", "A ≥ B", "unresolved", "unresolved", "5", "-0.05"],
]
AFTER = [
    [ADA, "rt", "A > B", "better", "better", "10", "+0.41"],
    [ADA, "ptb", "A > B", "worse", "worse", "5", "-0.50"],
    [SIMPLE, "rt", "A ≥ B", "non-inferior", "non-inferior", "5", "+0.10"],
    [SIMPLE, "mnist", "A ≥ B", "unresolved", "unresolved", "10", "-0.02"],
]


def test_a_committed_version_against_the_working_tree(tmp_path):
    git = lambda *a: subprocess.run(
        ["git", "-C", str(tmp_path), *a], check=True, capture_output=True
    )  # noqa: E731
    git("init", "-q")
    write(tmp_path / "results" / "mini", BEFORE)
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "before")
    write(tmp_path / "results" / "mini", AFTER)
    out = run(tmp_path, "HEAD", "results/mini")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "## results/mini: findings HEAD → results/mini" in text
    # each claim's standing: AdaNorm's rows from unresolved 1 + untested 1 to supported 1 + refuted 1
    assert f"| {ADA} | unresolved 1, untested 1 | supported 1, refuted 1 |" in text
    assert f"| {SIMPLE} | supported 1, unresolved 1 | supported 1, unresolved 1 |" in text
    assert "Rows that changed: 3 of 4." in text and "caption" not in text
    assert (
        f"| {ADA} | rt | unresolved | better (resolved by added seeds) | 5 → 10 | +0.30 → +0.41 |"
        in text
    )
    # decided from an untested row, not by added seeds; the unchanged row is not listed
    assert f"| {ADA} | ptb | did not train | worse | 0 → 5 | – → -0.50 |" in text
    assert f"| {SIMPLE} | mnist | unresolved | unresolved | 5 → 10 | -0.05 → -0.02 |" in text
    assert f"{SIMPLE} | rt |" not in text


def test_two_folders_and_a_version_without_findings(tmp_path):
    write(tmp_path / "old", BEFORE)
    write(tmp_path / "new", BEFORE)
    out = run(tmp_path, "old", "new")
    assert out.returncode == 0 and "Rows that changed: 0 of 4." in out.stdout, out.stderr
    (tmp_path / "empty").mkdir()
    out = run(tmp_path, "empty", "new")
    assert out.returncode == 2
    assert (
        out.stderr.strip()
        == "findings_diff: empty: no findings.csv or tuned_findings.csv (a folder the report wrote)"
    )


def test_the_tuned_folder_is_read_from_its_own_claims_table(tmp_path):
    # the tuned study writes its claims at each norm's own lr to tuned_findings.csv, no findings.csv:
    # the diff used to stop at "findings.csv does not exist" for it, at a commit and in a folder
    git = lambda *a: subprocess.run(
        ["git", "-C", str(tmp_path), *a], check=True, capture_output=True
    )  # noqa: E731
    git("init", "-q")
    write(tmp_path / "results" / "mini-tuned", BEFORE, "tuned_findings.csv")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "before")
    write(tmp_path / "results" / "mini-tuned", AFTER, "tuned_findings.csv")
    out = run(tmp_path, "HEAD", "results/mini-tuned")
    assert out.returncode == 0, out.stderr
    assert f"| {ADA} | unresolved 1, untested 1 | supported 1, refuted 1 |" in out.stdout
    assert "Rows that changed: 3 of 4." in out.stdout
    out = run(tmp_path, "HEAD~0", "HEAD", "results/nothing")
    assert out.returncode == 2
    assert out.stderr.startswith("findings_diff: HEAD~0:results/nothing: no findings.csv or tuned")
