"""The findings: one test per claim row by the claim's form (non-inferiority, superiority), Holm
over the declared primary family only, exploratory verdicts elsewhere, and the overfitting claim
measured at the same step for both norms."""

import functools
import json

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from test_report import make_run

from normlab.campaigns.xu2019 import CAMPAIGN, findings_record
from normlab.campaigns.xu2019.family import build, family_sentence, locate
from normlab.campaigns.xu2019.findings import CLAIMS, evaluate, findings
from normlab.campaigns.xu2019.findings_text import outcome, summary_lines
from normlab.campaigns.xu2019.protocol import grid as xgrid
from normlab.campaigns.xu2019.protocol import protocol
from normlab.campaigns.xu2019.tuned import member_findings, member_key
from normlab.report import find_runs
from normlab.report import stats as S
from normlab.report import write_report as generic_report
from normlab.report.overfit import gap_best, gap_last, valid_rise

CLAIM = {c.key: c for c in CLAIMS}

# the paper's report: the generic one with the xu2019 campaign's tables, findings and figures
write_report = functools.partial(generic_report, campaign=CAMPAIGN)


def curves(valid, train_end=1.0, steps=100):
    """Train loss falling linearly to ``train_end``; valid losses at evenly spaced evaluations."""
    out = [
        {"step": s, "split": "train", "loss": train_end + (steps - s) / 100}
        for s in range(10, steps + 1, 10)
    ]
    every = steps // len(valid)
    return out + [
        {"step": every * (i + 1), "split": "valid", "loss": v} for i, v in enumerate(valid)
    ]


def test_a_no_worse_claim_is_a_non_inferiority_test_at_its_margin(tmp_path):
    lns, ln = [80.0, 81.0, 82.5, 79.0], [79.8, 80.6, 82.6, 78.9]
    for seed, (a, b) in enumerate(zip(lns, ln), start=2):
        make_run(tmp_path, "rt", "layernorm_simple", seed, a)
        make_run(tmp_path, "rt", "layernorm", seed, b)
    make_run(tmp_path, "rt", "layernorm", 9, 50.0)  # no partner seed: left out of the pairs
    f = evaluate(xgrid(find_runs([tmp_path])), CLAIM["ln_simple_no_worse"], "rt")
    d = np.subtract(lns, ln)
    assert (f.n, f.n_a, f.n_b) == (4, 4, 5) and f.diff == pytest.approx(d.mean())
    assert f.margin == protocol().margin("acc") == 0.2
    # one-sided against -margin: H0 "LayerNorm-simple is worse by 0.2 or more"
    t = stats.ttest_1samp(d, -0.2, alternative="greater")
    assert f.p == pytest.approx(t.pvalue, rel=1e-12) and f.t == pytest.approx(t.statistic)
    assert "seed(s) 9 left out" in f.sentence and "one-sided against −margin" in f.sentence
    assert f.p < 0.05 and f.verdict("raw") == "non-inferior"
    # its refutation is the other side of the same boundary
    t_ref = stats.ttest_1samp(d, -0.2, alternative="less")
    assert [h["cls"] for h in f.hyps] == ["support", "refute"]
    assert f.hyps[1]["p"] == pytest.approx(t_ref.pvalue, rel=1e-12)
    # the same differences with LayerNorm-simple 1.2 points behind: the CI lies below -margin
    for seed, (a, b) in enumerate(zip(lns, ln), start=2):
        make_run(tmp_path / "worse", "rt", "layernorm_simple", seed, a - 1.2)
        make_run(tmp_path / "worse", "rt", "layernorm", seed, b)
    g = evaluate(xgrid(find_runs([tmp_path / "worse"])), CLAIM["ln_simple_no_worse"], "rt")
    assert g.ci90[1] < -0.2 and g.verdict("raw") == "inferior"
    assert g.hyps[1]["p"] < 0.05  # decided by its test, not by the CI


