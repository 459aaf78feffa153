"""normlab-train and fairseq-train (normlab's plugin) on the same tiny real IWSLT14 subset with the
same recipe (scripts/compare_fairseq.py --recipe tiny): identical vocabulary and token ids, both
trainers learn, and their validation losses after 100 updates agree within a tolerance set from
the seed-to-seed spread of each trainer."""

import json
import math
import subprocess
import sys

import pytest

pytest.importorskip("fairseq")

from conftest import REPO  # noqa: E402

# compare_fairseq.py --recipe tiny --seeds 1,2,3,4 (layernorm, 100 updates), valid loss in nats:
#   normlab 5.3622 5.3293 5.3707 5.3246 (sd 0.023)   fairseq 5.3338 5.3372 5.3726 5.3754 (sd 0.022)
# The difference of two 2-seed means has sd sqrt(0.023^2 + 0.022^2) / sqrt(2) = 0.023; TOL is 3 sd.
# What it catches: loss units (fairseq logs base 2: x1.44), a different vocabulary or data, one side not
# learning. What it does not: normlab at half the lr lands only 0.036 nats higher (seeds 1,2; docs/fairseq.md).
SEEDS, TOL = [1, 2], 0.07


def test_fairseq_valid_loss_is_close_to_normlabs_own_trainer(iwslt14, tmp_path):
    main_venv = (
        REPO / ".venv" / "bin" / "python"
    )  # normlab's own venv when built; this one has normlab too
    normlab_python = str(main_venv) if main_venv.exists() else sys.executable
    out = tmp_path / "compare.json"
    # a subprocess: composing normlab's config sets Hydra's version_base 1.3 for the whole process,
    # after which fairseq's own Hydra setup (the plugin tests, in this process) refuses to run
    run = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "compare_fairseq.py"),
            "--recipe",
            "tiny",
            "--seeds",
            ",".join(map(str, SEEDS)),
            "--work",
            str(tmp_path / "work"),
            "--data-dir",
            str(iwslt14.parents[1]),
            "--normlab-python",
            normlab_python,
            "--fairseq-python",
            sys.executable,
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    print(run.stdout)  # the table; make test-fairseq PYTEST_ADDOPTS=-s shows it
    res = json.loads(out.read_text())
    d, s = res["data"], res["summary"]
    assert d["fairseq_vocab"] == d["vocab"] and (d["train_pairs"], d["valid_pairs"]) == (2000, 200)
    for r in res["rows"]:  # both learned: well below the uniform prediction's loss, log V
        assert (
            r["normlab"]["loss"] < math.log(d["vocab"]) - 0.4
            and r["fairseq"]["loss"] < math.log(d["vocab"]) - 0.4
        )
    assert abs(s["diff"]) <= TOL, run.stdout


def test_normlabs_translation_loss_is_fairseqs_label_smoothed_loss():
    """The loss both trainers report: normlab's sums equal fairseq's own label_smoothed_nll_loss."""
    import torch
    import torch.nn.functional as F
    from fairseq.criterions.label_smoothed_cross_entropy import label_smoothed_nll_loss
    from omegaconf import OmegaConf

    from normlab.tasks.translation import TranslationTask

    torch.manual_seed(0)
    V, pad = 37, 1
    logits = torch.randn(3, 5, V)
    tgt = torch.randint(4, V, (3, 5))
    tgt[1, 3:], tgt[2, 1:] = pad, pad
    task = TranslationTask.__new__(TranslationTask)
    task.pad, task.cfg = pad, OmegaConf.create({"criterion": {"label_smoothing": 0.1}})
    total, nll, n = task._loss_sums(lambda src, prev: logits, (None, None, tgt))
    f_loss, f_nll = label_smoothed_nll_loss(
        F.log_softmax(logits, -1).view(-1, V), tgt.view(-1), 0.1, ignore_index=pad, reduce=True
    )
    assert int(n) == int(tgt.ne(pad).sum()) == 5 + 3 + 1
    torch.testing.assert_close(total, f_loss)
    torch.testing.assert_close(nll, f_nll)
