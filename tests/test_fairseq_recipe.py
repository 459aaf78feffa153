"""scripts/fairseq_recipe.py without fairseq: the composed mini preset becomes fairseq-train's flags.

The comparison with fairseq (tests/fairseq/) runs only in .venv-fairseq; these run in make test,
so a recipe that no longer composes, or a flag that drifts from the preset, shows here first."""

import json
import subprocess
import sys

import yaml

from helpers import REPO

PRESET = REPO / "normlab" / "configs" / "preset" / "iwslt14_de_en" / "mini.yaml"

# A fresh process: composing must not rely on another module having registered the trainer
# schema first (the script composed nothing in a process of its own once, and only the fairseq
# venv's tests, which make test does not run, would have shown it).
PROBE = """
import json, sys
from pathlib import Path
sys.path.insert(0, "scripts")
import fairseq_recipe as r
overrides = [*r.RECIPES["mini"][0], "norm=layernorm", *sys.argv[2:]]
cfg = r.compose(overrides, Path("/nonexistent"), Path(sys.argv[1]))
print(json.dumps(r.fairseq_flags(cfg, r.RECIPES["mini"][1])))
"""


def flags_of(tmp_path, *overrides):
    return subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path), *overrides],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_mini_recipe_composes_alone_and_its_flags_are_the_presets(tmp_path):
    run = flags_of(tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    argv = json.loads(run.stdout)
    flag = {a: b for a, b in zip(argv, argv[1:]) if a.startswith("--")}
    preset = yaml.safe_load(PRESET.read_text())
    model, train, data = preset["model"], preset["train"], preset["data"]
    for name in ("encoder", "decoder"):
        assert flag[f"--{name}-layers"] == str(model["layers"])
        assert flag[f"--{name}-embed-dim"] == str(model["d_model"])
        assert flag[f"--{name}-ffn-embed-dim"] == str(model["ffn_dim"])
        assert flag[f"--{name}-attention-heads"] == str(model["heads"])
        assert f"--{name}-normalize-before" in argv
    assert float(flag["--lr"]) == train["lr"]
    assert flag["--warmup-updates"] == str(train["warmup_steps"])
    assert float(flag["--warmup-init-lr"]) == train["warmup_init_ratio"] * train["lr"]
    assert flag["--max-tokens"] == str(data["max_tokens"])
    assert float(flag["--dropout"]) == model["dropout"]
    # the comparison's own two choices, over the preset
    assert float(flag["--weight-decay"]) == 0.0
    assert flag["--max-source-positions"] == flag["--max-target-positions"] == "1024"
    assert (flag["--norm"], flag["--max-update"]) == ("layernorm", "200")
    assert flag["--attention-init"] == "fairseq"  # stock fairseq unless the comparison asks


def test_a_post_norm_recipe_is_refused_with_what_the_comparison_covers(tmp_path):
    run = flags_of(tmp_path, "task.model.placement=post")
    assert run.returncode != 0
    assert "the comparison covers fairseq's pre-norm" in run.stderr
