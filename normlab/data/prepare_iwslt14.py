"""IWSLT14 De-En exactly as fairseq's examples/translation/prepare-iwslt14.sh prepares it.

    normlab-data prepare iwslt14_de_en --out data/iwslt14_de_en                   # download
    normlab-data prepare iwslt14_de_en --out data/iwslt14_de_en --archive de-en.tgz
    normlab-data prepare iwslt14_de_en --out data/iwslt14_de_en --orig path/to/de-en/

Step by step, as the shell script (Moses' perl scripts replaced by sacremoses, subword-nmt by the
`tokenizers` library through normlab.data.bpe, which writes subword-nmt's formats):
 1. get de-en.tgz (download, or a local archive or extracted folder) into OUT/orig/;
 2. train.tags.de-en.{de,en}: drop lines with <url>, <talkid>, <keywords>; remove the <title>,
    </title>, <description>, </description> tags; Moses-tokenize (-l de / -l en, with escaping);
 3. clean-corpus-n.perl -ratio 1.5 ... 1 175: squeeze spaces, drop pairs with an empty side,
    more than 175 words, or a length ratio above 1.5;
 4. lowercase the cleaned train text;
 5. valid/test sources IWSLT14.TED*.{de,en}.xml: the <seg id> lines without their tags, ’ -> ',
    tokenized and lowercased, into tmp/<name without .xml>;
 6. valid = every 23rd line of the train text, train = the rest; test = dev2010 + TEDX.dev2012 +
    tst2010 + tst2011 + tst2012;
 7. joint BPE, 10,000 merges learned on tmp/train.de + tmp/train.en, written as OUT/code; BPE'd
    OUT/{train,valid,test}.{de,en}.
Expected counts with the real archive: 160,239 / 7,283 / 6,750 pairs.
"""

from __future__ import annotations

import argparse
import re
import sys
import tarfile
import urllib.request
from multiprocessing import Pool
from pathlib import Path

from .bpe import JointBPE
from .parallel import read_lines

URLS = [
    "http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz",
    "https://wit3.fbk.eu/archive/2014-01/texts/de/en/de-en.tgz",
]
SRC, TGT, LANG = "de", "en", "de-en"
TEST_PARTS = [
    "IWSLT14.TED.dev2010",
    "IWSLT14.TEDX.dev2012",
    "IWSLT14.TED.tst2010",
    "IWSLT14.TED.tst2011",
    "IWSLT14.TED.tst2012",
]
_TOKENIZERS: dict = {}
_FINAL_PERIOD = re.compile(r"^(\S+)\.$")


def moses_tokenize(args: tuple[str, str]) -> str:
    """tokenizer.perl -l LANG: lines that are empty or blank pass through unchanged."""
    line, lang = args
    if not line.strip():
        return line
    if lang not in _TOKENIZERS:
        from sacremoses import MosesTokenizer

        _TOKENIZERS[lang] = MosesTokenizer(lang=lang)
    words = (
        _TOKENIZERS[lang]
        .tokenize(line, escape=True, return_str=True, aggressive_dash_splits=False)
        .split(" ")
    )
    # tokenizer.perl (since 2017, which the released tmp/ files show: "... 1 .") splits the final
    # period of the last word unconditionally; sacremoses 0.x still treats it as a possible
    # non-breaking prefix ("zeile 1."). Runs of dots ("...") are left alone, as in the perl script.
    last = _FINAL_PERIOD.match(words[-1])
    if last and not set(words[-1]) <= {"."}:
        words[-1] = last.group(1) + " ."
    return " ".join(words)


def tokenize_all(lines: list[str], lang: str, workers: int) -> list[str]:
    if workers <= 1:
        return [moses_tokenize((x, lang)) for x in lines]
    with Pool(workers) as pool:
        return pool.map(moses_tokenize, [(x, lang) for x in lines], chunksize=2000)


def train_lines(path: Path) -> list[str]:
    """Step 2's grep -v / sed filters on train.tags.de-en.LANG."""
    out = []
    for line in read_lines(path):
        if "<url>" in line or "<talkid>" in line or "<keywords>" in line:
            continue
        for tag in ("<title>", "</title>", "<description>", "</description>"):
            line = line.replace(tag, "")
        out.append(line)
    return out


def clean_corpus(
    f: list[str],
    e: list[str],
    ratio: float = 1.5,
    lo: int = 1,
    hi: int = 175,
    max_word_length: int = 1000,
) -> tuple[list[str], list[str]]:
    """Moses' clean-corpus-n.perl (f = the first language, e = the second)."""
    if len(f) != len(e):
        sys.exit(f"clean-corpus: the two sides have {len(f)} and {len(e)} lines")
    factored = bool(f) and ("|" in f[0] or "|" in e[0])
    keep_f, keep_e = [], []
    long_word = re.compile(rf"[^\s|]{{{max_word_length + 1}}}")
    for a, b in zip(f, e):
        if not factored:
            a, b = a.replace("|", ""), b.replace("|", "")
        a = re.sub(r"\s+", " ", a).strip(" ")
        b = re.sub(r"\s+", " ", b).strip(" ")
        if not a or not b:
            continue
        na, nb = len(a.split(" ")), len(b.split(" "))
        if na > hi or nb > hi or na < lo or nb < lo or nb / na > ratio or na / nb > ratio:
            continue
        if long_word.search(a) or long_word.search(b):
            continue
        keep_f.append(a)
        keep_e.append(b)
    return keep_f, keep_e


