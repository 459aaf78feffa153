"""The S-curve probe (DyT's Figure 2): the recorded pairs are the norm's own input and output,
the layers are spread over the depth, and a run with task.train.scurve writes the record and its
figure."""

from __future__ import annotations

import json

import pytest
import torch

from normlab.models.lm import TransformerLM
from normlab.models.transformer import TransformerConfig
from normlab.norms import norm_factory
from normlab.norms.scurve import call_order, collect, spread
from normlab.run.scurve_figure import plot


def lm(norm: str) -> TransformerLM:
    torch.manual_seed(0)
    cfg = TransformerConfig(d_model=16, heads=2, ffn_dim=32, layers=3, placement="pre")
    return TransformerLM(20, cfg, norm_factory(norm))


def test_layers_are_taken_in_the_order_of_depth_spread_first_and_last_kept():
    m = lm("layernorm")  # 3 layers x 2 norms + the final norm = 7
    every = call_order(m, (torch.randint(0, 20, (2, 12)),))
    depth = [
        f"decoder.layers.{i}.{s}"
        for i in range(3)
        for s in ("self_attn_layer_norm", "final_layer_norm")
    ]
    assert every == [*depth, "decoder.layer_norm"]  # attention's norm before the FFN's
    assert spread(every, 3) == [every[0], every[3], every[6]]
    assert spread(every, 1) == [every[6]] and spread(every, 99) == every


def test_the_pairs_are_the_norms_input_and_output_per_channel():
    m = lm("dyt")
    with torch.no_grad():
        for mod in m.modules():
            if hasattr(mod, "alpha"):
                mod.alpha.fill_(0.8)
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.3, 0.3)
    rec = collect(m, (torch.randint(0, 20, (2, 12)),), layers=2, points=64, channels=4, seed=1)
    assert len(rec["layers"]) == 2 and len(rec["channels"]) == 4
    mods = dict(m.named_modules())
    for layer in rec["layers"]:
        norm = mods[layer["name"]]
        assert len(layer["x"]) == 64 and set(layer["channel"]) == set(rec["channels"])
        for x, y, c in zip(layer["x"], layer["y"], layer["channel"]):
            want = (
                norm.weight[c].detach() * torch.tanh(0.8 * torch.tensor(x)) + norm.bias[c].detach()
            )
            assert y == pytest.approx(want.item(), abs=1e-5)
    assert m.training  # the model's mode is given back


def test_the_figure_is_written(tmp_path):
    rec = collect(lm("layernorm"), (torch.randint(0, 20, (2, 12)),), layers=3)
    path = plot(rec, tmp_path / "figures" / "scurve.png", "enwik8 / LayerNorm")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    json.dumps(rec)  # plain data, as scurve.json holds it


def test_a_dyt_run_writes_its_s_curve_record_and_figure(tmp_path, data_dir):
    from helpers import run_job

    summary, run_dir = run_job(
        ["task=enwik8", "scale=smoke", "norm=dyt", "task.train.scurve=3", "threads=1"],
        tmp_path,
        data_dir,
    )
    assert summary["status"] == "completed"
    rec = json.loads((run_dir / "scurve.json").read_text())
    assert [x["index"] for x in rec["layers"]] == [0, 2, 3]  # of 4 norms: first, middle, last
    assert rec["title"] == "enwik8 / DyT (smoke), seed 1, best checkpoint"
    assert all(len(x["x"]) == len(x["y"]) > 100 for x in rec["layers"])
    assert (run_dir / "figures" / "scurve.png").read_bytes()[:4] == b"\x89PNG"


def test_no_s_curve_unless_asked(tmp_path, data_dir):
    from helpers import run_job

    _, run_dir = run_job(
        ["task=enwik8", "scale=smoke", "norm=dyt", "threads=1"], tmp_path, data_dir
    )
    assert not (run_dir / "scurve.json").exists()
