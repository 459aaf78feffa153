"""``normlab-report RUN_DIRS... --out DIR``: the report of run directories, with the trivial
baselines of their tasks computed from the data files.

The report itself (``normlab.report``) reads run directories only; the baselines need each task's
data pipeline, so they are computed here, by the task (``Task.trivial_baselines``, with the task
config the runs recorded: the same subset, splits and evaluation caps), and cached as JSON under
the cache folder, keyed by the data config and the sizes and mtimes of the data files. Without
data the table says so instead of showing numbers. torch is imported only on a cache miss.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Optional

from .commands import version_text
from .files import atomic_write_bytes
from .report import Protocol, find_runs, write_report
from .report.campaigns import get_campaign
from .report.claimfile import ClaimsFileError, load
from .report.compare import DEFAULT_REFERENCES, Reference
from .report.runs import Run

CACHE_VERSION = 3  # 3: translation has its copy-source baseline


def _files_key(folder: Path, data_cfg) -> str:
    files = sorted(
        (str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    )
    blob = json.dumps(
        {"v": CACHE_VERSION, "files": files, "cfg": data_cfg}, sort_keys=True, default=str
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _compute(cls, task_cfg: dict, folder: Path, cache_dir: Path) -> dict:
    from omegaconf import OmegaConf

    task = cls(OmegaConf.create(task_cfg), folder, cache_dir)
    # With train_limit_seed=run each seed trains on its own subset; the baselines are fitted on
    # seed 0's (they are the train majority class, bytes' and heads' statistics: the subset's draw
    # moves them by far less than the seeds' spread).
    task.run_seed = 0
    task.setup()
    return task.trivial_baselines()


def _task_class(task_name: str):
    """The registered task class, or None when it is not installed here (importing the tasks
    imports torch, so this runs only when the cache cannot answer)."""
    from .tasks import TASKS

    return TASKS.get(task_name)


def baselines(task_name: str, task_cfg: dict, data_dir: Optional[Path], cache_dir: Path) -> dict:
    """The baselines of one task, from the cache when the data files and data config are unchanged.
    {"metric", "rows": {name: {split: value}}, "sizes"} or {"missing": why}."""
    folder = Path(data_dir) / task_name if data_dir else None
    if folder is None or not folder.is_dir():
        cls = _task_class(task_name)
        if cls is not None and cls.no_trivial_baseline:
            return {"missing": cls.no_trivial_baseline}
        return {
            "missing": f"no data folder {folder}" if folder else "no data folder (set NORMLAB_DATA)"
        }
    # Keyed by the data config only: runs that differ in model or training share their baselines.
    path = (
        Path(cache_dir) / f"baselines-{task_name}-{_files_key(folder, task_cfg.get('data'))}.json"
    )
    if path.exists():
        try:
            return json.loads(path.read_text())
        except ValueError:
            path.unlink(missing_ok=True)  # a corrupt cache is recomputed, never trusted
    cls = _task_class(task_name)
    if cls is None:  # not cached: installing the task later must compute it
        return {"missing": f"task {task_name} is not installed here (no registered task)"}
    try:
        res = (
            {"missing": cls.no_trivial_baseline}
            if cls.no_trivial_baseline
            else _compute(cls, task_cfg, folder, Path(cache_dir))
        )
    except Exception as e:  # unreadable data: say so in the table, do not fail the report
        return {"missing": f"data not readable ({type(e).__name__}: {e})"}
    # Cached also when the task has none, so the next report of the same data needs no torch.
    # Insertion order kept (no sort_keys): a cached result must print exactly like a fresh one.
    atomic_write_bytes(path, json.dumps(res).encode())
    return res


def default_dirs(runs: list[Run]) -> tuple[Optional[Path], Path]:
    """$NORMLAB_DATA, else the data folder the runs recorded (config.yaml paths.data_dir), so the
    committed run copies find the data they were trained on; cache: $NORMLAB_CACHE or ./.cache/normlab."""
    data = os.environ.get("NORMLAB_DATA")
    if not data:
        recorded = sorted(
            {
                str((r.config.get("paths") or {}).get("data_dir"))
                for r in runs
                if (r.config.get("paths") or {}).get("data_dir")
            }
        )
        data = recorded[0] if recorded else None
    cache = os.environ.get("NORMLAB_CACHE") or str(Path.cwd() / ".cache" / "normlab")
    return (Path(data) if data else None), Path(cache)


def provider_for(
    runs: list[Run], data_dir: Optional[Path] = None, cache_dir: Optional[Path] = None
):
    """The baselines of each task the ``runs`` trained on, from ``data_dir``/``cache_dir``
    (default: default_dirs): ``provider(task name, task config)``."""
    dd, cd = default_dirs(runs)
    data_dir, cache_dir = data_dir or dd, cache_dir or cd
    return lambda task, cfg: baselines(task, cfg, data_dir, cache_dir)


def report(
    runs: list[Run],
    out: Path,
    figures: bool = True,
    member: Optional[Path] = None,
    data_dir: Optional[Path] = None,
    cache_dir: Optional[Path] = None,
    campaign=None,
    claims=None,
    reference: Optional[Reference] = None,
    protocol: Optional[Protocol] = None,
) -> dict:
    """``normlab.report.write_report`` with the baselines computed from ``data_dir``/``cache_dir``
    (default: default_dirs) and the sections of ``campaign`` (a name, or a campaign object as
    get_campaign returns; None: the generic report); ``protocol`` None: the campaign's, else
    normlab's default."""
    return write_report(
        runs,
        out,
        figures=figures,
        member=member,
        baselines=provider_for(runs, data_dir, cache_dir),
        campaign=get_campaign(campaign) if isinstance(campaign, str) else campaign,
        claims=claims,
        reference=reference,
        protocol=protocol,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="normlab-report",
        description="Read run directories (config.yaml, summary.json, curves.jsonl) and write task x norm "
        "tables (Markdown, CSV, LaTeX), comparisons, figures (PNG, PDF) and, with --campaign, a "
        "campaign's own tables and findings.",
    )
    p.add_argument(
        "run_dirs",
        nargs="+",
        type=Path,
        help="run directories, or folders searched recursively for them (e.g. runs/mini/my-sweep)",
    )
    p.add_argument("--version", action="version", version=version_text())
    p.add_argument("--out", type=Path, required=True, help="output folder (created)")
    p.add_argument("--no-figures", action="store_true", help="tables only (faster)")
    p.add_argument(
        "--campaign",
        default="none",
        help="a campaign (normlab.campaigns, e.g. xu2019) whose tables, findings, figures and test "
        "protocol join the report (default none: the generic tables and figures only)",
    )
    p.add_argument(
        "--claims",
        type=Path,
        help="a claims file (YAML: docs/statistics.md) whose claims are tested as the report's "
        "primary family, instead of the campaign's",
    )
    p.add_argument(
        "--protocol",
        type=Path,
        metavar="FILE",
        help="a test protocol (YAML: alpha, power, margins, margin_reasons, trained_margin, "
        "not_learning, regime_rise_pct, sequential.futility, time_to_target; docs/statistics.md) "
        "instead of the campaign's (or, without a campaign, normlab's default: no margins)",
    )
    p.add_argument(
        "--reference",
        action="append",
        metavar="NORM|KEY=VALUE",
        help="what the comparisons compare against: a norm (default layernorm) and, for a swept "
        "setting, its reference value (default placement=post); repeat for both",
    )
    args = p.parse_args(argv)
    try:
        claims = load(args.claims) if args.claims else None
    except ClaimsFileError as e:
        print(f"normlab-report: error: --claims {e}", file=sys.stderr)
        return 2
    try:
        protocol = Protocol.load(args.protocol) if args.protocol else None
    except ValueError as e:
        print(f"normlab-report: error: --protocol {e}", file=sys.stderr)
        return 2
    reference = Reference.parse([*DEFAULT_REFERENCES, *(args.reference or [])])
    try:
        campaign = None if args.campaign.lower() == "none" else get_campaign(args.campaign)
    except ValueError as e:
        print(f"normlab-report: error: --campaign: {e}, or none", file=sys.stderr)
        return 2
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
    named = [r for r in args.reference or [] if "=" not in r]
    norms = sorted({r.norm for r in runs})
    if named and named[-1] not in norms:
        print(
            f"normlab-report: error: --reference {named[-1]}: no run of that norm; the runs' norms "
            f"are {', '.join(norms)}",
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
    written = report(
        runs,
        args.out,
        figures=not args.no_figures,
        member=member,
        campaign=campaign,
        claims=claims,
        reference=reference,
        protocol=protocol,
    )
    print(written["main"].markdown())
    if written.get("primary") is not None:
        print(written["primary"].markdown())
    print(
        f"[normlab-report] {len(runs)} runs -> {args.out}: {len(written['tables'])} table files, "
        f"{len(written['figures'])} figure files, index {written['index']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
