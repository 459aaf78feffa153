"""``normlab-report RUN_DIRS... --out DIR``: tables, findings and figures from run directories."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..commands import version_text
from .report import write_report
from .runs import find_runs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="normlab-report",
        description="Read run directories (config.yaml, summary.json, curves.jsonl) and write task x norm "
        "tables (Markdown, CSV, LaTeX), the paper's tables, findings and figures (PNG, PDF).",
    )
    p.add_argument(
        "run_dirs",
        nargs="+",
        type=Path,
        help="run directories, or folders searched recursively for them (e.g. runs/mini/xu2019)",
    )
    p.add_argument("--version", action="version", version=version_text())
    p.add_argument("--out", type=Path, required=True, help="output folder (created)")
    p.add_argument("--no-figures", action="store_true", help="tables only (faster)")
    args = p.parse_args(argv)
    try:
        runs = find_runs(args.run_dirs)
    except FileNotFoundError as e:
        print(f"normlab-report: error: {e}", file=sys.stderr)
        return 2
    if not runs:
        print(
            f"normlab-report: error: no run directories (config.yaml or summary.json) under "
            f"{', '.join(map(str, args.run_dirs))}",
            file=sys.stderr,
        )
        return 2
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(
            f"normlab-report: error: --out {args.out}: cannot create it ({e.strerror}); choose a folder you can "
            "write",
            file=sys.stderr,
        )
        return 2
    # the committed layout (results/<folder>/runs) names the study whose family the findings join
    member = (
        args.run_dirs[0].parent
        if len(args.run_dirs) == 1 and args.run_dirs[0].name == "runs"
        else None
    )
    written = write_report(runs, args.out, figures=not args.no_figures, member=member)
    print(written["main"].markdown())
    print(
        f"[normlab-report] {len(runs)} runs -> {args.out}: {len(written['tables'])} table files, "
        f"{len(written['figures'])} figure files, index {written['index']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
