"""Training-set caps (the overfitting regime of docs/calibration.md): each task trains on a real subset of its
train split when asked, counts it in data_info (sizes and the subset sentence every table shows),
and rejects a bad cap with an error naming the key. Counts are read from the real files."""

from __future__ import annotations

import pytest
import torch

from helpers import TEST_CACHE, compose_cfg
from normlab.errors import ConfigError
from normlab.tasks import get_task_class


def setup_task(name: str, overrides: list[str], tmp_path, data_dir):
    cfg = compose_cfg([f"task={name}", "scale=mini", *overrides], tmp_path, data_dir)
    task = get_task_class(name)(cfg.task, data_dir / name, TEST_CACHE)
    task.run_seed = cfg.seed
    task.setup()
    return task


def sst2_train_rows(data_dir) -> int:
    lines = (data_dir / "sst2" / "train.tsv").read_text(encoding="utf-8").split("\n")[1:]
    return sum(1 for ln in lines if ln.strip())


def test_sst2_train_limit_is_a_seeded_subset_named_in_data_info(data_dir, tmp_path):
    available = sst2_train_rows(data_dir) - 872  # the validation hold-out leaves the rest
    base = ["task.data.reader.valid_size=872"]  # the task file's hold-out (mini's is 2,000)
    full = setup_task("sst2", [*base, "task.data.train_limit=0"], tmp_path, data_dir)
    assert (
        full.data_info["sizes"]["train"] == available and "SUBSET" not in full.data_info["subset"]
    )
    task = setup_task("sst2", [*base, "task.data.train_limit=3000"], tmp_path, data_dir)
    info = task.data_info
    assert info["sizes"]["train"] == 3000 and info["train_available"] == available
    assert (
        info["sizes"]["valid"] == 872 and info["sizes"]["test"] == full.data_info["sizes"]["test"]
    )
    assert (
        "task.data.train_limit=3000" in info["subset"]
        and f"{available:,} train examples" in info["subset"]
    )
    assert torch.equal(task.splits["valid"][1], full.splits["valid"][1])  # valid/test untouched
    # both classes present, in about the full split's proportion (a random draw, not a head)
    frac, full_frac = task.splits["train"][1].float().mean(), full.splits["train"][1].float().mean()
    assert abs(frac - full_frac) < 0.03
    # the vocabulary comes from the subset only: smaller than the full split's
    assert len(task.vocab) < len(full.vocab)
    # a fixed train_limit_seed draws its own subset, the same for every run seed
    fixed = [*base, "task.data.train_limit=3000", "task.data.train_limit_seed=7"]
    seven, seven_other_run = (
        setup_task("sst2", [*fixed, f"seed={s}"], tmp_path, data_dir) for s in (2, 3)
    )
    assert not torch.equal(seven.splits["train"][0].flat, task.splits["train"][0].flat)
    assert torch.equal(seven.splits["train"][0].flat, seven_other_run.splits["train"][0].flat)
    assert "train_limit_seed=7" in seven.data_info["subset"]


@pytest.mark.parametrize("name", ["sst2", "mnist"])
def test_each_run_seed_trains_on_its_own_subset_and_the_same_seed_on_the_same(
    name, data_dir, tmp_path
):
    """The default train_limit_seed=run: the seed spread of a study includes the subset's variance."""
    cap = ["task.data.train_limit=3000"]
    two, three, two_again = (
        setup_task(name, [*cap, f"seed={s}"], tmp_path, data_dir) for s in (2, 3, 2)
    )

    def train(t):
        x = t.splits["train"][0]
        return x.flat if hasattr(x, "flat") else x

    assert not torch.equal(train(two), train(three))
    assert torch.equal(train(two), train(two_again))
    assert torch.equal(two.splits["train"][1], two_again.splits["train"][1])
    # the data-use record names the subset each run drew
    assert (
        "train_limit_seed=2" in two.data_info["subset"]
        and "train_limit_seed=3" in three.data_info["subset"]
    )


