"""What the dashboard's run sets show for a user's runs: the group, tasks and norms local run
directories logged, the section with every norm per task (test metric, loss curves), and a
report's outline for --dry-run."""

from __future__ import annotations

from typing import Optional

from .studies import ALL_TASKS

PAPER_TASKS = list(ALL_TASKS)
TEST_METRICS = ["test/acc", "test/bleu", "test/bpc", "test/uas"]


def logged(run_dirs: list) -> dict:
    """What local run directories logged: {"groups", "tasks", "norms"} (sorted), the group being
    each run's logger.group (its experiment name when the config has no wandb logger)."""
    from ...report import find_runs
    from ...report.norm_cards import sort_key

    runs = find_runs(run_dirs)
    groups = {
        str((r.config.get("logger") or {}).get("group") or r.config.get("name")) for r in runs
    }
    return {
        "groups": sorted(groups),
        "tasks": [t for t in PAPER_TASKS if t in {r.task for r in runs}]
        + sorted({r.task for r in runs} - set(PAPER_TASKS)),
        "norms": sorted({r.norm for r in runs}, key=sort_key),
    }


def dashboard(wr, entity: str, project: str, blocks: list):
    return wr.Report(
        entity=entity,
        project=project,
        title="normlab: the runs' comparison and the paper's tables and figures",
        description="Every norm per task; Tables 1-3, overfitting, DetachNorm and AdaNorm curves, "
        "gradient statistics where the runs have their norms",
        blocks=blocks,
    )


def comparison(wr, runset, loss_plot, norms: Optional[list[str]], tasks: list[str]) -> list:
    """Every norm the runs have, per task: the test metric (bars, mean with min-max over seeds)
    and the train/valid loss curves."""
    blocks = [
        wr.H2(text="Every norm per task"),
        wr.P(
            text="Norms: "
            + (", ".join(norms) if norms else "every norm in the run set")
            + ". The statistics (paired differences, CIs, corrected verdicts) are normlab-report's "
            "comparisons table."
        ),
    ]
    for t in tasks:
        blocks.append(
            wr.PanelGrid(
                runsets=[runset(f"{t}: every norm", norms, [t])],
                panels=[
                    wr.BarPlot(
                        title=f"{t}: test metric per norm",
                        metrics=TEST_METRICS,
                        groupby=wr.Config("norm.name"),
                        groupby_aggfunc="mean",
                        groupby_rangefunc="minmax",
                    ),
                    loss_plot(f"{t}: train and valid loss per norm"),
                ],
            )
        )
    return blocks


def outline(report) -> list[str]:
    """One line per block: headings and, for panel grids, their run set and panel titles."""
    lines = []
    for b in report.blocks:
        if hasattr(b, "panels"):
            rs = b.runsets[0]
            lines.append(f"  grid [{rs.name}] filters: {rs.filters}")
            lines += [f"    - {type(p).__name__}: {getattr(p, 'title', '')}" for p in b.panels]
        elif type(b).__name__ in ("H1", "H2", "H3"):
            lines.append(f"{type(b).__name__}: {b.text}")
    return lines
