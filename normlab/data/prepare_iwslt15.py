"""IWSLT15 En-Vi as released by Stanford NMT (Luong & Manning 2015), checked and laid out for normlab.

    normlab-data prepare iwslt15_en_vi --out data/iwslt15_en_vi              # download
    normlab-data prepare iwslt15_en_vi --out data/iwslt15_en_vi --from DIR   # a downloaded copy

The release is already tokenized and split, so unlike IWSLT14 there is nothing to tokenize,
clean or lowercase (En-Vi results are reported on this cased, tokenized text). The files are
copied byte for byte (tst2013.* keep their byte-order mark; the reader strips it), and every
pair of files is checked to align line by line: train 133,317, tst2012 1,553 (validation),
tst2013 1,268 (test) pairs, plus vocab.en (17,191) and vocab.vi (7,709). A joint BPE, if chosen
(task.data.vocab=bpe), is learned by the task on train and cached.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import urllib.request
from pathlib import Path

from ..errors import DataError
from .parallel import read_lines, read_parallel

URL = "https://nlp.stanford.edu/projects/nmt/data/iwslt15.en-vi/"
SPLITS = {"train": 133_317, "tst2012": 1_553, "tst2013": 1_268}
VOCABS = {"vocab.en": 17_191, "vocab.vi": 7_709}
FILES = [f"{s}.{lang}" for s in SPLITS for lang in ("en", "vi")] + list(VOCABS)


def fetch(name: str, out: Path, source: Path | None, url: str) -> None:
    target = out / name
    if source is not None:
        if not (source / name).is_file():
            raise DataError(
                f"missing {source / name} in the downloaded copy; it needs {', '.join(FILES)}"
            )
        if (source / name).resolve() != target.resolve():
            shutil.copyfile(source / name, target)
        return
    print(f"downloading {url}{name}")
    part = target.with_suffix(target.suffix + ".part")
    urllib.request.urlretrieve(url + name, part)
    part.replace(target)


def check(out: Path) -> dict[str, int]:
    """Line counts; DataError when a pair does not align. Other counts than the release's warn."""
    counts = {}
    for split, expected in SPLITS.items():
        en, _ = read_parallel(out / f"{split}.en", out / f"{split}.vi")
        counts[split] = len(en)
        if len(en) != expected:
            print(f"warning: {split} has {len(en):,} pairs; the Stanford release has {expected:,}")
    for name, expected in VOCABS.items():
        counts[name] = len(read_lines(out / name))
        if counts[name] != expected:
            print(
                f"warning: {name} has {counts[name]:,} entries; the Stanford release has {expected:,}"
            )
    return counts


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        prog="normlab-data prepare iwslt15_en_vi", description=__doc__.split("\n")[0]
    )
    p.add_argument("--out", required=True, help="target folder, e.g. data/iwslt15_en_vi")
    p.add_argument("--from", dest="source", help="a folder holding the downloaded release files")
    p.add_argument("--url", default=URL, help="base URL of the release")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        for name in FILES:
            fetch(name, out, Path(args.source) if args.source else None, args.url)
        counts = check(out)
    except DataError as e:
        sys.exit(f"prepare_iwslt15: {e}")
    print(f"done: {out} " + ", ".join(f"{k} {v:,}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