def test_mini_presets_label_their_subsets(data_dir, tmp_path):
    # what the mini grid trains on (docs/calibration.md), stated in the data_info every table prints
    sst2 = setup_task("sst2", [], tmp_path, data_dir).data_info
    assert (
        sst2["sizes"]["train"] == 4000
        and sst2["sizes"]["valid"] == 2000
        and "SUBSET" in sst2["subset"]
    )
    assert sst2["train_available"] == sst2_train_rows(data_dir) - 2000
    # enwik8 and IWSLT14 train on every byte and pair the shared copy has, and say no subset
    enwik8 = setup_task("enwik8", [], tmp_path, data_dir).data_info
    assert enwik8["sizes"]["train"] == 963_945 and "SUBSET" not in enwik8["subset"]
    iwslt14 = setup_task("iwslt14_de_en", [], tmp_path, data_dir).data_info
    assert iwslt14["train_pairs_read"] == 7283 and "first lines only" not in iwslt14["subset"]


@pytest.mark.parametrize(
    "value, match",
    [(-5, ">= 0"), (10**7, "more than the .* sst2 train examples"), ("many", "must be an integer")],
)
def test_bad_classification_cap_is_a_config_error(value, match, data_dir, tmp_path):
    with pytest.raises(ConfigError, match=f"task.data.train_limit.*{match}"):
        setup_task("sst2", [f"task.data.train_limit={value}"], tmp_path, data_dir)


def test_mnist_train_limit(data_dir, tmp_path):
    task = setup_task("mnist", ["task.data.train_limit=4000"], tmp_path, data_dir)
    info = task.data_info
    assert (
        info["sizes"] == {"train": 4000, "valid": 5000, "test": 10000}
        and info["train_available"] == 55_000
    )
    assert "task.data.train_limit=4000" in info["subset"] and "55,000" in info["subset"]
    counts = torch.bincount(task.splits["train"][1], minlength=10)
    assert counts.min() > 300  # every digit, in about its share
    assert len(task.train_batches(0, 1)) == -(-4000 // int(task.cfg.data.batch_size))
    with pytest.raises(ConfigError, match="task.data.train_limit=60,000 is more than the 55,000"):
        setup_task("mnist", ["task.data.train_limit=60000"], tmp_path, data_dir)


def test_enwik8_train_bytes_caps_what_training_reads(data_dir, tmp_path):
    task = setup_task("enwik8", ["task.data.train_bytes=20000"], tmp_path, data_dir)
    info = task.data_info
    available = task.corpus.bounds["train"][1] - task.corpus.bounds["train"][0]
    assert info["sizes"]["train"] == 20000 and info["train_available"] == available == 963_945
    assert "first 20,000 of the split's 963,945 train bytes" in info["subset"]
    L = int(task.cfg.data.seq_len)
    for epoch in range(3):
        batches = task.train_batches(epoch, 1)
        targets = sum(b[1].numel() for b in batches)
        assert 20000 - 2 * L <= targets <= 20000  # one pass over the capped bytes per epoch
    with pytest.raises(ConfigError, match="task.data.train_bytes=100 is too small"):
        setup_task("enwik8", ["task.data.train_bytes=100"], tmp_path, data_dir)


def test_iwslt14_train_pair_cap(data_dir, tmp_path):
    task = setup_task("iwslt14_de_en", ["task.data.limit.train=2000"], tmp_path, data_dir)
    info = task.data_info
    assert (
        info["train_pairs_read"] == 2000
        and info["sizes"]["train"] == 2000 - info["train_pairs_over_max_len"]
    )
    assert "first lines only: train 2,000" in info["subset"]
    valid_lines = (
        (data_dir / "iwslt14_de_en" / "tmp" / "valid.de").read_text(encoding="utf-8").count("\n")
    )
    with pytest.raises(
        ConfigError, match=f"task.data.limit.train=9,999 is more than the {valid_lines:,}"
    ):
        setup_task("iwslt14_de_en", ["task.data.limit.train=9999"], tmp_path, data_dir)
    with pytest.raises(ConfigError, match="task.data.limit.train must be >= 0"):
        setup_task("iwslt14_de_en", ["task.data.limit.train=-1"], tmp_path, data_dir)
