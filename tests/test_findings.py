"""The findings: paired two-sided tests and TOST per claim row, one declared family for Holm and
BH across studies, verdicts, and the overfitting claim measured after the validation minimum."""

import functools
import json

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import ttost_paired
from test_report import make_run

from normlab.campaigns.xu2019 import CAMPAIGN, findings_record, tuned
from normlab.campaigns.xu2019.family import build, locate
from normlab.campaigns.xu2019.findings import CLAIMS, evaluate, findings
from normlab.campaigns.xu2019.findings_text import summary_lines
from normlab.campaigns.xu2019.tuned import member_findings, member_key
from normlab.report import find_runs
from normlab.report import write_report as generic_report
from normlab.report.aggregate import Grid
from normlab.report.claims import margin
from normlab.report.overfit import gap_best, gap_last, in_regime, valid_rise

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


def test_rows_pair_seeds_test_two_sided_and_tost_against_the_margin(tmp_path):
    lns, ln = [80.0, 81.0, 82.5, 79.0], [79.8, 80.6, 82.6, 78.9]
    for seed, (a, b) in enumerate(zip(lns, ln), start=2):
        make_run(tmp_path, "rt", "layernorm_simple", seed, a)
        make_run(tmp_path, "rt", "layernorm", seed, b)
    make_run(tmp_path, "rt", "layernorm", 9, 50.0)  # no partner seed: left out of the pairs
    f = evaluate(Grid(find_runs([tmp_path])), CLAIM["ln_simple_no_worse"], "rt")
    t = stats.ttest_rel(lns, ln)
    assert (f.n, f.n_a, f.n_b) == (4, 4, 5) and f.diff == pytest.approx(
        np.mean(np.subtract(lns, ln))
    )
    assert f.p == pytest.approx(t.pvalue, rel=1e-12) and f.t == pytest.approx(t.statistic)
    assert f.margin == margin("acc") == 0.5
    assert f.p_tost == pytest.approx(ttost_paired(np.array(lns), np.array(ln), -0.5, 0.5)[0])
    assert "seed(s) 9 left out" in f.sentence
    # uncorrected: the difference test fails, the CI sits inside ±0.5: equivalent
    assert f.p > 0.05 and f.p_tost < 0.05 and f.verdict("raw") == "equivalent"


def test_lower_is_better_metrics_flip_sign_and_a_clear_loss_is_worse(tmp_path):
    for seed in (2, 3, 4):
        make_run(tmp_path, "enwik8", "adanorm", seed, 5.7 + 0.01 * seed, metric="bpc", hib=False)
        make_run(
            tmp_path, "enwik8", "layernorm", seed, 4.1 + 0.02 * (seed % 2), metric="bpc", hib=False
        )
    f = evaluate(Grid(find_runs([tmp_path])), CLAIM["adanorm_improves"], "enwik8")
    assert f.diff == pytest.approx(-(5.73 - 4.1) + 0.02 / 3 * 1, abs=0.02) and f.diff < 0
    assert f.p < 0.05 and f.verdict("raw") == "worse"


