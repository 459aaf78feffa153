"""Where each task's data comes from, and whether a data folder holds the bytes normlab's
committed results were trained on.

``FETCH``: the shell commands that lay out a task's folder from the public sources ({dir}: the
task's folder, {root}: the data root), the ones every "missing data" error quotes. ``READS``: the
files of each folder the loaders read at the committed presets (globs), whose sizes and md5s are
in ``manifest.json`` beside this module: the reference copy the committed runs used, written by
``scripts/data_manifest.py``. Neither imports torch, so ``normlab-data`` starts at once.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Iterator

MANIFEST = Path(__file__).with_name("manifest.json")

FETCH: dict[str, list[str]] = {
    "rt": [
        "mkdir -p {dir} && curl -L http://www.cs.cornell.edu/people/pabo/movie-review-data/"
        "rt-polaritydata.tar.gz | tar -xz --strip-components=1 -C {dir}"
    ],
    "sst2": [
        "curl -LO https://dl.fbaipublicfiles.com/glue/data/SST-2.zip && "
        "unzip -j SST-2.zip 'SST-2/*.tsv' -d {dir}"
    ],
    "imdb": [
        "mkdir -p {dir} && curl -L -o {dir}/aclImdb_v1.tar.gz "
        "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
    ],
    "mnist": [
        "mkdir -p {dir} && for f in train-images-idx3-ubyte train-labels-idx1-ubyte "
        "t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do curl -L -o {dir}/$f.gz "
        "https://ossci-datasets.s3.amazonaws.com/mnist/$f.gz; done"
    ],
    "enwik8": [
        "mkdir -p {dir} && curl -L -o {dir}/enwik8.zip http://mattmahoney.net/dc/enwik8.zip"
    ],
    "ptb": [
        "pip install nltk",
        "python -m nltk.downloader -d {dir} dependency_treebank treebank",
    ],
    "iwslt14_de_en": ["normlab-data prepare iwslt14_de_en --out {dir}"],
    "iwslt15_en_vi": ["normlab-data prepare iwslt15_en_vi --out {dir}"],
}

# the files each loader reads at the committed presets (the translation presets read held-out
# files when a folder has no train split, as the reference copy has not)
READS: dict[str, list[str]] = {
    "rt": ["rt-polarity.pos", "rt-polarity.neg"],
    "sst2": ["train.tsv", "dev.tsv"],
    "imdb": ["aclImdb*.tar.gz"],
    "mnist": ["*-ubyte.gz"],
    "enwik8": ["enwik8_small"],
    "ptb": ["corpora/dependency_treebank/*.dp"],
    "iwslt14_de_en": ["tmp/*.de", "tmp/*.en"],
    "iwslt15_en_vi": ["tst2012.*", "tst2013.*", "vocab.*"],
}


def commands(task: str, data_root: Path) -> list[str]:
    """The commands that fetch ``task``'s data into ``data_root``/<task>."""
    if task not in FETCH:
        raise KeyError(task)
    return [c.format(dir=Path(data_root) / task, root=data_root) for c in FETCH[task]]


def md5(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def files_read(task: str, folder: Path) -> list[str]:
    """The files of ``folder`` the task's loader reads (READS), relative, sorted."""
    return sorted(
        {str(p.relative_to(folder)) for g in READS[task] for p in folder.glob(g) if p.is_file()}
    )


@functools.lru_cache(maxsize=1)
def manifest() -> dict:
    """{task: {relative path: {"bytes": n, "md5": hex}}} of the reference copy."""
    return json.loads(MANIFEST.read_text())["tasks"]


def check(task: str, folder: Path) -> Iterator[tuple[str, str, str]]:
    """(relative path, state, detail) for each file the manifest names: state "ok", "missing",
    or "differs" (its size or md5 is not the reference copy's); then "extra" for each file the
    loader reads that the reference copy has not (the official IMDB tarball, a translation train
    split): read, but results on it are not the committed ones."""
    known = manifest().get(task, {})
    for rel in files_read(task, Path(folder)):
        if rel not in known:
            yield rel, "extra", "read by the loader, not in the reference copy"
    for rel, want in sorted(known.items()):
        p = Path(folder) / rel
        if not p.is_file():
            yield rel, "missing", ""
        elif p.stat().st_size != want["bytes"]:
            yield (
                rel,
                "differs",
                f"{p.stat().st_size:,} bytes, the reference copy has {want['bytes']:,}",
            )
        elif (got := md5(p)) != want["md5"]:
            yield rel, "differs", f"md5 {got}, the reference copy's is {want['md5']}"
        else:
            yield rel, "ok", ""
