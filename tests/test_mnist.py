"""MNIST: the IDX reader on the real files (counts, split, md5-checked content), its errors on bad
files (wrong magic, truncated data, truncated .gz), the channels-first CNN, and a smoke run per norm."""

from __future__ import annotations

import gzip
import json
import math
import struct

import pytest
import torch
from conftest import MISSING, data_root

from helpers import run_job
from normlab.data import mnist
from normlab.errors import DataError
from normlab.models.cnn import MNISTCNN
from normlab.norms import NORMS, Norm, norm_factory
from normlab.tasks.mnist import MEAN, STD

TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]  # official t10k label counts
TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]


@pytest.fixture(scope="module")
def data_dir_module():
    """conftest's data_dir, once per module (the real files are read once here)."""
    if not data_root().is_dir():
        pytest.skip(f"real data not found at {data_root()}: {MISSING}")
    return data_root()


@pytest.fixture(scope="module")
def real(data_dir_module):
    return mnist.load(data_dir_module / "mnist")


def idx(magic: int, dims: tuple, payload: bytes) -> bytes:
    return struct.pack(f">i{len(dims)}I", magic, *dims) + payload


# --- reader on the real files --------------------------------------------------------------------
def test_real_counts_split_and_statistics(real, data_dir_module):
    assert {s: tuple(x.shape) for s, (x, _) in real.items()} == {
        "train": (55_000, 28, 28),
        "valid": (5_000, 28, 28),
        "test": (10_000, 28, 28),
    }
    assert all(x.dtype == torch.uint8 and y.dtype == torch.int64 for x, y in real.values())
    assert real["test"][1].bincount().tolist() == TEST_COUNTS
    train_labels = torch.cat([real["train"][1], real["valid"][1]])
    assert train_labels.bincount().tolist() == TRAIN_COUNTS and sum(TRAIN_COUNTS) == 60_000
    # validation = the LAST 5,000 training images, byte for byte from the file
    raw = gzip.decompress((data_dir_module / "mnist" / "train-images-idx3-ubyte.gz").read_bytes())
    assert raw[:16] == struct.pack(">4i", 2051, 60_000, 28, 28)
    assert bytes(real["valid"][0].numpy()) == raw[16 + 55_000 * 784 :]
    pixels = torch.cat([real["train"][0], real["valid"][0]]).double() / 255
    assert (
        (round(pixels.mean().item(), 4), round(pixels.std().item(), 4))
        == (MEAN, 0.3081)
        == (MEAN, STD)
    )


def test_raw_and_gz_read_the_same(tmp_path, data_dir_module):
    src = data_dir_module / "mnist" / "t10k-labels-idx1-ubyte.gz"
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(gzip.decompress(src.read_bytes()))
    raw = mnist.read_idx(tmp_path / "t10k-labels-idx1-ubyte", mnist.LABELS_MAGIC)
    assert torch.equal(raw, mnist.read_idx(src, mnist.LABELS_MAGIC))
    assert raw.bincount().tolist() == TEST_COUNTS


# --- reader errors -------------------------------------------------------------------------------
def test_wrong_magic_is_rejected_naming_the_file(tmp_path, data_dir_module):
    labels = data_dir_module / "mnist" / "t10k-labels-idx1-ubyte.gz"
    with pytest.raises(
        DataError, match=r"t10k-labels-idx1-ubyte\.gz: magic number 2049, expected 2051"
    ):
        mnist.read_idx(labels, mnist.IMAGES_MAGIC)  # a labels file where images belong
    bad = tmp_path / "x-images-idx3-ubyte"
    bad.write_bytes(b"<html>404 Not Found</html>")
    with pytest.raises(
        DataError, match=r"x-images-idx3-ubyte: magic number 1013478509, expected 2051"
    ):
        mnist.read_idx(bad, mnist.IMAGES_MAGIC)


def test_truncated_data_and_trailing_bytes_are_rejected(tmp_path):
    p = tmp_path / "t.idx"
    p.write_bytes(idx(2051, (3, 28, 28), bytes(3 * 784 - 1)))
    with pytest.raises(
        DataError, match=r"t\.idx: truncated: 2,351 data bytes, header \(3, 28, 28\) needs 2,352"
    ):
        mnist.read_idx(p, mnist.IMAGES_MAGIC)
    p.write_bytes(idx(2049, (5,), bytes(6)))
    with pytest.raises(DataError, match=r"t\.idx: has trailing bytes"):
        mnist.read_idx(p, mnist.LABELS_MAGIC)
    p.write_bytes(struct.pack(">i", 2051) + b"\0\0\0\3")
    with pytest.raises(DataError, match=r"t\.idx: truncated IDX header"):
        mnist.read_idx(p, mnist.IMAGES_MAGIC)


