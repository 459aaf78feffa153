"""scripts/calibration_table.py: a row per candidate's run with the score that selected it, its
cost and the task's trivial baselines, and translation's valid-BLEU frontier in minutes."""

import json
import sys

from test_report import make_run

from helpers import REPO

sys.path.insert(0, str(REPO / "scripts"))
from calibration_table import rows  # noqa: E402

from normlab.report import find_runs  # noqa: E402


def test_a_row_per_candidate_and_the_bleu_frontier_in_minutes(tmp_path):
    curves = [
        {"step": s, "split": "valid", "loss": 5.0 - s / 100, "bleu": s / 50} for s in (50, 100)
    ]
    d = make_run(tmp_path, "iwslt14_de_en", "layernorm", 1, 7.5, metric="bleu", curves=curves)
    summary = json.loads((d / "summary.json").read_text())
    summary.update(best_step=100, best_valid_score=-4.0, selected_by="loss", train_time_s=48.0)
    (d / "summary.json").write_text(json.dumps(summary))  # 100 steps in 60 s: 0.01 min a step
    table, frontier = rows(find_runs([tmp_path]), None, tmp_path / "cache")
    assert table == [
        [
            "t", "iwslt14_de_en", "layernorm", "completed", "bleu 7.500", "loss 4.000",
            "100 / 100", "0.8 / 1.0", "1,000",
            "no data folder (set NORMLAB_DATA)",
        ]
    ]  # fmt: skip
    assert frontier == ["- t (layernorm): 1.00 at 0.5 min, 2.00 at 1.0 min"]
