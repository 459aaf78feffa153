#!/usr/bin/env python
"""Write (or --check) the generated results sections of README.md and docs/results.md.

    python scripts/readme_results.py          # rewrite each section between its markers
    python scripts/readme_results.py --check  # exit 1 when a page differs from the tables

Run it after committing new tables (scripts/commit_results.sh does), so every number the README
and the results page quote is the tables' (normlab/campaigns/xu2019/readme.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from normlab.campaigns.xu2019.readme import PAGES, replace, section  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="compare only; exit 1 when a page is stale")
    p.add_argument(
        "--root", type=Path, default=REPO, help="the checkout whose pages and results/ are read"
    )
    a = p.parse_args(argv)
    stale, new = [], {}
    for page, full in PAGES.items():
        path = a.root / page
        try:
            new[path] = replace(path.read_text(), section(a.root, full=full))
        except (OSError, ValueError) as e:
            print(f"readme_results: {path}: {e}", file=sys.stderr)
            return 2
        if new[path] != path.read_text():
            stale.append(path)
    if a.check:
        for path in stale:
            print(
                f"readme_results: {path}'s results section differs from the committed tables; "
                "run python scripts/readme_results.py",
                file=sys.stderr,
            )
        return 1 if stale else 0
    for path in stale:
        path.write_text(new[path])
        print(f"readme_results: wrote the results section of {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
