"""The test protocol is a value the report is given: the same runs under two protocols give two
reports in one process, a report without one declares no margins and so reads no verdict that
needs one, and a protocol file with a bad value is refused in one line that names it."""

import csv

import pytest
import yaml
from test_report import make_run

from normlab.campaigns.xu2019.protocol import FILE, SHOWN, protocol
from normlab.make_report import main as cli_main
from normlab.report import DEFAULT, Protocol, find_runs, write_report
from normlab.report.aggregate import Grid
from normlab.report.compare import Reference, comparisons


def two_norms(root, diff=0.3):
    """RMSNorm `diff` accuracy points above LayerNorm on every seed, with seed noise."""
    for seed in (2, 3, 4, 5, 6):
        noise = (seed % 3) * 0.4
        make_run(root, "rt", "layernorm", seed, 70.0 + noise)
        make_run(root, "rt", "rmsnorm", seed, 70.0 + noise + diff + (seed % 2) * 0.02)
    return find_runs([root])


def row(runs, protocol):
    grid = Grid(runs, protocol=protocol)
    return comparisons(grid, Reference.parse(), primary=True).family.rows[0]


def test_the_campaigns_file_is_read_into_the_protocol_its_reports_get():
    raw = yaml.safe_load(FILE.read_text())
    p = protocol()
    assert Protocol.load(FILE, SHOWN) == p
    assert p.alpha == raw["alpha"] and dict(p.margins) == raw["margins"]
    assert p.trained_by("bleu") == raw["trained_margin"]["bleu"] and p.trained_by("ppl") == 0.0
    assert p.futility == raw["sequential"]["futility"]
    assert p.outside("iwslt15_en_vi", "mini") == raw["not_learning"]["mini"]["iwslt15_en_vi"]
    assert p.outside("iwslt15_en_vi", "smoke") == "" and p.outside("rt", "mini") == ""
    assert p.margins_sentence().startswith(f"Margins, the smallest effects of interest ({SHOWN}")


def test_one_process_two_protocols_two_verdicts(tmp_path):
    """A difference of 0.3 points: inside a margin of 1 point it is negligible, against a margin
    of 0.05 it is better; without a margin there is no verdict, only the estimate and its CI."""
    runs = two_norms(tmp_path / "runs")
    wide = row(runs, Protocol(margins={"acc": 1.0}))
    narrow = row(runs, Protocol(margins={"acc": 0.05}))
    bare = row(runs, DEFAULT)
    assert wide.verdict() == "negligible" and narrow.verdict() == "better"
    assert wide.diff == pytest.approx(narrow.diff) == pytest.approx(bare.diff)
    assert bare.verdict() == "no test" and bare.ci90 is not None and bare.p is None
    assert "no margin is declared for acc (normlab's default protocol" in bare.sentence
    # and again the first: nothing of the second protocol stayed behind
    assert row(runs, Protocol(margins={"acc": 1.0})).verdict() == "negligible"


def test_a_report_without_a_campaign_declares_no_margins_and_one_with_a_protocol_file_tests(
    tmp_path,
):
    two_norms(tmp_path / "runs")
    plain = tmp_path / "plain"
    write_report(find_runs([tmp_path / "runs"]), plain, figures=False)
    got = next(csv.DictReader((plain / "comparisons.csv").open()))
    assert got["verdict"] == "no test"
    assert "Margins: none declared" in (plain / "comparisons.md").read_text()
    path = tmp_path / "protocol.yaml"
    path.write_text("alpha: 0.05\nmargins: {acc: 0.05}\nmargin_reasons: {acc: a test's}\n")
    out = tmp_path / "declared"
    argv = [str(tmp_path / "runs"), "--out", str(out), "--no-figures", "--campaign", "none"]
    assert cli_main([*argv, "--protocol", str(path)]) == 0
    got = next(csv.DictReader((out / "comparisons.csv").open()))
    assert got["verdict"] == "better"
    assert (
        f"({path}, each with its reason): ±0.05 accuracy points"
        in (out / "comparisons.md").read_text()
    )


@pytest.mark.parametrize(
    "text, says",
    [
        ("margins: {acc: wide}\n", "'margins.acc' must be a number, got 'wide'"),
        ("alpha: [0.05]\n", "'alpha' must be a number"),
        ("margins: 0.2\n", "'margins' must be a mapping"),
        ("- alpha\n", "a protocol is a mapping of alpha, power, margins"),
        ("alpha: [\n", "cannot read the protocol"),
    ],
)
def test_a_bad_protocol_file_is_refused_in_one_line_naming_it(tmp_path, capsys, text, says):
    make_run(tmp_path / "runs", "rt", "layernorm", 2, 70.0)
    path = tmp_path / "protocol.yaml"
    path.write_text(text)
    out = tmp_path / "report"
    argv = [str(tmp_path / "runs"), "--out", str(out), "--protocol", str(path)]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err and str(path) in err, err
    assert not out.exists()  # nothing written before the protocol was read
