"""The trivial baselines (normlab.tasks.trivial's math, each task's trivial_baselines, cached by
normlab.make_report) against hand computations and against counts read straight from the real data
files (independently of the task pipelines)."""

import csv
import math
from collections import Counter

import pytest
import torch
import yaml
from test_report import make_run

from normlab.campaigns.xu2019.protocol import protocol
from normlab.make_report import baselines, report
from normlab.report import find_runs
from normlab.report.baselines import level
from normlab.tasks.trivial import bits_per_byte, majority_accuracy, right_neighbour_uas


def test_bits_per_byte_by_hand():
    # train = "abab" -> unigram with add-one: p(a) = p(b) = 3/260; bigram rows a->b 2+1 of 1+256+2.
    data = torch.tensor([97, 98, 97, 98, 97, 97, 97, 98, 97, 98], dtype=torch.uint8)
    res = bits_per_byte(data, {"train": (0, 4), "test": (4, 6), "valid": (6, 10)})
    assert res["unigram"]["test"] == pytest.approx(-math.log2(3 / 260))
    # test bytes: 97 after 98 (count 1 of 1 transitions from b: (1+1)/(1+256)), 97 after 97 ((0+1)/(2+256))
    expect = -(math.log2(2 / 257) + math.log2(1 / 258)) / 2
    assert res["bigram"]["test"] == pytest.approx(expect)
    # train from byte 0: the bigram scores bytes 1..3 (a->b, b->a, a->b)
    assert res["bigram"]["train"] == pytest.approx(
        -(2 * math.log2(3 / 258) + math.log2(2 / 257)) / 3
    )


def test_smoothed_bigram_minimizes_the_valid_bits_by_hand():
    # train "abab": counts a->b 2, b->a 1. valid bytes 6..9 = "abab" after byte 5 = "a": pairs a->a, a->b,
    # b->a, a->b. With add-alpha: p(b|a) = (2 + α) / (2 + 256α), p(a|a) = α / (2 + 256α), p(a|b) = (1 + α) / (1 + 256α).
    data = torch.tensor([97, 98, 97, 98, 97, 97, 97, 98, 97, 98], dtype=torch.uint8)
    res = bits_per_byte(data, {"train": (0, 4), "test": (4, 6), "valid": (6, 10)})

    def valid_bits(al):
        pab, paa, pba = (2 + al) / (2 + 256 * al), al / (2 + 256 * al), (1 + al) / (1 + 256 * al)
        return -(math.log2(paa) + 2 * math.log2(pab) + math.log2(pba)) / 4

    alpha = res["bigram_valid"]["alpha"]
    assert res["bigram_valid"]["valid"] == pytest.approx(valid_bits(alpha))
    grid = [10 ** (k / 20) for k in range(-80, 21)]  # 1e-4 .. 10
    assert valid_bits(alpha) <= min(valid_bits(a) for a in grid) + 1e-6
    assert res["bigram_valid"]["valid"] < res["bigram"]["valid"]  # add-one is the α = 1 point


def test_majority_and_right_neighbour_by_hand():
    major, acc = majority_accuracy(
        {"train": torch.tensor([1, 1, 0]), "test": torch.tensor([0, 1, 0, 0])}
    )
    assert major == 1 and acc == {"train": pytest.approx(200 / 3), "test": 25.0}
    # two sentences: heads (2, 0) and (2, 0, 2); right neighbour predicts (2, 0) and (2, 3, 0)
    heads = torch.tensor([2, 0, 2, 0, 2], dtype=torch.int32)
    offsets = torch.tensor([0, 2, 5])
    punct = torch.tensor([False, False, False, False, True])
    assert right_neighbour_uas(heads, offsets, punct) == pytest.approx(
        100 * 3 / 4
    )  # last token is punctuation


