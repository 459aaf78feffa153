"""Cells first: a cell not clearly better than its task's best trivial baseline "did not train";
every table says so, no claim test compares it, and a task declared outside the learning regime
leaves the tests too."""

import functools

from test_report import make_run

from normlab.campaigns.xu2019 import CAMPAIGN
from normlab.campaigns.xu2019.findings import CLAIMS, evaluate
from normlab.campaigns.xu2019.protocol import protocol
from normlab.campaigns.xu2019.tuned_lr_table import chosen_by_other, other_criterion
from normlab.campaigns.xu2019.tuned_protocol import Sweep
from normlab.report import find_runs
from normlab.report import write_report as generic_report
from normlab.report.aggregate import Grid
from normlab.report.trained import best_baseline, gate, untrained_sentence, why_untrained

CLAIM = {c.key: c for c in CLAIMS}
P = protocol()  # the campaign's: its margins, gates and not-learning tasks
write_report = functools.partial(generic_report, campaign=CAMPAIGN)
ENWIK8 = {
    "metric": "bpc",
    "rows": {
        "unigram (add-one, fitted on train)": {"valid": 5.0, "test": 5.668},
        "bigram (add-one, fitted on train)": {"valid": 4.4, "test": 4.805},
        "smoothed bigram (add-α)": {"valid": 4.1, "test": 4.646},
    },
    "sizes": {"train": 40000, "valid": 53553, "test": 53553},
}


def enwik8_runs(root, adanorm=5.72):
    """LayerNorm and LayerNorm-simple learn (about 4.1 bpc); AdaNorm sits at ``adanorm``."""
    for seed in (2, 3, 4):
        make_run(root, "enwik8", "layernorm", seed, 4.15 + seed / 100, metric="bpc", hib=False)
        make_run(
            root, "enwik8", "layernorm_simple", seed, 4.10 + seed / 90, metric="bpc", hib=False
        )
        make_run(root, "enwik8", "adanorm", seed, adanorm + seed / 200, metric="bpc", hib=False)
    return find_runs([root])


def test_the_margin_and_the_best_baseline_decide_a_cell():
    rows = ENWIK8["rows"]
    assert best_baseline(rows, hib=False) == ("smoothed bigram", 4.646)
    assert P.trained_by("bpc") == 0.05 and P.trained_by("bleu") == 0.3
    assert why_untrained(4.15, "bpc", False, rows, P.trained_by("bpc")) == ""
    # within the margin of the best baseline: not clearly better, so it did not train
    at = why_untrained(4.61, "bpc", False, rows, P.trained_by("bpc"))
    assert at.startswith("4.610 bpc: at the smoothed bigram level")
    assert "worse than the unigram level" in why_untrained(
        5.73, "bpc", False, rows, P.trained_by("bpc")
    )
    copy = {"copy-source": {"valid": 0.25, "test": 0.86}}
    assert why_untrained(0.63, "bleu", True, copy, P.trained_by("bleu")).startswith(
        "0.63 bleu: at the copy-source"
    )
    assert (
        why_untrained(1.2, "bleu", True, copy, P.trained_by("bleu")) == ""
    )  # 0.34 above it: more than 0.3


def test_a_cell_that_did_not_train_is_labelled_and_leaves_the_claim_tests(tmp_path):
    grid = gate(Grid(enwik8_runs(tmp_path / "runs"), protocol=P), {"enwik8": ENWIK8})
    ada = grid.norm_cell("enwik8", "adanorm")
    assert ada.untrained and ada.text().endswith("did not train")
    assert not grid.norm_cell("enwik8", "layernorm").untrained
    f = evaluate(grid, CLAIM["adanorm_improves"], "enwik8")
    assert f.decided == "did not train" and f.p is None and f.diff is None
    assert f.sentence.startswith("AdaNorm did not train (5.") and "unigram level" in f.sentence
    # the row between two norms that trained is tested as before
    g = evaluate(grid, CLAIM["ln_simple_no_worse"], "enwik8")
    assert not g.decided and g.n == 3 and g.p is not None
    said = untrained_sentence(grid)
    assert "enwik8: AdaNorm (5." in said and "enter no claim test" in said
    # the same runs without baselines: nothing is gated, and no sentence claims a check ran
    plain = Grid(find_runs([tmp_path / "runs"]), protocol=P)
    assert evaluate(plain, CLAIM["adanorm_improves"], "enwik8").p is not None
    assert untrained_sentence(plain) == ""