def test_one_family_adjusts_every_row_and_sign_test_together(tmp_path):
    # Two tasks with a clear LN-simple > LN difference, no other claim has runs.
    for task, shift in (("rt", 2.0), ("sst2", 3.0)):
        for seed, noise in zip((2, 3, 4), (0.1, -0.2, 0.15)):
            make_run(tmp_path, task, "layernorm_simple", seed, 80.0 + shift + noise)
            make_run(tmp_path, task, "layernorm", seed, 80.0 - noise)
    every = findings(Grid(find_runs([tmp_path])))
    fam = build(every, None, member_findings)
    fs = [f for f in every if f.claim.key == "ln_simple_no_worse"]
    # the overfitting rows have no curves to measure: decided without a test, outside the family
    assert {f.verdict() for f in every if f not in fs} == {"no test"}
    raw = [
        fs[0].p,
        fs[0].p_tost,
        fs[1].p,
        fs[1].p_tost,
        fam.members[0].signs["ln_simple_no_worse"]["p"],
    ]
    assert fam.size == 5 and not fam.declared
    holm = multipletests(raw, method="holm")[1]
    assert [fs[0].p_holm, fs[0].tost_holm, fs[1].p_holm, fs[1].tost_holm] == pytest.approx(
        list(holm[:4])
    )
    assert fam.members[0].signs["ln_simple_no_worse"]["p"] == pytest.approx(0.5)  # 2 of 2: 2 * 1/4
    assert all(f.verdict("raw") == "better" for f in fs)
    # the MDE is at alpha / m
    d = np.subtract([82.1, 81.8, 82.15], [79.9, 80.2, 79.85])
    assert fs[0].mde is not None and fs[0].mde > abs(d.mean())
    line = summary_lines(every, fam, "this report")[0]
    assert (
        "family's 5 tests" in line
        and "as claimed on 2 of 2 tasks" in line
        and "MDE (margin)" in line
    )


def test_family_spans_the_declared_studies_of_a_scale(tmp_path):
    res = tmp_path / "results"
    for folder, shift in (("mini", 1.0), ("mini-enwik8-prenorm", 0.5)):
        for seed, noise in zip((2, 3, 4), (0.1, -0.2, 0.15)):
            task, metric, hib = (
                ("rt", "acc", True) if folder == "mini" else ("enwik8", "bpc", False)
            )
            make_run(
                res / folder / "runs",
                task,
                "adanorm",
                seed,
                80.0 + shift + noise,
                metric=metric,
                hib=hib,
            )
            make_run(
                res / folder / "runs", task, "layernorm", seed, 80.0 - noise, metric=metric, hib=hib
            )
    assert locate(res / "mini") == ("fixed", "mini") and locate(res / "mini-tuned") == (
        "tuned",
        "mini",
    )
    assert (
        locate(res / "mini-enwik8-prenorm") == ("prenorm", "mini")
        and locate(tmp_path / "mini") is None
    )
    write_report(
        find_runs([res / "mini" / "runs"]), tmp_path / "a", figures=False, member=res / "mini"
    )
    write_report(
        find_runs([res / "mini-enwik8-prenorm" / "runs"]),
        tmp_path / "b",
        figures=False,
        member=res / "mini-enwik8-prenorm",
    )
    fam_a, fam_b = ((tmp_path / d / "family.md").read_text().split(" Scale:")[0] for d in "ab")
    assert fam_a == fam_b and "m = 6 tests" in fam_a  # 2 tests + 1 sign test per study
    assert "| prenorm | results/mini-enwik8-prenorm | 1 | 1 | 1 | 1 | 0 |" in fam_a
    assert "Absent members (no runs yet): results/mini-tuned." in fam_a
    # the same adjusted p in both folders' findings for the fixed study's row
    row = next(
        r
        for r in (tmp_path / "a" / "findings.csv").read_text().splitlines()
        if r.startswith("AdaNorm")
    )
    fs = findings(Grid(find_runs([res / "mini" / "runs"])))
    fam = build(fs, res / "mini", member_findings)
    assert f"{fs[0].p_holm:.3g}" in row and fam.size == 6
    text = (tmp_path / "a" / "findings.md").read_text()
    assert (
        "fixed (results/mini) 3; prenorm (results/mini-enwik8-prenorm) 3" in text
    )  # the members, in the caption
    assert (
        "Across tasks (two-sided sign tests, adjusted in the family" in text
        and "as claimed on 1 of 1" in text
    )