def seg_lines(path: Path) -> list[str]:
    """Step 5's grep '<seg id' | sed ... on an IWSLT xml file."""
    out = []
    for line in read_lines(path):
        if "<seg id" not in line:
            continue
        line = re.sub(r'<seg id="[0-9]*">\s*', "", line)
        line = re.sub(r"\s*</seg>\s*", "", line)
        out.append(line.replace("\u2019", "'"))
    return out


def write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".part")
    tmp.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    tmp.replace(path)


def fetch(args, orig: Path) -> Path:
    """Step 1: the extracted de-en/ folder."""
    if args.orig:
        return Path(args.orig)
    archive = Path(args.archive) if args.archive else orig / "de-en.tgz"
    if not archive.exists():
        orig.mkdir(parents=True, exist_ok=True)
        for url in [args.url] if args.url else URLS:
            try:
                print(f"downloading {url}")
                urllib.request.urlretrieve(url, archive)
                break
            except Exception as e:  # try the next mirror
                print(f"  failed: {e}")
        else:
            sys.exit(
                "could not download de-en.tgz; download it elsewhere and pass --archive de-en.tgz"
            )
    with tarfile.open(archive) as tar:
        tar.extractall(orig, filter="data")
    return orig / LANG


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        prog="normlab-data prepare iwslt14_de_en", description=__doc__.split("\n")[0]
    )
    p.add_argument(
        "--out",
        required=True,
        help="the prepared folder (fairseq's $prep), e.g. data/iwslt14_de_en",
    )
    p.add_argument("--archive", help="a downloaded de-en.tgz")
    p.add_argument("--orig", help="an extracted de-en/ folder")
    p.add_argument("--url", help="download from this URL instead of the known mirrors")
    p.add_argument(
        "--merges", type=int, default=10000, help="BPE merges (prepare-iwslt14.sh: 10000)"
    )
    p.add_argument(
        "--workers", type=int, default=4, help="tokenizer processes (the script uses -threads 8)"
    )
    args = p.parse_args(argv)
    out = Path(args.out)
    tmp = out / "tmp"
    src_dir = fetch(args, out / "orig")

    print("pre-processing train data...")
    tok = {}
    for lang in (SRC, TGT):
        path = src_dir / f"train.tags.{LANG}.{lang}"
        if not path.is_file():
            sys.exit(f"missing {path}: is {src_dir} the extracted de-en/ folder of de-en.tgz?")
        tok[lang] = tokenize_all(train_lines(path), lang, args.workers)
    clean_de, clean_en = clean_corpus(tok[SRC], tok[TGT])
    train = {
        SRC: [x.lower() for x in clean_de],
        TGT: [x.lower() for x in clean_en],
    }  # lowercase.perl

    print("pre-processing valid/test data...")
    for lang in (SRC, TGT):
        for xml in sorted(src_dir.glob(f"IWSLT14.TED*.{lang}.xml")):
            lines = [x.lower() for x in tokenize_all(seg_lines(xml), lang, args.workers)]
            write(tmp / xml.name[: -len(".xml")], lines)

    print("creating train, valid, test...")
    for lang in (SRC, TGT):
        lines = train[lang]
        write(tmp / f"valid.{lang}", [x for i, x in enumerate(lines, 1) if i % 23 == 0])
        write(tmp / f"train.{lang}", [x for i, x in enumerate(lines, 1) if i % 23 != 0])
        test = []
        for part in TEST_PARTS:
            path = tmp / f"{part}.{LANG}.{lang}"
            if not path.is_file():
                sys.exit(f"missing {path}: {src_dir} lacks {part}.{LANG}.{lang}.xml")
            test += read_lines(path)
        write(tmp / f"test.{lang}", test)

    print(f"learning joint BPE ({args.merges} merges) on tmp/train.{SRC} + tmp/train.{TGT}...")
    bpe = JointBPE.learn(
        read_lines(tmp / f"train.{SRC}") + read_lines(tmp / f"train.{TGT}"), args.merges
    )
    (out / "code").write_text(bpe.to_codes(), encoding="utf-8")
    for lang in (SRC, TGT):
        for split in ("train", "valid", "test"):
            write(
                out / f"{split}.{lang}",
                [" ".join(x) for x in bpe.encode(read_lines(tmp / f"{split}.{lang}"))],
            )
    counts = {s: len(read_lines(tmp / f"{s}.{SRC}")) for s in ("train", "valid", "test")}
    print(
        f"done: {out} train/valid/test = {counts['train']:,} / {counts['valid']:,} / {counts['test']:,} pairs "
        "(fairseq: 160,239 / 7,283 / 6,750)"
    )


if __name__ == "__main__":
    main()
