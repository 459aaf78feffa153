"""Enwik8: the byte reader on the real prefix (counts, split, labels), zip input and bad files,
evaluation windows that score every byte exactly once, the causal LM, BPC, and a smoke run per norm."""

from __future__ import annotations

import json
import math
import zipfile

import pytest
import torch
from omegaconf import OmegaConf

from helpers import run_job
from normlab.data import enwik8
from normlab.errors import DataError
from normlab.models.lm import TransformerLM
from normlab.models.transformer import TransformerConfig
from normlab.norms import NORMS, Norm, norm_factory
from normlab.tasks.lm import Enwik8Task

PREFIX = 1_071_051  # bytes of the shipped enwik8_small (data README)


def make_task(root, cache, seq_len=32, eval_len=100, batch_size=4, eval_batch_size=8, eval_bytes=0):
    cfg = OmegaConf.create(
        {
            "data": dict(
                seq_len=seq_len,
                eval_len=eval_len,
                batch_size=batch_size,
                eval_batch_size=eval_batch_size,
                eval_bytes=eval_bytes,
            ),
            "model": dict(
                d_model=16,
                heads=2,
                ffn_dim=32,
                layers=2,
                dropout=0.0,
                normalize_before=False,
                max_positions=128,
            ),
        }
    )
    task = Enwik8Task(cfg, root, cache)
    task.setup()
    return task


# --- reader ----------------------------------------------------------------------------------
def test_real_prefix_counts_split_and_label(data_dir):
    root = data_dir / "enwik8"
    corpus = enwik8.load(root)
    raw = (root / "enwik8_small").read_bytes()
    assert corpus.source.name == "enwik8_small"
    assert corpus.data.dtype == torch.uint8 and corpus.data.numel() == PREFIX == len(raw)
    assert bytes(corpus.data.numpy()) == raw  # token id = byte value
    assert raw.count(b"\n") == 13_162 and len(set(raw)) == 195  # data README; 195 byte values
    assert corpus.bounds == {
        "train": (0, 963_945),
        "valid": (963_945, 1_017_498),
        "test": (1_017_498, PREFIX),
    }
    assert sum(corpus.sizes().values()) == PREFIX
    assert (
        "prefix" in corpus.note and "1,071,051" in corpus.note and "not the standard" in corpus.note
    )


def test_full_file_gets_the_standard_split():
    assert enwik8.split_bounds(100_000_000) == {
        "train": (0, 90_000_000),
        "valid": (90_000_000, 95_000_000),
        "test": (95_000_000, 100_000_000),
    }