def test_truncated_gz_is_rejected_naming_the_file(tmp_path, data_dir_module):
    src = (data_dir_module / "mnist" / "t10k-labels-idx1-ubyte.gz").read_bytes()
    p = tmp_path / "t10k-labels-idx1-ubyte.gz"
    p.write_bytes(src[: len(src) // 2])
    with pytest.raises(
        DataError, match=r"t10k-labels-idx1-ubyte\.gz: cannot decompress .*truncated or corrupt"
    ):
        mnist.read_idx(p, mnist.LABELS_MAGIC)


def test_wrong_counts_and_missing_files(tmp_path):
    (tmp_path / "train-images-idx3-ubyte").write_bytes(idx(2051, (2, 28, 28), bytes(2 * 784)))
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(idx(2049, (2,), bytes([1, 2])))
    with pytest.raises(DataError, match=r"t10k-images-idx3-ubyte\(\.gz\)"):
        mnist.load(tmp_path)  # the test files are missing
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(idx(2051, (2, 28, 28), bytes(2 * 784)))
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(idx(2049, (2,), bytes([1, 2])))
    with pytest.raises(
        DataError, match=r"train-images-idx3-ubyte: shape \(2, 28, 28\), expected \(60000, 28, 28\)"
    ):
        mnist.load(tmp_path)
    with pytest.raises(DataError, match=r"MNIST folder .*nowhere does not exist"):
        mnist.load(tmp_path / "nowhere")


# --- model ---------------------------------------------------------------------------------------
def test_cnn_norms_are_channels_first_and_normalize_over_channels():
    torch.manual_seed(0)
    model = MNISTCNN(norm_factory("layernorm_simple"), channels=(6, 10), kernel=3)
    norms = [m for m in model.modules() if isinstance(m, Norm)]
    assert [(m.dim, m.channels_first) for m in norms] == [(6, True), (10, True)]
    seen = {}
    model.norm2.register_forward_hook(lambda mod, i, o: seen.setdefault("out", o))
    logits = model(torch.randn(4, 1, 28, 28))
    out = seen["out"]  # (B, C, 14, 14)
    assert logits.shape == (4, 10) and out.shape == (4, 10, 14, 14)
    assert out.mean(1).abs().max() < 1e-5  # zero mean over channels at every pixel
    assert torch.allclose(out.var(1, unbiased=False), torch.ones(4, 14, 14), atol=1e-3)


@pytest.mark.parametrize("name", sorted(NORMS))
def test_every_norm_builds_in_the_cnn(name):
    model = MNISTCNN(norm_factory(name), channels=(4, 8), kernel=3)
    assert sum(isinstance(m, Norm) for m in model.modules()) == 2
    assert model(torch.randn(2, 1, 28, 28)).shape == (2, 10)


# --- runs ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("norm", sorted(NORMS))
def test_smoke_run_per_norm(data_dir, tmp_path, norm):
    summary, run_dir = run_job(
        ["task=mnist", f"norm={norm}", "scale=smoke", "threads=1"], tmp_path, data_dir
    )
    assert summary["status"] == "completed", summary["error"]
    assert summary["metric"] == "acc" and summary["higher_is_better"] is True
    assert summary["data"]["sizes"] == {
        "train": 55_000,
        "valid": 500,
        "test": 500,
    }  # smoke: eval_size
    assert (
        "last 5,000" in summary["data"]["subset"]
        and "first 500 images only" in summary["data"]["subset"]
    )
    assert 0.0 <= summary["test"]["acc"] <= 100.0 and math.isfinite(summary["test"]["loss"])
    rows = [json.loads(line) for line in (run_dir / "curves.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r["split"] == "valid"] == [3, 6]
    assert [r["split"] for r in rows].count("test") == 1


def test_task_uses_all_of_valid_and_test_by_default(data_dir, tmp_path):
    from omegaconf import OmegaConf

    from helpers import TEST_CACHE
    from normlab.tasks.mnist import MNISTTask

    cfg = OmegaConf.create(
        {
            "data": {"valid_size": 5000, "batch_size": 64, "eval_batch_size": 1000, "eval_size": 0},
            "model": {"channels": [4, 8], "kernel": 3, "dropout": 0.0},
        }
    )
    task = MNISTTask(cfg, data_dir / "mnist", TEST_CACHE)
    task.setup()
    assert task.data_info["sizes"] == {"train": 55_000, "valid": 5_000, "test": 10_000}
    assert "only" not in task.data_info["subset"]
    x, y = task.train_batches(0, 1)[0]
    assert x.shape == (64, 1, 28, 28) and x.dtype == torch.float32 and y.shape == (64,)
    assert len(task.train_batches(0, 1)) == math.ceil(55_000 / 64)
