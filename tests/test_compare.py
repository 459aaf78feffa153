"""Comparisons for any sweep and claims a user declares: every norm against a reference per task,
with the paired difference, its CI, a test and verdicts corrected over the report's own family; a
claims file that becomes the primary family; a swept setting against its reference value."""

import csv
import json

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from test_report import make_run

from normlab.make_report import main as cli_main
from normlab.models.placement import PLACEMENTS
from normlab.report import Protocol, find_runs, write_report
from normlab.report.aggregate import Grid
from normlab.report.axis import NATURAL
from normlab.report.claimfile import ClaimsFileError, load
from normlab.report.compare import Reference, comparisons

# a user's sweep: three normlab norms and one of the user's own package, two tasks, three seeds
VALUES = {
    "rt": {
        "layernorm": [70.0, 71.0, 72.5],
        "rmsnorm": [70.4, 71.3, 72.6],
        "dyt": [68.0, 69.5, 70.2],
        "mynorm": [72.0, 73.1, 74.55],
    },
    "sst2": {
        "layernorm": [80.0, 80.5, 81.0],
        "rmsnorm": [80.1, 80.4, 81.2],
        "dyt": [80.0, 80.6, 80.9],
        "mynorm": [80.9, 81.8, 82.0],
    },
}


def sweep(root):
    for task, norms in VALUES.items():
        for norm, values in norms.items():
            for seed, v in zip((2, 3, 4), values):
                make_run(root, task, norm, seed, v)
    return find_runs([root])


def margins(tmp_path) -> list[str]:
    """A protocol with an accuracy margin of 0.2 (the report's default declares none)."""
    path = tmp_path / "protocol.yaml"
    path.write_text("margins: {acc: 0.2}\n")
    return ["--protocol", str(path)]


def rows_of(path):
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if next(iter(r.values())) != "caption"]