def test_zip_is_read_and_preferred_to_the_prefix(tmp_path):
    payload = bytes(range(256)) * 8
    (tmp_path / "enwik8_small").write_bytes(b"x" * 5000)
    with zipfile.ZipFile(tmp_path / "enwik8.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("enwik8", payload)
    corpus = enwik8.load(tmp_path)
    assert corpus.source.name == "enwik8.zip" and bytes(corpus.data.numpy()) == payload
    assert corpus.bounds["valid"] == (1843, 1945) and "first 2,048 of enwik8" in corpus.note


def test_truncated_zip_and_missing_data_name_the_file(tmp_path):
    with zipfile.ZipFile(tmp_path / "full.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("enwik8", bytes(range(256)) * 64)
    (tmp_path / "enwik8.zip").write_bytes((tmp_path / "full.zip").read_bytes()[:300])
    with pytest.raises(DataError, match=r"enwik8\.zip is not a readable zip"):
        enwik8.load(tmp_path)
    with pytest.raises(DataError, match=r"no enwik8 data in .*empty.*enwik8\.zip"):
        enwik8.load(tmp_path / "empty")
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "enwik8").write_bytes(b"")
    with pytest.raises(DataError, match=r"big/enwik8 has only 0 bytes"):
        enwik8.load(tmp_path / "big")


# --- windows -----------------------------------------------------------------------------------
@pytest.mark.parametrize("start,end,length", [(1, 101, 10), (5, 1000, 64), (3, 4, 7), (90, 91, 1)])
def test_eval_windows_cover_every_position_once(start, end, length):
    w = enwik8.eval_windows(start, end, length)
    covered = [i for a, b in w for i in range(a, b)]
    assert covered == list(range(start, end))
    assert all(b - a == length for a, b in w[:-1]) and 0 < w[-1][1] - w[-1][0] <= length
    with pytest.raises(ValueError, match="start must be >= 1"):
        enwik8.eval_windows(0, end, length)


@pytest.mark.parametrize("split", ["valid", "test"])
def test_eval_batches_score_every_byte_of_the_real_split_once(data_dir, tmp_path, split):
    task = make_task(data_dir / "enwik8", tmp_path, eval_len=100, eval_batch_size=8)
    a, b = task.corpus.bounds[split]
    batches = list(task.eval_batches(split))
    targets = torch.cat([t.flatten() for _, t in batches])
    assert targets.numel() == 53_553 and targets.dtype == torch.int64
    assert torch.equal(targets, task.corpus.data[a:b].long())
    inputs = torch.cat([x.flatten() for x, _ in batches])
    assert torch.equal(
        inputs, task.corpus.data[a - 1 : b - 1].long()
    )  # each target's previous byte
    assert [tuple(x.shape) for x, _ in batches[-2:]] == [
        (7, 100),
        (1, 53),
    ]  # 535 = 66 x 8 + 7 windows, + 53
    assert len(batches) == 68


def test_eval_bytes_caps_and_labels(data_dir, tmp_path):
    task = make_task(data_dir / "enwik8", tmp_path, eval_bytes=1000)
    assert task.data_info["eval_bytes"] == {"valid": 1000, "test": 1000}
    assert "first 1,000 bytes" in task.data_info["subset"] and "prefix" in task.data_info["subset"]
    a = task.corpus.bounds["valid"][0]
    targets = torch.cat([t.flatten() for _, t in task.eval_batches("valid")])
    assert torch.equal(targets, task.corpus.data[a : a + 1000].long())


def test_train_batches_pure_in_epoch_seed_and_inside_train(data_dir, tmp_path):
    task = make_task(data_dir / "enwik8", tmp_path, seq_len=32, batch_size=4)
    ep = task.train_batches(0, 1)
    again = task.train_batches(0, 1)
    assert len(ep) == len(again) and all(
        torch.equal(ep[i][0], again[i][0]) for i in (0, 7, len(ep) - 1)
    )
    assert not torch.equal(task.train_batches(1, 1)[0][0], ep[0][0])
    assert not torch.equal(task.train_batches(0, 2)[0][0], ep[0][0])
    x, y = ep[0]
    assert x.shape == (4, 32) and torch.equal(
        x[:, 1:], y[:, :-1]
    )  # targets = inputs shifted by one
    end = task.corpus.bounds["train"][1]
    starts = torch.cat(list(ep.index_batches))
    assert int(starts.max()) + 32 < end  # no target from valid
    assert len(set(starts.tolist())) == len(starts) and len(starts) >= end // 32 - 1  # one pass


# --- model and metric --------------------------------------------------------------------------
def test_lm_is_causal_and_every_norm_comes_from_the_factory():
    torch.manual_seed(0)
    for before in (False, True):
        cfg = TransformerConfig(
            d_model=16, heads=2, ffn_dim=32, layers=3, dropout=0.0, normalize_before=before
        )
        model = TransformerLM(256, cfg, norm_factory("layernorm_simple"), max_positions=32).eval()
        norms = [m for m in model.modules() if isinstance(m, Norm)]
        assert len(norms) == 2 * 3 + before
        assert not any(isinstance(m, torch.nn.LayerNorm) for m in model.modules())
        x = torch.randint(0, 256, (2, 20))
        y = x.clone()
        y[:, 12] = (y[:, 12] + 1) % 256
        out_x, out_y = model(x), model(y)
        assert out_x.shape == (2, 20, 256)
        assert torch.equal(out_x[:, :12], out_y[:, :12]) and not torch.allclose(
            out_x[:, 12:], out_y[:, 12:]
        )
    assert model.embed.weight.shape == (257, 16)  # the tied softmax uses rows 0..255 only


class Uniform(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p = torch.nn.Parameter(torch.zeros(1))

    def forward(self, tokens):
        return torch.zeros(*tokens.shape, 256) + 0 * self.p


def test_bpc_of_the_uniform_model_is_eight(data_dir, tmp_path):
    task = make_task(data_dir / "enwik8", tmp_path, eval_len=128)
    out = task.evaluate(Uniform(), "test")
    assert out["loss"] == pytest.approx(math.log(256), abs=1e-6)
    assert out["bpc"] == pytest.approx(8.0, abs=1e-6)


# --- runs --------------------------------------------------------------------------------------
@pytest.mark.parametrize("norm", sorted(NORMS))
def test_smoke_run_per_norm(data_dir, tmp_path, norm):
    summary, run_dir = run_job(
        ["task=enwik8", f"norm={norm}", "scale=smoke", "threads=1"], tmp_path, data_dir
    )
    assert summary["status"] == "completed", summary["error"]
    assert summary["metric"] == "bpc" and summary["higher_is_better"] is False
    assert "prefix" in summary["data"]["subset"] and summary["data"]["sizes"]["valid"] == 53_553
    assert math.isfinite(summary["test"]["bpc"])
    assert summary["test"]["bpc"] == pytest.approx(summary["test"]["loss"] / math.log(2))
    rows = [json.loads(line) for line in (run_dir / "curves.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r["split"] == "valid"] == [3, 6]
    assert [r["split"] for r in rows].count("test") == 1
    assert all("bpc" in r for r in rows if r["split"] != "train")


def test_paper_scale_is_the_transformer_xl_base_recipe(tmp_path):
    from helpers import compose_cfg
    from normlab.config import load_job

    job = load_job(compose_cfg(["task=enwik8", "scale=paper", "norm=adanorm"], tmp_path)).cfg
    m, t, d = job.task.model, job.task.train, job.task.data
    assert (m.layers, m.d_model, m.heads, m.ffn_dim, m.dropout, m.attn_dropout) == (
        12,
        512,
        8,
        2048,
        0.1,
        0.0,
    )
    assert m.normalize_before is False  # Transformer-XL default: post-norm
    assert (t.lr, list(t.betas), t.schedule, t.warmup_steps, t.clip_norm, t.max_steps) == (
        2.5e-4,
        [0.9, 0.999],
        "cosine",
        0,
        0.25,
        400_000,
    )
    assert (d.seq_len, d.batch_size, d.eval_bytes) == (512, 22, 0)
    task = Enwik8Task(job.task, tmp_path, tmp_path)
    model = task.build_model(norm_factory(job.norm.name, **job.norm.options))
    body = sum(p.numel() for p in model.decoder.parameters())
    assert body == 12 * (
        4 * (512 * 512 + 512) + 2 * 512 * 2048 + 2048 + 512
    )  # AdaNorm has no parameters
