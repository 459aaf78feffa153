"""``normlab-wandb-dashboard``: the runs' comparison and the paper's panels as a wandb Report.

    normlab-wandb-dashboard --entity E --project P --runs runs/mini/my_sweep   # what was run
    normlab-wandb-dashboard --entity E --project P [--group G] [--scale mini] [--tasks rt,enwik8]

With ``--runs`` (the local run directories that logged to wandb) the report is shaped by them: its
run sets filter to the group they were logged to (logger.group, by default the experiment name)
and to the norms and tasks they ran, and a paper section appears only when two of its norms ran.
Sections (each a panel grid over a filtered run set, grouped by task then norm, so the run table
under each grid is the table with one row per task x norm, averaged over seeds): every norm per
task (test metric, train/valid loss); Tables 1-3 and the beyond table; the overfitting curves (LayerNorm vs
LayerNorm-simple), DetachNorm vs LayerNorm-simple vs w/o Norm, AdaNorm vs LayerNorm (train/valid
loss per task, mean with a min-max band over seeds); Theorem 1's gradient statistics (log scale).

Building the Report object needs no network (``build_report``, what the tests check); saving it
(``--save``, the default) needs an API key (``wandb login`` or ``WANDB_API_KEY``) and
``pip install 'normlab[dashboard]'`` (wandb-workspaces). ``--dry-run`` prints the outline.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Optional

from ...commands import version_text
from .paper_tables import TABLES
from .wandb_runs import PAPER_TASKS, comparison, dashboard, logged, outline

TEST_COLUMNS = [
    "summary:test/acc",
    "summary:test/bleu",
    "summary:test/bpc",
    "summary:test/uas",
    "summary:status",
    "summary:best_valid_score",
]
GROUPBY = ["config.task.name", "config.norm.name"]
# (title, norms, what the paper claims); curves of train and valid loss, one grid per task
CURVES = [
    (
        "Overfitting: LayerNorm vs LayerNorm-simple",
        ["layernorm", "layernorm_simple"],
        "With bias and gain the train loss is lower and the valid loss ends higher (the paper's Enwiki8 figure).",
    ),
    (
        "DetachNorm vs LayerNorm-simple vs w/o Norm",
        ["none", "detachnorm", "layernorm_simple"],
        "Normalizing forward without the mean/variance derivatives (DetachNorm) loses to LayerNorm-simple (Table 2).",
    ),
    (
        "AdaNorm vs LayerNorm",
        ["layernorm", "adanorm"],
        "AdaNorm's valid loss rises less late in training (the paper's PTB and De-En figures).",
    ),
]
GRAD_NORMS = TABLES["table2"][1]
GRAD_PLOTS = [
    ("|mean ∂ℓ/∂x| (re-centring)", ["grad/all/in_absmean"]),
    ("Var ∂ℓ/∂x", ["grad/all/in_var"]),
    (
        "Var ∂ℓ/∂x and Var ∂ℓ/∂y (re-scaling: the gap is the ratio)",
        ["grad/all/in_var", "grad/all/out_var"],
    ),
]


def _filters(
    norms: Optional[list[str]],
    group: Optional[str],
    scale: Optional[str],
    tasks: Optional[list[str]],
) -> str:
    """A wandb filter expression (the string form wandb-workspaces parses); ``norms`` None: every
    norm."""
    parts = [f"Config('norm.name') in {norms!r}"] if norms else []
    if tasks:
        parts.append(
            f"Config('task.name') in {tasks!r}"
            if len(tasks) > 1
            else f"Config('task.name') == {tasks[0]!r}"
        )
    if scale:
        parts.append(f"Config('scale') == {scale!r}")
    if group:
        parts.append(f"Metric('Group') == {group!r}")
    return " and ".join(parts)


def build_report(
    entity: str,
    project: str,
    group: Optional[str] = None,
    scale: Optional[str] = None,
    tasks: Optional[list[str]] = None,
    norms: Optional[list[str]] = None,
):
    """The Report object (wandb_workspaces.reports.v2.Report); nothing is sent anywhere.
    ``norms``: the norms the runs have (None: any): the comparison section filters to them, and a
    paper section is built only when two of its norms are among them."""
    import wandb_workspaces.reports.v2 as wr

    for name, value in (("entity", entity), ("project", project)):
        if not value or not isinstance(value, str):
            raise ValueError(
                f"--{name} is required (the wandb {name} that holds normlab's runs), got {value!r}"
            )
    tasks = tasks or PAPER_TASKS
    from ...tasks import TASKS

    # tasks read from the runs (norms given) may be a user package's, not installed here
    unknown = [t for t in tasks if t not in TASKS] if norms is None else []
    if unknown:
        raise ValueError(f"unknown task(s) {unknown}; valid: {', '.join(sorted(TASKS))}")

    def runset(name, norms, task_list):
        return wr.Runset(
            entity=entity,
            project=project,
            name=name,
            groupby=GROUPBY,
            filters=_filters(norms, group, scale, task_list),
            pinned_columns=TEST_COLUMNS,
        )

    def loss_plot(title):
        return wr.LinePlot(
            title=title,
            x="Step",
            y=["train/loss", "valid/loss"],
            title_x="training step",
            title_y="loss (nats per token or example)",
            groupby=wr.Config("norm.name"),
            groupby_aggfunc="mean",
            groupby_rangefunc="minmax",
            smoothing_factor=0.0,
        )

    where = ", ".join(
        x for x in [f"group {group}" if group else "", f"scale {scale}" if scale else ""] if x
    )
    blocks = [
        # a user's runs (``norms`` read from them) are titled by their group, not by the paper
        wr.H1(
            text=f"normlab: {f'runs of group {group}' if group else 'runs'}"
            if norms is not None
            else "normlab: Xu et al. (2019), Understanding and Improving Layer Normalization"
        ),
        wr.P(
            text=f"Runs of {entity}/{project}{' (' + where + ')' if where else ''}. Built by "
            "normlab-wandb-dashboard; the local run files (summary.json, curves.jsonl) stay the "
            "source of truth for normlab-report's tables. Grouped rows average the seeds; diverged "
            "runs log no test metric, so check each group's run count."
        ),
    ]
    blocks += comparison(wr, runset, loss_plot, norms, tasks)
    present = set(norms or ())

    def shown(wanted: list[str]) -> Optional[list[str]]:
        """The paper section's norms the runs have; None when fewer than two (no comparison)."""
        if norms is None:
            return wanted
        have = [n for n in wanted if n in present]
        return have if len(have) >= 2 else None

    tables = [(k, t, ns) for k, (t, n) in TABLES.items() if (ns := shown(n))]
    blocks += [wr.H2(text="The paper's tables")] if tables else []
    for key, title, norms_ in tables:
        blocks += [
            wr.H3(text=title),
            wr.PanelGrid(
                runsets=[runset(key, norms_, tasks)],
                panels=[
                    wr.BarPlot(
                        title=f"{title}: test metric per task and norm",
                        metrics=[c.split(":", 1)[1] for c in TEST_COLUMNS[:4]],
                        groupby=wr.Config("norm.name"),
                        groupby_aggfunc="mean",
                        groupby_rangefunc="minmax",
                    )
                ],
            ),
        ]
    curves = [(t, ns, c) for t, n, c in CURVES if (ns := shown(n)) and ns == n]
    blocks += [wr.H2(text="The paper's curves")] if curves else []
    for title, norms_, claim in curves:
        blocks += [wr.H3(text=title), wr.P(text=claim)]
        blocks += [
            wr.PanelGrid(
                runsets=[runset(f"{t}: {title}", norms_, [t])], panels=[loss_plot(f"{t}: {title}")]
            )
            for t in tasks
        ]
    grad_norms = shown(GRAD_NORMS)
    if grad_norms is None:
        return dashboard(wr, entity, project, blocks)
    blocks += [
        wr.H2(text="Theorem 1: gradient statistics per norm variant"),
        wr.P(
            text="grad/all/...: per-token statistics of the gradients at the norm layers' input (x) and "
            "output (y), averaged over layers; logged every task.train.probe_every steps."
        ),
    ]
    blocks += [
        wr.PanelGrid(
            runsets=[runset(f"{t}: gradient statistics", grad_norms, [t])],
            panels=[
                wr.LinePlot(
                    title=f"{t}: {name}",
                    x="Step",
                    y=ys,
                    log_y=True,
                    title_x="training step",
                    title_y=name,
                    groupby=wr.Config("norm.name"),
                    groupby_aggfunc="mean",
                    groupby_rangefunc="minmax",
                )
                for name, ys in GRAD_PLOTS
            ],
        )
        for t in tasks
    ]
    return dashboard(wr, entity, project, blocks)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="normlab-wandb-dashboard", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--version", action="version", version=version_text())
    p.add_argument(
        "--entity",
        default=None,
        help="wandb entity (user or team) that holds the runs (to save the report; --dry-run "
        "needs none)",
    )
    p.add_argument(
        "--project",
        default=None,
        help="wandb project (logger.project, default normlab; --dry-run needs none)",
    )
    p.add_argument(
        "--runs",
        nargs="+",
        type=Path,
        help="the local run directories (or folders of them) whose wandb runs the report shows: "
        "their group, tasks and norms shape it",
    )
    p.add_argument(
        "--group",
        default=None,
        help="run group = experiment name (default: the group --runs logged to; without --runs, "
        "every group)",
    )
    p.add_argument("--scale", default=None, help="only runs of this scale (smoke | mini | paper)")
    p.add_argument(
        "--tasks",
        default=None,
        help="comma-separated task keys, one grid each (default: the tasks --runs ran, else the "
        "paper's)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="print the report's outline; send nothing"
    )
    a = p.parse_args(argv)
    if not a.dry_run and not (a.entity and a.project):
        p.error("--entity and --project name where the report is saved (or --dry-run: its outline)")
    # the outline of a dry run names where the runs would be looked up, without guessing
    entity, project = a.entity or "<entity>", a.project or "normlab"
    group, norms, tasks = a.group, None, None
    if a.runs:
        try:
            seen = logged(a.runs)
        except FileNotFoundError as e:
            p.error(f"--runs: {e}")
        if not seen["norms"]:
            p.error(f"--runs: no run directories under {', '.join(map(str, a.runs))}")
        if group is None and len(seen["groups"]) > 1:
            p.error(f"--runs logged to groups {seen['groups']}: name one with --group")
        group = group if group is not None else seen["groups"][0]
        norms, tasks = seen["norms"], seen["tasks"]
    if a.tasks:
        tasks = [t.strip() for t in a.tasks.split(",") if t.strip()]
    try:
        report = build_report(entity, project, group or None, a.scale, tasks, norms)
    except ImportError:
        p.error("needs wandb-workspaces: pip install 'normlab[dashboard]'")
    except ValueError as e:
        p.error(str(e))
    if a.dry_run:
        print("\n".join(outline(report)))
        return 0
    if not (os.environ.get("WANDB_API_KEY") or os.path.exists(os.path.expanduser("~/.netrc"))):
        print(
            "normlab-wandb-dashboard: saving a report needs a wandb API key: run `wandb login` or set "
            "WANDB_API_KEY (or use --dry-run to see the report offline)",
            file=sys.stderr,
        )
        return 2
    report.save()
    print(f"[normlab] report saved: {report.url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