def test_every_report_output_says_which_cells_did_not_train(tmp_path):
    runs = enwik8_runs(tmp_path / "runs")
    out = tmp_path / "report"
    write_report(runs, out, figures=False, baselines=lambda task, cfg: ENWIK8)
    summary = (out / "summary.md").read_text()
    assert "did not train" in summary and "Did not train (" in summary
    findings = (out / "findings.md").read_text()
    row = next(r for r in findings.splitlines() if "AdaNorm > LayerNorm | enwik8" in r)
    assert "| A > B | did not train | did not train |" in row
    family = (out / "family.md").read_text()
    # two tested rows (LN-simple vs LN and the overfitting row have no rise here: no curves)
    assert "AdaNorm" not in family
    assert "Did not train (" in (out / "report.md").read_text()
    # the baselines table's sentences place each norm with the same margin
    assert "'at' = within 0.05" in (out / "baselines.md").read_text()


def test_a_task_declared_outside_the_learning_regime_is_not_tested(tmp_path):
    assert "not in the learning regime at mini" in P.outside("iwslt15_en_vi", "mini")
    assert P.outside("iwslt15_en_vi", "smoke") == "" and P.outside("rt", "mini") == ""
    for seed in (2, 3, 4):
        for norm, v in (("layernorm", 1.3), ("layernorm_simple", 1.4 + seed / 10)):
            make_run(tmp_path, "iwslt15_en_vi", norm, seed, v, metric="bleu")
    grid = Grid(find_runs([tmp_path]), protocol=P)
    f = evaluate(grid, CLAIM["ln_simple_no_worse"], "iwslt15_en_vi")
    assert f.decided == "not learning" and "see docs/calibration.md" in f.sentence
    from normlab.report.aggregate import data_sentence

    assert "iwslt15_en_vi: not in the learning regime at mini" in data_sentence(grid)


def test_the_lr_grid_shows_the_criterion_that_did_not_choose(tmp_path):
    # seed 1 of a translation task selected on valid BLEU: the loss is shown beside it, and the lr
    # the loss would have chosen (lower loss at 2x, higher BLEU at 1x)
    for lr, bleu, loss in ((1e-3, 6.0, 4.30), (2e-3, 5.5, 4.20)):
        make_run(
            tmp_path / f"lr{lr}",
            "iwslt14_de_en",
            "layernorm",
            1,
            6.5,
            metric="bleu",
            lr=lr,
            curves=[
                {"step": 100, "split": "valid", "loss": loss + 0.2, "bleu": bleu - 1},
                {"step": 200, "split": "valid", "loss": loss, "bleu": bleu},
            ],
        )
    runs = find_runs([tmp_path])
    for r in runs:
        r.summary.update(
            selected_by="bleu",
            best_valid_score=max(c["bleu"] for c in r.curves if c.get("split") == "valid"),
        )
        # the preset-lr run varies nothing; the other one varies the lr
        r.summary["setting"] = {"lr": 2e-3} if r.config["task"]["train"]["lr"] == 2e-3 else {}
    sw = Sweep(runs, [2.0], extend=0)
    key = ("iwslt14_de_en", "layernorm")
    assert other_criterion(sw.seed1(key)[1e-3]) == ("loss", 4.30)
    assert sw.chosen(key) == 1e-3  # BLEU chooses
    assert chosen_by_other(sw, key) == "0.002 (2.00×)"  # the loss would have chosen 2x