def test_level_words():
    rows = {"unigram (x)": {"test": 5.570}, "bigram (x)": {"test": 4.098}}
    assert level(5.574, rows, hib=False, tol=0.05) == "at the unigram level"
    assert level(5.078, rows, hib=False, tol=0.05) == "between the unigram and bigram levels"
    assert level(3.0, rows, hib=False, tol=0.05) == "better than the bigram level"
    assert level(6.0, rows, hib=False, tol=0.05) == "worse than the unigram level"
    assert (
        level(60.0, {"majority class": {"test": 50.0}}, hib=True, tol=1.0)
        == "better than the majority class level"
    )


def _cfg(task, tmp_path, *overrides):
    from omegaconf import OmegaConf

    from helpers import compose_cfg

    return OmegaConf.to_container(
        compose_cfg([f"task={task}", "scale=mini", *overrides], tmp_path).task, resolve=True
    )


def test_enwik8_baselines_against_the_file(data_dir, tmp_path):
    raw = (data_dir / "enwik8" / "enwik8_small").read_bytes()
    n = len(raw)
    a, b = n * 90 // 100, n * 95 // 100
    counts = Counter(raw[:a])
    test = raw[b:]

    def bpc(ys):
        return -sum(math.log2((counts[y] + 1) / (a + 256)) for y in ys) / len(ys)

    full = _cfg(
        "enwik8", tmp_path, "task.data.train_bytes=0"
    )  # all train bytes (no train-bytes cap)
    res = baselines("enwik8", full, data_dir, tmp_path / "cache")
    uni = res["rows"]["unigram (add-one, fitted on train)"]
    assert (
        res["sizes"]
        == {"train": a, "valid": b - a, "test": n - b}
        == {"train": 963_945, "valid": 53_553, "test": 53_553}
    )
    assert uni["test"] == pytest.approx(bpc(test), abs=1e-9) and uni["valid"] == pytest.approx(
        bpc(raw[a:b])
    )
    assert round(uni["test"], 3) == 5.570  # the level AdaNorm and DyT sat at in those runs
    big = res["rows"]["bigram (add-one, fitted on train)"]
    assert big["test"] < uni["test"]
    # cached: a second call reads the JSON (same numbers) without touching the pipeline
    assert baselines("enwik8", full, data_dir, tmp_path / "cache") == res
    assert len(list((tmp_path / "cache").glob("baselines-enwik8-*.json"))) == 1
    # with a train-bytes cap the baselines are fitted on the bytes the models see
    capped = _cfg("enwik8", tmp_path, "task.data.train_bytes=40000")
    cap = capped["data"]["train_bytes"]
    counts = Counter(raw[:cap])
    res = baselines("enwik8", capped, data_dir, tmp_path / "cache")
    assert 0 < cap < a and res["sizes"]["train"] == cap
    assert res["rows"]["unigram (add-one, fitted on train)"]["test"] == pytest.approx(
        -sum(math.log2((counts[y] + 1) / (cap + 256)) for y in test) / len(test), abs=1e-9
    )


def test_sst2_majority_against_the_file(data_dir, tmp_path):
    with open(data_dir / "sst2" / "dev.tsv", newline="") as f:
        labels = [int(r["label"]) for r in csv.DictReader(f, delimiter="\t")]
    res = baselines("sst2", _cfg("sst2", tmp_path), data_dir, tmp_path / "cache")
    ((name, acc),) = res["rows"].items()
    assert name == "majority class (train's: 1)"
    assert acc["test"] == pytest.approx(100 * labels.count(1) / len(labels)) and len(labels) == 872