def test_a_strict_claim_tests_each_direction_and_a_tie_within_the_margin_is_negligible(tmp_path):
    for seed, noise in zip((2, 3, 4, 5), (0.01, -0.02, 0.015, -0.005)):
        make_run(tmp_path, "rt", "adanorm", seed, 80.0 + noise)
        make_run(tmp_path, "rt", "layernorm", seed, 80.0 - noise / 2)
    f = evaluate(xgrid(find_runs([tmp_path])), CLAIM["adanorm_improves"], "rt")
    d = np.array([0.015, -0.03, 0.0225, -0.0075])
    p_up = stats.ttest_1samp(d, 0.0, alternative="greater").pvalue
    assert f.p == pytest.approx(p_up, rel=1e-9)
    tost = max(
        stats.ttest_1samp(d, -0.2, alternative="greater").pvalue,
        stats.ttest_1samp(d, 0.2, alternative="less").pvalue,
    )
    assert [h["cls"] for h in f.hyps] == ["support", "refute", "negligible"]
    assert f.hyps[2]["p"] == pytest.approx(tost, rel=1e-9)
    assert tost < 0.05 and f.verdict("raw") == "negligible"
    assert "refuted on 0, negligible on 1" in outcome([f], "raw")


def test_a_significant_effect_inside_the_margin_is_negligible_never_supported(tmp_path):
    # AdaNorm ahead of LayerNorm by 0.05 accuracy points on every seed: significant, but a tenth
    # of the margin (0.2): the classes do not overlap, negligible decides
    for seed, noise in zip((2, 3, 4, 5, 6), (0.01, -0.01, 0.005, 0.0, -0.005)):
        make_run(tmp_path, "rt", "adanorm", seed, 80.05 + noise)
        make_run(tmp_path, "rt", "layernorm", seed, 80.0)
    f = evaluate(xgrid(find_runs([tmp_path])), CLAIM["adanorm_improves"], "rt")
    assert f.hyps[0]["p"] < 0.01 and f.hyps[2]["p"] < 0.01
    assert f.verdict("raw") == "negligible"


def test_lower_is_better_metrics_flip_sign_and_a_clear_loss_is_worse(tmp_path):
    for seed in (2, 3, 4):
        make_run(tmp_path, "enwik8", "adanorm", seed, 5.7 + 0.01 * seed, metric="bpc", hib=False)
        make_run(
            tmp_path, "enwik8", "layernorm", seed, 4.1 + 0.02 * (seed % 2), metric="bpc", hib=False
        )
    f = evaluate(xgrid(find_runs([tmp_path])), CLAIM["adanorm_improves"], "enwik8")
    assert f.diff == pytest.approx(-(5.73 - 4.1) + 0.02 / 3 * 1, abs=0.02) and f.diff < 0
    assert f.hyps[1]["p"] < 0.05 and f.verdict("raw") == "worse"


