"""Everything the report writes for a set of runs, and the Markdown index that ties it together.

Outputs in ``out``: summary (the task x norm table), a campaign's own tables and findings (the
paper's, normlab.campaigns), overfitting, baselines, grad_stats (when the probe ran), data, runs
(every run) as .md/.csv/.tex; figures/<name>.png/.pdf; report.md with all tables, findings and
figure captions. Tables are a pure function of the run files, so re-running on the same runs (e.g. the
committed copies under results/<scale>/runs) re-creates them byte for byte.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Optional

from ..files import atomic_write_bytes
from .aggregate import Grid
from .axis import setting_axis
from .baselines import Provider, baselines_table, compute_all
from .claimfile import ClaimSet
from .compare import Reference, comparisons, comparisons_table
from .figures import FIGURES, figure
from .findings import Findings
from .gradstats import grad_table, has_probe
from .overfit import figure_note, overfitting_table
from .protocol import DEFAULT, Protocol
from .regime import regime_sentence
from .roles import reported, selection_runs
from .run_tables import data_table, runs_table, summary_table
from .runs import Run
from .saturation import has_alpha, saturation_table
from .settings import settings_table
from .tables import Table
from .time_to_target import profile_figure, time_to_target_table
from .trained import gate, untrained_sentence
from .user_claims import user_findings

__all__ = ["Campaign", "Findings", "write_report"]


class Campaign(typing.Protocol):
    """A study of a paper built on the framework (normlab.campaigns): its test protocol, its own
    tables after the summary, its tested findings, its own figures, and the file names it owns in
    a report folder."""

    protocol: Protocol
    table_keys: tuple[str, ...]
    figure_keys: tuple[str, ...]

    def tables(self, grid: Grid) -> list[Table]: ...

    def findings(self, grid: Grid, member: Optional[Path]) -> Findings: ...

    def figures(self, grid: Grid, out: Path) -> dict[str, str]: ...


def write_report(
    runs: list[Run],
    out: Path,
    figures: bool = True,
    member: Path | None = None,
    baselines: Provider | None = None,
    campaign: Campaign | None = None,
    claims: ClaimSet | None = None,
    reference: Reference | None = None,
    protocol: Protocol | None = None,
) -> dict:
    """Write every output for ``runs`` into ``out``; returns {"tables": [...], "figures": [...], ...}.
    ``baselines(task name, task config)`` gives a task's trivial baselines for the baselines table
    (normlab.make_report computes them from the data); None: the table says they were not computed.
    ``campaign``: the paper study whose tables, findings and figures join the generic ones
    (normlab.report.campaigns.get_campaign); ``member``: the results folder these runs are reported
    for (results/mini), which the campaign's findings may be corrected with; None: this report's
    own tests. ``claims``: a claims file's claims, tested as the report's primary family instead of
    the campaign's; ``reference``: what the comparisons compare against (compare.Reference);
    ``protocol``: the margins, alpha and gates every table and test reads (normlab.report.protocol;
    None: the campaign's, else DEFAULT, which declares no margins)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    held_out = selection_note(runs)
    runs = reported(runs)
    protocol = protocol or (campaign.protocol if campaign else DEFAULT)
    grid = Grid(runs, axis=setting_axis(runs), protocol=protocol)
    base = compute_all(grid, baselines)
    gate(grid, base)  # cells first: which did not train, before any table or test reads them
    untrained = untrained_sentence(grid)
    tables = [summary_table(grid), *(campaign.tables(grid) if campaign else [])]
    for t in tables:
        t.notes[:0] = [s for s in (held_out, untrained) if s]
    if claims is not None:
        found = user_findings(grid, claims)[0]
    else:
        found = campaign.findings(grid, member) if campaign else Findings()
    # without tested claims the comparisons are the report's own family
    ref = reference or Reference.parse()
    compared = comparisons(grid, ref, primary=not found.tables)
    regime = regime_sentence(grid)
    extra = list(found.tables)
    if compared is not None:
        extra.append(comparisons_table(grid, compared, ref))
    if extra:
        extra[0].notes[:0] = [s for s in (untrained, regime) if s]
    extra.append(overfitting_table(grid))
    speed = time_to_target_table(grid)
    if speed.rows:  # without runs of the reference norm there is no target
        extra.append(speed)
    base = baselines_table(grid, base)
    extra.append(base)
    if has_probe(grid):
        extra.append(grad_table(grid))
    if has_alpha(grid):
        extra.append(saturation_table(grid))
    if (st := settings_table(grid)) is not None:
        extra.append(st)
    extra += [data_table(grid), runs_table(grid)]
    written = {"tables": [], "figures": [], "files": [], "captions": {}}
    for t in tables + extra:
        written["tables"] += t.write(out)
    if found.files:
        written["files"] += found.files(out)
    if figures:
        for key, (title, norms, panels, what) in FIGURES.items():
            more = figure_note(grid) if key == "overfitting" else ""
            caption = figure(
                grid, key, title, norms, panels, out / "figures", f"{what} {more}".strip()
            )
            if caption:
                written["captions"][key] = caption
                written["figures"] += [
                    out / "figures" / f"{key}.png",
                    out / "figures" / f"{key}.pdf",
                ]
        caption = profile_figure(grid, out / "figures")
        if caption:
            written["captions"]["time_to_target"] = caption
            written["figures"] += [out / "figures" / f"time_to_target.{e}" for e in ("png", "pdf")]
        for key, caption in (campaign.figures(grid, out / "figures") if campaign else {}).items():
            written["captions"][key] = caption
            written["figures"] += [out / "figures" / f"{key}.png", out / "figures" / f"{key}.pdf"]
    _remove_stale(out, written, campaign)
    primary = extra[0] if (found.tables or compared is not None) else None
    index = render_index(
        tables,
        extra,
        found.lines,
        found.method,
        written["captions"],
        [n for n in base.notes if not n.startswith("Scale:")],
        regime,
        held_out,
        untrained,
        contents(tables + extra, written["captions"], primary),
    )
    atomic_write_bytes(out / "report.md", index.encode())
    written["index"] = out / "report.md"
    written["main"] = tables[1] if len(tables) > 1 else tables[0]
    # what the console shows after the main table: the family the report tested
    written["primary"] = primary
    return written


OWN_TABLES = (
    "summary",
    "claims",
    "comparisons",
    "overfitting",
    "time_to_target",
    "baselines",
    "grad_stats",
    "settings",
    "data",
    "runs",
)


def own_tables(campaign: Campaign | None) -> tuple[str, ...]:
    """The names of the tables a report with ``campaign`` may write."""
    return (*OWN_TABLES, *(campaign.table_keys if campaign else ()))


def _remove_stale(out: Path, written: dict, campaign: Campaign | None) -> None:
    """Delete this report's own file names left from an earlier report in ``out`` that this one
    did not write (e.g. a figure whose norms are gone), so no output describes other runs."""
    keep = {Path(p).resolve() for p in written["tables"] + written["figures"] + written["files"]}
    tables = own_tables(campaign)
    figures = (*FIGURES, "time_to_target", *(campaign.figure_keys if campaign else ()))
    own = [out / f"{k}.{e}" for k in tables for e in ("md", "csv", "tex", "json")]
    own += [out / "figures" / f"{k}.{e}" for k in figures for e in ("png", "pdf")]
    for p in own:
        if p.exists() and p.resolve() not in keep:
            p.unlink()


def selection_note(runs: list[Run]) -> str:
    """The sentence that says which runs every table leaves out (normlab.report.roles), or ""."""
    sel = selection_runs(runs)
    if not sel:
        return ""
    seeds = sorted({r.seed for r in sel})
    kept = sorted({r.seed for r in reported(runs)})
    return (
        f"Left out: {len(sel)} selection run(s) (seed {', '.join(map(str, seeds))}: they chose the presets or "
        f"the lrs, normlab/configs/study/seeds.yaml); every mean, test and figure uses the evaluation seeds "
        f"{', '.join(map(str, kept)) or 'none'} only."
    )


def contents(tables: list[Table], captions: dict, primary: Optional[Table]) -> list[str]:
    """The index's first section: what to read first, then every table and figure written."""
    first = [f"1. [{primary.key}.md]({primary.key}.md): {primary.title}" if primary else ""]
    first += [
        "1. [summary.md](summary.md): every cell, mean ± std (n) of the test metric",
        "1. [baselines.md](baselines.md): which cells beat their task's trivial baselines (a "
        "cell that did not is named so and compared with nothing)",
    ]
    out = ["## What to read first", "", *[x for x in first if x], "", "## What was written", ""]
    out += [
        f"- [{t.key}.md]({t.key}.md) (.csv, .tex): {t.title}" for t in tables if t.key != "runs"
    ]
    out += [
        f"- [figures/{k}.png](figures/{k}.png) (.pdf): {c.split('. ')[0]}"
        for k, c in captions.items()
    ]
    return out + ["- [runs.md](runs.md): every run, with its status and path", ""]


def render_index(
    tables,
    extra,
    lines: list[str],
    how: str,
    captions: dict,
    levels: list[str] = (),
    regime: str = "",
    held_out: str = "",
    untrained: str = "",
    toc: list[str] = (),
) -> str:
    parts = [
        "# normlab report",
        "",
        "Generated by `normlab-report` from run directories only (config.yaml, summary.json, curves.jsonl). "
        "Each table is also written as .csv and .tex beside this file.",
        "",
    ]
    parts += [s for x in (held_out, untrained) if x for s in (x, "")]
    parts += list(toc)
    if lines:
        parts += ["## Findings", "", *lines, "", how, ""] + ([regime, ""] if regime else [])
    if levels:
        parts += [
            "Where the mean test scores sit among the trivial baselines (baselines table):",
            "",
            *(f"- {x}" for x in levels),
            "",
        ]
    parts += ["## Tables", ""]
    for t in tables + [t for t in extra if t.key not in ("runs",)]:
        parts += [t.markdown(), ""]
    if captions:
        parts += ["## Figures", ""]
        for key, cap in captions.items():
            parts += [f"![{key}](figures/{key}.png)", "", f"*{cap}* ([PDF](figures/{key}.pdf))", ""]
    parts += ["Every run, with its status and path: [runs.md](runs.md)."]
    return "\n".join(parts) + "\n"
