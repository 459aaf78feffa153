"""DyT's alpha and saturation, from a real run to the report: the probe's records in curves.jsonl
(per layer and averaged) and the report's alpha_saturation table."""

from __future__ import annotations

from helpers import run_job
from normlab.report import find_runs, write_report
from normlab.rundir import read_curves


def test_a_dyt_run_records_alpha_and_saturation_and_the_report_shows_them(tmp_path, data_dir):
    overrides = ["task=enwik8", "scale=smoke", "norm=dyt", "task.train.probe_every=2", "threads=1"]
    summary, run_dir = run_job(overrides, tmp_path, data_dir)
    assert summary["status"] == "completed"
    probed = [r for r in read_curves(run_dir / "curves.jsonl") if "alpha/all/alpha" in r]
    assert [r["step"] for r in probed] == list(range(2, summary["steps"] + 1, 2))
    layers = {k.split("/")[1] for k in probed[0] if k.startswith("alpha/") and "/all/" not in k}
    # enwik8 at smoke: 2 layers x (attention, FFN) and the final norm (post-norm: none)
    assert len(layers) == 4, layers
    for r in probed:
        assert 0.0 <= r["alpha/all/saturated"] <= 1.0
        mean = sum(r[f"alpha/{n}/alpha"] for n in layers) / len(layers)
        assert abs(r["alpha/all/alpha"] - mean) < 1e-12
    written = write_report(find_runs([tmp_path / "runs"]), tmp_path / "report", figures=False)
    table = tmp_path / "report" / "alpha_saturation.md"
    assert table in written["tables"]
    text = table.read_text()
    first, last = probed[0]["alpha/all/alpha"], probed[-1]["alpha/all/alpha"]
    assert f"{first:.3g} → {last:.3g}" in text and "| DyT |" in text


def test_no_saturation_table_without_a_dyt_like_norm(tmp_path, data_dir):
    overrides = ["task=enwik8", "scale=smoke", "norm=layernorm", "task.train.probe_every=2"]
    run_job([*overrides, "threads=1"], tmp_path, data_dir)
    written = write_report(find_runs([tmp_path / "runs"]), tmp_path / "report", figures=False)
    assert not [p for p in written["tables"] if p.name.startswith("alpha_saturation")]
    assert [p for p in written["tables"] if p.name.startswith("grad_stats")]
