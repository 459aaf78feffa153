"""The data-preparation scripts, run from a local copy (downloads cannot be tested here)."""

from __future__ import annotations

import re
import shutil
import tarfile

import pytest
from omegaconf import OmegaConf

from normlab.data import prepare_iwslt14
from normlab.data.bpe import remove_bpe
from normlab.data.parallel import read_lines
from normlab.data.translation import load_corpus
from normlab.datacli import main as data_main

PARTS = [
    "IWSLT14.TED.dev2010",
    "IWSLT14.TEDX.dev2012",
    "IWSLT14.TED.tst2010",
    "IWSLT14.TED.tst2011",
    "IWSLT14.TED.tst2012",
]


def fake_release(root):
    """A miniature de-en.tgz with the real files' structure: tag lines in train.tags, <seg> xml."""
    d = root / "de-en"
    d.mkdir(parents=True)
    de, en = (
        [
            "<url>http://www.ted.com/talks/x.html</url>",
            "<keywords>talks</keywords>",
            "<talkid>1</talkid>",
            "<title>Mein Titel</title>",
        ],
        [
            "<url>http://www.ted.com/talks/x.html</url>",
            "<keywords>talks</keywords>",
            "<talkid>1</talkid>",
            "<title>My Title</title>",
        ],
    )
    for i in range(60):
        de.append(f"Das ist Satz Nummer {i}, sagte sie.")
        en.append(f"That's sentence number {i}, she said.")
    de += ["Kurz.", "", " ".join(["Wort"] * 180)]  # ratio 1.5, empty side, > 175 words
    en += [
        "This one is much too long for the ratio test here.",
        "Empty German side.",
        " ".join(["word"] * 180),
    ]
    (d / "train.tags.de-en.de").write_text("\n".join(de) + "\n")
    (d / "train.tags.de-en.en").write_text("\n".join(en) + "\n")
    for k, part in enumerate(PARTS):
        for lang, text in (
            ("de", "Das ist Teil {k} – Zeile {j}."),
            ("en", "It\u2019s part {k}, line {j}."),
        ):
            segs = "".join(
                f'<seg id="{j}"> {text.format(k=k, j=j)} </seg>\n' for j in range(1, k + 3)
            )
            (d / f"{part}.de-en.{lang}.xml").write_text(
                f'<?xml version="1.0" encoding="UTF-8"?>\n<mteval>\n<doc docid="{k}">\n{segs}</doc>\n</mteval>\n'
            )
    with tarfile.open(root / "de-en.tgz", "w:gz") as tar:
        tar.add(d, arcname="de-en")
    shutil.rmtree(d)
    return root / "de-en.tgz"


def test_prepare_iwslt14_from_archive(tmp_path):
    pytest.importorskip("sacremoses")
    out = tmp_path / "iwslt14_de_en"
    prepare_iwslt14.main(
        [
            "--out",
            str(out),
            "--archive",
            str(fake_release(tmp_path)),
            "--merges",
            "40",
            "--workers",
            "1",
        ]
    )
    tmp = out / "tmp"
    # 61 pairs survive cleaning (title + 60); the ratio, empty and 180-word pairs are dropped.
    corpus = [f"das ist satz nummer {i} , sagte sie ." for i in range(60)]
    valid, train = read_lines(tmp / "valid.de"), read_lines(tmp / "train.de")
    assert valid == [(["mein titel"] + corpus)[i - 1] for i in (23, 46)]  # every 23rd line
    assert len(train) == 61 - 2 and train[0] == "mein titel"
    assert read_lines(tmp / "train.en")[1] == "that &apos;s sentence number 0 , she said ."
    test_en = read_lines(tmp / "test.en")
    assert (
        len(test_en) == sum(k + 2 for k in range(5))
        and test_en[0] == "it &apos;s part 0 , line 1 ."
    )
    assert read_lines(tmp / "IWSLT14.TED.tst2011.de-en.de")[0] == "das ist teil 3 – zeile 1 ."
    codes = read_lines(out / "code")
    assert codes[0] == "#version: 0.2" and len(codes) == 41
    for split in ("train", "valid", "test"):
        for lang in ("de", "en"):
            bpe = read_lines(out / f"{split}.{lang}")
            assert [remove_bpe(x) for x in bpe] == read_lines(tmp / f"{split}.{lang}")
    # The task reads this layout with fairseq's own BPE'd files (bpe.source=auto, standard splits).
    d = OmegaConf.create(
        {
            "layout": "fairseq",
            "src": "de",
            "tgt": "en",
            "splits": {"train": "train", "valid": "valid", "test": "test"},
            "vocab": "bpe",
            "bpe": {"source": "auto", "merges": 40},
            "limit": {},
        }
    )
    corpus = load_corpus(out, d, "iwslt14_de_en", tmp_path / "cache", "HOW")
    assert (
        corpus.info["segmentation"].startswith("fairseq's BPE'd files")
        and corpus.info["subset"] is None
    )
    assert corpus.info["sizes"] == {"train": 59, "valid": 2, "test": 20}
    assert corpus.refs["test"] == read_lines(tmp / "test.en")


def test_prepare_iwslt15_from_copy(data_dir, tmp_path, capsys):
    release, out = tmp_path / "release", tmp_path / "iwslt15_en_vi"
    shutil.copytree(data_dir / "iwslt15_en_vi", release)
    for lang in ("en", "vi"):  # stand-in train files: the real ones are not in the shared copy
        shutil.copyfile(release / f"tst2012.{lang}", release / f"train.{lang}")
    # through the command, into the data root's task folder
    assert (
        data_main(["prepare", "iwslt15_en_vi", "--data", str(tmp_path), "--from", str(release)])
        == 0
    )
    for name in ("tst2013.en", "tst2013.vi", "vocab.en"):
        assert (out / name).read_bytes() == (release / name).read_bytes()  # byte for byte, BOM kept
    printed = capsys.readouterr().out
    assert "warning: train has 1,553 pairs; the Stanford release has 133,317" in printed
    assert "tst2013 1,268" in printed and "vocab.vi 7,709" in printed
    (release / "train.vi").write_text("only one line\n")
    again = ["prepare", "iwslt15_en_vi", "--out", str(tmp_path / "again"), "--from", str(release)]
    assert data_main(again) == 1
    err = capsys.readouterr().err
    assert re.search(r"train\.en has 1,553 lines but .*train\.vi has 1", err), err
