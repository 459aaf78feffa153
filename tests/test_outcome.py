"""The end-of-run line names the checkpoint (step) each number comes from."""

import json

from normlab.run.outcome import end_line


def run_dir_with(tmp_path, valid):
    (tmp_path / "curves.jsonl").write_text(
        "".join(
            json.dumps({"step": s, "split": "valid", "acc": a, "loss": 0.5}) + "\n"
            for s, a in valid
        )
    )
    return tmp_path


def test_test_metrics_sit_beside_the_valid_score_that_selected_their_checkpoint(tmp_path):
    # the case that misled: the last evaluation's valid (73.92) printed beside best.pt's test (74.58)
    run = run_dir_with(tmp_path, [(90, 70.1), (270, 77.39), (300, 73.92)])
    summary = {
        "status": "completed",
        "steps": 300,
        "metric": "acc",
        "higher_is_better": True,
        "best_step": 270,
        "best_valid_score": 77.39,
        "best_valid": {"acc": 77.39, "loss": 0.5},
        "valid": {"acc": 73.92},
        "test": {"acc": 74.58, "loss": 0.61},
    }
    line = end_line(summary, run)
    assert "test acc 74.58, loss 0.61 from best.pt (step 270, valid acc 77.39)" in line
    assert line.endswith("; last evaluation (step 300): valid acc 73.92")
    # where best.pt is the last evaluation there is no second number to confuse it with
    summary["best_step"] = 300
    summary.update(best_valid_score=73.92, best_valid={"acc": 73.92})
    assert "last evaluation" not in end_line(summary, run)


def test_a_run_selected_on_the_loss_says_so_and_stopped_runs_say_how_to_resume(tmp_path):
    run = run_dir_with(tmp_path, [(100, 1.0), (200, 2.0)])
    summary = {
        "status": "completed",
        "steps": 200,
        "metric": "bleu",
        "higher_is_better": True,
        "best_step": 100,
        "best_valid_score": -4.25,
        "best_valid": {"loss": 4.25},
        "test": {"bleu": 12.5, "loss": 4.3},
    }
    assert "test bleu 12.5, loss 4.3 from best.pt (step 100, valid loss 4.25)" in end_line(
        summary, run
    )
    stopped = {
        "status": "interrupted",
        "steps": 57,
        "error": "SIGINT at step 57: checkpoint written; re-run the same command to resume",
    }
    assert end_line(stopped, run).endswith(
        ": interrupted: SIGINT at step 57: checkpoint written; re-run the same command to resume"
    )


def test_a_run_that_diverged_before_any_evaluation_kept_no_best_checkpoint(tmp_path):
    run = run_dir_with(tmp_path, [])
    summary = {
        "status": "diverged",
        "steps": 1,
        "metric": "acc",
        "higher_is_better": True,
        "best_step": 0,
        "best_valid_score": None,
        "error": "non-finite training loss (nan) at step 1",
    }
    line = end_line(summary, run)
    assert "kept no best.pt (no evaluation finished before it stopped)" in line
    assert "step 0" not in line
    # with an evaluation before the divergence, its best.pt is named
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "best.pt").write_bytes(b"x")
    summary.update(steps=400, best_step=300, best_valid_score=71.0, selected_by="acc")
    assert "kept best.pt (step 300, valid acc 71)" in end_line(summary, run)