def test_every_norm_is_compared_with_layernorm_per_task_and_holm_adjusts_the_report_family(
    tmp_path, capsys
):
    sweep(tmp_path / "runs")
    argv = [str(tmp_path / "runs"), "--out", str(tmp_path / "rep"), "--no-figures"]
    assert cli_main([*argv, *margins(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "Comparisons: each norm against LayerNorm" in printed
    rows = rows_of(tmp_path / "rep" / "comparisons.csv")
    assert [(r["task"], r["A"]) for r in rows] == [
        (t, n) for t in ("rt", "sst2") for n in ("RMSNorm", "DyT", "mynorm")
    ]
    flat, shown = [], []
    for r in rows:
        d = np.subtract(
            VALUES[r["task"]][{"RMSNorm": "rmsnorm", "DyT": "dyt"}.get(r["A"], r["A"])],
            VALUES[r["task"]]["layernorm"],
        )
        assert float(r["A − reference"]) == pytest.approx(d.mean(), abs=0.006)
        up = stats.ttest_1samp(d, 0.0, alternative="greater").pvalue
        down = stats.ttest_1samp(d, 0.0, alternative="less").pvalue
        tost = max(
            stats.ttest_1samp(d, -0.2, alternative="greater").pvalue,
            stats.ttest_1samp(d, 0.2, alternative="less").pvalue,
        )
        # 'p': the deciding test's, the smaller one-sided p while unresolved
        negligible = r["verdict"] == "negligible"
        assert float(r["p"]) == pytest.approx(tost if negligible else min(up, down), rel=1e-2)
        half = stats.t.ppf(0.95, 2) * d.std(ddof=1) / np.sqrt(3)
        lo, hi = json.loads(r["90% CI"].replace("+", ""))
        assert (lo, hi) == pytest.approx((d.mean() - half, d.mean() + half), abs=0.006)
        shown.append(len(flat) + {"worse": 1, "negligible": 2}.get(r["verdict"], 0))
        flat += [up, down, tost]
    # Holm over every hypothesis of every row (three each); a row shows its deciding one's
    holm = multipletests(flat, method="holm")[1]
    assert [float(r["p Holm"]) for r in rows] == pytest.approx([holm[i] for i in shown], rel=1e-2)
    mine = {(r["task"], r["A"]): r["verdict"] for r in rows}
    assert mine["rt", "mynorm"] == "better"  # +2.05 ± 0.05 over three seeds
    caption = (tmp_path / "rep" / "comparisons.md").read_text()
    assert "this report's family: Holm adjusts the 18 hypotheses of its 6 tested rows" in caption


def test_a_claims_file_is_the_primary_family_and_the_comparisons_become_exploratory(tmp_path):
    sweep(tmp_path / "runs")
    claims = tmp_path / "claims.yaml"
    claims.write_text(
        "alpha: 0.05\nclaims:\n"
        "  - {a: mynorm, b: layernorm, form: 'A > B', text: 'mine beats LayerNorm'}\n"
        "  - {a: rmsnorm, b: layernorm, form: 'A ≥ B', margin: 1.0, tasks: [sst2]}\n"
    )
    argv = [str(tmp_path / "runs"), "--out", str(tmp_path / "rep"), "--no-figures"]
    assert cli_main([*argv, "--claims", str(claims), *margins(tmp_path)]) == 0
    rows = rows_of(tmp_path / "rep" / "claims.csv")
    assert [(r["claim"], r["task"]) for r in rows] == [
        ("mine beats LayerNorm", "rt"),
        ("mine beats LayerNorm", "sst2"),
        ("RMSNorm ≥ LayerNorm", "sst2"),
    ]
    ps = [float(r["p"]) for r in rows]
    # every hypothesis of the three rows in one Holm family: 3 + 3 for the superiority rows, 2
    # for the non-inferiority one; each row's 'p Holm' is its deciding hypothesis's
    flat = []
    for task, a, margin_ in (("rt", "mynorm", 0.2), ("sst2", "mynorm", 0.2)):
        d = np.subtract(VALUES[task][a], VALUES[task]["layernorm"])
        flat += [
            stats.ttest_1samp(d, 0.0, alternative="greater").pvalue,
            stats.ttest_1samp(d, 0.0, alternative="less").pvalue,
            max(
                stats.ttest_1samp(d, -margin_, alternative="greater").pvalue,
                stats.ttest_1samp(d, margin_, alternative="less").pvalue,
            ),
        ]
    d = np.subtract(VALUES["sst2"]["rmsnorm"], VALUES["sst2"]["layernorm"])
    p = stats.ttest_1samp(d, -1.0, alternative="greater").pvalue  # the claim's own margin
    flat += [p, stats.ttest_1samp(d, -1.0, alternative="less").pvalue]
    holm = multipletests(flat, method="holm")[1]
    deciding = {"better": 0, "worse": 1, "negligible": 2, "non-inferior": 0, "inferior": 1}
    starts = (0, 3, 6)
    expected = [
        holm[start + deciding.get(r["verdict"].split(" (")[0], 0)] for start, r in zip(starts, rows)
    ]
    assert [float(r["p Holm"]) for r in rows] == pytest.approx(expected, rel=1e-2)
    assert ps[2] == pytest.approx(p, rel=1e-2) and rows[2]["margin"] == "±1"
    comp = rows_of(tmp_path / "rep" / "comparisons.csv")
    assert all(r["p Holm"] == "–" for r in comp)
    assert all(
        r["verdict"].endswith("(exploratory)") or r["verdict"] == "unresolved (exploratory)"
        for r in comp
        if r["verdict"] not in ("did not train", "no test")
    )
    index = (tmp_path / "rep" / "report.md").read_text()
    assert f"Primary family: the 3 tested row(s) of {claims}" in index
    # the same runs without the file: the comparisons are the family again
    assert cli_main([*argv, *margins(tmp_path)]) == 0
    assert not (tmp_path / "rep" / "claims.csv").exists()
    assert all(r["p Holm"] != "–" for r in rows_of(tmp_path / "rep" / "comparisons.csv"))


@pytest.mark.parametrize(
    "text, says",
    [
        ("claims: []\n", "no 'claims:' list"),
        ("claims:\n  - {a: rmsnorm, b: layernorm, form: '>>'}\n", "claims[0].form: '>>'"),
        ("claims:\n  - {a: rmsnorm, form: '>'}\n", "claims[0].b: missing"),
        ("claims:\n  - {a: x, b: y, form: '>', margn: 1}\n", "unknown key 'margn'"),
        ("alpha: 2\nclaims:\n  - {a: x, b: y, form: '>'}\n", "alpha: 2 is not a number in (0, 1)"),
        ("claims:\n  - {a: x, b: y, form: '>', measure: bleu}\n", "claims[0].measure: 'bleu'"),
        ("claims: [\n", "line"),
    ],
)
def test_a_bad_claims_file_gets_one_line_naming_the_file_and_key(tmp_path, capsys, text, says):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ClaimsFileError, match="c.yaml"):
        load(path)
    make_run(tmp_path / "runs", "rt", "layernorm", 2, 70.0)
    out = tmp_path / "rep"
    assert cli_main([str(tmp_path / "runs"), "--out", str(out), "--claims", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err and str(path) in err, err
    assert not out.exists()  # nothing written before the claims were read


def test_a_setting_swept_over_one_norm_is_read_in_its_natural_order_against_post(tmp_path):
    values = {"pre": [71.0, 72.1, 73.0], "post": [70.0, 71.0, 72.0], "peri": [70.2, 71.1, 71.9]}
    for placement, vs in values.items():
        for seed, v in zip((2, 3, 4), vs):
            d = make_run(tmp_path / placement, "rt", "layernorm", seed, v)
            s = json.loads((d / "summary.json").read_text())
            (d / "summary.json").write_text(json.dumps({**s, "setting": {"placement": placement}}))
    grid = Grid(find_runs([tmp_path]))
    assert [json.loads(o)["placement"] for _, o in grid.variants()] == ["post", "pre", "peri"]
    done = comparisons(grid, Reference.parse(), primary=True)
    got = [(f.claim.a, f.claim.b, round(f.diff, 3)) for f in done.family.rows]
    assert got == [
        ("LayerNorm (placement=pre)", "LayerNorm (placement=post)", 1.033),
        ("LayerNorm (placement=peri)", "LayerNorm (placement=post)", 0.067),
    ]
    # another reference value, as a user names it
    done = comparisons(grid, Reference.parse(["layernorm", "placement=pre"]), primary=True)
    assert {f.claim.b for f in done.family.rows} == {"LayerNorm (placement=pre)"}


def test_seeds_that_do_not_pair_are_compared_by_welch(tmp_path):
    a, b = [70.0, 71.5, 72.0], [68.0, 69.0, 68.5]
    for seed, v in zip((2, 3, 4), a):
        make_run(tmp_path, "rt", "rmsnorm", seed, v)
    for seed, v in zip((7, 8, 9), b):
        make_run(tmp_path, "rt", "layernorm", seed, v)
    grid = Grid(find_runs([tmp_path]), protocol=Protocol(margins={"acc": 0.2}))
    f = comparisons(grid, Reference.parse(), primary=True).family.rows[0]
    res = stats.ttest_ind(a, b, equal_var=False, alternative="greater")  # the support hypothesis
    assert f.p == pytest.approx(res.pvalue) and f.t == pytest.approx(res.statistic)
    assert "unpaired (no seed run by both): Welch" in f.sentence


def test_the_reports_placement_order_is_the_models():
    assert NATURAL["placement"] == PLACEMENTS


def test_the_paper_page_prints_the_published_numbers_the_report_uses():
    """Every caption that cites the paper cites docs/paper.md: its tables are published.py's."""
    from pathlib import Path

    from normlab.campaigns.xu2019.published import markdown

    page = (Path(__file__).parents[1] / "docs" / "paper.md").read_text()
    block = page.split("<!-- published:start", 1)[1].split("-->\n", 1)[1]
    assert block.split("<!-- published:end -->")[0] == markdown()


def test_a_one_norm_sweep_draws_each_setting_in_its_own_colour_and_dash(tmp_path, monkeypatch):
    from normlab.report import figures as F

    curves = [
        {"step": s, "split": sp, "loss": 2.0 / s} for s in (10, 20) for sp in ("train", "valid")
    ]
    for placement in ("pre", "post", "peri"):
        for seed in (2, 3):
            d = make_run(tmp_path / placement, "rt", "layernorm", seed, 70.0, curves=curves)
            s = json.loads((d / "summary.json").read_text())
            (d / "summary.json").write_text(json.dumps({**s, "setting": {"placement": placement}}))
    drawn = []
    monkeypatch.setattr(F.plt, "close", drawn.append)
    title, norms, panels, what = F.FIGURES["curves"]
    assert F.figure(Grid(find_runs([tmp_path])), "curves", title, norms, panels, tmp_path, what)
    lines = drawn[-1].axes[0].get_lines()
    assert [ln.get_label().split(" (n=")[0] for ln in lines] == [
        "LayerNorm (placement=post)",
        "LayerNorm (placement=pre)",
        "LayerNorm (placement=peri)",
    ]
    assert len({ln.get_color() for ln in lines}) == 3
    assert len({str(ln._unscaled_dash_pattern) for ln in lines}) == 3  # one dash each


def test_the_index_says_what_to_read_first_and_lists_what_was_written(tmp_path):
    out = write_report(sweep(tmp_path / "runs"), tmp_path / "rep", figures=False)
    index = out["index"].read_text()
    first = index.split("## What to read first", 1)[1].split("##", 1)[0]
    assert first.strip().splitlines()[0].startswith("1. [comparisons.md](comparisons.md)")
    listed = index.split("## What was written", 1)[1].split("##", 1)[0]
    for p in out["tables"]:
        if p.suffix == ".md" and p.stem != "runs":
            assert f"[{p.name}]({p.name})" in listed, p.name


def test_a_reference_norm_without_runs_is_named_with_the_norms_there_are(tmp_path, capsys):
    sweep(tmp_path / "runs")
    out = tmp_path / "rep"
    argv = [str(tmp_path / "runs"), "--out", str(out), "--no-figures", "--reference", "rmsnrom"]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "normlab-report: error: --reference rmsnrom: no run of that norm; the runs' norms are "
        "dyt, layernorm, mynorm, rmsnorm"
    )
    assert not out.exists()
    assert cli_main([*argv[:-1], "rmsnorm"]) == 0
    rows = rows_of(out / "comparisons.csv")
    assert {r["reference"] for r in rows} == {"RMSNorm"} and len(rows) == 6