def test_report_says_when_data_is_absent(tmp_path, monkeypatch):
    monkeypatch.delenv(
        "NORMLAB_DATA", raising=False
    )  # so the runs' recorded paths.data_dir is used
    for seed in (1, 2):
        d = make_run(tmp_path / "runs", "rt", "layernorm", seed, 70.0 + seed)
        cfg = yaml.safe_load((d / "config.yaml").read_text())
        cfg["paths"]["data_dir"] = str(tmp_path / "nodata")
        (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    report(
        find_runs([tmp_path / "runs"]), tmp_path / "out", figures=False, cache_dir=tmp_path / "c"
    )
    text = (tmp_path / "out" / "baselines.md").read_text()
    assert f"| rt | no data folder {tmp_path / 'nodata' / 'rt'} |" in text


def test_cached_baselines_print_like_fresh_ones(tmp_path, monkeypatch):
    # A JSON round trip must not reorder the rows (the committed tables are compared byte for byte).
    import normlab.make_report as B

    fake = {
        "metric": "bpc",
        "rows": {"unigram (x)": {"test": 5.0}, "bigram (x)": {"test": 4.0}},
        "sizes": {"train": 1, "valid": 1, "test": 1},
    }
    monkeypatch.setattr(B, "_compute", lambda *a: fake)
    (tmp_path / "data" / "enwik8").mkdir(parents=True)
    first = B.baselines("enwik8", {"data": {}}, tmp_path / "data", tmp_path / "c")
    again = B.baselines(
        "enwik8", {"data": {}, "model": {"layers": 3}}, tmp_path / "data", tmp_path / "c"
    )
    assert list(first["rows"]) == list(again["rows"]) == ["unigram (x)", "bigram (x)"]
    assert (
        len(list((tmp_path / "c").glob("*.json"))) == 1
    )  # the model config is not part of the key


def test_a_task_not_installed_here_is_said_and_not_cached(tmp_path):
    # runs of a plugin's task reported where the plugin is absent: the row says so, and nothing is
    # cached, so installing the plugin later computes the baseline
    (tmp_path / "data" / "plugintask").mkdir(parents=True)
    res = baselines("plugintask", {"data": {}}, tmp_path / "data", tmp_path / "c")
    assert res == {"missing": "task plugintask is not installed here (no registered task)"}
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").glob("*.json"))


def test_translation_copy_source_bleu_against_the_files(data_dir, tmp_path):
    import sacrebleu

    folder = data_dir / "iwslt14_de_en" / "tmp"
    cfg = _cfg("iwslt14_de_en", tmp_path, "task.data.limit.train=0")  # BPE learned on every pair
    res = baselines("iwslt14_de_en", cfg, data_dir, tmp_path / "cache")
    ((name, copy),) = res["rows"].items()
    assert name.startswith("copy-source") and res["metric"] == "bleu"
    bleu = sacrebleu.metrics.BLEU(tokenize="none", force=True)
    for split, stem in (("valid", "TED.dev2010"), ("test", "TED.tst2010")):
        src, ref = (
            (folder / f"IWSLT14.{stem}.de-en.{lang}").read_text().splitlines()
            for lang in "de en".split()
        )
        assert res["sizes"][split] == len(src)
        # the source through the model's subwords is the source itself where no piece is unknown
        assert copy[split] == pytest.approx(bleu.corpus_score(src, [ref]).score, abs=0.01)
    assert round(copy["test"], 2) == 1.05  # the level a model that only copies reaches
    assert (
        level(1.2, res["rows"], True, tol=protocol().trained_by("bleu"))
        == "at the copy-source level"
    )
    assert level(3.2, res["rows"], True) == "better than the copy-source level"


def test_a_level_sentence_names_a_lone_norm_and_gives_a_range_only_for_several():
    from types import SimpleNamespace

    from normlab.report.baselines import level_sentences

    def grid(means):
        return SimpleNamespace(
            variants=lambda: list(means),
            cell=lambda c, v: SimpleNamespace(mean=means[v]),
            label=lambda v: v,
            metric=lambda c: ("bpc", False),
            protocol=protocol(),
        )

    base = {"enwik8": {"metric": "bpc", "rows": {"unigram (train)": {"test": 5.5}}}}
    (one,) = level_sentences(grid({"LayerNorm": 2.6}), base)
    assert one.endswith("): better than the unigram level: LayerNorm (2.600).")
    (two,) = level_sentences(grid({"LayerNorm": 2.6, "RMSNorm": 2.7}), base)
    assert two.endswith("): every norm (2) is better than the unigram level (2.600–2.700).")