def test_holm_adjusts_the_primary_family_only(tmp_path):
    # Two tasks with a clear LN-simple ≥ LN result, no other claim has runs.
    res = tmp_path / "results"
    for folder in ("mini", "mini-tuned"):
        for task, shift in (("rt", 2.0), ("sst2", 3.0)):
            for seed, noise in zip((2, 3, 4), (0.05, -0.1, 0.075)):
                make_run(res / folder / "runs", task, "layernorm_simple", seed, 80 + shift + noise)
                make_run(res / folder / "runs", task, "layernorm", seed, 80.0 - noise)
    every = findings(xgrid(find_runs([res / "mini" / "runs"])))
    fam = build(every, res / "mini")
    fs = [f for f in every if f.claim.key == "ln_simple_no_worse"]
    # the overfitting rows have no curves to measure: decided without a test, outside the family
    assert {f.verdict() for f in every if f not in fs} == {"no test"}
    # two rows, each with its support and refutation hypotheses: m = 4
    assert fam.primary and fam.declared and fam.size == 4 and fam.study == "fixed"
    assert fam.tested_rows == 2
    # each row may still gain seeds (K = 4 looks): Holm adjusts K x each p at the one look made
    flat = [h for f in fs for h in f.hyps]
    assert [h["p_seq"] for h in flat] == pytest.approx([min(1.0, 4 * h["p"]) for h in flat])
    holm = multipletests([h["p_seq"] for h in flat], method="holm")[1]
    assert [h["p_holm"] for h in flat] == pytest.approx(list(holm))
    assert [fs[0].p_holm, fs[1].p_holm] == pytest.approx([holm[0], holm[2]])  # the deciding ones
    assert all(f.primary and f.shown() == "non-inferior" for f in fs)
    # the sign test across tasks is exploratory: computed, never adjusted
    assert fam.signs["ln_simple_no_worse"]["p"] == pytest.approx(0.5)  # 2 of 2: 2 * 1/4
    # the MDE is at alpha / (m K), one-sided for a non-inferiority row
    assert fs[0].mde == pytest.approx(S.mde(3, fs[0].sd, 0.05 / (4 * 4), 0.8, sides=1))
    line = summary_lines(every, fam, "fixed")[0]
    assert "primary family's 4 tests" in line and "as claimed on 2 of 2 tasks" in line
    # another declared study's rows are secondary: uncorrected, labelled exploratory
    other = findings(xgrid(find_runs([res / "mini-tuned" / "runs"])))
    sec = build(other, res / "mini-tuned")
    assert not sec.primary and sec.size == 0 and other[0].p_holm is None
    assert other[0].shown() == "non-inferior (exploratory)"
    assert other[0].mde == pytest.approx(S.mde(3, other[0].sd, 0.05, 0.8, sides=1))
    # outside the declared folders a report is its own family, and says so
    own = build(findings(xgrid(find_runs([res / "mini" / "runs"]))), tmp_path / "elsewhere")
    assert own.primary and not own.declared and "its own" not in family_sentence(fam)
    assert "the 2 tested rows of the report" in family_sentence(own)


def test_the_report_of_each_folder_says_which_family_it_is(tmp_path):
    res = tmp_path / "results"
    for folder, shift in (("mini", 1.0), ("mini-enwik8-prenorm", 0.5)):
        for seed, noise in zip((2, 3, 4), (0.1, -0.2, 0.15)):
            make_run(res / folder / "runs", "rt", "adanorm", seed, 80.0 + shift + noise)
            make_run(res / folder / "runs", "rt", "layernorm", seed, 80.0 - noise)
    assert locate(res / "mini") == ("fixed", "mini")
    assert locate(res / "mini-tuned") == ("tuned", "mini")
    assert locate(res / "mini-enwik8-prenorm") == ("prenorm", "mini")
    assert locate(res / "mini-placement") == ("placement", "mini")
    assert locate(tmp_path / "mini") is None
    # a folder of no declared study's name is no member, whatever its suffix
    assert locate(res / "my-sweep") is None and locate(res / "mine-tuned") is None
    for seed, noise in zip((2, 3, 4), (0.1, -0.2, 0.15)):
        make_run(res / "mini-placement" / "runs", "rt", "adanorm", seed, 81.0 + noise)
        make_run(res / "mini-placement" / "runs", "rt", "layernorm", seed, 80.0 - noise)
    for d, folder in (("a", "mini"), ("b", "mini-enwik8-prenorm"), ("c", "mini-placement")):
        write_report(
            find_runs([res / folder / "runs"]), tmp_path / d, figures=False, member=res / folder
        )
    fam_a = (tmp_path / "a" / "family.md").read_text()
    fam_b = (tmp_path / "b" / "family.md").read_text()
    assert "| fixed | primary (declared) | 1 | 1 | 0 | 3 |" in fam_a
    assert "| prenorm | secondary (exploratory) | 1 | 1 | 0 | – |" in fam_b
    # the placement study is secondary too, not the fixed study at a scale "mini-placement"
    fam_c = (tmp_path / "c" / "family.md").read_text()
    assert "| placement | secondary (exploratory) | 1 | 1 | 0 | – |" in fam_c
    row_b = next(
        r
        for r in (tmp_path / "b" / "findings.md").read_text().splitlines()
        if "| rt |" in r and "AdaNorm >" in r
    )
    assert "(exploratory)" in row_b
    text = (tmp_path / "a" / "findings.md").read_text()
    assert "Primary family (declared in normlab/configs/study/claims.yaml" in text
    # the caption names the sources of variability, the test and its assumption, n, alpha
    assert "source of variability" in text and "assumed independent across seeds" in text
    assert "alpha = 0.05" in text and "Across tasks (two-sided sign tests, exploratory" in text


