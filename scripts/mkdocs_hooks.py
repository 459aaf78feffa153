"""mkdocs hooks: the results page shows the committed figures where they live (results/*/figures),
so the site and GitHub's view of docs/results.md read the same files and none is copied into docs/.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

REPO = Path(__file__).resolve().parents[1]
ASSETS = "assets"  # where the site serves results/ from
LINK = re.compile(r"\]\(((?:\.\./)+)results/")


def on_files(files, config):
    for png in sorted(REPO.glob("results/*/figures/*.png")):
        uri = f"{ASSETS}/{png.relative_to(REPO).as_posix()}"
        files.append(File.generated(config, uri, abs_src_path=str(png)))
    return files


def on_page_markdown(markdown, page, config, files):
    # a page in docs/ links ../results/..., one in docs/api/ ../../results/...: both leave docs/ once
    depth = page.file.src_uri.count("/")
    return LINK.sub(lambda m: f"]({'../' * depth}{ASSETS}/results/", markdown)