def test_a_members_findings_json_stands_in_for_its_runs_only_while_they_are_unchanged(
    tmp_path, monkeypatch
):
    res = tmp_path / "results"
    for folder, shift in (("mini", 1.0), ("mini-enwik8-prenorm", 0.5)):
        for seed, noise in zip((2, 3, 4), (0.1, -0.2, 0.15)):
            make_run(res / folder / "runs", "rt", "adanorm", seed, 80.0 + shift + noise)
            make_run(res / folder / "runs", "rt", "layernorm", seed, 80.0 - noise)
    pre = res / "mini-enwik8-prenorm"
    write_report(find_runs([pre / "runs"]), pre, figures=False, member=pre)
    record = json.loads((pre / "findings.json").read_text())
    assert record["key"]["study"] == "prenorm" and len(record["findings"]) == 1
    # read back equal to the rows computed from the runs, field by field
    assert findings_record.read(pre, member_key("prenorm", pre)) == findings(
        Grid(find_runs([pre / "runs"]))
    )
    write_report(
        find_runs([res / "mini" / "runs"]), tmp_path / "a", figures=False, member=res / "mini"
    )
    # the member's runs are not read while its record counts
    calls, real = [], tuned.find_runs
    monkeypatch.setattr(tuned, "find_runs", lambda paths: calls.append(paths) or real(paths))
    write_report(
        find_runs([res / "mini" / "runs"]), tmp_path / "b", figures=False, member=res / "mini"
    )
    assert (
        calls == []
        and (tmp_path / "a" / "family.md").read_text() == (tmp_path / "b" / "family.md").read_text()
    )
    # a member run changed since: its record no longer counts, and the runs are read again
    make_run(pre / "runs", "rt", "layernorm", 5, 79.0)
    assert findings_record.read(pre, member_key("prenorm", pre)) is None
    write_report(
        find_runs([res / "mini" / "runs"]), tmp_path / "c", figures=False, member=res / "mini"
    )
    assert len(calls) == 1


def test_divergence_decides_and_too_few_pairs(tmp_path):
    for seed in (2, 3):
        make_run(tmp_path, "rt", "detachnorm", seed, status="diverged")
        make_run(tmp_path, "rt", "layernorm_simple", seed, 75.0 + seed)
    make_run(tmp_path, "rt", "layernorm", 2, 74.0)
    g = Grid(find_runs([tmp_path]))
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


def test_a_task_whose_layernorm_does_not_overfit_is_outside_the_regime(tmp_path):
    for seed in (2, 3, 4):
        make_run(
            tmp_path,
            "mnist",
            "layernorm",
            seed,
            98.0,
            curves=curves([1.0, 0.5, 0.501 + 0.001 * seed]),
        )
        make_run(tmp_path, "mnist", "layernorm_simple", seed, 98.0, curves=curves([1.0, 0.5, 0.5]))
        make_run(
            tmp_path, "rt", "layernorm", seed, 70.0, curves=curves([1.0, 0.5, 0.6 + 0.01 * seed])
        )
        make_run(tmp_path, "rt", "layernorm_simple", seed, 70.0, curves=curves([1.0, 0.5, 0.52]))
    g = Grid(find_runs([tmp_path]))
    assert in_regime(g, "mnist") is False and in_regime(g, "rt") is True
    out = evaluate(g, CLAIM["ln_overfits"], "mnist")
    assert out.verdict() == "outside the regime" and out.p is None
    inside = evaluate(g, CLAIM["ln_overfits"], "rt")
    assert inside.diff == pytest.approx(
        np.mean([100 * (0.6 + 0.01 * s - 0.5) / 0.5 - 4.0 for s in (2, 3, 4)])
    )
    assert inside.verdict("raw") == "larger"
    fam = build(findings(g), None, member_findings)
    assert (
        fam.members[0].signs["ln_overfits"]["n"] == 1
    )  # the sign test counts only tasks in the regime
    write_report(find_runs([tmp_path]), tmp_path / "out", figures=False)
    text = (tmp_path / "out" / "overfitting.md").read_text()
    assert "outside the regime (LayerNorm +0.8% < 1%)" in text and "| rt | LayerNorm |" in text


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