def test_a_folders_findings_json_stands_in_for_its_runs_only_while_they_are_unchanged(tmp_path):
    pre = tmp_path / "results" / "mini-enwik8-prenorm"
    for seed, noise in zip((2, 3, 4), (0.1, -0.2, 0.15)):
        make_run(pre / "runs", "rt", "adanorm", seed, 80.5 + noise)
        make_run(pre / "runs", "rt", "layernorm", seed, 80.0 - noise)
    write_report(find_runs([pre / "runs"]), pre, figures=False, member=pre)
    record = json.loads((pre / "findings.json").read_text())
    assert record["key"]["study"] == "prenorm" and len(record["findings"]) == 1
    # read back equal to the rows computed from the runs, field by field
    assert findings_record.read(pre, member_key("prenorm", pre)) == findings(
        xgrid(find_runs([pre / "runs"]))
    )
    assert member_findings("prenorm", pre) == findings(xgrid(find_runs([pre / "runs"])))
    # a run changed since: the record no longer counts
    make_run(pre / "runs", "rt", "layernorm", 5, 79.0)
    assert findings_record.read(pre, member_key("prenorm", pre)) is None


def test_divergence_decides_and_too_few_pairs(tmp_path):
    for seed in (2, 3):
        make_run(tmp_path, "rt", "detachnorm", seed, status="diverged")
        make_run(tmp_path, "rt", "layernorm_simple", seed, 75.0 + seed)
    make_run(tmp_path, "rt", "layernorm", 2, 74.0)
    g = xgrid(find_runs([tmp_path]))
    f = evaluate(g, CLAIM["derivatives_matter"], "rt")
    assert (
        f.verdict() == "better" and "DetachNorm diverged in every run" in f.sentence and f.p is None
    )
    assert evaluate(g, CLAIM["ln_simple_no_worse"], "rt").verdict() == "too few runs"


def test_rise_after_the_minimum_and_the_gap_at_the_best_checkpoint(tmp_path):
    d = make_run(tmp_path, "rt", "layernorm", 2, 70.0, curves=curves([1.5, 1.2, 1.3, 1.5]))
    (run,) = find_runs([d])
    run.summary["best_step"] = 50
    assert valid_rise(run) == pytest.approx(100 * (1.5 - 1.2) / 1.2)
    # gap at step 50: valid 1.2 minus the mean train loss of steps in (45, 50]: 1.5
    assert gap_best(run) == pytest.approx(1.2 - 1.5)
    assert gap_last(run) == pytest.approx(1.5 - 1.0)


def test_the_overfitting_claim_needs_a_lower_train_loss_and_a_higher_valid_loss(tmp_path):
    # LayerNorm's minimum comes early and its valid loss rises a lot after it; LayerNorm-simple's
    # minimum comes late. On the rise after each own minimum LayerNorm "overfits" far more; at the
    # same step (the last both evaluated) the comparison is of train and valid loss there.
    for seed in (2, 3, 4):
        e = 0.002 * seed
        make_run(tmp_path, "rt", "layernorm", seed, 70.0, curves=curves([0.8, 0.6, 0.7, 0.72 + e]))
        make_run(
            tmp_path, "rt", "layernorm_simple", seed, 70.0, curves=curves([0.9, 0.8, 0.75, 0.72])
        )
    g = xgrid(find_runs([tmp_path]))
    f = evaluate(g, CLAIM["ln_overfits"], "rt")
    # both at step 100: valid(LayerNorm) − valid(LayerNorm-simple), positive = as claimed
    assert f.diff == pytest.approx(np.mean([0.002 * s for s in (2, 3, 4)]))
    assert f.diff_train == pytest.approx(0.0)  # the same train curves: LayerNorm fits no faster
    assert f.unit == "loss" and "at the last common evaluation" in f.sentence
    rises = [valid_rise(r) for r in g.norm_cell("rt", "layernorm").runs]
    assert min(rises) > 19  # 0.6 -> 0.72: +20%, against LayerNorm-simple's 0%
    assert f.verdict("raw") != "overfits"
    # one run stopped early: the pair is compared at the last step both have
    make_run(tmp_path, "rt", "layernorm", 5, 70.0, curves=curves([0.8, 0.6], steps=50))
    make_run(tmp_path, "rt", "layernorm_simple", 5, 70.0, curves=curves([0.9, 0.8, 0.75, 0.7]))
    g5 = evaluate(xgrid(find_runs([tmp_path])), CLAIM["ln_overfits"], "rt")
    assert g5.n == 4


