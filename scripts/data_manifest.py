"""Write normlab/data/manifest.json: the size and md5 of every file the loaders read
(normlab.data.sources.READS) in a data folder, the reference copy the committed results used.

    python scripts/data_manifest.py --data ../shared/data
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from normlab.data import sources  # noqa: E402


def build(root: Path) -> dict:
    tasks = {}
    for task in sorted(sources.READS):
        folder = root / task
        tasks[task] = {
            rel: {"bytes": (folder / rel).stat().st_size, "md5": sources.md5(folder / rel)}
            for rel in sources.files_read(task, folder)
        }
    return {
        "about": "the files each task's loader reads in the reference copy the committed results "
        "used; written by scripts/data_manifest.py, checked by normlab-data check",
        "tasks": tasks,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True, help="the reference data root")
    a = p.parse_args()
    text = json.dumps(build(a.data), indent=1, sort_keys=True) + "\n"
    sources.MANIFEST.write_text(text)
    counts = {t: len(f) for t, f in json.loads(text)["tasks"].items()}
    print(f"wrote {sources.MANIFEST}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
