#!/usr/bin/env python
"""``make demo``: a real end-to-end job with no download.

Trains three norm variants (none, layernorm, layernorm_simple) with two seeds on the GENERATED
counting task (normlab/configs/task/synthetic_cls.yaml) through a Hydra multirun, then writes the report:
a task x norm table (printed, and as Markdown/CSV/LaTeX) and loss-curve figures under
runs/demo/report/ (``--root DIR``: under DIR instead). Re-running skips finished runs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "runs" / "demo"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=ROOT, help="where the runs and the report go")
    root = p.parse_args(argv).root.resolve()
    train = [
        sys.executable,
        "-m",
        "normlab.train",
        "--multirun",
        "task=synthetic_cls",
        "norm=none,layernorm,layernorm_simple",
        "seed=1,2",
        "scale=mini",
        "name=demo",
        f"paths.root={root}",
        "progress=false",
        "threads=1",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
    ]
    print("[demo]", " ".join(train[1:]), flush=True)
    rc = subprocess.call(train, cwd=REPO)
    if rc != 0:
        print(f"[demo] the sweep reported {rc} failed job(s)", file=sys.stderr)
        return rc
    report = [
        sys.executable,
        "-m",
        "normlab.make_report",
        str(root / "mini" / "demo"),
        "--out",
        str(root / "report"),
    ]
    rc = subprocess.call(report, cwd=REPO)
    if rc == 0:
        print(
            f"[demo] tables and figures: {root / 'report'} (figures/curves.png: train/valid loss per norm)"
        )
    return rc


if __name__ == "__main__":
    sys.exit(main())