def test_fitting_faster_alone_never_supports_overfitting(tmp_path):
    # LayerNorm's train loss lower by 0.1 on every seed (a far larger gap), its valid loss lower
    # too: the gap measure read this as overfitting; the claim as stated is refuted
    for seed, e in zip((2, 3, 4, 5, 6), (0.01, -0.02, 0.015, 0.0, -0.005)):
        make_run(tmp_path / "fast", "rt", "layernorm", seed, 70.0,
                 curves=curves([0.9, 0.7, 0.6, 0.55 + e], train_end=0.9 + e))  # fmt: skip
        make_run(tmp_path / "fast", "rt", "layernorm_simple", seed, 70.0,
                 curves=curves([0.9, 0.7, 0.6, 0.60], train_end=1.0))  # fmt: skip
    f = evaluate(xgrid(find_runs([tmp_path / "fast"])), CLAIM["ln_overfits"], "rt")
    assert f.diff_train == pytest.approx(0.1, abs=0.01) and f.diff < 0
    assert f.verdict("raw") == "does not overfit"
    # the paper's pattern: train loss lower and valid loss higher on every seed
    for seed, e in zip((2, 3, 4, 5, 6), (0.01, -0.02, 0.015, 0.0, -0.005)):
        make_run(tmp_path / "over", "rt", "layernorm", seed, 70.0,
                 curves=curves([0.9, 0.7, 0.6, 0.70 + e], train_end=0.9 - e))  # fmt: skip
        make_run(tmp_path / "over", "rt", "layernorm_simple", seed, 70.0,
                 curves=curves([0.9, 0.7, 0.6, 0.60], train_end=1.0))  # fmt: skip
    g = evaluate(xgrid(find_runs([tmp_path / "over"])), CLAIM["ln_overfits"], "rt")
    assert g.verdict("raw") == "overfits"
    # the support is an intersection-union test: its p is the larger of the two one-sided ones
    d_valid = [0.10 + e for e in (0.01, -0.02, 0.015, 0.0, -0.005)]
    p_valid = stats.ttest_1samp(d_valid, 0.0, alternative="greater").pvalue
    assert g.hyps[0]["p"] == pytest.approx(p_valid, rel=1e-6)


def test_a_seed_initializes_the_parameters_every_norm_shares_alike(tmp_path):
    """The premise of pairing by seed: no norm draws from the RNG when it is built, so at one seed
    every parameter the norms share (all but the norms' own gains and biases) starts equal."""
    import torch

    from helpers import compose_cfg
    from normlab.config import load_job
    from normlab.norms import norm_factory
    from normlab.tasks.lm import Enwik8Task

    params = {}
    for norm in (
        "layernorm",
        "layernorm_simple",
        "detachnorm",
        "adanorm",
        "rmsnorm",
        "dyt",
        "none",
    ):
        job = load_job(compose_cfg(["task=enwik8", "scale=mini", f"norm={norm}"], tmp_path)).cfg
        torch.manual_seed(2)
        model = Enwik8Task(job.task, tmp_path, tmp_path).build_model(
            norm_factory(job.norm.name, **job.norm.options)
        )
        params[norm] = dict(model.named_parameters())
    shared = set.intersection(*(set(p) for p in params.values()))
    assert len(shared) > 40 and len(params["layernorm"]) > len(shared)
    for norm, p in params.items():
        assert all(torch.equal(p[k], params["layernorm"][k]) for k in shared), norm


def test_a_row_whose_pairs_crossed_machines_says_which_seeds(tmp_path):
    for seed in (2, 3, 4):
        for norm, v in (("layernorm_simple", 80.0 + seed / 10), ("layernorm", 80.0)):
            d = make_run(tmp_path, "rt", norm, seed, v)
            s = json.loads((d / "summary.json").read_text())
            isa = "AVX2" if (norm, seed) == ("layernorm", 3) else "AVX512"
            s["machine"] = {"cpu": "EPYC", "isa": isa, "threads": 1}
            (d / "summary.json").write_text(json.dumps(s))
    f = evaluate(xgrid(find_runs([tmp_path])), CLAIM["ln_simple_no_worse"], "rt")
    assert "machines crossed" in f.notes and "seed(s) 3 paired runs of two machines" in f.sentence


def test_whether_the_family_was_declared_before_its_runs_is_computed_from_git(tmp_path):
    """The claims files' last change against the earliest commit the folder's runs were trained
    at: runs of the repository's first commit predate any declaration, so the family reads
    exploratory, and the caption says so; without a record git cannot tell, and the caption says
    that instead of a guess."""
    from normlab.campaigns.xu2019.declared import declared
    from normlab.campaigns.xu2019.family import when_text
    from normlab.gitinfo import git

    first = git("rev-list", "--max-parents=0", "HEAD").split()[0]
    (tmp_path / "reproduce.json").write_text(json.dumps({"run_git_commits": {first: 3}}))
    w = declared(tmp_path)
    assert w is not None and not w.before and w.data.startswith(first[:7])
    fam = build([], None)
    fam.when = w
    assert "after the runs it tests" in when_text(fam) and "exploratory" in when_text(fam)
    assert declared(tmp_path / "nowhere") is None
    fam.when = None
    assert "git cannot tell" in when_text(fam)


def test_a_confirmatory_studys_declaration_is_dated_by_its_own_file_too(tmp_path):
    """Runs of the repository's first commit against the claims files and a declaration in the
    checkout: the later of their last changes dates the family; a declaration outside the
    checkout cannot be dated, and nothing is guessed."""
    from normlab.campaigns.xu2019.declared import FILES, declared
    from normlab.gitinfo import REPO, git

    first = git("rev-list", "--max-parents=0", "HEAD").split()[0]
    commits = [first]
    plain = declared(None, commits)
    inside = REPO / "docs" / "studies.md"  # a file of the checkout, standing in for a declaration
    newest = git("log", "-1", "--format=%h", "--", "docs/studies.md", *map(str, FILES))
    with_file = declared(None, commits, (inside, *FILES))
    assert plain is not None and with_file is not None and not with_file.before
    assert with_file.declaration.startswith(newest[:7])
    outside = tmp_path / "declaration.yaml"
    outside.write_text("study: confirm\n")
    assert declared(None, commits, (outside, *FILES)) is None
    # runs trained at the commit that holds the declaration as it stands (the confirmatory
    # study's first slice is pinned to the commit that declares it): declared before its data
    decl = REPO / "normlab" / "campaigns" / "xu2019" / "confirm.yaml"
    paths = (str(decl.relative_to(REPO)), *map(str, FILES))
    head = git("log", "-1", "--format=%H", "--", *paths)
    same = declared(None, [head], (decl, *FILES))
    assert same is not None and same.before
    # dated by the last commit that changed what the files declare (a comment is no change)
    assert same.declaration[:7] in git("log", "--format=%h", "--abbrev=7", "--", *paths).split()
    # a commit not in the clone cannot be dated: nothing is guessed
    assert declared(None, ["0" * 40], (decl, *FILES)) is None
